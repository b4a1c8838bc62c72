//! Fields of structs: added, removed, renamed, retyped, made required or optional, in
//! nested structs, arrays, maps and `Option`s.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::ChangeKind;
use super::{changes, directions, only_change};

mod v1 {
    use super::*;

    /// An order line.
    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) struct Line {
        pub(super) sku: String,
        pub(super) quantity: i64,
    }

    /// The order.
    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) struct Order {
        pub(super) order_id: i64,
        pub(super) customer: String,
        pub(super) lines: Vec<Line>,
        pub(super) note: Option<String>,
    }
}

#[test]
fn an_added_optional_field_is_compatible_both_ways() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: i64,
        customer: String,
        lines: Vec<v1::Line>,
        note: Option<String>,
        coupon: Option<String>,
    }
    let change = only_change::<v1::Order, Order>();
    assert_eq!(change.path(), "coupon");
    let added = ChangeKind::FieldAdded {
        required: false,
        refused_by_old: false,
    };
    assert_eq!(change.kind(), &added);
    assert_eq!(directions(&change), (true, true));
    assert!(!change.is_breaking());
}

#[test]
fn an_added_required_field_breaks_backward_only() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: i64,
        customer: String,
        lines: Vec<v1::Line>,
        note: Option<String>,
        currency: String,
    }
    let change = only_change::<v1::Order, Order>();
    assert_eq!(change.path(), "currency");
    // Old messages lack it (new consumers fail); old consumers ignore it.
    assert_eq!(directions(&change), (false, true));
    assert!(change.is_breaking());
}

#[test]
fn a_removed_field_breaks_forward_whether_it_was_required_or_not() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: i64,
        lines: Vec<v1::Line>,
    }
    let all = changes::<v1::Order, Order>();
    let paths: Vec<&str> = all.iter().map(|c| c.path()).collect();
    assert_eq!(paths, ["customer", "note"]);
    let kinds: Vec<&ChangeKind> = all.iter().map(|c| c.kind()).collect();
    assert_eq!(
        kinds,
        [
            &ChangeKind::FieldRemoved {
                was_required: true,
                refused_by_new: false
            },
            &ChangeKind::FieldRemoved {
                was_required: false,
                refused_by_new: false
            },
        ]
    );
    for change in &all {
        // New consumers ignore it in old messages; old consumers lose it.
        assert_eq!(directions(change), (true, false), "{change}");
        assert!(change.is_breaking());
    }
}

#[test]
fn a_rename_is_a_removal_and_an_addition() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: i64,
        buyer: String,
        lines: Vec<v1::Line>,
        note: Option<String>,
    }
    let all = changes::<v1::Order, Order>();
    let described: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        described,
        [
            "buyer: required field added (backward: NO, forward: yes)",
            "customer: required field removed (or renamed) (backward: yes, forward: NO)",
        ]
    );
}

#[test]
fn a_changed_type_in_a_nested_array_item_breaks_both_ways_at_its_path() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Line {
        sku: String,
        quantity: String,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: i64,
        customer: String,
        lines: Vec<Line>,
        note: Option<String>,
    }
    let all = changes::<v1::Order, Order>();
    let type_change = all
        .iter()
        .find(|c| matches!(c.kind(), ChangeKind::TypeChanged { .. }))
        .unwrap_or_else(|| panic!("a type change: {all:#?}"));
    assert_eq!(type_change.path(), "lines[].quantity");
    assert_eq!(
        type_change.kind(),
        &ChangeKind::TypeChanged {
            from: "integer".into(),
            to: "string".into()
        }
    );
    assert_eq!(directions(type_change), (false, false));
}

#[test]
fn a_field_added_to_a_nested_item_is_compatible_at_its_path() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Line {
        sku: String,
        quantity: i64,
        gift_wrap: Option<bool>,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: i64,
        customer: String,
        lines: Vec<Line>,
        note: Option<String>,
    }
    let change = only_change::<v1::Order, Order>();
    assert_eq!(change.path(), "lines[].gift_wrap");
    assert_eq!(directions(&change), (true, true));
}

#[test]
fn an_option_made_required_breaks_backward_and_a_required_field_made_optional_forward() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Order {
        order_id: Option<i64>,
        customer: String,
        lines: Vec<v1::Line>,
        note: String,
    }
    let all = changes::<v1::Order, Order>();
    let at = |path: &str| -> Vec<(ChangeKind, bool, bool)> {
        all.iter()
            .filter(|c| c.path() == path)
            .map(|c| (c.kind().clone(), c.backward(), c.forward()))
            .collect()
    };
    // `Option<String>` to `String`: old messages may lack it or hold null.
    assert_eq!(
        at("note"),
        [
            (ChangeKind::BecameRequired, false, true),
            (ChangeKind::NoLongerNullable, false, true),
        ]
    );
    // `i64` to `Option<i64>`: new messages may lack it or hold null.
    assert_eq!(
        at("order_id"),
        [
            (ChangeKind::BecameOptional, true, false),
            (ChangeKind::BecameNullable, true, false),
        ]
    );
}

#[test]
fn a_type_that_refuses_unknown_fields_breaks_forward_on_any_addition() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct StrictV1 {
        order_id: i64,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        order_id: i64,
        note: Option<String>,
    }
    let change = only_change::<StrictV1, Strict>();
    assert_eq!(
        change.kind(),
        &ChangeKind::FieldAdded {
            required: false,
            refused_by_old: true
        }
    );
    assert_eq!(directions(&change), (true, false));
    // Removing a field from such a type breaks backward too: old messages still carry it.
    let removal = only_change::<Strict, StrictV1>();
    assert_eq!(directions(&removal), (false, false));
}

#[test]
fn renaming_the_rust_types_and_their_docs_changes_nothing() {
    /// Another line, same shape.
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct OrderLineV1 {
        /// The product.
        sku: String,
        quantity: i64,
    }
    /// The same order under another Rust name.
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct OrderConfirmedV1 {
        order_id: i64,
        customer: String,
        /// The lines.
        lines: Vec<OrderLineV1>,
        note: Option<String>,
    }
    assert!(changes::<v1::Order, OrderConfirmedV1>().is_empty());
}

#[test]
fn a_map_value_and_a_nested_option_are_compared_at_their_paths() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Address {
        city: String,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Before {
        prices: HashMap<String, i64>,
        shipping: Option<Address>,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct AddressV2 {
        city: String,
        zip: String,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct After {
        prices: HashMap<String, String>,
        shipping: Option<AddressV2>,
    }
    let all = changes::<Before, After>();
    let summary: Vec<(String, bool, bool)> = all
        .iter()
        .filter(|c| !matches!(c.kind(), ChangeKind::ConstraintLoosened { .. }))
        .map(|c| (c.path().to_owned(), c.backward(), c.forward()))
        .collect();
    assert_eq!(
        summary,
        [
            ("prices{}".to_owned(), false, false),
            ("shipping.zip".to_owned(), false, true),
        ],
        "{all:#?}"
    );
}

#[test]
fn constraints_loosened_break_forward_and_tightened_backward() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Short {
        #[schemars(length(max = 10))]
        code: String,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Long {
        #[schemars(length(max = 40))]
        code: String,
    }
    let looser = only_change::<Short, Long>();
    assert_eq!(looser.path(), "code");
    assert!(
        matches!(looser.kind(), ChangeKind::ConstraintLoosened { keyword, .. }
            if keyword == "maxLength")
    );
    assert_eq!(directions(&looser), (true, false));
    let tighter = only_change::<Long, Short>();
    assert_eq!(directions(&tighter), (false, true));
}

#[test]
fn a_recursive_type_is_compared_to_the_end() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Category {
        name: String,
        children: Vec<Category>,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct CategoryV2 {
        name: String,
        children: Vec<CategoryV2>,
        slug: Option<String>,
    }
    let all = changes::<Category, CategoryV2>();
    let paths: Vec<&str> = all.iter().map(|c| c.path()).collect();
    // The children's children are the same definition: compared once, not forever.
    assert_eq!(paths, ["children[].slug", "slug"]);
    assert!(changes::<Category, Category>().is_empty());
}

#[test]
fn a_type_that_accepts_more_breaks_forward_and_one_that_accepts_less_backward() {
    use serde_json::json;
    let object = |amount: serde_json::Value| {
        json!({
            "type": "object",
            "properties": {"amount": amount},
            "required": ["amount"],
        })
    };
    let integer = object(json!({"type": "integer"}));
    let number = object(json!({"type": "number"}));
    let anything = object(json!(true));
    let compare = |a, b| super::super::compat::compare(a, b).expect("readable");
    let widened = compare(&integer, &number);
    assert!(
        matches!(widened[0].kind(), ChangeKind::TypeWidened { .. }),
        "{widened:?}"
    );
    assert_eq!(directions(&widened[0]), (true, false));
    let narrowed = compare(&anything, &integer);
    assert_eq!(
        (widened.len(), narrowed.len()),
        (1, 1),
        "{widened:?} {narrowed:?}"
    );
    assert_eq!(
        narrowed[0].to_string(),
        "amount: type narrowed from any value to integer (backward: NO, forward: yes)"
    );
}

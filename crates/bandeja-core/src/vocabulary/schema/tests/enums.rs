//! Enums: unit variants as values, variants with data (externally and internally tagged),
//! optional enums, untagged ones.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::ChangeKind;
use super::{changes, directions, only_change};

#[derive(Serialize, Deserialize, JsonSchema)]
enum StatusV1 {
    Placed,
    Paid,
}

#[derive(Serialize, Deserialize, JsonSchema)]
enum Status {
    Placed,
    Paid,
    Shipped,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct OrderV1 {
    status: StatusV1,
    previous: Option<StatusV1>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Order {
    status: Status,
    previous: Option<Status>,
}

#[test]
fn an_added_value_breaks_forward_and_a_removed_one_backward() {
    let all = changes::<OrderV1, Order>();
    let seen: Vec<(&str, &ChangeKind, bool, bool)> = all
        .iter()
        .map(|c| (c.path(), c.kind(), c.backward(), c.forward()))
        .collect();
    let shipped = ChangeKind::ValueAdded {
        value: "\"Shipped\"".into(),
    };
    // Old consumers do not know `Shipped`; new ones read every old value. The optional
    // enum (`anyOf` with null) is read through.
    assert_eq!(
        seen,
        [
            ("previous", &shipped, true, false),
            ("status", &shipped, true, false),
        ]
    );
    let removed = changes::<Order, OrderV1>();
    assert_eq!(removed.len(), 2);
    for change in &removed {
        assert_eq!(directions(change), (false, true), "{change}");
    }
}

#[test]
fn documented_unit_variants_are_values_too() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    enum ChannelV1 {
        /// By email.
        Email,
        /// By text message.
        Sms,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    enum Channel {
        /// By email.
        Email,
        /// By text message, now documented otherwise.
        Sms,
        /// By post.
        Letter,
    }
    let change = only_change::<ChannelV1, Channel>();
    assert_eq!(
        change.kind(),
        &ChangeKind::ValueAdded {
            value: "\"Letter\"".into()
        }
    );
    assert!(change.path().is_empty());
    assert!(change
        .to_string()
        .starts_with("(the payload): value \"Letter\" added"));
}

mod external {
    use super::*;

    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) enum PaymentV1 {
        Cash,
        Card { last4: String },
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) enum Payment {
        Cash,
        Card {
            last4: String,
            brand: Option<String>,
        },
        Voucher(String),
    }

    #[derive(Serialize, Deserialize, JsonSchema)]
    pub(super) enum PaymentV3 {
        Cash { currency: String },
        Card { last4: i64 },
    }
}

#[test]
fn variants_with_data_are_matched_by_name_and_compared_inside() {
    let all = changes::<external::PaymentV1, external::Payment>();
    let seen: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        seen,
        [
            "(Card).brand: optional field added (backward: yes, forward: yes)",
            "(the payload): variant `Voucher` added (backward: yes, forward: NO)",
        ]
    );
    let all = changes::<external::Payment, external::PaymentV3>();
    let seen: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        seen,
        [
            // A unit variant that now carries data: its old form is gone, a new one came.
            "(the payload): value \"Cash\" removed (backward: NO, forward: yes)",
            "(Card).brand: optional field removed (or renamed) (backward: yes, forward: NO)",
            "(Card).last4: type changed from string to integer (backward: NO, forward: NO)",
            "(the payload): variant `Cash` added (backward: yes, forward: NO)",
            "(the payload): variant `Voucher` removed (backward: NO, forward: yes)",
        ]
    );
}

#[test]
fn internally_tagged_variants_are_matched_by_their_tag() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "kind")]
    enum RefundV1 {
        Full,
        Partial { cents: i64 },
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "kind")]
    enum Refund {
        Full,
        Partial { cents: i64, reason: String },
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Refunded {
        refund: RefundV1,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct RefundedV2 {
        refund: Refund,
    }
    let change = only_change::<Refunded, RefundedV2>();
    assert_eq!(change.path(), "refund(Partial).reason");
    assert_eq!(directions(&change), (false, true));
}

#[test]
fn an_untagged_enum_that_changed_is_taken_as_breaking() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(untagged)]
    enum AmountV1 {
        Cents(i64),
        Text(String),
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(untagged)]
    enum Amount {
        Cents(i64),
        Parts { units: i64, cents: i64 },
    }
    let change = only_change::<AmountV1, Amount>();
    assert!(
        matches!(change.kind(), ChangeKind::ShapeChanged { .. }),
        "{change}"
    );
    assert_eq!(directions(&change), (false, false));
    assert!(changes::<AmountV1, AmountV1>().is_empty());
}

#[test]
fn a_struct_that_became_an_enum_is_a_type_change() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Customer {
        payment: external::PaymentV1,
    }
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct CustomerV2 {
        payment: String,
    }
    let change = only_change::<Customer, CustomerV2>();
    assert_eq!(change.path(), "payment");
    assert!(
        matches!(change.kind(), ChangeKind::TypeChanged { .. }),
        "{change}"
    );
}

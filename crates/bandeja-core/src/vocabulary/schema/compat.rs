//! Compares two JSON Schemas of one payload (as schemars writes them) and lists the
//! changes, each with its path and its compatibility ([`Change`]).
//!
//! Objects are compared field by field (added, removed, required or not), arrays by their
//! items, maps by their values, enums by their values and variants, and every field's
//! type, nullability and constraints; `$ref`s are followed into `$defs`/`definitions` on
//! each side, so renaming a Rust type (its definition's name) changes nothing.
//!
//! ```
//! use bandeja_core::schema::compat::compare;
//! use bandeja_core::schema::ChangeKind;
//! use serde_json::json;
//!
//! let v1 = json!({
//!     "type": "object",
//!     "properties": {"id": {"type": "integer"}},
//!     "required": ["id"],
//! });
//! let v2 = json!({
//!     "type": "object",
//!     "properties": {"id": {"type": "integer"}, "note": {"type": ["string", "null"]}},
//!     "required": ["id"],
//! });
//! let changes = compare(&v1, &v2).expect("readable schemas");
//! assert_eq!(changes.len(), 1);
//! assert_eq!(changes[0].path(), "note");
//! assert!(matches!(changes[0].kind(), ChangeKind::FieldAdded { required: false, .. }));
//! assert!(changes[0].backward() && changes[0].forward());
//! ```

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use super::change::{Change, ChangeKind};
use super::shape::{
    Additional, Document, Shape, Types, LOWER_BOUNDS, OTHER_CONSTRAINTS, UPPER_BOUNDS,
};
use super::variants;

/// The changes from the schema `old` to the schema `new` (each a whole document, its
/// `$defs` inside), in path order; empty when they accept the same messages.
///
/// # Errors
///
/// A text saying what is unreadable: a `$ref` to nothing, a schema that is neither an
/// object nor a boolean.
pub fn compare(old: &Value, new: &Value) -> Result<Vec<Change>, String> {
    let mut comparer = Comparer {
        old: Document::new(old),
        new: Document::new(new),
        visiting: HashSet::new(),
        changes: Vec::new(),
    };
    comparer.schemas(old, new, "")?;
    Ok(comparer.changes)
}

/// `parent.name`, or `name` at the root.
pub(super) fn field_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// One comparison under way.
pub(super) struct Comparer<'a> {
    pub(super) old: Document<'a>,
    pub(super) new: Document<'a>,
    /// The pairs of schemas being compared (by address), so a recursive type ends.
    visiting: HashSet<(usize, usize)>,
    pub(super) changes: Vec<Change>,
}

impl<'a> Comparer<'a> {
    pub(super) fn push(&mut self, path: &str, kind: ChangeKind) {
        self.changes.push(Change::new(path, kind));
    }

    /// Compares the schema `old` (of the old document) with `new` at `path`.
    pub(super) fn schemas(
        &mut self,
        old: &'a Value,
        new: &'a Value,
        path: &str,
    ) -> Result<(), String> {
        let key = (
            std::ptr::from_ref(old) as usize,
            std::ptr::from_ref(new) as usize,
        );
        if !self.visiting.insert(key) {
            return Ok(());
        }
        let old_shape = self.old.shape(old)?;
        let new_shape = self.new.shape(new)?;
        let outcome = self.shapes(&old_shape, &new_shape, path);
        self.visiting.remove(&key);
        outcome
    }

    fn shapes(&mut self, old: &Shape<'a>, new: &Shape<'a>, path: &str) -> Result<(), String> {
        match (old.accepts_null(), new.accepts_null()) {
            (false, true) => self.push(path, ChangeKind::BecameNullable),
            (true, false) => self.push(path, ChangeKind::NoLongerNullable),
            _ => {}
        }
        match (old.alternatives.is_empty(), new.alternatives.is_empty()) {
            (false, false) => return variants::compare(self, old, new, path),
            (true, true) => {}
            _ => {
                let from = describe(old);
                let to = describe(new);
                self.push(path, ChangeKind::TypeChanged { from, to });
                return Ok(());
            }
        }
        let (old_types, new_types) = (old.types(), new.types());
        if old_types != new_types {
            let (from, to) = (old_types.describe(), new_types.describe());
            let kind = if new_types.covers(&old_types) {
                ChangeKind::TypeWidened { from, to }
            } else if old_types.covers(&new_types) {
                ChangeKind::TypeNarrowed { from, to }
            } else {
                ChangeKind::TypeChanged { from, to }
            };
            self.push(path, kind);
            return Ok(());
        }
        self.values(old, new, path);
        if is(&new_types, "object") {
            self.objects(old, new, path)?;
        }
        if is(&new_types, "array") {
            if let (Some(old_items), Some(new_items)) = (old.items(), new.items()) {
                self.schemas(old_items, new_items, &format!("{path}[]"))?;
            }
        }
        self.constraints(old, new, path);
        self.other_keywords(old, new, path);
        Ok(())
    }

    /// Enum values (`enum`, `const`).
    fn values(&mut self, old: &Shape<'a>, new: &Shape<'a>, path: &str) {
        match (old.values(), new.values()) {
            (Some(old_values), Some(new_values)) => {
                for value in new_values.difference(&old_values) {
                    let value = value.clone();
                    self.push(path, ChangeKind::ValueAdded { value });
                }
                for value in old_values.difference(&new_values) {
                    let value = value.clone();
                    self.push(path, ChangeKind::ValueRemoved { value });
                }
            }
            (Some(old_values), None) => {
                let from = Some(list(&old_values));
                let keyword = "enum".to_owned();
                self.push(
                    path,
                    ChangeKind::ConstraintLoosened {
                        keyword,
                        from,
                        to: None,
                    },
                );
            }
            (None, Some(new_values)) => {
                let to = Some(list(&new_values));
                let keyword = "enum".to_owned();
                self.push(
                    path,
                    ChangeKind::ConstraintTightened {
                        keyword,
                        from: None,
                        to,
                    },
                );
            }
            (None, None) => {}
        }
    }

    /// Fields, their being required, unknown fields, map values.
    pub(super) fn objects(
        &mut self,
        old: &Shape<'a>,
        new: &Shape<'a>,
        path: &str,
    ) -> Result<(), String> {
        let (old_props, new_props) = (old.properties(), new.properties());
        let (old_required, new_required) = (old.required(), new.required());
        let (old_additional, new_additional) = (old.additional(), new.additional());
        let names: BTreeSet<&str> = old_props.keys().chain(new_props.keys()).copied().collect();
        for name in names {
            let at = field_path(path, name);
            match (old_props.get(name), new_props.get(name)) {
                (None, Some(_)) => self.push(
                    &at,
                    ChangeKind::FieldAdded {
                        required: new_required.contains(name),
                        refused_by_old: old_additional == Additional::Refused,
                    },
                ),
                (Some(_), None) => self.push(
                    &at,
                    ChangeKind::FieldRemoved {
                        was_required: old_required.contains(name),
                        refused_by_new: new_additional == Additional::Refused,
                    },
                ),
                (Some(old_field), Some(new_field)) => {
                    match (old_required.contains(name), new_required.contains(name)) {
                        (false, true) => self.push(&at, ChangeKind::BecameRequired),
                        (true, false) => self.push(&at, ChangeKind::BecameOptional),
                        _ => {}
                    }
                    self.schemas(old_field, new_field, &at)?;
                }
                (None, None) => {}
            }
        }
        self.additional(old_additional, new_additional, path)
    }

    /// `additionalProperties`: unknown fields refused or not, a map's values.
    fn additional(
        &mut self,
        old: Additional<'a>,
        new: Additional<'a>,
        path: &str,
    ) -> Result<(), String> {
        static ANY: Value = Value::Bool(true);
        static NONE: Value = Value::Bool(false);
        let as_schema = |a: Additional<'a>| match a {
            Additional::Any => &ANY,
            Additional::Refused => &NONE,
            Additional::Schema(schema) => schema,
        };
        match (old, new) {
            (Additional::Any, Additional::Any) | (Additional::Refused, Additional::Refused) => {
                Ok(())
            }
            (Additional::Any, Additional::Refused) => {
                self.push(path, ChangeKind::UnknownFieldsRefused);
                Ok(())
            }
            (Additional::Refused, Additional::Any) => {
                self.push(path, ChangeKind::UnknownFieldsAccepted);
                Ok(())
            }
            (old, new) => self.schemas(as_schema(old), as_schema(new), &format!("{path}{{}}")),
        }
    }

    /// Bounds (`minimum`, `maxLength`, …) and other constraints (`format`, `pattern`, …).
    fn constraints(&mut self, old: &Shape<'a>, new: &Shape<'a>, path: &str) {
        for keyword in LOWER_BOUNDS
            .iter()
            .chain(&UPPER_BOUNDS)
            .chain(&OTHER_CONSTRAINTS)
        {
            let (from, to) = (old.get(keyword), new.get(keyword));
            if from == to {
                continue;
            }
            let looser = match (from.and_then(Value::as_f64), to.and_then(Value::as_f64)) {
                _ if to.is_none() => Some(true),
                _ if from.is_none() => Some(false),
                (Some(a), Some(b)) if LOWER_BOUNDS.contains(keyword) => Some(b < a),
                (Some(a), Some(b)) if UPPER_BOUNDS.contains(keyword) => Some(b > a),
                _ => None,
            };
            let keyword = (*keyword).to_owned();
            let (from, to) = (from.map(Value::to_string), to.map(Value::to_string));
            let kind = match looser {
                Some(true) => ChangeKind::ConstraintLoosened { keyword, from, to },
                Some(false) => ChangeKind::ConstraintTightened { keyword, from, to },
                None => ChangeKind::ConstraintChanged {
                    keyword,
                    from: from.unwrap_or_default(),
                    to: to.unwrap_or_default(),
                },
            };
            self.push(path, kind);
        }
    }

    /// Keywords not read by meaning: any difference is taken as breaking.
    fn other_keywords(&mut self, old: &Shape<'a>, new: &Shape<'a>, path: &str) {
        let (old_other, new_other) = (old.other_keywords(), new.other_keywords());
        let keywords: BTreeMap<&str, ()> = old_other
            .keys()
            .chain(new_other.keys())
            .map(|k| (*k, ()))
            .collect();
        for keyword in keywords.into_keys() {
            if old_other.get(keyword) != new_other.get(keyword) {
                let keyword = keyword.to_owned();
                self.push(path, ChangeKind::ShapeChanged { keyword });
            }
        }
    }
}

/// Whether `types` include `name` (any value does).
fn is(types: &Types, name: &str) -> bool {
    match types {
        Types::Any => true,
        Types::Only(set) => set.contains(name),
    }
}

/// A shape in a few words, for a type change.
fn describe(shape: &Shape<'_>) -> String {
    if shape.alternatives.is_empty() {
        shape.types().describe()
    } else {
        format!("one of {} alternatives", shape.alternatives.len())
    }
}

/// `["A", "B"]`: values as a JSON list.
fn list(values: &BTreeSet<String>) -> String {
    format!(
        "[{}]",
        values.iter().cloned().collect::<Vec<_>>().join(", ")
    )
}

//! A JSON Schema as the compatibility check reads it: `$ref`s into `$defs` or
//! `definitions` followed, "may be null" split off (schemars writes `Option<T>` as a type
//! array with `"null"` or as `anyOf` with a `{"type": "null"}` alternative), and the
//! keywords read by meaning — types, allowed values, properties, items, constraints —
//! while annotations (`description`, `title`, `default`, …) are left aside.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// How many `$ref`s in a row one schema may follow before it counts as a loop.
const MAX_REF_CHAIN: usize = 32;

/// Keywords that describe a value without constraining it: a change there changes nothing
/// a consumer decodes.
const ANNOTATIONS: [&str; 14] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$defs",
    "definitions",
    "$ref",
];

/// Keywords the check reads by meaning (the rest is compared as it is).
const UNDERSTOOD: [&str; 9] = [
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
];

/// Lower bounds: a lower value (or none) accepts more.
pub(super) const LOWER_BOUNDS: [&str; 5] = [
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
];

/// Upper bounds: a higher value (or none) accepts more.
pub(super) const UPPER_BOUNDS: [&str; 5] = [
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
];

/// Other constraints: dropping one accepts more, adding one accepts less, changing one is
/// neither.
pub(super) const OTHER_CONSTRAINTS: [&str; 6] = [
    "format",
    "pattern",
    "multipleOf",
    "uniqueItems",
    "contentEncoding",
    "contentMediaType",
];

/// One whole schema document (a payload's root schema with its `$defs`): where `$ref`s
/// are looked up.
#[derive(Debug, Clone, Copy)]
pub(super) struct Document<'a> {
    root: &'a Value,
}

impl<'a> Document<'a> {
    /// The document whose root is `root`.
    pub(super) fn new(root: &'a Value) -> Document<'a> {
        Document { root }
    }

    /// The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`, `#`) points to.
    fn resolve(&self, reference: &str) -> Result<&'a Value, String> {
        let pointer = reference.strip_prefix('#').ok_or_else(|| {
            format!("`$ref` `{reference}` is not local to the schema (only `#/...` is read)")
        })?;
        self.root
            .pointer(pointer)
            .ok_or_else(|| format!("`$ref` `{reference}` points to nothing in the schema"))
    }

    /// The shape of `schema`, a part of this document.
    pub(super) fn shape(&self, schema: &'a Value) -> Result<Shape<'a>, String> {
        self.shape_at(schema, 0)
    }

    fn shape_at(&self, schema: &'a Value, depth: usize) -> Result<Shape<'a>, String> {
        if depth > MAX_REF_CHAIN {
            return Err("`$ref`s point to each other in a loop".to_owned());
        }
        let map = match schema {
            Value::Bool(accepts) => return Ok(Shape::boolean(*accepts)),
            Value::Object(map) => map,
            other => return Err(format!("a schema is an object or a boolean, not `{other}`")),
        };
        let mut shape = match map.get("$ref") {
            Some(Value::String(reference)) => {
                let target = self.resolve(reference)?;
                let mut shape = self.shape_at(target, depth + 1)?;
                shape.layers.insert(0, map);
                shape
            }
            Some(other) => return Err(format!("`$ref` is a string, not `{other}`")),
            None => Shape::object(map),
        };
        self.split_null_alternatives(&mut shape, map, depth)?;
        Ok(shape)
    }

    /// `anyOf`/`oneOf` with `{"type": "null"}` alternatives: "may be null", and the one
    /// alternative left (if one) is the shape itself.
    fn split_null_alternatives(
        &self,
        shape: &mut Shape<'a>,
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> Result<(), String> {
        let Some(alternatives) = ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_array))
        else {
            return Ok(());
        };
        let mut kept = Vec::new();
        for alternative in alternatives {
            if self.shape_at(alternative, depth + 1)?.is_null() {
                shape.nullable = true;
            } else {
                kept.push(alternative);
            }
        }
        let own_shape = map.contains_key("type") || map.contains_key("properties");
        if let [single] = kept[..] {
            if !own_shape {
                let mut inner = self.shape_at(single, depth + 1)?;
                inner.nullable |= shape.nullable;
                inner.layers.splice(0..0, shape.layers.iter().copied());
                *shape = inner;
                return Ok(());
            }
        }
        shape.alternatives = kept;
        Ok(())
    }
}

/// The types a schema accepts (`null` aside: see [`Shape::nullable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Types {
    /// Any JSON value (`true`, `{}`).
    Any,
    /// These JSON types (`string`, `integer`, `number`, `object`, `array`, `boolean`);
    /// none: no value (`false`).
    Only(BTreeSet<String>),
}

impl Types {
    /// Whether every value of `other` is one of these (`number` covers `integer`).
    pub(super) fn covers(&self, other: &Types) -> bool {
        match (self, other) {
            (Types::Any, _) => true,
            (Types::Only(_), Types::Any) => false,
            (Types::Only(mine), Types::Only(theirs)) => theirs
                .iter()
                .all(|t| mine.contains(t) || (t == "integer" && mine.contains("number"))),
        }
    }

    /// `string`, `string or integer`, `any value`, `no value`.
    pub(super) fn describe(&self) -> String {
        match self {
            Types::Any => "any value".to_owned(),
            Types::Only(set) if set.is_empty() => "no value".to_owned(),
            Types::Only(set) => set.iter().cloned().collect::<Vec<_>>().join(" or "),
        }
    }
}

/// What an object schema says about properties it does not list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Additional<'a> {
    /// Accepted, whatever they hold (the default: serde ignores unknown fields).
    Any,
    /// Refused (`additionalProperties: false`, serde's `deny_unknown_fields`).
    Refused,
    /// Accepted when they match this schema (a map's values).
    Schema(&'a Value),
}

/// One schema read by meaning. Its keywords are looked up in `layers`, the schema itself
/// first, then what its `$ref` points to.
#[derive(Debug, Clone)]
pub(super) struct Shape<'a> {
    layers: Vec<&'a Map<String, Value>>,
    /// `Some` for the boolean schemas `true` (anything) and `false` (nothing).
    boolean: Option<bool>,
    /// Whether `null` is accepted besides the rest.
    pub(super) nullable: bool,
    /// The non-null alternatives of an `anyOf`/`oneOf` with two or more of them (an enum).
    pub(super) alternatives: Vec<&'a Value>,
}

impl<'a> Shape<'a> {
    fn boolean(accepts: bool) -> Shape<'a> {
        Shape {
            layers: Vec::new(),
            boolean: Some(accepts),
            nullable: false,
            alternatives: Vec::new(),
        }
    }

    fn object(map: &'a Map<String, Value>) -> Shape<'a> {
        Shape {
            layers: vec![map],
            boolean: None,
            nullable: false,
            alternatives: Vec::new(),
        }
    }

    /// The value of `keyword`, from the schema or what it refers to.
    pub(super) fn get(&self, keyword: &str) -> Option<&'a Value> {
        self.layers.iter().find_map(|layer| layer.get(keyword))
    }

    /// Whether this schema accepts only `null` (`{"type": "null"}`).
    fn is_null(&self) -> bool {
        match (self.get("type"), self.get("const")) {
            (Some(Value::String(t)), _) => t == "null",
            (Some(Value::Array(ts)), _) => !ts.is_empty() && ts.iter().all(|t| t == "null"),
            (None, Some(Value::Null)) => true,
            _ => false,
        }
    }

    /// The `type` keyword's types; `nullable` and the types without `null`.
    fn declared_types(&self) -> Option<(bool, BTreeSet<String>)> {
        let names: Vec<&str> = match self.get("type")? {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        };
        let nullable = names.contains(&"null") && names.len() > 1;
        let set = names
            .into_iter()
            .filter(|t| !nullable || *t != "null")
            .map(str::to_owned)
            .collect();
        Some((nullable, set))
    }

    /// Whether `null` is accepted besides the rest: an `Option<T>` as schemars writes it.
    pub(super) fn accepts_null(&self) -> bool {
        let in_types = self.declared_types().is_some_and(|(nullable, _)| nullable);
        let in_values = self
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.len() > 1 && values.iter().any(Value::is_null));
        self.nullable || in_types || in_values
    }

    /// The JSON types this schema accepts, `null` aside.
    pub(super) fn types(&self) -> Types {
        match self.boolean {
            Some(true) => return Types::Any,
            Some(false) => return Types::Only(BTreeSet::new()),
            None => {}
        }
        if let Some((_, set)) = self.declared_types() {
            return Types::Only(set);
        }
        if let Some(values) = self.value_list() {
            return Types::Only(values.iter().map(|v| json_type(v).to_owned()).collect());
        }
        let has = |keys: &[&str]| keys.iter().any(|k| self.get(k).is_some());
        if has(&["properties", "additionalProperties", "required"]) {
            return Types::Only(BTreeSet::from(["object".to_owned()]));
        }
        if has(&["items", "prefixItems"]) {
            return Types::Only(BTreeSet::from(["array".to_owned()]));
        }
        Types::Any
    }

    /// The values of `enum` or `const`, `null` aside.
    fn value_list(&self) -> Option<Vec<&'a Value>> {
        if let Some(value) = self.get("const") {
            return Some(vec![value]);
        }
        let values = self.get("enum")?.as_array()?;
        Some(values.iter().filter(|v| !v.is_null()).collect())
    }

    /// The allowed values (`enum`, `const`), each as its JSON text, `null` aside.
    pub(super) fn values(&self) -> Option<BTreeSet<String>> {
        self.value_list()
            .map(|values| values.into_iter().map(Value::to_string).collect())
    }

    /// The listed properties and their schemas.
    pub(super) fn properties(&self) -> BTreeMap<&'a str, &'a Value> {
        self.get("properties")
            .and_then(Value::as_object)
            .map(|props| props.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }

    /// The names of the required properties.
    pub(super) fn required(&self) -> BTreeSet<&'a str> {
        self.get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// What the schema says about unlisted properties.
    pub(super) fn additional(&self) -> Additional<'a> {
        match self.get("additionalProperties") {
            Some(Value::Bool(false)) => Additional::Refused,
            Some(schema @ Value::Object(_)) => Additional::Schema(schema),
            _ => Additional::Any,
        }
    }

    /// The schema of an array's items.
    pub(super) fn items(&self) -> Option<&'a Value> {
        self.get("items")
    }

    /// The keywords that constrain values but that the check does not read by meaning
    /// (`prefixItems`, `allOf`, `not`, `patternProperties`, …), with their values.
    pub(super) fn other_keywords(&self) -> BTreeMap<&'a str, &'a Value> {
        let mut out = BTreeMap::new();
        for layer in self.layers.iter().rev() {
            for (key, value) in layer.iter() {
                let known = ANNOTATIONS.contains(&key.as_str())
                    || UNDERSTOOD.contains(&key.as_str())
                    || LOWER_BOUNDS.contains(&key.as_str())
                    || UPPER_BOUNDS.contains(&key.as_str())
                    || OTHER_CONSTRAINTS.contains(&key.as_str())
                    || key.starts_with("x-");
                if !known {
                    out.insert(key.as_str(), value);
                }
            }
        }
        out
    }
}

/// The JSON type name of a value.
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

//! Enums with variants: the `oneOf`/`anyOf` alternatives schemars writes for a Rust enum,
//! matched between two schemas by their tag.
//!
//! - Unit variants are constants (`{"const": "Cash"}`, `{"enum": ["Cash", "Card"]}`):
//!   values added or removed.
//! - Externally tagged variants with data are objects with one required property, the
//!   variant's name (`{"Card": {...}}`); internally or adjacently tagged ones are objects
//!   whose tag property is a constant (`{"kind": {"const": "Card"}, ...}`). Either way the
//!   variant is found by its tag on both sides and its data compared field by field, at
//!   the path `field(Card)`.
//! - Alternatives with no tag (`#[serde(untagged)]`) cannot be matched: any difference in
//!   them is taken as breaking.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::change::ChangeKind;
use super::compat::Comparer;
use super::shape::{Document, Shape};

/// The alternatives of one enum schema, sorted by what identifies them.
#[derive(Default)]
struct Variants<'a> {
    /// Unit variants: their values as JSON text.
    constants: BTreeSet<String>,
    /// Variants with data, by tag: the schema to compare (an externally tagged variant's
    /// content, or the whole object of an internally tagged one).
    tagged: BTreeMap<String, &'a Value>,
    /// Alternatives without a tag.
    untagged: Vec<&'a Value>,
}

/// Compares the enums `old` and `new` at `path`.
pub(super) fn compare<'a>(
    comparer: &mut Comparer<'a>,
    old: &Shape<'a>,
    new: &Shape<'a>,
    path: &str,
) -> Result<(), String> {
    let old_variants = sort(&comparer.old, &old.alternatives)?;
    let new_variants = sort(&comparer.new, &new.alternatives)?;
    if old_variants.untagged != new_variants.untagged {
        let keyword = "alternatives without a tag (untagged enum)".to_owned();
        comparer.push(path, ChangeKind::ShapeChanged { keyword });
    }
    for value in new_variants.constants.difference(&old_variants.constants) {
        let value = value.clone();
        comparer.push(path, ChangeKind::ValueAdded { value });
    }
    for value in old_variants.constants.difference(&new_variants.constants) {
        let value = value.clone();
        comparer.push(path, ChangeKind::ValueRemoved { value });
    }
    let tags: BTreeSet<&String> = old_variants
        .tagged
        .keys()
        .chain(new_variants.tagged.keys())
        .collect();
    for tag in tags {
        match (old_variants.tagged.get(tag), new_variants.tagged.get(tag)) {
            (Some(old_variant), Some(new_variant)) => {
                comparer.schemas(old_variant, new_variant, &format!("{path}({tag})"))?;
            }
            (None, Some(_)) => {
                let variant = tag.clone();
                comparer.push(path, ChangeKind::VariantAdded { variant });
            }
            (Some(_), None) => {
                let variant = tag.clone();
                comparer.push(path, ChangeKind::VariantRemoved { variant });
            }
            (None, None) => {}
        }
    }
    // An object with a flattened enum lists its own fields beside the alternatives.
    if old.get("properties").is_some() || new.get("properties").is_some() {
        comparer.objects(old, new, path)?;
    }
    Ok(())
}

/// Sorts `alternatives` (schemas of `document`) into constants, tagged and untagged.
fn sort<'a>(document: &Document<'a>, alternatives: &[&'a Value]) -> Result<Variants<'a>, String> {
    let mut variants = Variants::default();
    for alternative in alternatives {
        let shape = document.shape(alternative)?;
        if let Some(values) = shape.values() {
            variants.constants.extend(values);
        } else if let Some((tag, content)) = external_tag(&shape) {
            variants.tagged.insert(tag, content);
        } else if let Some(tag) = internal_tag(document, &shape)? {
            variants.tagged.insert(tag, alternative);
        } else {
            variants.untagged.push(alternative);
        }
    }
    Ok(variants)
}

/// `{"Card": {...}}` with `Card` its only, required property and no other allowed: the
/// tag and the variant's content.
fn external_tag<'a>(shape: &Shape<'a>) -> Option<(String, &'a Value)> {
    let properties = shape.properties();
    let required = shape.required();
    let refuses_others = shape.get("additionalProperties") == Some(&Value::Bool(false));
    match (properties.len(), required.len(), refuses_others) {
        (1, 1, true) => {
            let (name, content) = properties.into_iter().next()?;
            required.contains(name).then(|| (name.to_owned(), content))
        }
        _ => None,
    }
}

/// An object whose required property holds a string constant (`{"kind": {"const":
/// "Card"}}`, internally or adjacently tagged): that constant (a renamed tag property
/// shows inside the variant, as a field removed and one added).
fn internal_tag<'a>(document: &Document<'a>, shape: &Shape<'a>) -> Result<Option<String>, String> {
    let required = shape.required();
    for (name, property) in shape.properties() {
        if !required.contains(name) {
            continue;
        }
        let property = document.shape(property)?;
        if let Some(Value::String(tag)) = property.get("const") {
            return Ok(Some(tag.clone()));
        }
    }
    Ok(None)
}

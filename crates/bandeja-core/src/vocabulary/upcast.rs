//! How a handler reads a payload stored at another schema version than its own.
//!
//! Stored messages are never rewritten: a row keeps the JSON and the `schema_version` it
//! was written with, and every read turns it into the handler's version.
//!
//! - **Same version**: decoded as it is.
//! - **Older**: the payload type's [upcasters](Payload::UPCASTERS) run on the stored JSON,
//!   one step at a time (`N` to `N+1`, chained), then it is decoded. A step without an
//!   upcaster passes the JSON on unchanged: adding an optional field needs none.
//! - **Newer** (a producer deployed before this consumer): decoded as it is, if it
//!   decodes. Decoding is tolerant — fields the type does not know are ignored — so a
//!   version that only added fields reads fine; one that does not decode is FAILED with a
//!   reason naming both versions, to be retried (`bandeja retry`) once a handler that knows
//!   it is deployed.
//!
//! A payload type with `#[serde(deny_unknown_fields)]` refuses every newer version that
//! added a field: registering a handler of one logs a warning at start
//! ([`denies_unknown_fields`]).

use std::fmt;

use serde_json::Value;

use crate::envelope::Payload;
use crate::error::BuildError;
use crate::record::DecodeError;

/// One step of a payload's upcasting: the stored JSON of version [`from`](Self::from)
/// turned into the JSON of version `from + 1`.
///
/// ```
/// use bandeja_core::upcast::{UpcastError, Upcaster};
/// use bandeja_core::Payload;
/// use serde_json::{json, Value};
///
/// /// Version 2 renamed `amount` to `amount_cents`; version 3 added `currency`.
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct OrderPaid {
///     order_id: i64,
///     amount_cents: i64,
///     currency: String,
/// }
///
/// fn v1_to_v2(mut v1: Value) -> Result<Value, UpcastError> {
///     let amount = v1
///         .as_object_mut()
///         .and_then(|o| o.remove("amount"))
///         .ok_or_else(|| UpcastError::new("version 1 has no `amount`"))?;
///     v1["amount_cents"] = amount;
///     Ok(v1)
/// }
///
/// fn v2_to_v3(mut v2: Value) -> Result<Value, UpcastError> {
///     v2["currency"] = json!("EUR");
///     Ok(v2)
/// }
///
/// impl Payload for OrderPaid {
///     const TYPE: &'static str = "billing.OrderPaid";
///     const VERSION: u32 = 3;
///     const UPCASTERS: &'static [Upcaster] = &[Upcaster::new(1, v1_to_v2), Upcaster::new(2, v2_to_v3)];
/// }
/// ```
#[derive(Clone, Copy)]
pub struct Upcaster {
    from: u32,
    apply: UpcastFn,
}

/// The function of an [`Upcaster`]: version `N`'s JSON in, version `N+1`'s out.
pub type UpcastFn = fn(Value) -> Result<Value, UpcastError>;

impl Upcaster {
    /// The step from version `from` to `from + 1`, done by `apply`.
    #[must_use]
    pub const fn new(from: u32, apply: UpcastFn) -> Upcaster {
        Upcaster { from, apply }
    }

    /// The version this step reads.
    #[must_use]
    pub const fn from(&self) -> u32 {
        self.from
    }

    /// The version this step writes (`from + 1`).
    #[must_use]
    pub const fn to(&self) -> u32 {
        self.from.saturating_add(1)
    }
}

impl fmt::Debug for Upcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Upcaster({} -> {})", self.from, self.to())
    }
}

/// Why an upcaster could not turn a stored payload into the next version (the message
/// is FAILED with this reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UpcastError(String);

impl UpcastError {
    /// An upcasting failure saying `why`.
    pub fn new(why: impl Into<String>) -> UpcastError {
        UpcastError(why.into())
    }
}

impl From<serde_json::Error> for UpcastError {
    fn from(e: serde_json::Error) -> Self {
        UpcastError(e.to_string())
    }
}

/// `json`, stored at schema version `found` for `message_type`, as the handler's `T`.
pub(crate) fn decode<T: Payload>(
    message_type: &str,
    found: u32,
    json: &str,
) -> Result<T, DecodeError> {
    let expected = T::VERSION;
    if found == expected {
        return serde_json::from_str(json).map_err(|source| DecodeError::Payload {
            message_type: message_type.to_owned(),
            source,
        });
    }
    if found > expected {
        return serde_json::from_str(json).map_err(|source| DecodeError::Newer {
            message_type: message_type.to_owned(),
            found,
            expected,
            source,
        });
    }
    let mut value: Value = serde_json::from_str(json).map_err(|source| DecodeError::Payload {
        message_type: message_type.to_owned(),
        source,
    })?;
    for version in found..expected {
        if let Some(step) = T::UPCASTERS.iter().find(|u| u.from == version) {
            value = (step.apply)(value).map_err(|source| DecodeError::Upcast {
                message_type: message_type.to_owned(),
                from: version,
                to: step.to(),
                source,
            })?;
        }
    }
    serde_json::from_value(value).map_err(|source| DecodeError::Older {
        message_type: message_type.to_owned(),
        found,
        expected,
        source,
    })
}

/// Checks `T`'s upcasters when a handler of `T` is registered: each reads a version from
/// 1 to `VERSION - 1`, at most one per version.
pub(crate) fn check<T: Payload>() -> Result<(), BuildError> {
    for (i, step) in T::UPCASTERS.iter().enumerate() {
        if step.from == 0 || step.from >= T::VERSION {
            return Err(BuildError::upcaster(
                T::TYPE,
                format!(
                    "an upcaster of `{}` reads version {}, outside 1 to {} (VERSION is {})",
                    T::TYPE,
                    step.from,
                    T::VERSION.saturating_sub(1),
                    T::VERSION
                ),
            ));
        }
        if T::UPCASTERS[..i].iter().any(|u| u.from == step.from) {
            return Err(BuildError::upcaster(
                T::TYPE,
                format!("`{}` has two upcasters from version {}", T::TYPE, step.from),
            ));
        }
    }
    Ok(())
}

/// The field name of the probe of [`denies_unknown_fields`]: no payload has it.
const PROBE_FIELD: &str = "bandeja unknown-field probe";

/// Whether `T` refuses fields it does not know (`#[serde(deny_unknown_fields)]`): it is
/// given an object holding one field no type has, and answers whether serde's error names
/// that field as unknown (a tolerant type ignores it and misses its own fields instead).
/// Structs and newtype wrappers only: a tagged or untagged enum answers about its tag or
/// its variants first, so an enum with the attribute is not detected.
#[must_use]
pub fn denies_unknown_fields<T: Payload>() -> bool {
    let probe = format!("{{\"{PROBE_FIELD}\":null}}");
    match serde_json::from_str::<T>(&probe) {
        Ok(_) => false,
        Err(e) => e
            .to_string()
            .starts_with(&format!("unknown field `{PROBE_FIELD}`")),
    }
}

/// Logs a warning at start for a payload type that refuses unknown fields.
pub(crate) fn warn_if_strict<T: Payload>(subscriber: &str) {
    if denies_unknown_fields::<T>() {
        tracing::warn!(
            message_type = T::TYPE,
            subscriber,
            "`{}` refuses unknown fields (#[serde(deny_unknown_fields)]): every newer version \
             that adds a field will fail here until this service is deployed with it; remove \
             the attribute to read newer versions tolerantly",
            T::TYPE
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Paid {
        order: i64,
        cents: i64,
        currency: String,
    }

    fn v1_to_v2(mut v: Value) -> Result<Value, UpcastError> {
        let amount = v
            .as_object_mut()
            .and_then(|o| o.remove("amount"))
            .ok_or_else(|| UpcastError::new("no `amount`"))?;
        v["cents"] = amount;
        Ok(v)
    }

    fn v2_to_v3(mut v: Value) -> Result<Value, UpcastError> {
        v["currency"] = json!("EUR");
        Ok(v)
    }

    impl Payload for Paid {
        const TYPE: &'static str = "Paid";
        const VERSION: u32 = 3;
        const UPCASTERS: &'static [Upcaster] =
            &[Upcaster::new(1, v1_to_v2), Upcaster::new(2, v2_to_v3)];
    }

    #[derive(Debug, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        order: i64,
    }

    impl Payload for Strict {
        const TYPE: &'static str = "Strict";
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct Tolerant {
        order: i64,
    }

    impl Payload for Tolerant {
        const TYPE: &'static str = "Tolerant";
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct BadSteps;

    impl Payload for BadSteps {
        const TYPE: &'static str = "BadSteps";
        const VERSION: u32 = 2;
        const UPCASTERS: &'static [Upcaster] = &[Upcaster::new(2, v2_to_v3)];
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct TwiceFrom1;

    impl Payload for TwiceFrom1 {
        const TYPE: &'static str = "TwiceFrom1";
        const VERSION: u32 = 3;
        const UPCASTERS: &'static [Upcaster] =
            &[Upcaster::new(1, v1_to_v2), Upcaster::new(1, v2_to_v3)];
    }

    #[test]
    fn versions_1_and_2_are_upcast_to_3_and_3_decodes_as_it_is() {
        let want = Paid {
            order: 7,
            cents: 1250,
            currency: "EUR".into(),
        };
        let v1 = r#"{"order":7,"amount":1250}"#;
        let v2 = r#"{"order":7,"cents":1250}"#;
        let v3 = r#"{"order":7,"cents":1250,"currency":"EUR"}"#;
        assert_eq!(decode::<Paid>("Paid", 1, v1).expect("v1"), want);
        assert_eq!(decode::<Paid>("Paid", 2, v2).expect("v2"), want);
        assert_eq!(decode::<Paid>("Paid", 3, v3).expect("v3"), want);
    }

    #[test]
    fn a_failing_upcaster_names_its_step() {
        let e = decode::<Paid>("Paid", 1, r#"{"order":7}"#).expect_err("no amount");
        let text = e.to_string();
        assert!(
            matches!(e, DecodeError::Upcast { from: 1, to: 2, .. }),
            "{e:?}"
        );
        assert!(
            text.contains("from version 1 to 2") && text.contains("no `amount`"),
            "{text}"
        );
    }

    #[test]
    fn a_newer_version_decodes_when_it_only_added_fields_and_names_both_versions_otherwise() {
        let newer = r#"{"order":7,"cents":1250,"currency":"EUR","note":"gift"}"#;
        assert_eq!(decode::<Paid>("Paid", 4, newer).expect("v4").cents, 1250);
        let broken = r#"{"order":7,"total":{"cents":1250},"currency":"EUR"}"#;
        let e = decode::<Paid>("Paid", 4, broken).expect_err("cents moved");
        let text = e.to_string();
        assert!(
            text.contains("version 4") && text.contains("version 3"),
            "{text}"
        );
        assert!(text.contains("bandeja retry"), "{text}");
    }

    #[test]
    fn unknown_fields_are_ignored_at_the_same_version() {
        let row = r#"{"order":7,"cents":1,"currency":"EUR","added_later":[1,2]}"#;
        assert_eq!(decode::<Paid>("Paid", 3, row).expect("decodes").order, 7);
    }

    #[test]
    fn deny_unknown_fields_is_told_apart_from_a_tolerant_type() {
        assert!(denies_unknown_fields::<Strict>());
        assert!(!denies_unknown_fields::<Tolerant>());
        assert!(!denies_unknown_fields::<Paid>());
    }

    #[test]
    fn registering_a_strict_type_warns_and_a_tolerant_one_does_not() {
        let strict = crate::vocabulary::test_log::logged(|| warn_if_strict::<Strict>("billing"));
        assert!(
            strict.contains("WARN") && strict.contains("refuses unknown fields"),
            "{strict}"
        );
        let tolerant =
            crate::vocabulary::test_log::logged(|| warn_if_strict::<Tolerant>("billing"));
        assert!(tolerant.is_empty(), "{tolerant}");
    }

    #[test]
    fn upcasters_outside_the_versions_or_twice_for_one_are_refused() {
        assert!(check::<Paid>().is_ok());
        let e = check::<BadSteps>().expect_err("from 2 with VERSION 2");
        assert!(e.to_string().contains("outside 1 to 1"), "{e}");
        let e = check::<TwiceFrom1>().expect_err("two from 1");
        assert!(
            e.to_string().contains("two upcasters from version 1"),
            "{e}"
        );
    }
}

//! Amounts of money, kept in integer cents so totals never suffer from floating point.
//! In JSON (API and event payloads) an amount is a decimal string: `"89.90"`, and its
//! JSON Schema (for `bandeja schema check`) says so.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use bandeja::schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount in euro cents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money(i64);

impl Money {
    /// Zero.
    pub const ZERO: Money = Money(0);

    /// An amount of `cents` cents.
    pub const fn from_cents(cents: i64) -> Money {
        Money(cents)
    }

    /// The amount in cents.
    pub const fn cents(self) -> i64 {
        self.0
    }

    /// `self * quantity`, or `None` on overflow.
    pub fn checked_mul(self, quantity: i64) -> Option<Money> {
        self.0.checked_mul(quantity).map(Money)
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Money) -> Option<Money> {
        self.0.checked_add(other.0).map(Money)
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

/// Why a text is not an amount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an amount: write it like 89.90")]
pub struct ParseMoneyError(String);

impl FromStr for Money {
    type Err = ParseMoneyError;

    /// Parses `89.90`, `89.9`, `89` or `-1.50`.
    fn from_str(s: &str) -> Result<Money, ParseMoneyError> {
        let error = || ParseMoneyError(s.to_owned());
        let (negative, digits) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (units, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if units.is_empty() || !all_digits(units) || fraction.len() > 2 || !all_digits(fraction) {
            return Err(error());
        }
        let units: i64 = units.parse().map_err(|_| error())?;
        let cents: i64 = match fraction.len() {
            0 => 0,
            1 => fraction.parse::<i64>().map_err(|_| error())? * 10,
            _ => fraction.parse().map_err(|_| error())?,
        };
        let total = units
            .checked_mul(100)
            .and_then(|u| u.checked_add(cents))
            .ok_or_else(error)?;
        Ok(Money(if negative { -total } else { total }))
    }
}

impl Serialize for Money {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Money, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A decimal string with at most two decimals, as [`Money`]'s serde writes it.
impl JsonSchema for Money {
    fn schema_name() -> Cow<'static, str> {
        "Money".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "An amount in euros, as a decimal string with at most two decimals.",
            "type": "string",
            "pattern": "^-?[0-9]+(\\.[0-9]{1,2})?$",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_cents() {
        assert_eq!(Money::from_cents(8990).to_string(), "89.90");
        assert_eq!(Money::from_cents(5).to_string(), "0.05");
        assert_eq!(Money::from_cents(-150).to_string(), "-1.50");
        assert_eq!("89.9".parse(), Ok(Money::from_cents(8990)));
        assert_eq!("89".parse(), Ok(Money::from_cents(8900)));
        assert_eq!("0.05".parse(), Ok(Money::from_cents(5)));
        assert_eq!("-1.50".parse(), Ok(Money::from_cents(-150)));
        for bad in [
            "",
            ".5",
            "1.234",
            "1,5",
            "abc",
            "1.-5",
            "99999999999999999999",
        ] {
            assert!(bad.parse::<Money>().is_err(), "{bad}");
        }
    }

    #[test]
    fn its_schema_is_a_decimal_string() {
        let schema = bandeja::schemars::schema_for!(Money);
        assert_eq!(schema.get("type"), Some(&serde_json::json!("string")));
        let pattern = schema.get("pattern").and_then(|p| p.as_str()).unwrap();
        assert_eq!(pattern, r"^-?[0-9]+(\.[0-9]{1,2})?$");
    }

    #[test]
    fn is_a_decimal_string_in_json() {
        let json = serde_json::to_string(&Money::from_cents(14970)).unwrap();
        assert_eq!(json, "\"149.70\"");
        let back: Money = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Money::from_cents(14970));
    }
}

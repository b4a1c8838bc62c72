//! Parsing and formatting of configuration durations.
//!
//! Two notations are accepted: ISO-8601 durations as written in the specification
//! (`PT5S`, `PT1M30S`, `PT0.5S`, `P1D`, `P1DT12H`) and a shorter human notation
//! (`5s`, `500ms`, `1m30s`, `2h`, `1d`).

use std::time::Duration;

const NANO: u128 = 1;
const MICRO: u128 = 1_000;
const MILLI: u128 = 1_000_000;
const SECOND: u128 = 1_000_000_000;
const MINUTE: u128 = 60 * SECOND;
const HOUR: u128 = 60 * MINUTE;
const DAY: u128 = 24 * HOUR;
const WEEK: u128 = 7 * DAY;

/// Fraction digits taken into account. Even for weeks the 19th digit is below a
/// nanosecond, and `10^18 * WEEK` cannot overflow a `u128`.
const MAX_FRACTION_DIGITS: usize = 18;

/// Parses a non-negative duration.
///
/// Accepted forms:
/// - ISO-8601: `P[nW][nD][T[nH][nM][nS]]`, case-insensitive, at least one component,
///   with an optional fraction on the last component (`PT5S`, `PT1M30S`, `PT0.5S`,
///   `P1D`, `PT2H`, `P1DT12H`). Years and months are rejected because their length
///   varies.
/// - human: one or more `<number><unit>` pairs with units in decreasing order
///   (`5s`, `500ms`, `1m30s`, `1h 30m`, `1.5s`); units are `ns`, `us` (or `µs`), `ms`,
///   `s`, `m`, `h`, `d` and `w`.
///
/// Zero (`PT0S`, `0s`) is accepted; whether it is allowed is decided by validation.
/// Negative durations, a bare number without unit, unknown units, empty input and
/// values beyond [`Duration::MAX`] are rejected with a message saying why.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err("the duration is empty".to_owned());
    }
    if text.contains('-') {
        return Err("durations cannot be negative".to_owned());
    }
    let nanos = match text.strip_prefix(['P', 'p']) {
        Some(rest) => parse_iso(rest)?,
        None => total(&components(text)?, |_, unit| human_unit(unit))?,
    };
    let secs = u64::try_from(nanos / SECOND).map_err(|_| too_large())?;
    let sub = u32::try_from(nanos % SECOND).map_err(|_| too_large())?;
    Ok(Duration::new(secs, sub))
}

/// Formats a duration as ISO-8601 (`PT5S`, `PT0.5S`, `PT1M30S`, `PT24H`, `PT0S`).
///
/// Hours are the largest unit, so the result never depends on calendar rules;
/// [`parse_duration`] reads it back to the same value.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (hours, minutes, seconds, nanos) =
        (secs / 3600, secs % 3600 / 60, secs % 60, d.subsec_nanos());
    let mut out = String::from("PT");
    if hours > 0 {
        out.push_str(&format!("{hours}H"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}M"));
    }
    if seconds > 0 || nanos > 0 || (hours == 0 && minutes == 0) {
        out.push_str(&seconds.to_string());
        if nanos > 0 {
            let fraction = format!("{nanos:09}");
            out.push('.');
            out.push_str(fraction.trim_end_matches('0'));
        }
        out.push('S');
    }
    out
}

fn too_large() -> String {
    "the duration is too large".to_owned()
}

/// One `<number><unit>` pair.
struct Component<'a> {
    whole: u128,
    fraction: u128,
    fraction_digits: u32,
    has_fraction: bool,
    unit: &'a str,
}

/// Parses the part after `P` (already known to hold no `-`).
fn parse_iso(rest: &str) -> Result<u128, String> {
    let (date, time) = match rest.split_once(['T', 't']) {
        Some((date, time)) => (date, Some(time)),
        None => (rest, None),
    };
    if time == Some("") {
        return Err("`T` must be followed by hours, minutes or seconds, as in `PT5S`".to_owned());
    }
    let mut parts = components(date)?;
    let date_count = parts.len();
    if let Some(time) = time {
        parts.extend(components(time)?);
    }
    if parts.is_empty() {
        return Err("expected at least one component after `P`, as in `PT5S` or `P1D`".to_owned());
    }
    total(&parts, |index, unit| {
        match (index < date_count, unit.to_ascii_uppercase().as_str()) {
            (true, "W") => Ok(WEEK),
            (true, "D") => Ok(DAY),
            (false, "H") => Ok(HOUR),
            (false, "M") => Ok(MINUTE),
            (false, "S") => Ok(SECOND),
            (true, "Y" | "M") => {
                Err("years and months are not supported (their length varies); use days".to_owned())
            }
            (true, "H" | "S") => Err(format!("`{unit}` must come after `T`, as in `PT5{unit}`")),
            _ => Err(format!(
                "unknown ISO-8601 designator `{unit}`; expected W or D before `T`, H, M or S after"
            )),
        }
    })
}

fn human_unit(unit: &str) -> Result<u128, String> {
    match unit.to_ascii_lowercase().as_str() {
        "ns" => Ok(NANO),
        "us" | "µs" => Ok(MICRO),
        "ms" => Ok(MILLI),
        "s" => Ok(SECOND),
        "m" => Ok(MINUTE),
        "h" => Ok(HOUR),
        "d" => Ok(DAY),
        "w" => Ok(WEEK),
        _ => Err(format!(
            "unknown unit `{unit}`; use ns, us, ms, s, m, h, d or w, as in `5s`"
        )),
    }
}

/// Splits `1m30.5s` into its `<number><unit>` pairs (units trimmed of whitespace).
fn components(s: &str) -> Result<Vec<Component<'_>>, String> {
    let is_digit = |c: char| c.is_ascii_digit();
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let start = rest;
        let digits_end = rest.find(|c: char| !is_digit(c)).unwrap_or(rest.len());
        if digits_end == 0 {
            return Err(format!("expected a number at `{rest}`"));
        }
        let mut whole: u128 = 0;
        for digit in rest[..digits_end].bytes() {
            whole = whole
                .checked_mul(10)
                .and_then(|w| w.checked_add(u128::from(digit - b'0')))
                .ok_or_else(too_large)?;
        }
        rest = &rest[digits_end..];
        let (mut fraction, mut fraction_digits, mut has_fraction) = (0u128, 0u32, false);
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(|c: char| !is_digit(c)).unwrap_or(after.len());
            if end == 0 {
                return Err("expected digits after the decimal point".to_owned());
            }
            for digit in after[..end].bytes().take(MAX_FRACTION_DIGITS) {
                fraction = fraction * 10 + u128::from(digit - b'0');
                fraction_digits += 1;
            }
            has_fraction = true;
            rest = &after[end..];
        }
        let unit_end = rest
            .find(|c: char| is_digit(c) || c == '.')
            .unwrap_or(rest.len());
        let unit = rest[..unit_end].trim();
        if unit.is_empty() {
            let number = &start[..start.len() - rest.len()];
            return Err(format!("missing unit after `{number}`, as in `{number}s`"));
        }
        out.push(Component {
            whole,
            fraction,
            fraction_digits,
            has_fraction,
            unit,
        });
        rest = &rest[unit_end..];
    }
    Ok(out)
}

/// Sums the components in nanoseconds; units must strictly decrease and only the
/// last component may have a fraction.
fn total(
    parts: &[Component<'_>],
    unit_of: impl Fn(usize, &str) -> Result<u128, String>,
) -> Result<u128, String> {
    let mut sum: u128 = 0;
    let mut previous = u128::MAX;
    for (index, part) in parts.iter().enumerate() {
        let unit = unit_of(index, part.unit)?;
        if unit >= previous {
            return Err(format!(
                "unit `{}` is repeated or out of order; write larger units first, as in `1m30s`",
                part.unit
            ));
        }
        previous = unit;
        if part.has_fraction && index + 1 != parts.len() {
            return Err("only the last component may have a fraction".to_owned());
        }
        let whole = part.whole.checked_mul(unit).ok_or_else(too_large)?;
        // fraction < 10^18 and unit <= WEEK < 10^15: no overflow.
        let fraction = part.fraction * unit / 10u128.pow(part.fraction_digits);
        sum = sum
            .checked_add(whole)
            .and_then(|s| s.checked_add(fraction))
            .ok_or_else(too_large)?;
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn iso_and_human_forms_agree() {
        let cases: &[(&str, &str, Duration)] = &[
            ("PT0S", "0s", Duration::ZERO),
            ("PT5S", "5s", ms(5_000)),
            ("PT0.5S", "500ms", ms(500)),
            ("PT1M", "1m", ms(60_000)),
            ("PT1M30S", "1m30s", ms(90_000)),
            ("PT2H", "2h", ms(7_200_000)),
            ("P1D", "1d", ms(86_400_000)),
            ("P1W", "1w", ms(7 * 86_400_000)),
            ("P1DT2H3M4.5S", "1d2h3m4s500ms", ms(93_784_500)),
            ("PT0.000250S", "250us", Duration::from_micros(250)),
            ("PT0.000000001S", "1ns", Duration::from_nanos(1)),
            ("PT1.5H", "1.5h", ms(5_400_000)),
            ("pt5s", "5S", ms(5_000)),
        ];
        for (iso, human, expected) in cases {
            assert_eq!(parse_duration(iso).as_ref(), Ok(expected), "{iso}");
            assert_eq!(parse_duration(human).as_ref(), Ok(expected), "{human}");
        }
        assert_eq!(parse_duration(" 1h 30m "), Ok(ms(5_400_000)));
        assert_eq!(parse_duration("2µs"), Ok(Duration::from_micros(2)));
    }

    #[test]
    fn bad_durations_are_rejected_with_a_reason() {
        let cases = [
            ("-5s", "negative"),
            ("PT-5S", "negative"),
            ("5 parsecs", "unknown unit `parsecs`"),
            ("", "empty"),
            ("   ", "empty"),
            ("P", "at least one component"),
            ("PT", "`T` must be followed"),
            ("P1DT", "`T` must be followed"),
            ("5", "missing unit"),
            ("abc", "expected a number"),
            ("s", "expected a number"),
            ("1.s", "decimal point"),
            ("P1M", "months"),
            ("P1Y", "months"),
            ("P5S", "after `T`"),
            ("PT5X", "designator"),
            ("PT5SX", "designator"),
            ("1s1m", "out of order"),
            ("1m1m", "repeated"),
            ("1.5m30s", "last component"),
            ("+5s", "expected a number"),
            ("99999999999999999999999999999999999999999h", "too large"),
            ("18446744073709551616s", "too large"),
            ("P300000000000000D", "too large"),
        ];
        for (input, expected) in cases {
            match parse_duration(input) {
                Ok(d) => panic!("{input:?} parsed as {d:?}"),
                Err(reason) => assert!(reason.contains(expected), "{input:?}: {reason}"),
            }
        }
    }

    #[test]
    fn formats_iso() {
        assert_eq!(format_duration(Duration::ZERO), "PT0S");
        assert_eq!(format_duration(ms(5_000)), "PT5S");
        assert_eq!(format_duration(ms(500)), "PT0.5S");
        assert_eq!(format_duration(ms(90_000)), "PT1M30S");
        assert_eq!(format_duration(ms(300_000)), "PT5M");
        assert_eq!(format_duration(ms(86_400_000)), "PT24H");
        assert_eq!(format_duration(Duration::new(3_601, 1)), "PT1H1.000000001S");
    }

    #[test]
    fn format_round_trips_through_parse() {
        let values = [
            Duration::ZERO,
            Duration::from_nanos(1),
            ms(1),
            ms(500),
            ms(59_999),
            ms(3_600_000),
            Duration::new(93_784, 123_456_789),
            Duration::new(u64::MAX, 999_999_999),
        ];
        for d in values {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{d:?}");
        }
        assert_eq!(
            parse_duration("18446744073709551615s"),
            Ok(Duration::from_secs(u64::MAX))
        );
    }
}

//! Writing results: one JSON document (`--json`) or text on stdout, and the formats both
//! share (instants, shortened errors).

use std::io::{self, Write};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::error::CliError;

/// Writes `value` as one pretty-printed JSON document on stdout.
pub(crate) fn json(value: &impl Serialize) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Writes `value` as one compact JSON line on stdout (for a supervisor reading lines).
pub(crate) fn json_line(value: &impl Serialize) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Writes `text` (and a newline) on stdout.
pub(crate) fn line(text: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// Writes `text` (and a newline) on stderr: progress notes and plans, which must not mix
/// with a JSON document on stdout.
pub(crate) fn note(text: &str) {
    // Nothing sensible to do when stderr is gone.
    let _ = writeln!(io::stderr(), "{text}");
}

/// An instant as RFC 3339 to the second (`2025-06-01T12:00:00Z`), `-` for none.
pub(crate) fn instant(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(
        || "-".to_owned(),
        |at| at.to_rfc3339_opts(SecondsFormat::Secs, true),
    )
}

/// The first line of `text`, cut to `max` characters (with `…` when cut).
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or_default();
    if first.chars().count() <= max && first.len() == text.trim_end().len() {
        return first.to_owned();
    }
    let kept: String = first.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// `1 row` / `3 rows`.
pub(crate) fn rows(n: u64) -> String {
    if n == 1 {
        "1 row".to_owned()
    } else {
        format!("{n} rows")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_shortened_to_their_first_line() {
        assert_eq!(shorten("boom", 10), "boom");
        assert_eq!(shorten("a very long error message", 10), "a very lo…");
        assert_eq!(shorten("first\nsecond", 40), "first…");
        assert_eq!(shorten("", 10), "");
    }

    #[test]
    fn counts_read_naturally() {
        assert_eq!(rows(0), "0 rows");
        assert_eq!(rows(1), "1 row");
        assert_eq!(rows(12), "12 rows");
    }
}

//! Parsers for option values clap does not know: durations (`PT2H`, `2h`), instants
//! (RFC 3339, or a duration meaning "that long ago"), case-insensitive statuses.

use std::time::Duration;

use bandeja_core::admin::listing::{Cursor, CursorError, Direction};
use bandeja_core::config::parse_duration;
use bandeja_core::MessageStatus;
use chrono::{DateTime, Utc};

/// A duration in ISO-8601 (`PT2H`, `P7D`) or human form (`2h`, `7d`, `90m`).
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text)
        .map_err(|reason| format!("{reason} (write a duration like `2h`, `7d` or `PT2H`)"))
}

/// An instant: RFC 3339 (`2025-06-01T12:00:00Z`, `2025-06-01T14:00:00+02:00`), or a
/// duration meaning that long before now (`2h`, `PT2H`, `7d`).
pub(crate) fn instant(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(at.with_timezone(&Utc));
    }
    match parse_duration(text) {
        Ok(ago) => ago_from(Utc::now(), ago),
        Err(reason) => Err(format!(
            "`{text}` is neither an RFC 3339 instant (`2025-06-01T12:00:00Z`) nor a duration \
             ago (`2h`, `PT2H`, `7d`): {reason}"
        )),
    }
}

/// `now - ago`, or an error when that is before the representable range.
pub(crate) fn ago_from(now: DateTime<Utc>, ago: Duration) -> Result<DateTime<Utc>, String> {
    chrono::Duration::from_std(ago)
        .ok()
        .and_then(|ago| now.checked_sub_signed(ago))
        .ok_or_else(|| format!("{ago:?} ago is too far in the past"))
}

/// A page cursor towards older rows (`o.…`), as `messages list` prints after "older:".
pub(crate) fn older_cursor(text: &str) -> Result<Cursor, String> {
    cursor(text, Direction::Older)
}

/// A page cursor towards newer rows (`n.…`), as `messages list` prints after "newer:".
pub(crate) fn newer_cursor(text: &str) -> Result<Cursor, String> {
    cursor(text, Direction::Newer)
}

/// A cursor walking `direction`: one walking the other way is an error saying which option
/// takes it.
fn cursor(text: &str, direction: Direction) -> Result<Cursor, String> {
    let cursor: Cursor = text
        .trim()
        .parse()
        .map_err(|e: CursorError| e.to_string())?;
    match (cursor.direction(), direction) {
        (Direction::Older, Direction::Newer) => Err(format!(
            "`{text}` is a cursor to older rows (it starts with `o.`): pass it to --before"
        )),
        (Direction::Newer, Direction::Older) => Err(format!(
            "`{text}` is a cursor to newer rows (it starts with `n.`): pass it to --after"
        )),
        _ => Ok(cursor),
    }
}

/// A message status, in any case (`failed`, `FAILED`).
/// A saga status, in any case.
pub(crate) fn saga_status(text: &str) -> Result<bandeja_core::saga::SagaStatus, String> {
    text.parse()
        .map_err(|e: bandeja_core::saga::UnknownSagaStatus| e.to_string())
}

pub(crate) fn status(text: &str) -> Result<MessageStatus, String> {
    text.trim().to_ascii_uppercase().parse().map_err(|_| {
        format!("unknown status `{text}`: use pending, processing, completed or failed")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_rfc3339_or_a_duration_ago() {
        let at = instant("2025-06-01T14:00:00+02:00").expect("rfc 3339");
        assert_eq!(at.to_rfc3339(), "2025-06-01T12:00:00+00:00");
        for text in ["2h", "PT2H"] {
            let before = Utc::now() - chrono::Duration::hours(2);
            let parsed = instant(text).expect(text);
            let after = Utc::now() - chrono::Duration::hours(2);
            assert!(before <= parsed && parsed <= after, "{text}: {parsed}");
        }
        let error = instant("yesterday").expect_err("not an instant");
        assert!(error.contains("RFC 3339"), "{error}");
    }

    #[test]
    fn a_duration_too_far_back_is_an_error_not_a_panic() {
        let error = ago_from(Utc::now(), Duration::from_secs(u64::MAX)).expect_err("too far");
        assert!(error.contains("too far"), "{error}");
    }

    #[test]
    fn cursors_go_to_the_option_of_their_direction() {
        assert!(older_cursor("o.12.*.3.*").is_ok());
        assert!(newer_cursor("n.*.*.4.*").is_ok());
        let wrong = older_cursor("n.*.*.4.*").expect_err("a newer cursor");
        assert!(wrong.contains("--after"), "{wrong}");
        let wrong = newer_cursor("o.12.*.3.*").expect_err("an older cursor");
        assert!(wrong.contains("--before"), "{wrong}");
        let bad = older_cursor("page2").expect_err("not a cursor");
        assert!(bad.contains("bad page cursor"), "{bad}");
    }

    #[test]
    fn statuses_are_case_insensitive() {
        assert_eq!(status("failed"), Ok(MessageStatus::Failed));
        assert_eq!(status("Completed"), Ok(MessageStatus::Completed));
        assert!(status("done").expect_err("unknown").contains("pending"));
    }

    #[test]
    fn durations_say_how_to_write_one() {
        assert_eq!(duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(duration("P7D"), Ok(Duration::from_secs(7 * 86_400)));
        assert!(duration("2").expect_err("no unit").contains("`2h`"));
    }
}

//! Named crash points, for crash tests: with the `fault-injection` feature, a process whose
//! `BANDEJA_CRASH_AT` environment variable names a point aborts there (no unwinding, no
//! shutdown hook: like `kill -9` at that exact line). Without the feature every point is an
//! empty inline function.
//!
//! | point | where |
//! | --- | --- |
//! | `after-emit-commit` | `Bandeja::emit` / `send`, right after the outbox row committed |
//! | `after-claim` | a worker claimed a batch (rows PROCESSING under its lease) |
//! | `after-publish-before-mark` | the broker acknowledged a batch, the outbox rows are not marked yet |
//! | `after-inbox-insert-before-ack` | received messages are in the inbox, the broker is not acknowledged yet |
//! | `inside-handler` | a handler did its work, its transaction is not committed |
//! | `after-handler-commit` | a handler's transaction committed (row COMPLETED), nothing after it ran |
//!
//! `BANDEJA_CRASH_AT=<point>@<n>` aborts the n-th time the point is reached instead of the
//! first (`inside-handler@40`: after 39 handlings), so a crash can come in the middle of a
//! busy run. A value that is not a point (or has a bad count) never aborts.

/// The environment variable that names the point to crash at.
pub const CRASH_AT_VAR: &str = "BANDEJA_CRASH_AT";

/// Every named point.
pub const POINTS: [&str; 6] = [
    "after-emit-commit",
    "after-claim",
    "after-publish-before-mark",
    "after-inbox-insert-before-ack",
    "inside-handler",
    "after-handler-commit",
];

/// Aborts the process if `BANDEJA_CRASH_AT` names `name` (feature `fault-injection`), at
/// the hit the variable's `@<n>` asks for (the first by default).
#[inline]
pub fn point(name: &'static str) {
    #[cfg(feature = "fault-injection")]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        static CHOSEN: std::sync::OnceLock<Option<(String, u64)>> = std::sync::OnceLock::new();
        static HITS: AtomicU64 = AtomicU64::new(0);
        let chosen = CHOSEN.get_or_init(|| parse(&std::env::var(CRASH_AT_VAR).ok()?));
        if let Some((point, at)) = chosen {
            if point == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *at {
                eprintln!(
                    "bandeja: crash point `{name}` reached (hit {at}): aborting ({CRASH_AT_VAR})"
                );
                std::process::abort();
            }
        }
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = name;
}

/// `<point>` or `<point>@<n>` (n ≥ 1) as the point and the hit to abort at.
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
fn parse(value: &str) -> Option<(String, u64)> {
    let (point, at) = match value.split_once('@') {
        Some((point, n)) => (point, n.trim().parse().ok().filter(|n| *n >= 1)?),
        None => (value, 1),
    };
    Some((point.trim().to_owned(), at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_distinct_and_an_unset_point_does_nothing() {
        let mut names = POINTS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), POINTS.len());
        // BANDEJA_CRASH_AT is not set in unit tests: every point returns.
        for name in POINTS {
            point(name);
        }
    }

    #[test]
    fn a_point_may_name_the_hit_to_abort_at() {
        assert_eq!(parse("after-claim"), Some(("after-claim".to_owned(), 1)));
        assert_eq!(
            parse("inside-handler@40"),
            Some(("inside-handler".to_owned(), 40))
        );
        assert_eq!(parse("inside-handler@0"), None);
        assert_eq!(parse("inside-handler@x"), None);
    }
}

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

/// Aborts the process if `BANDEJA_CRASH_AT` names `name` (feature `fault-injection`).
#[inline]
pub fn point(name: &'static str) {
    #[cfg(feature = "fault-injection")]
    {
        static CHOSEN: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        let chosen = CHOSEN.get_or_init(|| std::env::var(CRASH_AT_VAR).ok());
        if chosen.as_deref() == Some(name) {
            eprintln!("bandeja: crash point `{name}` reached: aborting ({CRASH_AT_VAR})");
            std::process::abort();
        }
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = name;
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
}

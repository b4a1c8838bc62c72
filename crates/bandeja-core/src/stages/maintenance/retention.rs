//! Retention: a periodic purge of the COMPLETED rows (and inbox dedup records) of one box
//! completed longer ago than its `retention`.

use std::time::Duration;

use tokio::sync::watch;

use crate::record::BoxKind;
use crate::store::Store;

/// How often the purge runs for a retention: a tenth of it, between 100 ms and a minute
/// (a row outlives its retention by at most that much).
pub(crate) fn interval(retention: Duration) -> Duration {
    (retention / 10).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

/// Purges `box_kind` every [`interval`] until shutdown.
pub(crate) async fn run<S: Store>(
    store: S,
    box_kind: BoxKind,
    retention: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let every = interval(retention);
    loop {
        match store.purge_completed(box_kind, retention).await {
            Ok(0) => {}
            Ok(purged) => {
                tracing::info!(box = %box_kind, purged, "retention purged completed rows")
            }
            Err(error) => {
                tracing::warn!(box = %box_kind, %error, "retention purge failed; trying again later")
            }
        }
        if !super::pause(&mut stop, every).await {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_is_a_tenth_within_bounds() {
        assert_eq!(interval(Duration::from_secs(10)), Duration::from_secs(1));
        assert_eq!(
            interval(Duration::from_millis(10)),
            Duration::from_millis(100)
        );
        assert_eq!(
            interval(Duration::from_secs(86_400)),
            Duration::from_secs(60)
        );
    }
}

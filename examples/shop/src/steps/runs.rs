//! [`StepRuns`]: the step delay and the run log of the step handlers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::StepKey;

/// How the step handlers run: each waits `delay` (`SHOP_STEP_DELAY`) before it writes
/// anything, and appends one line per run to `log` (`SHOP_RUN_LOG`), outside its
/// transaction, so a run that a kill cut short is still in the log.
#[derive(Debug, Clone, Default)]
pub struct StepRuns {
    /// The pause of every step and compensation (0: none).
    pub delay: Duration,
    /// The file the runs are appended to, if any.
    pub log: Option<PathBuf>,
}

impl StepRuns {
    /// Notes a run of `key` for order `order_id` by `module` (in the log, if there is
    /// one), then waits the delay. Nothing is written in the handler's transaction yet, so
    /// on SQLite the wait holds no lock. A log that cannot be written is logged and
    /// skipped (it is a test aid, not the step).
    pub async fn begin(&self, module: &str, key: &StepKey, order_id: i64) {
        if let Some(path) = &self.log {
            let phase = if key.compensation {
                "compensation"
            } else {
                "forward"
            };
            let line = format!(
                "{module} {} {phase} order={order_id} saga={} pid={}\n",
                key.step,
                key.saga_id,
                std::process::id()
            );
            if let Err(error) = append(path, &line).await {
                tracing::warn!(%error, path = %path.display(), "cannot append to the run log");
            }
        }
        if !self.delay.is_zero() {
            tracing::info!(
                order_id,
                step = %key.step,
                "Order {order_id}: {module} waits {:?} (SHOP_STEP_DELAY)",
                self.delay
            );
            tokio::time::sleep(self.delay).await;
        }
    }
}

async fn append(path: &Path, line: &str) -> std::io::Result<()> {
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    file.write_all(line.as_bytes()).await?;
    file.flush().await
}

//! Slow but healthy handlers (0.5 s each, like an SMTP or HTTP call), two `scale-worker`
//! processes, bandeja's default configuration (lease PT20S, batches of 50, handler
//! concurrency 16): every run of a handler is recorded outside its transaction, in the
//! `runs` table, when it enters and when it leaves. Checked (issue 13, items 1 and 2):
//!
//! - each `(message, subscriber)` entered its handler exactly once (so no two runs of one
//!   message ever overlapped), and every run left it;
//! - every inbox row is COMPLETED with `retry_count` 0 and no takeover, nothing FAILED, and
//!   each effect was applied once;
//! - the drain ran at 80 % or more of `2 × handler-concurrency / duration`, the two
//!   processes sharing the work.

mod common;

use std::time::Duration;

use common::{terminate_all, try_fresh, Fresh, Worker};

/// Messages emitted; each is handled by the two subscribers of `scale-worker`.
const MESSAGES: u64 = 192;
const RUNS: i64 = 384;
const HANDLER: Duration = Duration::from_millis(500);
/// bandeja's default handler concurrency, per process.
const CONCURRENCY: f64 = 16.0;
const PROCESSES: f64 = 2.0;

async fn runs_per_worker(fresh: &Fresh) -> Vec<(String, i64)> {
    sqlx::query_as(
        &fresh.sql("SELECT worker, count(*) FROM {s}.runs GROUP BY worker ORDER BY worker"),
    )
    .fetch_all(fresh.pool())
    .await
    .expect("runs per worker")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_handlers_in_two_processes_run_once_each_at_full_concurrency() {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    let handler_ms = HANDLER.as_millis().to_string();
    let flags = ["--default-config", "--handler-ms", handler_ms.as_str()];
    let mut workers = vec![
        Worker::start_with(fresh.schema(), "slow-a", &flags).await,
        Worker::start_with(fresh.schema(), "slow-b", &flags).await,
    ];
    let ticks: Vec<(String, u64)> = (0..MESSAGES).map(|n| (format!("k{n}"), n)).collect();
    fresh.emit(&ticks).await;
    fresh
        .wait_count(
            "inbox_events WHERE status IN ('COMPLETED', 'FAILED')",
            RUNS,
            Duration::from_secs(90),
        )
        .await;
    terminate_all(&mut workers).await;
    let errors: Vec<(String, i32, i32)> = sqlx::query_as(&fresh.sql(
        "SELECT COALESCE(last_error, ''), retry_count, takeover_count FROM {s}.inbox_events \
         WHERE status <> 'COMPLETED' OR retry_count > 0 OR takeover_count > 0 LIMIT 5",
    ))
    .fetch_all(fresh.pool())
    .await
    .expect("errors");
    assert!(errors.is_empty(), "rows not simply COMPLETED: {errors:?}");

    let entered_more_than_once: i64 = fresh
        .scalar(
            "SELECT count(*) FROM (SELECT message_id, subscriber FROM {s}.runs \
             GROUP BY message_id, subscriber HAVING count(*) > 1) AS twice",
        )
        .await;
    let runs = fresh.count("runs").await;
    let unfinished = fresh.count("runs WHERE exited_at IS NULL").await;
    let overlapping: i64 = fresh
        .scalar(
            "SELECT count(*) FROM {s}.runs a JOIN {s}.runs b \
               ON a.message_id = b.message_id AND a.subscriber = b.subscriber AND a.id < b.id \
              AND a.entered_at < COALESCE(b.exited_at, 'infinity') \
              AND b.entered_at < COALESCE(a.exited_at, 'infinity')",
        )
        .await;
    assert_eq!(
        (runs, entered_more_than_once, overlapping, unfinished),
        (RUNS, 0, 0, 0),
        "(runs, messages entered more than once, overlapping runs, runs that never left): \
         each message must enter its handler exactly once; per worker: {:?}",
        runs_per_worker(&fresh).await
    );
    let retried = fresh.count("inbox_events WHERE retry_count > 0").await;
    let taken_over = fresh.count("inbox_events WHERE takeover_count > 0").await;
    let failed = fresh.count("inbox_events WHERE status = 'FAILED'").await;
    assert_eq!(
        (retried, taken_over, failed),
        (0, 0, 0),
        "(rows retried, rows taken over, rows FAILED): slow handlers cost nothing; {}",
        fresh.status_summary().await
    );
    assert_eq!(fresh.count("effects").await, RUNS);
    assert_eq!(fresh.count("violations").await, 0);

    let span: f64 = fresh
        .scalar("SELECT extract(epoch FROM max(exited_at) - min(entered_at))::float8 FROM {s}.runs")
        .await;
    let ideal = PROCESSES * CONCURRENCY / HANDLER.as_secs_f64();
    #[allow(clippy::cast_precision_loss)] // a few hundred runs
    let achieved = RUNS as f64 / span;
    let per_worker = runs_per_worker(&fresh).await;
    eprintln!(
        "slow handlers: {RUNS} runs of {HANDLER:?} in {span:.2} s: {achieved:.1}/s, \
         ideal {ideal:.1}/s ({:.0} %); per worker {per_worker:?}",
        100.0 * achieved / ideal
    );
    assert!(
        achieved >= 0.8 * ideal,
        "throughput {achieved:.1}/s is below 80 % of {ideal:.1}/s (2 processes × 16 handlers / 0.5 s); per worker {per_worker:?}"
    );
    for (worker, count) in &per_worker {
        assert!(
            *count >= RUNS * 35 / 100,
            "{worker} handled {count} of {RUNS}: the two processes share the work"
        );
    }
}

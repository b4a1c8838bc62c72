//! Crash at the named points of the in-process path (issue: chaos suite, item 3): a
//! `scale-worker` built with `fault-injection` aborts at the point `BANDEJA_CRASH_AT`
//! names — after a claim, inside a handler (work done, not committed), right after a
//! handler's commit — and a second worker started afterwards finishes the job. Checked
//! from the database: every `(event, subscriber)` effect exactly once, no violation, every
//! row COMPLETED; and a process that dies right after `Bandeja::emit` committed still has
//! its event delivered. (The broker points are in `crash_points_over_nats.rs`.)

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use common::{run_until_crash, terminate_all, try_fresh, Worker};

const EVENTS: u64 = 600;
const HANDLINGS: i64 = 1_200;
const LEASE_SECS: u32 = 2;
const TIMEOUT: Duration = Duration::from_secs(90);

async fn crash_then_recover(point: &str) {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    let ticks: Vec<(String, u64)> = (0..EVENTS).map(|n| (format!("k{}", n % 40), n)).collect();
    fresh.emit(&ticks).await;
    let status = run_until_crash(fresh.schema(), "crasher", LEASE_SECS, (point, 0), TIMEOUT).await;
    assert_eq!(
        status.signal(),
        Some(6),
        "the worker aborted at {point}: {status}"
    );
    let mut survivor = vec![Worker::start(fresh.schema(), "survivor", 0.0, LEASE_SECS).await];
    fresh.wait_count("effects", HANDLINGS, TIMEOUT).await;
    fresh
        .wait_count(
            "inbox_events WHERE status = 'COMPLETED'",
            HANDLINGS,
            TIMEOUT,
        )
        .await;
    terminate_all(&mut survivor).await;
    assert_eq!(
        fresh.count("violations").await,
        0,
        "nothing applied twice after {point}"
    );
    assert_eq!(
        fresh.count("effects").await,
        HANDLINGS,
        "nothing lost after {point}"
    );
    for from in ["outbox_events", "inbox_events"] {
        assert_eq!(
            fresh
                .count(&format!("{from} WHERE status <> 'COMPLETED'"))
                .await,
            0,
            "{from}: every row COMPLETED after {point}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_a_claim_is_taken_over_after_the_lease() {
    crash_then_recover("after-claim").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_inside_a_handler_rolls_its_work_back_and_it_runs_again_once() {
    crash_then_recover("inside-handler").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_right_after_a_handler_commit_loses_nothing_and_repeats_nothing() {
    crash_then_recover("after-handler-commit").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_right_after_an_emit_commit_still_delivers_the_event() {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    let status = run_until_crash(
        fresh.schema(),
        "emitter",
        LEASE_SECS,
        ("after-emit-commit", 5),
        TIMEOUT,
    )
    .await;
    assert_eq!(status.signal(), Some(6), "the emitter aborted: {status}");
    assert_eq!(
        fresh.count("outbox_events").await,
        1,
        "the first emit committed, then the crash"
    );
    let mut survivor = vec![Worker::start(fresh.schema(), "survivor", 0.0, LEASE_SECS).await];
    fresh.wait_count("effects", 2, TIMEOUT).await;
    fresh
        .wait_count("outbox_events WHERE status = 'COMPLETED'", 1, TIMEOUT)
        .await;
    terminate_all(&mut survivor).await;
    assert_eq!(fresh.count("effects").await, 2, "once per subscriber");
    assert_eq!(fresh.count("violations").await, 0);
}

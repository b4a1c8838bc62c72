//! Orchestrated sagas through crashes: a `saga-node` orchestrator starts 12 order sagas
//! (charge → reserve → ship (pivot) → notify; every 4th reservation refused, so its charge
//! is refunded) and a `saga-node` steps process does them, each step taking 300 ms inside
//! its transaction. The orchestrator is SIGKILLed mid-flight and restarted, then the steps
//! process is SIGKILLed while it runs a step and restarted. Checked from the database:
//! every saga ends (9 COMPLETED, 3 COMPENSATED), every step and compensation applied
//! exactly once, nothing shipped for a refused order, and the runs recorded outside the
//! transactions show the killed step ran again (its effect once).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use bandeja::saga::{SagaFilter, SagaStatus};
use bandeja::sagas::SagaStore;
use bandeja::testing::eventually;
use common::{try_fresh, Fresh, Worker};

const SAGAS: u64 = 12;
const REFUSE_EVERY: u64 = 4;
const FINISH_TIMEOUT: Duration = Duration::from_secs(120);

fn saga_node() -> &'static str {
    env!("CARGO_BIN_EXE_saga-node")
}

async fn orchestrator(fresh: &Fresh, id: &str, start: u64) -> Worker {
    let start = start.to_string();
    Worker::start_binary(
        saga_node(),
        fresh.schema(),
        id,
        &["--role", "orchestrator", "--start", &start],
    )
    .await
}

async fn steps(fresh: &Fresh, id: &str) -> Worker {
    let refuse = REFUSE_EVERY.to_string();
    Worker::start_binary(
        saga_node(),
        fresh.schema(),
        id,
        &[
            "--role",
            "steps",
            "--step-ms",
            "300",
            "--refuse-every",
            &refuse,
        ],
    )
    .await
}

/// The sagas by status.
async fn statuses(fresh: &Fresh) -> BTreeMap<SagaStatus, usize> {
    let sagas = fresh
        .store
        .list_sagas(&SagaFilter {
            limit: 1_000,
            ..SagaFilter::default()
        })
        .await
        .expect("list the sagas");
    let mut by = BTreeMap::new();
    for saga in sagas {
        *by.entry(saga.status).or_insert(0) += 1;
    }
    by
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sagas_finish_with_each_step_applied_once_through_kills_of_either_process() {
    let Some(fresh) = try_fresh().await else {
        return;
    };
    for ddl in bandeja_scale_tests::saga::saga_tables_ddl(fresh.schema()) {
        sqlx::query(&ddl)
            .execute(fresh.pool())
            .await
            .expect("tables");
    }
    let mut doer = steps(&fresh, "steps-1").await;
    let mut conductor = orchestrator(&fresh, "orch-1", SAGAS).await;

    // Mid-flight: some steps applied, sagas still running.
    fresh.wait_count("saga_effects", 6, FINISH_TIMEOUT).await;
    conductor.kill();
    let applied_at_kill = fresh.count("saga_effects").await;
    assert!(
        applied_at_kill < i64::try_from(SAGAS * 4).unwrap_or(i64::MAX),
        "the orchestrator was killed mid-flight ({applied_at_kill} effects)"
    );
    let _conductor = orchestrator(&fresh, "orch-2", 0).await;

    // The steps process, killed while a step runs (a run recorded, its effect not yet).
    let runs_before = fresh.count("saga_runs").await;
    fresh
        .wait_count("saga_runs", runs_before + 3, FINISH_TIMEOUT)
        .await;
    doer.kill();
    let _doer = steps(&fresh, "steps-2").await;

    let finished = eventually(FINISH_TIMEOUT, || async {
        let by = statuses(&fresh).await;
        let done: usize = by
            .iter()
            .filter(|(s, _)| s.is_final())
            .map(|(_, n)| *n)
            .sum();
        (done == usize::try_from(SAGAS).unwrap_or(0)).then_some(by)
    })
    .await
    .unwrap_or_else(|e| panic!("the sagas did not all finish: {e}"));
    let refused = SAGAS / REFUSE_EVERY;
    assert_eq!(
        finished,
        BTreeMap::from([
            (
                SagaStatus::Completed,
                usize::try_from(SAGAS - refused).unwrap_or(0)
            ),
            (
                SagaStatus::Compensated,
                usize::try_from(refused).unwrap_or(0)
            ),
        ])
    );

    // Each (saga, step, phase) applied exactly once.
    let twice: i64 = fresh
        .scalar(
            "SELECT count(*) FROM (SELECT 1 FROM {s}.saga_effects \
             GROUP BY saga_id, step, phase HAVING count(*) > 1) t",
        )
        .await;
    assert_eq!(twice, 0, "no step or compensation applied twice");
    let effects: Vec<(String, String, i64)> = sqlx::query_as(&fresh.sql(
        "SELECT step, phase, count(*) FROM {s}.saga_effects GROUP BY step, phase ORDER BY step, phase",
    ))
    .fetch_all(fresh.pool())
    .await
    .expect("effects");
    let n = |k: u64| i64::try_from(k).unwrap_or(0);
    assert_eq!(
        effects,
        vec![
            ("charge".to_owned(), "compensation".to_owned(), n(refused)),
            ("charge".to_owned(), "forward".to_owned(), n(SAGAS)),
            (
                "notify".to_owned(),
                "forward".to_owned(),
                n(SAGAS - refused)
            ),
            (
                "reserve".to_owned(),
                "forward".to_owned(),
                n(SAGAS - refused)
            ),
            ("ship".to_owned(), "forward".to_owned(), n(SAGAS - refused)),
        ],
        "charges of refused orders refunded; nothing reserved or shipped for them"
    );
    let runs = fresh.count("saga_runs").await;
    let applied = fresh.count("saga_effects").await;
    eprintln!(
        "saga crash test: {applied} effects, {runs} runs (re-runs after the kill: {})",
        runs - applied - n(refused)
    );
    assert!(
        runs > applied + n(refused),
        "the killed step ran again ({runs} runs for {applied} effects and {refused} refusals)"
    );
}

//! Orchestrated sagas on a store: the steps run in order, each once; a refusal before the
//! pivot compensates the steps done, last first, with the data their replies left; a
//! failure after the pivot is retried, never compensated; a step that never replies times
//! out into compensation. What each participant did is recorded outside its transaction,
//! so a step run twice would show even if its database effects had rolled back.

use std::time::Duration;

use bandeja_core::runtime::Bandeja;
use bandeja_core::saga::{SagaEventKind, SagaPhase, SagaStatus};
use bandeja_core::sagas::SagaStore;
use bandeja_core::store::Inspect;

use crate::fixtures::fast_config;
use crate::fixtures::saga::{
    order_runtime, order_saga, run_order_saga, Answer, OrderData, Participants,
};
use bandeja_core::saga::SagaId;
use bandeja_core::testing::eventually;

fn forward_runs(steps: &[&str]) -> Vec<(String, SagaPhase)> {
    steps
        .iter()
        .map(|s| ((*s).to_owned(), SagaPhase::Forward))
        .collect()
}

/// Every step succeeds (each handler takes 100 ms): COMPLETED, each step run once, in
/// order, and the saga's history says so.
pub async fn a_saga_runs_its_steps_once_each_in_order<S: Inspect + SagaStore>(store: S) {
    let participants = Participants::new(&[], Duration::from_millis(100));
    let state = run_order_saga(&store, &participants, Duration::from_secs(30)).await;
    assert_eq!(state.status, SagaStatus::Completed, "{state:#?}");
    assert_eq!(
        participants.runs(),
        forward_runs(&["charge", "reserve", "ship", "notify"])
    );
    assert_eq!(state.completed_steps, [0, 1, 2, 3]);
    assert_eq!(
        state.data["charge_id"], "ch-7",
        "the charge's reply was kept"
    );
    let succeeded: Vec<&str> = state
        .history
        .iter()
        .filter(|e| e.kind == SagaEventKind::Succeeded)
        .map(|e| e.step.as_str())
        .collect();
    assert_eq!(succeeded, ["charge", "reserve", "ship", "notify"]);
    let listed = store
        .list_sagas(&bandeja_core::saga::SagaFilter {
            saga_type: Some("order".into()),
            status: Some(SagaStatus::Completed),
            limit: 10,
        })
        .await
        .expect("list");
    assert_eq!(listed.iter().map(|s| s.id).collect::<Vec<_>>(), [state.id]);
}

/// The stock is short after the payment: the reservation is refused, so the charge is
/// refunded (with the charge id its reply left), once; nothing is shipped. COMPENSATED,
/// and the refund is recorded in the history, not erased.
pub async fn a_refusal_before_the_pivot_refunds_the_charge_once<S: Inspect + SagaStore>(store: S) {
    let participants = Participants::new(&[("reserve", &[Answer::Refuse])], Duration::ZERO);
    let state = run_order_saga(&store, &participants, Duration::from_secs(30)).await;
    assert_eq!(state.status, SagaStatus::Compensated, "{state:#?}");
    assert_eq!(
        participants.runs(),
        [
            ("charge".to_owned(), SagaPhase::Forward),
            ("reserve".to_owned(), SagaPhase::Forward),
            ("charge".to_owned(), SagaPhase::Compensation),
        ]
    );
    let refunds: Vec<Option<String>> = participants
        .log
        .lock()
        .map(|l| {
            l.iter()
                .filter(|(_, p, _, _)| *p == SagaPhase::Compensation)
                .map(|(_, _, c, _)| c.clone())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(refunds, [Some("ch-7".to_owned())]);
    assert!(
        state
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("reserve") && r.contains("out of stock")),
        "{:?}",
        state.reason
    );
    assert!(state
        .history
        .iter()
        .any(|e| e.phase == SagaPhase::Compensation && e.kind == SagaEventKind::Succeeded));
}

/// After the pivot (shipped), a refused notification is sent again until it succeeds,
/// and nothing is compensated.
pub async fn after_the_pivot_a_refused_step_is_retried_not_compensated<S: Inspect + SagaStore>(
    store: S,
) {
    let participants = Participants::new(
        &[("notify", &[Answer::Refuse, Answer::Refuse])],
        Duration::ZERO,
    );
    let state = run_order_saga(&store, &participants, Duration::from_secs(30)).await;
    assert_eq!(state.status, SagaStatus::Completed, "{state:#?}");
    assert_eq!(
        participants.runs(),
        forward_runs(&["charge", "reserve", "ship", "notify", "notify", "notify"])
    );
}

/// The inventory service takes the reservation and never answers: past its time limit the
/// reservation is released (it may have been made) and the charge refunded, last first.
pub async fn a_step_that_never_replies_times_out_into_compensation<S: Inspect + SagaStore>(
    store: S,
) {
    let participants = Participants::new(&[("reserve", &[Answer::Silent])], Duration::ZERO);
    let state = run_order_saga(&store, &participants, Duration::from_millis(300)).await;
    assert_eq!(state.status, SagaStatus::Compensated, "{state:#?}");
    assert_eq!(
        participants.runs(),
        [
            ("charge".to_owned(), SagaPhase::Forward),
            ("reserve".to_owned(), SagaPhase::Forward),
            ("reserve".to_owned(), SagaPhase::Compensation),
            ("charge".to_owned(), SagaPhase::Compensation),
        ]
    );
    assert!(state
        .history
        .iter()
        .any(|e| e.kind == SagaEventKind::TimedOut && e.step == "reserve"));
}

/// A saga the runtime does not orchestrate is refused at start, with nothing written.
pub async fn starting_a_saga_the_runtime_does_not_orchestrate_is_refused<S: Inspect + SagaStore>(
    store: S,
) {
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .build()
        .expect("build");
    let mut tx = store.begin().await.expect("begin");
    let data = OrderData {
        order: 1,
        charge_id: None,
    };
    let refused = bandeja
        .start_saga(&mut tx, &order_saga(Duration::from_secs(1)), &data)
        .await
        .expect_err("not registered");
    assert!(
        refused.to_string().contains("BandejaBuilder::saga"),
        "{refused}"
    );
    drop(tx);
    let all = store
        .list_sagas(&bandeja_core::saga::SagaFilter::default())
        .await
        .expect("list");
    assert!(all.is_empty());
}

/// The reservation takes 1.5 s, five times its time limit, then answers done: the saga has
/// compensated it meanwhile (the reservation released, the charge refunded), and the late
/// success changes nothing: it is recorded in the history under the step it answers.
pub async fn a_step_slower_than_its_timeout_is_compensated_and_its_late_reply_ignored<
    S: Inspect + SagaStore,
>(
    store: S,
) {
    let late = Duration::from_millis(1500);
    let participants = Participants::new(&[("reserve", &[Answer::Late(late)])], Duration::ZERO);
    let state = run_order_saga(&store, &participants, Duration::from_millis(300)).await;
    assert_eq!(state.status, SagaStatus::Compensated, "{state:#?}");
    // The runtime is stopped: wait for the late reservation's reply on a second one.
    let saga = order_saga(Duration::from_millis(300));
    let bandeja = order_runtime(&store, &participants, &saga);
    let running = bandeja.start().await.expect("start");
    let after = eventually(Duration::from_secs(30), || async {
        let state = store.saga(state.id).await.ok()??;
        state
            .history
            .iter()
            .any(|e| e.kind == SagaEventKind::Ignored)
            .then_some(state)
    })
    .await;
    running.shutdown().await;
    let after = after.unwrap_or_else(|e| panic!("the late reply was not recorded: {e}"));
    assert_eq!(after.status, SagaStatus::Compensated, "{after:#?}");
    let ignored: Vec<&str> = after
        .history
        .iter()
        .filter(|e| e.kind == SagaEventKind::Ignored)
        .map(|e| e.step.as_str())
        .collect();
    assert_eq!(ignored, ["reserve"], "{:#?}", after.history);
    let mut runs = participants.runs();
    runs.sort_by_key(|(step, phase)| (step.clone(), *phase == SagaPhase::Compensation));
    assert_eq!(
        runs,
        [
            ("charge".to_owned(), SagaPhase::Forward),
            ("charge".to_owned(), SagaPhase::Compensation),
            ("reserve".to_owned(), SagaPhase::Forward),
            ("reserve".to_owned(), SagaPhase::Compensation),
        ],
        "each step and compensation ran once; nothing was shipped"
    );
}

/// Orders started by each of two runtimes that both orchestrate the saga (two instances of
/// one service), their steps taking 100 ms; two reservations never answer, so both
/// runtimes' sweepers find the same timeouts. Every saga ends once: four COMPLETED, two
/// COMPENSATED, and each order's steps and compensations ran once each, in order.
pub async fn two_orchestrators_move_each_saga_once<S: Inspect + SagaStore>(store: S) {
    let participants = Participants::new(
        &[("reserve", &[Answer::Silent, Answer::Silent])],
        Duration::from_millis(100),
    );
    let saga = order_saga(Duration::from_millis(500));
    let (first, second) = (
        order_runtime(&store, &participants, &saga),
        order_runtime(&store, &participants, &saga),
    );
    let running = [
        first.start().await.expect("start"),
        second.start().await.expect("start"),
    ];
    let mut ids: Vec<(u64, SagaId)> = Vec::new();
    for order in 1..=6 {
        let starter = if order % 2 == 0 { &first } else { &second };
        let mut tx = store.begin().await.expect("begin");
        let data = OrderData {
            order,
            charge_id: None,
        };
        let id = starter
            .start_saga(&mut tx, &saga, &data)
            .await
            .expect("start the saga");
        store.commit(tx).await.expect("commit");
        ids.push((order, id));
    }
    let finished = eventually(Duration::from_secs(60), || async {
        let mut states = Vec::new();
        for (_, id) in &ids {
            let state = store.saga(*id).await.ok()??;
            if !state.status.is_final() {
                return None;
            }
            states.push(state);
        }
        Some(states)
    })
    .await;
    for running in running {
        running.shutdown().await;
    }
    let states = finished.unwrap_or_else(|e| panic!("the sagas did not all finish: {e}"));
    let completed = states
        .iter()
        .filter(|s| s.status == SagaStatus::Completed)
        .count();
    let compensated = states
        .iter()
        .filter(|s| s.status == SagaStatus::Compensated)
        .count();
    assert_eq!((completed, compensated), (4, 2), "{states:#?}");
    for ((order, _), state) in ids.iter().zip(&states) {
        let expected: Vec<(String, SagaPhase)> = if state.status == SagaStatus::Completed {
            forward_runs(&["charge", "reserve", "ship", "notify"])
        } else {
            vec![
                ("charge".to_owned(), SagaPhase::Forward),
                ("reserve".to_owned(), SagaPhase::Forward),
                ("reserve".to_owned(), SagaPhase::Compensation),
                ("charge".to_owned(), SagaPhase::Compensation),
            ]
        };
        assert_eq!(
            participants.runs_of(*order),
            expected,
            "order {order} ({})",
            state.status
        );
        let finishes = state
            .history
            .iter()
            .filter(|e| e.kind == SagaEventKind::Finished)
            .count();
        assert_eq!(
            finishes, 1,
            "order {order} ended once: {:#?}",
            state.history
        );
    }
}

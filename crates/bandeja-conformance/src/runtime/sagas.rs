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
use crate::fixtures::saga::{order_saga, run_order_saga, Answer, OrderData, Participants};

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
                .filter(|(_, p, _)| *p == SagaPhase::Compensation)
                .map(|(_, _, c)| c.clone())
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

//! Per-key order in the runtime: messages of one key are handled in emission order.

use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;

use super::recorder::{Behaviour, Recorder};
use super::{all, emit_pings, wait_rows};
use crate::fixtures::{fast_config, Ping};

/// Same key: handled in emission order even when one message needs a retry.
pub async fn messages_of_one_key_are_handled_in_emission_order<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::FailFirstAttemptOf(3));
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit_pings(&store, 0..10, |n| {
        if n % 2 == 0 {
            "even".into()
        } else {
            "odd".into()
        }
    })
    .await;
    wait_rows(
        &store,
        BoxKind::InboxEvents,
        all(MessageStatus::Completed, 10),
    )
    .await;
    running.shutdown().await;
    let seen = recorder.seen.lock().expect("seen").clone();
    let order = |parity: u64| {
        seen.iter()
            .filter(|s| s.2 % 2 == parity)
            .map(|s| s.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(order(0), vec![0, 2, 4, 6, 8]);
    assert_eq!(order(1), vec![1, 3, 5, 7, 9]);
}

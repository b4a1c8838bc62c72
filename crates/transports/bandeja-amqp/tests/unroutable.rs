//! A command that no queue takes (published `mandatory`, returned by RabbitMQ) is a failed
//! attempt, not an outage: it spends its retries with backoff and ends FAILED with the
//! reason, instead of going back to PENDING for ever. Against the local RabbitMQ.

mod common;

use std::time::Duration;

use bandeja_conformance::fixtures::{fast_config, Ping};
use bandeja_core::envelope::Command;
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::Inspect;
use bandeja_core::tenant::{self, TenantId};
use bandeja_core::testing::eventually;

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_no_queue_takes_spends_its_retries_and_ends_failed_with_the_reason() {
    let namespace = common::namespace();
    let transport = common::transport(&namespace).await;
    let (store, _dir) = common::fresh_store().await;
    let mut config = fast_config();
    config
        .command_topics
        .insert("billing".to_owned(), "billing-commands".to_owned());
    let max_retries = config.commands_outbox.max_retries;
    let orders = Bandeja::builder(store.clone())
        .config(config)
        .service("orders")
        .transport(std::sync::Arc::new(transport))
        .build()
        .expect("build");
    let running = orders.start().await.expect("start");
    let command = tenant::sync_scope(TenantId::new("acme").expect("tenant"), || {
        Command::to_self("billing", Ping { n: 1 })
    })
    .expect("command");
    orders.send(&command).await.expect("send");
    let row = eventually(WAIT, || async {
        let rows = store.rows(BoxKind::OutboxCommands).await.expect("rows");
        rows.into_iter()
            .find(|r| r.message.status == MessageStatus::Failed)
    })
    .await
    .expect("the unroutable command ends FAILED");
    running.shutdown_within(Duration::from_secs(10)).await;
    assert_eq!(row.message.record.id, command.id);
    assert_eq!(
        row.message.retry_count, max_retries,
        "every retry spent, with backoff"
    );
    let reason = row.message.last_error.unwrap_or_default();
    for expected in [
        "no queue is bound to `p",
        "billing-commands",
        "no service consumes this topic",
    ] {
        assert!(reason.contains(expected), "{reason:?} says {expected:?}");
    }
}

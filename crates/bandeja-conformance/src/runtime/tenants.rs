//! Tenants in the runtime: a command runs in its target tenant's scope, and one tenant's
//! backlog does not starve another tenant.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bandeja_core::envelope::{Command, Event};
use bandeja_core::error::HandlerError;
use bandeja_core::processing::{CommandHandler, HandlerContext};
use bandeja_core::record::BoxKind;
use bandeja_core::runtime::Bandeja;
use bandeja_core::status::MessageStatus;
use bandeja_core::store::{Inspect, RowView, Store};
use bandeja_core::tenant::{self, TenantId};

use super::recorder::{Behaviour, Recorder};
use super::{all, wait_rows};
use crate::fixtures::outbox_of;
use crate::fixtures::{fast_config, Archive, Ping};

/// Records the tenant it saw.
#[derive(Clone, Default)]
struct TenantProbe(Arc<Mutex<Vec<TenantSeen>>>);

/// (handler context tenant, command source tenant, task-local current tenant)
type TenantSeen = (TenantId, TenantId, Option<TenantId>);

impl<S: Store> CommandHandler<S, Archive> for TenantProbe {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, S>,
        command: Command<Archive>,
    ) -> Result<(), HandlerError> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((
                ctx.tenant().clone(),
                command.source_tenant_id.clone(),
                tenant::current(),
            ));
        }
        Ok(())
    }
}

/// A command goes to its one handler, running in the target tenant's scope.
pub async fn commands_reach_their_handler_in_the_target_tenant<S: Inspect>(store: S) {
    let probe = TenantProbe::default();
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_command::<Archive, _>("archiver", probe.clone())
        .build()
        .expect("build");
    assert!(
        bandeja.worker_enabled(BoxKind::OutboxCommands)
            && bandeja.worker_enabled(BoxKind::InboxCommands)
    );
    let running = bandeja.start().await.expect("start");
    let (acme, globex) = (
        TenantId::new("acme").expect("t"),
        TenantId::new("globex").expect("t"),
    );
    let command = tenant::scope(acme.clone(), async {
        Command::to(globex.clone(), "archiver", Archive { n: 1 })
    })
    .await
    .expect("command");
    let outbox = outbox_of(&store);
    let mut tx = store.begin().await.expect("begin");
    outbox.send(&mut *tx, &command).await.expect("send");
    store.commit(tx).await.expect("commit");
    let rows = wait_rows(
        &store,
        BoxKind::InboxCommands,
        all(MessageStatus::Completed, 1),
    )
    .await;
    running.shutdown().await;
    assert_eq!(rows[0].message.record.inbox_tenant(), &globex);
    let seen = probe.0.lock().expect("seen").clone();
    assert_eq!(seen, vec![(globex.clone(), acme, Some(globex))]);
}

/// Tenant A has a backlog; tenant B's few messages, emitted after it, complete while A's
/// backlog is still being worked off: claims rotate over the active tenants.
pub async fn a_tenant_backlog_does_not_starve_another_tenant<S: Inspect>(store: S) {
    let recorder = Recorder::new(Behaviour::Pause(Duration::from_millis(5)));
    let (a, b) = (
        TenantId::new("tenant-a").expect("t"),
        TenantId::new("tenant-b").expect("t"),
    );
    let outbox = outbox_of(&store);
    let emit = |tenant: TenantId, range: std::ops::Range<u64>| {
        let (store, outbox) = (store.clone(), outbox.clone());
        async move {
            let mut tx = store.begin().await.expect("begin");
            for n in range {
                let event =
                    Event::new("Ping", format!("k{n}"), Ping { n }).with_tenant(tenant.clone());
                outbox.emit(&mut *tx, &event).await.expect("emit");
            }
            store.commit(tx).await.expect("commit");
        }
    };
    emit(a.clone(), 0..2000).await;
    let bandeja = Bandeja::builder(store.clone())
        .config(fast_config())
        .on_event::<Ping, _>("s", recorder.clone())
        .build()
        .expect("build");
    let running = bandeja.start().await.expect("start");
    emit(b.clone(), 10_000..10_020).await;
    let started = std::time::Instant::now();
    let of = |rows: &[RowView], tenant: &TenantId, status: MessageStatus| {
        rows.iter()
            .filter(|r| r.message.record.tenant_id == *tenant && r.message.status == status)
            .count()
    };
    let inbox = wait_rows(&store, BoxKind::InboxEvents, |rows| {
        of(rows, &b, MessageStatus::Completed) == 20
    })
    .await;
    let b_took = started.elapsed();
    let a_done = of(&inbox, &a, MessageStatus::Completed);
    running.shutdown().await;
    assert!(
        a_done < 2000,
        "B waited for A's whole backlog ({a_done} of A's 2000 were done, B took {b_took:?})"
    );
}

//! A store that misbehaves on purpose around its outbox-events claims (everything else is
//! the real store underneath): it can fail the claim that follows the first one that
//! returned rows, then hold every later claim until the test opens a gate; or answer the
//! first claim that returned rows late, as a slow database would.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;

use bandeja_core::config::CompletionModes;
use bandeja_core::envelope::MessageId;
use bandeja_core::error::{StoreError, StoreErrorKind};
use bandeja_core::record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
use bandeja_core::store::{
    ClaimRequest, Delivery, Inspect, Outcome, ReceiveReport, RelayReport, Route, RowView,
    SavepointStep, StaleReport, StaleRequest, Store,
};
use bandeja_core::tenant::TenantId;
use bandeja_core::wake::Wakers;

/// What the wrapper does to outbox-events claims.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Twist {
    /// Fail the claim after the first that returned rows, then hold claims until opened.
    FailPartWay,
    /// Return the first claim that returned rows this much later.
    SlowFirst(Duration),
}

struct State {
    twist: Twist,
    fail_next: AtomicBool,
    failed: AtomicBool,
    claims_with_rows: AtomicUsize,
    gate: watch::Sender<bool>,
}

/// The real store `S`, with a [`Twist`].
#[derive(Clone)]
pub(crate) struct Flaky<S> {
    inner: S,
    state: Arc<State>,
}

impl<S: Inspect> Flaky<S> {
    pub(super) fn new(inner: S, twist: Twist) -> Self {
        Flaky {
            inner,
            state: Arc::new(State {
                twist,
                fail_next: AtomicBool::new(false),
                failed: AtomicBool::new(false),
                claims_with_rows: AtomicUsize::new(0),
                gate: watch::channel(true).0,
            }),
        }
    }

    /// Whether the injected claim failure happened.
    pub(super) fn failed(&self) -> bool {
        self.state.failed.load(Ordering::SeqCst)
    }

    /// Lets the held claims go on.
    pub(super) fn open(&self) {
        self.state.gate.send_replace(true);
    }

    /// How many outbox-events claims returned rows so far.
    pub(super) fn claims_with_rows(&self) -> usize {
        self.state.claims_with_rows.load(Ordering::SeqCst)
    }

    /// The real store.
    pub(super) fn inner(&self) -> &S {
        &self.inner
    }
}

#[async_trait]
impl<S: Inspect> Store for Flaky<S> {
    type Conn = S::Conn;
    type Tx = S::Tx;

    async fn migrate(&self) -> Result<(), StoreError> {
        self.inner.migrate().await
    }
    async fn begin(&self) -> Result<Self::Tx, StoreError> {
        self.inner.begin().await
    }
    async fn commit(&self, tx: Self::Tx) -> Result<(), StoreError> {
        self.inner.commit(tx).await
    }
    async fn insert_outbox(
        &self,
        conn: &mut Self::Conn,
        kind: MessageKind,
        records: &[MessageRecord],
    ) -> Result<(), StoreError> {
        self.inner.insert_outbox(conn, kind, records).await
    }
    async fn claim(
        &self,
        box_kind: BoxKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        if box_kind != BoxKind::OutboxEvents {
            return self.inner.claim(box_kind, request).await;
        }
        let mut gate = self.state.gate.subscribe();
        let _ = gate.wait_for(|open| *open).await;
        if self.state.fail_next.swap(false, Ordering::SeqCst) {
            self.state.gate.send_replace(false);
            self.state.failed.store(true, Ordering::SeqCst);
            return Err(StoreError::new(
                StoreErrorKind::Transient,
                "claim outbox_events",
                "injected by the conformance suite: the database went away mid-cycle",
            ));
        }
        let rows = self.inner.claim(box_kind, request).await?;
        if !rows.is_empty() && self.state.claims_with_rows.fetch_add(1, Ordering::SeqCst) == 0 {
            match self.state.twist {
                Twist::FailPartWay => self.state.fail_next.store(true, Ordering::SeqCst),
                // A database slow to answer (this is the simulated slowness, not a wait).
                Twist::SlowFirst(delay) => tokio::time::sleep(delay).await,
            }
        }
        Ok(rows)
    }
    async fn renew(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        lease: Duration,
    ) -> Result<Vec<(MessageId, Option<String>)>, StoreError> {
        self.inner.renew(box_kind, worker_id, lease).await
    }
    async fn transfer(
        &self,
        kind: MessageKind,
        worker_id: &str,
        deliveries: &[Delivery<'_>],
        outcomes: &[Outcome],
    ) -> Result<ReceiveReport, StoreError> {
        self.inner
            .transfer(kind, worker_id, deliveries, outcomes)
            .await
    }
    async fn receive(
        &self,
        kind: MessageKind,
        deliveries: &[Delivery<'_>],
    ) -> Result<ReceiveReport, StoreError> {
        self.inner.receive(kind, deliveries).await
    }
    async fn complete_in(
        &self,
        tx: &mut Self::Tx,
        box_kind: BoxKind,
        id: MessageId,
        subscriber: Option<&str>,
        worker_id: &str,
    ) -> Result<bool, StoreError> {
        self.inner
            .complete_in(tx, box_kind, id, subscriber, worker_id)
            .await
    }
    async fn resolve_in(
        &self,
        tx: &mut Self::Tx,
        box_kind: BoxKind,
        worker_id: &str,
        outcomes: &[Outcome],
    ) -> Result<u64, StoreError> {
        self.inner
            .resolve_in(tx, box_kind, worker_id, outcomes)
            .await
    }
    async fn savepoint(&self, tx: &mut Self::Tx, step: SavepointStep) -> Result<(), StoreError> {
        self.inner.savepoint(tx, step).await
    }
    async fn transaction_state(
        &self,
        tx: &mut Self::Tx,
    ) -> Result<bandeja_core::store::TransactionState, StoreError> {
        self.inner.transaction_state(tx).await
    }
    async fn transaction_mark(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        self.inner.transaction_mark(tx).await
    }
    async fn mark_and_open(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        self.inner.mark_and_open(tx).await
    }
    async fn committed(&self, mark: i64) -> Result<Option<bool>, StoreError> {
        self.inner.committed(mark).await
    }
    fn prefers_batched_handlers(&self) -> bool {
        self.inner.prefers_batched_handlers()
    }
    async fn relay(
        &self,
        kind: MessageKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Option<RelayReport>, StoreError> {
        self.inner.relay(kind, request).await
    }
    async fn register(
        &self,
        registration: &bandeja_core::subscriptions::Registration<'_>,
    ) -> Result<(), StoreError> {
        self.inner.register(registration).await
    }
    async fn unregister(&self, process: &str) -> Result<(), StoreError> {
        self.inner.unregister(process).await
    }
    async fn routes(
        &self,
        kind: MessageKind,
        service: Option<&str>,
    ) -> Result<Vec<Route>, StoreError> {
        self.inner.routes(kind, service).await
    }
    async fn maintain(&self, box_kind: BoxKind) -> Result<(), StoreError> {
        self.inner.maintain(box_kind).await
    }
    async fn live_floor(&self, box_kind: BoxKind) -> Result<Option<i64>, StoreError> {
        self.inner.live_floor(box_kind).await
    }
    async fn active_tenants(&self, box_kind: BoxKind) -> Result<Vec<TenantId>, StoreError> {
        self.inner.active_tenants(box_kind).await
    }
    fn single_writer(&self) -> bool {
        self.inner.single_writer()
    }
    async fn resolve(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        outcomes: &[Outcome],
    ) -> Result<(), StoreError> {
        self.inner.resolve(box_kind, worker_id, outcomes).await
    }
    fn is_transient(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        self.inner.is_transient(error)
    }
    fn wakers(&self) -> &Wakers {
        self.inner.wakers()
    }
    fn with_completion(&self, modes: CompletionModes) -> Result<Self, StoreError> {
        Ok(Flaky {
            inner: self.inner.with_completion(modes)?,
            state: self.state.clone(),
        })
    }
    async fn purge_completed(
        &self,
        box_kind: BoxKind,
        older_than: Duration,
    ) -> Result<u64, StoreError> {
        self.inner.purge_completed(box_kind, older_than).await
    }
    async fn fail_stale(
        &self,
        box_kind: BoxKind,
        request: &StaleRequest<'_>,
    ) -> Result<StaleReport, StoreError> {
        self.inner.fail_stale(box_kind, request).await
    }
}

#[async_trait]
impl<S: Inspect> Inspect for Flaky<S> {
    async fn rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError> {
        self.inner.rows(box_kind).await
    }
}

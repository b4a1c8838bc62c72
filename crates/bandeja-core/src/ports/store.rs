//! The `Store` port: what a database adapter must do for the workers. Stores live in their
//! own crates (`bandeja-sqlite`, `bandeja-postgres`); every one passes the same conformance
//! suites (the `bandeja-conformance` crate).

use std::ops::DerefMut;
use std::time::Duration;

use async_trait::async_trait;

use crate::config::{CompletionMode, CompletionModes};
use crate::envelope::MessageId;
use crate::error::StoreError;
use crate::record::{BoxKind, MessageKind, MessageRecord, StoredMessage};
// The types a store's methods name, reachable from here (and so through the facade).
pub use crate::subscriptions::{Claimable, Registration};
pub use crate::wake::Wakers;

/// What a worker asks for when it claims.
#[derive(Debug, Clone)]
pub struct ClaimRequest<'a> {
    /// Who claims (written to `locked_by`).
    pub worker_id: &'a str,
    /// At most this many rows.
    pub limit: usize,
    /// How long the claim holds (`locked_until = now + lease`): `lock-at-most-for`.
    pub lease: Duration,
    /// Per-key order: never claim a row whose partition key has an older live
    /// (PENDING or PROCESSING) row in the same box (and, for inboxes, the same subscriber).
    pub ordered: bool,
    /// Only rows with `seq >= from_seq`: the box's live floor, as last read by
    /// [`Store::live_floor`]. Lets a claim start past the completed rows at the head of the
    /// queue (on PostgreSQL their dead index entries cost a visit each until vacuum). Rows
    /// below it that become live again (a late commit, an operator retry) are found when
    /// the worker reads the floor again, about once a second (in the background, waking
    /// the worker when the floor went down).
    pub from_seq: Option<i64>,
    /// Only this tenant's rows (workers rotate over the active tenants so that one
    /// tenant's backlog does not starve the others); `None`: any tenant.
    pub tenant: Option<&'a crate::tenant::TenantId>,
    /// Inboxes: only rows matching one of these (subscriber, type, tenant) — what this
    /// process runs, plus reception's rejected rows; `None`: any row. Ignored by outbox
    /// claims.
    pub subscribers: Option<&'a [crate::subscriptions::Claimable]>,
}

/// How an attempt ended, as computed by the status machine.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// COMPLETED.
    Completed,
    /// Back to PENDING with this retry count, due again after `delay`.
    Retry {
        /// The new retry count.
        retry_count: u32,
        /// Backoff before the next attempt.
        delay: Duration,
        /// Written to `last_error`.
        error: String,
    },
    /// FAILED (terminal), with the reason in `last_error`.
    Failed {
        /// The retry count to record.
        retry_count: u32,
        /// Written to `last_error`.
        error: String,
    },
    /// Back to PENDING at once, retry count unchanged (graceful shutdown or a transport
    /// outage that is not the message's fault).
    Release,
}

impl Resolution {
    /// Whether this outcome is a failed attempt (scheduled again or FAILED): what the
    /// stores record in the attempts history.
    pub fn is_failed_attempt(&self) -> bool {
        matches!(self, Resolution::Retry { .. } | Resolution::Failed { .. })
    }
}

/// The outcome of one claimed row.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Message id.
    pub id: MessageId,
    /// Subscriber (inbox rows).
    pub subscriber: Option<String>,
    /// What happens to the row.
    pub resolution: Resolution,
}

/// A message to put into an inbox, one row per subscriber.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The message.
    pub record: &'a MessageRecord,
    /// The subscribers that get a row each.
    pub subscribers: &'a [String],
}

/// A step of the per-handler savepoint in a batch transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavepointStep {
    /// `SAVEPOINT` before the handler runs.
    Open,
    /// `RELEASE SAVEPOINT`: the handler succeeded.
    Release,
    /// `ROLLBACK TO SAVEPOINT`: the handler failed; its writes are undone, the batch goes on.
    RollBack,
}

impl SavepointStep {
    /// The SQL of this step (standard SQL, the same on SQLite and PostgreSQL).
    pub const fn sql(self) -> &'static str {
        match self {
            SavepointStep::Open => "SAVEPOINT bandeja_handler",
            SavepointStep::Release => "RELEASE SAVEPOINT bandeja_handler",
            SavepointStep::RollBack => "ROLLBACK TO SAVEPOINT bandeja_handler",
        }
    }
}

/// What became of a handler's transaction (see [`Store::transaction_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionState {
    /// Open and healthy.
    Open,
    /// Aborted by a failed statement: nothing of it can commit.
    Aborted,
    /// Ended by the handler (`COMMIT` or `ROLLBACK`): its work may have committed.
    Ended,
}

pub use crate::subscriptions::Route;

/// One outbox row a relay published: what the metrics need of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// Its message type.
    pub message_type: String,
    /// From its insert into the outbox (the emitting transaction) to the relay.
    pub waited: Duration,
}

/// What a one-statement relay did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayReport {
    /// The rows published (moved into the inbox), in `seq` order; empty if the store does
    /// not report them.
    pub published: Vec<Published>,
    /// Outbox rows taken (COMPLETED, or FAILED for commands nobody handles).
    pub moved: u64,
    /// Inbox rows inserted.
    pub inserted: u64,
    /// Inbox rows that existed already (their delivery count went up).
    pub duplicates: u64,
    /// Commands with no route, marked FAILED.
    pub failed: u64,
}

/// What an inbox insert did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiveReport {
    /// New inbox rows.
    pub inserted: u64,
    /// Rows that already existed: their `delivery_count` went up, nothing else changed.
    pub duplicates: u64,
}

/// The database side of bandeja.
///
/// Every state change of a claimed row is guarded by `locked_by = worker_id` and
/// `status = 'PROCESSING'`: a worker whose lease was taken over changes nothing.
#[async_trait]
pub trait Store: Clone + Send + Sync + 'static {
    /// A connection (what emission and handlers write through), e.g. `SqliteConnection`.
    type Conn: Send + ?Sized;
    /// An open transaction on [`Store::Conn`].
    type Tx: Send + DerefMut<Target = Self::Conn>;

    /// Creates or upgrades the tables.
    async fn migrate(&self) -> Result<(), StoreError>;

    /// Begins a transaction (for handlers and for emission outside a caller's transaction).
    async fn begin(&self) -> Result<Self::Tx, StoreError>;

    /// Commits a transaction from [`Store::begin`].
    async fn commit(&self, tx: Self::Tx) -> Result<(), StoreError>;

    /// Inserts messages into the outbox of `kind` through the caller's connection or
    /// transaction (status PENDING, due now). A message id already in the outbox is an
    /// error of kind `Duplicate`, and nothing is written.
    async fn insert_outbox(
        &self,
        conn: &mut Self::Conn,
        kind: MessageKind,
        records: &[MessageRecord],
    ) -> Result<(), StoreError>;

    /// Claims due rows of a box: PENDING rows whose `next_attempt_at` has come, and
    /// PROCESSING rows whose lease expired (a takeover: their `takeover_count` goes up by
    /// one, `retry_count` stays, and [`StoredMessage::taken_over_from`] names the holder).
    /// Sets PROCESSING, `locked_by`, `locked_until`. Ordered by `seq`. A claimed row that
    /// cannot be decoded is not returned: it is marked FAILED with the decode error (see
    /// [`RowKey::undecodable`]), so one bad row never blocks its box.
    async fn claim(
        &self,
        box_kind: BoxKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Vec<StoredMessage>, StoreError>;

    /// Renews the lease of every row of the box that `worker_id` still holds (PROCESSING,
    /// `locked_by = worker_id`): `locked_until = now + lease`, in one statement. Workers
    /// call it about every third of the lease while their work is in flight. Returns the
    /// `(id, subscriber)` of the rows it renewed: a row missing from it is no longer the
    /// worker's (another took it over after its lease ran out), and no work may start on
    /// it.
    async fn renew(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        lease: Duration,
    ) -> Result<Vec<(MessageId, Option<String>)>, StoreError>;

    /// In-process transport: in one transaction, inserts each delivery into the inbox of
    /// `kind` (one row per subscriber, dedup by `(id, subscriber)`) and applies `outcomes`
    /// to the claimed outbox rows (guarded by `worker_id`).
    async fn transfer(
        &self,
        kind: MessageKind,
        worker_id: &str,
        deliveries: &[Delivery<'_>],
        outcomes: &[Outcome],
    ) -> Result<ReceiveReport, StoreError>;

    /// Reception from an external transport: inserts into the inbox of `kind` with dedup
    /// (an existing `(id, subscriber)` row only gets `delivery_count + 1`), in its own
    /// transaction. The transport acknowledges the broker only after this returns `Ok`.
    async fn receive(
        &self,
        kind: MessageKind,
        deliveries: &[Delivery<'_>],
    ) -> Result<ReceiveReport, StoreError>;

    /// Marks a claimed inbox row COMPLETED inside the handler's transaction. Returns `false`
    /// (and changes nothing) if the row is no longer held by `worker_id`.
    async fn complete_in(
        &self,
        tx: &mut Self::Tx,
        box_kind: BoxKind,
        id: MessageId,
        subscriber: Option<&str>,
        worker_id: &str,
    ) -> Result<bool, StoreError>;

    /// Applies outcomes to claimed rows inside the caller's transaction (the batched
    /// handler path completes a whole batch with this). Returns how many rows changed:
    /// fewer than `outcomes.len()` means some leases were lost.
    async fn resolve_in(
        &self,
        tx: &mut Self::Tx,
        box_kind: BoxKind,
        worker_id: &str,
        outcomes: &[Outcome],
    ) -> Result<u64, StoreError>;

    /// Opens, releases or rolls back to the savepoint that isolates one handler inside a
    /// batch transaction. Stores without savepoints keep the default, an error, and run one
    /// transaction per message.
    async fn savepoint(&self, tx: &mut Self::Tx, step: SavepointStep) -> Result<(), StoreError> {
        let _ = (tx, step);
        Err(StoreError::new(
            crate::error::StoreErrorKind::Permanent,
            "savepoint",
            "this store has no savepoints: use handler-transaction = \"message\"",
        ))
    }

    /// What became of `tx` while a handler used it: still open and healthy, aborted (a
    /// failed statement the handler caught: PostgreSQL then refuses everything until the
    /// end of the transaction), or ended by the handler itself (`COMMIT`/`ROLLBACK` on its
    /// connection). Checked after each handler on the one-message path, before its
    /// emitted messages and its completion are written into it (PostgreSQL would
    /// otherwise write them in transactions of their own). Default: `Open` (the store
    /// cannot tell).
    async fn transaction_state(&self, tx: &mut Self::Tx) -> Result<TransactionState, StoreError> {
        let _ = tx;
        Ok(TransactionState::Open)
    }

    /// A mark of the open transaction `tx` by which [`Store::committed`] can tell later,
    /// from another connection, whether it committed (PostgreSQL: its transaction id).
    /// The batched handler path takes one per chunk, so that when a handler ends the
    /// chunk's transaction itself (`COMMIT`/`ROLLBACK`), the messages handled before it
    /// are marked COMPLETED if their work committed, and run again if it did not.
    /// Default `None`: unknown (they run again).
    async fn transaction_mark(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        let _ = tx;
        Ok(None)
    }

    /// Takes the mark of `tx` ([`Store::transaction_mark`]) and opens the first handler's
    /// savepoint ([`SavepointStep::Open`]): what a batched transaction does before its
    /// first handler on a store that does not mark lazily. A store that can send both in
    /// one round trip overrides it (PostgreSQL); the default makes the two calls. An
    /// error means the savepoint is not open (the connection, not a handler).
    async fn mark_and_open(&self, tx: &mut Self::Tx) -> Result<Option<i64>, StoreError> {
        let mark = self.transaction_mark(tx).await.unwrap_or_else(|error| {
            tracing::debug!(%error, "no transaction mark");
            None
        });
        self.savepoint(tx, SavepointStep::Open).await?;
        Ok(mark)
    }

    /// Whether a batched transaction asks for its mark after each handler that completed
    /// (until it gets one) rather than once at its start: a store whose mark is a write
    /// that would take a lock the handlers should not hold yet (SQLite's one write lock)
    /// says `true`, and its [`Store::transaction_mark`] answers `None` until the
    /// transaction has written. Default `false`.
    fn marks_lazily(&self) -> bool {
        false
    }

    /// Whether the transaction of `mark` (see [`Store::transaction_mark`]) committed:
    /// `Some(true)` committed, `Some(false)` rolled back, `None` unknown. Default `None`.
    async fn committed(&self, mark: i64) -> Result<Option<bool>, StoreError> {
        let _ = mark;
        Ok(None)
    }

    /// Whether `handler-transaction = "auto"` should run a batch's handlers in one
    /// transaction (with a savepoint each) rather than one transaction per message.
    /// Default `false`; a store whose commits are expensive (PostgreSQL) or whose writers
    /// exclude each other (SQLite: one chunk at a time, instead of a queue of single
    /// commits) says `true`.
    fn prefers_batched_handlers(&self) -> bool {
        false
    }

    /// Capability: the in-process transport in one write (one statement on PostgreSQL, one
    /// transaction on SQLite) — claim due outbox rows of
    /// `kind` as `request` says, insert one inbox row per subscription registered for the
    /// type in the store (see [`Store::routes`]; dedup by `(id, subscriber)`), and mark the
    /// outbox rows COMPLETED (commands no subscription takes: FAILED, saying so), all in
    /// one commit. `Ok(None)`: not supported (the default); the worker then claims, reads
    /// the routes, transfers and marks in steps.
    async fn relay(
        &self,
        kind: MessageKind,
        request: &ClaimRequest<'_>,
    ) -> Result<Option<RelayReport>, StoreError> {
        let _ = (kind, request);
        Ok(None)
    }

    /// Registers or refreshes a running process and the subscriptions it runs, in one
    /// transaction: each subscription gets its `subscriptions` row (inserted with
    /// `first_seen_at` = now, or refreshed: `last_seen_at` = now and the service updated),
    /// and the process gets one `subscription_processes` row per subscriber it runs
    /// (`last_seen_at` = now). Called at start, then every
    /// [`heartbeat_every`](crate::subscriptions::heartbeat_every).
    async fn register(
        &self,
        registration: &crate::subscriptions::Registration<'_>,
    ) -> Result<(), StoreError>;

    /// Removes the `subscription_processes` rows of a process that stops (its
    /// subscriptions stay: they keep receiving until an operator retires them).
    async fn unregister(&self, process: &str) -> Result<(), StoreError>;

    /// The subscriptions of `kind` registered in the store, as routes: all of them
    /// (`service` `None`: the in-process transport, where the database is the bus), or only
    /// those of one service (reception from a broker). Sorted by type and subscriber.
    async fn routes(
        &self,
        kind: MessageKind,
        service: Option<&str>,
    ) -> Result<Vec<Route>, StoreError>;

    /// Housekeeping a worker asks for about once a second per box (in the background):
    /// keep planner statistics and dead index entries from degrading claims (PostgreSQL:
    /// `ANALYZE`/`VACUUM` of the box when enough rows changed). Default: nothing.
    async fn maintain(&self, box_kind: BoxKind) -> Result<(), StoreError> {
        let _ = box_kind;
        Ok(())
    }

    /// The smallest `seq` of a live (PENDING or PROCESSING) row in the box, `None` if
    /// there is none or the store does not track it (the default).
    async fn live_floor(&self, box_kind: BoxKind) -> Result<Option<i64>, StoreError> {
        let _ = box_kind;
        Ok(None)
    }

    /// The tenants with live rows in the box (for the per-tenant rotation of claims);
    /// empty if the store does not track them (the default).
    async fn active_tenants(
        &self,
        box_kind: BoxKind,
    ) -> Result<Vec<crate::tenant::TenantId>, StoreError> {
        let _ = box_kind;
        Ok(Vec::new())
    }

    /// Whether the database lets one writer at a time (SQLite): the batched handler path
    /// then runs a batch as one transaction instead of several concurrent ones, which
    /// would only wait for each other's locks. Default `false`.
    fn single_writer(&self) -> bool {
        false
    }

    /// Applies outcomes to claimed rows of a box in one statement or transaction.
    async fn resolve(
        &self,
        box_kind: BoxKind,
        worker_id: &str,
        outcomes: &[Outcome],
    ) -> Result<(), StoreError>;

    /// Whether an error a handler returned (or one in its source chain) is a transient
    /// conflict of this database — a lock or snapshot conflict, a lost connection — so the
    /// attempt is retried without spending one of the message's retries. Default: `false`.
    fn is_transient(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        let _ = error;
        false
    }

    /// The wake-up signals of this store's boxes (in-process; PostgreSQL also relays
    /// `NOTIFY` from other processes into them).
    fn wakers(&self) -> &Wakers;

    /// A handle on the same database whose completing statements (`resolve`,
    /// `resolve_in`, `complete_in`, `relay`, `transfer`) apply `modes`: keep the row
    /// COMPLETED, delete it, or move it into `<box>_archive`, in the same statement (no
    /// extra round trip). In `delete` and `archive` mode an inbox keeps a dedup record of
    /// each completed `(id, subscriber)` that its inserts check, so a redelivery is still
    /// absorbed until [`Store::purge_completed`] removes the record. The runtime calls this
    /// once, at `build()`, with the configured modes.
    ///
    /// Default: the store itself when every mode is `update`; otherwise an error saying
    /// which box asks for a mode this store cannot do.
    fn with_completion(&self, modes: CompletionModes) -> Result<Self, StoreError> {
        match BoxKind::ALL
            .into_iter()
            .find(|b| modes.of(*b) != CompletionMode::Update)
        {
            None => Ok(self.clone()),
            Some(box_kind) => Err(StoreError::new(
                crate::error::StoreErrorKind::Permanent,
                "configure the completion mode",
                format!(
                    "this store cannot `{}` completed rows: set `{}.completion-mode = \"update\"`",
                    modes.of(box_kind),
                    box_kind.key()
                ),
            )),
        }
    }

    /// Retention: deletes the COMPLETED rows of a box completed at least `older_than` ago
    /// and, for inboxes, the dedup records as old. Never touches PENDING, PROCESSING or
    /// FAILED rows, nor the archive. Returns how many rows and records went.
    /// Default: an error (the retention task logs it).
    async fn purge_completed(
        &self,
        box_kind: BoxKind,
        older_than: Duration,
    ) -> Result<u64, StoreError> {
        let _ = (box_kind, older_than);
        Err(unsupported("purge completed rows", "retention"))
    }

    /// Staleness monitor: marks FAILED (with the request's reason in `last_error`) the
    /// stale rows of a box, those of a box that makes no progress. A row is stale when it
    /// has been claimable for longer than its threshold (PENDING and due for longer than
    /// `request.pending`; PROCESSING with a lease that ran out more than
    /// `request.processing` ago — never one under a live lease), no older PENDING or
    /// PROCESSING row of its partition key exists, and its box (for inboxes: the rows of
    /// its subscriber) completed, claimed, renewed, retried or failed nothing within that
    /// threshold (the monitor's own FAILs, recognised by the reasons, do not count).
    /// Default: an error (the monitor logs it).
    async fn fail_stale(
        &self,
        box_kind: BoxKind,
        request: &StaleRequest<'_>,
    ) -> Result<StaleReport, StoreError> {
        let _ = (box_kind, request);
        Err(unsupported("mark stale rows FAILED", "staleness.enabled"))
    }
}

fn unsupported(operation: &'static str, key: &str) -> StoreError {
    StoreError::new(
        crate::error::StoreErrorKind::Permanent,
        operation,
        format!("this store does not support it: turn `{key}` off for it"),
    )
}

/// What a claim knows of a row it could not decode: enough to mark it FAILED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowKey {
    /// Message id.
    pub id: MessageId,
    /// Subscriber (inbox rows).
    pub subscriber: Option<String>,
    /// Its retry count, kept.
    pub retry_count: u32,
}

impl RowKey {
    /// The outcome that marks the row FAILED with `error` (the decode error) in
    /// `last_error`: it cannot be handled or published as it is stored.
    #[must_use]
    pub fn undecodable(&self, error: &StoreError) -> Outcome {
        Outcome {
            id: self.id,
            subscriber: self.subscriber.clone(),
            resolution: Resolution::Failed {
                retry_count: self.retry_count,
                error: format!(
                    "the stored row cannot be read ({error}): it was written by hand or by an \
                     incompatible version; fix the row and retry it, or purge it"
                ),
            },
        }
    }
}

/// What the staleness monitor asks [`Store::fail_stale`] to do.
#[derive(Debug, Clone, Copy)]
pub struct StaleRequest<'a> {
    /// PENDING rows due for longer than this, in a box without progress for as long,
    /// are stale.
    pub pending: Duration,
    /// PROCESSING rows whose lease ran out longer ago than this, in a box without
    /// progress for as long, are stale.
    pub processing: Duration,
    /// Written to `last_error` of stale PENDING rows.
    pub pending_reason: &'a str,
    /// Written to `last_error` of stale PROCESSING rows.
    pub processing_reason: &'a str,
}

/// What [`Store::fail_stale`] marked FAILED.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StaleReport {
    /// PENDING rows.
    pub pending: u64,
    /// PROCESSING rows.
    pub processing: u64,
}

/// A row as an operator or a test sees it: the message plus its bookkeeping columns.
#[derive(Debug, Clone, PartialEq)]
pub struct RowView {
    /// The message and its status, retry count, last error and delivery count.
    pub message: StoredMessage,
    /// Who holds the claim.
    pub locked_by: Option<String>,
    /// Until when the claim holds.
    pub locked_until: Option<chrono::DateTime<chrono::Utc>>,
    /// When the row is due (PENDING rows).
    pub next_attempt_at: Option<chrono::DateTime<chrono::Utc>>,
    /// When the row was inserted.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it became COMPLETED.
    pub completed_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Capability: read the rows of a box (tests, operators). Separate from [`Store`] because
/// the workers never need it.
#[async_trait]
pub trait Inspect: Store {
    /// Every row of a box, by `seq` (and subscriber).
    async fn rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError>;

    /// Every row of the box's archive (`<box>_archive`), by `seq` (and subscriber).
    /// Default: an error (the store has no archive).
    async fn archived_rows(&self, box_kind: BoxKind) -> Result<Vec<RowView>, StoreError> {
        let _ = box_kind;
        Err(unsupported(
            "list archived rows",
            "completion-mode = \"archive\"",
        ))
    }
}

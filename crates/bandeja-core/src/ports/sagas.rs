//! The `SagaStore` port: where a store keeps the sagas' state (one row per saga, migration
//! `sagas` in each store) so that the orchestrator can update it in the transaction of the
//! handler that received a step's reply, and find the sagas whose awaited reply is late.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::StoreError;
use crate::saga::{SagaFilter, SagaId, SagaState};
use crate::store::Store;

/// A store that keeps sagas. Every change is written over the version it read
/// ([`SagaState::version`]): a change made meanwhile by another process makes
/// [`update_saga`](SagaStore::update_saga) answer `false` and the caller try again.
#[async_trait]
pub trait SagaStore: Store {
    /// Inserts a new saga through the caller's connection or transaction (with the
    /// business change that starts it).
    async fn insert_saga(&self, conn: &mut Self::Conn, state: &SagaState)
        -> Result<(), StoreError>;

    /// Begins the transaction that moves a saga outside a handler (the sweeper of late
    /// replies): a plain [`Store::begin`], or on a single-writer store one that takes the
    /// write lock at once (SQLite: `BEGIN IMMEDIATE`), so its read and write see one state.
    async fn begin_move(&self) -> Result<Self::Tx, StoreError> {
        self.begin().await
    }

    /// Reads a saga inside the caller's transaction (PostgreSQL: `FOR UPDATE`, locked until
    /// it ends; SQLite: a transaction from [`begin_move`](SagaStore::begin_move), or one
    /// that has already written, holds the one write lock; otherwise a change committed
    /// meanwhile makes the caller's write fail, transiently). `None` if there is none.
    async fn lock_saga(
        &self,
        conn: &mut Self::Conn,
        id: SagaId,
    ) -> Result<Option<SagaState>, StoreError>;

    /// Writes `state` if the stored row is still at `state.version - 1`; `false` if it
    /// changed meanwhile (nothing written).
    async fn update_saga(
        &self,
        conn: &mut Self::Conn,
        state: &SagaState,
    ) -> Result<bool, StoreError>;

    /// The sagas of `types` still moving whose awaited reply was due before `now`,
    /// oldest deadline first, at most `limit`.
    async fn late_sagas(
        &self,
        types: &[String],
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<SagaId>, StoreError>;

    /// The sagas `filter` selects, newest first.
    async fn list_sagas(&self, filter: &SagaFilter) -> Result<Vec<SagaState>, StoreError>;

    /// One saga, read outside any transaction.
    async fn saga(&self, id: SagaId) -> Result<Option<SagaState>, StoreError>;
}

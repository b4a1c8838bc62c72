//! Sagas on the runtime: [`BandejaBuilder::saga`] registers a definition (and, with the
//! first one, the handler of saga replies and the sweeper of late replies);
//! [`Bandeja::start_saga`] starts one in the caller's transaction.

use std::sync::Arc;

use chrono::Utc;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::runtime::{Bandeja, BandejaBuilder};
use crate::error::{BuildError, Result};
use crate::saga::{SagaError, SagaId, SagaPhase, SagaReply, SagaState, SagaStatus};
use crate::sagas::machine;
use crate::sagas::orchestrator::{send_next, LateSagas, Orchestrator, SagaBook};
use crate::sagas::{Saga, SagaStore, REPLY_SUBSCRIBER};
use crate::tenant::{self, TenantId};

/// The service replies go to without a broker (every command stays in this database).
const LOCAL_SERVICE: &str = "local";

impl<S: SagaStore> BandejaBuilder<S> {
    /// Orchestrates `saga` in this runtime: its replies are handled here (the command
    /// handler of [`SagaReply`], subscriber [`REPLY_SUBSCRIBER`]) and its late replies
    /// found here. With a broker, the service needs a topic for its own commands in
    /// `commands.topics` (the replies arrive on it). Two sagas of one name are refused by
    /// `build()`.
    #[must_use]
    pub fn saga<D>(mut self, saga: &Saga<D>) -> Self {
        let book = match &self.sagas {
            Some(book) => book.clone(),
            None => {
                let book = Arc::new(SagaBook::default());
                let handler = Orchestrator {
                    store: self.store.clone(),
                    book: book.clone(),
                };
                if let Err(error) =
                    self.registry
                        .add_command::<SagaReply, _>(REPLY_SUBSCRIBER, None, handler)
                {
                    self.errors.push(error);
                }
                self.background.push(Arc::new(LateSagas {
                    store: self.store.clone(),
                    book: book.clone(),
                }));
                self.sagas = Some(book.clone());
                book
            }
        };
        if !book.add(saga.definition.clone()) {
            let error = BuildError::saga(
                &saga.definition.name,
                "registered twice on this runtime".to_owned(),
            );
            self.errors.push(error.into());
        }
        self
    }
}

impl<S: SagaStore> Bandeja<S> {
    /// Starts a `saga` with `data`, through the caller's connection or transaction: the
    /// saga's row and its first step's command are written with the business change, or
    /// not at all. The saga's tenant is the current one ([`tenant::scope`]), else the
    /// default. Returns its id, also the correlation id of all its messages
    /// (`bandeja messages list --correlation ID`).
    ///
    /// An error, and nothing written, if the saga is not registered on this runtime
    /// ([`BandejaBuilder::saga`]) or `data` does not serialize.
    pub async fn start_saga<D>(
        &self,
        conn: &mut S::Conn,
        saga: &Saga<D>,
        data: &D,
    ) -> Result<SagaId>
    where
        D: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        let registered = self
            .sagas
            .as_ref()
            .and_then(|book| book.get(saga.name()))
            .ok_or_else(|| SagaError::NotRegistered(saga.name().to_owned()))?;
        let now = Utc::now();
        let reply_to = self
            .shared
            .routing
            .as_ref()
            .map_or(LOCAL_SERVICE, |routing| routing.service())
            .to_owned();
        let mut state = SagaState {
            id: SagaId::new(),
            saga_type: saga.name().to_owned(),
            status: SagaStatus::Running,
            step: 0,
            phase: SagaPhase::Forward,
            attempt: 0,
            completed_steps: Vec::new(),
            to_compensate: Vec::new(),
            reason: None,
            data: saga.encode(data)?,
            tenant_id: tenant::current().unwrap_or_else(TenantId::default_tenant),
            reply_to,
            awaiting: None,
            sent_attempts: Vec::new(),
            deadline: None,
            history: Vec::new(),
            created_at: now,
            updated_at: now,
            version: 1,
        };
        let next = machine::start(&mut state, &registered.shapes, now);
        let first = send_next(&registered, &mut state, next, None, now)?;
        self.shared.store.insert_saga(conn, &state).await?;
        if let Some(record) = first {
            self.outbox().send_records(conn, vec![record]).await?;
        }
        Ok(state.id)
    }
}

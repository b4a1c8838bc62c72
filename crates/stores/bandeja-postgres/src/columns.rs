//! Rows turned into column arrays, bound to the `UNNEST(...)` statements of `queries`: one
//! statement (and one round trip) per batch, whatever its size.

use std::collections::HashMap;

use bandeja_core::store::{Delivery, Outcome, ReceiveReport, Resolution};
use bandeja_core::{MessageRecord, StoreError, StoreErrorKind, TenantId};
use chrono::{DateTime, Utc};
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::Postgres;
use uuid::Uuid;

/// Longest delay or lease written (100 years): keeps `now() + delay` inside PostgreSQL's range.
const MAX_DELAY_SECS: f64 = 100.0 * 365.25 * 24.0 * 3600.0;

/// A duration as seconds for `$n::float8 * interval '1 second'`, capped at 100 years.
pub(crate) fn seconds(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64().min(MAX_DELAY_SECS)
}

fn permanent(operation: &'static str, message: String) -> StoreError {
    StoreError::new(StoreErrorKind::Permanent, operation, message)
}

/// A `u32` counter or version as `INT`.
pub(crate) fn int4(what: &str, value: u32) -> Result<i32, StoreError> {
    i32::try_from(value)
        .map_err(|_| permanent("bind parameters", format!("{what} {value} exceeds INT")))
}

fn opt_tenant(tenant: Option<&TenantId>) -> Option<String> {
    tenant.map(ToString::to_string)
}

/// The message columns shared by outbox and inbox inserts (`$..` in `MESSAGE_COLUMNS` order).
#[derive(Default)]
pub(crate) struct MessageColumns {
    inbox: bool,
    ids: Vec<Uuid>,
    subscribers: Vec<String>,
    tenants: Vec<String>,
    types: Vec<String>,
    versions: Vec<i32>,
    keys: Vec<Option<String>>,
    aggregate_types: Vec<Option<String>>,
    aggregate_ids: Vec<Option<String>>,
    payloads: Vec<String>,
    headers: Vec<String>,
    sources: Vec<Option<String>>,
    targets: Vec<Option<String>>,
    services: Vec<Option<String>>,
    occurred: Vec<DateTime<Utc>>,
    deliveries: Vec<i32>,
}

impl MessageColumns {
    /// Adds an outbox row (tenant: the record's) or an inbox row for `subscriber` (tenant:
    /// the inbox tenant), delivered `deliveries` times in this batch.
    fn push(
        &mut self,
        record: &MessageRecord,
        inbox: Option<(&str, i32)>,
    ) -> Result<(), StoreError> {
        let headers = serde_json::to_string(&record.headers)
            .map_err(|e| StoreError::new(StoreErrorKind::Permanent, "serialize headers", e))?;
        self.ids.push(record.id.0);
        let tenant = match inbox {
            Some((subscriber, deliveries)) => {
                self.inbox = true;
                self.subscribers.push(subscriber.to_owned());
                self.deliveries.push(deliveries);
                record.inbox_tenant()
            }
            None => &record.tenant_id,
        };
        self.tenants.push(tenant.to_string());
        self.types.push(record.message_type.clone());
        self.versions
            .push(int4("schema version", record.schema_version)?);
        self.keys.push(record.partition_key.clone());
        self.aggregate_types.push(record.aggregate_type.clone());
        self.aggregate_ids.push(record.aggregate_id.clone());
        self.payloads.push(record.payload.clone());
        self.headers.push(headers);
        self.sources
            .push(opt_tenant(record.source_tenant_id.as_ref()));
        self.targets
            .push(opt_tenant(record.target_tenant_id.as_ref()));
        self.services.push(record.target_service.clone());
        self.occurred.push(record.occurred_at);
        Ok(())
    }

    /// The columns of outbox rows.
    pub(crate) fn outbox(records: &[MessageRecord]) -> Result<Self, StoreError> {
        let mut columns = MessageColumns::default();
        for record in records {
            columns.push(record, None)?;
        }
        Ok(columns)
    }

    /// Binds the arrays in statement order: id, [subscriber], message columns, [deliveries].
    pub(crate) fn bind<'q>(
        self,
        query: Query<'q, Postgres, PgArguments>,
    ) -> Query<'q, Postgres, PgArguments> {
        let inbox = self.inbox;
        let mut query = query.bind(self.ids);
        if inbox {
            query = query.bind(self.subscribers);
        }
        query = query
            .bind(self.tenants)
            .bind(self.types)
            .bind(self.versions)
            .bind(self.keys)
            .bind(self.aggregate_types)
            .bind(self.aggregate_ids)
            .bind(self.payloads)
            .bind(self.headers)
            .bind(self.sources)
            .bind(self.targets)
            .bind(self.services)
            .bind(self.occurred);
        if inbox {
            query = query.bind(self.deliveries);
        }
        query
    }
}

/// The inbox rows of a batch, one per distinct `(id, subscriber)` in first-seen order, with
/// how many times each was delivered in the batch (a statement may touch a row only once).
pub(crate) struct InboxBatch {
    pub(crate) columns: MessageColumns,
    deliveries: HashMap<(Uuid, String), i32>,
}

impl InboxBatch {
    pub(crate) fn new(deliveries: &[Delivery<'_>]) -> Result<Self, StoreError> {
        let mut order: Vec<(&MessageRecord, &str)> = Vec::new();
        let mut counts: HashMap<(Uuid, String), i32> = HashMap::new();
        for delivery in deliveries {
            for subscriber in delivery.subscribers {
                let count = counts
                    .entry((delivery.record.id.0, subscriber.clone()))
                    .or_insert(0);
                if *count == 0 {
                    order.push((delivery.record, subscriber));
                }
                *count = count.saturating_add(1);
            }
        }
        let mut columns = MessageColumns::default();
        for (record, subscriber) in order {
            let n = counts
                .get(&(record.id.0, subscriber.to_owned()))
                .copied()
                .unwrap_or(1);
            columns.push(record, Some((subscriber, n)))?;
        }
        Ok(InboxBatch {
            columns,
            deliveries: counts,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.deliveries.is_empty()
    }

    /// Counts what the insert did from the returned `(id, subscriber, delivery_count)`: a
    /// new row's count equals this batch's deliveries; an existing row's is larger; a pair
    /// not returned was absorbed by the inbox's dedup ledger (its row is gone).
    pub(crate) fn report(&self, returned: &[(Uuid, String, i32)]) -> ReceiveReport {
        let mut report = ReceiveReport::default();
        let mut absorbed: u64 = self
            .deliveries
            .values()
            .map(|n| u64::try_from(*n).unwrap_or(1))
            .sum();
        for (id, subscriber, count) in returned {
            let batch = self
                .deliveries
                .get(&(*id, subscriber.clone()))
                .copied()
                .unwrap_or(1);
            let batch = u64::try_from(batch).unwrap_or(1);
            absorbed = absorbed.saturating_sub(batch);
            if u64::try_from(*count).ok() == Some(batch) {
                report.inserted += 1;
                report.duplicates += batch - 1;
            } else {
                report.duplicates += batch;
            }
        }
        report.duplicates += absorbed;
        report
    }
}

/// The outcome arrays of `resolve`: id, subscriber, status, retry count, delay, error.
pub(crate) fn bind_outcomes<'q>(
    query: Query<'q, Postgres, PgArguments>,
    outcomes: &[Outcome],
) -> Result<Query<'q, Postgres, PgArguments>, StoreError> {
    let mut ids = Vec::with_capacity(outcomes.len());
    let mut subscribers = Vec::with_capacity(outcomes.len());
    let mut statuses = Vec::with_capacity(outcomes.len());
    let mut retry_counts = Vec::with_capacity(outcomes.len());
    let mut delays = Vec::with_capacity(outcomes.len());
    let mut errors = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        let (status, retry_count, delay, error) = match &outcome.resolution {
            Resolution::Completed => ("COMPLETED", None, 0.0, None),
            Resolution::Retry {
                retry_count,
                delay,
                error,
            } => (
                "PENDING",
                Some(int4("retry count", *retry_count)?),
                seconds(*delay),
                Some(error.clone()),
            ),
            Resolution::Failed { retry_count, error } => (
                "FAILED",
                Some(int4("retry count", *retry_count)?),
                0.0,
                Some(error.clone()),
            ),
            Resolution::Release => ("PENDING", None, 0.0, None),
        };
        ids.push(outcome.id.0);
        subscribers.push(outcome.subscriber.clone());
        statuses.push(status.to_owned());
        retry_counts.push(retry_count);
        delays.push(delay);
        errors.push(error);
    }
    Ok(query
        .bind(ids)
        .bind(subscribers)
        .bind(statuses)
        .bind(retry_counts)
        .bind(delays)
        .bind(errors))
}

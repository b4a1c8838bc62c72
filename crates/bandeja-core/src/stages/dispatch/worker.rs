//! One cycle of an outbox worker: claim → publish (or move into the inbox) → mark.
//!
//! Each message is published inside a `bandeja.publish` span (message id, type, tenant,
//! correlation and causation ids, trace id); the outcomes are counted in the
//! `bandeja_messages_published_total` / `_retried_total` / `_failed_total` metrics.

use crate::attempt;
use crate::context::Shared;
use crate::error::{FailureKind, Result};
use crate::record::{BoxKind, MessageKind, StoredMessage};
use crate::store::{Delivery, Store};
use crate::telemetry;
use crate::worker::Claimed;

use super::lease::Lease;
use super::publish::publish;

/// This stage's cycle, as the engine's worker loop of an outbox runs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dispatch;

impl<S: Store> crate::worker::Cycle<S> for Dispatch {
    fn cycle<'a>(
        self,
        shared: &'a Shared<S>,
        box_kind: BoxKind,
        claimed: &'a Claimed,
    ) -> impl std::future::Future<Output = Result<usize>> + Send + 'a {
        cycle(shared, box_kind, claimed)
    }
}

/// Runs one cycle on `box_kind` (an outbox). Returns how many rows were claimed.
pub(crate) async fn cycle<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    claimed_slot: &Claimed,
) -> Result<usize> {
    let token = shared.claim_token();
    if shared.transport.is_none() {
        if let Some(moved) = relay(shared, box_kind, &token, claimed_slot).await? {
            return Ok(moved);
        }
    }
    let lease = Lease::starting_now(shared.config.group(box_kind));
    let claimed = crate::claim::claim(shared, box_kind, &token, claimed_slot).await?;
    if claimed.is_empty() {
        return Ok(0);
    }
    claimed_slot.set(&token, &claimed);
    let count = match &shared.transport {
        None => {
            move_to_inbox(shared, box_kind.kind(), &token, &claimed).await?;
            claimed.len()
        }
        Some(_) => {
            let first = Batch {
                token,
                lease,
                claimed,
            };
            publish_pipelined(shared, box_kind, first, claimed_slot).await?
        }
    };
    claimed_slot.clear();
    Ok(count)
}

/// A claimed batch: its claim token, its lease and its rows.
struct Batch {
    token: String,
    lease: Lease,
    claimed: Vec<StoredMessage>,
}

/// Batches one broker cycle claims ahead and publishes at once. Two: an ordered claim
/// holds one message per key, so with few keys a third claim would scan the backlog for
/// nothing (measured: ≈ 100 ms lost per cycle with 1,000 keys and batches of 500).
const PIPELINED_BATCHES: usize = 2;

/// External transport: a broker's acknowledgements take a while (RabbitMQ confirms a
/// persistent message once it is on disk), so while the box has full batches the cycle
/// claims up to [`PIPELINED_BATCHES`] of them and has them all in flight at once. Per-key
/// order holds: each claim skips the keys of the rows already claimed (they are live), so
/// no two batches in flight hold messages of one key. Returns the rows handled.
async fn publish_pipelined<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    first: Batch,
    slot: &Claimed,
) -> Result<usize> {
    let config = shared.config.group(box_kind);
    let mut batches = vec![first];
    while batches.len() < PIPELINED_BATCHES
        && batches
            .last()
            .is_some_and(|b| b.claimed.len() >= config.batch_size)
    {
        let token = shared.claim_token();
        let lease = Lease::starting_now(config);
        match crate::claim::claim(shared, box_kind, &token, slot).await {
            Ok(next) if next.is_empty() => break,
            Ok(next) => {
                slot.add(&token, &next);
                batches.push(Batch {
                    token,
                    lease,
                    claimed: next,
                });
            }
            Err(error) => {
                // Publish what is claimed; the next cycle claims again.
                tracing::debug!(box = %box_kind, %error, "claiming ahead failed");
                break;
            }
        }
    }
    let results = futures::future::join_all(
        batches
            .iter()
            .map(|b| publish(shared, box_kind, &b.token, &b.claimed, b.lease)),
    )
    .await;
    let total = batches.iter().map(|b| b.claimed.len()).sum();
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(total)
}

/// In-process transport on a store that relays in one statement (claim, inbox rows,
/// outbox marks: one commit). `None` when the store cannot.
async fn relay<S: Store>(
    shared: &Shared<S>,
    box_kind: BoxKind,
    token: &str,
    slot: &Claimed,
) -> Result<Option<usize>> {
    let kind = box_kind.kind();
    let plan = crate::claim::plan(shared, box_kind, slot).await;
    let mut moved = 0;
    for part in &plan.parts {
        let request = plan.request(shared, box_kind, token, part);
        let Some(report) = shared.store.relay(kind, &request).await? else {
            return Ok(None);
        };
        if report.inserted > 0 {
            shared.store.wakers().wake(kind.inbox());
        }
        if report.failed > 0 {
            tracing::warn!(box = %box_kind, failed = report.failed, "commands of a type no process has registered a handler for marked FAILED at once (not retried): register a handler, then retry them");
        }
        telemetry::relayed(
            box_kind,
            &report.published,
            report.moved.saturating_sub(report.failed),
            report.failed,
        );
        telemetry::duplicates(kind.inbox(), report.duplicates);
        moved += usize::try_from(report.moved).unwrap_or(usize::MAX);
    }
    Ok(Some(moved))
}

/// In-process transport: inbox rows for every subscription registered in the store and the
/// outbox outcomes, in one transaction. The subscriptions are read after the claim, so a
/// subscription registered before a message was emitted always gets its row.
async fn move_to_inbox<S: Store>(
    shared: &Shared<S>,
    kind: MessageKind,
    token: &str,
    claimed: &[StoredMessage],
) -> Result<()> {
    let config = shared.config.group(kind.outbox());
    let routes = match shared.store.routes(kind, None).await {
        Ok(routes) => crate::subscriptions::RouteTable::new(routes),
        Err(error) => {
            crate::claim::release(shared, kind.outbox(), token, claimed).await;
            return Err(error.into());
        }
    };
    let mut outcomes = Vec::with_capacity(claimed.len());
    let mut routed = Vec::with_capacity(claimed.len());
    for message in claimed {
        let _span = span(message).entered();
        if let Some(outcome) = attempt::exhausted_by_crashes(message, config) {
            outcomes.push(outcome);
            continue;
        }
        let subscribers =
            routes.subscribers_for(&message.record.message_type, message.record.inbox_tenant());
        if kind == MessageKind::Command && subscribers.is_empty() {
            let error = format!(
                "no handler for command type `{}` (target service `{}`): no process has ever registered a handler for it (no subscription in the database): register one with `on_command` and retry the command, or fix the sender",
                message.record.message_type,
                message.record.target_service.as_deref().unwrap_or("?")
            );
            outcomes.push(attempt::failure(
                message,
                config,
                FailureKind::Permanent,
                error,
            ));
            continue;
        }
        routed.push((message, subscribers));
        outcomes.push(attempt::success(message));
    }
    let deliveries: Vec<Delivery<'_>> = routed
        .iter()
        .map(|(message, subscribers)| Delivery {
            record: &message.record,
            subscribers,
        })
        .collect();
    let report = shared
        .store
        .transfer(kind, token, &deliveries, &outcomes)
        .await?;
    if report.inserted > 0 {
        shared.store.wakers().wake(kind.inbox());
    }
    telemetry::dispatched(kind.outbox(), claimed, &outcomes);
    telemetry::duplicates(kind.inbox(), report.duplicates);
    tracing::debug!(box = %kind.outbox(), moved = deliveries.len(), inbox_rows = report.inserted, duplicates = report.duplicates, "dispatched in-process");
    Ok(())
}

/// The tracing span of one publication: the message's id and type, and the fields it has
/// of tenant (other than the default one), correlation and causation ids and W3C trace id
/// (a field it lacks is left unrecorded, never printed empty).
pub(super) fn span(message: &StoredMessage) -> tracing::Span {
    let span = tracing::info_span!(
        "bandeja.publish",
        message_id = %message.record.id,
        message_type = %message.record.message_type,
        tenant = tracing::field::Empty,
        correlation_id = tracing::field::Empty,
        causation_id = tracing::field::Empty,
        trace_id = tracing::field::Empty,
    );
    telemetry::record_message_fields(&span, &message.record, &message.record.tenant_id);
    span
}

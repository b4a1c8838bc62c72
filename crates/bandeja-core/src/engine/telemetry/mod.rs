//! Telemetry: the metrics the workers record through the [`metrics`] facade (install any
//! recorder — `bandeja-http` renders them for Prometheus) and the W3C trace context
//! carried in message headers ([`trace`]).
//!
//! Counters are incremented once per label set and cycle (not per message); label values
//! are the box's `&'static str` table name and the message type and subscriber, copied
//! once per distinct pair in a batch.

pub mod trace;

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::envelope::MessageId;
use crate::record::{BoxKind, MessageRecord, StoredMessage};
use crate::store::{Outcome, Published, Resolution};

/// Messages written into an outbox. Labels: `box`, `type`.
pub const EMITTED: &str = "bandeja_messages_emitted_total";
/// Outbox rows published (moved into the inbox, or acknowledged by the broker). Labels:
/// `box`, `type` (`*` when a store relays a whole batch in one statement).
pub const PUBLISHED: &str = "bandeja_messages_published_total";
/// Inbox rows handled (the handler's transaction committed). Labels: `box`, `type`,
/// `subscriber`.
pub const HANDLED: &str = "bandeja_messages_handled_total";
/// Attempts that failed and were scheduled again. Labels: `box`, `type`, `subscriber`
/// (empty for outbox rows).
pub const RETRIED: &str = "bandeja_messages_retried_total";
/// Rows that went to FAILED. Labels: `box`, `type`, `subscriber` (empty for outbox rows).
pub const FAILED: &str = "bandeja_messages_failed_total";
/// Rows taken over after the lease of the worker holding them ran out (it crashed, was
/// killed or lost the database). Labels: `box`, `type`, `subscriber` (empty for outbox
/// rows).
pub const TAKEOVERS: &str = "bandeja_lease_takeovers_total";
/// Redeliveries the inbox absorbed (the `(id, subscriber)` row existed). Label: `box`.
pub const DUPLICATES: &str = "bandeja_duplicates_absorbed_total";
/// Seconds from a message's creation (its emitting transaction) to its publication.
/// Labels: `box`, `type`.
pub const PUBLISH_LATENCY: &str = "bandeja_commit_to_published_seconds";
/// Seconds from a message's creation (its emitting transaction) to the commit of its
/// handling. Labels: `box`, `type`, `subscriber`.
pub const HANDLE_LATENCY: &str = "bandeja_commit_to_handled_seconds";

/// Histogram buckets (seconds) suited to the two latency histograms.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// Registers the descriptions (`# HELP` lines) of every metric with the installed recorder.
pub fn describe() {
    metrics::describe_counter!(EMITTED, "Messages written into an outbox");
    metrics::describe_counter!(PUBLISHED, "Outbox rows published to the transport or inbox");
    metrics::describe_counter!(
        HANDLED,
        "Inbox rows handled (handler transaction committed)"
    );
    metrics::describe_counter!(RETRIED, "Failed attempts scheduled again");
    metrics::describe_counter!(FAILED, "Rows that went to FAILED");
    metrics::describe_counter!(DUPLICATES, "Redeliveries absorbed by inbox dedup");
    metrics::describe_counter!(
        TAKEOVERS,
        "Rows taken over after the lease of the worker holding them ran out"
    );
    metrics::describe_histogram!(
        PUBLISH_LATENCY,
        metrics::Unit::Seconds,
        "From the emitting commit to publication"
    );
    metrics::describe_histogram!(
        HANDLE_LATENCY,
        metrics::Unit::Seconds,
        "From the emitting commit to the handling commit"
    );
}

/// Counts `records` written into `box_kind` (one increment per run of the same type).
pub(crate) fn emitted<'a>(box_kind: BoxKind, records: impl IntoIterator<Item = &'a MessageRecord>) {
    let count = |message_type: &str, n: u64| {
        metrics::counter!(EMITTED, "box" => box_kind.table(), "type" => message_type.to_owned())
            .increment(n);
    };
    let mut run: Option<(&str, u64)> = None;
    for record in records {
        match &mut run {
            Some((message_type, n)) if *message_type == record.message_type => *n += 1,
            _ => {
                if let Some((message_type, n)) = run.replace((&record.message_type, 1)) {
                    count(message_type, n);
                }
            }
        }
    }
    if let Some((message_type, n)) = run {
        count(message_type, n);
    }
}

/// Counts one takeover of `message`'s row (rare: the labels are copied here).
pub(crate) fn taken_over(message: &StoredMessage) {
    metrics::counter!(
        TAKEOVERS,
        "box" => message.box_kind.table(),
        "type" => message.record.message_type.clone(),
        "subscriber" => message.subscriber.clone().unwrap_or_default()
    )
    .increment(1);
}

/// Counts redeliveries absorbed by the inbox `box_kind`.
pub(crate) fn duplicates(box_kind: BoxKind, count: u64) {
    if count > 0 {
        metrics::counter!(DUPLICATES, "box" => box_kind.table()).increment(count);
    }
}

/// Counts a batch relayed in one statement: per type with its commit→published latency
/// when the store reported the rows (`published`), else `published` rows under type `*`.
pub(crate) fn relayed(box_kind: BoxKind, published: &[Published], count: u64, failed: u64) {
    if published.is_empty() {
        if count > 0 {
            metrics::counter!(PUBLISHED, "box" => box_kind.table(), "type" => "*").increment(count);
        }
    } else {
        let mut start = 0;
        while start < published.len() {
            let message_type = published[start].message_type.as_str();
            let end = published[start..]
                .iter()
                .position(|p| p.message_type != message_type)
                .map_or(published.len(), |n| start + n);
            let run = &published[start..end];
            metrics::counter!(PUBLISHED, "box" => box_kind.table(), "type" => message_type.to_owned())
                .increment(u64::try_from(run.len()).unwrap_or(u64::MAX));
            let histogram = metrics::histogram!(PUBLISH_LATENCY, "box" => box_kind.table(), "type" => message_type.to_owned());
            for message in run {
                histogram.record(message.waited.as_secs_f64());
            }
            start = end;
        }
    }
    if failed > 0 {
        metrics::counter!(FAILED, "box" => box_kind.table(), "type" => "*", "subscriber" => "")
            .increment(failed);
    }
}

/// The tallies of one (type, subscriber) pair in a batch.
struct Group<'a> {
    message_type: &'a str,
    subscriber: &'a str,
    done: u64,
    retried: u64,
    failed: u64,
    latency: Option<metrics::Histogram>,
}

/// Seconds since `at` (zero if `at` is in the future).
fn seconds_since(now: DateTime<Utc>, at: DateTime<Utc>) -> f64 {
    (now - at).to_std().map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Records the outcomes of a batch of `box_kind`: `outcome(i)` is the resolution of
/// `claimed[i]`, `None` when it completed. Completed rows count as published (outboxes)
/// or handled (inboxes), with their latency since creation.
fn record<'a, 'r>(
    box_kind: BoxKind,
    claimed: &'a [StoredMessage],
    outcome: impl Fn(usize, &StoredMessage) -> Option<&'r Resolution>,
) {
    let now = Utc::now();
    let inbox = box_kind.is_inbox();
    let mut groups: Vec<Group<'a>> = Vec::new();
    for (index, message) in claimed.iter().enumerate() {
        let subscriber = message.subscriber.as_deref().unwrap_or("");
        let position = groups.iter().position(|g| {
            g.message_type == message.record.message_type && g.subscriber == subscriber
        });
        let group = match position {
            Some(position) => &mut groups[position],
            None => {
                groups.push(Group {
                    message_type: &message.record.message_type,
                    subscriber,
                    done: 0,
                    retried: 0,
                    failed: 0,
                    latency: None,
                });
                let last = groups.len() - 1;
                &mut groups[last]
            }
        };
        match outcome(index, message) {
            None | Some(Resolution::Completed) => {
                group.done += 1;
                let histogram = group
                    .latency
                    .get_or_insert_with(|| latency(box_kind, message));
                histogram.record(seconds_since(now, message.record.occurred_at));
            }
            Some(Resolution::Retry { .. }) => group.retried += 1,
            Some(Resolution::Failed { .. }) => group.failed += 1,
            Some(Resolution::Release) => {}
        }
    }
    for group in groups {
        let (box_name, message_type) = (box_kind.table(), group.message_type.to_owned());
        if group.done > 0 {
            if inbox {
                metrics::counter!(HANDLED, "box" => box_name, "type" => message_type.clone(), "subscriber" => group.subscriber.to_owned())
                    .increment(group.done);
            } else {
                metrics::counter!(PUBLISHED, "box" => box_name, "type" => message_type.clone())
                    .increment(group.done);
            }
        }
        if group.retried > 0 {
            metrics::counter!(RETRIED, "box" => box_name, "type" => message_type.clone(), "subscriber" => group.subscriber.to_owned())
                .increment(group.retried);
        }
        if group.failed > 0 {
            metrics::counter!(FAILED, "box" => box_name, "type" => message_type, "subscriber" => group.subscriber.to_owned())
                .increment(group.failed);
        }
    }
}

/// The latency histogram of `message`'s label set.
fn latency(box_kind: BoxKind, message: &StoredMessage) -> metrics::Histogram {
    let message_type = message.record.message_type.clone();
    if box_kind.is_inbox() {
        let subscriber = message.subscriber.clone().unwrap_or_default();
        metrics::histogram!(HANDLE_LATENCY, "box" => box_kind.table(), "type" => message_type, "subscriber" => subscriber)
    } else {
        metrics::histogram!(PUBLISH_LATENCY, "box" => box_kind.table(), "type" => message_type)
    }
}

/// Records an outbox batch whose `outcomes` are aligned with `claimed`.
pub(crate) fn dispatched(box_kind: BoxKind, claimed: &[StoredMessage], outcomes: &[Outcome]) {
    record(box_kind, claimed, |index, _| {
        outcomes.get(index).map(|o| &o.resolution)
    });
}

/// Records an inbox batch: rows without an entry in `failures` completed.
pub(crate) fn processed(box_kind: BoxKind, claimed: &[StoredMessage], failures: &[Outcome]) {
    if failures.is_empty() {
        record(box_kind, claimed, |_, _| None);
        return;
    }
    let by_row: HashMap<(MessageId, Option<&str>), &Resolution> = failures
        .iter()
        .map(|o| ((o.id, o.subscriber.as_deref()), &o.resolution))
        .collect();
    record(box_kind, claimed, |_, message| {
        by_row
            .get(&(message.record.id, message.subscriber.as_deref()))
            .copied()
    });
}

/// Records on `span` (declared with these fields `Empty`) the fields `record` has: `tenant`
/// unless it is the default one, `correlation_id`, `causation_id`, `trace_id`. What it
/// lacks stays unrecorded, so log lines never carry empty fields.
pub(crate) fn record_message_fields(
    span: &tracing::Span,
    record: &MessageRecord,
    tenant: &crate::tenant::TenantId,
) {
    if span.is_disabled() {
        return;
    }
    if tenant.as_str() != DEFAULT_TENANT {
        span.record("tenant", tenant.as_str());
    }
    let headers = &record.headers;
    if let Some(correlation_id) = headers.correlation_id.as_deref() {
        span.record("correlation_id", correlation_id);
    }
    if let Some(causation_id) = headers.causation_id {
        span.record("causation_id", tracing::field::display(causation_id));
    }
    let trace_id = trace::trace_id_of(headers);
    if !trace_id.is_empty() {
        span.record("trace_id", trace_id);
    }
}

/// The name of the tenant of messages emitted outside any tenant scope.
const DEFAULT_TENANT: &str = "default";

//! Subscriptions as operators see them ([`Admin::subscriptions`](super::Admin::subscriptions),
//! [`Admin::retire`](super::Admin::retire)): each subscription with the live processes that
//! run it and its inbox rows, the verdict `/health` draws from them, and the retirement of a
//! subscription on purpose.
//!
//! A subscription is **running** while a live process runs it; without one, its live inbox
//! rows (PENDING, PROCESSING) **wait** for a process that runs it — during a rolling deploy
//! that is normal — until none has refreshed it for longer than the stuck threshold: then it
//! is **unattended** and `/health` is DOWN naming it. Without live rows it is **idle**.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

use crate::config::format_duration;
use crate::error::{StoreError, StoreErrorKind};
use crate::record::MessageKind;
use crate::subscriptions::{kind_name, live_for};
use crate::transport::wire::REJECTED_SUBSCRIBER;

/// Serializes a [`MessageKind`] as the subscription tables store it: `event` or `command`.
fn serialize_kind<S: Serializer>(kind: &MessageKind, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(kind_name(*kind))
}

/// Serializes a duration as ISO-8601, to the millisecond (`PT6M12.345S`).
fn serialize_duration<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&millis(*d))
}

/// `d` to the millisecond, as ISO-8601.
fn millis(d: Duration) -> String {
    format_duration(Duration::from_millis(
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
    ))
}

/// The plural the operator tools use for a kind: `events`, `commands`.
#[must_use]
pub const fn kind_plural(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Event => "events",
        MessageKind::Command => "commands",
    }
}

/// Parses a kind as operators write it: `events`, `commands` (or `event`, `command`), in
/// any case.
pub fn parse_kind(text: &str) -> Result<MessageKind, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "events" | "event" => Ok(MessageKind::Event),
        "commands" | "command" => Ok(MessageKind::Command),
        _ => Err(format!("unknown kind `{text}`: use `events` or `commands`")),
    }
}

/// How long after its last heartbeat a process counts as live for operator tools that do
/// not know the stuck threshold the processes run with (`bandeja` CLI, a standalone
/// `bandeja serve`): [`live_for`] of the longest heartbeat, 30 seconds. Never shorter than
/// what any process needs, so a running process is never taken for a stopped one.
#[must_use]
pub fn longest_live_for() -> Duration {
    live_for(Duration::MAX)
}

/// A live process that runs a subscription (a `subscription_processes` row refreshed within
/// the `live_for` asked for).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessView {
    /// The process (`<worker id>#<instance>`).
    pub process: String,
    /// The host it runs on.
    pub host: String,
    /// Its OS process id.
    pub pid: u32,
    /// Its service (`None`: none given, the in-process transport).
    pub service: Option<String>,
    /// When it registered.
    pub started_at: DateTime<Utc>,
    /// Its last heartbeat.
    pub last_seen_at: DateTime<Utc>,
}

impl ProcessView {
    /// `web-1#0 on host-a (pid 4242, last seen 2025-06-01T12:00:00Z)`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} on {} (pid {}, last seen {})",
            self.process,
            self.host,
            self.pid,
            self.last_seen_at.to_rfc3339_opts(SecondsFormat::Secs, true)
        )
    }
}

/// One `subscriptions` row as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubscriptionView {
    /// Events or commands (`event` / `command` in JSON).
    #[serde(serialize_with = "serialize_kind")]
    pub kind: MessageKind,
    /// The message type.
    #[serde(rename = "type")]
    pub message_type: String,
    /// The subscriber.
    pub subscriber: String,
    /// Only this tenant's messages; `None`: every tenant.
    pub tenant: Option<String>,
    /// The service of the process that refreshed it last (`None`: none given).
    pub service: Option<String>,
    /// When a process first registered it: it receives what is relayed or received from
    /// then on.
    pub first_seen_at: DateTime<Utc>,
    /// When a running process last refreshed it.
    pub last_seen_at: DateTime<Utc>,
    /// How long ago that was, by the database's clock.
    #[serde(serialize_with = "serialize_duration")]
    pub unseen_for: Duration,
    /// The live processes that run its subscriber (same kind), by process name.
    pub processes: Vec<ProcessView>,
    /// Its live inbox rows (PENDING or PROCESSING) in the inbox of its kind: rows of its
    /// subscriber and type (and tenant, when set).
    pub pending: u64,
    /// Its FAILED inbox rows, counted the same way.
    pub failed: u64,
}

/// What a subscription needs, as `/health` judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Attendance {
    /// A live process runs it.
    Running,
    /// No live process runs it and it has live rows, but a process refreshed it within the
    /// stuck threshold (a rolling deploy, a restart): its rows wait. `/health` stays UP and
    /// lists it.
    Waiting,
    /// No live process runs it, it has live rows, and none refreshed it for longer than the
    /// stuck threshold: `/health` is DOWN, naming it.
    Unattended,
    /// No live process runs it and it has no live rows.
    Idle,
}

impl Attendance {
    /// `running`, `waiting`, `unattended`, `idle`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Attendance::Running => "running",
            Attendance::Waiting => "waiting",
            Attendance::Unattended => "unattended",
            Attendance::Idle => "idle",
        }
    }
}

/// One subscriber of one kind, over all its subscriptions (types, tenants): what `/health`
/// reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubscriberState {
    /// Events or commands.
    #[serde(serialize_with = "serialize_kind")]
    pub kind: MessageKind,
    /// The subscriber.
    pub subscriber: String,
    /// The message types it subscribes to, sorted.
    pub types: Vec<String>,
    /// The service of the process that refreshed it last.
    pub service: Option<String>,
    /// Its live inbox rows.
    pub pending: u64,
    /// Its FAILED inbox rows.
    pub failed: u64,
    /// How many live processes run it.
    pub processes: usize,
    /// The newest refresh of its subscriptions.
    pub last_seen_at: DateTime<Utc>,
    /// How long ago that was.
    #[serde(serialize_with = "serialize_duration")]
    pub unseen_for: Duration,
    /// The verdict.
    pub state: Attendance,
    /// What it means, for `waiting` and `unattended`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl SubscriberState {
    fn describe(&self) -> String {
        format!(
            "subscription `{}` ({}: {})",
            self.subscriber,
            kind_plural(self.kind),
            self.types.join(", ")
        )
    }

    /// Why it needs attention (`waiting`, `unattended`), in words.
    fn explain(&self, stuck_threshold: Duration) -> Option<String> {
        let unseen = millis(self.unseen_for);
        match self.state {
            Attendance::Unattended => Some(format!(
                "{} has {} pending row(s) and no live process: none has refreshed it for \
                 {unseen}, longer than the stuck threshold {}; deploy a process that runs \
                 it, or retire it (`bandeja subscribers retire {} --kind {} --keep` or \
                 `--discard`)",
                self.describe(),
                self.pending,
                format_duration(stuck_threshold),
                self.subscriber,
                kind_plural(self.kind),
            )),
            Attendance::Waiting => Some(format!(
                "{} has {} pending row(s) waiting for a process that runs it (none for \
                 {unseen}; DOWN after the stuck threshold {})",
                self.describe(),
                self.pending,
                format_duration(stuck_threshold),
            )),
            Attendance::Running | Attendance::Idle => None,
        }
    }
}

/// Judges each subscriber (per kind) from its subscriptions: unattended when one of its
/// subscriptions (a type, a tenant filter) has pending rows and no refresh for longer than
/// `stuck_threshold` — whatever runs its other types; otherwise running when a live process
/// runs it; otherwise idle without live rows; otherwise unattended when the newest refresh
/// of its subscriptions is older than `stuck_threshold`, waiting when it is not. Sorted by
/// kind (events first) and subscriber.
#[must_use]
pub fn attendance(views: &[SubscriptionView], stuck_threshold: Duration) -> Vec<SubscriberState> {
    let mut groups: BTreeMap<(u8, &str), Vec<&SubscriptionView>> = BTreeMap::new();
    for view in views {
        let order = match view.kind {
            MessageKind::Event => 0,
            MessageKind::Command => 1,
        };
        groups
            .entry((order, view.subscriber.as_str()))
            .or_default()
            .push(view);
    }
    groups
        .into_values()
        .filter_map(|rows| {
            let newest = rows.iter().max_by_key(|v| v.last_seen_at)?;
            let mut types: Vec<String> = rows.iter().map(|v| v.message_type.clone()).collect();
            types.sort_unstable();
            types.dedup();
            let mut processes: Vec<&str> = rows
                .iter()
                .flat_map(|v| v.processes.iter().map(|p| p.process.as_str()))
                .collect();
            processes.sort_unstable();
            processes.dedup();
            let pending = rows.iter().map(|v| v.pending).sum();
            // A subscription row is refreshed only by the processes that run exactly it
            // (that subscriber for that type and tenant filter): one with pending rows
            // that none has refreshed for longer than the threshold is unattended even
            // while processes run the subscriber's other types (claims take only what a
            // process runs, so nobody handles it).
            let neglected = rows
                .iter()
                .filter(|v| v.pending > 0 && v.unseen_for > stuck_threshold)
                .map(|v| v.unseen_for)
                .max();
            let unseen_for = neglected.or_else(|| rows.iter().map(|v| v.unseen_for).min())?;
            let state = if neglected.is_some() {
                Attendance::Unattended
            } else if !processes.is_empty() {
                Attendance::Running
            } else if pending == 0 {
                Attendance::Idle
            } else if unseen_for > stuck_threshold {
                Attendance::Unattended
            } else {
                Attendance::Waiting
            };
            let mut subscriber = SubscriberState {
                kind: newest.kind,
                subscriber: newest.subscriber.clone(),
                types,
                service: newest.service.clone(),
                pending,
                failed: rows.iter().map(|v| v.failed).sum(),
                processes: processes.len(),
                last_seen_at: newest.last_seen_at,
                unseen_for,
                state,
                reason: None,
            };
            subscriber.reason = subscriber.explain(stuck_threshold);
            Some(subscriber)
        })
        .collect()
}

/// A subscription in a listing, with the verdict on its subscriber.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListedSubscription {
    /// The subscription.
    #[serde(flatten)]
    pub subscription: SubscriptionView,
    /// Its subscriber's [`Attendance`].
    pub state: Attendance,
}

/// What `bandeja subscribers --json` prints and `GET /subscribers` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubscriptionListing {
    /// The threshold the verdicts use (ISO-8601).
    pub stuck_threshold: String,
    /// How long after its last heartbeat a process counts as live (ISO-8601).
    pub live_for: String,
    /// One entry per subscription, by kind, subscriber, type and tenant.
    pub subscriptions: Vec<ListedSubscription>,
}

impl SubscriptionListing {
    /// The listing of `views` (as [`Admin::subscriptions`](super::Admin::subscriptions)
    /// returned them for `live_for`), judged with `stuck_threshold`.
    #[must_use]
    pub fn new(
        views: Vec<SubscriptionView>,
        stuck_threshold: Duration,
        live_for: Duration,
    ) -> Self {
        let states = attendance(&views, stuck_threshold);
        let state_of = |view: &SubscriptionView| {
            states
                .iter()
                .find(|s| s.kind == view.kind && s.subscriber == view.subscriber)
                .map_or(Attendance::Idle, |s| s.state)
        };
        SubscriptionListing {
            stuck_threshold: format_duration(stuck_threshold),
            live_for: millis(live_for),
            subscriptions: views
                .into_iter()
                .map(|subscription| ListedSubscription {
                    state: state_of(&subscription),
                    subscription,
                })
                .collect(),
        }
    }
}

/// What [`Admin::retire`](super::Admin::retire) does with the retired subscriber's inbox
/// rows. COMPLETED rows (its history) are never touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Settle {
    /// Delete its live rows (PENDING, and PROCESSING whose lease ran out) and its FAILED
    /// rows: nobody will handle them.
    Discard,
    /// Mark its live rows (PENDING, and PROCESSING whose lease ran out) FAILED with a reason
    /// saying so, kept for inspection; `bandeja retry` sends them back once a process runs
    /// the subscriber again. Its FAILED rows stay as they are.
    Keep,
}

impl Settle {
    /// `discard` or `keep`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Settle::Discard => "discard",
            Settle::Keep => "keep",
        }
    }
}

/// The `last_error` [`Settle::Keep`] writes on the rows of a retired `subscriber`.
#[must_use]
pub fn kept_reason(subscriber: &str) -> String {
    format!(
        "subscription `{subscriber}` retired by an operator; kept for inspection: retry after \
         deploying a process that runs it"
    )
}

/// A `subscriptions` row a retirement deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetiredSubscription {
    /// Events or commands.
    #[serde(serialize_with = "serialize_kind")]
    pub kind: MessageKind,
    /// The message type.
    #[serde(rename = "type")]
    pub message_type: String,
    /// Its tenant filter (`None`: every tenant).
    pub tenant: Option<String>,
}

/// What [`Admin::retire`](super::Admin::retire) did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetireReport {
    /// The subscriber retired.
    pub subscriber: String,
    /// What was done with its rows.
    pub settle: Settle,
    /// The subscriptions deleted (every type, tenant filter and kind retired).
    pub subscriptions: Vec<RetiredSubscription>,
    /// Live rows deleted ([`Settle::Discard`]).
    pub discarded: u64,
    /// FAILED rows deleted ([`Settle::Discard`]).
    pub discarded_failed: u64,
    /// Live rows marked FAILED ([`Settle::Keep`]).
    pub kept: u64,
    /// PROCESSING rows still under a lease, left alone: their holder finishes or releases
    /// them; once their lease runs out they wait for a process that runs the subscriber
    /// (retire again then to settle them).
    pub in_flight: u64,
}

/// Why [`Admin::retire`](super::Admin::retire) refused: the source of its
/// [`StoreError`] (find it with [`RetireRefused::of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RetireRefused {
    /// Live processes still run the subscriber: stop them first.
    #[error("{}", running(.subscriber, .processes))]
    Running {
        /// The subscriber.
        subscriber: String,
        /// The live processes that run it.
        processes: Vec<ProcessView>,
    },
    /// No subscription and no live or FAILED inbox row has this subscriber.
    #[error("{}", unknown(.subscriber, *.kind, .suggestion.as_deref()))]
    Unknown {
        /// The name asked for.
        subscriber: String,
        /// The kind asked for, if one was.
        kind: Option<MessageKind>,
        /// A known subscriber with a close name.
        suggestion: Option<String>,
    },
    /// `bandeja.rejected` is not a subscription.
    #[error(
        "`{REJECTED_SUBSCRIBER}` is not a subscription: its rows hold messages no subscription \
         took when they arrived; retry them once a subscription for their type exists \
         (`bandeja retry --all-failed --subscriber {REJECTED_SUBSCRIBER}`), they are routed then"
    )]
    Rejected,
    /// An empty name.
    #[error(
        "no subscriber given: name the subscriber to retire (`bandeja subscribers` lists them)"
    )]
    Empty,
}

fn running(subscriber: &str, processes: &[ProcessView]) -> String {
    let listed: Vec<String> = processes.iter().map(ProcessView::describe).collect();
    format!(
        "subscription `{subscriber}` is still run by {} live process(es): {}; stop them first \
         (deploy a version without this subscriber), then retire it. A process that stopped \
         without unregistering counts as live until {} after its last heartbeat",
        processes.len(),
        listed.join("; "),
        format_duration(longest_live_for()),
    )
}

fn unknown(subscriber: &str, kind: Option<MessageKind>, suggestion: Option<&str>) -> String {
    let of_kind = kind.map_or(String::new(), |k| format!(" of {}", kind_plural(k)));
    let hint = suggestion.map_or(String::new(), |s| format!(" (did you mean `{s}`?)"));
    format!(
        "no subscription and no pending or FAILED inbox row{of_kind} has subscriber \
         `{subscriber}`{hint}: `bandeja subscribers` lists the subscriptions"
    )
}

impl RetireRefused {
    /// The refusal behind `error`, if it is one.
    #[must_use]
    pub fn of(error: &StoreError) -> Option<&RetireRefused> {
        error.get_ref().downcast_ref::<RetireRefused>()
    }

    /// As the [`StoreError`] `retire` returns (permanent: retrying as is will not help).
    #[must_use]
    pub fn into_error(self) -> StoreError {
        StoreError::new(StoreErrorKind::Permanent, "retire a subscription", self)
    }

    /// [`RetireRefused::Unknown`], suggesting the closest of `known` (within two edits, or
    /// equal but for case).
    #[must_use]
    pub fn unknown<'a>(
        subscriber: &str,
        kind: Option<MessageKind>,
        known: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let wanted = subscriber.to_lowercase();
        let suggestion = known
            .into_iter()
            .filter(|k| *k != subscriber && *k != REJECTED_SUBSCRIBER)
            .map(|k| (crate::config::edit_distance(&k.to_lowercase(), &wanted), k))
            .filter(|(distance, _)| *distance <= 2)
            .min()
            .map(|(_, k)| k.to_owned());
        RetireRefused::Unknown {
            subscriber: subscriber.to_owned(),
            kind,
            suggestion,
        }
    }
}

/// Checks a name before a store looks for it: not empty, not `bandeja.rejected`.
pub fn check_retirable(subscriber: &str) -> Result<(), StoreError> {
    if subscriber.trim().is_empty() {
        return Err(RetireRefused::Empty.into_error());
    }
    if subscriber == REJECTED_SUBSCRIBER {
        return Err(RetireRefused::Rejected.into_error());
    }
    Ok(())
}

/// The kinds a retirement of `kind` covers (`None`: both).
#[must_use]
pub fn retired_kinds(kind: Option<MessageKind>) -> Vec<MessageKind> {
    match kind {
        Some(kind) => vec![kind],
        None => vec![MessageKind::Event, MessageKind::Command],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_700_000_000 + secs, 0).expect("time")
    }

    fn view(kind: MessageKind, subscriber: &str, message_type: &str) -> SubscriptionView {
        SubscriptionView {
            kind,
            message_type: message_type.into(),
            subscriber: subscriber.into(),
            tenant: None,
            service: Some("shop".into()),
            first_seen_at: at(0),
            last_seen_at: at(100),
            unseen_for: Duration::from_secs(1),
            processes: Vec::new(),
            pending: 0,
            failed: 0,
        }
    }

    fn process(name: &str) -> ProcessView {
        ProcessView {
            process: name.into(),
            host: "host-a".into(),
            pid: 42,
            service: None,
            started_at: at(0),
            last_seen_at: at(100),
        }
    }

    #[test]
    fn a_type_nobody_runs_is_unattended_beside_a_running_one() {
        let stuck = Duration::from_secs(300);
        let views = [
            SubscriptionView {
                processes: vec![process("p1")],
                ..view(MessageKind::Event, "audit", "shop.A")
            },
            SubscriptionView {
                processes: vec![process("p1")],
                pending: 2,
                unseen_for: Duration::from_secs(301),
                ..view(MessageKind::Event, "audit", "shop.B")
            },
        ];
        let states = attendance(&views, stuck);
        assert_eq!(states[0].state, Attendance::Unattended);
        let fresh = [SubscriptionView {
            unseen_for: Duration::from_secs(20),
            ..views[1].clone()
        }];
        assert_eq!(attendance(&fresh, stuck)[0].state, Attendance::Running);
    }

    #[test]
    fn each_subscriber_is_judged_over_its_subscriptions() {
        let stuck = Duration::from_secs(300);
        let running = SubscriptionView {
            processes: vec![process("p1")],
            pending: 3,
            ..view(MessageKind::Event, "audit", "shop.A")
        };
        let waiting = [
            SubscriptionView {
                pending: 2,
                unseen_for: Duration::from_secs(400),
                last_seen_at: at(10),
                ..view(MessageKind::Event, "billing", "shop.B")
            },
            SubscriptionView {
                pending: 1,
                failed: 4,
                unseen_for: Duration::from_secs(20),
                ..view(MessageKind::Event, "billing", "shop.A")
            },
        ];
        let unattended = SubscriptionView {
            pending: 5,
            unseen_for: Duration::from_secs(301),
            ..view(MessageKind::Command, "billing", "shop.Charge")
        };
        let idle = SubscriptionView {
            unseen_for: Duration::from_secs(9_999),
            ..view(MessageKind::Event, "zeta", "shop.A")
        };
        let mut views = vec![unattended, idle, running];
        views.extend(waiting);
        let states = attendance(&views, stuck);
        let summary: Vec<(MessageKind, &str, Attendance, u64, u64)> = states
            .iter()
            .map(|s| (s.kind, s.subscriber.as_str(), s.state, s.pending, s.failed))
            .collect();
        assert_eq!(
            summary,
            [
                (MessageKind::Event, "audit", Attendance::Running, 3, 0),
                (MessageKind::Event, "billing", Attendance::Unattended, 3, 4),
                (MessageKind::Event, "zeta", Attendance::Idle, 0, 0),
                (
                    MessageKind::Command,
                    "billing",
                    Attendance::Unattended,
                    5,
                    0
                ),
            ]
        );
        let billing = &states[1];
        assert_eq!(billing.types, ["shop.A", "shop.B"]);
        // Its shop.B subscription has waited 400 s with nobody refreshing it: unattended,
        // though shop.A was refreshed 20 s ago.
        assert_eq!(billing.unseen_for, Duration::from_secs(400));
        assert_eq!(billing.last_seen_at, at(100));
        let reason = states[3].reason.as_deref().unwrap_or_default();
        for needle in [
            "`billing`",
            "commands: shop.Charge",
            "5 pending",
            "PT5M1S",
            "PT5M",
        ] {
            assert!(reason.contains(needle), "{needle}: {reason}");
        }
        assert!(states[0].reason.is_none());
        let json = serde_json::to_value(&states[3]).expect("json");
        assert_eq!(json["kind"], "command");
        assert_eq!(json["state"], "unattended");
        assert_eq!(json["unseen_for"], "PT5M1S");
    }

    #[test]
    fn a_listing_carries_each_subscription_with_its_verdict() {
        let views = vec![SubscriptionView {
            pending: 1,
            ..view(MessageKind::Event, "billing", "shop.A")
        }];
        let listing = SubscriptionListing::new(views, Duration::from_secs(300), longest_live_for());
        let json = serde_json::to_value(&listing).expect("json");
        assert_eq!(json["stuck_threshold"], "PT5M");
        assert_eq!(json["live_for"], "PT30S");
        let entry = &json["subscriptions"][0];
        assert_eq!(entry["type"], "shop.A");
        assert_eq!(entry["kind"], "event");
        assert_eq!(entry["state"], "waiting");
        assert_eq!(entry["tenant"], serde_json::Value::Null);
        assert_eq!(entry["pending"], 1);
    }

    #[test]
    fn refusals_say_what_to_do() {
        let error = check_retirable(REJECTED_SUBSCRIBER).expect_err("refused");
        assert_eq!(RetireRefused::of(&error), Some(&RetireRefused::Rejected));
        assert!(check_retirable(" ").is_err());
        assert!(check_retirable("billing").is_ok());

        let unknown = RetireRefused::unknown("biling", None, ["audit", "billing", "invoicing"]);
        assert!(
            unknown.to_string().contains("did you mean `billing`?"),
            "{unknown}"
        );
        let far = RetireRefused::unknown("x", Some(MessageKind::Command), ["billing"]);
        let text = far.to_string();
        assert!(!text.contains("did you mean"), "{text}");
        assert!(text.contains("of commands"), "{text}");

        let running = RetireRefused::Running {
            subscriber: "billing".into(),
            processes: vec![process("web-1#0")],
        };
        let text = running.to_string();
        for needle in ["web-1#0 on host-a (pid 42", "stop them first", "PT30S"] {
            assert!(text.contains(needle), "{needle}: {text}");
        }
        assert_eq!(parse_kind("Events"), Ok(MessageKind::Event));
        assert_eq!(parse_kind("command"), Ok(MessageKind::Command));
        assert!(parse_kind("both").is_err());
        assert!(kept_reason("billing").contains("retry after deploying"));
    }
}

//! Subscriptions in the database: who subscribes to what, and which processes run them.
//!
//! Routing lives in the store (contract item 9), not in a process's memory, so that a
//! fleet of mixed versions — every rolling deploy — fans out, claims and receives from the
//! same truth:
//!
//! - At [`start`](crate::Bandeja::start) a process registers each of its subscribers
//!   ([`Store::register`](crate::Store::register)): one `subscriptions` row per kind, message type, subscriber and
//!   tenant filter, and one `subscription_processes` row per subscriber it runs. It
//!   refreshes both every [`heartbeat_every`] and removes its process rows at shutdown.
//! - The in-process relay creates one inbox row per subscription registered for the type,
//!   whichever process relays; reception from a broker does the same for the subscriptions
//!   of its service ([`Store::routes`](crate::Store::routes)). A subscription receives the messages relayed or
//!   received from the moment it was first registered.
//! - An inbox worker claims only the rows of the subscribers its process runs, so a row is
//!   never FAILED because this process lacks its subscriber: it waits for a process that
//!   runs it. A subscription ends only when an operator retires it.

use std::collections::HashMap;
use std::time::Duration;

use crate::record::MessageKind;
use crate::tenant::TenantId;

/// A route of the in-process transport: messages of `message_type` get an inbox row for
/// `subscriber` (only those addressed to `tenant`, when set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The message type.
    pub message_type: String,
    /// The subscriber that gets a row.
    pub subscriber: String,
    /// Only messages of this tenant (a tenant-scoped subscriber).
    pub tenant: Option<TenantId>,
}

/// How often a running process refreshes its registration, at most.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// The shortest heartbeat (a very small stuck threshold in tests).
const SHORTEST_HEARTBEAT: Duration = Duration::from_millis(200);

/// How often a process refreshes its registration: [`HEARTBEAT`], or a third of the stuck
/// threshold when that is shorter (a subscription counts as unattended once it has not
/// been refreshed for a stuck threshold, so a running process must refresh well within it).
#[must_use]
pub fn heartbeat_every(stuck_threshold: Duration) -> Duration {
    HEARTBEAT.min(stuck_threshold / 3).max(SHORTEST_HEARTBEAT)
}

/// How long after its last refresh a process still counts as live: three heartbeats.
#[must_use]
pub fn live_for(stuck_threshold: Duration) -> Duration {
    heartbeat_every(stuck_threshold) * 3
}

/// One subscription a process runs: messages of `kind` and `message_type` get an inbox
/// row for `subscriber` (only those addressed to `tenant`, when set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// Events or commands.
    pub kind: MessageKind,
    /// The message type.
    pub message_type: String,
    /// The subscriber (for a command: its one handler).
    pub subscriber: String,
    /// Only messages of this tenant (a tenant-scoped subscriber); `None`: every tenant.
    pub tenant: Option<TenantId>,
}

impl Subscription {
    /// The text stored in the `kind` column: `event` or `command`.
    #[must_use]
    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind)
    }
}

/// What an inbox claim may take (see [`ClaimRequest::subscribers`](crate::store::ClaimRequest::subscribers)):
/// rows of `subscriber` and `message_type` (`None`: any type), of `tenant` (`None`: every
/// tenant). A process claims exactly what it runs, so it never meets a row it has no
/// handler for — a subscriber that takes one more type in a newer version, or a
/// tenant-scoped subscriber beside an every-tenant one of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimable {
    /// The subscriber.
    pub subscriber: String,
    /// The message type; `None`: any.
    pub message_type: Option<String>,
    /// The tenant; `None`: every tenant.
    pub tenant: Option<TenantId>,
}

impl Claimable {
    /// What a process may claim of `kind`: its subscriptions, and reception's rejected
    /// rows (any type, any tenant).
    #[must_use]
    pub fn of(kind: MessageKind, subscriptions: &[Subscription]) -> Vec<Claimable> {
        let mut claimable: Vec<Claimable> = subscriptions
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| Claimable {
                subscriber: s.subscriber.clone(),
                message_type: Some(s.message_type.clone()),
                tenant: s.tenant.clone(),
            })
            .collect();
        claimable.push(Claimable {
            subscriber: crate::names::REJECTED_SUBSCRIBER.to_owned(),
            message_type: None,
            tenant: None,
        });
        claimable
    }
}

/// The text stored in the `kind` column of the subscription tables.
#[must_use]
pub const fn kind_name(kind: MessageKind) -> &'static str {
    kind.as_str()
}

/// The route of a stored subscription row (`tenant` `""`: every tenant). `None` for a row
/// whose tenant is not a usable name (processes store only valid ones; a row written by
/// hand may not be): it is skipped, with a warning.
#[must_use]
pub fn stored_route(message_type: String, subscriber: String, tenant: &str) -> Option<Route> {
    let tenant = if tenant.is_empty() {
        None
    } else {
        match TenantId::new(tenant) {
            Ok(tenant) => Some(tenant),
            Err(error) => {
                tracing::warn!(%subscriber, %tenant, %error, "subscription with an unusable tenant skipped: fix or delete its row");
                return None;
            }
        }
    };
    Some(Route {
        message_type,
        subscriber,
        tenant,
    })
}

/// What a process registers (and refreshes) in the store.
#[derive(Debug, Clone, Copy)]
pub struct Registration<'a> {
    /// The process: unique per running runtime (`<worker id>#<instance>`).
    pub process: &'a str,
    /// Its service name (`""` when none was given: the in-process transport).
    pub service: &'a str,
    /// The host it runs on.
    pub host: &'a str,
    /// Its OS process id.
    pub pid: u32,
    /// The subscriptions it runs.
    pub subscriptions: &'a [Subscription],
}

/// The routes of one kind, by message type: who gets a row for a message.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    by_type: HashMap<String, Vec<Route>>,
}

impl RouteTable {
    /// Indexes `routes` by message type, each type's routes sorted by subscriber (so the
    /// per-message lookup needs no sort).
    #[must_use]
    pub fn new(routes: Vec<Route>) -> Self {
        let mut by_type: HashMap<String, Vec<Route>> = HashMap::new();
        for route in routes {
            by_type
                .entry(route.message_type.clone())
                .or_default()
                .push(route);
        }
        for routes in by_type.values_mut() {
            routes.sort_unstable_by(|a, b| a.subscriber.cmp(&b.subscriber));
        }
        RouteTable { by_type }
    }

    /// Whether any subscription (of any tenant) takes `message_type`.
    #[must_use]
    pub fn has_type(&self, message_type: &str) -> bool {
        self.by_type.contains_key(message_type)
    }

    /// The subscribers that get a row for a message of `message_type` addressed to
    /// `tenant`, sorted, each once.
    #[must_use]
    pub fn subscribers_for(&self, message_type: &str, tenant: &TenantId) -> Vec<String> {
        let mut names: Vec<String> = self
            .by_type
            .get(message_type)
            .map(|routes| {
                routes
                    .iter()
                    .filter(|r| r.tenant.as_ref().is_none_or(|t| t == tenant))
                    .map(|r| r.subscriber.clone())
                    .collect()
            })
            .unwrap_or_default();
        // Sorted already; a subscriber with an every-tenant and a tenant route is listed twice.
        names.dedup();
        names
    }

    /// The message types with a subscription, sorted.
    #[must_use]
    pub fn types(&self) -> Vec<String> {
        let mut types: Vec<String> = self.by_type.keys().cloned().collect();
        types.sort_unstable();
        types
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(message_type: &str, subscriber: &str, tenant: Option<&str>) -> Route {
        Route {
            message_type: message_type.into(),
            subscriber: subscriber.into(),
            tenant: tenant.map(|t| TenantId::new(t).expect("tenant")),
        }
    }

    #[test]
    fn a_route_table_fans_out_by_type_and_tenant() {
        let table = RouteTable::new(vec![
            route("shop.OrderPlaced", "billing", None),
            route("shop.OrderPlaced", "audit", None),
            route("shop.OrderPlaced", "acme-only", Some("acme")),
        ]);
        let acme = TenantId::new("acme").expect("tenant");
        let other = TenantId::new("other").expect("tenant");
        assert_eq!(
            table.subscribers_for("shop.OrderPlaced", &acme),
            vec!["acme-only", "audit", "billing"]
        );
        assert_eq!(
            table.subscribers_for("shop.OrderPlaced", &other),
            vec!["audit", "billing"]
        );
        assert!(table.subscribers_for("shop.Unknown", &other).is_empty());
        assert!(table.has_type("shop.OrderPlaced"));
        assert!(!table.has_type("shop.Unknown"));
        assert_eq!(table.types(), vec!["shop.OrderPlaced"]);
    }

    #[test]
    fn the_heartbeat_fits_the_stuck_threshold() {
        assert_eq!(heartbeat_every(Duration::from_secs(300)), HEARTBEAT);
        assert_eq!(
            heartbeat_every(Duration::from_secs(3)),
            Duration::from_secs(1)
        );
        assert_eq!(
            heartbeat_every(Duration::from_millis(10)),
            SHORTEST_HEARTBEAT
        );
        assert_eq!(live_for(Duration::from_secs(300)), HEARTBEAT * 3);
    }
}

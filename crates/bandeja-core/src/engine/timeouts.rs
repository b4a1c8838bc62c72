//! Per-subscriber time limits: the builder's [`handler_timeout`](crate::BandejaBuilder::handler_timeout)
//! calls and the `handler-timeouts` tables of the inbox groups, checked against the
//! registered subscribers at startup and merged into the configuration the workers read.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::{format_duration, Config, ConfigError};
use crate::error::{BuildError, Result};
use crate::record::BoxKind;
use crate::record::MessageKind;
use crate::registry::Registry;
use crate::store::Store;

const KINDS: [MessageKind; 2] = [MessageKind::Event, MessageKind::Command];

fn invalid(key: String, timeout: Duration, reason: String) -> crate::error::Error {
    ConfigError::invalid_value(key, format_duration(timeout), reason).into()
}

fn listed(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".to_owned();
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

/// Merges the time limits set in code into `config` (a `handler-timeouts` entry of the
/// configuration for the same subscriber takes precedence), then checks that every name
/// is a registered subscriber of its group. Run after [`Config::validate`], which rejects
/// a zero limit in the configuration; a zero limit set in code, or one for a name no
/// handler is registered under, is a [`BuildError`] here.
pub(crate) fn resolve<S: Store>(
    config: &mut Config,
    registry: &Registry<S>,
    from_code: &BTreeMap<String, Duration>,
) -> Result<()> {
    for (subscriber, &timeout) in from_code {
        if timeout.is_zero() {
            return Err(BuildError::zero_handler_timeout(subscriber).into());
        }
        let kinds: Vec<MessageKind> = KINDS
            .into_iter()
            .filter(|kind| {
                registry
                    .subscriber_names(*kind)
                    .contains(&subscriber.as_str())
            })
            .collect();
        if kinds.is_empty() {
            let mut names: Vec<&str> = KINDS
                .into_iter()
                .flat_map(|kind| registry.subscriber_names(kind))
                .collect();
            names.sort_unstable();
            names.dedup();
            return Err(BuildError::unknown_subscriber(subscriber, &names).into());
        }
        for kind in kinds {
            let group = config.group_mut(kind.inbox());
            group
                .handler_timeouts
                .entry(subscriber.clone())
                .or_insert(timeout);
        }
    }
    for kind in KINDS {
        let group: BoxKind = kind.inbox();
        let names = registry.subscriber_names(kind);
        let settings = config.group(group);
        for (subscriber, &timeout) in &settings.handler_timeouts {
            let key = format!("{}.handler-timeouts.{subscriber}", group.key());
            if !names.contains(&subscriber.as_str()) {
                let what = kind.as_str();
                let reason = format!(
                    "no {what} handler is registered under the subscriber name `{subscriber}` in this process (registered: {}): fix the name or remove the entry",
                    listed(&names)
                );
                return Err(invalid(key, timeout, reason));
            }
            if timeout > settings.lock_at_most_for {
                tracing::warn!(
                    key,
                    timeout = %format_duration(timeout),
                    lease = %format_duration(settings.lock_at_most_for),
                    "a handler attempt never runs longer than lock-at-most-for: this time limit is cut to the lease; raise {}.lock-at-most-for to allow it",
                    group.key()
                );
            }
        }
    }
    Ok(())
}

//! Validation of the settings: ranges and relations between keys.

use std::time::Duration;

use super::hints::join;
use super::schema::{keys, tree_of};
use super::tree::Node;
use super::{
    format_duration, parse_duration, BoxKind, Config, ConfigError, WorkerConfig, MAX_BATCH_SIZE,
    MAX_RETRIES_LIMIT,
};

const STALENESS: &str = "staleness";
const TOPICS_KEY: &str = "commands.topics";

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::invalid_value(key, value, reason)
}

impl WorkerConfig {
    /// Checks the ranges and relations of the settings; `group` prefixes the key named
    /// in the error (e.g. `events.outbox` gives `events.outbox.batch-size`).
    pub fn validate(&self, group: &str) -> Result<(), ConfigError> {
        let d = format_duration;
        let positive = || "must be greater than zero".to_owned();
        let at_least = |other: &str, value: Duration| {
            format!(
                "must be at least {other} ({}); raise it or lower {other}",
                d(value)
            )
        };
        let (multiplier, jitter) = (self.retry_backoff_multiplier, self.retry_jitter);
        let checks = [
            (
                (1..=MAX_BATCH_SIZE).contains(&self.batch_size),
                "batch-size",
                self.batch_size.to_string(),
                format!("must be between 1 and {MAX_BATCH_SIZE}"),
            ),
            (
                self.max_retries <= MAX_RETRIES_LIMIT,
                "max-retries",
                self.max_retries.to_string(),
                format!("must be at most {MAX_RETRIES_LIMIT}"),
            ),
            (
                self.max_takeovers <= MAX_RETRIES_LIMIT,
                "max-takeovers",
                self.max_takeovers.to_string(),
                format!("must be at most {MAX_RETRIES_LIMIT}"),
            ),
            (
                !self.polling_interval.is_zero(),
                "polling-interval",
                d(self.polling_interval),
                positive(),
            ),
            (
                !self.lock_at_most_for.is_zero(),
                "lock-at-most-for",
                d(self.lock_at_most_for),
                positive(),
            ),
            (
                self.lock_at_most_for >= self.lock_at_least_for,
                "lock-at-most-for",
                d(self.lock_at_most_for),
                at_least("lock-at-least-for", self.lock_at_least_for),
            ),
            (
                self.retry_backoff_max >= self.retry_backoff_initial,
                "retry-backoff-max",
                d(self.retry_backoff_max),
                at_least("retry-backoff-initial", self.retry_backoff_initial),
            ),
            (
                multiplier.is_finite() && multiplier >= 1.0,
                "retry-backoff-multiplier",
                multiplier.to_string(),
                "must be a finite number of at least 1.0 (1.0 keeps delays constant)".to_owned(),
            ),
            (
                (0.0..=1.0).contains(&jitter),
                "retry-jitter",
                jitter.to_string(),
                "must be between 0.0 and 1.0 (the randomized fraction of each delay)".to_owned(),
            ),
            (
                !self.handler_timeout.is_zero(),
                "handler-timeout",
                d(self.handler_timeout),
                positive(),
            ),
            (
                self.retention.is_none_or(|r| !r.is_zero()),
                "retention",
                self.retention.map(d).unwrap_or_default(),
                "must be greater than zero; write `off` (or leave it out) to keep COMPLETED rows"
                    .to_owned(),
            ),
        ];
        if let Some((_, field, value, reason)) = checks.into_iter().find(|check| !check.0) {
            return Err(invalid(&join(group, field), &value, reason));
        }
        let zero = self.handler_timeouts.iter().find(|(_, t)| t.is_zero());
        if let Some((subscriber, timeout)) = zero {
            let key = join(&join(group, "handler-timeouts"), subscriber);
            return Err(invalid(&key, &d(*timeout), positive()));
        }
        Ok(())
    }
}

impl Config {
    /// Checks every group, `stuck-threshold` and `commands.topics`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_duration_bounds()?;
        for g in BoxKind::ALL {
            self.group(g).validate(g.key())?;
        }
        for g in [BoxKind::OutboxEvents, BoxKind::OutboxCommands] {
            if let Some((subscriber, timeout)) = self.group(g).handler_timeouts.iter().next() {
                return Err(invalid(
                    &join(&join(g.key(), "handler-timeouts"), subscriber),
                    &format_duration(*timeout),
                    "an outbox has no subscribers: set per-subscriber time limits under \
                     `events.inbox` or `commands.inbox` (`handler-timeout` is the outbox's \
                     publish timeout)",
                ));
            }
        }
        if self.stuck_threshold.is_zero() {
            let value = format_duration(self.stuck_threshold);
            return Err(invalid(
                "stuck-threshold",
                &value,
                "must be greater than zero",
            ));
        }
        self.validate_staleness()?;
        for (service, topic) in &self.command_topics {
            if service.trim().is_empty() {
                return Err(invalid(
                    TOPICS_KEY,
                    service,
                    "service names must not be empty",
                ));
            }
            if topic.trim().is_empty() {
                return Err(invalid(
                    &join(TOPICS_KEY, service),
                    topic,
                    "topic names must not be empty",
                ));
            }
        }
        Ok(())
    }
}

impl Config {
    /// `[staleness]`: positive durations; when enabled, `processing` longer than every
    /// `lock-at-most-for` (a claim held that long is taken over by another worker anyway).
    fn validate_staleness(&self) -> Result<(), ConfigError> {
        let s = &self.staleness;
        for (field, value) in [
            ("pending", s.pending),
            ("processing", s.processing),
            ("interval", s.interval),
        ] {
            if value.is_zero() {
                return Err(invalid(
                    &join(STALENESS, field),
                    &format_duration(value),
                    "must be greater than zero",
                ));
            }
        }
        let longest = BoxKind::ALL
            .into_iter()
            .max_by_key(|g| self.group(*g).lock_at_most_for);
        if let Some(group) = longest {
            let lease = self.group(group).lock_at_most_for;
            if s.enabled && s.processing <= lease {
                return Err(invalid(
                    &join(STALENESS, "processing"),
                    &format_duration(s.processing),
                    format!(
                        "must be longer than {}.lock-at-most-for ({}): a healthy handler may \
                         hold its claim that long",
                        group.key(),
                        format_duration(lease)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Longest time any duration key accepts: 100 years. Past it, due times and leases do not
/// fit the stores' timestamps (SQLite computes no time at all, PostgreSQL refuses it).
const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Config {
    /// Every duration key (of every group, `stuck-threshold`, `[staleness]`: the keys that
    /// take a duration) at most [`MAX_DURATION`].
    fn validate_duration_bounds(&self) -> Result<(), ConfigError> {
        let tree = tree_of(self.clone())?;
        for key in keys().iter().filter(|k| k.is_duration()) {
            let Some(Node::Value(toml::Value::String(text))) = tree.get(key.path()) else {
                continue;
            };
            let value = parse_duration(text).unwrap_or_default(); // `off`: none
            if value > MAX_DURATION {
                return Err(invalid(
                    &key.dotted(),
                    &format_duration(value),
                    "must be at most 100 years (P36500D): a longer time does not fit the \
                     stores' timestamps",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigErrorKind;

    /// The key and reason of an `InvalidValue`, or a panic naming what came instead.
    fn rejected(result: Result<(), ConfigError>) -> (String, String) {
        match result {
            Err(e) if e.kind() == ConfigErrorKind::InvalidValue => (
                e.key().unwrap_or_default().to_owned(),
                e.reason().unwrap_or_default().to_owned(),
            ),
            other => panic!("expected InvalidValue, got {other:?}"),
        }
    }

    #[test]
    fn each_worker_rule_names_its_key() {
        let base = WorkerConfig::commands_inbox_defaults;
        let zero = Duration::ZERO;
        let cases = [
            (base().batch_size(0), "batch-size", "between 1 and 10000"),
            (
                base().batch_size(10_001),
                "batch-size",
                "between 1 and 10000",
            ),
            (base().max_retries(1_001), "max-retries", "at most 1000"),
            (
                base().polling_interval(zero),
                "polling-interval",
                "greater than zero",
            ),
            (
                base().lock_at_most_for(zero),
                "lock-at-most-for",
                "greater than zero",
            ),
            (
                base().lock_at_least_for(Duration::from_secs(30)),
                "lock-at-most-for",
                "at least lock-at-least-for (PT30S)",
            ),
            (
                base().retry_backoff_initial(Duration::from_secs(600)),
                "retry-backoff-max",
                "at least retry-backoff-initial (PT10M)",
            ),
            (
                base().retry_backoff_multiplier(0.5),
                "retry-backoff-multiplier",
                "at least 1.0",
            ),
            (
                base().retry_backoff_multiplier(f64::NAN),
                "retry-backoff-multiplier",
                "finite",
            ),
            (
                base().retry_backoff_multiplier(f64::INFINITY),
                "retry-backoff-multiplier",
                "finite",
            ),
            (
                base().retry_jitter(1.5),
                "retry-jitter",
                "between 0.0 and 1.0",
            ),
            (
                base().retry_jitter(-0.1),
                "retry-jitter",
                "between 0.0 and 1.0",
            ),
            (
                base().retry_jitter(f64::NAN),
                "retry-jitter",
                "between 0.0 and 1.0",
            ),
            (
                base().handler_timeout(zero),
                "handler-timeout",
                "greater than zero",
            ),
        ];
        for (config, field, reason_part) in cases {
            let (key, reason) = rejected(config.validate("commands.inbox"));
            assert_eq!(key, format!("commands.inbox.{field}"));
            assert!(reason.contains(reason_part), "{key}: {reason}");
        }
    }

    #[test]
    fn boundaries_are_accepted() {
        let ok = WorkerConfig::events_outbox_defaults()
            .batch_size(1)
            .max_retries(0)
            .polling_initial_delay(Duration::ZERO)
            .lock_at_least_for(Duration::from_secs(30))
            .retry_backoff_initial(Duration::from_secs(300))
            .retry_backoff_multiplier(1.0)
            .retry_jitter(1.0);
        assert_eq!(ok.validate("events.outbox").ok(), Some(()));
        let ok = ok.batch_size(10_000).max_retries(1_000).retry_jitter(0.0);
        assert_eq!(ok.validate("events.outbox").ok(), Some(()));
    }

    #[test]
    fn config_rules_name_their_keys() {
        let mut config = Config::default();
        config.events_inbox.batch_size = 0;
        assert_eq!(rejected(config.validate()).0, "events.inbox.batch-size");

        let config = Config {
            stuck_threshold: Duration::ZERO,
            ..Config::default()
        };
        assert_eq!(rejected(config.validate()).0, "stuck-threshold");

        let config = Config::default().with_command_topic("billing", " ");
        let (key, reason) = rejected(config.validate());
        assert_eq!(
            (key.as_str(), reason.as_str()),
            ("commands.topics.billing", "topic names must not be empty")
        );

        let config = Config::default().with_command_topic("", "topic");
        assert_eq!(
            rejected(config.validate()),
            (
                "commands.topics".to_owned(),
                "service names must not be empty".to_owned()
            )
        );
    }

    #[test]
    fn messages_show_value_key_and_fix() {
        let error = WorkerConfig::events_outbox_defaults()
            .lock_at_most_for(Duration::from_secs(5))
            .validate("events.outbox")
            .err()
            .map(|e| e.to_string());
        let expected = "invalid value `PT5S` for `events.outbox.lock-at-most-for`: must be at \
                        least lock-at-least-for (PT10S); raise it or lower lock-at-least-for";
        assert_eq!(error.as_deref(), Some(expected));
    }

    #[test]
    fn durations_past_a_century_name_their_key() {
        let century = Duration::from_secs(100 * 365 * 24 * 3600);
        let mut config = Config::default();
        config.events_inbox.lock_at_most_for = century;
        config.events_inbox.retention = Some(century);
        assert_eq!(config.validate().ok(), Some(()));
        config.events_inbox.lock_at_most_for = century + Duration::from_secs(1);
        let (key, reason) = rejected(config.validate());
        assert_eq!(key, "events.inbox.lock-at-most-for");
        assert!(reason.contains("at most 100 years"), "{reason}");
        let config = Config {
            stuck_threshold: Duration::MAX,
            ..Config::default()
        };
        assert_eq!(rejected(config.validate()).0, "stuck-threshold");
    }
}

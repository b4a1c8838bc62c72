//! The shop's bandeja configuration: the library's defaults, shop-friendly values set in
//! code, then the configuration file (`--config`, `BANDEJA_CONFIG`) if one is given, then
//! the `BANDEJA_*` environment variables on top (they win); and the options of its admin
//! endpoints ([`admin_options`]).

use std::path::Path;
use std::time::Duration;

use bandeja::config::parse_duration;
use bandeja::{Config, ConfigError};
use bandeja_http::HttpOptions;

/// How much longer than the notification delay an inbox claim holds, so a slow but live
/// handler is not taken over by another worker.
const LEASE_MARGIN: Duration = Duration::from_secs(10);

/// Parses `SHOP_NOTIFICATION_DELAY` / `--notification-delay` (and `SHOP_STEP_DELAY`):
/// `20s`, `500ms`, `PT20S`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

/// The shop's settings before the environment: workers start after 1 s and poll every
/// second (commits wake them at once anyway). With a notification delay, the events
/// inbox lease (`lock-at-most-for`) is the delay plus 10 s and the handler timeout at least
/// that, so the slow handler is neither taken over nor cut while it waits; a step delay
/// (`SHOP_STEP_DELAY`) does the same for the commands inbox, where the saga's steps run.
pub fn shop_defaults(notification_delay: Duration, step_delay: Duration) -> Config {
    let mut config = Config::default();
    for group in [
        &mut config.events_outbox,
        &mut config.events_inbox,
        &mut config.commands_outbox,
        &mut config.commands_inbox,
    ] {
        group.polling_initial_delay = Duration::from_secs(1);
        group.polling_interval = Duration::from_secs(1);
    }
    for (inbox, delay) in [
        (&mut config.events_inbox, notification_delay),
        (&mut config.commands_inbox, step_delay),
    ] {
        if !delay.is_zero() {
            let lease = delay.saturating_add(LEASE_MARGIN);
            inbox.lock_at_most_for = lease;
            inbox.handler_timeout = inbox.handler_timeout.max(inbox.lock_at_most_for);
        }
    }
    config
}

/// [`shop_defaults`] overlaid with the TOML file `file` (if given), then the process's
/// `BANDEJA_*` variables, then validated ([`Config::load_over`]): an unknown key or
/// variable or a bad value is an error naming it (and the file).
pub fn bandeja_config(
    notification_delay: Duration,
    step_delay: Duration,
    file: Option<&Path>,
) -> Result<Config, ConfigError> {
    shop_defaults(notification_delay, step_delay).load_over(file)
}

/// The options of the admin endpoints (`/admin/…`, see the README): the stuck threshold
/// and process liveness window of `config`, the admin `token` (admin actions need it, and
/// so do the message listings), and the FAILED threshold of readiness
/// (`--failed-threshold`, `SHOP_FAILED_THRESHOLD`; `None`: FAILED rows do not change it).
pub fn admin_options(config: &Config, token: &str, failed_threshold: Option<u64>) -> HttpOptions {
    let options = HttpOptions::from_config(config).token(token);
    match failed_threshold {
        Some(threshold) => options.failed_threshold(threshold),
        None => options,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_delay_stretches_the_inbox_lease() {
        let plain = shop_defaults(Duration::ZERO, Duration::ZERO);
        assert_eq!(
            plain.events_inbox.lock_at_most_for,
            Config::default().events_inbox.lock_at_most_for
        );
        assert_eq!(
            plain.events_inbox.polling_initial_delay,
            Duration::from_secs(1)
        );
        let slow = shop_defaults(Duration::from_secs(20), Duration::ZERO);
        assert_eq!(slow.events_inbox.lock_at_most_for, Duration::from_secs(30));
        assert!(slow.events_inbox.handler_timeout >= Duration::from_secs(30));
        assert!(slow.validate().is_ok());
        let slow_steps = shop_defaults(Duration::ZERO, Duration::from_secs(15));
        assert_eq!(
            slow_steps.commands_inbox.lock_at_most_for,
            Duration::from_secs(25)
        );
        assert_eq!(
            slow_steps.events_inbox.lock_at_most_for,
            plain.events_inbox.lock_at_most_for
        );
        assert!(slow_steps.validate().is_ok());
    }
}

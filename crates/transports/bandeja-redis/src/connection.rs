//! Connecting (with a timeout), running one command or pipeline within a timeout, the
//! backoff between reconnection attempts, and the shared connection the publisher and the
//! subscriptions' setup use, replaced after it broke.

use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use bandeja_core::transport::backoff::Backoff;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, Value};

use crate::error::RedisError;
use crate::names::Names;
use crate::options::{redacted, RedisOptions};

/// The validated options with the client, shared by the publisher and subscriptions.
pub(crate) struct Settings {
    pub(crate) options: RedisOptions,
    pub(crate) client: redis::Client,
    /// The server's URL without its password.
    pub(crate) url: String,
    pub(crate) names: Names,
}

impl std::fmt::Debug for Settings {
    // The client holds the password: show the options, whose `Debug` leaves it out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.options.fmt(f)
    }
}

impl Settings {
    /// Checks the options.
    pub(crate) fn new(options: RedisOptions) -> Result<Settings, RedisError> {
        let client = options.validate()?;
        Ok(Settings {
            url: redacted(&client),
            names: Names::new(&options.prefix),
            client,
            options,
        })
    }

    /// Opens a connection, within the connect timeout, named `bandeja:<prefix>:<role>`
    /// (shown by `CLIENT LIST`). Replies have no timeout of their own: every command is
    /// run through [`Settings::run`] or under the caller's deadline, and the blocking read
    /// waits longer than any fixed response timeout would allow.
    pub(crate) async fn connect(&self, role: &str) -> Result<MultiplexedConnection, RedisError> {
        let after = self.options.connect_timeout;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(after))
            .set_response_timeout(None);
        let connecting = self
            .client
            .get_multiplexed_async_connection_with_config(&config);
        let mut connection = match tokio::time::timeout(after, connecting).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(source)) => {
                return Err(RedisError::Connect {
                    url: self.url.clone(),
                    source,
                })
            }
            Err(_) => {
                return Err(RedisError::ConnectTimeout {
                    url: self.url.clone(),
                    after,
                })
            }
        };
        let name = format!("bandeja:{}:{role}", self.options.prefix);
        let mut setname = redis::cmd("CLIENT");
        setname.arg("SETNAME").arg(name);
        self.run(&mut connection, "CLIENT SETNAME", "", &setname)
            .await?;
        Ok(connection)
    }

    /// Runs one command within the connect timeout.
    pub(crate) async fn run(
        &self,
        connection: &mut MultiplexedConnection,
        operation: &str,
        key: &str,
        command: &Cmd,
    ) -> Result<Value, RedisError> {
        let after = self.options.connect_timeout;
        match tokio::time::timeout(after, command.query_async::<Value>(connection)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(RedisError::command(
                format!("{operation} {key}").trim_end().to_owned(),
                key,
                source,
            )),
            Err(_) => Err(RedisError::Timeout {
                operation: format!("{operation} {key}").trim_end().to_owned(),
                after,
            }),
        }
    }
}

/// When the next reconnection attempt may start, after failures.
#[derive(Debug)]
struct Retry {
    backoff: Backoff,
    not_before: Option<(Instant, Arc<RedisError>)>,
}

impl Retry {
    fn new(max: Duration) -> Self {
        Retry {
            backoff: Backoff::new(max),
            not_before: None,
        }
    }

    /// `Err` while the backoff after the last failure runs.
    fn check(&self) -> Result<(), RedisError> {
        match &self.not_before {
            Some((at, last)) => {
                let now = Instant::now();
                if now < *at {
                    Err(RedisError::Reconnecting {
                        retry_in: *at - now,
                        last: last.clone(),
                    })
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    fn failed(&mut self, error: &RedisError) {
        let pause = self.backoff.next();
        self.not_before = Some((Instant::now() + pause, Arc::new(error.clone())));
    }

    fn succeeded(&mut self) {
        self.backoff.reset();
        self.not_before = None;
    }
}

/// A connection shared by its callers (commands are pipelined on it, each caller's in
/// order), replaced on the next use after a caller reported it broken. While the server
/// stays down, attempts are spaced by the backoff and the calls in between fail at once.
#[derive(Debug)]
pub(crate) struct Link {
    settings: Arc<Settings>,
    role: &'static str,
    state: tokio::sync::Mutex<LinkState>,
}

#[derive(Debug)]
struct LinkState {
    current: Option<Lease>,
    generation: u64,
    retry: Retry,
}

/// A connection handed out by a [`Link`], with the generation to report it broken by.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub(crate) connection: MultiplexedConnection,
    generation: u64,
}

impl Link {
    /// A link that connects on first use.
    pub(crate) fn new(settings: Arc<Settings>, role: &'static str) -> Self {
        let retry = Retry::new(settings.options.reconnect_max_backoff);
        Link {
            settings,
            role,
            state: tokio::sync::Mutex::new(LinkState {
                current: None,
                generation: 0,
                retry,
            }),
        }
    }

    /// The current connection, or a new one.
    pub(crate) async fn get(&self) -> Result<Lease, RedisError> {
        let mut state = self.state.lock().await;
        if let Some(lease) = &state.current {
            return Ok(lease.clone());
        }
        state.retry.check()?;
        match self.settings.connect(self.role).await {
            Ok(connection) => {
                state.retry.succeeded();
                state.generation += 1;
                let lease = Lease {
                    connection,
                    generation: state.generation,
                };
                if state.generation > 1 {
                    tracing::info!(role = self.role, "Redis connection open again");
                }
                state.current = Some(lease.clone());
                Ok(lease)
            }
            Err(error) => {
                state.retry.failed(&error);
                Err(error)
            }
        }
    }

    /// Reports `lease` broken: the next [`Link::get`] connects again (unless another
    /// caller did already).
    pub(crate) async fn broken(&self, lease: &Lease) {
        let mut state = self.state.lock().await;
        if state
            .current
            .as_ref()
            .is_some_and(|current| current.generation == lease.generation)
        {
            tracing::warn!(
                role = self.role,
                "the Redis connection broke: the next use reconnects"
            );
            state.current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bandeja_core::transport::backoff::FIRST_BACKOFF;

    #[test]
    fn a_failed_attempt_holds_the_next_one_back() {
        let mut retry = Retry::new(Duration::from_secs(5));
        assert!(retry.check().is_ok());
        retry.failed(&RedisError::InvalidOptions("for the test".into()));
        let held = retry.check().expect_err("within the backoff");
        assert!(
            matches!(held, RedisError::Reconnecting { retry_in, .. } if retry_in <= FIRST_BACKOFF),
            "{held:?}"
        );
        retry.succeeded();
        assert!(retry.check().is_ok());
    }
}

//! Opens the store named by `--database` (SQLite or PostgreSQL) and runs the command on it.
//!
//! The CLI builds its own small pools: it fails fast with the driver's reason when the
//! database is unreachable, never creates a SQLite file except for `migrate`, and never
//! starts the PostgreSQL `NOTIFY` relay, which only workers need.

use std::str::FromStr;
use std::time::Duration;

use bandeja_core::Config;
use bandeja_postgres::PgStore;
use bandeja_sqlite::SqliteStore;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{ConnectOptions, Connection};

use crate::cli::{Cli, Command};
use crate::error::{redact, CliError};
use crate::run::run;

/// Connections the CLI keeps: a command runs one statement at a time; `serve` answers
/// a few requests at once.
const MAX_CONNECTIONS: u32 = 4;

/// Which database a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

fn backend_of(url: &str) -> Result<Backend, CliError> {
    if url.starts_with("sqlite:") {
        Ok(Backend::Sqlite)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Backend::Postgres)
    } else {
        Err(CliError::Usage(format!(
            "unsupported database URL `{}`: use sqlite://path/to/file.db or \
             postgres://user@host/database",
            redact(url)
        )))
    }
}

/// Variables of the `bandeja` command itself, not configuration keys.
const CLI_VARS: [&str; 3] = [
    "BANDEJA_SCHEMA",
    "BANDEJA_ADMIN_TOKEN",
    "BANDEJA_FAILED_THRESHOLD",
];

/// The configuration: the `--config` file (if any), then the `BANDEJA_*` variables (but
/// the command's own), checked at once so that a typo is an error before anything runs.
fn load_config(cli: &Cli) -> Result<Config, CliError> {
    let vars = bandeja_core::config::process_env_vars()?
        .into_iter()
        .filter(|(name, _)| !CLI_VARS.contains(&name.as_str()));
    Ok(Config::default().load_over_with_env(cli.config.as_deref(), vars)?)
}

/// Reads the configuration, opens the database of `cli` and runs its command there.
pub(crate) async fn open_and_run(mut cli: Cli) -> Result<(), CliError> {
    let config = load_config(&cli)?;
    cli.resolve(&config);
    let url = cli.database.clone().ok_or_else(|| {
        CliError::Usage(
            "no database: pass --database URL or set DATABASE_URL \
             (sqlite://path/to/file.db or postgres://user@host/database)"
                .to_owned(),
        )
    })?;
    match backend_of(&url)? {
        Backend::Sqlite => {
            let create = matches!(cli.command, Command::Migrate);
            let store = open_sqlite(&url, create, cli.connect_timeout).await?;
            run(store, cli).await
        }
        Backend::Postgres => {
            let store = open_postgres(&url, &cli.schema, cli.connect_timeout).await?;
            run(store, cli).await
        }
    }
}

/// Opens a SQLite database; the file must exist unless `create` (`migrate`).
async fn open_sqlite(url: &str, create: bool, timeout: Duration) -> Result<SqliteStore, CliError> {
    let connect_error = |reason: String| CliError::Connect {
        url: redact(url),
        reason,
    };
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| connect_error(e.to_string()))?
        .create_if_missing(create)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true);
    let file = options.get_filename();
    let in_memory = url.contains(":memory:") || url.contains("mode=memory");
    if !create && !in_memory && !file.exists() {
        return Err(connect_error(format!(
            "the file {} does not exist (create it with `bandeja migrate`)",
            file.display()
        )));
    }
    let pool = SqlitePoolOptions::new()
        .max_connections(if in_memory { 1 } else { MAX_CONNECTIONS })
        .acquire_timeout(timeout)
        .connect_with(options)
        .await
        .map_err(|e| connect_error(e.to_string()))?;
    Ok(SqliteStore::from_pool(pool))
}

/// Connects to PostgreSQL, boxes in `schema`. One direct connection first, so an
/// unreachable server is reported at once with its reason (a pool would keep retrying a
/// refused connection until its timeout).
async fn open_postgres(url: &str, schema: &str, timeout: Duration) -> Result<PgStore, CliError> {
    let connect_error = |reason: String| CliError::Connect {
        url: redact(url),
        reason,
    };
    check_tls_parameters(url)?;
    let options = PgConnectOptions::from_str(url).map_err(|e| connect_error(e.to_string()))?;
    let probe = tokio::time::timeout(timeout, options.connect())
        .await
        .map_err(|_| connect_error(format!("no answer within {timeout:?}")))?
        .map_err(|e| connect_error(explain_tls_failure(e)))?;
    // The probe only proves the server answers; closing it cleanly is a courtesy.
    let _ = probe.close().await;
    let pool = PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(timeout)
        .connect_with(options)
        .await
        .map_err(|e| connect_error(e.to_string()))?;
    PgStore::from_pool(pool, Some(schema)).map_err(|e| CliError::Usage(e.get_ref().to_string()))
}

/// The TLS parameters of `url`, checked before connecting (a usage error naming the
/// parameter; see [`bandeja_postgres::tls`]).
fn check_tls_parameters(url: &str) -> Result<(), CliError> {
    bandeja_postgres::tls::check_tls_parameters(url)
        .map_err(|e| CliError::Usage(format!("{e} (in {})", redact(url))))
}

/// The reason of a failed connection, with what to do when TLS refused the server's
/// certificate.
fn explain_tls_failure(error: sqlx::Error) -> String {
    let reason = error.to_string();
    match bandeja_postgres::tls::tls_failure_hint(&reason) {
        Some(hint) => format!("{reason}; {hint}"),
        None => reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_backend() {
        assert_eq!(backend_of("sqlite://a.db").ok(), Some(Backend::Sqlite));
        assert_eq!(backend_of("sqlite::memory:").ok(), Some(Backend::Sqlite));
        assert_eq!(backend_of("postgres://u@h/d").ok(), Some(Backend::Postgres));
        assert_eq!(
            backend_of("postgresql://u@h/d").ok(),
            Some(Backend::Postgres)
        );
        let error = backend_of("mysql://u:pw@h/d").expect_err("unsupported");
        assert_eq!(error.exit().code(), 2);
        assert!(!error.to_string().contains("pw"), "{error}");
    }

    #[test]
    fn a_bad_tls_parameter_is_a_usage_error_without_the_password() {
        let error = check_tls_parameters("postgres://u:pw@h/d?sslmode=verify_full")
            .expect_err("not a mode");
        assert_eq!(error.exit().code(), 2);
        let text = error.to_string();
        assert!(
            text.starts_with("sslmode=verify_full: not a TLS mode"),
            "{text}"
        );
        assert!(!text.contains("pw"), "{text}");
        let error = check_tls_parameters("postgres://h/d?sslrootcert=/no/such/ca.pem")
            .expect_err("no such file");
        assert_eq!(error.exit().code(), 2);
    }
}

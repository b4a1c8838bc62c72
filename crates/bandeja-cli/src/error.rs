//! The errors of the `bandeja` command and the exit code each one ends the process with.

use std::io;

use bandeja_core::{StoreError, StoreErrorKind};

/// The exit codes of `bandeja`, as documented in `--help` and the README.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The command did what it was asked (also: nothing matched, nothing to do).
    Ok = 0,
    /// A runtime failure: the database is unreachable, a statement failed, output failed.
    Failure = 1,
    /// A usage error: bad arguments or options (clap's own errors also end with 2).
    Usage = 2,
    /// The message id asked for is in no box.
    NotFound = 3,
    /// A destructive command was not confirmed (the answer was no, or stdin is not a
    /// terminal and `--yes` was not given). Nothing changed.
    Aborted = 4,
    /// `status --check`: more FAILED rows than `--failed-threshold`, and no stuck row.
    FailedRows = 5,
    /// `status --check`: PENDING rows are stuck (FAILED rows may be over the threshold
    /// too; the summary line says).
    StuckRows = 6,
    /// `schema check`: a version changed in a breaking way without a version bump, or a
    /// version of the snapshot is no longer exported.
    SchemaBreaking = 7,
}

impl Exit {
    /// The process exit status.
    pub(crate) fn code(self) -> u8 {
        self as u8
    }
}

/// The text `--help` shows about exit codes.
pub(crate) const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success (also when nothing matched)
  1  runtime or database error (unreachable database, failed statement, migrations missing),
     or refused (subscribers retire while a live process runs the subscriber)
  2  usage error (bad arguments, unknown database URL scheme, invalid schema name,
     serve off loopback without --token, a bad --config file or BANDEJA_* variable,
     a missing or malformed file given to schema check)
  3  not found (no row holds the message id; no subscription has the subscriber)
  4  aborted: a destructive command was not confirmed (answered no, or stdin is not a
     terminal and --yes was not given); nothing changed
  5  status --check: more FAILED rows than --failed-threshold (default 0), none stuck
  6  status --check: stuck rows (PENDING and unchanged for longer than the stuck
     threshold), with or without FAILED rows
  7  schema check: a breaking change without a version bump, or a version of the
     snapshot no longer exported (a missing or malformed schema file is 2)";

/// Why a `bandeja` command failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Bad arguments that clap could not catch.
    #[error("{0}")]
    Usage(String),
    /// The configuration (`--config` file, `BANDEJA_*` variables) is not usable: the
    /// message names the key (and the file).
    #[error("{}", .0.full_message())]
    Config(#[from] bandeja_core::ConfigError),
    /// The database could not be opened.
    #[error("cannot open the database {url}: {reason}")]
    Connect {
        /// The URL, password redacted.
        url: String,
        /// Why.
        reason: String,
    },
    /// A store operation failed.
    #[error("{}", describe_store_error(.0))]
    Store(#[from] StoreError),
    /// Nothing holds what was asked for.
    #[error("{0}")]
    NotFound(String),
    /// The operator did not confirm.
    #[error("{0}")]
    Aborted(String),
    /// The store refused a change in the state it found (a subscription still run by live
    /// processes): nothing changed.
    #[error("{0}")]
    Refused(String),
    /// `status --check` found the boxes unhealthy: the summary line was printed on stdout.
    #[error("status check: {summary}")]
    Unhealthy {
        /// [`Exit::FailedRows`] or [`Exit::StuckRows`].
        exit: Exit,
        /// What was found, in one line.
        summary: String,
    },
    /// A file given to `schema check` cannot be read or is not a schema snapshot.
    #[error("{path}: {reason}")]
    SchemaFile {
        /// The file, as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `schema check` found a breaking change without a version bump (or a dropped
    /// version): the report was printed on stdout.
    #[error("{summary}")]
    SchemaBreaking {
        /// The report's summary line.
        summary: String,
    },
    /// Writing the output or reading the answer failed.
    #[error("input/output error: {0}")]
    Io(#[from] io::Error),
    /// The JSON output could not be produced.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The HTTP server could not start (address in use, non-loopback without a token) or
    /// failed.
    #[error(transparent)]
    Serve(#[from] bandeja_http::ServeError),
}

impl CliError {
    /// The exit code this error ends the process with.
    pub(crate) fn exit(&self) -> Exit {
        match self {
            CliError::Usage(_)
            | CliError::Config(_)
            | CliError::SchemaFile { .. }
            | CliError::Serve(bandeja_http::ServeError::NonLoopbackWithoutToken { .. }) => {
                Exit::Usage
            }
            CliError::NotFound(_) => Exit::NotFound,
            CliError::Aborted(_) => Exit::Aborted,
            CliError::Unhealthy { exit, .. } => *exit,
            CliError::SchemaBreaking { .. } => Exit::SchemaBreaking,
            CliError::Connect { .. }
            | CliError::Refused(_)
            | CliError::Store(_)
            | CliError::Io(_)
            | CliError::Json(_)
            | CliError::Serve(_) => Exit::Failure,
        }
    }

    /// Whether this is a closed stdout (`bandeja messages list | head`): not worth a message.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        match self {
            CliError::Io(e) => e.kind() == io::ErrorKind::BrokenPipe,
            CliError::Json(e) => e.io_error_kind() == Some(io::ErrorKind::BrokenPipe),
            _ => false,
        }
    }
}

/// A store error, with what to do on a second line when the cure is known: for missing
/// tables the command that creates them, otherwise the hint of the error's kind.
fn describe_store_error(error: &StoreError) -> String {
    let missing_table = error.to_string().contains("no such table");
    let hint = if missing_table || error.kind() == StoreErrorKind::Migration {
        Some(
            "the tables are missing or out of date: run `bandeja migrate` (with the same \
             --database and --schema)",
        )
    } else {
        error.hint()
    };
    match hint {
        Some(hint) => format!("{error}\nhint: {hint}"),
        None => error.to_string(),
    }
}

/// `url` with the password of its user part replaced by `***`, for messages.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_and_nothing_else_changes() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/prod?sslmode=require"),
            "postgres://app:***@db:5432/prod?sslmode=require"
        );
        assert_eq!(
            redact("postgres://postgres@127.0.0.1/test"),
            "postgres://postgres@127.0.0.1/test"
        );
        assert_eq!(redact("sqlite://data/app.db"), "sqlite://data/app.db");
        assert_eq!(redact("sqlite::memory:"), "sqlite::memory:");
    }

    #[test]
    fn each_error_has_its_documented_exit_code() {
        assert_eq!(CliError::Usage("x".into()).exit().code(), 2);
        assert_eq!(CliError::NotFound("x".into()).exit().code(), 3);
        assert_eq!(CliError::Aborted("x".into()).exit().code(), 4);
        let summary = "schema check: FAILED".to_owned();
        assert_eq!(CliError::SchemaBreaking { summary }.exit().code(), 7);
        let (path, reason) = ("now.json".to_owned(), "not JSON".to_owned());
        assert_eq!(CliError::SchemaFile { path, reason }.exit().code(), 2);
        for (exit, code) in [(Exit::FailedRows, 5), (Exit::StuckRows, 6)] {
            let summary = "x".to_owned();
            assert_eq!(CliError::Unhealthy { exit, summary }.exit().code(), code);
        }
        let store = StoreError::new(StoreErrorKind::Migration, "count", "no such table");
        let error = CliError::from(store);
        assert_eq!(error.exit().code(), 1);
        assert!(error.to_string().contains("bandeja migrate"), "{error}");
        let busy = StoreError::new(StoreErrorKind::Transient, "claim", "connection refused");
        let text = CliError::from(busy).to_string();
        let (message, hint) = text.split_once('\n').expect("the hint on a second line");
        assert_eq!(message, "claim failed (transient): connection refused");
        assert!(
            hint.starts_with("hint: ") && hint.contains("try again"),
            "{hint}"
        );
        let bad = StoreError::new(StoreErrorKind::Permanent, "decode", "bad row");
        assert!(!CliError::from(bad).to_string().contains('\n'));
    }
}

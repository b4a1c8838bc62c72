//! The one logging set-up of bandeja's binaries (the `bandeja` CLI and `bandeja serve`, the
//! shop, the benchmark, the scale-test binaries), behind the `logging` feature: events go
//! to stderr, as text or as one JSON object per line, filtered by `BANDEJA_LOG`.
//!
//! - `BANDEJA_LOG` ([`FILTER_VAR`]) is a filter in `tracing-subscriber`'s `EnvFilter`
//!   syntax (`info`, `warn,bandeja_core=debug`, `sqlx::query=debug`). Unset or empty:
//!   `RUST_LOG`, else the binary's default ([`Logging::default_filter`]). A value that does
//!   not parse, or a bare word one or two letters away from a level name (`debgu`, `inf`:
//!   `EnvFilter` would read it as a target and silence everything else), is reported once
//!   (a WARN line naming the variable, the value and the error) and [`FALLBACK_FILTER`]
//!   (`info`) is used instead. To name a target that looks like a level, give its level:
//!   `warp=trace`.
//! - `BANDEJA_LOG_FORMAT` ([`FORMAT_VAR`]) is `text` (the default) or `json`; a binary's
//!   `--log-format` flag ([`Logging::format`]) wins over it. Any other value stops the
//!   binary at start ([`LoggingError::Format`]): a log pipeline expecting JSON should not
//!   get text silently.
//!
//! A JSON line holds `timestamp`, `level`, `target`, `message`, the event's fields, and
//! `span` with the fields of the span it happened in (a handling's message id, type,
//! subscriber...); a field a span left unrecorded is not printed at all.
//!
//! ```no_run
//! use bandeja_core::logging::Logging;
//!
//! // First thing in `main`: `warn` unless BANDEJA_LOG (or RUST_LOG) says otherwise.
//! Logging::new().default_filter("warn").init()?;
//! # Ok::<(), bandeja_core::logging::LoggingError>(())
//! ```

mod filter;

use std::fmt;
use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

/// The variable holding the log filter.
pub const FILTER_VAR: &str = "BANDEJA_LOG";
/// The variable holding the log format (`text` or `json`).
pub const FORMAT_VAR: &str = "BANDEJA_LOG_FORMAT";
/// The filter used when [`FILTER_VAR`] holds one that is invalid.
pub const FALLBACK_FILTER: &str = "info";

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines (the default): time, level, spans with their fields, target,
    /// message, fields.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// `text` or `json`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }

    /// The format [`FORMAT_VAR`] asks for; `None` when it is unset or empty.
    pub fn from_env() -> Result<Option<LogFormat>, LoggingError> {
        format_from(std::env::var(FORMAT_VAR).ok())
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A log format name that is neither `text` nor `json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a log format (--log-format, {FORMAT_VAR}): use `text` or `json`")]
pub struct UnknownFormat(String);

impl FromStr for LogFormat {
    type Err = UnknownFormat;

    /// `text` or `json`, in any case, spaces around ignored.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(UnknownFormat(value.to_owned())),
        }
    }
}

/// Why the logging could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoggingError {
    /// [`FORMAT_VAR`] holds something other than `text` or `json`.
    #[error("{FORMAT_VAR}={value:?} is not a log format: set it to `text` or `json`, or unset it")]
    Format {
        /// What the variable held.
        value: String,
    },
    /// A global logger was installed before (the set-up runs once, first thing in `main`).
    #[error("a logger is already installed in this process: set up bandeja's logging once, first thing in main")]
    AlreadyInstalled(#[source] tracing_subscriber::util::TryInitError),
}

fn format_from(value: Option<String>) -> Result<Option<LogFormat>, LoggingError> {
    match value {
        Some(value) if !value.trim().is_empty() => value
            .parse()
            .map(Some)
            .map_err(|_| LoggingError::Format { value }),
        _ => Ok(None),
    }
}

/// The logging set-up of one binary. [`Logging::new`] gives: filter `info` unless the
/// environment sets one, the format of [`FORMAT_VAR`] (text when unset), stderr.
#[derive(Debug, Clone)]
#[must_use = "nothing is logged until `init` is called"]
pub struct Logging {
    default_filter: String,
    format: Option<LogFormat>,
}

impl Default for Logging {
    fn default() -> Self {
        Logging {
            default_filter: FALLBACK_FILTER.to_owned(),
            format: None,
        }
    }
}

impl Logging {
    /// The defaults (see [`Logging`]).
    pub fn new() -> Self {
        Logging::default()
    }

    /// The filter when neither [`FILTER_VAR`] nor `RUST_LOG` is set (`EnvFilter` syntax).
    /// Default: `info`.
    pub fn default_filter(mut self, directives: impl Into<String>) -> Self {
        self.default_filter = directives.into();
        self
    }

    /// The format a command-line flag chose (`--log-format`); `None` leaves it to
    /// [`FORMAT_VAR`]. Default: `None`.
    pub fn format(mut self, format: Option<LogFormat>) -> Self {
        self.format = format;
        self
    }

    /// Installs the process's logger, writing to stderr. An invalid filter is reported
    /// through the logger itself (one WARN line) once it is installed.
    pub fn init(self) -> Result<(), LoggingError> {
        let ansi = std::io::stderr().is_terminal();
        let (dispatch, report) =
            self.build(|name| std::env::var(name).ok(), std::io::stderr, ansi)?;
        // Also routes the records of crates that use `log` into the same stream.
        dispatch
            .try_init()
            .map_err(LoggingError::AlreadyInstalled)?;
        if let Some(report) = report {
            report.log();
        }
        Ok(())
    }

    /// The logger writing to `writer`, reading the variables through `env`, and the
    /// report of an invalid filter (to log once the logger is in place).
    pub(crate) fn build<W>(
        self,
        env: impl Fn(&str) -> Option<String>,
        writer: W,
        ansi: bool,
    ) -> Result<(tracing::Dispatch, Option<filter::Rejected>), LoggingError>
    where
        W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
    {
        let format = match self.format {
            Some(format) => format,
            None => format_from(env(FORMAT_VAR))?.unwrap_or_default(),
        };
        let (filter, report) =
            filter::choose(env(FILTER_VAR), env("RUST_LOG"), &self.default_filter);
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(writer);
        let dispatch = match format {
            LogFormat::Text => tracing::Dispatch::new(builder.with_ansi(ansi).finish()),
            LogFormat::Json => tracing::Dispatch::new(
                builder
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .finish(),
            ),
        };
        Ok((dispatch, report))
    }
}

#[cfg(test)]
mod tests;

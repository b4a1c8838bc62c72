//! The command line: global options, the command tree and each command's arguments (clap).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bandeja_core::admin::listing::Cursor;
use bandeja_core::admin::MessageFilter;
use bandeja_core::{BoxKind, MessageId, MessageStatus};
use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand};

use crate::args;
use crate::error::EXIT_CODES_HELP;

/// The help heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// Operate bandeja's message boxes: counters, failed messages, retries, replays, retention.
#[derive(Debug, Parser)]
#[command(name = "bandeja", version, after_help = EXIT_CODES_HELP)]
pub(crate) struct Cli {
    /// The database: `sqlite://path/to/file.db` or `postgres://user@host/db`.
    #[arg(
        long,
        env = "DATABASE_URL",
        hide_env_values = true,
        global = true,
        value_name = "URL",
        help_heading = GLOBAL
    )]
    pub(crate) database: Option<String>,

    /// PostgreSQL schema holding the boxes.
    #[arg(
        long,
        env = "BANDEJA_SCHEMA",
        global = true,
        default_value = bandeja_postgres::DEFAULT_SCHEMA,
        help_heading = GLOBAL
    )]
    pub(crate) schema: String,

    /// How long to wait for the database to answer when connecting (`10s`, `PT1M`).
    #[arg(
        long,
        global = true,
        default_value = "10s",
        value_name = "DURATION",
        value_parser = args::duration,
        help_heading = GLOBAL
    )]
    pub(crate) connect_timeout: Duration,

    /// The application's bandeja configuration file (TOML, bandeja's or the seed's
    /// `app.*` names). Read and checked at start: an unknown key or a bad value is an
    /// error naming the key and the file. Its `stuck-threshold` is the default of
    /// `--stuck-threshold`. `BANDEJA_*` variables override it, as in the application.
    #[arg(
        long,
        env = "BANDEJA_CONFIG",
        global = true,
        value_name = "FILE",
        help_heading = GLOBAL
    )]
    pub(crate) config: Option<PathBuf>,

    /// Print one JSON document instead of text (every command).
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub(crate) json: bool,

    /// How log lines on stderr are written: `text` or `json` (one object per line). The
    /// filter is `BANDEJA_LOG` (default `warn`, `info` for `serve`).
    #[arg(
        long,
        env = "BANDEJA_LOG_FORMAT",
        global = true,
        value_name = "FORMAT",
        help_heading = GLOBAL
    )]
    pub(crate) log_format: Option<bandeja_core::logging::LogFormat>,

    /// The completion mode of each box, from the configuration (set by [`Cli::resolve`]):
    /// what `replay --outbox` can find.
    #[arg(skip)]
    pub(crate) completion_modes: bandeja_core::config::CompletionModes,

    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Create or upgrade the tables of the four boxes (and their archive tables).
    Migrate,
    /// Counters of the four boxes: pending, processing, failed, stuck, oldest pending,
    /// last processed.
    Status(StatusArgs),
    /// List or inspect messages.
    #[command(subcommand)]
    Messages(MessagesCommand),
    /// Send FAILED rows back to PENDING (due now, retry and takeover counts 0): one
    /// message, or every FAILED row matching the filters with --all-failed.
    Retry(RetryArgs),
    /// Move FAILED rows into the archive tables with who and why (a poison message that
    /// should never run): one message, or every FAILED row matching the filters with
    /// --all-failed. `messages show` and `messages list --archived` still find them.
    Discard(DiscardArgs),
    /// Reprocess COMPLETED inbox rows matching the filters (back to PENDING), e.g. after
    /// fixing a handler bug; with --outbox, send COMPLETED outbox rows again (e.g. to
    /// backfill a new subscriber).
    Replay(ReplayArgs),
    /// Delete COMPLETED rows completed longer ago than --older-than; with --archive, the
    /// rows of the archive tables archived longer ago than that.
    Purge(PurgeArgs),
    /// Move COMPLETED rows completed longer ago than --older-than into `<box>_archive`.
    Archive(RetentionArgs),
    /// Serve the HTTP endpoints (/health, /boxes, /metrics) and the dashboard.
    Serve(ServeArgs),
    /// The subscriptions: who subscribes to what, the live processes that run each one,
    /// its pending and FAILED rows; `subscribers retire` ends one.
    Subscribers(SubscribersArgs),
    /// The payloads' JSON Schemas, as the application exports them: `schema check`
    /// compares versions and a committed snapshot (no database needed).
    #[command(subcommand)]
    Schema(SchemaCommand),
    /// The orchestrated sagas: where each is (`sagas list`), one with its data and history
    /// (`sagas show ID`).
    #[command(subcommand)]
    Sagas(SagasCommand),
}

/// `bandeja status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// One line per box and tenant.
    #[arg(long)]
    pub(crate) by_tenant: bool,
    /// A PENDING row untouched (since its last change) for longer than this counts as
    /// stuck [default: the configuration's `stuck-threshold`, PT5M].
    #[arg(long = "stuck-threshold", value_name = "DURATION", value_parser = args::duration)]
    pub(crate) stuck_threshold_flag: Option<Duration>,
    /// `--stuck-threshold`, or else the configuration's (set by [`Cli::resolve`]).
    #[arg(skip = DEFAULT_STUCK_THRESHOLD)]
    pub(crate) stuck_threshold: Duration,
    /// A monitoring check (cron, Nagios): print one summary line and exit 0 when healthy,
    /// 5 with more FAILED rows than --failed-threshold, 6 with stuck rows (see the exit
    /// codes below).
    #[arg(long, conflicts_with = "by_tenant")]
    pub(crate) check: bool,
    /// With --check: more FAILED rows than this (all boxes together) fail the check.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "check")]
    pub(crate) failed_threshold: u64,
    /// How long after its last heartbeat a process counts as live (set by
    /// [`Cli::resolve`]).
    #[arg(skip = bandeja_core::admin::longest_live_for())]
    pub(crate) live_for: Duration,
}

/// `bandeja messages …`.
#[derive(Debug, Subcommand)]
// Parsed once per run: boxing the listing's arguments would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum MessagesCommand {
    /// The rows matching the filters, newest first.
    List(ListArgs),
    /// Every row holding one message id (its outbox row, its inbox row per subscriber):
    /// payload, headers, attempts, last error.
    Show(ShowArgs),
}

/// Filters shared by `messages list`, `retry` and `replay`.
#[derive(Debug, Clone, Args)]
pub(crate) struct Filters {
    /// Only this box: outbox_events, inbox_events, outbox_commands, inbox_commands.
    #[arg(long = "box", value_name = "BOX")]
    pub(crate) box_kind: Option<BoxKind>,
    /// Only this tenant's rows.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// Only this message type.
    #[arg(long = "type", value_name = "TYPE")]
    pub(crate) message_type: Option<String>,
    /// Only this subscriber's inbox rows.
    #[arg(long)]
    pub(crate) subscriber: Option<String>,
    /// Only rows created at or after this instant: RFC 3339, or a duration ago (`2h`, `PT2H`).
    #[arg(long, value_name = "WHEN", value_parser = args::instant)]
    pub(crate) since: Option<DateTime<Utc>>,
    /// Only rows created before this instant: RFC 3339, or a duration ago (`2h`, `PT2H`).
    #[arg(long, value_name = "WHEN", value_parser = args::instant)]
    pub(crate) until: Option<DateTime<Utc>>,
    /// Only the messages of one flow: rows whose correlation id is this one, in every box
    /// (the first message of a flow gets its own id as correlation id, and every message a
    /// handler emits carries its cause's).
    #[arg(long, value_name = "ID")]
    pub(crate) correlation: Option<String>,
}

impl Filters {
    /// The store filter, with `status` (and `id`) on top.
    pub(crate) fn to_filter(
        &self,
        status: Option<MessageStatus>,
        id: Option<MessageId>,
    ) -> MessageFilter {
        MessageFilter {
            box_kind: self.box_kind,
            status,
            tenant: self.tenant.clone(),
            message_type: self.message_type.clone(),
            subscriber: self.subscriber.clone(),
            since: self.since,
            until: self.until,
            id,
            correlation_id: self.correlation.clone(),
            ..MessageFilter::default()
        }
    }
}

/// `bandeja messages list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only rows in this status: pending, processing, completed, failed.
    #[arg(long, value_parser = args::status)]
    pub(crate) status: Option<MessageStatus>,
    /// The filters.
    #[command(flatten)]
    pub(crate) filters: Filters,
    /// At most this many rows (newest first), up to 9999.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=9_999))]
    pub(crate) limit: u32,
    /// List the archive tables instead of the boxes: archived COMPLETED rows and discarded
    /// FAILED ones (with who and why).
    #[arg(long)]
    pub(crate) archived: bool,
    /// The next, older page: the `o.…` cursor a previous page printed after "older:".
    #[arg(long, value_name = "CURSOR", value_parser = args::older_cursor, conflicts_with = "after")]
    pub(crate) before: Option<Cursor>,
    /// The previous, newer page: the `n.…` cursor a previous page printed after "newer:".
    #[arg(long, value_name = "CURSOR", value_parser = args::newer_cursor)]
    pub(crate) after: Option<Cursor>,
}

/// `bandeja messages show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The message id (a UUID).
    pub(crate) id: MessageId,
}

/// Confirmation options of destructive commands.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct Confirm {
    /// Do it without asking (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Only say how many rows would change.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// `bandeja retry`.
#[derive(Debug, Args)]
pub(crate) struct RetryArgs {
    /// The message to retry (all its FAILED rows, narrowed by --box / --subscriber).
    #[arg(required_unless_present = "all_failed", conflicts_with = "all_failed")]
    pub(crate) id: Option<MessageId>,
    /// Retry every FAILED row matching the filters.
    #[arg(long)]
    pub(crate) all_failed: bool,
    /// The filters.
    #[command(flatten)]
    pub(crate) filters: Filters,
    /// Confirmation.
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

/// `bandeja discard`.
#[derive(Debug, Args)]
pub(crate) struct DiscardArgs {
    /// The message to discard (all its FAILED rows, narrowed by --box / --subscriber).
    #[arg(required_unless_present = "all_failed", conflicts_with = "all_failed")]
    pub(crate) id: Option<MessageId>,
    /// Discard every FAILED row matching the filters.
    #[arg(long)]
    pub(crate) all_failed: bool,
    /// Why (required): recorded on each archived row and shown by `messages show`.
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
    /// Who discards them, recorded on each row [default: $USER@hostname].
    #[arg(long, value_name = "WHO")]
    pub(crate) by: Option<String>,
    /// The filters.
    #[command(flatten)]
    pub(crate) filters: Filters,
    /// Confirmation.
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

/// `bandeja purge`.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// Prune the archive tables instead: delete their rows (archived completions and
    /// discarded rows alike) archived longer ago than --older-than.
    #[arg(long)]
    pub(crate) archive: bool,
    /// The cutoff, box and confirmation.
    #[command(flatten)]
    pub(crate) retention: RetentionArgs,
}

/// `bandeja replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// Send COMPLETED outbox rows again instead of reprocessing inbox rows: they go back to
    /// PENDING and are relayed anew; a subscriber that already has a message absorbs it
    /// (its handler does not run again), one that lacks it gets it. Narrow with --type,
    /// --since/--until (when the message was emitted), --id or --tenant, or pass --all.
    #[arg(long)]
    pub(crate) outbox: bool,
    /// With --outbox: only this message id.
    #[arg(long, value_name = "ID", requires = "outbox")]
    pub(crate) id: Option<MessageId>,
    /// Every COMPLETED inbox row (with --outbox: every COMPLETED outbox row, of --box if
    /// given), even though no filter narrows them: without a filter, replay is refused.
    #[arg(long)]
    pub(crate) all: bool,
    /// The filters (inbox boxes only; with --outbox: outbox boxes, no --subscriber).
    #[command(flatten)]
    pub(crate) filters: Filters,
    /// Confirmation.
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

/// `bandeja purge` and `bandeja archive`.
#[derive(Debug, Args)]
pub(crate) struct RetentionArgs {
    /// Rows completed longer ago than this (`30d`, `P30D`, `12h`).
    #[arg(long, value_name = "DURATION", value_parser = args::duration)]
    pub(crate) older_than: Duration,
    /// Only this box (default: all four).
    #[arg(long = "box", value_name = "BOX")]
    pub(crate) box_kind: Option<BoxKind>,
    /// Confirmation.
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

/// `bandeja serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on. Anything but a loopback address requires --token.
    #[arg(long, default_value_t = bandeja_http::DEFAULT_LISTEN)]
    pub(crate) listen: SocketAddr,
    /// Admin token: the state-changing endpoints always require it (as
    /// `Authorization: Bearer <token>`), the listings too once set. Without one, a token is
    /// generated for this run and printed with the dashboard URL.
    #[arg(long, env = "BANDEJA_ADMIN_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A PENDING row untouched (since its last change) for longer than this makes /health
    /// DOWN [default: the configuration's `stuck-threshold`, PT5M].
    #[arg(long = "stuck-threshold", value_name = "DURATION", value_parser = args::duration)]
    pub(crate) stuck_threshold_flag: Option<Duration>,
    /// `--stuck-threshold`, or else the configuration's (set by [`Cli::resolve`]).
    #[arg(skip = DEFAULT_STUCK_THRESHOLD)]
    pub(crate) stuck_threshold: Duration,
    /// More FAILED rows than this (all boxes together) make /health/ready and /health
    /// DOWN; 0: any FAILED row does [default: FAILED rows never change readiness].
    #[arg(long, value_name = "N", env = "BANDEJA_FAILED_THRESHOLD")]
    pub(crate) failed_threshold: Option<u64>,
}

/// `bandeja sagas …`.
#[derive(Debug, Subcommand)]
pub(crate) enum SagasCommand {
    /// The sagas, newest first: type, status, the step awaited or compensated, attempt,
    /// why it compensated or failed.
    List(SagasListArgs),
    /// One saga: its data, and its history (every command sent, every reply, timeout and
    /// the end).
    Show(SagasShowArgs),
}

/// `bandeja sagas list`.
#[derive(Debug, Args)]
pub(crate) struct SagasListArgs {
    /// Only sagas of this definition (its `Saga::define` name).
    #[arg(long = "type", value_name = "TYPE")]
    pub(crate) saga_type: Option<String>,
    /// Only sagas in this status: running, compensating, completed, compensated, failed.
    #[arg(long, value_parser = args::saga_status)]
    pub(crate) status: Option<bandeja_core::saga::SagaStatus>,
    /// At most this many sagas (newest first), up to 10000.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) limit: u32,
}

/// `bandeja sagas show`.
#[derive(Debug, Args)]
pub(crate) struct SagasShowArgs {
    /// The saga's id (a UUID: `sagas list` shows it; it is also the correlation id of its
    /// messages).
    pub(crate) id: bandeja_core::saga::SagaId,
}

/// `bandeja schema …`.
#[derive(Debug, Subcommand)]
pub(crate) enum SchemaCommand {
    /// Compare the schemas of consecutive versions of each message type, and each version
    /// with a committed snapshot (--against): exit 7 when a version changed in a breaking
    /// way without a version bump, or was dropped. Reads files only: no database.
    Check(SchemaCheckArgs),
}

/// `bandeja schema check`.
#[derive(Debug, Args)]
pub(crate) struct SchemaCheckArgs {
    /// The schemas the application exports now (a `bandeja.schemas/1` JSON file, e.g.
    /// from `shop --export-schemas`).
    #[arg(value_name = "CURRENT")]
    pub(crate) current: PathBuf,
    /// The committed snapshot to compare with (same format): a breaking change to a
    /// version it holds, or a version of it no longer exported, fails the check.
    #[arg(long, value_name = "SNAPSHOT")]
    pub(crate) against: Option<PathBuf>,
}

/// The specification's `stuck-threshold` default, until [`Cli::resolve`] sets the one in
/// force.
const DEFAULT_STUCK_THRESHOLD: Duration = Duration::from_secs(300);

impl Cli {
    /// Takes what the commands use from the configuration (`--config`, `BANDEJA_*`, loaded
    /// as the application loads it) where the command line did not set it: the stuck
    /// threshold (and, for `subscribers`, how long a process counts as live, derived from
    /// it as the processes derive it), and the completion modes of the boxes.
    pub(crate) fn resolve(&mut self, config: &bandeja_core::Config) {
        self.completion_modes = config.completion_modes();
        // A process with this configuration refreshes its registration within this; the
        // `--stuck-threshold` flag only changes what counts as unattended.
        let live_for = bandeja_core::subscriptions::live_for(config.stuck_threshold);
        match &mut self.command {
            Command::Status(args) => args.live_for = live_for,
            Command::Subscribers(args) => args.live_for = live_for,
            _ => {}
        }
        let (flag, threshold) = match &mut self.command {
            Command::Status(args) => (args.stuck_threshold_flag, &mut args.stuck_threshold),
            Command::Serve(args) => (args.stuck_threshold_flag, &mut args.stuck_threshold),
            Command::Subscribers(args) => (args.stuck_threshold_flag, &mut args.stuck_threshold),
            _ => return,
        };
        *threshold = flag.unwrap_or(config.stuck_threshold);
    }
}

/// `bandeja subscribers [retire …]`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct SubscribersArgs {
    /// Retire one.
    #[command(subcommand)]
    pub(crate) command: Option<SubscribersCommand>,
    /// A subscription with pending rows that no live process has run for longer than this
    /// is unattended (what makes /health DOWN) [default: the configuration's
    /// `stuck-threshold`, PT5M].
    #[arg(long = "stuck-threshold", value_name = "DURATION", value_parser = args::duration)]
    pub(crate) stuck_threshold_flag: Option<Duration>,
    /// `--stuck-threshold`, or else the configuration's (set by [`Cli::resolve`]).
    #[arg(skip = DEFAULT_STUCK_THRESHOLD)]
    pub(crate) stuck_threshold: Duration,
    /// How long after its last heartbeat a process counts as live (set by
    /// [`Cli::resolve`]).
    #[arg(skip = bandeja_core::admin::longest_live_for())]
    pub(crate) live_for: Duration,
}

/// `bandeja subscribers …`.
#[derive(Debug, Subcommand)]
pub(crate) enum SubscribersCommand {
    /// End a subscription on purpose: the relay and reception stop creating rows for it,
    /// and its pending rows are discarded (--discard) or kept as FAILED (--keep). Refused
    /// while a live process runs it: stop those first.
    Retire(RetireArgs),
}

/// `bandeja subscribers retire`.
#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("settle")
        .required(true)
        .args(["discard", "keep"])
))]
pub(crate) struct RetireArgs {
    /// The subscriber (every type and tenant filter it subscribes to).
    #[arg(value_name = "NAME")]
    pub(crate) name: String,
    /// Delete its pending rows (PENDING, and PROCESSING whose lease ran out) and its
    /// FAILED rows. Exactly one of --discard and --keep is required.
    #[arg(long)]
    pub(crate) discard: bool,
    /// Mark its pending rows FAILED, kept for inspection: `bandeja retry` sends them back
    /// once a process runs the subscriber again. Exactly one of --discard and --keep is
    /// required.
    #[arg(long)]
    pub(crate) keep: bool,
    /// Only its subscriptions of this kind: events or commands (default: both).
    #[arg(long, value_name = "KIND", value_parser = bandeja_core::admin::parse_kind)]
    pub(crate) kind: Option<bandeja_core::MessageKind>,
    /// Confirmation.
    #[command(flatten)]
    pub(crate) confirm: Confirm,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_stuck_threshold_is_the_flag_or_else_the_configuration() {
        let config = bandeja_core::Config {
            stuck_threshold: Duration::from_secs(420),
            ..bandeja_core::Config::default()
        };
        let threshold = |args: &[&str]| {
            let mut cli = Cli::try_parse_from(args).expect("parses");
            cli.resolve(&config);
            match cli.command {
                Command::Status(a) => a.stuck_threshold,
                Command::Serve(a) => a.stuck_threshold,
                Command::Subscribers(a) => a.stuck_threshold,
                other => panic!("unexpected {other:?}"),
            }
        };
        assert_eq!(threshold(&["bandeja", "status"]), Duration::from_secs(420));
        assert_eq!(
            threshold(&["bandeja", "subscribers"]),
            Duration::from_secs(420)
        );
        assert_eq!(threshold(&["bandeja", "serve"]), Duration::from_secs(420));
        let flag = ["bandeja", "status", "--stuck-threshold", "1m"];
        assert_eq!(threshold(&flag), Duration::from_secs(60));
        let flag = ["bandeja", "serve", "--stuck-threshold", "PT2M"];
        assert_eq!(threshold(&flag), Duration::from_secs(120));
    }

    #[test]
    fn retry_takes_an_id_or_all_failed_but_not_both() {
        let id = MessageId::new().to_string();
        assert!(Cli::try_parse_from(["bandeja", "retry", &id]).is_ok());
        assert!(Cli::try_parse_from(["bandeja", "retry", "--all-failed"]).is_ok());
        assert!(Cli::try_parse_from(["bandeja", "retry"]).is_err());
        assert!(Cli::try_parse_from(["bandeja", "retry", &id, "--all-failed"]).is_err());
    }

    #[test]
    fn replay_takes_id_only_with_outbox_and_all_with_either() {
        let id = MessageId::new().to_string();
        for args in [
            &["bandeja", "replay", "--outbox", "--id", &id][..],
            &["bandeja", "replay", "--outbox", "--all"],
            &[
                "bandeja", "replay", "--outbox", "--type", "t", "--since", "1h",
            ],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?}");
        }
        assert!(Cli::try_parse_from(["bandeja", "replay", "--id", &id]).is_err());
        assert!(Cli::try_parse_from(["bandeja", "replay", "--all"]).is_ok());
    }

    #[test]
    fn discard_takes_an_id_or_all_failed_and_always_a_reason() {
        let id = MessageId::new().to_string();
        let reason = ["--reason", "poison: bad payload"];
        assert!(Cli::try_parse_from([&["bandeja", "discard", &id][..], &reason].concat()).is_ok());
        let all = [&["bandeja", "discard", "--all-failed"][..], &reason].concat();
        assert!(Cli::try_parse_from(all).is_ok());
        let error = Cli::try_parse_from(["bandeja", "discard", &id]).expect_err("no reason");
        assert!(error.to_string().contains("--reason"), "{error}");
        assert!(Cli::try_parse_from([&["bandeja", "discard"][..], &reason].concat()).is_err());
    }

    #[test]
    fn schema_check_takes_a_file_and_an_optional_snapshot() {
        let parse = |argv: &[&str]| match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Schema(SchemaCommand::Check(args))) => Some(args),
            _ => None,
        };
        let args = parse(&["bandeja", "schema", "check", "now.json"]).expect("parses");
        assert_eq!(
            (args.current.to_str(), args.against),
            (Some("now.json"), None)
        );
        let args = parse(&[
            "bandeja",
            "schema",
            "check",
            "a.json",
            "--against",
            "b.json",
        ]);
        assert_eq!(
            args.and_then(|a| a.against).as_deref(),
            Some(std::path::Path::new("b.json"))
        );
        assert!(parse(&["bandeja", "schema", "check"]).is_none());
    }

    #[test]
    fn retire_needs_exactly_one_of_discard_and_keep() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["bandeja", "subscribers", "retire", "billing"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv)
        };
        assert!(parse(&["--discard"]).is_ok());
        assert!(parse(&["--keep", "--kind", "commands"]).is_ok());
        let neither = parse(&[]).expect_err("neither");
        assert!(neither.to_string().contains("--discard"), "{neither}");
        assert!(parse(&["--discard", "--keep"]).is_err());
        assert!(parse(&["--keep", "--kind", "all"]).is_err());
        assert!(Cli::try_parse_from(["bandeja", "subscribers"]).is_ok());
    }
}

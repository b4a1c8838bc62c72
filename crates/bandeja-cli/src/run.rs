//! Runs a parsed command against a store: one generic function for every store that has
//! the [`Admin`] capability, so SQLite and PostgreSQL share every line of the commands.
//! The commands that need no store (`schema check`) run through [`without_store`] before
//! any database is opened.

use bandeja_core::admin::Admin;

use crate::cli::{Cli, Command, MessagesCommand, SagasCommand, SchemaCommand};
use crate::commands::{
    discard, list, migrate, replay, retention, retry, sagas, schema, serve, show, status,
    subscribers,
};
use crate::error::CliError;

/// Runs `cli.command` when it needs no database (`--database` is then not read): `None`
/// for the commands that do.
pub(crate) fn without_store(cli: &Cli) -> Option<Result<(), CliError>> {
    match &cli.command {
        Command::Schema(SchemaCommand::Check(args)) => Some(schema::run(args, cli.json)),
        _ => None,
    }
}

/// Runs `cli.command` against `store`.
pub(crate) async fn run<S: Admin>(store: S, cli: Cli) -> Result<(), CliError> {
    let json = cli.json;
    // As the application's runtime does: the boxes complete as configured, so `replay
    // --outbox` refuses a box in `delete` mode, which keeps nothing to send again.
    let store = store.with_completion(cli.completion_modes)?;
    match cli.command {
        Command::Migrate => migrate::run(&store, json).await,
        Command::Status(args) => status::run(&store, &args, json).await,
        Command::Messages(MessagesCommand::List(args)) => list::run(&store, &args, json).await,
        Command::Messages(MessagesCommand::Show(args)) => show::run(&store, &args, json).await,
        Command::Retry(args) => retry::run(&store, &args, json).await,
        Command::Discard(args) => discard::run(&store, &args, json).await,
        Command::Replay(args) => replay::run(&store, &args, json).await,
        Command::Purge(args) if args.archive => {
            retention::run(
                &store,
                retention::Action::PurgeArchive,
                &args.retention,
                json,
            )
            .await
        }
        Command::Purge(args) => {
            retention::run(&store, retention::Action::Purge, &args.retention, json).await
        }
        Command::Archive(args) => {
            retention::run(&store, retention::Action::Archive, &args, json).await
        }
        Command::Serve(args) => serve::run(store, &args, json).await,
        Command::Subscribers(args) => subscribers::run(&store, &args, json).await,
        Command::Sagas(SagasCommand::List(args)) => sagas::list(&store, &args, json).await,
        Command::Sagas(SagasCommand::Show(args)) => sagas::show(&store, &args, json).await,
        Command::Schema(SchemaCommand::Check(args)) => schema::run(&args, json),
    }
}

//! `saga-node`: one process of the saga crash tests against a PostgreSQL schema, run until
//! it is killed or sent SIGTERM.
//!
//! ```text
//! saga-node --database-url postgres://postgres@127.0.0.1/test --schema s1 --role steps \
//!     [--step-ms 300] [--refuse-every 4] [--worker-id n1]
//! saga-node … --role orchestrator [--start 12]
//! ```
//!
//! `--role orchestrator` runs the [`order_saga`] (its replies and late replies) and, with
//! `--start N`, starts the sagas of orders 1..=N (one transaction each) before printing
//! `ready`. `--role steps` does the steps: each run is recorded in `saga_runs` on a
//! connection of its own, takes `--step-ms` inside the handler's transaction, then writes
//! its effect into `saga_effects` and replies, in that transaction; `reserve` of an order
//! divisible by `--refuse-every` is refused ("out of stock") with no effect. The tables
//! come from [`saga_tables_ddl`](bandeja_scale_tests::saga::saga_tables_ddl). Both roles use
//! the in-process transport: the schema's outbox and inboxes carry the commands.

use std::error::Error;
use std::io::Write;
use std::time::Duration;

use bandeja::postgres::{sqlx, PgStore};
use bandeja::saga::{headers, StepOutcome};
use bandeja::{Bandeja, Command, CommandHandler, HandlerContext, HandlerError};
use bandeja_scale_tests::saga::{order_saga, OrderSaga, StepCommand, UndoCommand};
use bandeja_scale_tests::worker_config;
use clap::{Parser, ValueEnum};
use tokio::signal::unix::{signal, SignalKind};

/// What the process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Role {
    /// Runs the saga: its replies and timeouts.
    Orchestrator,
    /// Does the steps and the compensations.
    Steps,
}

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "saga-node",
    about = "Runs a saga orchestrator or its steps until killed"
)]
struct Args {
    /// `--log-format text|json`.
    #[command(flatten)]
    log: bandeja_scale_tests::LogArgs,
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// Schema holding the boxes, the sagas and the test tables.
    #[arg(long)]
    schema: String,
    /// Orchestrator or steps.
    #[arg(long, value_enum)]
    role: Role,
    /// The worker id.
    #[arg(long)]
    worker_id: Option<String>,
    /// Orchestrator: start the sagas of orders 1..=N.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Steps: how long each step takes, inside its transaction.
    #[arg(long, default_value_t = 300)]
    step_ms: u64,
    /// Steps: refuse the reservation of every order divisible by this (0: never).
    #[arg(long, default_value_t = 0)]
    refuse_every: u64,
}

/// The steps' handler: records the run outside the transaction, waits, writes the effect
/// and the reply inside it.
#[derive(Clone)]
struct Steps {
    schema: String,
    worker: String,
    pause: Duration,
    refuse_every: u64,
    runs: sqlx::PgPool,
}

impl Steps {
    async fn run(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        saga: &str,
        step: &str,
        phase: &str,
        refuse: bool,
    ) -> Result<(), HandlerError> {
        sqlx::query(&format!(
            "INSERT INTO \"{}\".saga_runs (saga_id, step, phase, run_by) VALUES ($1, $2, $3, $4)",
            self.schema
        ))
        .bind(saga)
        .bind(step)
        .bind(phase)
        .bind(&self.worker)
        .execute(&self.runs)
        .await?;
        tokio::time::sleep(self.pause).await;
        if refuse {
            ctx.reply_to_saga(StepOutcome::refused("out of stock"))?;
            return Ok(());
        }
        sqlx::query(&format!(
            "INSERT INTO \"{}\".saga_effects (saga_id, step, phase, applied_by) VALUES ($1, $2, $3, $4)",
            self.schema
        ))
        .bind(saga)
        .bind(step)
        .bind(phase)
        .bind(&self.worker)
        .execute(ctx.conn())
        .await?;
        ctx.reply_to_saga(StepOutcome::done())?;
        Ok(())
    }
}

fn saga_of<T>(command: &Command<T>) -> String {
    command
        .headers
        .extra
        .get(headers::SAGA_ID)
        .cloned()
        .unwrap_or_default()
}

impl CommandHandler<PgStore, StepCommand> for Steps {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        command: Command<StepCommand>,
    ) -> Result<(), HandlerError> {
        let p = &command.payload;
        let refuse = p.step == "reserve"
            && self.refuse_every > 0
            && p.order.is_multiple_of(self.refuse_every);
        self.run(ctx, &saga_of(&command), &p.step, "forward", refuse)
            .await
    }
}

impl CommandHandler<PgStore, UndoCommand> for Steps {
    async fn handle(
        &self,
        ctx: &mut HandlerContext<'_, PgStore>,
        command: Command<UndoCommand>,
    ) -> Result<(), HandlerError> {
        let step = command.payload.step.clone();
        self.run(ctx, &saga_of(&command), &step, "compensation", false)
            .await
    }
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let worker = args
        .worker_id
        .clone()
        .unwrap_or_else(|| format!("saga-{}", std::process::id()));
    let store = PgStore::connect_with_schema(&args.database_url, &args.schema).await?;
    let mut config = worker_config(Duration::from_secs(3));
    for g in [&mut config.commands_inbox, &mut config.commands_outbox] {
        g.lock_at_most_for = Duration::from_secs(3);
        g.lock_at_least_for = g.lock_at_least_for.min(g.lock_at_most_for);
    }
    let saga = order_saga();
    let mut builder = Bandeja::builder(store.clone())
        .config(config)
        .worker_id(worker.clone());
    builder = match args.role {
        Role::Orchestrator => builder.saga(&saga),
        Role::Steps => {
            let steps = Steps {
                schema: args.schema.clone(),
                worker: worker.clone(),
                pause: Duration::from_millis(args.step_ms),
                refuse_every: args.refuse_every,
                runs: sqlx::postgres::PgPoolOptions::new()
                    .max_connections(4)
                    .connect(&args.database_url)
                    .await?,
            };
            builder
                .on_command::<StepCommand, _>("steps", steps.clone())
                .on_command::<UndoCommand, _>("undo", steps)
        }
    };
    let bandeja = builder.build()?;
    let mut terminate = signal(SignalKind::terminate())?;
    let running = bandeja.start().await?;
    for order in 1..=args.start {
        let mut tx = store.pool().begin().await?;
        bandeja
            .start_saga(&mut tx, &saga, &OrderSaga { order })
            .await?;
        tx.commit().await?;
    }
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ready")?;
        stdout.flush()?;
    }
    tokio::select! {
        _ = terminate.recv() => {}
        result = tokio::signal::ctrl_c() => result?,
    }
    running.shutdown().await;
    eprintln!("saga-node {worker}: stopped gracefully");
    Ok(())
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    bandeja_scale_tests::log_to_stderr("error", args.log.log_format);
    if let Err(error) = run(args).await {
        eprintln!("saga-node: {error}");
        std::process::exit(1);
    }
}

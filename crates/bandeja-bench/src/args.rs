//! Command-line flags.

use clap::{Parser, ValueEnum};

/// Which store to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StoreKind {
    /// SQLite file (default: a fresh file in the temp directory).
    Sqlite,
    /// PostgreSQL (default: the local server, a fresh schema per run).
    Postgres,
}

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Mode {
    /// N messages already in the outbox; time until every one is handled.
    Drain,
    /// Emitters commit one message per transaction at a rate, evenly spaced (starting a
    /// second after the workers were started or spawned); commit→handled latency.
    Live,
}

/// Which transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportKind {
    /// The in-process default.
    InProcess,
    /// NATS JetStream: the benchmark's service publishes to the broker and consumes its own
    /// events back (commit → outbox → JetStream → inbox → handler).
    Nats,
    /// RabbitMQ, the same way.
    Amqp,
    /// Redis Streams, the same way.
    Redis,
    /// Kafka, the same way (without `--broker-url`: librdkafka's mock cluster, started in
    /// the benchmark's process, with the topics created at `--partitions`).
    Kafka,
}

impl TransportKind {
    /// The flag value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TransportKind::InProcess => "in-process",
            TransportKind::Nats => "nats",
            TransportKind::Amqp => "amqp",
            TransportKind::Redis => "redis",
            TransportKind::Kafka => "kafka",
        }
    }
}

/// Which handler the benchmark registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HandlerKind {
    /// `batch` with `--handler-ms 0`, `message` otherwise.
    Auto,
    /// A batch handler (`on_event_batch`): the effect rows of all its events in one
    /// statement; with `--handler-ms` it sleeps once per call.
    Batch,
    /// A handler per message (`on_event`): sleeps `--handler-ms`, then writes its effect row.
    Message,
}

impl HandlerKind {
    /// The flag value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            HandlerKind::Auto => "auto",
            HandlerKind::Batch => "batch",
            HandlerKind::Message => "message",
        }
    }
}

/// bandeja's benchmark.
#[derive(Debug, Clone, Parser)]
#[command(name = "bandeja-bench", version, about)]
pub(crate) struct Args {
    /// The store.
    #[arg(long, value_enum, default_value = "sqlite")]
    pub(crate) store: StoreKind,
    /// Database URL (default: a temp SQLite file, or postgres://postgres@127.0.0.1:5432/test).
    #[arg(long)]
    pub(crate) database_url: Option<String>,
    /// PostgreSQL schema to use (default: a fresh one, dropped at the end).
    #[arg(long)]
    pub(crate) schema: Option<String>,
    /// The transport.
    #[arg(long, value_enum, default_value = "in-process")]
    pub(crate) transport: TransportKind,
    /// The broker's address (default: nats://127.0.0.1:4222,
    /// amqp://guest:guest@127.0.0.1:5672/%2f, redis://127.0.0.1:6379, or for Kafka a mock
    /// cluster in this process).
    #[arg(long)]
    pub(crate) broker_url: Option<String>,
    /// Broker names (streams, exchanges, queues) start with this (default: a fresh
    /// `bench<hex>` per run).
    #[arg(long)]
    pub(crate) broker_prefix: Option<String>,
    /// Partitions per address on the broker.
    #[arg(long, default_value_t = 8)]
    pub(crate) partitions: u16,
    /// What to measure.
    #[arg(long, value_enum, default_value = "drain")]
    pub(crate) mode: Mode,
    /// Drain: how many messages.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) messages: u64,
    /// Live: messages per second (one business transaction each).
    #[arg(long, default_value_t = 200)]
    pub(crate) rate: u64,
    /// Live: how long to emit.
    #[arg(long, default_value_t = 20)]
    pub(crate) seconds: u64,
    /// Worker processes draining the same database (1: the benchmark process itself runs
    /// the workers; more: it spawns that many copies of itself, workers only, on the same
    /// database and schema, and only emits and measures).
    #[arg(long, default_value_t = 1)]
    pub(crate) processes: u32,
    /// Batch size of every worker.
    #[arg(long, default_value_t = 500)]
    pub(crate) batch_size: usize,
    /// Handler concurrency: handlers run at once per inbox, per process
    /// (`handler_concurrency` of the builder).
    #[arg(long, default_value_t = 32)]
    pub(crate) concurrency: usize,
    /// Simulated handler time: the handler awaits a sleep of this many milliseconds inside
    /// its transaction, before writing its effect (0: no sleep).
    #[arg(long, default_value_t = 0)]
    pub(crate) handler_ms: u64,
    /// Which handler to register (`auto`: the batch handler with `--handler-ms 0`, a
    /// handler per message otherwise, as a handler doing an SMTP or HTTP call would be).
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) handler: HandlerKind,
    /// Distinct partition keys the messages are spread over.
    #[arg(long, default_value_t = 1000)]
    pub(crate) keys: u64,
    /// How handlers are wrapped in transactions (`auto`: the store decides).
    #[arg(long, default_value = "auto")]
    pub(crate) handler_transaction: String,
    /// COMPLETED rows put into the outbox and the inbox before measuring (history the
    /// claims must not slow down with).
    #[arg(long, default_value_t = 0)]
    pub(crate) history: u64,
    /// Whether the broker prefix was generated for this run (its streams are deleted after
    /// it).
    #[arg(skip)]
    pub(crate) generated_prefix: bool,
    /// Kafka: the consumer's `fetch_wait` in milliseconds, how long the brokers may hold
    /// an idle fetch (default: 5 on the mock cluster, which answers a fetch only when its
    /// wait runs out; the transport's default, 100, on real brokers).
    #[arg(long)]
    pub(crate) kafka_fetch_wait_ms: Option<u64>,
    /// Internal: the Kafka brokers are librdkafka's mock cluster (set when the benchmark
    /// started one; passed to its worker copies), whose topics the benchmark creates.
    #[arg(long, hide = true)]
    pub(crate) kafka_mock: bool,
    /// Internal: run only the workers until killed (used for `--processes`).
    #[arg(long, hide = true)]
    pub(crate) worker_only: bool,
}

impl Args {
    /// The handler `--handler auto` stands for.
    pub(crate) fn handler_kind(&self) -> HandlerKind {
        match self.handler {
            HandlerKind::Auto if self.handler_ms == 0 => HandlerKind::Batch,
            HandlerKind::Auto => HandlerKind::Message,
            kind => kind,
        }
    }
}

//! [`Bandeja`]: the configured messaging runtime of one process (store, configuration,
//! subscribers, transport) and its running workers.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::Config;
use crate::context::Shared;
use crate::emission::Outbox;
use crate::envelope::{Command, Event, Payload};
use crate::error::{BuildError, Error, Result};
use crate::processing::{CommandHandler, EventHandler};
use crate::reception::Reception;
use crate::record::{BoxKind, MessageKind, MessageRecord, DEFAULT_MAX_PAYLOAD_BYTES};
use crate::registry::Registry;
use crate::store::Store;
use crate::tenant::TenantId;
use crate::transport::routing::Routing;
use crate::transport::{SubscribeRequest, Subscription, Transport};

use super::running::Tracker;
pub use super::running::{shutdown_signal, Liveness, Running, StoppedTask, TaskEnd};

/// Builds a [`Bandeja`]: register subscribers, then `build()`.
///
/// ```no_run
/// # async fn demo<S: bandeja_core::Store>(store: S) -> bandeja_core::Result<()> {
/// let bandeja = bandeja_core::Bandeja::builder(store)
///     .config(bandeja_core::Config::load(None)?)
///     .build()?;
/// let running = bandeja.start().await?;
/// running.shutdown().await;
/// # Ok(()) }
/// ```
pub struct BandejaBuilder<S: Store> {
    pub(super) store: S,
    config: Config,
    pub(super) registry: Registry<S>,
    pub(super) errors: Vec<Error>,
    worker_id: Option<String>,
    transport: Option<Arc<dyn Transport>>,
    service: Option<String>,
    handler_concurrency: usize,
    handler_timeouts: std::collections::BTreeMap<String, Duration>,
    max_payload_bytes: usize,
    /// The sagas this runtime orchestrates (`BandejaBuilder::saga`), if any.
    pub(super) sagas: Option<Arc<crate::sagas::orchestrator::SagaBook>>,
    /// Tasks that run beside the workers (the sagas' sweeper of late replies).
    pub(super) background: Vec<Arc<dyn crate::background::Background<S>>>,
}

impl<S: Store> BandejaBuilder<S> {
    /// The name of this service (required with a broker transport): the `source_service`
    /// header of what it publishes, the name its durable consumers and queues take (so its
    /// processes share them), and the key of `commands.topics` its commands arrive on.
    #[must_use]
    pub fn service(mut self, name: impl Into<String>) -> Self {
        self.service = Some(name.into());
        self
    }

    /// The configuration (default: [`Config::default`], the spec's defaults).
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The id written to `locked_by` (default: `<hostname>-<pid>-<random>`).
    #[must_use]
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// How many handlers of one inbox batch run at once (default: 16). Messages with the
    /// same partition key never run at once when ordering is on.
    #[must_use]
    pub fn handler_concurrency(mut self, n: usize) -> Self {
        self.handler_concurrency = n.max(1);
        self
    }

    /// Gives the handler registered under `subscriber` its own time limit for one attempt,
    /// instead of its group's `handler-timeout` (for an event subscriber, `events.inbox`;
    /// for a command handler, `commands.inbox`; both when the name is used for both). An
    /// attempt that runs out of time is a failed attempt like an error: retried with
    /// backoff, FAILED after `max-retries`, its transaction rolled back.
    ///
    /// The limit is capped by the group's `lock-at-most-for` (the lease of a claimed row):
    /// a hung handler never holds its row past its lease, so the row returns to PENDING (or
    /// FAILED) for a healthy attempt instead of waiting for the lease to expire.
    ///
    /// An entry for the same subscriber in the configuration (`handler-timeouts` of the
    /// group) takes precedence, so operators can tune it without a rebuild. `build()` fails
    /// when no handler is registered under `subscriber` or when `timeout` is zero (an
    /// [`Error::Build`] of kind [`UnknownSubscriber`](crate::error::BuildErrorKind::UnknownSubscriber)
    /// or [`HandlerTimeout`](crate::error::BuildErrorKind::HandlerTimeout)).
    #[must_use]
    pub fn handler_timeout(mut self, subscriber: &str, timeout: Duration) -> Self {
        self.handler_timeouts.insert(subscriber.to_owned(), timeout);
        self
    }

    /// The largest serialized payload this runtime emits, in bytes (default 1 MiB,
    /// [`DEFAULT_MAX_PAYLOAD_BYTES`]): through [`Bandeja::outbox`], [`Bandeja::emit`] and
    /// [`Bandeja::send`], and from handlers ([`HandlerContext::emit`](crate::HandlerContext::emit)).
    /// A larger payload is refused with an error naming both sizes, and nothing is written.
    ///
    /// ```no_run
    /// # fn demo<S: bandeja_core::Store>(store: S) -> bandeja_core::Result<()> {
    /// let bandeja = bandeja_core::Bandeja::builder(store).max_payload_bytes(64 * 1024).build()?;
    /// assert_eq!(bandeja.outbox().max_payload_bytes(), 64 * 1024);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn max_payload_bytes(mut self, limit: usize) -> Self {
        self.max_payload_bytes = limit;
        self
    }

    /// A broker transport instead of the in-process default.
    #[must_use]
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Subscribes `handler` to events of type `T` under the name `subscriber`. Each
    /// subscriber of an event gets its own inbox row and retries. A name used twice for the
    /// same type makes `build()` fail.
    #[must_use]
    pub fn on_event<T: Payload, H: EventHandler<S, T>>(
        mut self,
        subscriber: &str,
        handler: H,
    ) -> Self {
        let result = self.registry.add_event::<T, H>(subscriber, None, handler);
        self.registered(result)
    }

    /// Like [`Self::on_event`], but the handler only receives messages of `tenant`.
    #[must_use]
    pub fn on_event_for_tenant<T: Payload, H: EventHandler<S, T>>(
        mut self,
        subscriber: &str,
        tenant: TenantId,
        handler: H,
    ) -> Self {
        let result = self
            .registry
            .add_event::<T, H>(subscriber, Some(tenant), handler);
        self.registered(result)
    }

    /// Subscribes a batch handler ([`EventBatchHandler`](crate::processing::EventBatchHandler))
    /// to events of type `T` under the name `subscriber`: it receives the events of a claimed
    /// batch in one call, so it can write their effects in one statement.
    #[must_use]
    pub fn on_event_batch<T: Payload, H: crate::processing::EventBatchHandler<S, T>>(
        mut self,
        subscriber: &str,
        handler: H,
    ) -> Self {
        let result = self
            .registry
            .add_event_batch::<T, H>(subscriber, None, handler);
        self.registered(result)
    }

    /// Registers the one handler of commands of type `T`, under the name `subscriber`.
    #[must_use]
    pub fn on_command<T: Payload, H: CommandHandler<S, T>>(
        mut self,
        subscriber: &str,
        handler: H,
    ) -> Self {
        let result = self.registry.add_command::<T, H>(subscriber, None, handler);
        self.registered(result)
    }

    /// Keeps a registration error for `build()` to report.
    fn registered(mut self, result: Result<()>) -> Self {
        if let Err(e) = result {
            self.errors.push(e);
        }
        self
    }

    /// Validates the configuration and the subscribers (including the per-subscriber time
    /// limits: each must name a registered subscriber).
    ///
    /// A wiring mistake (a bad subscriber, service or type name, a duplicate subscriber, a
    /// second command handler, a bad `handler_timeout`, a broker transport without a
    /// service name or without a topic for the service's commands) is an
    /// [`Error::Build`]: match on its [`kind`](crate::error::BuildError::kind), show its
    /// [`hint`](crate::error::BuildError::hint). Bad configuration is an [`Error::Config`].
    pub fn build(mut self) -> Result<Bandeja<S>> {
        if !self.errors.is_empty() {
            return Err(self.errors.remove(0));
        }
        self.config.validate()?;
        crate::timeouts::resolve(&mut self.config, &self.registry, &self.handler_timeouts)?;
        // Completion modes are a property of the store handle the workers use.
        let store = self.store.with_completion(self.config.completion_modes())?;
        let worker_id = self.worker_id.unwrap_or_else(default_worker_id);
        let single_writer = store.single_writer();
        let instance = rand::random::<u32>();
        let process = format!("{worker_id}#{instance:08x}");
        let subscriptions = self.registry.subscriptions();
        let claimable = [MessageKind::Event, MessageKind::Command]
            .map(|kind| crate::subscriptions::Claimable::of(kind, &subscriptions));
        let routing = match (&self.transport, self.service) {
            (None, _) => None,
            (Some(transport), None) => {
                return Err(BuildError::missing_service(transport.name()).into())
            }
            (Some(_), Some(service)) => {
                if !crate::names::is_usable_name(&service) {
                    return Err(BuildError::service_name(&service).into());
                }
                let routing = Routing::new(service, self.config.command_topics.clone());
                if self.registry.has(MessageKind::Command) {
                    if let Err(no_route) = routing.own_topic() {
                        return Err(BuildError::missing_route(no_route).into());
                    }
                }
                Some(Arc::new(routing))
            }
        };
        Ok(Bandeja {
            sagas: self.sagas,
            background: self.background,
            shared: Arc::new(Shared {
                store,
                config: self.config,
                registry: Arc::new(self.registry),
                worker_id,
                transport: self.transport,
                handler_concurrency: self.handler_concurrency,
                claims: std::sync::atomic::AtomicU64::new(0),
                instance,
                process,
                subscriptions,
                registered: Arc::default(),
                claimable,
                routing,
                max_payload_bytes: self.max_payload_bytes,
                pace: crate::pace::Pace::default(),
                conflicts: crate::conflicts::Conflicts::default(),
                permits: crate::stragglers::Permits::new(
                    crate::processing::worker::handlers_at_once(
                        single_writer,
                        self.handler_concurrency,
                    ),
                ),
            }),
        })
    }
}

fn default_worker_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!(
        "{host}-{}-{:04x}",
        std::process::id(),
        rand::random::<u16>()
    )
}

/// The messaging runtime of one process.
pub struct Bandeja<S: Store> {
    pub(super) shared: Arc<Shared<S>>,
    /// The sagas it orchestrates (`BandejaBuilder::saga`), if any.
    pub(super) sagas: Option<Arc<crate::sagas::orchestrator::SagaBook>>,
    /// Tasks that run beside the workers, started with them.
    background: Vec<Arc<dyn crate::background::Background<S>>>,
}

impl<S: Store> Clone for Bandeja<S> {
    fn clone(&self) -> Self {
        Bandeja {
            shared: self.shared.clone(),
            sagas: self.sagas.clone(),
            background: self.background.clone(),
        }
    }
}

impl<S: Store> Bandeja<S> {
    /// Starts building a runtime on `store`.
    pub fn builder(store: S) -> BandejaBuilder<S> {
        BandejaBuilder {
            store,
            config: Config::default(),
            registry: Registry::default(),
            errors: Vec::new(),
            worker_id: None,
            transport: None,
            service: None,
            handler_concurrency: 16,
            handler_timeouts: std::collections::BTreeMap::new(),
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            sagas: None,
            background: Vec::new(),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.shared.store
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// This process's worker id.
    pub fn worker_id(&self) -> &str {
        &self.shared.worker_id
    }

    /// Whether the worker of `box_kind` runs, after resolving `auto`.
    pub fn worker_enabled(&self, box_kind: BoxKind) -> bool {
        let registry = &self.shared.registry;
        let config = &self.shared.config;
        let used = match box_kind {
            BoxKind::OutboxEvents => true,
            BoxKind::InboxEvents => registry.has(MessageKind::Event),
            BoxKind::InboxCommands => registry.has(MessageKind::Command),
            BoxKind::OutboxCommands => {
                registry.has(MessageKind::Command) || !config.command_topics.is_empty()
            }
        };
        config.group(box_kind).enabled.resolve(used)
    }

    /// The outbox of this runtime: emit events and send commands through your own
    /// transaction with it, so they commit with your business change. It applies the
    /// runtime's rules (its payload limit, and with a broker its routes: a command to a
    /// service with no topic is refused). Cheap to clone: keep one in your application
    /// state.
    ///
    /// ```no_run
    /// # use bandeja_core::{Bandeja, Event, Payload, Store};
    /// # #[derive(serde::Serialize, serde::Deserialize)]
    /// # struct OrderPlaced { order_id: i64 }
    /// # impl Payload for OrderPlaced { const TYPE: &'static str = "shop.OrderPlaced"; }
    /// # async fn demo<S: Store>(bandeja: Bandeja<S>) -> bandeja_core::Result<()> {
    /// let store = bandeja.store();
    /// let mut tx = store.begin().await?;
    /// // ... your business writes through &mut *tx ...
    /// let event = Event::new("Order", "42", OrderPlaced { order_id: 42 });
    /// bandeja.outbox().emit(&mut *tx, &event).await?;
    /// store.commit(tx).await?; // the event leaves only now, and surely
    /// # Ok(()) }
    /// ```
    pub fn outbox(&self) -> Outbox<S> {
        Outbox::new(
            self.shared.store.clone(),
            self.shared.max_payload_bytes,
            self.shared.routing.clone(),
        )
    }

    /// Emits an event in a transaction of its own (tests, scripts), through
    /// [`Self::outbox`]. Application code emits through its own transaction instead, so
    /// the event commits with the business change.
    pub async fn emit<T: Payload>(&self, event: &Event<T>) -> Result<()> {
        self.outbox()
            .write_alone(MessageKind::Event, MessageRecord::from_event(event)?)
            .await
    }

    /// Sends a command in a transaction of its own (see [`Self::emit`]).
    pub async fn send<T: Payload>(&self, command: &Command<T>) -> Result<()> {
        self.outbox()
            .write_alone(MessageKind::Command, MessageRecord::from_command(command)?)
            .await
    }

    /// Starts the enabled workers (and, with a broker transport, its subscriptions).
    ///
    /// With a broker transport the subscriptions come first: `start` awaits each
    /// [`Transport::subscribe`], which returns once what it consumes is declared on the
    /// broker (RabbitMQ: the queues declared and bound), and only then starts the workers,
    /// the outbox workers among them. So an event this process publishes to its own subscriptions (one already
    /// in the outbox at start, too) always finds its queue: RabbitMQ drops an event no
    /// queue is bound for. A subscription that fails stops the start before anything is
    /// published.
    pub async fn start(&self) -> Result<Running> {
        // Registered before any worker or receiver runs: from now on every relay and every
        // reception fans out to this process's subscriptions too. A database that does not
        // answer yet does not stop the start: the heartbeat registers them as soon as it
        // does (a subscription receives what is relayed from its first registration on).
        let registered = crate::maintenance::heartbeat::register(&self.shared).await;
        if let Err(error) = &registered {
            tracing::warn!(%error, process = %self.shared.process, "registering this process's subscriptions failed: the workers and receivers wait, registering again every second until it works");
        }
        // Before any worker: the dispatcher must not publish before this process's own
        // queues are bound (see above).
        let subscriptions = self.subscribe().await?;
        let (stop, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        // Every task is tracked, so that `Running::liveness` knows when one ends.
        let mut tracker = Tracker::new(&stop_rx);
        for box_kind in BoxKind::ALL {
            let name = format!("{box_kind} worker");
            if !self.worker_enabled(box_kind) {
                tracing::info!(box = %box_kind, "worker disabled by configuration");
            } else if box_kind.is_inbox() {
                let worker = crate::worker::run(
                    self.shared.clone(),
                    box_kind,
                    crate::processing::worker::Processing,
                    stop_rx.clone(),
                );
                tracker.spawn(&mut tasks, name, worker);
            } else {
                let worker = crate::worker::run(
                    self.shared.clone(),
                    box_kind,
                    crate::dispatch::worker::Dispatch,
                    stop_rx.clone(),
                );
                tracker.spawn(&mut tasks, name, worker);
            }
        }
        let mut maintenance = JoinSet::new();
        crate::maintenance::spawn(&self.shared, &mut maintenance, &stop_rx);
        tracker.spawn_group(&mut tasks, "maintenance", maintenance);
        let heartbeat = crate::maintenance::heartbeat::run(
            self.shared.clone(),
            registered.is_ok(),
            stop_rx.clone(),
        );
        tracker.spawn(&mut tasks, "heartbeat", heartbeat);
        for task in &self.background {
            let run = task.clone().run(self.outbox(), stop_rx.clone());
            tracker.spawn(&mut tasks, task.name(), run);
        }
        Ok(Running::new(stop, tasks, subscriptions, tracker.liveness()))
    }

    /// With a broker transport, subscribes to what this process consumes (its events, its
    /// commands): each subscription is set up on the broker when `subscribe` returns. On
    /// failure the subscriptions made so far are stopped.
    async fn subscribe(&self) -> Result<Vec<Box<dyn Subscription>>> {
        let mut subscriptions: Vec<Box<dyn Subscription>> = Vec::new();
        let (Some(transport), Some(routing)) = (&self.shared.transport, &self.shared.routing)
        else {
            return Ok(subscriptions);
        };
        let sink = Arc::new(Reception {
            store: self.shared.store.clone(),
            registered: self.shared.registered.clone(),
            service: routing.service().to_owned(),
            command_topic: routing.own_topic().ok().map(str::to_owned),
        });
        for kind in [MessageKind::Event, MessageKind::Command] {
            if !self.worker_enabled(kind.inbox()) || !self.shared.registry.has(kind) {
                continue;
            }
            let addresses = match kind {
                MessageKind::Event => self.shared.registry.types(kind),
                MessageKind::Command => match routing.own_topic() {
                    Ok(topic) => vec![topic.to_owned()],
                    Err(error) => {
                        stop_all(subscriptions).await;
                        return Err(error.into());
                    }
                },
            };
            let request = SubscribeRequest {
                kind,
                service: routing.service().to_owned(),
                addresses,
                batch_size: self.shared.config.group(kind.inbox()).batch_size,
            };
            match transport.subscribe(request, sink.clone()).await {
                Ok(subscription) => subscriptions.push(subscription),
                Err(error) => {
                    tracing::warn!(transport = transport.name(), ?kind, %error, "subscribing failed: not started");
                    stop_all(subscriptions).await;
                    return Err(error.into());
                }
            }
        }
        Ok(subscriptions)
    }
}

/// Stops the subscriptions of a start that failed.
async fn stop_all(subscriptions: Vec<Box<dyn Subscription>>) {
    for subscription in subscriptions {
        subscription.stop().await;
    }
}

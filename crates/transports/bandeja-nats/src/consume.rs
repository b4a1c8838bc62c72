//! Receiving: one task per partition pulls a batch from the service's durable consumer of
//! that partition, hands the bodies of the subscribed addresses to the inbox sink and
//! acknowledges them only once stored. A partition never stores a later message before an
//! earlier one: a batch that could not be stored is retried, never skipped; a batch is
//! stored only once every older delivery of the partition is ([`crate::order`]); and after
//! a pull that may have lost deliveries, a batch that waited too long for an older one, or
//! empty pulls while deliveries stay outstanding, the consumer is opened again, which
//! rewinds it when its acknowledgement floor does not move ([`crate::consumer`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{pull, PullConsumer};
use async_nats::jetstream::{AckKind, Context, Message};
use bandeja_core::reception::InboxSink;
use bandeja_core::transport::routing::token;
use bandeja_core::MessageKind;
use futures::StreamExt;
use tokio::sync::watch;

use crate::consumer::{Durable, Opened};
use crate::error::NatsError;
use crate::names::address_token;
use crate::order::{self, Delivery, Outstanding, Verdict};

/// The first pause after a failure; it doubles up to the cap.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between two tries: short, so consuming resumes about a second after
/// an outage ends.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// The first pause before pulling a partition again that another process of the service
/// holds (its pull, or its batch in flight), or after a waiting pull the server ended at
/// once with nothing; it doubles up to [`MAX_BUSY_PAUSE`] while that lasts.
const BUSY_PAUSE: Duration = Duration::from_millis(20);
/// The longest such pause: another process's idle pull holds the partition for its whole
/// wait, and asking every 20 ms meanwhile would only load the server.
const MAX_BUSY_PAUSE: Duration = Duration::from_millis(320);
/// How often a consumer reads the service's subscribed addresses again even when every
/// message it receives is wanted (so an address retired stops being stored).
const REFRESH_WANTED: Duration = Duration::from_secs(10);
/// How long past its wait a pull may take before it counts as unanswered: the server
/// answers an expired pull itself, and right after a restart it sometimes answers none
/// (the client would give up only 5 s later).
const NO_ANSWER_MARGIN: Duration = Duration::from_secs(1);
/// How long past its wait a pull that brought messages may stay open before it is cut
/// short (after its last message, if that came later). Under load, JetStream 2.9.10 here
/// leaves a pull open now and then (part of a batch delivered, then neither the rest nor
/// the end of the pull): each such pull held its partition for the whole
/// [`NO_ANSWER_MARGIN`] (for 5 s in a trial with that margin at 5 s), and most drains of
/// 30,000 over 8 partitions met one or more (docs/performance.md, 2026-12-07). The consumer
/// is reopened after a pull cut short, so a delivery that still reached the abandoned pull
/// is found outstanding.
const ENDED_MARGIN: Duration = Duration::from_millis(100);
/// How long a batch's last acknowledgement may take to be confirmed.
const ACK_CONFIRM_WAIT: Duration = Duration::from_secs(2);
/// How often a batch waiting for an older one asks the server again.
const ORDER_POLL: Duration = Duration::from_millis(20);
/// How long a batch waits for an older one before the consumer is rewound: the older one
/// was lost (its process killed, its pull unanswered) and would come back only after
/// `ack_wait`.
const ORDER_STALL: Duration = Duration::from_secs(5);

/// Why a pull brought nothing usable.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("the pull request could not be sent: {0}")]
    Request(#[source] pull::BatchError),
    #[error("the server ended the pull: {0}")]
    Status(#[source] async_nats::Error),
    #[error("the server did not answer the pull in time (restarting, overloaded, or the consumer is gone)")]
    NoAnswer,
    /// Another process of the service holds the partition's one pull request
    /// (`409 Exceeded MaxWaiting`; later servers also say `Exceeded MaxAckPending` when its
    /// in-flight messages fill the consumer, where 2.9 lets the pull wait): nothing is
    /// wrong, the partition is busy.
    #[error("another process holds the partition's messages in flight")]
    Busy,
}

/// When a pull whose wait ends at `expires_at` is given up: [`NO_ANSWER_MARGIN`] past its
/// wait while nothing came; once messages came, [`ENDED_MARGIN`] after the later of its
/// wait's end and the last message, so a pull still streaming its batch past its wait (a
/// slow server, a busy client) is never cut, only one that went quiet without its end.
fn given_up_at(
    expires_at: tokio::time::Instant,
    last_message_at: Option<tokio::time::Instant>,
) -> tokio::time::Instant {
    match last_message_at {
        None => expires_at + NO_ANSWER_MARGIN,
        Some(at) => at.max(expires_at) + ENDED_MARGIN,
    }
}

/// Whether deliveries of the partition's consumer are outstanding (not acknowledged), as
/// the server says now: after a pull of this process that brought nothing, another
/// process holds them (or the server did not confirm this process's own last
/// acknowledgements, which the order check and the idle check then settle). `false` when
/// the server cannot say.
async fn held_elsewhere(consumer: &PullConsumer) -> bool {
    consumer
        .get_info()
        .await
        .is_ok_and(|info| info.num_ack_pending > 0)
}

/// Whether a pull that brought nothing was ended at once by the server because another
/// process of the service holds the partition: a pull that was to wait, answered in under
/// half its wait. A pull without a wait is answered at once whenever the partition holds
/// nothing, and says nothing of other processes.
fn refused_at_once(wait: Option<Duration>, took: Duration) -> bool {
    wait.is_some_and(|wait| took < wait / 2)
}

/// One partition's consumer loop.
pub(crate) struct Partition {
    pub(crate) jetstream: Context,
    pub(crate) stream: async_nats::jetstream::stream::Config,
    pub(crate) config: pull::Config,
    /// The subjects of this partition up to the address (`<prefix>.<kind>.p<N>.`).
    pub(crate) subjects: String,
    /// The address tokens this process subscribed to (its own subscribers' types).
    pub(crate) addresses: Arc<HashSet<String>>,
    /// The address tokens this service consumes as last read from the database (the
    /// subscriptions of every process of the service), always with `addresses`.
    pub(crate) wanted: HashSet<String>,
    /// When `wanted` was last read from the database.
    pub(crate) refreshed_at: Option<Instant>,
    /// After the last delivery this process stored (its acknowledgement confirmed): the
    /// consumer's number for the next delivery, and the stream sequence stored. A batch
    /// that starts with that number is stored without asking the server
    /// ([`order::run_from`]); the stream sequence going up as well is a second check that
    /// the batch continues the same series. Cleared whenever the consumer is opened again.
    pub(crate) resume: Option<Resume>,
    pub(crate) kind: MessageKind,
    pub(crate) batch_size: usize,
    pub(crate) fetch_wait: Duration,
    pub(crate) sink: Arc<dyn InboxSink>,
    pub(crate) stop: watch::Receiver<bool>,
}

impl Partition {
    fn name(&self) -> &str {
        self.config.durable_name.as_deref().unwrap_or("")
    }

    /// Opens the partition's newest consumer generation: creates the first, keeps it, or
    /// rewinds it when deliveries stay outstanding (see [`crate::consumer`]).
    pub(crate) async fn open(&self) -> Result<PullConsumer, NatsError> {
        let durable = Durable {
            jetstream: &self.jetstream,
            stream: &self.stream,
            config: &self.config,
        };
        // Replaced by another process while being opened: the newest is opened (a few
        // times at most; the loop's backoff takes over after that).
        let mut tries = 0;
        let (consumer, opened) = loop {
            match durable.open().await {
                Err(NatsError::Superseded { .. }) if tries < 3 => tries += 1,
                other => break other?,
            }
        };
        if let Opened::Rewound { replaced, from } = opened {
            tracing::warn!(
                consumer = consumer.cached_info().name,
                replaced,
                from_stream_sequence = from,
                "deliveries stayed outstanding with the acknowledgement floor still: replaced the \
                 consumer by one starting from the first message not acknowledged, in order (the \
                 inbox drops the copies)"
            );
        }
        Ok(consumer)
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Waits `pause` unless stopped first; `false` when stopped.
    async fn pause(&mut self, pause: Duration) -> bool {
        if self.stopped() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => !self.stopped(),
            _ = self.stop.changed() => false,
        }
    }

    /// Pulls and stores until stopped; survives outages of any length.
    pub(crate) async fn run(mut self, consumer: PullConsumer) {
        let mut consumer = Some(consumer);
        let mut backoff = Backoff::new(MAX_PAUSE);
        let mut busy = Backoff::starting(BUSY_PAUSE, MAX_BUSY_PAUSE);
        let mut idle = Idle::default();
        let mut backlog = false;
        while !self.stopped() {
            if consumer.is_none() {
                self.resume = None;
                idle = Idle::default();
            }
            let current = match consumer.take() {
                Some(current) => current,
                None => match self.open().await {
                    Ok(current) => current,
                    Err(error) => {
                        tracing::warn!(consumer = self.name(), %error, "opening the consumer again failed: retrying");
                        if !self.pause(backoff.next()).await {
                            return;
                        }
                        continue;
                    }
                },
            };
            // After a pull that brought messages there is likely a backlog: pull without a
            // wait, taking what the partition holds (the server answers `404` at once when
            // it holds nothing, and the next pull waits; it delivers at once what it holds,
            // unless another process's deliveries fill the in-flight limit: then once they
            // are acknowledged, see `held_elsewhere`). A pull with a short wait that
            // found nothing was, under load, now and then never answered by the server when
            // its wait ended (JetStream 2.9.10 here): the partition then stood still for the
            // whole no-answer margin, and most NATS drains of 30,000 met four to six such
            // stalls (docs/performance.md, 2026-12-07, third session).
            let wait = if backlog { None } else { Some(self.fetch_wait) };
            let pulled_at = Instant::now();
            match self.fetch(&current, wait).await {
                Ok(Pulled { messages, .. }) if messages.is_empty() => {
                    backlog = false;
                    backoff.reset();
                    if idle.stuck(&current).await {
                        tracing::warn!(
                            consumer = self.name(),
                            "deliveries stay outstanding with nothing arriving (a process holding \
                             them stopped): opening the consumer again"
                        );
                        continue;
                    }
                    consumer = Some(current);
                    // A waiting pull ended at once (another process's pull is waiting): not
                    // asked again at once. A backlog pull that found nothing is followed at
                    // once by a waiting one.
                    let pause = if refused_at_once(wait, pulled_at.elapsed()) {
                        busy.next()
                    } else {
                        busy.reset();
                        Duration::ZERO
                    };
                    if !pause.is_zero() && !self.pause(pause).await {
                        return;
                    }
                }
                Ok(Pulled {
                    messages,
                    cut_short,
                }) => {
                    backlog = true;
                    backoff.reset();
                    busy.reset();
                    idle = Idle::default();
                    match self.deliver(&current, messages).await {
                        // A pull cut short may have lost deliveries: the consumer is opened
                        // again (rewound if they are outstanding) before the next pull.
                        Flow::Go if !cut_short => consumer = Some(current),
                        Flow::Go | Flow::Reopen => {}
                        Flow::Stopped => return,
                    }
                }
                Err(FetchError::Busy) => {
                    // Several processes of a service share the partition's consumer; the
                    // one holding it is done soon.
                    consumer = Some(current);
                    if !self.pause(busy.next()).await {
                        return;
                    }
                }
                // A pull without a wait is held by the server while deliveries it made
                // elsewhere fill the partition's in-flight limit (another process storing
                // its batch, slower than the margin): nothing failed. The next pull waits,
                // so the server ends it itself.
                Err(FetchError::NoAnswer) if wait.is_none() && held_elsewhere(&current).await => {
                    tracing::debug!(
                        consumer = self.name(),
                        "a pull without a wait found the partition's deliveries in flight elsewhere"
                    );
                    backlog = false;
                    consumer = Some(current);
                    if !self.pause(busy.next()).await {
                        return;
                    }
                }
                Err(error) => {
                    // The handle is dropped: the consumer is opened again before the next
                    // pull, and rewound if the failed pull lost deliveries.
                    tracing::warn!(consumer = self.name(), %error, "pulling failed: retrying");
                    if !self.pause(backoff.next()).await {
                        return;
                    }
                }
            }
        }
    }

    /// One pull: up to a batch, waiting at most `wait` for the first message, or — `None`,
    /// right after a pull that brought messages — only what the partition holds (`404` at
    /// once when it holds nothing; delivered once the in-flight limit allows). Given up after
    /// [`NO_ANSWER_MARGIN`] past its wait without an answer, or once messages came after
    /// [`ENDED_MARGIN`] of quiet past its wait: see [`given_up_at`].
    async fn fetch(
        &self,
        consumer: &PullConsumer,
        wait: Option<Duration>,
    ) -> Result<Pulled, FetchError> {
        let request = consumer.fetch().max_messages(self.batch_size);
        let request = match wait {
            Some(wait) => request.expires(wait),
            None => request,
        };
        let mut batch = request.messages().await.map_err(FetchError::Request)?;
        // Counted from the request sent: the server counts its wait from when it arrives.
        let expires_at = tokio::time::Instant::now() + wait.unwrap_or_default();
        let mut last_message_at = None;
        let mut messages = Vec::new();
        loop {
            let deadline = given_up_at(expires_at, last_message_at);
            let Ok(next) = tokio::time::timeout_at(deadline, batch.next()).await else {
                // The pull is abandoned: anything still delivered to it is lost, which the
                // consumer's reopening finds outstanding.
                if messages.is_empty() {
                    return Err(FetchError::NoAnswer);
                }
                return Ok(Pulled {
                    messages,
                    cut_short: true,
                });
            };
            let Some(item) = next else { break };
            match item {
                Ok(message) => {
                    last_message_at = Some(tokio::time::Instant::now());
                    messages.push(message);
                }
                Err(error) if messages.is_empty() && partition_busy(&*error) => {
                    tracing::trace!(consumer = self.name(), %error, "partition busy");
                    return Err(FetchError::Busy);
                }
                Err(error) if messages.is_empty() => return Err(FetchError::Status(error)),
                // What arrived before the error is a valid delivery: stored in order like
                // any other. What did not arrive is outstanding.
                Err(error) => {
                    tracing::debug!(consumer = self.name(), %error, "pull ended early");
                    return Ok(Pulled {
                        messages,
                        cut_short: true,
                    });
                }
            }
        }
        Ok(Pulled {
            messages,
            cut_short: false,
        })
    }

    /// Stores a pulled batch (in delivery order) once every older delivery of the partition
    /// is stored, part by part ([`order::judge`]), and acknowledges it. A batch that waits
    /// for an older one longer than [`ORDER_STALL`] is handed back (`NAK`) and the consumer
    /// opened again (rewound if its floor stays still): the older one was lost.
    async fn deliver(&mut self, consumer: &PullConsumer, mut messages: Vec<Message>) -> Flow {
        let mut waiting_since: Option<Instant> = None;
        let mut kept_alive_at = Instant::now();
        // Read once from the reply subjects; kept beside `messages` as they are split.
        let mut deliveries: Vec<Delivery> = messages.iter().map(delivery).collect();
        while !messages.is_empty() {
            if let Some(resume) = self.resume {
                if order::run_from(&deliveries, resume.next_delivery) == messages.len()
                    && deliveries[0].stream_sequence > resume.stored_stream_sequence
                {
                    return self.store(messages).await;
                }
            }
            let outstanding = match consumer.get_info().await {
                Ok(info) => Outstanding {
                    pending: info.num_ack_pending,
                    floor: info.ack_floor.consumer_sequence,
                },
                Err(error) => {
                    // Unknown whether an older delivery is outstanding (or the consumer was
                    // replaced by a newer generation): not stored, delivered again by the
                    // consumer opened next.
                    tracing::warn!(consumer = self.name(), %error, "reading the consumer's deliveries failed: opening it again");
                    return Flow::Reopen;
                }
            };
            if let Verdict::Store(ready) = order::judge(&deliveries, outstanding) {
                let ready = ready.min(messages.len());
                let rest = messages.split_off(ready);
                let rest_deliveries = deliveries.split_off(ready);
                // A redelivery can come in the middle of a pull (the server serves its
                // redeliveries first whenever one is due): stored in stream order.
                if !deliveries.is_sorted_by_key(|d| d.stream_sequence) {
                    let mut pairs: Vec<(Delivery, Message)> =
                        deliveries.drain(..).zip(messages.drain(..)).collect();
                    pairs.sort_by_key(|(d, _)| d.stream_sequence);
                    messages = pairs.into_iter().map(|(_, m)| m).collect();
                }
                match self.store(messages).await {
                    Flow::Go => {}
                    other => return other,
                }
                messages = rest;
                deliveries = rest_deliveries;
                waiting_since = None;
                continue;
            }
            let since = *waiting_since.get_or_insert_with(|| {
                tracing::debug!(
                    consumer = self.name(),
                    held = messages.len(),
                    pending = outstanding.pending,
                    "waiting for an older batch of the partition to be stored"
                );
                Instant::now()
            });
            if since.elapsed() >= ORDER_STALL {
                tracing::warn!(
                    consumer = self.name(),
                    held = messages.len(),
                    pending = outstanding.pending,
                    "an older delivery of the partition is outstanding and was not stored in time \
                     (lost with a pull, or held by a process that stopped): reopening the consumer \
                     from the first message not acknowledged"
                );
                // Handed back: delivered again before anything newer if the consumer is kept.
                acknowledge(&messages, AckKind::Nak(None)).await;
                return Flow::Reopen;
            }
            if kept_alive_at.elapsed() >= self.config.ack_wait / 3 {
                // Still this process's: JetStream must not hand them to another meanwhile.
                acknowledge(&messages, AckKind::Progress).await;
                kept_alive_at = Instant::now();
            }
            if !self.pause(ORDER_POLL).await {
                acknowledge(&messages, AckKind::Nak(None)).await;
                return Flow::Stopped;
            }
        }
        Flow::Go
    }

    /// Whether this service consumes the address of a subject.
    fn wanted(&self, message: &Message) -> bool {
        address_token(message.subject.as_str(), &self.subjects)
            .is_some_and(|address| self.wanted.contains(address))
    }

    /// Reads the addresses the service consumes from the database again (through the
    /// sink): another process of the service, of a newer version, may subscribe to types
    /// this one does not. `false` when that could not be read.
    async fn refresh_wanted(&mut self) -> bool {
        match self.sink.addresses(self.kind).await {
            Ok(Some(addresses)) => {
                self.wanted = self.addresses.as_ref().clone();
                self.wanted.extend(addresses.iter().map(|a| token(a)));
                self.refreshed_at = Some(Instant::now());
                true
            }
            Ok(None) => {
                self.refreshed_at = Some(Instant::now());
                true
            }
            Err(error) => {
                tracing::warn!(consumer = self.name(), %error, "reading the service's subscriptions failed");
                false
            }
        }
    }

    /// Stores the wanted messages of a batch (retrying until stored or stopped), then
    /// acknowledges them; acknowledges the others at once. Before it acknowledges a
    /// message it believes is not this service's, and at least every [`REFRESH_WANTED`],
    /// it reads the service's subscriptions again, so a type that another process of the
    /// service subscribed to is stored, never dropped; `Reopen` when they were handed back
    /// instead ([`Flow`]).
    async fn store(&mut self, messages: Vec<Message>) -> Flow {
        let last = messages.last().map(delivery);
        self.resume = None;
        let stale = self
            .refreshed_at
            .is_none_or(|at| at.elapsed() >= REFRESH_WANTED);
        if (stale || !messages.iter().all(|m| self.wanted(m))) && !self.refresh_wanted().await {
            // Unknown whether they are this service's: handed back, and the consumer opened
            // again (rewound) so that they come back before any later message.
            acknowledge(&messages, AckKind::Nak(Some(MAX_PAUSE))).await;
            return if self.pause(MAX_PAUSE).await {
                Flow::Reopen
            } else {
                Flow::Stopped
            };
        }
        let (kept, skipped): (Vec<Message>, Vec<Message>) =
            messages.into_iter().partition(|m| self.wanted(m));
        if !skipped.is_empty() {
            tracing::trace!(
                consumer = self.name(),
                skipped = skipped.len(),
                "acknowledged messages of addresses this service does not consume"
            );
        }
        if kept.is_empty() {
            let confirmed = acknowledge_stored(&skipped).await;
            self.resume = after(last, confirmed);
            return Flow::Go;
        }
        acknowledge(&skipped, AckKind::Ack).await;
        let bodies: Vec<&[u8]> = kept.iter().map(|m| m.payload.as_ref()).collect();
        let mut backoff = Backoff::new(MAX_PAUSE.min(self.config.ack_wait / 2));
        loop {
            match self.sink.accept(self.kind, &bodies).await {
                Ok(report) => {
                    // The skipped ones were acknowledged before: confirmed with these.
                    let confirmed = acknowledge_stored(&kept).await;
                    self.resume = after(last, confirmed);
                    tracing::debug!(
                        consumer = self.name(),
                        received = kept.len(),
                        inserted = report.inserted,
                        duplicates = report.duplicates,
                        "stored and acknowledged"
                    );
                    return Flow::Go;
                }
                Err(error) => {
                    tracing::warn!(consumer = self.name(), messages = kept.len(), %error, "storing received messages failed: retrying the batch");
                    // Still ours: JetStream must not hand them to another process meanwhile.
                    acknowledge(&kept, AckKind::Progress).await;
                    if !self.pause(backoff.next()).await {
                        // Delivered again at once to the service's next process.
                        acknowledge(&kept, AckKind::Nak(None)).await;
                        return Flow::Stopped;
                    }
                }
            }
        }
    }
}

/// Empty pulls in a row: every [`ORDER_STALL`] of them, whether deliveries stay outstanding
/// with the acknowledgement floor where it was (a process that held them stopped; nothing
/// else would bring them back before `ack_wait`).
#[derive(Default)]
struct Idle {
    since: Option<Instant>,
    floor: Option<u64>,
}

impl Idle {
    /// Notes one more empty pull; `true` when the consumer should be opened again.
    async fn stuck(&mut self, consumer: &PullConsumer) -> bool {
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < ORDER_STALL {
            return false;
        }
        self.since = Some(Instant::now());
        let Ok(info) = consumer.get_info().await else {
            return false;
        };
        let floor = (info.num_ack_pending > 0).then_some(info.ack_floor.stream_sequence);
        let stuck = floor.is_some() && floor == self.floor;
        self.floor = floor;
        stuck
    }
}

/// What one pull brought.
struct Pulled {
    /// The messages, in delivery order.
    messages: Vec<Message>,
    /// The pull ended with an error after some messages: later deliveries may be lost.
    cut_short: bool,
}

/// What the partition loop does after a batch.
enum Flow {
    /// Pull again from the same consumer.
    Go,
    /// Open the consumer again before the next pull (rewinding it).
    Reopen,
    /// The subscription is stopping.
    Stopped,
}

/// Where a message stands among the consumer's deliveries.
fn delivery(message: &Message) -> Delivery {
    message.info().map_or(Delivery::UNKNOWN, |info| Delivery {
        consumer_sequence: info.consumer_sequence,
        delivered: info.delivered,
        stream_sequence: info.stream_sequence,
    })
}

/// Whether a pull ended with JetStream's `409 Exceeded MaxAckPending` or
/// `409 Exceeded MaxWaiting` (another process of the service holds the partition): the
/// client reports the status only as text.
fn partition_busy(error: &(dyn std::error::Error + Send + Sync)) -> bool {
    let text = error.to_string().to_ascii_lowercase();
    text.contains("maxackpending") || text.contains("maxwaiting")
}

/// Acknowledges messages (an acknowledgement that does not reach the server only means a
/// redelivery, which the inbox absorbs).
async fn acknowledge(messages: &[Message], kind: AckKind) {
    for message in messages {
        if let Err(error) = message.ack_with(kind).await {
            tracing::debug!(%error, subject = %message.subject, "acknowledgement not sent");
        }
    }
}

/// Acknowledges stored messages and waits (at most [`ACK_CONFIRM_WAIT`]) until the server
/// has applied them: it applies a consumer's acknowledgements in the order they came, so
/// its answer to the last one covers all. The next batch's look at the consumer's
/// deliveries then sees these acknowledged, and does not wait for them.
/// `true` once confirmed.
async fn acknowledge_stored(messages: &[Message]) -> bool {
    let Some((last, others)) = messages.split_last() else {
        return false;
    };
    acknowledge(others, AckKind::Ack).await;
    match tokio::time::timeout(ACK_CONFIRM_WAIT, last.double_ack()).await {
        Ok(Ok(())) => true,
        Ok(Err(error)) => {
            tracing::debug!(%error, subject = %last.subject, "acknowledgement not confirmed");
            false
        }
        Err(_) => {
            tracing::debug!(subject = %last.subject, "acknowledgement not confirmed in time");
            false
        }
    }
}

/// Where the partition stands after this process stored a batch (see [`Partition::resume`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resume {
    next_delivery: u64,
    stored_stream_sequence: u64,
}

/// The [`Resume`] after `last`, the last stored delivery, when its acknowledgement (and
/// so every earlier one) was `confirmed` and it was a first delivery.
fn after(last: Option<Delivery>, confirmed: bool) -> Option<Resume> {
    let last = last?;
    (confirmed && last.delivered == 1 && last.consumer_sequence > 0).then(|| Resume {
        next_delivery: last.consumer_sequence.saturating_add(1),
        stored_stream_sequence: last.stream_sequence,
    })
}

/// Pauses from [`FIRST_PAUSE`] doubling up to a cap.
struct Backoff {
    first: Duration,
    next: Duration,
    max: Duration,
}

impl Backoff {
    fn new(max: Duration) -> Self {
        Backoff::starting(FIRST_PAUSE, max)
    }

    fn starting(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            next: first,
            max: max.max(first),
        }
    }

    fn next(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_is_given_up_only_once_it_went_quiet_past_its_wait() {
        let sent = tokio::time::Instant::now();
        let expires_at = sent + Duration::from_millis(50);
        // Nothing yet: the server's end (or its first message) is awaited a full margin.
        assert_eq!(given_up_at(expires_at, None), expires_at + NO_ANSWER_MARGIN);
        // Messages before the wait ended: given up a short margin past it.
        let early = sent + Duration::from_millis(10);
        assert_eq!(
            given_up_at(expires_at, Some(early)),
            expires_at + ENDED_MARGIN
        );
        // Still streaming well past the wait (a slow server): never cut while it streams.
        let late = expires_at + Duration::from_millis(400);
        assert_eq!(given_up_at(expires_at, Some(late)), late + ENDED_MARGIN);
        assert!(ENDED_MARGIN < NO_ANSWER_MARGIN);
        // A pull without a wait (its wait ends when it is sent): unanswered, given up a full
        // margin after it was sent; once messages came, a short margin after the last.
        assert_eq!(given_up_at(sent, None), sent + NO_ANSWER_MARGIN);
        assert_eq!(given_up_at(sent, Some(early)), early + ENDED_MARGIN);
    }

    #[test]
    fn only_a_waiting_pull_answered_at_once_means_another_process_holds_the_partition() {
        let second = Duration::from_secs(1);
        // A waiting pull ended at once: another process's pull is waiting.
        assert!(refused_at_once(Some(second), Duration::from_millis(3)));
        // A waiting pull that waited out (most of) its wait: the partition is idle.
        assert!(!refused_at_once(Some(second), Duration::from_millis(900)));
        // A pull after a batch does not wait: its empty answer is the partition's state now,
        // followed at once by a waiting pull, never by the busy pause.
        assert!(!refused_at_once(None, Duration::ZERO));
        assert!(!refused_at_once(None, Duration::from_millis(3)));
    }

    #[test]
    fn a_busy_partition_is_told_apart_from_a_failed_pull() {
        // The texts async-nats 0.51 gives a pull ended by a `409` status.
        let status = |what: &str| {
            std::io::Error::other(format!(
                "error while processing messages from the stream: 409, Some({what:?})"
            ))
        };
        assert!(partition_busy(&status("Exceeded MaxAckPending")));
        assert!(partition_busy(&status("Exceeded MaxWaiting")));
        assert!(!partition_busy(&status("Consumer Deleted")));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut backoff = Backoff::new(Duration::from_millis(500));
        let pauses: Vec<u128> = (0..5).map(|_| backoff.next().as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 500, 500]);
        backoff.reset();
        assert_eq!(backoff.next(), FIRST_PAUSE);
        assert_eq!(Backoff::new(Duration::ZERO).next(), FIRST_PAUSE);
    }
}

//! Wiring mistakes are `Error::Build` with a kind a program can match on, a short message
//! and a hint; a subscription the broker refuses at start is `Error::Transport`, with the
//! broker's error kept as the source.

use std::error::Error as _;
use std::sync::Arc;

use bandeja::error::{BuildErrorKind, TransportError, TransportErrorKind};
use bandeja::prelude::*;
use bandeja::sqlite::SqliteStore;
use bandeja::transport::routing::NoRoute;
use bandeja::transport::{InboxSink, Instant, Outgoing, SubscribeRequest, Subscription};
use bandeja::{Error, MessageKind, Transport};
use bandeja_conformance::fixtures::{sqlite_temp, TempDir};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Ship {
    n: u32,
}
impl Payload for Ship {
    const TYPE: &'static str = "wiring.Ship";
}

struct Shipper;
impl<S: Store> CommandHandler<S, Ship> for Shipper {
    async fn handle(
        &self,
        _ctx: &mut HandlerContext<'_, S>,
        _command: Command<Ship>,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// The broker client's own error, which must survive as the source.
#[derive(Debug)]
struct Mismatch;
impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("queue `ship` has 4 partitions, this process wants 8")
    }
}
impl std::error::Error for Mismatch {}

/// A broker that refuses every subscription.
struct Refusing;
#[async_trait::async_trait]
impl Transport for Refusing {
    fn name(&self) -> &str {
        "refusing"
    }

    async fn publish(
        &self,
        _kind: MessageKind,
        messages: &[Outgoing<'_>],
        _deadline: Instant,
    ) -> Vec<Result<(), TransportError>> {
        messages
            .iter()
            .map(|_| Err(TransportError::unavailable(Mismatch)))
            .collect()
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequest,
        _sink: Arc<dyn InboxSink>,
    ) -> Result<Box<dyn Subscription>, TransportError> {
        Err(TransportError::rejected(Mismatch))
    }
}

async fn store() -> (SqliteStore, TempDir) {
    sqlite_temp("bandeja-wiring", SqliteStore::connect).await
}

fn build_error(result: bandeja::Result<Bandeja<SqliteStore>>) -> bandeja::error::BuildError {
    match result.err().expect("refused at build") {
        Error::Build(error) => error,
        other => panic!("expected a build error, got {other:?}"),
    }
}

#[tokio::test]
async fn wiring_mistakes_are_build_errors_with_a_kind_and_a_hint() {
    let (store, _guard) = store().await;
    let transport: Arc<dyn Transport> = Arc::new(Refusing);

    let error = build_error(
        Bandeja::builder(store.clone())
            .transport(transport.clone())
            .build(),
    );
    assert_eq!(error.kind(), BuildErrorKind::MissingService);
    assert!(error.to_string().contains("`refusing`"), "{error}");
    assert!(error.hint().contains(".service("), "{}", error.hint());

    let error = build_error(
        Bandeja::builder(store.clone())
            .transport(transport.clone())
            .service("ship ping")
            .build(),
    );
    assert_eq!(error.kind(), BuildErrorKind::ServiceName);
    assert_eq!(error.service(), Some("ship ping"));

    let error = build_error(
        Bandeja::builder(store.clone())
            .transport(transport.clone())
            .service("shipping")
            .on_command::<Ship, _>("shipper", Shipper)
            .build(),
    );
    assert_eq!(error.kind(), BuildErrorKind::MissingRoute);
    assert_eq!(error.service(), Some("shipping"));
    let no_route = error
        .source()
        .and_then(|s| s.downcast_ref::<NoRoute>())
        .expect("the NoRoute is the source");
    assert_eq!(no_route.service(), "shipping");
    assert!(
        error.hint().contains("[commands.topics]"),
        "{}",
        error.hint()
    );

    let error = build_error(
        Bandeja::builder(store.clone())
            .on_command::<Ship, _>("shipper", Shipper)
            .on_command::<Ship, _>("other", Shipper)
            .build(),
    );
    assert_eq!(error.kind(), BuildErrorKind::SecondCommandHandler);
    assert_eq!(error.subscriber(), Some("other"));
    assert_eq!(error.message_type(), Some("wiring.Ship"));
    assert!(error.to_string().contains("(`shipper`)"), "{error}");
    assert!(error.hint().contains("exactly one handler"));

    let error = build_error(
        Bandeja::builder(store)
            .on_command::<Ship, _>("ship per", Shipper)
            .build(),
    );
    assert_eq!(error.kind(), BuildErrorKind::SubscriberName);
    assert_eq!(error.subscriber(), Some("ship per"));
    assert!(error.hint().contains("1 to 128 characters"));
}

#[tokio::test]
async fn a_refused_subscription_keeps_the_transport_error() {
    let (store, _guard) = store().await;
    let mut config = Config::default();
    config
        .command_topics
        .insert("shipping".into(), "shipping.commands".into());
    let bandeja = Bandeja::builder(store)
        .config(config)
        .transport(Arc::new(Refusing))
        .service("shipping")
        .on_command::<Ship, _>("shipper", Shipper)
        .build()
        .expect("build");
    let error = bandeja.start().await.err().expect("refused at start");
    match &error {
        Error::Transport(e) => assert_eq!(e.kind(), TransportErrorKind::Rejected),
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert!(error.to_string().contains("4 partitions"), "{error}");
    let source = error.source().expect("the broker's error");
    assert!(source.downcast_ref::<Mismatch>().is_some(), "{source}");
}

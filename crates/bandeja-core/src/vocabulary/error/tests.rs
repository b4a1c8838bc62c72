//! Every error keeps its kind behind an accessor, prints it in words and keeps its cause
//! in its source chain.

use std::error::Error as StdError;

use super::*;

#[test]
fn store_and_transport_errors_keep_their_source() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    let store = StoreError::new(StoreErrorKind::Transient, "claim outbox_events", io);
    assert_eq!(store.kind(), StoreErrorKind::Transient);
    assert_eq!(store.operation(), "claim outbox_events");
    assert!(store.get_ref().downcast_ref::<std::io::Error>().is_some());
    assert_eq!(
        store.to_string(),
        "claim outbox_events failed (transient): refused"
    );
    assert!(store.hint().is_some_and(|h| h.contains("try again")));
    let error = Error::from(store);
    let source = StdError::source(&error).expect("the driver's error");
    assert!(source.downcast_ref::<std::io::Error>().is_some());

    let io = std::io::Error::new(std::io::ErrorKind::TimedOut, "no ack");
    let transport = TransportError::unavailable(io);
    assert_eq!(transport.kind(), TransportErrorKind::Unavailable);
    assert_eq!(transport.to_string(), "broker unavailable: no ack");
    let error = Error::from(transport);
    let source = StdError::source(&error).expect("the client's error");
    assert!(source.downcast_ref::<std::io::Error>().is_some());
    match error {
        Error::Transport(e) => {
            assert!(e.into_inner().downcast_ref::<std::io::Error>().is_some());
        }
        other => panic!("a transport error, not {other:?}"),
    }
}

#[test]
fn kinds_print_as_words() {
    let store = [
        StoreErrorKind::Transient,
        StoreErrorKind::Duplicate,
        StoreErrorKind::Permanent,
        StoreErrorKind::Migration,
    ];
    for kind in store {
        assert_eq!(kind.to_string(), format!("{kind:?}").to_lowercase());
    }
    assert_eq!(
        TransportErrorKind::Rejected.to_string(),
        "refused by the broker"
    );
    assert_eq!(FailureKind::Permanent.to_string(), "permanent");
    assert_eq!(FailureKind::Retriable.to_string(), "retriable");
}

#[test]
fn handler_errors_keep_their_kind_and_source() {
    let error = HandlerError::permanent(std::io::Error::other("card declined"));
    assert_eq!(error.kind(), FailureKind::Permanent);
    assert!(error.get_ref().downcast_ref::<std::io::Error>().is_some());
    assert_eq!(error.to_string(), "card declined");
    let error: HandlerError = std::io::Error::other("later").into();
    assert_eq!(error.kind(), FailureKind::Retriable);
}

#[test]
fn no_route_names_the_service_and_the_key_to_add() {
    let error = NoRoute::new("billing");
    assert_eq!(error.service(), "billing");
    assert_eq!(
        error.to_string(),
        "no route for commands to service `billing`"
    );
    assert!(error.hint().contains("[commands.topics] billing"));
}

//! Every error says what is wrong in one short sentence, keeps what to do in its hint and
//! its cause in its source chain.

use std::error::Error as StdError;

use super::*;
use crate::envelope::MessageId;

/// Longest `Display` of an error built from ordinary names.
const SHORT: usize = 120;

fn assert_short(text: &str) {
    assert!(text.len() < SHORT, "{} characters: {text}", text.len());
    assert!(!text.contains('\n'), "one line: {text}");
    assert!(!text.is_empty());
}

/// One error of each kind (the match has no wildcard: a new kind needs its example).
fn build_error(kind: BuildErrorKind) -> BuildError {
    match kind {
        BuildErrorKind::SubscriberName => BuildError::subscriber_name("bill ing", "shop.Paid"),
        BuildErrorKind::ServiceName => BuildError::service_name("or der"),
        BuildErrorKind::MessageType => BuildError::invalid_message_type("", "audit"),
        BuildErrorKind::DuplicateSubscriber => {
            BuildError::duplicate_subscriber("shop.Paid", "billing")
        }
        BuildErrorKind::SecondCommandHandler => {
            BuildError::second_command_handler("shop.Ship", "shipping", "dispatch")
        }
        BuildErrorKind::MissingService => BuildError::missing_service("nats"),
        BuildErrorKind::MissingRoute => BuildError::missing_route(NoRoute::new("billing")),
        BuildErrorKind::HandlerTimeout => BuildError::zero_handler_timeout("billing"),
        BuildErrorKind::UnknownSubscriber => {
            BuildError::unknown_subscriber("ghost", &["billing", "audit"])
        }
        BuildErrorKind::Saga => {
            BuildError::saga("order", "two steps are named `charge`".to_owned())
        }
        BuildErrorKind::Upcaster => BuildError::upcaster(
            "shop.Paid",
            "`shop.Paid` has two upcasters from version 1".to_owned(),
        ),
    }
}

const BUILD_KINDS: [BuildErrorKind; 11] = [
    BuildErrorKind::SubscriberName,
    BuildErrorKind::ServiceName,
    BuildErrorKind::MessageType,
    BuildErrorKind::DuplicateSubscriber,
    BuildErrorKind::SecondCommandHandler,
    BuildErrorKind::MissingService,
    BuildErrorKind::MissingRoute,
    BuildErrorKind::HandlerTimeout,
    BuildErrorKind::UnknownSubscriber,
    BuildErrorKind::Upcaster,
    BuildErrorKind::Saga,
];

fn message_error(kind: MessageErrorKind, id: MessageId) -> MessageError {
    let t = "shop.OrderPlaced";
    match kind {
        MessageErrorKind::InvalidType => MessageError::invalid_type(id, "order placed"),
        MessageErrorKind::MissingAggregateId => MessageError::missing_aggregate_id(id, t),
        MessageErrorKind::MissingTargetService => MessageError::missing_target_service(id, t),
        MessageErrorKind::InvalidTargetService => {
            MessageError::invalid_target_service(id, t, "bill ing")
        }
        MessageErrorKind::TooLarge => MessageError::too_large(id, t, 2_000_000, 1_048_576),
        MessageErrorKind::NulCharacter => MessageError::nul_character(id, t, "the aggregate id"),
        MessageErrorKind::RepeatedId => MessageError::repeated_id(id, t),
    }
}

const MESSAGE_KINDS: [MessageErrorKind; 7] = [
    MessageErrorKind::InvalidType,
    MessageErrorKind::MissingAggregateId,
    MessageErrorKind::MissingTargetService,
    MessageErrorKind::InvalidTargetService,
    MessageErrorKind::TooLarge,
    MessageErrorKind::NulCharacter,
    MessageErrorKind::RepeatedId,
];

#[test]
fn build_errors_are_short_with_a_hint_and_a_kind_in_words() {
    for kind in BUILD_KINDS {
        let error = build_error(kind);
        assert_eq!(error.kind(), kind);
        assert_short(&error.to_string());
        assert!(error.hint().len() > 10, "{kind:?} has a hint");
        let words = kind.to_string();
        assert_ne!(words, format!("{kind:?}"), "Display is not Debug");
        assert_eq!(words, words.to_lowercase(), "{words}");
        let wrapped = Error::from(error);
        assert_eq!(wrapped.hint().as_deref(), Some(kind.hint()));
        assert_short(&wrapped.to_string());
    }
}

#[test]
fn build_errors_name_what_they_are_about() {
    let error = build_error(BuildErrorKind::DuplicateSubscriber);
    assert_eq!(error.subscriber(), Some("billing"));
    assert_eq!(error.message_type(), Some("shop.Paid"));
    assert_eq!(error.service(), None);
    let error = build_error(BuildErrorKind::SecondCommandHandler);
    assert_eq!(error.subscriber(), Some("shipping"));
    assert!(error.to_string().contains("`dispatch`"), "{error}");
    let error = build_error(BuildErrorKind::UnknownSubscriber);
    assert!(
        error
            .to_string()
            .contains("(registered: `billing`, `audit`)"),
        "{error}"
    );
    let many: Vec<String> = (0..40).map(|i| format!("subscriber-{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let error = BuildError::unknown_subscriber("ghost", &many);
    assert!(error.to_string().ends_with(", 35 more)"), "{error}");
    assert!(error.to_string().len() < 200, "{error}");
}

#[test]
fn message_errors_are_short_with_a_hint_and_say_which_message() {
    for kind in MESSAGE_KINDS {
        let id = MessageId::new();
        let error = message_error(kind, id);
        assert_eq!(error.kind(), kind);
        assert_eq!(error.id(), id);
        assert!(!error.message_type().is_empty());
        // A UUID is 36 characters: the limit leaves room for it.
        assert_short(&error.to_string());
        assert!(error.hint().len() > 10, "{kind:?} has a hint");
        let words = kind.to_string();
        assert_ne!(words, format!("{kind:?}"), "Display is not Debug");
        let wrapped = Error::from(error.clone());
        assert!(matches!(&wrapped, Error::Message(e) if *e == error));
        assert_eq!(wrapped.hint().as_deref(), Some(kind.hint()));
    }
}

#[test]
fn long_or_strange_names_stay_on_one_short_line() {
    let error = MessageError::invalid_type(MessageId::new(), &"x".repeat(300));
    assert_short(&error.to_string());
    assert_eq!(
        error.message_type().len(),
        300,
        "the accessor keeps the name"
    );
    let error = BuildError::subscriber_name("a\nb", "t");
    assert!(error.to_string().contains("a\\nb"), "{error}");
    assert_short(&error.to_string());
}

#[test]
fn a_missing_route_keeps_the_no_route_as_its_source() {
    let error = Error::from(BuildError::missing_route(NoRoute::new("billing")));
    let source = StdError::source(&error).expect("a source");
    let no_route = source.downcast_ref::<NoRoute>().expect("the NoRoute");
    assert_eq!(no_route.service(), "billing");
    assert!(no_route.hint().contains("[commands.topics] billing"));
    assert_short(&no_route.to_string());
}

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
    let error = Error::from(store);
    let source = StdError::source(&error).expect("the driver's error");
    assert!(source.downcast_ref::<std::io::Error>().is_some());
    assert!(error.hint().is_some_and(|h| h.contains("try again")));

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
fn the_core_errors_are_short_and_hint_at_the_fix() {
    for error in [
        Error::NoTenant,
        Error::InvalidTenant("ac\nme".to_owned()),
        Error::NotRegistered,
        Error::NoRoute(NoRoute::new("billing")),
    ] {
        assert_short(&error.to_string());
        assert!(error.hint().is_some_and(|h| h.len() > 10), "{error:?}");
    }
    assert!(Error::NoTenant
        .hint()
        .is_some_and(|h| h.contains("bandeja::tenant::scope")));
}

#[test]
fn the_error_stays_small() {
    // Clippy's `result_large_err` refuses an `Err` of 128 bytes or more in every caller.
    let size = std::mem::size_of::<Error>();
    assert!(size < 128, "Error is {size} bytes");
    assert!(std::mem::size_of::<BuildError>() <= 8);
}

#[test]
fn a_serialize_error_names_the_type_and_keeps_serde_as_its_source() {
    let serde = serde_json::to_string(&std::collections::BTreeMap::from([((0, 0), 1)]))
        .expect_err("a map with tuple keys");
    let error = Error::from(SerializeError::new("shop.Grid", serde));
    assert_eq!(
        error.to_string(),
        "cannot serialize the payload of `shop.Grid` to JSON"
    );
    let Error::Serialize(inner) = &error else {
        panic!("a serialize error, not {error:?}");
    };
    assert_eq!(inner.message_type(), "shop.Grid");
    let source = error.source().expect("the serde error is the source");
    assert!(source.downcast_ref::<serde_json::Error>().is_some());
    assert!(source.to_string().contains("key must be a string"));
    // The chain prints the cause once: the error's own text leaves it out.
    assert!(!error.to_string().contains(&source.to_string()));
    assert!(error.hint().is_some());
}

#[test]
fn an_invalid_tenant_prints_escaped_between_backticks() {
    let error = Error::InvalidTenant("ac\nme".to_owned());
    assert_eq!(error.to_string(), "invalid tenant id `ac\\nme`");
}

#[test]
fn a_config_error_gives_its_own_hint() {
    let config = crate::config::ConfigError::unknown_key(
        "events.outbox.enabeld".to_owned(),
        Some("events.outbox.enabled".to_owned()),
        "`enabled` in `events.outbox`".to_owned(),
    );
    let hint = config.hint().map(str::to_owned);
    assert!(hint.is_some(), "{config:?}");
    assert_eq!(Error::from(config).hint(), hint);
}

#[test]
fn unknown_names_keep_their_value() {
    let error = "outbox"
        .parse::<crate::record::BoxKind>()
        .expect_err("not a box");
    assert_eq!(error.value(), "outbox");
    assert!(error.to_string().starts_with("unknown box `outbox`"));
    let error = "done\n"
        .parse::<crate::status::MessageStatus>()
        .expect_err("not a status");
    assert_eq!(error.value(), "done\n");
    assert!(error
        .to_string()
        .starts_with("unknown message status `done\\n`"));
    assert_eq!(crate::record::MessageKind::Event.to_string(), "event");
    assert_eq!(crate::record::MessageKind::Command.to_string(), "command");
}

#[test]
fn the_too_large_hint_names_the_default_limit_in_force() {
    let default = crate::record::DEFAULT_MAX_PAYLOAD_BYTES.to_string();
    assert!(
        MessageErrorKind::TooLarge.hint().contains(&default),
        "{}",
        MessageErrorKind::TooLarge.hint()
    );
}

//! [`BuildError`]: a wiring mistake that [`BandejaBuilder::build`](crate::BandejaBuilder::build)
//! refuses, before anything starts.

use std::error::Error as StdError;
use std::fmt;

use super::{shown, BoxError, NoRoute};

/// Which wiring mistake a [`BuildError`] is. Each kind's [`hint`](BuildErrorKind::hint)
/// says what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BuildErrorKind {
    /// A subscriber name that breaks the rule of names (1 to 128 characters, no
    /// whitespace or control characters).
    SubscriberName,
    /// A service name (`BandejaBuilder::service`) that breaks the rule of names.
    ServiceName,
    /// A handler registered for a message type whose name (`Payload::TYPE`) breaks the
    /// rule of type names (1 to 255 characters, no whitespace or control characters).
    MessageType,
    /// Two subscribers with the same name for the same message type.
    DuplicateSubscriber,
    /// A second handler for a command type: a command has exactly one handler.
    SecondCommandHandler,
    /// A broker transport without the service's name (`BandejaBuilder::service`).
    MissingService,
    /// A service that handles commands has no topic in `commands.topics` to receive
    /// them on (the [`NoRoute`] is the source).
    MissingRoute,
    /// A zero time limit set with `BandejaBuilder::handler_timeout`.
    HandlerTimeout,
    /// A time limit set with `BandejaBuilder::handler_timeout` for a subscriber name no
    /// handler is registered under.
    UnknownSubscriber,
    /// A payload type's upcasters ([`Payload::UPCASTERS`](crate::Payload::UPCASTERS)) read
    /// a version outside 1 to `VERSION - 1`, or two of them read the same version.
    Upcaster,
    /// A saga definition that cannot run (no step, two steps of one name, a compensation
    /// on or after the pivot, …), or two sagas of one name on one runtime.
    Saga,
}

impl BuildErrorKind {
    /// What to do about a mistake of this kind.
    #[must_use]
    pub const fn hint(self) -> &'static str {
        match self {
            BuildErrorKind::SubscriberName | BuildErrorKind::ServiceName => {
                "use 1 to 128 characters without spaces or control characters, such as `billing`"
            }
            BuildErrorKind::MessageType => super::message::PAYLOAD_TYPE_HINT,
            BuildErrorKind::DuplicateSubscriber => "give each subscriber a unique name",
            BuildErrorKind::SecondCommandHandler => {
                "a command has exactly one handler: put both reactions in one handler or emit an \
                 event"
            }
            BuildErrorKind::MissingService => "call `.service(\"<name>\")` on the builder",
            BuildErrorKind::MissingRoute => {
                "add `[commands.topics] <service> = \"<topic>\"` (or BANDEJA_COMMANDS_TOPICS) to \
                 this service's configuration"
            }
            BuildErrorKind::HandlerTimeout => {
                "leave the `handler_timeout` call out to use the group's handler-timeout"
            }
            BuildErrorKind::UnknownSubscriber => {
                "fix the name passed to `handler_timeout` or register the handler"
            }
            BuildErrorKind::Saga => {
                "fix the saga's definition as the message says (`Saga::define(..).step(..)`)"
            }
            BuildErrorKind::Upcaster => {
                "give each upcaster the version it reads (`Upcaster::new(N, …)` turns N into \
                 N+1), one per version, below the type's VERSION"
            }
        }
    }
}

impl fmt::Display for BuildErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuildErrorKind::SubscriberName => "invalid subscriber name",
            BuildErrorKind::ServiceName => "invalid service name",
            BuildErrorKind::MessageType => "invalid message type",
            BuildErrorKind::DuplicateSubscriber => "duplicate subscriber",
            BuildErrorKind::SecondCommandHandler => "second command handler",
            BuildErrorKind::MissingService => "missing service name",
            BuildErrorKind::MissingRoute => "missing command topic",
            BuildErrorKind::HandlerTimeout => "invalid handler timeout",
            BuildErrorKind::UnknownSubscriber => "unknown subscriber",
            BuildErrorKind::Upcaster => "invalid upcasters",
            BuildErrorKind::Saga => "invalid saga",
        })
    }
}

/// A wiring mistake found when the runtime is built (a bad name, a duplicate subscriber, a
/// bad handler time limit, a missing route...): nothing was started. Match on
/// [`kind`](BuildError::kind); [`hint`](BuildError::hint) says what to do.
#[derive(Debug)]
#[non_exhaustive]
pub struct BuildError(Box<Details>);

/// Boxed: a build error is rare, and [`Error`](super::Error) stays small.
#[derive(Debug)]
struct Details {
    kind: BuildErrorKind,
    text: String,
    subscriber: Option<String>,
    service: Option<String>,
    message_type: Option<String>,
    source: Option<BoxError>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl StdError for BuildError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        let source = self.0.source.as_deref()?;
        Some(source)
    }
}

impl BuildError {
    fn details(kind: BuildErrorKind, text: String) -> Details {
        Details {
            kind,
            text,
            subscriber: None,
            service: None,
            message_type: None,
            source: None,
        }
    }

    /// A subscriber name that breaks the rule of names.
    pub(crate) fn subscriber_name(subscriber: &str, message_type: &str) -> Self {
        let text = format!("subscriber name `{}` is not usable", shown(subscriber));
        BuildError(Box::new(Details {
            subscriber: Some(subscriber.to_owned()),
            message_type: Some(message_type.to_owned()),
            ..Self::details(BuildErrorKind::SubscriberName, text)
        }))
    }

    /// A service name that breaks the rule of names.
    pub(crate) fn service_name(service: &str) -> Self {
        let text = format!("service name `{}` is not usable", shown(service));
        BuildError(Box::new(Details {
            service: Some(service.to_owned()),
            ..Self::details(BuildErrorKind::ServiceName, text)
        }))
    }

    /// A handler for a message type whose name breaks the rule of type names.
    pub(crate) fn invalid_message_type(message_type: &str, subscriber: &str) -> Self {
        let text = format!("message type `{}` is not usable", shown(message_type));
        BuildError(Box::new(Details {
            subscriber: Some(subscriber.to_owned()),
            message_type: Some(message_type.to_owned()),
            ..Self::details(BuildErrorKind::MessageType, text)
        }))
    }

    /// Two subscribers named `subscriber` for `message_type`.
    pub(crate) fn duplicate_subscriber(message_type: &str, subscriber: &str) -> Self {
        let text = format!(
            "duplicate subscriber `{}` for message type `{}`",
            shown(subscriber),
            shown(message_type)
        );
        BuildError(Box::new(Details {
            subscriber: Some(subscriber.to_owned()),
            message_type: Some(message_type.to_owned()),
            ..Self::details(BuildErrorKind::DuplicateSubscriber, text)
        }))
    }

    /// `subscriber` registered for a command type that `existing` already handles.
    pub(crate) fn second_command_handler(
        message_type: &str,
        subscriber: &str,
        existing: &str,
    ) -> Self {
        let text = format!(
            "command type `{}` already has a handler (`{}`)",
            shown(message_type),
            shown(existing)
        );
        BuildError(Box::new(Details {
            subscriber: Some(subscriber.to_owned()),
            message_type: Some(message_type.to_owned()),
            ..Self::details(BuildErrorKind::SecondCommandHandler, text)
        }))
    }

    /// A broker transport (named `transport`) without the service's name.
    pub(crate) fn missing_service(transport: &str) -> Self {
        let text = format!(
            "a broker transport (`{}`) needs the service's name",
            shown(transport)
        );
        BuildError(Box::new(Self::details(
            BuildErrorKind::MissingService,
            text,
        )))
    }

    /// A service that handles commands and has no topic to receive them on.
    pub(crate) fn missing_route(source: NoRoute) -> Self {
        let text = format!(
            "service `{}` handles commands but has no topic to receive them on",
            shown(source.service())
        );
        BuildError(Box::new(Details {
            service: Some(source.service().to_owned()),
            source: Some(Box::new(source)),
            ..Self::details(BuildErrorKind::MissingRoute, text)
        }))
    }

    /// A zero time limit set in code for `subscriber`.
    pub(crate) fn zero_handler_timeout(subscriber: &str) -> Self {
        let text = format!(
            "handler_timeout(\"{}\") must be greater than zero",
            shown(subscriber)
        );
        BuildError(Box::new(Details {
            subscriber: Some(subscriber.to_owned()),
            ..Self::details(BuildErrorKind::HandlerTimeout, text)
        }))
    }

    /// A time limit set in code for a subscriber no handler is registered under
    /// (`registered`: the names that are, listed in the message up to five).
    pub(crate) fn unknown_subscriber(subscriber: &str, registered: &[&str]) -> Self {
        const LISTED: usize = 5;
        let mut listed: Vec<String> = registered
            .iter()
            .take(LISTED)
            .map(|n| format!("`{}`", shown(n)))
            .collect();
        if registered.is_empty() {
            listed.push("none".to_owned());
        } else if registered.len() > LISTED {
            listed.push(format!("{} more", registered.len() - LISTED));
        }
        let text = format!(
            "handler_timeout(\"{name}\"): no handler is registered under the subscriber name \
             `{name}` (registered: {})",
            listed.join(", "),
            name = shown(subscriber),
        );
        BuildError(Box::new(Details {
            subscriber: Some(subscriber.to_owned()),
            ..Self::details(BuildErrorKind::UnknownSubscriber, text)
        }))
    }

    /// Saga `saga` cannot run (`why` says why).
    pub(crate) fn saga(saga: &str, why: String) -> Self {
        let text = format!("saga `{}`: {why}", shown(saga));
        BuildError(Box::new(Self::details(BuildErrorKind::Saga, text)))
    }

    /// Upcasters of `message_type` that cannot all run (`text` says which).
    pub(crate) fn upcaster(message_type: &str, text: String) -> Self {
        BuildError(Box::new(Details {
            message_type: Some(message_type.to_owned()),
            ..Self::details(BuildErrorKind::Upcaster, text)
        }))
    }

    /// Which mistake this is.
    #[must_use]
    pub fn kind(&self) -> BuildErrorKind {
        self.0.kind
    }

    /// The subscriber name the mistake is about, if it is about one.
    #[must_use]
    pub fn subscriber(&self) -> Option<&str> {
        self.0.subscriber.as_deref()
    }

    /// The service name the mistake is about, if it is about one.
    #[must_use]
    pub fn service(&self) -> Option<&str> {
        self.0.service.as_deref()
    }

    /// The message type the mistake is about, if it is about one.
    #[must_use]
    pub fn message_type(&self) -> Option<&str> {
        self.0.message_type.as_deref()
    }

    /// What to do about it (the [`kind`](Self::kind)'s hint).
    #[must_use]
    pub fn hint(&self) -> &'static str {
        self.0.kind.hint()
    }
}

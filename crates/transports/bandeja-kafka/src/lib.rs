#![doc = include_str!("../README.md")]

mod error;
mod names;
mod options;
mod publish;
mod settings;
mod subscribe;
mod topics;
mod transport;

pub use error::KafkaError;
pub use names::{
    CAUSATION_HEADER, CONTENT_TYPE_HEADER, CORRELATION_HEADER, MESSAGE_ID_HEADER,
    SOURCE_SERVICE_HEADER, TRACEPARENT_HEADER, TYPE_HEADER,
};
pub use options::{KafkaOptions, DEFAULT_BOOTSTRAP_SERVERS};
pub use transport::KafkaTransport;

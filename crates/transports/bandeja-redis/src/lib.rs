#![doc = include_str!("../README.md")]

mod checks;
mod connection;
mod entry;
mod error;
mod names;
mod options;
mod publish;
mod reply;
mod subscribe;
mod transport;

pub use entry::{
    ADDRESS_FIELD, BODY_FIELD, CORRELATION_FIELD, ID_FIELD, SOURCE_SERVICE_FIELD,
    TRACEPARENT_FIELD, TYPE_FIELD,
};
pub use error::RedisError;
pub use options::{RedisOptions, DEFAULT_URL};
pub use transport::RedisTransport;

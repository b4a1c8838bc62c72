#![doc = include_str!("../README.md")]

mod consume;
mod consumer;
mod error;
mod names;
mod options;
mod order;
mod publish;
mod streams;
mod transport;

pub use error::{NatsError, OptionsError};
pub use options::NatsOptions;
pub use publish::{
    CONTENT_TYPE_HEADER, CORRELATION_HEADER, SOURCE_SERVICE_HEADER, TRACEPARENT_HEADER, TYPE_HEADER,
};
pub use transport::NatsTransport;

#![doc = include_str!("../README.md")]

mod connection;
mod error;
mod names;
mod options;
mod publish;
mod subscribe;
mod transport;

pub use error::AmqpError;
pub use options::{AmqpOptions, DEFAULT_URL};
pub use transport::AmqpTransport;

#![doc = include_str!("../README.md")]

mod actions;
mod auth;
mod boxes;
mod dashboard;
mod error;
mod filter;
mod messages;
pub mod metrics;
mod options;
mod router;
pub mod serve;
mod subscribers;

pub use error::ApiError;
pub use options::HttpOptions;
pub use router::router;
pub use serve::{bind, ServeError, Server, DEFAULT_LISTEN};

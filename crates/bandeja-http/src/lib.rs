#![doc = include_str!("../README.md")]

mod actions;
mod audit;
mod auth;
mod boxes;
mod dashboard;
mod discard;
mod error;
mod filter;
mod health;
mod health_checks;
mod messages;
pub mod metrics;
mod options;
mod router;
mod sagas;
pub mod serve;
mod subscribers;
mod timeline;
mod workers;

pub use error::ApiError;
pub use options::HttpOptions;
pub use router::router;
pub use serve::{bind, ServeError, Server, DEFAULT_LISTEN};

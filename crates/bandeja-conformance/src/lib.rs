#![doc = include_str!("../README.md")]

mod macros;

pub mod admin;
pub mod checks;
pub mod completion;
pub mod fixtures;
pub mod foreign;
pub mod runtime;
pub mod staleness;
pub mod standalone;
pub mod store;
pub mod transport;

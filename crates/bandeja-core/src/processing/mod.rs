//! Stage 5, processing: the inbox worker claims due rows and runs each handler inside the
//! transaction that marks its row COMPLETED.

mod batch;
pub(crate) mod conflicts;
pub mod handler;
pub(crate) mod pace;
pub(crate) mod registry;
mod run;
mod single;
pub(crate) mod stragglers;
pub(crate) mod timeouts;
pub(crate) mod worker;

pub use handler::{CommandHandler, EventBatchHandler, EventHandler, HandlerContext};

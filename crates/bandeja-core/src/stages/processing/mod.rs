//! Stage 5, processing: the inbox worker claims due rows and runs each handler inside the
//! transaction that marks its row COMPLETED.

mod batch;
mod run;
mod single;
pub(crate) mod worker;

pub use crate::handler::{CommandHandler, EventBatchHandler, EventHandler, HandlerContext};

//! Stage 2, dispatch: the outbox worker claims due outbox rows and hands them to the
//! transport (in-process: straight into the inbox), then writes the outcomes back.

pub(crate) mod worker;

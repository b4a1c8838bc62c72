//! Tier 5, assembly: what a user builds and runs — the runtime builder, [`Bandeja`](runtime::Bandeja),
//! [`Running`](runtime::Running) — and the testing helpers. Only this tier knows every stage.

mod running;
pub mod runtime;
mod sagas;
pub mod testing;

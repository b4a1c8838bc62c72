//! Checks no macro runs: each needs what only the adapter has (a way to break a stored row,
//! a transport aimed at a black hole), so the adapter's own test calls it and finishes the
//! check with its own means.

pub mod blackhole;
pub mod undecodable;

pub use blackhole::{publish_returns_at_its_deadline, BlackHole};
pub use undecodable::an_undecodable_claimed_row_blocks_nothing;

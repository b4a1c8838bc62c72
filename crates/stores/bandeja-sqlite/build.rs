//! Rebuilds the crate when a migration file is added or removed: `sqlx::migrate!` embeds
//! the files of `migrations/` at compile time, and on stable Rust it cannot tell Cargo to
//! watch the folder itself (sqlx's documented build script).

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}

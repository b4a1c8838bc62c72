//! The first program is what the README shows and what the facade's documentation shows,
//! and it does what they say: prints one line and exits, within seconds.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the workspace root")
}

fn program() -> String {
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs"))
}

/// The first fenced block after the `## Quickstart` heading.
fn readme_block(readme: &str) -> String {
    let section = &readme[readme
        .find("\n## Quickstart")
        .expect("a Quickstart section")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let end = start + section[start..].find("\n```").expect("the block's end");
    format!("{}\n", &section[start..end])
}

/// The doc test of `crates/bandeja/src/lib.rs` (the first fenced block of its `//!` docs).
fn facade_example(lib: &str) -> String {
    let lines: Vec<&str> = lib.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "//! ```")
        .expect("a doc example")
        + 1;
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "//! ```")
            .expect("the example's end");
    let mut code: String = lines[start..end]
        .iter()
        .map(|l| {
            l.strip_prefix("//! ")
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    code.push('\n');
    code
}

#[test]
fn the_readme_shows_the_program() {
    assert_eq!(readme_block(&read(&root().join("README.md"))), program());
}

#[test]
fn the_facade_documentation_shows_the_program() {
    let lib = read(&root().join("crates/bandeja/src/lib.rs"));
    assert_eq!(facade_example(&lib), program());
}

#[test]
fn it_prints_one_line_and_exits_within_seconds() {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_hello"))
        .output()
        .expect("run hello");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "hello, world!\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

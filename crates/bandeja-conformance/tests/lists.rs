//! The generated lists of checks are the suites' public check functions, all of them: the
//! sources are read again here, line by line (not with the parser `build.rs` uses), and
//! every `pub async fn` at the start of a line of a suite's files must be in its suite's
//! list, under its module, and nothing else may be. A suite folder `build.rs` does not
//! know, or a suite no macro runs, fails here too.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use bandeja_conformance::checks::ALL;

/// Folders under `src/` that are not suites.
const NOT_SUITES: [&str; 2] = ["fixtures", "standalone"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `admin/outbox_replay/mod.rs` → `admin::outbox_replay`.
fn module(file: &Path) -> String {
    let relative = file.strip_prefix(src()).expect("under src");
    let text = relative
        .with_extension("")
        .to_string_lossy()
        .replace('/', "::");
    text.strip_suffix("::mod")
        .map(str::to_owned)
        .unwrap_or(text)
}

/// The suite folders: every folder under `src/` but the fixtures and standalone checks.
fn suite_folders() -> BTreeSet<String> {
    fs::read_dir(src())
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| {
            p.file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| !NOT_SUITES.contains(&name.as_str()))
        .collect()
}

/// `(suite, module, function)` of every line that starts with `pub async fn`.
fn public_async_fns() -> BTreeSet<(String, String, String)> {
    let mut found = BTreeSet::new();
    for suite in suite_folders() {
        let mut files = Vec::new();
        rust_files(&src().join(&suite), &mut files);
        for file in files {
            let text = fs::read_to_string(&file).expect("read a suite file");
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("pub async fn ") {
                    let end = rest
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    found.insert((suite.clone(), module(&file), rest[..end].to_owned()));
                }
            }
        }
    }
    found
}

#[test]
fn the_generated_lists_are_the_public_check_functions_of_the_suites() {
    let listed: BTreeSet<(String, String, String)> = ALL
        .iter()
        .map(|c| (c.suite.to_owned(), c.module.to_owned(), c.name.to_owned()))
        .collect();
    assert_eq!(listed.len(), ALL.len(), "a check is listed twice");
    let found = public_async_fns();
    let missing: Vec<_> = found.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&found).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "not in the generated lists: {missing:?}; listed but not found in the sources: {extra:?}"
    );
    assert!(!found.is_empty());
}

#[test]
fn every_suite_folder_has_a_list_and_a_macro_that_runs_it() {
    let with_checks: BTreeSet<String> = ALL.iter().map(|c| c.suite.to_owned()).collect();
    assert_eq!(
        with_checks,
        suite_folders(),
        "every folder under src/ (but fixtures and standalone) is a suite that build.rs knows"
    );
    let macros = fs::read_to_string(src().join("macros.rs")).expect("read src/macros.rs");
    for suite in &with_checks {
        let call = format!("$crate::__{suite}_checks!");
        assert_eq!(
            macros.matches(&call).count(),
            1,
            "one public macro of src/macros.rs runs the `{suite}` list (`{call}`)"
        );
    }
}

#[test]
fn only_the_admin_suite_has_checks_with_a_second_argument() {
    let with_second: Vec<_> = ALL
        .iter()
        .filter(|c| c.extra_argument && c.suite != "admin")
        .collect();
    assert!(with_second.is_empty(), "{with_second:?}");
}

//! The core's tiers hold: a module of one tier imports only from its own tier and the tiers
//! below it (vocabulary → ports → engine → stages → assembly, see `src/lib.rs`).
//!
//! The check reads the sources: every `crate::<module>` path outside comments names a module
//! the crate root re-exports from one tier folder, so the folder of the importing file and
//! the folder of the imported module give the edge. It also prints the import cycles left
//! between modules (`cargo test -p bandeja-core --test tiers -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The tiers, lowest first (the folder names under `src/`).
const TIERS: [&str; 5] = ["vocabulary", "ports", "engine", "stages", "assembly"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module name → tier of every module `lib.rs` re-exports (`pub use engine::{...}`).
fn exported_modules() -> BTreeMap<String, usize> {
    let lib = fs::read_to_string(src().join("lib.rs")).expect("read src/lib.rs");
    let mut modules = BTreeMap::new();
    for (tier_index, tier) in TIERS.iter().enumerate() {
        for prefix in ["pub use ", "pub(crate) use "] {
            let pattern = format!("{prefix}{tier}::");
            let mut rest = lib.as_str();
            while let Some(at) = rest.find(&pattern) {
                let after = &rest[at + pattern.len()..];
                let end = after.find(';').expect("a `use` ends with `;`");
                let names =
                    after[..end].trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
                for name in names.split(',') {
                    let name = name.trim();
                    if !name.is_empty() {
                        modules.insert(name.to_owned(), tier_index);
                    }
                }
                rest = &after[end..];
            }
        }
    }
    modules
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

/// The first identifier of `text`.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The crate-root modules a line of code names (`crate::a::…`, `crate::{a, b::…}`).
fn named_modules(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        let after = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            rest = after;
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    names.push(name.to_owned());
                }
            }
        } else {
            names.push(ident(after).to_owned());
        }
        rest = after;
    }
    names
}

/// The import edges (importing module → imported modules), by file and tier.
struct Edges {
    /// (file, line, importing tier, imported module, imported tier) of every upward edge.
    upward: Vec<(String, usize, &'static str, String, &'static str)>,
    /// Module → modules it imports (modules named `<tier>/<module>`).
    graph: BTreeMap<String, BTreeSet<String>>,
    /// Files read.
    files: usize,
}

fn edges() -> Edges {
    let modules = exported_modules();
    let mut files = Vec::new();
    for tier in TIERS {
        rust_files(&src().join(tier), &mut files);
    }
    let mut upward = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(src()).expect("under src");
        let mut parts = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        let tier = parts.next().expect("a tier folder");
        let tier_index = TIERS.iter().position(|t| *t == tier).expect("a tier");
        let Some(module) = parts.next() else { continue };
        let module = module.trim_end_matches(".rs").to_owned();
        if module == "mod" {
            continue;
        }
        let text = fs::read_to_string(file).expect("read a source file");
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in named_modules(line) {
                let Some(&imported_tier) = modules.get(&name) else {
                    continue;
                };
                if name != module {
                    graph
                        .entry(format!("{tier}/{module}"))
                        .or_default()
                        .insert(format!("{}/{name}", TIERS[imported_tier]));
                }
                if imported_tier > tier_index {
                    upward.push((
                        relative.display().to_string(),
                        number + 1,
                        TIERS[tier_index],
                        name,
                        TIERS[imported_tier],
                    ));
                }
            }
        }
    }
    Edges {
        upward,
        graph,
        files: files.len(),
    }
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        let graph = state.graph;
        for next in graph.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top.to_owned());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found
}

#[test]
fn no_tier_imports_a_higher_one() {
    let edges = edges();
    assert!(edges.files > 40, "the tier folders hold the core's sources");
    let report: Vec<String> = edges
        .upward
        .iter()
        .map(|(file, line, from, name, to)| {
            format!("src/{file}:{line}: {from} imports `crate::{name}` of the higher tier {to}")
        })
        .collect();
    assert!(
        report.is_empty(),
        "a lower tier imports a higher one (move the item down, or pass it in from above):\n{}",
        report.join("\n")
    );
}

#[test]
fn cycles_between_modules_stay_within_one_tier() {
    let edges = edges();
    let found = cycles(&edges.graph);
    println!("import cycles between the core's modules: {}", found.len());
    for component in &found {
        println!("  {}", component.join(" ↔ "));
    }
    for component in &found {
        let tiers: BTreeSet<&str> = component
            .iter()
            .map(|m| m.split('/').next().unwrap_or(""))
            .collect();
        assert_eq!(
            tiers.len(),
            1,
            "an import cycle crosses tiers: {}",
            component.join(" ↔ ")
        );
    }
}

#[test]
fn the_check_reads_grouped_and_nested_paths() {
    assert_eq!(named_modules("use crate::store::Store;"), ["store"]);
    assert_eq!(
        named_modules("use crate::{pace, stragglers::Permits};"),
        ["pace", "stragglers"]
    );
    assert_eq!(
        named_modules("let x = 1; // crate::runtime"),
        Vec::<String>::new()
    );
    assert_eq!(
        named_modules("$crate::testing::eventually"),
        Vec::<String>::new()
    );
    assert_eq!(exported_modules().get("store"), Some(&1));
    assert_eq!(exported_modules().get("runtime"), Some(&4));
}

//! The core's tiers hold: a module of one tier imports only from its own tier and the tiers
//! below it (vocabulary → ports → engine → stages → assembly, see `src/lib.rs`).
//!
//! The check parses every source file of the tier folders (with `syn`) and resolves every
//! path that starts at the crate (`crate::…`, in `use` trees however nested, in types and
//! expressions, and in macro invocations' tokens) or climbs out of its module (`super::…`)
//! to the tier it lands in: a tier folder named directly (`crate::engine::…`), a module the
//! crate root re-exports from a tier (`crate::store`), or an item the root re-exports from
//! such a module (`crate::Bandeja`). It also prints the import cycles left between modules
//! (`cargo test -p bandeja-core --test tiers -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The tiers, lowest first (the folder names under `src/`).
const TIERS: [&str; 5] = ["vocabulary", "ports", "engine", "stages", "assembly"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn parse(path: &Path) -> syn::File {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Every leaf of a `use` tree, as its path segments (`a::{b, c::d}` → `[a, b]`, `[a, c, d]`).
fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_leaves(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let mut leaf = prefix.clone();
            leaf.push(name.ident.to_string());
            out.push(leaf);
        }
        syn::UseTree::Rename(rename) => {
            let mut leaf = prefix.clone();
            leaf.push(rename.ident.to_string());
            out.push(leaf);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(group) => {
            for item in &group.items {
                use_leaves(item, prefix, out);
            }
        }
    }
}

/// What the crate root names, and the tier of each: the tier folders themselves, the
/// modules it re-exports from a tier (`pub use engine::{fault, telemetry}`), and the items
/// it re-exports from those modules (`pub use runtime::{Bandeja, …}`).
fn root_names() -> BTreeMap<String, usize> {
    let lib = parse(&src().join("lib.rs"));
    let mut names: BTreeMap<String, usize> = TIERS
        .iter()
        .enumerate()
        .map(|(i, t)| ((*t).to_owned(), i))
        .collect();
    let mut leaves = Vec::new();
    for item in &lib.items {
        if let syn::Item::Use(item) = item {
            use_leaves(&item.tree, &mut Vec::new(), &mut leaves);
        }
    }
    // Modules first (their paths start at a tier), then the items re-exported from them.
    for pass in 0..2 {
        for leaf in &leaves {
            let (Some(first), Some(last)) = (leaf.first(), leaf.last()) else {
                continue;
            };
            if let Some(&tier) = names.get(first) {
                if pass == 0 && TIERS.contains(&first.as_str()) || pass == 1 {
                    names.entry(last.clone()).or_insert(tier);
                }
            }
        }
    }
    names
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

/// A path's segments as written (`crate::store::Store` → `[crate, store, Store]`).
fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// Collects the paths of one file that leave its module: from `crate` or through `super`.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

impl Paths {
    fn keep(&mut self, segments: Vec<String>) {
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super")
        ) {
            self.found.push(segments);
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        use_leaves(&item.tree, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            self.keep(leaf);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.keep(segments(path));
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Macro arguments are tokens, not syntax: find `crate :: name` in them.
        let tokens: Vec<String> = mac
            .tokens
            .to_string()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        for window in tokens.windows(3) {
            if window[0] == "crate" && window[1] == "::" {
                let name: String = window[2]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    self.found.push(vec!["crate".to_owned(), name]);
                }
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// A file's module path as the crate sees it (`stages/processing/run.rs` →
/// `[stages, processing, run]`; a `mod.rs` is its folder).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The tier and crate-root name a path leaving `module` lands on; `None` for a path that
/// stays in its tier folder or names nothing the root exports (a macro, `crate::conformance`).
fn resolve(
    module: &[String],
    path: &[String],
    names: &BTreeMap<String, usize>,
) -> Option<(usize, String)> {
    let mut at: Vec<String> = module.to_vec();
    let mut rest = path;
    if rest.first().is_some_and(|s| s == "crate") {
        at.clear();
        rest = &rest[1..];
    } else {
        while rest.first().is_some_and(|s| s == "super") {
            at.pop();
            rest = &rest[1..];
        }
    }
    if let Some(tier) = at.first() {
        // Still inside a tier folder: that tier.
        let tier = TIERS.iter().position(|t| t == tier)?;
        return Some((tier, at.get(1).cloned().unwrap_or_default()));
    }
    let name = rest.first()?;
    let tier = *names.get(name)?;
    let module = if TIERS.contains(&name.as_str()) {
        rest.get(1).cloned().unwrap_or_default()
    } else {
        name.clone()
    };
    Some((tier, module))
}

/// The import edges, by file and tier.
struct Edges {
    /// (file, importing tier, path, imported tier) of every upward edge.
    upward: Vec<(String, &'static str, String, &'static str)>,
    /// Module → modules it imports (modules named `<tier>/<module>`).
    graph: BTreeMap<String, BTreeSet<String>>,
    /// Files read.
    files: usize,
}

fn edges() -> Edges {
    let names = root_names();
    let mut files = Vec::new();
    for tier in TIERS {
        rust_files(&src().join(tier), &mut files);
    }
    let mut upward = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(src()).expect("under src");
        let module = module_path(relative);
        let tier_index = TIERS
            .iter()
            .position(|t| *t == module[0])
            .expect("a tier folder");
        let own = format!(
            "{}/{}",
            module[0],
            module.get(1).cloned().unwrap_or_default()
        );
        let mut paths = Paths::default();
        paths.visit_file(&parse(file));
        for path in paths.found {
            let Some((tier, imported)) = resolve(&module, &path, &names) else {
                continue;
            };
            let target = format!("{}/{imported}", TIERS[tier]);
            if target != own && !imported.is_empty() {
                graph.entry(own.clone()).or_default().insert(target);
            }
            if tier > tier_index {
                upward.push((
                    relative.display().to_string(),
                    TIERS[tier_index],
                    path.join("::"),
                    TIERS[tier],
                ));
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
        .map(|(file, from, path, to)| {
            format!("src/{file}: {from} names `{path}` of the higher tier {to}")
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

/// Every form of path the check must see, in a file of the vocabulary.
#[test]
fn the_check_sees_every_form_of_path() {
    let names = root_names();
    assert_eq!(names.get("store"), Some(&1));
    assert_eq!(names.get("runtime"), Some(&4));
    assert_eq!(
        names.get("Bandeja"),
        Some(&4),
        "an item the root re-exports"
    );
    let source = r#"
        use crate::{
            record::BoxKind,
            transport::{wire, InboxSink},
        };
        use super::super::assembly::testing;
        fn f() -> crate::Bandeja<()> { crate::emission::prepare(); todo!() }
        fn g() { tracing::info!(x = %crate::runtime::now()); }
    "#;
    let mut paths = Paths::default();
    paths.visit_file(&syn::parse_file(source).expect("parse"));
    let module = ["vocabulary".to_owned(), "record".to_owned()];
    let landed: Vec<(usize, String)> = paths
        .found
        .iter()
        .filter_map(|p| resolve(&module, p, &names))
        .collect();
    for expected in [
        (1, "transport"),
        (4, "testing"),
        (4, "Bandeja"),
        (3, "emission"),
        (4, "runtime"),
    ] {
        assert!(
            landed.contains(&(expected.0, expected.1.to_owned())),
            "{expected:?} not seen in {landed:?}"
        );
    }
    // `super::` inside a tier folder stays in that tier.
    let inside = resolve(
        &[
            "stages".to_owned(),
            "processing".to_owned(),
            "run".to_owned(),
        ],
        &["super".to_owned(), "batch".to_owned()],
        &names,
    );
    assert_eq!(inside, Some((3, "processing".to_owned())));
}

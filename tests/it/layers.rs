//! The host's imports point down: each top-level module of `host/src` has a layer, and a module
//! names (`crate::…`) only modules of lower layers; within each folder, no two modules import
//! each other, directly or round a circle. Test code (`tests.rs`, `tests/`, anything after
//! `#[cfg(test)]`) is not counted: a test may reach for whatever it needs.
//!
//! The same check by hand: `python3 ../shared/tools/import-circles.py host/src [FOLDER]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use paddock_tests::repo_root;

/// The layers, bottom first. The plugin seam is a contract: the router calls it and the runtime
/// implements it, so it sits below both and imports only the wire types.
const LAYERS: &[&[&str]] = &[
    &["allocator", "escape", "revision", "jsonrpc", "protocol"],
    &["telemetry"],
    &["identity", "input", "budget", "audit", "replica", "store"],
    &["policy"],
    &["rate_limits"],
    &["plugin", "config", "tasks"],
    &["runtime"],
    &["router"],
    &["mcp"],
    &["session", "folder"],
    &["transport"],
    &["inspect_report"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The non-test Rust sources of a module (a file, or a folder with its `.rs` beside it).
fn sources(base: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let file = base.join(format!("{module}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let mut stack = vec![base.join(module)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                files.push(path);
            }
        }
    }
    files
}

/// A source without its comments and its test code.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read a source");
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The modules of `names` that `code` refers to through `prefix` (`crate::` or `crate::session::`),
/// as a path or inside a grouped `use prefix{…}`.
fn named(code: &str, prefix: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let head = item.trim().split("::").next().unwrap_or_default().trim();
                if names.contains(head) {
                    found.insert(head.to_owned());
                }
            }
        } else {
            let head: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if names.contains(&head) {
                found.insert(head);
            }
        }
    }
    found
}

/// The modules directly inside `dir` (files and folders), without `mod`, `lib`, `main`, `tests`.
fn modules_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .expect("read a folder")
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let module = if entry.path().is_dir() { name } else { name.strip_suffix(".rs")?.to_owned() };
            (!matches!(module.as_str(), "mod" | "lib" | "main" | "tests")).then_some(module)
        })
        .collect()
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let src = repo_root().join("host/src");
    let modules = modules_in(&src);
    let mut upward = Vec::new();
    for module in &modules {
        let Some(own) = layer_of(module) else {
            upward.push(format!("`{module}` has no layer: add it to LAYERS in tests/it/layers.rs, below everything it imports"));
            continue;
        };
        for file in sources(&src, module) {
            for other in named(&code_of(&file), "crate::", &modules) {
                if other != *module && layer_of(&other).is_some_and(|theirs| theirs >= own) {
                    upward.push(format!("{} names `crate::{other}`, which is not below `{module}`", file.strip_prefix(&src).unwrap_or(&file).display()));
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports that do not point down:\n{}", upward.join("\n"));
}

#[test]
fn no_folder_has_an_import_circle() {
    let src = repo_root().join("host/src");
    let mut circles = Vec::new();
    // Every folder at any depth, by its module path (`runtime`, `runtime/load`, …).
    let mut folders: Vec<String> = Vec::new();
    let mut stack: Vec<String> = modules_in(&src).into_iter().filter(|m| src.join(m).is_dir()).collect();
    while let Some(folder) = stack.pop() {
        stack.extend(modules_in(&src.join(&folder)).into_iter().filter(|m| src.join(&folder).join(m).is_dir()).map(|m| format!("{folder}/{m}")));
        folders.push(folder);
    }
    folders.sort();
    for folder in folders {
        let dir = src.join(&folder);
        let children = modules_in(&dir);
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for child in &children {
            let mut uses = BTreeSet::new();
            for file in sources(&dir, child) {
                let code = code_of(&file);
                uses.extend(named(&code, &format!("crate::{}::", folder.replace('/', "::")), &children));
                // `super::x` from a file directly in the folder names a sibling.
                if file.parent() == Some(dir.as_path()) {
                    uses.extend(named(&code, "super::", &children));
                }
            }
            uses.remove(child);
            edges.insert(child.clone(), uses);
        }
        for (module, uses) in &edges {
            for other in uses {
                if reaches(&edges, other, module) {
                    circles.push(format!("host/src/{folder}: `{module}` imports `{other}`, which leads back to `{module}`"));
                }
            }
        }
    }
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
}

/// Whether `from` reaches `to` along `edges`.
fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(at) = stack.pop() {
        if at == to {
            return true;
        }
        if seen.insert(at.clone()) {
            stack.extend(edges.get(&at).into_iter().flatten().cloned());
        }
    }
    false
}

#[test]
fn the_checks_see_an_upward_import_and_a_circle() {
    let names: BTreeSet<String> = ["session", "transport", "router"].map(str::to_owned).into();
    assert_eq!(named("use crate::{router::Router, transport::x};", "crate::", &names), ["router", "transport"].map(str::to_owned).into());
    assert_eq!(named("let t = crate::transport::stdio::serve;", "crate::", &names), ["transport"].map(str::to_owned).into());
    let edges: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
        .map(|(m, u)| (m.to_owned(), u.into_iter().map(str::to_owned).collect()))
        .into();
    assert!(reaches(&edges, "b", "a") && !reaches(&edges, "a", "d"));
}

//! The plugin contract's released versions are frozen. Each released package lives in a folder
//! of its own, `wit/<namespace>-<name>@<version>/`, and `wit/released.toml` records a SHA-256 of
//! each of its interfaces and worlds as `wit-component` prints them without doc comments (so
//! comments and layout do not count, every type, function and world item does). A released
//! definition that changed, disappeared or was added, a released folder that is gone, and a
//! folder under `wit/` that is not recorded all fail here, naming the package and definition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use paddock_tests::repo_root;
use sha2::{Digest, Sha256};

/// What to do instead of editing a released package.
const HOW: &str = "a released package is frozen: put the change in a new version beside it (a new folder wit/<namespace>-<name>@<version>/) and record that one in wit/released.toml";

/// The record: package (`namespace:name@version`) → definition (`interface x`, `world y`) → hash.
fn record() -> BTreeMap<String, BTreeMap<String, String>> {
    let path = repo_root().join("wit/released.toml");
    let text = std::fs::read_to_string(&path).expect("wit/released.toml is readable");
    let table: toml::Table = text.parse().expect("wit/released.toml parses");
    table
        .into_iter()
        .map(|(package, definitions)| {
            let definitions = definitions.as_table().unwrap_or_else(|| panic!("wit/released.toml: [\"{package}\"] is a table"));
            let hashes = definitions
                .iter()
                .map(|(name, hash)| {
                    let hash = hash.as_str().unwrap_or_else(|| panic!("wit/released.toml: {package} {name} is a string"));
                    (name.clone(), hash.to_owned())
                })
                .collect();
            (package, hashes)
        })
        .collect()
}

/// The folder a package is kept in: `paddock:plugin@0.2.0` → `paddock-plugin@0.2.0`.
fn folder_of(package: &str) -> String {
    package.replacen(':', "-", 1)
}

/// The folders under `wit/`, each a package.
fn folders() -> Vec<String> {
    let mut folders: Vec<String> = std::fs::read_dir(repo_root().join("wit"))
        .expect("wit/ is readable")
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    folders
}

/// One folder's package: its name and each definition's hash.
fn definitions(folder: &Path) -> (String, BTreeMap<String, String>) {
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_path(folder).unwrap_or_else(|e| panic!("{} parses: {e:?}", folder.display()));
    let name = resolve.packages[package].name.to_string();
    let mut printer = wit_component::WitPrinter::default();
    printer.emit_docs(false);
    printer.print(&resolve, package, &[]).unwrap_or_else(|e| panic!("{name} prints: {e:?}"));
    (name, split(&printer.output.to_string()))
}

/// The printed package cut into its top-level definitions, each hashed with the attributes
/// (`@since`, `@unstable`) printed before it.
fn split(printed: &str) -> BTreeMap<String, String> {
    let mut hashes = BTreeMap::new();
    let mut block = String::new();
    let mut current: Option<String> = None;
    for line in printed.lines() {
        if current.is_none() {
            if line.starts_with('@') {
                block.push_str(line);
                block.push('\n');
                continue;
            }
            let Some((kind, rest)) = line.split_once(' ').filter(|(kind, _)| *kind == "interface" || *kind == "world") else {
                assert!(
                    line.is_empty() || line.starts_with("package ") || line.trim_start().starts_with("//"),
                    "a top-level line of the printed package is a definition: {line:?}"
                );
                block.clear();
                continue;
            };
            let name = rest.split([' ', '{']).next().expect("a name follows the keyword");
            current = Some(format!("{kind} {name}"));
        }
        block.push_str(line);
        block.push('\n');
        if line == "}" || (line.ends_with('}') && !line.starts_with(' ')) {
            let definition = current.take().expect("inside a definition");
            hashes.insert(definition, format!("{:x}", Sha256::digest(block.as_bytes())));
            block.clear();
        }
    }
    assert!(current.is_none(), "the printed package ends inside {current:?}");
    hashes
}

/// The lines of `wit/released.toml` that record a package.
fn entry(package: &str, hashes: &BTreeMap<String, String>) -> String {
    let mut entry = format!("[\"{package}\"]\n");
    for (definition, hash) in hashes {
        entry.push_str(&format!("\"{definition}\" = \"{hash}\"\n"));
    }
    entry
}

#[test]
fn released_packages_keep_every_definition_as_released() {
    let record = record();
    assert!(!record.is_empty(), "wit/released.toml records at least the current contract");
    let mut problems = Vec::new();
    for (package, released) in &record {
        let folder: PathBuf = repo_root().join("wit").join(folder_of(package));
        if !folder.is_dir() {
            problems.push(format!("{package}: released, but its folder wit/{}/ is gone", folder_of(package)));
            continue;
        }
        let (name, now) = definitions(&folder);
        if name != *package {
            problems.push(format!("{package}: wit/{}/ now declares package {name}", folder_of(package)));
            continue;
        }
        for (definition, hash) in released {
            match now.get(definition) {
                None => problems.push(format!("{package}: `{definition}` was released and is gone")),
                Some(now) if now != hash => problems.push(format!("{package}: `{definition}` changed since it was released")),
                Some(_) => {}
            }
        }
        for definition in now.keys().filter(|d| !released.contains_key(*d)) {
            problems.push(format!("{package}: `{definition}` was added to the released package"));
        }
    }
    assert!(problems.is_empty(), "{}\n{HOW}", problems.join("\n"));
}

#[test]
fn every_contract_folder_is_a_recorded_release() {
    let record = record();
    let recorded: Vec<String> = record.keys().map(|package| folder_of(package)).collect();
    let present = folders();
    let mut problems = Vec::new();
    for folder in present.iter().filter(|f| !recorded.contains(f)) {
        let (name, hashes) = definitions(&repo_root().join("wit").join(folder));
        problems.push(format!("wit/{folder}/ is not recorded in wit/released.toml; to release {name}, add:\n{}", entry(&name, &hashes)));
    }
    for folder in recorded.iter().filter(|f| !present.contains(f)) {
        problems.push(format!("wit/{folder}/ is recorded as released and is gone"));
    }
    assert!(problems.is_empty(), "{}\n{HOW}", problems.join("\n"));
    assert_eq!(recorded, present, "the released versions are exactly the folders under wit/");
}

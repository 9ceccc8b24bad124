//! Repository hygiene that keeps the product's invariants checkable: module docs, no inherited
//! host stdio/env/network for plugins, and nothing but the stdio transport and CLI output
//! writing to stdout.

use std::path::{Path, PathBuf};

use paddock_tests::repo_root;

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target" && n != "ui") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = repo_root();
    let mut missing = Vec::new();
    for dir in
        ["host", "tests/src", "tests/it", "tests/escape", "tests/plugins", "guest-sdk/src", "guest-sdk/macros", "guest-sdk/uri-template", "sample-plugins"]
    {
        if !root.join(dir).exists() {
            continue;
        }
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).expect("read");
            if !text.trim_start().starts_with("//!") {
                missing.push(file.strip_prefix(&root).unwrap_or(&file).display().to_string());
            }
        }
    }
    assert!(missing.is_empty(), "files without a `//!` module doc: {missing:#?}");
}

#[test]
fn plugins_never_inherit_host_stdio_env_or_network() {
    let root = repo_root();
    let banned = ["inherit_stdio", "inherit_stdout", "inherit_stderr", "inherit_env", "inherit_network", "inherit_args"];
    for file in rust_files(&root.join("host/src")) {
        let text = std::fs::read_to_string(&file).expect("read");
        for word in banned {
            assert!(!text.contains(&format!("{word}(")), "{} calls {word}", file.display());
        }
    }
}

#[test]
fn only_the_stdio_transport_and_cli_write_to_stdout() {
    let root = repo_root();
    // The command line prints reports and results; `dev` serving over stdio prints nothing itself
    // (its progress goes to stderr, cargo's output is read from a pipe).
    let allowed = ["host/src/transport/stdio/mod.rs", "host/src/cli/mod.rs", "host/src/cli/call.rs", "host/src/cli/author.rs"];
    for file in rust_files(&root.join("host/src")) {
        let relative = file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        if allowed.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read");
        for needle in ["println!(", "print!(", "std::io::stdout", "io::stdout()", "tokio::io::stdout"] {
            assert!(!text.contains(needle), "{relative} writes to stdout with `{needle}`");
        }
    }
}

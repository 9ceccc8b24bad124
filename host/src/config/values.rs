//! Validation of each key of a plugin's configuration table into the `Grant`, collecting every
//! problem: files, env, network, limits, expose (secrets live in `secrets`); sizes (`64MiB`) and durations (`10s`).

use std::path::{Component, Path};
use std::time::Duration;

use toml::Value;

use super::context::Ctx;
use crate::policy::{EgressRules, FsGrant, FsMode, Grant, Limits};

const KNOWN_KEYS: &str = "files, env, network, secrets, limits, expose, drift";

/// Applies one key of a plugin's table to `grant`; `path` is the key as shown in messages.
pub(super) fn apply(cx: &mut Ctx<'_>, grant: &mut Grant, key: &str, path: &str, value: Value) {
    match key {
        "files" => files(cx, grant, path, value),
        "env" => env(cx, grant, path, value),
        "network" => network(cx, grant, path, value),
        "limits" => limits(cx, grant, path, value),
        "expose" => expose(cx, grant, path, value),
        "secrets" => super::secrets::secrets(cx, grant, path, value),
        _ => cx.error(path, "unknown key", format!("remove it; known keys are {KNOWN_KEYS}")),
    }
}

fn files(cx: &mut Ctx<'_>, grant: &mut Grant, path: &str, value: Value) {
    let Value::Array(entries) = value else {
        return cx.error(path, "must be an array of tables", "write `files = [{ host = \"./data\", guest = \"/data\", mode = \"ro\" }]`");
    };
    let base = cx.file.parent().unwrap_or(Path::new(".")).to_path_buf();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("{path}[{i}]");
        let Value::Table(mut table) = entry else {
            cx.error(&at, "must be a table", "write `{ host = \"./data\", guest = \"/data\", mode = \"ro\" }`");
            continue;
        };
        let host = table.remove("host");
        let guest = table.remove("guest");
        let mode = table.remove("mode");
        for (unknown, _) in table {
            cx.error(&format!("{at}.{unknown}"), "unknown key", "use only host, guest and mode");
        }
        let host = match host {
            Some(Value::String(h)) => {
                let joined = base.join(&h);
                match joined.canonicalize() {
                    Ok(dir) if dir.is_dir() => Some(dir),
                    Ok(_) => {
                        cx.error(&format!("{at}.host"), format!("`{h}` is not a directory"), "grant a directory, not a file");
                        None
                    }
                    Err(err) => {
                        cx.error(
                            &format!("{at}.host"),
                            format!("`{}` cannot be used: {err}", joined.display()),
                            "create the directory or fix the path (relative paths start at the config file's folder)",
                        );
                        None
                    }
                }
            }
            Some(_) => {
                cx.error(&format!("{at}.host"), "must be a string", "write a directory path, for example `host = \"./data\"`");
                None
            }
            None => {
                cx.error(&format!("{at}.host"), "is missing", "add the host directory, for example `host = \"./data\"`");
                None
            }
        };
        let guest = match guest {
            Some(Value::String(g)) if valid_guest_path(&g) => Some(g),
            Some(Value::String(g)) => {
                cx.error(
                    &format!("{at}.guest"),
                    format!("`{g}` must be an absolute path without `..`"),
                    "write an absolute sandbox path, for example `guest = \"/data\"`",
                );
                None
            }
            Some(_) => {
                cx.error(&format!("{at}.guest"), "must be a string", "write `guest = \"/data\"`");
                None
            }
            None => {
                cx.error(&format!("{at}.guest"), "is missing", "add the sandbox path, for example `guest = \"/data\"`");
                None
            }
        };
        let mode = match mode.as_ref().map(|m| m.as_str()) {
            None => Some(FsMode::ReadOnly),
            Some(Some("ro")) => Some(FsMode::ReadOnly),
            Some(Some("rw")) => Some(FsMode::ReadWrite),
            Some(other) => {
                let shown = other.map(str::to_owned).unwrap_or_else(|| mode.map(|m| m.to_string()).unwrap_or_default());
                cx.error(&format!("{at}.mode"), format!("`{shown}` is not a mode"), "write `mode = \"ro\"` (read-only) or `mode = \"rw\"` (read-write)");
                None
            }
        };
        if let (Some(host), Some(guest), Some(mode)) = (host, guest, mode) {
            if grant.files.iter().any(|f| f.guest == guest) {
                cx.error(&format!("{at}.guest"), format!("`{guest}` is granted twice"), "give each directory its own guest path");
                continue;
            }
            grant.files.push(FsGrant { host, guest, mode });
        }
    }
}

fn valid_guest_path(guest: &str) -> bool {
    let path = Path::new(guest);
    guest.starts_with('/') && !guest.contains('\0') && path.components().all(|c| !matches!(c, Component::ParentDir))
}

fn env(cx: &mut Ctx<'_>, grant: &mut Grant, path: &str, value: Value) {
    let Value::Table(vars) = value else {
        return cx.error(path, "must be a table of strings", "write `env = { NAME = \"value\" }`");
    };
    for (name, value) in vars {
        let at = format!("{path}.{name}");
        if name.is_empty() || name.contains(['=', '\0']) {
            cx.error(&at, "is not a valid variable name", "use a name without `=`");
            continue;
        }
        match value {
            Value::String(v) if !v.contains('\0') => {
                grant.env.insert(name, v);
            }
            _ => cx.error(&at, "must be a string", format!("write `{name} = \"value\"`")),
        }
    }
}

fn network(cx: &mut Ctx<'_>, grant: &mut Grant, path: &str, value: Value) {
    let Value::Array(items) = value else {
        return cx.error(path, "must be an array of strings", "write `network = [\"https://api.example.com\"]`");
    };
    let mut patterns = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        match item {
            Value::String(s) => patterns.push(s),
            _ => cx.error(&format!("{path}[{i}]"), "must be a string", "write a `scheme://host[:port]` pattern"),
        }
    }
    match EgressRules::parse(&patterns) {
        Ok(rules) => grant.network = rules,
        Err(errors) => {
            for e in errors {
                cx.error(path, e.to_string(), "write `http(s)://host[:port]`, `*.` for subdomains, `:*` for any port");
            }
        }
    }
}

fn limits(cx: &mut Ctx<'_>, grant: &mut Grant, path: &str, value: Value) {
    let Value::Table(table) = value else {
        return cx.error(path, "must be a table", "write `limits = { memory = \"64MiB\", timeout = \"10s\" }`");
    };
    for (key, value) in table {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "memory" => match parse_size(&value) {
                Some(n) if (1 << 20..=4 << 30).contains(&n) => grant.limits.memory = n,
                _ => cx.error(&at, format!("`{value}` is not a size from 1MiB to 4GiB"), "write a size such as \"64MiB\""),
            },
            "output" => match parse_size(&value) {
                Some(n) if (1 << 10..=Limits::MAX_OUTPUT).contains(&n) => grant.limits.output = n,
                _ => cx.error(
                    &at,
                    format!("`{value}` is not a size from 1KiB to {}MiB (the largest result a plugin may return)", Limits::MAX_OUTPUT >> 20),
                    "write a size such as \"1MiB\"",
                ),
            },
            "timeout" => match value.as_str().and_then(parse_duration) {
                Some(d) if d >= Duration::from_millis(10) && d <= Duration::from_secs(3600) => grant.limits.timeout = d,
                _ => cx.error(&at, format!("`{value}` is not a duration from 10ms to 1h"), "write a duration such as \"10s\" or \"500ms\""),
            },
            "descriptors" => match value.as_integer() {
                Some(n) if (16..=65_536).contains(&n) => grant.limits.descriptors = n as u64,
                _ => cx.error(&at, format!("`{value}` is not a number from 16 to 65536"), "write `descriptors = 1024`"),
            },
            "concurrency" => match value.as_integer() {
                Some(n) if (1..=1000).contains(&n) => grant.limits.concurrency = n as u32,
                _ => cx.error(&at, format!("`{value}` is not a number from 1 to 1000"), "write `concurrency = 8`"),
            },
            _ => cx.error(&at, "unknown limit", "use memory, timeout, concurrency, output or descriptors"),
        }
    }
}

fn expose(cx: &mut Ctx<'_>, grant: &mut Grant, path: &str, value: Value) {
    let Value::Table(table) = value else {
        return cx.error(path, "must be a table", "write `expose = { prefix = \"name\" }`");
    };
    for (key, value) in table {
        let at = format!("{path}.{key}");
        match (key.as_str(), value) {
            ("prefix", Value::String(p)) if p.len() <= 48 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') => {
                grant.expose_prefix = Some(p);
            }
            ("prefix", other) => cx.error(&at, format!("`{other}` is not a valid prefix"), "use up to 48 of a-z A-Z 0-9 _ -, or \"\" for no prefix"),
            _ => cx.error(&at, "unknown key", "use `prefix`"),
        }
    }
}

/// Parses a size: an integer (bytes) or a string such as `64MiB`, `512 KiB`, `1GiB`, `10MB`.
pub(super) fn parse_size(value: &Value) -> Option<u64> {
    match value {
        Value::Integer(n) => u64::try_from(*n).ok(),
        Value::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (digits, unit) = s.split_at(split);
            let n: u64 = digits.parse().ok()?;
            let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
                "" | "b" => 1,
                "k" | "kib" => 1 << 10,
                "m" | "mib" => 1 << 20,
                "g" | "gib" => 1 << 30,
                "kb" => 1_000,
                "mb" => 1_000_000,
                "gb" => 1_000_000_000,
                _ => return None,
            };
            n.checked_mul(mult)
        }
        _ => None,
    }
}

/// Parses a duration such as `500ms`, `10s`, `2m`, `1h`.
pub(super) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().ok()?;
    match unit.trim() {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" | "min" => n.checked_mul(60).map(Duration::from_secs),
        "h" => n.checked_mul(3600).map(Duration::from_secs),
        _ => None,
    }
}

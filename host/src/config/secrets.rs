//! The `secrets` key: headers the host adds to one target's requests, with values the plugin
//! never sees.
//!
//! `secrets = [{ target = "https://api.example.com", header = "Authorization",
//! from_env = "API_TOKEN", prefix = "Bearer " }]` (or `from_file = "./token"`). The target must
//! be allowed by the plugin's `network` key and be `https`, unless the entry says
//! `allow_http = true`. The config names where a value comes from; the value itself is read when
//! the plugin is loaded, and never stored in the grant.

use std::path::Path;

use toml::Value;

use super::context::Ctx;
use crate::policy::{Grant, SecretGrant, SecretSource, parse_exact_target};

/// Headers a secret may not set: they shape the connection or the message, not the request's
/// credentials.
const RESERVED_HEADERS: &[&str] =
    &["host", "connection", "content-length", "transfer-encoding", "te", "trailer", "upgrade", "keep-alive", "proxy-connection", "expect"];

const EXAMPLE: &str =
    "write `secrets = [{ target = \"https://api.example.com\", header = \"Authorization\", from_env = \"API_TOKEN\", prefix = \"Bearer \" }]`";

/// Applies `secrets` to `grant`; `grant.network` must already hold the plugin's network key
/// (keys are applied in name order, and `network` sorts before `secrets`).
pub(super) fn secrets(cx: &mut Ctx<'_>, grant: &mut Grant, path: &str, value: Value) {
    let Value::Array(entries) = value else {
        return cx.error(path, "must be an array of tables", EXAMPLE);
    };
    let base = cx.file.parent().unwrap_or(Path::new(".")).to_path_buf();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("{path}[{i}]");
        let Value::Table(mut table) = entry else {
            cx.error(&at, "must be a table", EXAMPLE);
            continue;
        };
        let target = table.remove("target");
        let header = table.remove("header");
        let from_env = table.remove("from_env");
        let from_file = table.remove("from_file");
        let prefix = table.remove("prefix");
        let allow_http = table.remove("allow_http");
        for (unknown, _) in table {
            cx.error(&format!("{at}.{unknown}"), "unknown key", "use only target, header, from_env or from_file, prefix and allow_http");
        }
        let allow_http = match allow_http {
            None => false,
            Some(Value::Boolean(b)) => b,
            Some(_) => {
                cx.error(&format!("{at}.allow_http"), "must be true or false", "write `allow_http = true`");
                false
            }
        };
        let target = match target {
            Some(Value::String(t)) => match parse_exact_target(&t) {
                Ok(target) if target.scheme == "http" && !allow_http => {
                    cx.error(
                        &format!("{at}.target"),
                        format!("`{t}` is plain http: the secret would cross the network in clear"),
                        "use an https target, or add `allow_http = true` to this entry",
                    );
                    None
                }
                Ok(target) if !grant.network.check(&target).is_allowed() => {
                    cx.error(
                        &format!("{at}.target"),
                        format!("`{target}` is not allowed by this plugin's `network` key"),
                        "add the target to `network`, or correct the secret's target",
                    );
                    None
                }
                Ok(target) => Some(target),
                Err(why) => {
                    cx.error(&format!("{at}.target"), format!("`{t}`: {why}"), "write `target = \"https://api.example.com\"`");
                    None
                }
            },
            Some(_) => {
                cx.error(&format!("{at}.target"), "must be a string", "write `target = \"https://api.example.com\"`");
                None
            }
            None => {
                cx.error(&format!("{at}.target"), "is missing", "add `target = \"https://api.example.com\"`");
                None
            }
        };
        let header = match header {
            Some(Value::String(h)) => match http::HeaderName::from_bytes(h.as_bytes()) {
                Ok(name) if RESERVED_HEADERS.contains(&name.as_str()) || name.as_str().starts_with("proxy-") => {
                    cx.error(&format!("{at}.header"), format!("`{h}` is not a credential header"), "use a header such as `Authorization` or `X-Api-Key`");
                    None
                }
                Ok(name) => Some(name.as_str().to_owned()),
                Err(_) => {
                    cx.error(&format!("{at}.header"), format!("`{h}` is not a header name"), "write `header = \"Authorization\"`");
                    None
                }
            },
            Some(_) => {
                cx.error(&format!("{at}.header"), "must be a string", "write `header = \"Authorization\"`");
                None
            }
            None => {
                cx.error(&format!("{at}.header"), "is missing", "add `header = \"Authorization\"`");
                None
            }
        };
        let source = match (from_env, from_file) {
            (Some(Value::String(name)), None) if !name.is_empty() && !name.contains(['=', '\0']) => Some(SecretSource::Env(name)),
            (None, Some(Value::String(file))) if !file.is_empty() => Some(SecretSource::File(base.join(file))),
            (Some(_), Some(_)) => {
                cx.error(&at, "has both `from_env` and `from_file`", "keep one of them");
                None
            }
            (None, None) => {
                cx.error(&at, "says neither `from_env` nor `from_file`", "add `from_env = \"NAME\"` or `from_file = \"./token\"`");
                None
            }
            _ => {
                cx.error(&at, "`from_env` or `from_file` is not a valid name", "write `from_env = \"API_TOKEN\"` or `from_file = \"./token\"`");
                None
            }
        };
        let prefix = match prefix {
            None => Some(String::new()),
            Some(Value::String(p)) if p.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic()) => Some(p),
            Some(_) => {
                cx.error(&format!("{at}.prefix"), "must be printable ASCII text", "write `prefix = \"Bearer \"`");
                None
            }
        };
        let (Some(target), Some(header), Some(source), Some(prefix)) = (target, header, source, prefix) else {
            continue;
        };
        if grant.secrets.iter().any(|s| s.target == target && s.header == header) {
            cx.error(&at, format!("`{header}` for `{target}` is set twice"), "keep one entry per target and header");
            continue;
        }
        grant.secrets.push(SecretGrant { target, header, source, prefix });
    }
}

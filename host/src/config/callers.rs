//! The caller policy of `paddock.toml`: `[access]` (who may see and use which tools, resources
//! and prompts, and what needs a person's approval) and `[rates]` (rate limits), read into
//! `policy::AccessRules` and `policy::RateRules`, every problem collected with a fix.
//!
//! ```toml
//! [access]
//! default = "deny"            # "allow" (the default) or "deny"
//! destructive = "ask"         # approval of tools annotated destructiveHint: "auto" (default), "ask", "deny"
//!
//! [[access.rule]]
//! name = "readers"
//! who = ["group:readers", "scope:mcp.read"]   # "*", "principal:ID", "subject:S", "issuer:I", "scope:S", "group:G"
//! tools = ["weather_*"]
//! resources = ["file:///docs/*"]
//! prompts = ["*"]
//! effect = "allow"            # or "deny"
//! approval = "ask"            # for the tools it matches
//! scopes = ["mcp.write"]      # scopes needed to use what it matches
//!
//! [rates]
//! principal = "600/minute"                  # each principal, all its uses
//! tool = { rate = "60/minute", burst = 10 } # each principal on each tool
//! plugin = "6000/minute"                    # each plugin, all callers together
//! tools = { files_delete = "5/hour" }       # each principal on this tool
//! plugins = { weather = "100/second" }      # this plugin, all callers together
//! ```

use std::path::Path;

use toml::Value;

use super::{ConfigError, error};
use crate::policy::{AccessRules, Approval, Effect, Pattern, Rate, RateRules, Rule, Who};

/// The longest pattern or `who` entry read (a policy is written by people).
const MAX_ENTRY: usize = 1024;

/// Reads `[access]`.
pub(super) fn access(file: &Path, value: Value, problems: &mut Vec<ConfigError>) -> AccessRules {
    let mut rules = AccessRules::default();
    let Value::Table(table) = value else {
        problems.push(error(file, "access", None, "must be a table", "write `[access]` with `default`, `destructive` and `[[access.rule]]` below it"));
        return rules;
    };
    for (key, value) in table {
        let path = format!("access.{key}");
        match (key.as_str(), value) {
            ("default", Value::String(text)) => match text.as_str() {
                "allow" => rules.default = Effect::Allow,
                "deny" => rules.default = Effect::Deny,
                _ => problems.push(error(file, &path, None, &format!("`{text}` is not an effect"), "write \"allow\" or \"deny\"")),
            },
            ("destructive", Value::String(text)) => match Approval::parse(&text) {
                Some(approval) => rules.destructive = approval,
                None => problems.push(error(file, &path, None, &format!("`{text}` is not an approval"), "write \"auto\", \"ask\" or \"deny\"")),
            },
            ("rule", Value::Array(entries)) => {
                for (i, entry) in entries.into_iter().enumerate() {
                    if let Some(rule) = read_rule(file, &format!("access.rule[{i}]"), i, entry, problems) {
                        rules.rules.push(rule);
                    }
                }
            }
            ("default" | "destructive", _) => problems.push(error(file, &path, None, "must be a string", "write e.g. `default = \"deny\"`")),
            ("rule", _) => problems.push(error(file, &path, None, "must be an array of tables", "write one `[[access.rule]]` section per rule")),
            _ => problems.push(error(file, &path, None, "unknown key", "use only default, destructive and [[access.rule]]")),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for rule in &rules.rules {
        if !seen.insert(rule.name.clone()) {
            problems.push(error(file, "access.rule", None, &format!("two rules are named `{}`", rule.name), "give each rule its own name"));
        }
    }
    rules
}

fn read_rule(file: &Path, path: &str, index: usize, value: Value, problems: &mut Vec<ConfigError>) -> Option<Rule> {
    let Value::Table(table) = value else {
        problems.push(error(file, path, None, "must be a table", "write `[[access.rule]]` with `who` and patterns below it"));
        return None;
    };
    let mut rule = Rule { name: format!("rule {}", index + 1), ..Rule::default() };
    let before = problems.len();
    for (key, value) in table {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "name" => match value {
                Value::String(name) if !name.trim().is_empty() && name.len() <= MAX_ENTRY => rule.name = name,
                _ => problems.push(error(file, &at, None, "must be a non-empty string", "write e.g. `name = \"readers\"`")),
            },
            "who" => {
                for text in strings(file, &at, value, problems) {
                    match Who::parse(&text) {
                        Some(who) => rule.who.push(who),
                        None => problems.push(error(
                            file,
                            &at,
                            None,
                            &format!("`{}` names nobody", crate::escape::shorten(&text)),
                            "write \"*\", \"principal:ID\", \"subject:S\", \"issuer:I\", \"scope:S\" or \"group:G\"",
                        )),
                    }
                }
            }
            "tools" => rule.tools = strings(file, &at, value, problems).iter().map(|p| Pattern::new(p)).collect(),
            "resources" => rule.resources = strings(file, &at, value, problems).iter().map(|p| Pattern::new(p)).collect(),
            "prompts" => rule.prompts = strings(file, &at, value, problems).iter().map(|p| Pattern::new(p)).collect(),
            "scopes" => rule.scopes = strings(file, &at, value, problems),
            "effect" => match value.as_str() {
                Some("allow") => rule.effect = Effect::Allow,
                Some("deny") => rule.effect = Effect::Deny,
                _ => problems.push(error(file, &at, None, "is not an effect", "write \"allow\" or \"deny\"")),
            },
            "approval" => match value.as_str().and_then(Approval::parse) {
                Some(approval) => rule.approval = Some(approval),
                None => problems.push(error(file, &at, None, "is not an approval", "write \"auto\", \"ask\" or \"deny\"")),
            },
            _ => problems.push(error(file, &at, None, "unknown key", "use only name, who, tools, resources, prompts, effect, approval and scopes")),
        }
    }
    if rule.who.is_empty() && problems.len() == before {
        problems.push(error(
            file,
            &format!("{path}.who"),
            None,
            "names nobody, so the rule never applies",
            "write `who = [\"*\"]` for everyone, or name principals, scopes or groups",
        ));
    }
    if rule.effect == Effect::Deny && (rule.approval.is_some() || !rule.scopes.is_empty()) {
        problems.push(error(
            file,
            path,
            None,
            "a deny rule hides what it matches, so its approval and scopes never apply",
            "remove them, or make it an allow rule",
        ));
    }
    (problems.len() == before).then_some(rule)
}

fn strings(file: &Path, path: &str, value: Value, problems: &mut Vec<ConfigError>) -> Vec<String> {
    let Value::Array(items) = value else {
        problems.push(error(file, path, None, "must be an array of strings", "write e.g. `[\"weather_*\"]`"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::String(text) if !text.is_empty() && text.len() <= MAX_ENTRY => out.push(text),
            _ => problems.push(error(file, path, None, "holds something that is not a non-empty string", "write each entry as a quoted string")),
        }
    }
    out
}

/// Reads `[rates]`.
pub(super) fn rates(file: &Path, value: Value, problems: &mut Vec<ConfigError>) -> RateRules {
    let mut rules = RateRules::default();
    let Value::Table(table) = value else {
        problems.push(error(file, "rates", None, "must be a table", "write `[rates]` with `principal`, `tool` or `plugin` below it"));
        return rules;
    };
    for (key, value) in table {
        let path = format!("rates.{key}");
        match key.as_str() {
            "principal" => rules.principal = rate(file, &path, value, problems),
            "tool" => rules.tool = rate(file, &path, value, problems),
            "plugin" => rules.plugin = rate(file, &path, value, problems),
            "tools" | "plugins" => {
                let Value::Table(named) = value else {
                    problems.push(error(file, &path, None, "must be a table", &format!("write e.g. `{key} = {{ name = \"10/minute\" }}`")));
                    continue;
                };
                for (name, value) in named {
                    if let Some(r) = rate(file, &format!("{path}.{name}"), value, problems) {
                        if key == "tools" {
                            rules.tools.insert(name, r)
                        } else {
                            rules.plugins.insert(name, r)
                        };
                    }
                }
            }
            _ => problems.push(error(file, &path, None, "unknown key", "use only principal, tool, plugin, tools and plugins")),
        }
    }
    rules
}

fn rate(file: &Path, path: &str, value: Value, problems: &mut Vec<ConfigError>) -> Option<Rate> {
    let (text, burst) = match value {
        Value::String(text) => (text, None),
        Value::Table(mut table) => {
            let text = table.remove("rate");
            let burst = table.remove("burst");
            if let Some((unknown, _)) = table.into_iter().next() {
                problems.push(error(file, &format!("{path}.{unknown}"), None, "unknown key", "use only rate and burst"));
                return None;
            }
            let burst = match burst {
                None => None,
                Some(Value::Integer(n)) if (1..=i64::from(u32::MAX)).contains(&n) => Some(n as u32),
                Some(_) => {
                    problems.push(error(file, &format!("{path}.burst"), None, "must be a positive whole number", "write e.g. `burst = 10`"));
                    return None;
                }
            };
            match text {
                Some(Value::String(text)) => (text, burst),
                _ => {
                    problems.push(error(file, &format!("{path}.rate"), None, "is missing or not a string", "write e.g. `rate = \"60/minute\"`"));
                    return None;
                }
            }
        }
        _ => {
            problems.push(error(file, path, None, "must be a rate", "write e.g. `\"60/minute\"` or `{ rate = \"60/minute\", burst = 10 }`"));
            return None;
        }
    };
    match Rate::parse(&text, burst) {
        Ok(rate) => Some(rate),
        Err(why) => {
            problems.push(error(file, path, None, &why.to_string(), "write e.g. `\"60/minute\"` (units: second, minute, hour, day)"));
            None
        }
    }
}

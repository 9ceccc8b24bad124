//! Unit tests of configuration loading: merging, sizes and durations, and reporting every problem.

use std::path::Path;
use std::time::Duration;

use super::values::{parse_duration, parse_size};
use super::*;
use crate::policy::{FsMode, Limits, Target};

fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, contents) in files {
        std::fs::write(dir.path().join(name), contents).expect("write");
    }
    dir
}

#[test]
fn sizes_and_durations() {
    assert_eq!(parse_size(&toml::Value::String("64MiB".into())), Some(64 << 20));
    assert_eq!(parse_size(&toml::Value::String("512 KiB".into())), Some(512 << 10));
    assert_eq!(parse_size(&toml::Value::String("2GiB".into())), Some(2 << 30));
    assert_eq!(parse_size(&toml::Value::Integer(4096)), Some(4096));
    assert_eq!(parse_size(&toml::Value::String("64 parsecs".into())), None);
    assert_eq!(parse_size(&toml::Value::Integer(-1)), None);
    assert_eq!(parse_duration("10s"), Some(Duration::from_secs(10)));
    assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("10"), None);
    assert_eq!(parse_duration("fast"), None);
}

#[test]
fn no_files_means_default_grants() {
    let dir = folder(&[("a.wasm", "")]);
    let config = Config::load(dir.path(), None);
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    assert_eq!(config.grant("a").expect("grant"), Grant::default());
}

#[test]
fn main_file_and_side_file_merge_by_key() {
    let dir = folder(&[
        ("a.wasm", ""),
        (
            "paddock.toml",
            "[plugins.a]\nenv = { FROM = \"main\" }\nnetwork = [\"https://*.example.com\"]\nlimits = { memory = \"32MiB\" }\nexpose = { prefix = \"\" }\n",
        ),
        (
            "a.toml",
            "env = { FROM = \"side\" }\nlimits = { timeout = \"5s\", concurrency = 2, output = \"64KiB\" }\nfiles = [{ host = \"data\", guest = \"/data\", mode = \"rw\" }]\n",
        ),
    ]);
    std::fs::create_dir(dir.path().join("data")).expect("mkdir");
    let config = Config::load(dir.path(), None);
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    let grant = config.grant("a").expect("grant");
    assert_eq!(grant.env.get("FROM").map(String::as_str), Some("side"));
    assert!(grant.network.check(&Target::new("https", "api.example.com", 443)).is_allowed());
    // The side file's `limits` replaces the whole table: memory falls back to the default.
    assert_eq!(grant.limits.memory, Limits::DEFAULT_MEMORY);
    assert_eq!(grant.limits.timeout, Duration::from_secs(5));
    assert_eq!(grant.limits.concurrency, 2);
    assert_eq!(grant.limits.output, 64 << 10);
    assert_eq!(grant.expose_prefix.as_deref(), Some(""));
    assert_eq!(grant.files.len(), 1);
    assert_eq!(grant.files[0].mode, FsMode::ReadWrite);
    assert_eq!(grant.files[0].host, dir.path().join("data").canonicalize().expect("canonical"));
}

#[test]
fn the_output_limit_goes_up_to_the_largest_result_a_call_can_carry() {
    let dir = folder(&[("a.wasm", ""), ("b.wasm", ""), ("a.toml", "limits = { output = \"16MiB\" }\n"), ("b.toml", "limits = { output = \"17MiB\" }\n")]);
    let config = Config::load(dir.path(), None);
    assert_eq!(config.grant("a").expect("16 MiB is allowed").limits.output, Limits::MAX_OUTPUT);
    let problems = config.grant("b").expect_err("17 MiB is over the largest");
    let text = problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(text.contains("limits.output") && text.contains("from 1KiB to 16MiB"), "{text}");
}

#[test]
fn every_mistake_is_reported_at_once() {
    let dir = folder(&[
        ("a.wasm", ""),
        ("b.wasm", ""),
        (
            "paddock.toml",
            "[plugins.a]\nfiles = [{ host = \"/definitely/not/here\", guest = \"data\", mode = \"rx\", extra = 1 }]\nnetwork = [\"ftp://x\", \"https://ok.example\", \"nope\"]\nlimits = { memory = \"lots\", timeout = \"10\", concurrency = 0, output = \"1MiB\", cpu = 1 }\nbogus = 1\nexpose = { prefix = \"bad prefix\" }\n[plugins.ghost]\nenv = {}\n",
        ),
        ("b.toml", "env = { OK = \"yes\", BAD = 3 }\n"),
        ("orphan.toml", "env = {}\n"),
    ]);
    let config = Config::load(dir.path(), None);
    let lines: Vec<String> = config.problems().iter().map(ToString::to_string).collect();
    let text = lines.join("\n");
    for key in [
        "plugins.a.files[0].host",
        "plugins.a.files[0].guest",
        "plugins.a.files[0].mode",
        "plugins.a.files[0].extra",
        "plugins.a.network",
        "plugins.a.limits.memory",
        "plugins.a.limits.timeout",
        "plugins.a.limits.concurrency",
        "plugins.a.limits.cpu",
        "plugins.a.bogus",
        "plugins.a.expose.prefix",
        "plugins.ghost",
        "env.BAD",
        "orphan.toml",
    ] {
        assert!(text.contains(key), "`{key}` not reported:\n{text}");
    }
    assert_eq!(lines.iter().filter(|l| l.contains("plugins.a.network")).count(), 2, "{text}");
    assert!(lines.iter().all(|l| l.contains("(fix: ")), "{text}");
    assert_eq!(config.grant("a").expect_err("a is invalid").len(), 12, "{text}");
    assert!(config.grant("b").is_err());
    assert!(config.problems().iter().any(|p| p.key == "plugins.ghost" && p.severity == Severity::Warning));
    assert_eq!(config.global_errors().count(), 0, "{text}");
}

#[test]
fn malformed_main_file_is_a_global_error() {
    let dir = folder(&[("paddock.toml", "[plugins.a\nenv = 1\n")]);
    let config = Config::load(dir.path(), None);
    let errors: Vec<_> = config.global_errors().collect();
    assert_eq!(errors.len(), 1, "{:?}", config.problems());
    assert!(errors[0].message.contains("invalid TOML"), "{}", errors[0]);
}

#[test]
fn explicit_config_file_must_exist() {
    let dir = folder(&[]);
    let config = Config::load(dir.path(), Some(Path::new("/definitely/missing.toml")));
    assert_eq!(config.global_errors().count(), 1);
}

#[test]
fn secrets_name_a_granted_target_and_a_source_never_a_value() {
    let dir = folder(&[
        ("a.wasm", ""),
        (
            "a.toml",
            "network = [\"https://api.example.com\", \"http://127.0.0.1:8080\"]\nsecrets = [\n  { target = \"https://api.example.com\", header = \"Authorization\", from_env = \"API_TOKEN\", prefix = \"Bearer \" },\n  { target = \"http://127.0.0.1:8080\", header = \"X-Key\", from_file = \"key.txt\", allow_http = true },\n]\n",
        ),
    ]);
    let config = Config::load(dir.path(), None);
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    let secrets = config.grant("a").expect("grant").secrets;
    assert_eq!(secrets.len(), 2);
    assert_eq!(secrets[0].target, Target::new("https", "api.example.com", 443));
    assert_eq!(secrets[0].header, "authorization");
    assert_eq!(secrets[0].source, crate::policy::SecretSource::Env("API_TOKEN".into()));
    assert_eq!(secrets[0].prefix, "Bearer ");
    assert_eq!(secrets[1].source, crate::policy::SecretSource::File(dir.path().join("key.txt")));
}

#[test]
fn every_bad_secret_is_reported_with_its_fix() {
    let dir = folder(&[
        ("a.wasm", ""),
        (
            "a.toml",
            "network = [\"https://api.example.com\", \"http://plain.example\", \"https://*.wild.example\"]\nsecrets = [\n  { target = \"https://other.example\", header = \"Authorization\", from_env = \"T\" },\n  { target = \"http://plain.example\", header = \"Authorization\", from_env = \"T\" },\n  { target = \"https://*.wild.example\", header = \"Authorization\", from_env = \"T\" },\n  { target = \"https://api.example.com\", header = \"Host\", from_env = \"T\" },\n  { target = \"https://api.example.com\", header = \"X-Key\" },\n  { target = \"https://api.example.com\", header = \"X-Key\", from_env = \"T\", from_file = \"t\" },\n  { target = \"https://api.example.com\", header = \"X-Key\", from_env = \"T\", value = \"inline\" },\n]\n",
        ),
    ]);
    let config = Config::load(dir.path(), None);
    let messages: Vec<String> = config.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(messages.len(), 7, "{messages:#?}");
    for expected in ["not allowed by this plugin's `network`", "plain http", "wildcard", "not a credential header", "neither", "both", "unknown key"] {
        assert!(messages.iter().any(|m| m.contains(expected)), "no problem mentions `{expected}`: {messages:#?}");
    }
    assert!(config.grant("a").is_err());
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// TOML-ish text built from the keys and shapes a plugin table uses, so most cases reach
    /// the validators rather than the TOML parser.
    fn table_text() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            Just("\"64MiB\"".to_owned()),
            Just("\"10s\"".to_owned()),
            Just("-1".to_owned()),
            Just("99999999999999".to_owned()),
            Just("[\"https://*.example.com\", \"http://10.0.0.0/8:*\"]".to_owned()),
            Just("[{ host = \"..\", guest = \"/x\" }]".to_owned()),
            Just("{ memory = \"1KiB\", output = \"1GiB\", descriptors = 3 }".to_owned()),
            Just("[{ target = \"http://a.example\", header = \"Host\" }]".to_owned()),
            "\"[ -~]{0,12}\"",
            "[0-9]{1,6}",
        ];
        let key = prop_oneof![Just("files"), Just("env"), Just("network"), Just("secrets"), Just("limits"), Just("expose"), Just("bogus")];
        proptest::collection::vec((key, value), 0..6).prop_map(|pairs| pairs.into_iter().map(|(k, v)| format!("{k} = {v}\n")).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Any plugin config loads or reports problems, each naming its file and a fix; a
        /// plugin with any problem gets no grant, and one without problems gets exactly one.
        #[test]
        fn any_config_loads_or_reports_every_problem(text in table_text(), raw in ".{0,60}") {
            for contents in [text.as_str(), raw.as_str()] {
                let dir = folder(&[("a.wasm", ""), ("a.toml", contents)]);
                let config = Config::load(dir.path(), None);
                let problems: Vec<&ConfigError> = config.problems().iter().filter(|p| p.severity == Severity::Error).collect();
                for p in &problems {
                    prop_assert!(!p.fix.is_empty(), "{}", p);
                    prop_assert!(p.file.starts_with(dir.path()), "{}", p);
                }
                prop_assert_eq!(config.grant("a").is_ok(), problems.is_empty(), "{:?}", problems);
            }
        }
    }
}

#[test]
fn caller_policy_is_read_from_the_main_file() {
    let dir = folder(&[(
        "paddock.toml",
        r#"
[access]
default = "deny"
destructive = "ask"

[[access.rule]]
name = "readers"
who = ["group:readers", "scope:mcp.read"]
tools = ["weather_*"]
resources = ["file:///docs/*"]

[[access.rule]]
name = "admins"
who = ["group:admins"]
tools = ["*"]
approval = "ask"
scopes = ["mcp.admin"]

[rates]
principal = "600/minute"
tool = { rate = "60/minute", burst = 10 }
tools = { files_delete = "5/hour" }
plugins = { weather = "100/second" }
"#,
    )]);
    let config = Config::load(dir.path(), None);
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    let access = config.access();
    assert_eq!(access.default, crate::policy::Effect::Deny);
    assert_eq!(access.destructive, crate::policy::Approval::Ask);
    assert_eq!(access.rules.len(), 2);
    assert_eq!(access.rules[0].name, "readers");
    assert_eq!(access.rules[0].who, vec![crate::policy::Who::Group("readers".into()), crate::policy::Who::Scope("mcp.read".into())]);
    assert_eq!(access.rules[1].approval, Some(crate::policy::Approval::Ask));
    assert_eq!(access.rules[1].scopes, vec!["mcp.admin".to_owned()]);
    let rates = config.rates();
    assert_eq!(rates.principal.map(|r| r.count), Some(600));
    assert_eq!(rates.tool.map(|r| (r.count, r.burst)), Some((60, 10)));
    assert_eq!(rates.for_tool("files_delete").map(|r| r.period), Some(Duration::from_secs(3600)));
    assert_eq!(rates.for_plugin("weather").map(|r| r.count), Some(100));
}

#[test]
fn every_mistake_in_the_caller_policy_is_reported_and_stops_the_start() {
    let dir = folder(&[(
        "paddock.toml",
        r#"
[access]
default = "maybe"
colour = "blue"

[[access.rule]]
who = ["role:admin"]
tools = ["*"]

[[access.rule]]
tools = ["x"]

[[access.rule]]
name = "odd"
who = ["*"]
effect = "deny"
approval = "ask"

[rates]
principal = "0/minute"
tool = "5/fortnight"
tools = { x = { rate = "1/s", burst = 0 } }
"#,
    )]);
    let config = Config::load(dir.path(), None);
    let keys: Vec<&str> = config.problems().iter().map(|p| p.key.as_str()).collect();
    for expected in [
        "access.default",
        "access.colour",
        "access.rule[0].who",
        "access.rule[1].who",
        "access.rule[2]",
        "rates.principal",
        "rates.tool",
        "rates.tools.x.burst",
    ] {
        assert!(keys.contains(&expected), "{expected} not reported: {keys:?}");
    }
    assert!(config.global_errors().count() >= 8, "a broken policy stops the start");
    assert!(config.problems().iter().all(|p| !p.fix.is_empty()));
}

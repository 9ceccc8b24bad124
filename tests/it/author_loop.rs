//! The plugin author's loop as a new user meets it: `paddock new` makes a project that names only
//! the SDK; its unit tests pass; it builds for wasm32-wasip2; `paddock check` passes; `paddock
//! call` answers a tool, a resource, a prompt, a completion and an input round, against the folder
//! and against a running server's URL; and `paddock dev` serves it and swaps in a rebuilt version
//! when a source file is saved.

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_tests::http::HttpHost;
use paddock_tests::{StdioHost, repo_root, run_paddock};
use serde_json::{Value, json};

/// Builds can compile the SDK's dependencies from scratch on a cold machine.
const BUILD_LIMIT: Duration = Duration::from_secs(900);

/// Where the generated projects build: shared by the runs of one checkout.
fn target_dir() -> std::path::PathBuf {
    repo_root().join("target/paddock-new")
}

/// Runs cargo with `args` in the shared target folder; its combined output.
async fn cargo(args: &[&OsStr]) -> Result<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let run = tokio::process::Command::new(cargo).args(args).env("CARGO_TARGET_DIR", target_dir()).env_remove("RUSTFLAGS").kill_on_drop(true).output();
    let out = tokio::time::timeout(BUILD_LIMIT, run).await.context("cargo did not finish in time")??;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure!(out.status.success(), "cargo {args:?} failed:\n{text}");
    Ok(text)
}

async fn call(args: &[&str]) -> Result<(i32, Value, String)> {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run_paddock(&all).await?;
    let value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    Ok((code, value, stderr))
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_new_plugin_builds_passes_check_answers_every_call_and_is_swapped_in_by_dev_when_saved() -> Result<()> {
    let work = tempfile::tempdir()?;
    let work_dir = work.path().to_str().context("path")?;
    let (code, out, err) = run_paddock(&["new", "greeter", "--dir", work_dir]).await?;
    ensure!(code == 0, "paddock new failed: {out}{err}");
    let project = work.path().join("greeter");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml"))?;
    assert!(manifest.contains("paddock-sdk") && !manifest.contains("serde") && !manifest.contains("schemars"), "only the SDK is named:\n{manifest}");
    let (again, _, refused) = run_paddock(&["new", "greeter", "--dir", work_dir]).await?;
    assert!(again == 2 && refused.contains("already exists"), "{refused}");

    // Its own unit tests, natively; then the component.
    let manifest_path = project.join("Cargo.toml");
    let tested = cargo(&["test".as_ref(), "--manifest-path".as_ref(), manifest_path.as_os_str()]).await?;
    assert!(tested.contains("test result: ok. 2 passed"), "{tested}");
    cargo(
        &["build", "--release", "--target", "wasm32-wasip2", "--manifest-path"]
            .map(OsStr::new)
            .iter()
            .copied()
            .chain([manifest_path.as_os_str()])
            .collect::<Vec<_>>(),
    )
    .await?;
    let folder = work.path().join("plugins");
    std::fs::create_dir(&folder)?;
    std::fs::copy(target_dir().join("wasm32-wasip2/release/greeter.wasm"), folder.join("greeter.wasm"))?;
    std::fs::copy(project.join("greeter.toml"), folder.join("greeter.toml"))?;
    let folder_arg = folder.to_str().context("path")?;
    let (code, out, err) = run_paddock(&["check", folder_arg]).await?;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 plugin(s) ready: 2 tool(s), 0 resource(s), 1 resource template(s), 1 prompt(s)"), "{out}");

    // Every kind of call, against the folder.
    let (code, greeted, err) = call(&[folder_arg, "greeter_greet", "--args", r#"{"name":"Ada","times":2}"#]).await?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(greeted["structuredContent"], json!({"text": "Hello, Ada! Hello, Ada!", "words": 4}), "{greeted}");
    let (_, read, err) = call(&[folder_arg, "--read", "greeter://greetings/Ada"]).await?;
    assert_eq!(read["contents"][0]["text"], "Hello, Ada!", "{read} {err}");
    let (_, prompt, err) = call(&[folder_arg, "--prompt", "greeter_welcome", "--args", r#"{"topic":"tea"}"#]).await?;
    assert!(prompt["messages"][0]["content"]["text"].as_str().is_some_and(|t| t.contains("about tea")), "{prompt} {err}");
    let (code, completed, err) = call(&[folder_arg, "--complete", "prompt:greeter_welcome", "--argument", "topic=te"]).await?;
    assert_eq!(code, 0, "{err}");
    assert!(completed["completion"]["values"].is_array(), "{completed}");
    let (_, introduced, err) = call(&[folder_arg, "greeter_introduce", "--answer", r#"introduction={"name":"Ada"}"#]).await?;
    assert_eq!(text_of(&introduced), "Nice to meet you, Ada.", "{introduced} {err}");
    let (_, declined, _) = call(&[folder_arg, "greeter_introduce", "--answer", "introduction=decline"]).await?;
    assert_eq!(text_of(&declined), "Maybe next time.");
    let (code, _, asked) = call(&[folder_arg, "greeter_introduce"]).await?;
    assert!(code == 2 && asked.contains("--answer introduction="), "without a terminal the question is named with how to answer it: {asked}");

    // The same input round against a running server, as a 2026-07-28 client.
    let host = HttpHost::start(&folder, &[]).await?;
    let url = host.url("");
    let (code, introduced, err) = call(&[&url, "greeter_introduce", "--answer", r#"introduction={"name":"Grace"}"#]).await?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(text_of(&introduced), "Nice to meet you, Grace.", "{introduced}");
    let (_, read, err) = call(&[&url, "--read", "greeter://greetings/Grace"]).await?;
    assert_eq!(read["contents"][0]["text"], "Hello, Grace!", "{read} {err}");
    drop(host);

    // `paddock dev`: serving the build; a save is rebuilt, checked and swapped in.
    let args = [OsStr::new("dev"), project.as_os_str()];
    let mut dev = StdioHost::start_command(&args, &[("CARGO_TARGET_DIR", target_dir().as_os_str())])?;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    dev.send_line(&init.to_string()).await?;
    let first = dev.recv_within(BUILD_LIMIT).await?;
    assert_eq!(first["id"], 1, "{first}");
    dev.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await?;
    let described = |list: &Value| -> Option<String> {
        list["result"]["tools"].as_array()?.iter().find(|t| t["name"] == "greeter_greet")?["description"].as_str().map(str::to_owned)
    };
    let list = dev.request("tools/list", json!({})).await?;
    assert_eq!(described(&list).as_deref(), Some("Greets someone by name."), "{list}");
    let source = project.join("src/lib.rs");
    let edited = std::fs::read_to_string(&source)?.replace("/// Greets someone by name.", "/// Greets someone by name, warmly.");
    std::fs::write(&source, edited)?;
    let saved = Instant::now();
    loop {
        let message = dev.recv_within(BUILD_LIMIT).await?;
        if message["method"] == "notifications/tools/list_changed" {
            break;
        }
    }
    let list = dev.request("tools/list", json!({})).await?;
    assert_eq!(described(&list).as_deref(), Some("Greets someone by name, warmly."), "{list}");
    eprintln!("paddock dev: save to swapped in: {:.1} s", saved.elapsed().as_secs_f64());
    assert_eq!(dev.close_within(Duration::from_secs(30)).await?, 0);
    Ok(())
}

//! Loading a plugin folder: broken, wrong-world and badly granted plugins are reported with
//! their path and reason while the good ones serve; a later start serves from the catalogs an
//! earlier one recorded, and reads them again.

use std::ffi::OsStr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use paddock_tests::{PluginDir, StdioHost, WAIT, first_text, fixture_wasm, run_paddock, sample_wasm};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// A folder with one good plugin and one of each kind of bad one.
fn mixed_folder() -> PluginDir {
    PluginDir::new()
        .add("text", &sample_wasm("text"))
        .write("broken.wasm", b"this is not webassembly at all")
        .write("core.wasm", b"\0asm\x01\0\0\0")
        .add("otherworld", &fixture_wasm("other-world"))
        .add("granted", &fixture_wasm("fixture"))
        .write("granted.toml", "files = [{ host = \"/definitely/not/here\", guest = \"data\", mode = \"rx\" }]\nnetwork = [\"ftp://\"]\nbogus = 1\n")
}

#[tokio::test]
async fn check_reports_every_bad_plugin_with_path_and_reason() {
    let plugins = mixed_folder();
    let dir = plugins.path().to_str().expect("utf-8 path");
    let (code, stdout, stderr) = run_paddock(&["check", dir]).await.expect("run check");
    let report = format!("{stdout}\n{stderr}");
    assert_ne!(code, 0, "check must fail when something is wrong:\n{report}");
    for name in ["broken.wasm", "core.wasm", "otherworld.wasm", "granted.toml"] {
        assert!(report.contains(name), "{name} not reported:\n{report}");
    }
    assert!(report.contains("core module"), "a core module is named as such:\n{report}");
    assert!(report.contains("paddock:plugin"), "the wrong world names the expected one:\n{report}");
    // Every problem in the grant file is reported, not just the first.
    for key in ["mode", "guest", "network", "bogus"] {
        assert!(report.contains(key), "grant problem `{key}` not reported:\n{report}");
    }
}

#[tokio::test]
async fn serve_keeps_serving_good_plugins_next_to_bad_ones() {
    let plugins = mixed_folder();
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let tools = host.request("tools/list", json!({})).await.expect("tools/list");
    let names: Vec<_> = tools["result"]["tools"].as_array().expect("tools").iter().map(|t| t["name"].as_str().unwrap_or_default().to_owned()).collect();
    assert!(names.contains(&"text_echo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("granted_") || n.starts_with("otherworld_")), "bad plugins must not serve: {names:?}");
    let result = host.call_tool("text_echo", json!({"text": "fine"})).await.expect("call");
    assert_eq!(first_text(&result), "fine");
    assert_eq!(host.close().await.expect("exit"), 0);
}

/// `wasm` with a custom section appended: the same component, another content hash.
fn distinct_copy(wasm: &[u8], tag: u32) -> Vec<u8> {
    let name = b"paddock-test";
    let payload = tag.to_le_bytes();
    let size = 1 + name.len() + payload.len();
    assert!(size < 128, "one-byte LEB128 sizes");
    let mut out = wasm.to_vec();
    out.extend_from_slice(&[0, size as u8, name.len() as u8]);
    out.extend_from_slice(name);
    out.extend_from_slice(&payload);
    out
}

#[tokio::test]
async fn a_long_cold_compile_shows_progress_and_compiles_each_content_once() {
    let fixture = std::fs::read(fixture_wasm("fixture")).expect("fixture");
    let mut plugins = PluginDir::new();
    let mut config = String::new();
    for i in 0..16u32 {
        plugins = plugins.write(&format!("p{i}.wasm"), distinct_copy(&fixture, i));
        config.push_str(&format!("[plugins.p{i}]\nexpose = {{ prefix = \"p{i}\" }}\n"));
    }
    // Two more files with the content of the first: no more compiling.
    plugins = plugins.write("q0.wasm", distinct_copy(&fixture, 0)).write("q1.wasm", distinct_copy(&fixture, 0));
    config.push_str("[plugins.q0]\nexpose = { prefix = \"q0\" }\n[plugins.q1]\nexpose = { prefix = \"q1\" }\n");
    plugins = plugins.write("paddock.toml", config);
    let cache = tempfile::tempdir().expect("cache");
    let child = tokio::process::Command::new(paddock_tests::paddock_bin())
        .arg("check")
        .arg(plugins.path())
        .arg("--cache-dir")
        .arg(cache.path())
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), child.wait_with_output()).await.expect("in time").expect("output");
    // `check` exits non-zero here: the copies share resource URIs, which a prefix does not rename.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("plugin loaded").count(), 18, "{stderr}");
    // 16 distinct components take well over a second to compile on any machine this runs on.
    assert!(stderr.contains("compiling plugins: "), "no progress on stderr:\n{stderr}");
    assert!(stderr.contains("plugins compiled") && stderr.contains("components=16") && stderr.contains("plugins=18"), "{stderr}");
    let artifacts =
        std::fs::read_dir(cache.path()).expect("cache").filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "cwasm"))).count();
    assert_eq!(artifacts, 16);
}

/// The tool names of a `tools/list` reply.
fn tool_names(reply: &Value) -> Vec<String> {
    reply["result"]["tools"].as_array().map(|tools| tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// A start after a first one serves each plugin from the catalog the first one recorded,
/// answers before the plugin's component has loaded (a call waits for it), and reads the catalog
/// again once the plugin can run: a tool listed since the record (the fixture lists `extra`
/// while a file is in its granted folder) is then served, and announced if it came late.
#[tokio::test]
async fn a_later_start_serves_recorded_catalogs_then_reads_them_again() {
    let data = tempfile::tempdir().expect("tmp");
    let cache = tempfile::tempdir().expect("tmp");
    let plugins = PluginDir::new()
        .add("fx", &fixture_wasm("fixture"))
        .write("fx.toml", format!("files = [{{ host = {:?}, guest = \"/data\", mode = \"ro\" }}]\n", data.path()));
    let args = [OsStr::new("serve"), plugins.path().as_os_str()];
    let env = [("PADDOCK_CACHE_DIR", cache.path().as_os_str()), ("RUST_LOG", OsStr::new("info"))];

    let mut first = StdioHost::start_command_logging(&args, &env, Stdio::null()).expect("start");
    first.initialize("2025-11-25").await.expect("initialize");
    let listed = tool_names(&first.request("tools/list", json!({})).await.expect("tools/list"));
    assert!(listed.contains(&"fx_echo".to_owned()) && !listed.contains(&"fx_extra".to_owned()), "{listed:?}");
    assert_eq!(first.close().await.expect("exit"), 0);
    let records = std::fs::read_dir(cache.path()).expect("cache").flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".catalog")).count();
    assert_eq!(records, 1, "the first start records the plugin's catalog");

    std::fs::write(data.path().join("extra-tool"), b"").expect("write");
    let mut second = StdioHost::start_command_logging(&args, &env, Stdio::piped()).expect("start");
    let mut log = tokio::io::BufReader::new(second.take_stderr().expect("stderr")).lines();
    let from_record = tokio::spawn(async move {
        while let Ok(Some(line)) = log.next_line().await {
            if line.contains("plugin loaded") && line.contains("plugin=fx") {
                return line.contains("cache=Recorded");
            }
        }
        false
    });
    second.initialize("2025-11-25").await.expect("initialize");
    let echoed = second.call_tool("fx_echo", json!({"text": "waited"})).await.expect("call");
    assert_eq!(first_text(&echoed), "waited", "a call to a plugin served from its record waits for it and runs");
    assert!(tokio::time::timeout(WAIT, from_record).await.expect("log in time").expect("log task"), "the second start serves the plugin from its record");

    // The record lacked `extra`; once the catalog is read again it is served, and a client that
    // listed before that hears of the change.
    let started = Instant::now();
    let mut before = tool_names(&second.request("tools/list", json!({})).await.expect("tools/list"));
    let early = !before.contains(&"fx_extra".to_owned());
    if early {
        let mut announced = false;
        while started.elapsed() < WAIT && !before.contains(&"fx_extra".to_owned()) {
            let message = second.recv_within(WAIT.saturating_sub(started.elapsed()).max(Duration::from_millis(1))).await.expect("the change is announced");
            announced |= message["method"] == "notifications/tools/list_changed";
            if announced {
                before = tool_names(&second.request("tools/list", json!({})).await.expect("tools/list"));
            }
        }
        assert!(announced, "a list that changed since its record is announced");
    }
    assert!(before.contains(&"fx_extra".to_owned()), "the catalog read again is served: {before:?}");
    assert_eq!(second.close().await.expect("exit"), 0);
}

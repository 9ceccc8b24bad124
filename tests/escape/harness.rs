//! Running one attack against the real binary: a plugins folder with the attacker (`hostile`),
//! its permitted twin (`twin`) and an innocent bystander (`innocent`, the fixture); a host with
//! JSON logs on a watched stderr; the attack, the checks the suite makes of every row, the twin.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_tests::{PluginDir, StdioHost, first_text, fixture_wasm, repo_root, test_cache_dir};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use crate::attacks::{Attack, Call, Component, Expect, Recorded};
use crate::servers::{DECOY_BODY, Servers};

/// How soon the host must answer a ping and the innocent plugin, during and after an attack.
pub const ANSWERS_WITHIN: Duration = Duration::from_secs(1);
/// The longest an attack may take to be answered (the deadline attacks take about a second).
const ATTACK_ANSWERED_WITHIN: Duration = Duration::from_secs(20);
/// How long to wait for a log record that must come.
const RECORD_WITHIN: Duration = Duration::from_secs(5);
/// The most log records that may name the attacker over one attack: the guest output budget
/// (256 records a call), at most 8 logged refusals of each kind, and the call's own warnings.
/// A flood that reached the log unbounded would write tens of thousands.
const MAX_RECORDS_PER_ATTACK: usize = 400;
/// The most notifications the client may receive for one attack: the log budget (1000 records
/// a call) and the change notices (64 of each kind).
const MAX_NOTIFICATIONS_PER_ATTACK: usize = 1_200;
/// Text no attack's answer may contain: the content of files, servers and environment the
/// plugin was not granted.
const NEVER_LEAKED: [&str; 4] = ["SECRET", DECOY_BODY, "RUST_LOG", "root:x:0:0"];
/// The plugin ids in every folder.
pub const ATTACKER: &str = "hostile";
pub const TWIN: &str = "twin";
pub const INNOCENT: &str = "innocent";

impl Component {
    /// The component's bytes.
    pub fn bytes(self) -> Vec<u8> {
        let read = |name: &str| std::fs::read(fixture_wasm(name)).expect("read the component");
        match self {
            Component::Hostile => read("hostile"),
            Component::BadCatalog => read("bad-catalog"),
            Component::OtherWorld => read("other-world"),
            Component::UnknownImport => read("unknown-import"),
            Component::TableBomb => table_bomb().to_vec(),
            Component::CoreModule => b"\0asm\x01\0\0\0".to_vec(),
            Component::Garbage => (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect(),
            Component::Truncated => {
                let whole = read("hostile");
                whole[..whole.len() / 2].to_vec()
            }
            Component::OlderContract => older_contract(),
        }
    }
}

/// A component exporting the interfaces of the preview contract `paddock:plugin@0.1.0`: a
/// plugin from before 0.2.0 that the host must name as such instead of loading.
fn older_contract() -> Vec<u8> {
    let wit = "package paddock:plugin@0.1.0;\n\
               interface tools { list-tools: func() -> list<string>; call-tool: func(name: string, arguments: string) -> string; }\n\
               world plugin { export tools; }";
    let mut resolve = wit_parser::Resolve::default();
    let package = resolve.push_str("older.wit", wit).expect("the older contract parses");
    let world = resolve.select_world(&[package], Some("plugin")).expect("its world");
    let mut module = wit_component::dummy_module(&resolve, world, wit_parser::ManglingAndAbi::Standard32);
    wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8).expect("embed");
    wit_component::ComponentEncoder::default().validate(true).module(&module).expect("module").encode().expect("encode")
}

/// `tests/plugins/table-bomb/table_bomb.wat` with the `plugin` world of `wit/paddock-plugin@0.2.0/plugin.wit`
/// embedded, wrapped as a component.
fn table_bomb() -> &'static [u8] {
    static COMPONENT: OnceLock<Vec<u8>> = OnceLock::new();
    COMPONENT.get_or_init(|| {
        let root = repo_root();
        let mut module = wat::parse_file(root.join("tests/plugins/table-bomb/table_bomb.wat")).expect("table_bomb.wat parses");
        let mut resolve = wit_parser::Resolve::default();
        let (package, _) = resolve.push_path(root.join("wit/paddock-plugin@0.2.0")).expect("the contract parses");
        let world = resolve.select_world(&[package], Some("plugin")).expect("the plugin world");
        wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8).expect("embed the world");
        wit_component::ComponentEncoder::default().validate(true).module(&module).expect("the module matches the world").encode().expect("encode the component")
    })
}

/// One plugin's directory tree (see `attacks.rs`).
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn create(root: PathBuf) -> Tree {
        std::fs::create_dir_all(root.join("data/sub")).expect("create data");
        std::fs::create_dir_all(root.join("ro")).expect("create ro");
        std::fs::write(root.join("data/inside.txt"), "INSIDE the grant").expect("seed data");
        std::fs::write(root.join("data/sub/deep.txt"), "DEEP inside the grant").expect("seed data");
        std::fs::write(root.join("ro/notes.txt"), "read-only notes").expect("seed ro");
        std::fs::write(root.join("outside.txt"), "SECRET outside every grant").expect("seed outside");
        Tree { root }
    }

    /// Every file and directory of the tree outside `data/`, with its content: what no attack
    /// may change.
    fn protected(&self) -> BTreeMap<PathBuf, String> {
        let mut seen = BTreeMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
                let path = entry.path();
                if path == self.root.join("data") {
                    continue;
                }
                let file_type = entry.file_type().expect("file type");
                let content = if file_type.is_dir() {
                    stack.push(path.clone());
                    "<dir>".to_owned()
                } else if file_type.is_symlink() {
                    format!("<link to {}>", std::fs::read_link(&path).map(|p| p.display().to_string()).unwrap_or_default())
                } else {
                    std::fs::read_to_string(&path).unwrap_or_else(|_| "<unreadable>".to_owned())
                };
                seen.insert(path, content);
            }
        }
        seen
    }
}

/// Placeholders of grants and arguments, for one plugin in the folder `plugins`.
fn render(template: &str, servers: &Servers, tree: &Path, plugins: &Path) -> String {
    let ports = [
        ("{granted}", servers.granted),
        ("{decoy}", servers.decoy),
        ("{redirect_out}", servers.redirect_out),
        ("{redirect_in}", servers.redirect_in),
        ("{silent}", servers.silent),
        ("{endless}", servers.endless),
        ("{drip}", servers.drip),
        ("{udp}", servers.udp),
    ];
    let mut text = template
        .replace("{data}", &tree.join("data").display().to_string())
        .replace("{ro}", &tree.join("ro").display().to_string())
        .replace("{plugins}", &plugins.display().to_string())
        .replace("{cache}", &test_cache_dir().display().to_string());
    for (name, port) in ports {
        text = text.replace(name, &port.to_string());
    }
    text
}

/// The host's JSON log records, as they arrive on its stderr.
pub struct Log {
    records: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
}

impl Log {
    fn watch(stderr: tokio::process::ChildStderr) -> Log {
        let (sender, records) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let record = serde_json::from_str(&line).unwrap_or_else(|_| json!({"unparsed": line}));
                if sender.send(record).is_err() {
                    break;
                }
            }
        });
        Log { records, seen: Vec::new() }
    }

    /// Every record, once the host has exited and closed its stderr.
    async fn all(mut self) -> Result<Vec<Value>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while let Some(record) = tokio::time::timeout_at(deadline, self.records.recv()).await.context("stderr still open after the host exited")? {
            self.seen.push(record);
        }
        Ok(self.seen)
    }

    /// Waits (at most `RECORD_WITHIN`) for a record that `wanted` accepts.
    pub async fn expect(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Result<Value> {
        if let Some(found) = self.seen.iter().find(|r| wanted(r)) {
            return Ok(found.clone());
        }
        let deadline = tokio::time::Instant::now() + RECORD_WITHIN;
        loop {
            match tokio::time::timeout_at(deadline, self.records.recv()).await {
                Ok(Some(record)) => {
                    let found = wanted(&record);
                    self.seen.push(record);
                    if found {
                        return Ok(self.seen.last().cloned().unwrap_or_default());
                    }
                }
                Ok(None) | Err(_) => bail!("no log record {what} among {:#?}", self.seen),
            }
        }
    }
}

/// A host serving one plugins folder, with replies routed by id.
pub struct Host {
    pub stdio: StdioHost,
    pub log: Log,
    early: HashMap<i64, Value>,
    next_id: i64,
    /// Notifications received so far.
    pub notifications: usize,
}

impl Host {
    /// Starts `paddock serve` on `plugins` with JSON logs at `warn` and initializes a session.
    pub async fn start(plugins: &Path) -> Result<Host> {
        let mut stdio = StdioHost::start_logging(plugins, &["--log-format", "json"], "info", Stdio::piped())?;
        let log = Log::watch(stdio.take_stderr().context("piped stderr")?);
        let mut host = Host { stdio, log, early: HashMap::new(), next_id: 1_000, notifications: 0 };
        let id =
            host.send("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "escape", "version": "0"}})).await?;
        host.reply(id, Duration::from_secs(30)).await?;
        host.stdio.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await?;
        Ok(host)
    }

    /// Sends a request without waiting; returns its id.
    pub async fn send(&mut self, method: &str, params: Value) -> Result<i64> {
        let id = self.next_id;
        self.next_id += 1;
        self.stdio.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()).await?;
        Ok(id)
    }

    /// The reply to request `id`, waiting at most `limit`; replies to other requests that arrive
    /// first are kept for later.
    pub async fn reply(&mut self, id: i64, limit: Duration) -> Result<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(reply) = self.early.remove(&id) {
                return Ok(reply);
            }
            let message = tokio::time::timeout_at(deadline, self.stdio.recv()).await.with_context(|| format!("no reply to {id} within {limit:?}"))??;
            match message.get("id").and_then(Value::as_i64) {
                Some(other) => {
                    self.early.insert(other, message);
                }
                None if message.get("method").is_some() => self.notifications += 1,
                None => bail!("a reply without a usable id: {message}"),
            }
        }
    }

    /// Replies that arrived and were never claimed.
    pub fn unclaimed(&self) -> usize {
        self.early.len()
    }

    /// Calls `<plugin>_<tool>` and returns the JSON-RPC reply.
    pub async fn call(&mut self, plugin: &str, call: &Call, args: Value, limit: Duration) -> Result<Value> {
        let id = self.send("tools/call", json!({"name": format!("{plugin}_{}", call.tool), "arguments": args})).await?;
        self.reply(id, limit).await
    }

    /// A ping and a call to the innocent plugin, both answered correctly within `ANSWERS_WITHIN`.
    pub async fn answers_others(&mut self, when: &str) -> Result<()> {
        self.answers(when, false).await
    }

    /// As `answers_others`, but the innocent call may instead be refused at once with `-32000`
    /// (the client already has the most requests in flight a channel may have).
    pub async fn answers_others_or_busy(&mut self, when: &str) -> Result<()> {
        self.answers(when, true).await
    }

    async fn answers(&mut self, when: &str, busy_allowed: bool) -> Result<()> {
        let started = Instant::now();
        let ping = self.send("ping", json!({})).await?;
        let echo = self.send("tools/call", json!({"name": format!("{INNOCENT}_echo"), "arguments": {"text": "still answering"}})).await?;
        let ping = self.reply(ping, Duration::from_secs(10)).await?;
        let echo = self.reply(echo, Duration::from_secs(10)).await?;
        let took = started.elapsed();
        ensure!(ping["result"] == json!({}), "{when}: ping answered {ping}");
        let busy = busy_allowed && echo["error"]["code"] == -32000;
        ensure!(busy || first_text(&echo["result"]) == "still answering", "{when}: the innocent plugin answered {echo}");
        ensure!(took < ANSWERS_WITHIN, "{when}: the ping and the innocent call took {took:?}");
        Ok(())
    }

    /// Closes stdin; the host must exit with 0 soon. Returns every log record it wrote.
    pub async fn close(self) -> Result<Vec<Value>> {
        let code = self.stdio.close_within(Duration::from_secs(15)).await?;
        ensure!(code == 0, "the host exited with {code}");
        self.log.all().await
    }
}

/// A folder with the attacker, the twin and the innocent fixture, and each plugin's tree.
pub struct Folder {
    pub plugins: PluginDir,
    _trees: tempfile::TempDir,
    attacker_tree: Tree,
    twin_tree: Tree,
}

impl Folder {
    pub fn new(attack: &Attack, servers: &Servers) -> Folder {
        let trees = tempfile::tempdir().expect("trees");
        let attacker_tree = Tree::create(trees.path().join(ATTACKER));
        let twin_tree = Tree::create(trees.path().join(TWIN));
        let plugins = PluginDir::new();
        let folder = plugins.path().to_path_buf();
        let plugins = plugins
            .add(INNOCENT, &fixture_wasm("fixture"))
            .write(&format!("{ATTACKER}.wasm"), attack.component.bytes())
            .write(&format!("{ATTACKER}.toml"), render(attack.grant, servers, &attacker_tree.root, &folder))
            .write(&format!("{TWIN}.wasm"), attack.twin.component.bytes())
            .write(&format!("{TWIN}.toml"), render(attack.twin.grant, servers, &twin_tree.root, &folder));
        Folder { plugins, _trees: trees, attacker_tree, twin_tree }
    }
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"].as_array().map(|tools| tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// Whether `record` names the attacker and is what `recorded` asks for.
fn is_recorded(recorded: Recorded, record: &Value) -> bool {
    if record["plugin"] != ATTACKER {
        return false;
    }
    let text = |key: &str| record[key].as_str().unwrap_or_default().to_owned();
    match recorded {
        Recorded::Refusal(kind) => text("message").starts_with("refused") && record["kind"] == kind && !text("attempt").is_empty(),
        Recorded::CallFailed(error) => text("message") == "tool call failed" && text("error").contains(error),
        Recorded::NotLoaded(reason) => text("message").contains("plugin not loaded") && text("message").contains(reason),
        Recorded::NeverAsked => false,
    }
}

/// Runs one attack and every check the suite makes of it; returns what the host answered and
/// recorded, for the report.
pub async fn run(attack: &Attack, servers: &Servers) -> Result<String> {
    let folder = Folder::new(attack, servers);
    let render_args = |call: &Call, tree: &Path| -> Result<Value> {
        let text = render(call.args, servers, tree, folder.plugins.path());
        serde_json::from_str(&text).with_context(|| format!("arguments {text}"))
    };
    let protected_before = folder.attacker_tree.protected();
    let decoy_before = servers.decoy_connections();
    let mut host = Host::start(folder.plugins.path()).await?;

    let list = host.send("tools/list", json!({})).await?;
    let listed = tool_names(&host.reply(list, Duration::from_secs(10)).await?);
    ensure!(listed.iter().any(|n| n.starts_with(&format!("{TWIN}_"))), "the twin is not served: {listed:?}");

    // 1. Refused or bounded, never a crash; the host answers others while it runs.
    let answered = match (attack.call, attack.expect) {
        (None, Expect::NotLoaded) => {
            ensure!(!listed.iter().any(|n| n.starts_with(&format!("{ATTACKER}_"))), "the attacker is served: {listed:?}");
            host.answers_others("beside the refused plugin").await?;
            "not loaded".to_owned()
        }
        (Some(call), expect) => {
            let args = render_args(&call, &folder.attacker_tree.root)?;
            let started = Instant::now();
            let id = host.send("tools/call", json!({"name": format!("{ATTACKER}_{}", call.tool), "arguments": args})).await?;
            host.answers_others("while the attack runs").await?;
            let reply = host.reply(id, ATTACK_ANSWERED_WITHIN).await?;
            let took = started.elapsed();
            let result = reply.get("result").with_context(|| format!("the attack got no result: {reply}"))?;
            let text = first_text(result).to_owned();
            let is_error = result["isError"] == true;
            match expect {
                Expect::ToolError(wanted) => ensure!(is_error && text.contains(wanted), "expected an error result with {wanted:?}, got {reply}"),
                Expect::Deadline => {
                    ensure!(is_error && text.contains("timed out"), "expected a deadline, got {reply}");
                    ensure!(took < Duration::from_secs(3), "the one-second deadline took {took:?}");
                }
                Expect::Bounded(wanted) => ensure!(!is_error && text.contains(wanted), "expected a bounded result with {wanted:?}, got {reply}"),
                Expect::Json(wanted) => {
                    let wanted: Value = serde_json::from_str(wanted)?;
                    let got: Value = serde_json::from_str(&text).with_context(|| format!("not JSON: {reply}"))?;
                    ensure!(!is_error && got == wanted, "expected exactly {wanted}, got {got}");
                }
                Expect::NotLoaded => bail!("a loading attack has no call"),
            }
            let whole = reply.to_string();
            for secret in NEVER_LEAKED {
                ensure!(!whole.contains(secret), "the attack's answer leaked {secret:?}: {whole}");
            }
            format!("{}{} in {took:.1?}", if is_error { "error: " } else { "" }, text.chars().take(120).collect::<String>())
        }
        (None, _) => bail!("only a loading attack may have no call"),
    };
    ensure!(folder.attacker_tree.protected() == protected_before, "the attack changed files outside its read-write grant");
    ensure!(servers.decoy_connections() == decoy_before, "the decoy server was reached");
    ensure!(!servers.udp_datagram_arrived(), "a datagram reached the UDP decoy");

    // 2. Recorded, with the plugin named.
    let record = match attack.recorded {
        Recorded::NeverAsked => "nothing to record".to_owned(),
        recorded => {
            let record = host.log.expect(&format!("{recorded:?} naming `{ATTACKER}`"), |r| is_recorded(recorded, r)).await?;
            let field = |key: &str| record[key].as_str().unwrap_or_default().to_owned();
            match recorded {
                Recorded::Refusal(kind) => format!("refusal kind={kind} attempt={}", field("attempt")),
                _ => format!("{}: {}", field("message"), field("error")).chars().take(160).collect(),
            }
        }
    };

    // 3. The host still answers, at once.
    host.answers_others("after the attack").await?;

    // 4. The permitted twin works.
    let twin_args = render_args(&attack.twin.call, &folder.twin_tree.root)?;
    let reply = host.call(TWIN, &attack.twin.call, twin_args, Duration::from_secs(20)).await?;
    let result = reply.get("result").with_context(|| format!("the twin got no result: {reply}"))?;
    ensure!(result["isError"] != true && result.to_string().contains(attack.twin.answers), "the permitted twin failed: {reply}");

    // 5. The log stayed bounded and complete (the lossy writer dropped nothing), and the host
    // exited cleanly.
    let notifications = host.notifications;
    ensure!(notifications <= MAX_NOTIFICATIONS_PER_ATTACK, "the client got {notifications} notifications");
    let records = host.close().await?;
    let naming_attacker = records.iter().filter(|r| r["plugin"] == ATTACKER).count();
    ensure!(naming_attacker <= MAX_RECORDS_PER_ATTACK, "{naming_attacker} log records name the attacker");
    let lost: Vec<_> = records.iter().filter(|r| r["message"].as_str().is_some_and(|m| m.starts_with("log records were dropped"))).collect();
    ensure!(lost.is_empty(), "the log lost records: {lost:?}");
    Ok(format!("{answered} | {record} | {naming_attacker} records, {notifications} notifications"))
}

//! The plugin author's loop: `paddock new` makes a project from a template, ready to build
//! outside this repository; `paddock dev` builds it, checks it, serves it from a folder of its
//! own, and on every save builds and checks it again and puts the new build in that folder, where
//! the live folder swaps it in (clients hear `list_changed`).

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{CommonArgs, Load};

/// What a new project starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Template {
    /// One tool with structured output.
    Tool,
    /// A resource and a resource template.
    Resources,
    /// A tool with structured output, a tool that asks the user, a resource template and a prompt.
    Full,
}

const CARGO_TOML: &str = include_str!("../../templates/new/Cargo.toml.template");
const GRANT: &str = include_str!("../../templates/new/grant.toml");
const FULL: &str = include_str!("../../templates/new/full.rs");
const TOOL: &str = include_str!("../../templates/new/tool.rs");
const RESOURCES: &str = include_str!("../../templates/new/resources.rs");

/// How long the project must be quiet after a save before it is built.
const QUIET: Duration = Duration::from_millis(300);

/// The guest SDK to depend on: `--sdk`, else `PADDOCK_SDK`, else the one beside the sources this
/// paddock was built from.
fn sdk_path(given: Option<&Path>) -> Result<PathBuf> {
    let candidate = given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("PADDOCK_SDK").map(PathBuf::from))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk"));
    let path = candidate.canonicalize().ok().filter(|p| p.join("Cargo.toml").is_file());
    path.with_context(|| {
        format!("the guest SDK is not at `{}` (fix: pass --sdk DIR, or set PADDOCK_SDK, to a checkout of paddock's guest-sdk)", candidate.display())
    })
}

/// `paddock new NAME`: the project folder `dir/NAME`, which must not exist yet.
pub(super) fn new_project(name: &str, dir: &Path, template: Template, sdk: Option<&Path>) -> Result<ExitCode> {
    let starts_with_letter = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    if !crate::config::valid_id(name) || !starts_with_letter {
        bail!("`{name}` cannot name a plugin (fix: a letter, then up to 63 letters, digits, `_` or `-`)");
    }
    let sdk = sdk_path(sdk)?;
    let project = dir.join(name);
    if project.exists() {
        bail!("`{}` already exists (fix: pick another name or --dir)", project.display());
    }
    let scheme = name.replace('_', "-").to_ascii_lowercase();
    let fill = |text: &str| text.replace("{{name}}", name).replace("{{scheme}}", &scheme).replace("{{sdk}}", &sdk.display().to_string());
    let source = match template {
        Template::Tool => TOOL,
        Template::Resources => RESOURCES,
        Template::Full => FULL,
    };
    std::fs::create_dir_all(project.join("src")).with_context(|| format!("cannot create {}", project.display()))?;
    let write = |file: &str, text: String| std::fs::write(project.join(file), text).with_context(|| format!("cannot write {file}"));
    write("Cargo.toml", fill(CARGO_TOML))?;
    write("src/lib.rs", fill(source))?;
    write(&format!("{name}.toml"), fill(GRANT))?;
    write(".gitignore", "/target\n".to_owned())?;
    // The SDK's lock pins the versions it is tested with; cargo adds this project to it.
    if let Ok(lock) = std::fs::read_to_string(sdk.join("Cargo.lock")) {
        write("Cargo.lock", lock)?;
    }
    println!("Made {}: a `{name}` plugin ({template:?} template), depending on the SDK at {}.", project.display(), sdk.display());
    println!("Next:");
    println!("  cd {}", project.display());
    println!("  cargo test                                       # its unit tests");
    println!("  paddock dev .                                    # build, check and serve it over stdio; rebuilt on every save");
    println!("  cargo build --release --target wasm32-wasip2     # or build it yourself: target/wasm32-wasip2/release/*.wasm");
    Ok(ExitCode::SUCCESS)
}

/// The `[package] name` of a project.
fn package_name(manifest: &Path) -> Result<String> {
    let text = std::fs::read_to_string(manifest).with_context(|| format!("cannot read {}", manifest.display()))?;
    let table: toml::Table = text.parse().with_context(|| format!("{} is not valid TOML", manifest.display()))?;
    table
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned)
        .with_context(|| format!("{} has no [package] name", manifest.display()))
}

/// Builds, checks and installs one project into the folder a server serves.
struct Builder {
    project: PathBuf,
    id: String,
    /// The folder the server serves.
    served: PathBuf,
    /// Where a build is checked before it is served.
    staging: PathBuf,
    common: CommonArgs,
}

impl Builder {
    /// Builds the project for wasm32-wasip2; the component's path. Cargo's messages go to stderr.
    async fn build(&self) -> Result<PathBuf> {
        let mut child = tokio::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "--target", "wasm32-wasip2", "--message-format=json-render-diagnostics", "--manifest-path"])
            .arg(self.project.join("Cargo.toml"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("cannot run cargo (fix: install Rust with the wasm32-wasip2 target: `rustup target add wasm32-wasip2`)")?;
        let mut wasm = None;
        let stdout = child.stdout.take().context("cargo's output")?;
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        while let Some(line) = lines.next_line().await.context("reading cargo's output")? {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if message["reason"] == "compiler-artifact"
                && let Some(files) = message["filenames"].as_array()
            {
                wasm = files.iter().filter_map(|f| f.as_str()).find(|f| f.ends_with(".wasm")).map(PathBuf::from).or(wasm);
            }
        }
        let status = child.wait().await.context("cargo")?;
        if !status.success() {
            bail!("the build failed (cargo's messages are above)");
        }
        wasm.context("the build made no .wasm (fix: `crate-type = [\"cdylib\"]` under [lib] in Cargo.toml)")
    }

    /// Builds, checks the build in the staging folder, and on success puts it (and the project's
    /// grant file) into the served folder. Says what happened on stderr; `true` when served.
    async fn once(&self) -> bool {
        let started = Instant::now();
        let wasm = match self.build().await {
            Ok(wasm) => wasm,
            Err(err) => {
                eprintln!("paddock dev: {err:#}; the last good build keeps serving");
                return false;
            }
        };
        match self.check(&wasm).await {
            Ok(summary) => {
                if let Err(err) = self.install(&wasm) {
                    eprintln!("paddock dev: cannot serve the build: {err:#}");
                    return false;
                }
                eprintln!("paddock dev: built and checked `{}` in {:.1} s; serving {summary}", self.id, started.elapsed().as_secs_f64());
                true
            }
            Err(problems) => {
                eprintln!("paddock dev: the build has problems, so the last good one keeps serving:\n{problems:#}");
                false
            }
        }
    }

    /// `paddock check` of the build with the project's grant: what it serves, or its problems.
    async fn check(&self, wasm: &Path) -> Result<String> {
        let _ = std::fs::remove_dir_all(&self.staging);
        std::fs::create_dir_all(&self.staging).with_context(|| format!("cannot make {}", self.staging.display()))?;
        std::fs::copy(wasm, self.staging.join(format!("{}.wasm", self.id))).context("cannot copy the build")?;
        let grant = self.project.join(format!("{}.toml", self.id));
        if grant.is_file() {
            std::fs::copy(&grant, self.staging.join(format!("{}.toml", self.id))).context("cannot copy the grant")?;
        }
        let loaded = super::load(&self.staging, &self.common, crate::runtime::RuntimeOptions::default().host_descriptors, Load::Once).await?;
        let mut problems: Vec<String> = loaded.config.problems().iter().map(ToString::to_string).collect();
        problems.extend(loaded.problems.iter().map(ToString::to_string));
        problems.extend(loaded.router_errors.iter().map(ToString::to_string));
        if !problems.is_empty() {
            bail!("{}", problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n"));
        }
        let router = &loaded.router;
        let names = |kind: &str, items: Vec<String>| if items.is_empty() { None } else { Some(format!("{kind} {}", items.join(", "))) };
        let parts: Vec<String> = [
            names("tools", router.tools().iter().map(|t| t.name.clone()).collect()),
            names("resources", router.resources().iter().map(|r| r.uri.clone()).collect()),
            names("resource templates", router.resource_templates().iter().map(|t| t.uri_template.clone()).collect()),
            names("prompts", router.prompts().iter().map(|p| p.name.clone()).collect()),
        ]
        .into_iter()
        .flatten()
        .collect();
        Ok(if parts.is_empty() { "nothing (it declares no tools, resources or prompts)".to_owned() } else { parts.join("; ") })
    }

    /// Puts the grant, then the component, into the served folder, each renamed into place.
    fn install(&self, wasm: &Path) -> Result<()> {
        let grant = self.project.join(format!("{}.toml", self.id));
        let served_grant = self.served.join(format!("{}.toml", self.id));
        if grant.is_file() {
            let part = self.served.join(format!(".{}.toml.part", self.id));
            std::fs::copy(&grant, &part)?;
            std::fs::rename(&part, &served_grant)?;
        } else {
            let _ = std::fs::remove_file(&served_grant);
        }
        let part = self.served.join(format!(".{}.wasm.part", self.id));
        std::fs::copy(wasm, &part)?;
        std::fs::rename(&part, self.served.join(format!("{}.wasm", self.id)))?;
        Ok(())
    }
}

/// `paddock dev PROJECT`: serves the project's build over stdio (or HTTP at `http`) and keeps it
/// current.
pub(super) async fn dev(project: &Path, http: Option<std::net::SocketAddr>, common: &CommonArgs) -> Result<ExitCode> {
    let project = project.canonicalize().with_context(|| format!("no project at `{}`", project.display()))?;
    let id = package_name(&project.join("Cargo.toml"))?;
    if !crate::config::valid_id(&id) {
        bail!("the package name `{id}` cannot be a plugin id (fix: rename the package to letters, digits, `_` and `-`)");
    }
    let base = std::env::temp_dir().join(format!("paddock-dev-{id}-{}", std::process::id()));
    let served = base.join("plugins");
    std::fs::create_dir_all(&served).with_context(|| format!("cannot make {}", served.display()))?;
    let builder = Builder { project: project.clone(), id, served: served.clone(), staging: base.join("staging"), common: common.clone() };
    if !builder.once().await {
        let _ = std::fs::remove_dir_all(&base);
        bail!("the first build of {} did not succeed", project.display());
    }
    let (saved, mut heard) = tokio::sync::mpsc::channel::<()>(1);
    let _watcher = watch_project(&project, saved)?;
    tokio::spawn(async move {
        while heard.recv().await.is_some() {
            // A save is often several writes: build once they stop.
            while let Ok(Some(())) = tokio::time::timeout(QUIET, heard.recv()).await {}
            builder.once().await;
        }
    });
    let mut args: Vec<std::ffi::OsString> = vec!["paddock".into(), "serve".into(), served.clone().into(), "--watch-settle".into(), "0ms".into()];
    if let Some(addr) = http {
        args.extend(["--http".into(), addr.to_string().into()]);
    }
    if let Some(cache) = &common.cache_dir {
        args.extend(["--cache-dir".into(), cache.clone().into()]);
    }
    let cli = <super::Cli as clap::Parser>::try_parse_from(args).context("the serve command")?;
    let served_result = Box::pin(super::run(cli)).await;
    let _ = std::fs::remove_dir_all(&base);
    served_result
}

/// Watches the project's files (not its build output) and sends one wake-up per batch.
fn watch_project(project: &Path, saved: tokio::sync::mpsc::Sender<()>) -> Result<notify::RecommendedWatcher> {
    use notify::Watcher as _;
    let target = project.join("target");
    let ignored = move |path: &Path| path.starts_with(&target) || path.components().any(|c| c.as_os_str() == ".git");
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if matches!(event.kind, notify::EventKind::Access(_)) || event.paths.iter().all(|p| ignored(p)) {
            return;
        }
        let _ = saved.try_send(());
    })
    .context("cannot watch the project")?;
    watcher.watch(project, notify::RecursiveMode::Recursive).with_context(|| format!("cannot watch {}", project.display()))?;
    Ok(watcher)
}

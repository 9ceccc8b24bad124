//! Turning plugin files into components for one load: each distinct content (by SHA-256) is
//! compiled or read from the cache once, however many files carry it; at most a few at a time,
//! so a cold start of many plugins is bounded in memory and threads; and progress goes to
//! stderr once compiling has taken more than a second.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::sync::{OnceCell, Semaphore};
use wasmtime::component::Component;

use super::Runtime;
use super::cache::CacheOutcome;
use super::loader::LoadError;

/// Largest plugin file accepted.
pub(crate) const MAX_WASM_BYTES: u64 = 256 << 20;
/// After this long compiling, progress is shown on stderr, then again at this interval.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);
/// Components compiled at once, at most. Each compile already spreads its functions over every
/// core, so more at once only adds memory.
const MAX_PARALLEL: usize = 2;

/// What one distinct content became.
type Compiled = Result<(Component, CacheOutcome), Arc<LoadError>>;

/// The components of one load, shared by every file with the same content.
#[derive(Debug)]
pub(crate) struct Compiles {
    by_digest: Mutex<HashMap<[u8; 32], Arc<OnceCell<Compiled>>>>,
    permits: Semaphore,
    /// Files asked for, and files whose component is ready (or failed).
    asked: AtomicUsize,
    ready: AtomicUsize,
    /// Components compiled or read from the cache.
    built: AtomicUsize,
    started: Instant,
}

impl Compiles {
    pub(crate) fn new() -> Arc<Compiles> {
        let parallel = std::thread::available_parallelism().map_or(1, usize::from).min(MAX_PARALLEL);
        Arc::new(Compiles {
            by_digest: Mutex::new(HashMap::new()),
            permits: Semaphore::new(parallel),
            asked: AtomicUsize::new(0),
            ready: AtomicUsize::new(0),
            built: AtomicUsize::new(0),
            started: Instant::now(),
        })
    }

    /// How many components this load compiled or read from the cache.
    pub(crate) fn built(&self) -> usize {
        self.built.load(Ordering::Relaxed)
    }

    /// Reads, classifies and compiles (or loads from the cache) one file; a file whose content
    /// another file of this load already has gets that component.
    pub(crate) async fn component(&self, runtime: &Runtime, path: &Path) -> Result<(Component, CacheOutcome), LoadError> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let result = self.component_of(runtime, path).await;
        self.ready.fetch_add(1, Ordering::Relaxed);
        result
    }

    async fn component_of(&self, runtime: &Runtime, path: &Path) -> Result<(Component, CacheOutcome), LoadError> {
        let bytes = read_component_file(path).await?;
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let cell = self.by_digest.lock().unwrap_or_else(|e| e.into_inner()).entry(digest).or_default().clone();
        let compiled = cell
            .get_or_init(|| async {
                let _permit = self.permits.acquire().await;
                self.built.fetch_add(1, Ordering::Relaxed);
                compile(runtime, bytes, digest).await.map_err(Arc::new)
            })
            .await;
        compiled.clone().map_err(LoadError::Shared)
    }

    /// Runs `work` (the load), showing progress on stderr every second once compiling has
    /// taken more than one.
    pub(crate) async fn showing_progress<T>(&self, work: impl Future<Output = T>) -> T {
        let ticks = async {
            loop {
                tokio::time::sleep(PROGRESS_AFTER).await;
                let (ready, asked) = (self.ready.load(Ordering::Relaxed), self.asked.load(Ordering::Relaxed));
                if ready < asked {
                    tracing::info!(ready, plugins = asked, "compiling plugins: {ready} of {asked} ready (cached for the next start)…");
                }
            }
        };
        let output = tokio::select! {
            biased;
            output = work => output,
            never = ticks => never,
        };
        let elapsed = self.started.elapsed();
        if elapsed >= PROGRESS_AFTER {
            let (plugins, components) = (self.asked.load(Ordering::Relaxed), self.built());
            tracing::info!(plugins, components, seconds = elapsed.as_secs_f32(), "plugins compiled");
        }
        output
    }
}

/// Reads a plugin file and checks it is a component, before anything is compiled.
async fn read_component_file(path: &Path) -> Result<Vec<u8>, LoadError> {
    let size = std::fs::metadata(path).map_err(LoadError::Read)?.len();
    if size > MAX_WASM_BYTES {
        return Err(LoadError::TooLarge { mib: size >> 20, max_mib: MAX_WASM_BYTES >> 20 });
    }
    let bytes = tokio::fs::read(path).await.map_err(LoadError::Read)?;
    if !bytes.starts_with(b"\0asm") {
        return Err(LoadError::NotWasm);
    }
    if wasmparser::Parser::is_core_wasm(&bytes) {
        return Err(LoadError::CoreModule);
    }
    if !wasmparser::Parser::is_component(&bytes) {
        return Err(LoadError::NotComponent);
    }
    Ok(bytes)
}

/// Compiles `bytes` (or loads them from the cache) on the blocking pool.
async fn compile(runtime: &Runtime, bytes: Vec<u8>, digest: [u8; 32]) -> Result<(Component, CacheOutcome), LoadError> {
    let runtime = runtime.clone();
    let joined = tokio::task::spawn_blocking(move || match &runtime.cache {
        Some(cache) => cache.load_or_compile(&runtime.engine, &bytes, &digest),
        None => Component::new(&runtime.engine, &bytes).map(|c| (c, CacheOutcome::Uncached)),
    })
    .await;
    let result = joined.map_err(|e| LoadError::CompileTask(e.to_string()))?;
    result.map_err(|e| LoadError::Compile(e.to_string().lines().next().unwrap_or_default().to_owned()))
}

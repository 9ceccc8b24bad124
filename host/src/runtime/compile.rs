//! Turning plugin files into components for one load: each distinct content (by BLAKE3 digest) is
//! compiled or read from the cache once, however many files carry it; at most a few at a time,
//! so a cold start of many plugins is bounded in memory and threads; and progress goes to
//! stderr once compiling has taken more than a second.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OnceCell, Semaphore};
use wasmtime::component::Component;

use super::Runtime;
use super::cache::{CacheOutcome, Lookup};
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
        let digest = blocking({
            let path = path.to_path_buf();
            move || identify(&path)
        })
        .await?;
        let cell = self.by_digest.lock().unwrap_or_else(|e| e.into_inner()).entry(digest).or_default().clone();
        let compiled = cell
            .get_or_init(|| async {
                let _permit = self.permits.acquire().await;
                self.built.fetch_add(1, Ordering::Relaxed);
                let (runtime, path) = (runtime.clone(), path.to_path_buf());
                blocking(move || build(&runtime, &path, &digest)).await.map_err(Arc::new)
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

/// Bytes read and hashed at a time: small enough to come from the heap and be reused, large
/// enough for the hash's SIMD lanes.
const HASH_CHUNK: usize = 64 << 10;

/// Checks that a plugin file is a component of an accepted size and returns the BLAKE3 digest
/// of its content, read in small chunks: a warm start never holds a whole file in memory.
fn identify(path: &Path) -> Result<[u8; 32], LoadError> {
    let mut file = std::fs::File::open(path).map_err(LoadError::Read)?;
    let size = file.metadata().map_err(LoadError::Read)?.len();
    if size > MAX_WASM_BYTES {
        return Err(LoadError::TooLarge { mib: size >> 20, max_mib: MAX_WASM_BYTES >> 20 });
    }
    let mut hasher = blake3::Hasher::new();
    let mut chunk = vec![0u8; HASH_CHUNK];
    let mut header = Vec::with_capacity(8);
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(LoadError::Read(err)),
        };
        if header.len() < 8 {
            header.extend_from_slice(&chunk[..n.min(8 - header.len())]);
        }
        total += n as u64;
        if total > MAX_WASM_BYTES {
            return Err(LoadError::TooLarge { mib: total >> 20, max_mib: MAX_WASM_BYTES >> 20 });
        }
        hasher.update(&chunk[..n]);
    }
    classify(&header)?;
    Ok(hasher.finalize().into())
}

/// Refuses what is not a component, from the first bytes of the file.
fn classify(bytes: &[u8]) -> Result<(), LoadError> {
    if !bytes.starts_with(b"\0asm") {
        return Err(LoadError::NotWasm);
    }
    if wasmparser::Parser::is_core_wasm(bytes) {
        return Err(LoadError::CoreModule);
    }
    if !wasmparser::Parser::is_component(bytes) {
        return Err(LoadError::NotComponent);
    }
    Ok(())
}

/// Reads the whole plugin file to compile it, and checks it still has the content `identify`
/// hashed: what is compiled is always what the cache files it under.
fn read_to_compile(path: &Path, digest: &[u8; 32]) -> Result<Vec<u8>, LoadError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_WASM_BYTES + 1).read_to_end(&mut bytes))
        .map_err(LoadError::Read)?;
    if blake3::hash(&bytes).as_bytes() != digest {
        return Err(LoadError::Changed);
    }
    Ok(bytes)
}

/// Loads the component with content `digest` from the cache, or compiles it from `path` (and
/// stores it when there is a cache). Blocking.
fn build(runtime: &Runtime, path: &Path, digest: &[u8; 32]) -> Result<(Component, CacheOutcome), LoadError> {
    let cached = match &runtime.cache {
        Some(cache) => match cache.lookup(&runtime.engine, digest) {
            Lookup::Hit(component) => return Ok((component, CacheOutcome::Hit)),
            Lookup::Missing => Some((cache, CacheOutcome::Compiled)),
            Lookup::Discarded => Some((cache, CacheOutcome::Recompiled)),
        },
        None => None,
    };
    let bytes = read_to_compile(path, digest)?;
    let built = match cached {
        Some((cache, outcome)) => cache.compile_and_store(&runtime.engine, &bytes, digest, outcome),
        None => Component::new(&runtime.engine, &bytes).map(|c| (c, CacheOutcome::Uncached)),
    };
    drop(bytes);
    crate::allocator::release_free_memory();
    built.map_err(|e| LoadError::Compile(e.to_string().lines().next().unwrap_or_default().to_owned()))
}

/// Runs blocking file and compile work on the blocking pool.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, LoadError> + Send + 'static) -> Result<T, LoadError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| LoadError::CompileTask(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_hashed_in_chunks_and_compiled_only_with_the_content_that_was_hashed() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("p.wasm");
        // A component header, then more than two chunks of body.
        let mut bytes = b"\0asm\x0d\x00\x01\x00".to_vec();
        bytes.extend((0..2 * HASH_CHUNK + 5).map(|i| (i % 253) as u8));
        std::fs::write(&path, &bytes).expect("write");
        let digest = identify(&path).expect("a component header");
        assert_eq!(&digest, blake3::hash(&bytes).as_bytes());
        assert_eq!(read_to_compile(&path, &digest).expect("same content"), bytes);

        // Changed between the hash and the compile: refused, never compiled under the old digest.
        bytes[HASH_CHUNK + 1] ^= 1;
        std::fs::write(&path, &bytes).expect("rewrite");
        assert!(matches!(read_to_compile(&path, &digest), Err(LoadError::Changed)));

        for (header, expected) in [
            (&b"\0asm\x01\x00\x00\x00"[..], "core"),
            (&b"\x7fELF\x02\x01\x01\x00"[..], "not wasm"),
            (&b"\0asm\x0d\x00\x02\x00"[..], "unknown layer"),
            (&b"\0as"[..], "not wasm"),
        ] {
            std::fs::write(&path, header).expect("write");
            let refused = identify(&path).expect_err(expected);
            let matched = match expected {
                "core" => matches!(refused, LoadError::CoreModule),
                "not wasm" => matches!(refused, LoadError::NotWasm),
                _ => matches!(refused, LoadError::NotComponent),
            };
            assert!(matched, "{expected}: {refused:?}");
        }
    }
}

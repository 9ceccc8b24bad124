//! Turning plugin files into components for one load: each distinct content (by BLAKE3 digest) is
//! compiled or read from the cache once, however many files carry it; hashed and compiled at
//! most a few at a time, so a start of many plugins is bounded in memory and threads; and
//! progress goes to stderr once compiling has taken more than a second.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{OnceCell, Semaphore};
use wasmtime::component::Component;

use super::cache::{Cache, CacheOutcome, FileIdentity, Lookup};
use crate::runtime::Runtime;
use crate::runtime::load_error::LoadError;

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
    /// Set once the load's plugins are served: deferred loads wait for it.
    deferred: tokio::sync::watch::Sender<bool>,
    /// Deferred loads run one at a time.
    deferred_turn: Semaphore,
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
            deferred: tokio::sync::watch::Sender::new(false),
            deferred_turn: Semaphore::new(1),
        })
    }

    /// How many components this load compiled or read from the cache.
    pub(crate) fn built(&self) -> usize {
        self.built.load(Ordering::Relaxed)
    }

    /// Reads, classifies and compiles (or loads from the cache) one file; a file whose content
    /// another file of this load already has gets that component. With it comes the BLAKE3
    /// digest of the content that was compiled.
    pub(crate) async fn component(&self, runtime: &Runtime, path: &Path) -> Result<(Component, CacheOutcome, [u8; 32]), LoadError> {
        let (digest, identity) = self.identify(runtime, path).await?;
        self.component_with_digest(runtime, path, digest, identity).await
    }

    /// Checks that `path` is a component of an accepted size and finds its digest (`identify`).
    pub(crate) async fn identify(&self, runtime: &Runtime, path: &Path) -> Result<([u8; 32], Option<FileIdentity>), LoadError> {
        self.identify_then(runtime, path, |_, _| ()).await.map(|(digest, identity, ())| (digest, identity))
    }

    /// `identify`, then `then` with the cache and the digest, in the same blocking step.
    pub(crate) async fn identify_then<T: Send + 'static>(
        &self,
        runtime: &Runtime,
        path: &Path,
        then: impl FnOnce(Option<&Cache>, &[u8; 32]) -> T + Send + 'static,
    ) -> Result<([u8; 32], Option<FileIdentity>, T), LoadError> {
        // Under the same permits as compiles: blocking work at once is bounded by the cores, not
        // by the plugins (each one at once would start a thread of its own).
        let _permit = self.permits.acquire().await;
        blocking({
            let (cache, path) = (runtime.cache.clone(), path.to_path_buf());
            move || {
                let (digest, identity) = identify(cache.as_ref(), &path)?;
                let then = then(cache.as_ref(), &digest);
                Ok((digest, identity, then))
            }
        })
        .await
    }

    /// Lets the loads that waited for it (`after_start`) begin: called once this load's own
    /// plugins are served.
    pub(crate) fn start_deferred(&self) {
        self.deferred.send_replace(true);
    }

    /// Waits for `start_deferred`, then for the one turn of deferred loads: one at a time, so
    /// the other cores stay with whatever the server does meanwhile (its first requests). A load
    /// a call is waiting for (`wanted`) goes at once.
    pub(crate) async fn after_start(&self, wanted: &tokio::sync::Notify) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let mut started = self.deferred.subscribe();
        tokio::select! {
            _ = started.wait_for(|go| *go) => {}
            () = wanted.notified() => return None,
        }
        tokio::select! {
            turn = self.deferred_turn.acquire() => turn.ok(),
            () = wanted.notified() => None,
        }
    }

    /// `component`, for a file whose digest `identify` found.
    pub(crate) async fn component_with_digest(
        &self,
        runtime: &Runtime,
        path: &Path,
        digest: [u8; 32],
        identity: Option<FileIdentity>,
    ) -> Result<(Component, CacheOutcome, [u8; 32]), LoadError> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let result = self.build_once(runtime, path, (digest, identity)).await;
        self.ready.fetch_add(1, Ordering::Relaxed);
        result
    }

    async fn build_once(
        &self,
        runtime: &Runtime,
        path: &Path,
        (digest, identity): ([u8; 32], Option<FileIdentity>),
    ) -> Result<(Component, CacheOutcome, [u8; 32]), LoadError> {
        let cell = self.by_digest.lock().unwrap_or_else(|e| e.into_inner()).entry(digest).or_default().clone();
        let compiled = cell
            .get_or_init(|| async {
                let _permit = self.permits.acquire().await;
                self.built.fetch_add(1, Ordering::Relaxed);
                let (runtime, path) = (runtime.clone(), path.to_path_buf());
                blocking(move || build(&runtime, &path, &digest)).await.map_err(Arc::new)
            })
            .await;
        if let (Err(err), Some(cache), Some(identity)) = (compiled, &runtime.cache, identity)
            && matches!(**err, LoadError::Changed)
        {
            // Not the content its record named: hashed again on the next start.
            cache.forget_digest(&identity);
        }
        let (component, cache) = compiled.clone().map_err(LoadError::Shared)?;
        Ok((component, cache, digest))
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
/// of its content, with the file's identity. With a cache, a file whose identity has a record
/// there is not read at all (`cache::known_files`); any other is read in small chunks (a warm
/// start never holds a whole file in memory), and its digest recorded when its identity allows.
fn identify(cache: Option<&Cache>, path: &Path) -> Result<([u8; 32], Option<FileIdentity>), LoadError> {
    let mut file = std::fs::File::open(path).map_err(LoadError::Read)?;
    let metadata = file.metadata().map_err(LoadError::Read)?;
    let size = metadata.len();
    if size > MAX_WASM_BYTES {
        return Err(LoadError::TooLarge { mib: size >> 20, max_mib: MAX_WASM_BYTES >> 20 });
    }
    let identity = FileIdentity::of(&metadata);
    if let (Some(cache), Some(identity)) = (cache, &identity)
        && let Some(digest) = cache.known_digest(identity)
    {
        return Ok((digest, Some(*identity)));
    }
    let hashing_began = SystemTime::now();
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
    let digest: [u8; 32] = hasher.finalize().into();
    if let (Some(cache), Some(identity)) = (cache, &identity) {
        let (again, path) = (cache.clone(), path.to_path_buf());
        cache.remember_digest(identity, &digest, hashing_began, move || {
            let _ = identify(Some(&again), &path);
        });
    }
    Ok((digest, identity))
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
    std::fs::File::open(path).and_then(|file| file.take(MAX_WASM_BYTES + 1).read_to_end(&mut bytes)).map_err(LoadError::Read)?;
    if blake3::hash(&bytes).as_bytes() != digest {
        return Err(LoadError::Changed);
    }
    Ok(bytes)
}

/// Loads the component with content `digest` from the cache, or compiles it from `path` (and
/// stores it when there is a cache). Blocking.
fn build(runtime: &Runtime, path: &Path, digest: &[u8; 32]) -> Result<(Component, CacheOutcome), LoadError> {
    let cached = match &runtime.cache {
        Some(cache) => match cache.lookup(runtime.engine(), digest) {
            Lookup::Hit(component) => return Ok((component, CacheOutcome::Hit)),
            Lookup::Missing => Some((cache, CacheOutcome::Compiled)),
            Lookup::Discarded => Some((cache, CacheOutcome::Recompiled)),
        },
        None => None,
    };
    let bytes = read_to_compile(path, digest)?;
    let built = match cached {
        Some((cache, outcome)) => cache.compile_and_store(runtime.engine(), &bytes, digest, outcome),
        None => Component::new(runtime.engine(), &bytes).map(|c| (c, CacheOutcome::Uncached)),
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
        let (digest, _) = identify(None, &path).expect("a component header");
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
            let refused = identify(None, &path).expect_err(expected);
            let matched = match expected {
                "core" => matches!(refused, LoadError::CoreModule),
                "not wasm" => matches!(refused, LoadError::NotWasm),
                _ => matches!(refused, LoadError::NotComponent),
            };
            assert!(matched, "{expected}: {refused:?}");
        }
    }

    /// A runtime with its cache in `dir`, and the file `p.wasm` there holding `bytes`.
    fn runtime_and_file(dir: &Path, bytes: &[u8]) -> (Runtime, std::path::PathBuf) {
        let options = crate::runtime::RuntimeOptions { cache_dir: Some(dir.join("cache")), pooling: false, ..Default::default() };
        let runtime = Runtime::new(options).expect("runtime");
        let path = dir.join("p.wasm");
        std::fs::write(&path, bytes).expect("write");
        (runtime, path)
    }

    /// A runtime with a cache, and a file written a moment ago in `dir`, hashed once: too fresh to
    /// be recorded.
    fn hashed_fresh_file(dir: &Path) -> (Runtime, std::path::PathBuf, Cache, [u8; 32], FileIdentity) {
        let (runtime, path) = runtime_and_file(dir, b"\0asm\x0d\x00\x01\x00 a component header, then anything");
        let cache = runtime.cache.clone().expect("a cache");
        let (digest, identity) = identify(Some(&cache), &path).expect("hashed");
        let identity = identity.expect("an identity on unix");
        assert_eq!(cache.known_digest(&identity), None, "a file changed a moment ago is not recorded");
        (runtime, path, cache, digest, identity)
    }

    #[test]
    fn a_file_hashed_before_it_settled_is_hashed_again_once_settled_and_recorded() {
        let dir = tempfile::tempdir().expect("tmp");
        let (_runtime, _path, cache, digest, identity) = hashed_fresh_file(dir.path());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while cache.known_digest(&identity).is_none() {
            assert!(std::time::Instant::now() < deadline, "the settled file was never recorded");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(cache.known_digest(&identity), Some(digest));
    }

    #[tokio::test]
    async fn a_file_with_a_record_is_not_read_and_a_record_that_lies_is_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let (runtime, path, cache, digest, identity) = hashed_fresh_file(dir.path());

        // A record (as if the file had been settled when hashed) is believed without reading:
        // here it names a digest the content does not have, which only reading would show.
        let later = SystemTime::now() + Duration::from_secs(60);
        let planted = [7u8; 32];
        cache.remember_digest(&identity, &planted, later, || ());
        assert_eq!(identify(Some(&cache), &path).expect("known").0, planted);
        // Compiling reads the file, finds other content, refuses it, and drops the record.
        let refused = Compiles::new().component(&runtime, &path).await.expect_err("the content is not the recorded one");
        assert!(matches!(refused, LoadError::Shared(ref err) if matches!(**err, LoadError::Changed)), "{refused:?}");
        assert_eq!(cache.known_digest(&identity), None);
        assert_eq!(identify(Some(&cache), &path).expect("hashed again").0, digest);

        // A file written again has another identity: its record, if any, is not this one's.
        cache.remember_digest(&identity, &digest, later, || ());
        std::fs::write(&path, b"\0asm\x0d\x00\x01\x00 other content").expect("rewrite");
        let (rewritten, new_identity) = identify(Some(&cache), &path).expect("hashed");
        assert_ne!(new_identity, Some(identity));
        assert_eq!(&rewritten, blake3::hash(&std::fs::read(&path).expect("read")).as_bytes());
    }
}

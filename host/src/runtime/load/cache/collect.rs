//! Collecting what the cache no longer needs, so a folder whose plugins are replaced again and
//! again (a developer's build loop, a live folder) does not grow the cache without bound.
//!
//! Artifacts are collected by count, newest first by modification time: an artifact is written
//! once and never touched again (loading only reads and maps it), so its modification time is
//! when it was compiled, and nothing here changes any file's times, which would change the
//! identity its `known_files` record is bound to. An artifact whose wasm this process serves is
//! always kept. Another process that was using a removed artifact keeps its mapping; it only
//! compiles again at its next start.

use std::time::SystemTime;

use super::Cache;

/// Artifacts kept besides those of the plugins serving: the newest, any engine or format.
pub(crate) const KEEP_ARTIFACTS: usize = 64;
/// Records kept (`known_files`, `catalogs`): the newest.
pub(crate) const KEEP_RECORDS: usize = 4096;

/// What one collection removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Collected {
    pub(crate) artifacts: usize,
    pub(crate) records: usize,
}

impl Cache {
    /// Removes every artifact but those of the wasm digests `in_use` (for this engine) and the
    /// newest `KEEP_ARTIFACTS` others, and every record (of a file, or of a catalog) but the newest
    /// `KEEP_RECORDS`. Blocking:
    /// call it from `spawn_blocking`.
    pub(crate) fn collect(&self, in_use: &[[u8; 32]]) -> Collected {
        let keep: Vec<String> = in_use.iter().map(|digest| self.file_name(digest)).collect();
        let (mut artifacts, mut records) = (Vec::new(), Vec::new());
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Collected::default() };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else { continue };
            // Never followed: a symbolic link is judged (and removed) as itself.
            let Ok(metadata) = entry.metadata() else { continue };
            if !metadata.is_file() {
                continue;
            }
            let written = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            if name.ends_with(".cwasm") && !keep.contains(&name) {
                artifacts.push((written, name));
            } else if name.ends_with(".known") || name.ends_with(".catalog") {
                records.push((written, name));
            }
        }
        Collected { artifacts: self.remove_oldest(artifacts, KEEP_ARTIFACTS), records: self.remove_oldest(records, KEEP_RECORDS) }
    }

    /// Removes all but the newest `keep` of `files`; how many it removed.
    fn remove_oldest(&self, mut files: Vec<(SystemTime, String)>, keep: usize) -> usize {
        if files.len() <= keep {
            return 0;
        }
        files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        files.drain(keep..).filter(|(_, name)| self.handle.remove(name).is_ok()).count()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn old_artifacts_and_records_go_by_count_and_the_ones_serving_stay_whatever_their_age() {
        let dir = tempfile::tempdir().expect("tmp");
        let engine = wasmtime::Engine::default();
        let cache = Cache::open(&dir.path().join("cache"), &engine).expect("cache");
        let epoch = SystemTime::now() - Duration::from_secs(86_400);
        let write = |name: &str, age_rank: u64| {
            let path = cache.dir.join(name);
            std::fs::write(&path, b"x").expect("write");
            let file = std::fs::File::options().write(true).open(&path).expect("open");
            file.set_modified(epoch + Duration::from_secs(age_rank)).expect("set the time");
        };
        // The oldest artifact of all is the one serving.
        let serving = [7u8; 32];
        write(&cache.file_name(&serving), 0);
        for i in 0..(KEEP_ARTIFACTS as u64 + 10) {
            write(&cache.file_name(&[i as u8 + 8; 32]), 10 + i);
        }
        write("other-engine-2.cwasm", 5);
        for i in 0..(KEEP_RECORDS as u64 + 3) {
            write(&format!("{i:032x}.known"), i);
        }

        let collected = cache.collect(&[serving]);
        assert_eq!(collected, Collected { artifacts: 11, records: 3 });
        assert!(cache.dir.join(cache.file_name(&serving)).exists(), "the serving artifact stays, however old");
        assert!(!cache.dir.join("other-engine-2.cwasm").exists(), "an old artifact of another engine goes");
        assert!(!cache.dir.join(cache.file_name(&[8u8; 32])).exists(), "the oldest others go");
        assert!(cache.dir.join(cache.file_name(&[(KEEP_ARTIFACTS as u8 + 17); 32])).exists(), "the newest stay");
        assert!(cache.dir.join("key").exists(), "the key is never collected");
        assert!(!cache.dir.join(format!("{:032x}.known", 0)).exists());
        assert_eq!(cache.collect(&[serving]), Collected::default(), "nothing more to collect");
    }
}

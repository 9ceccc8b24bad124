//! Catalog records: what a plugin declared when it was loaded (its catalog), kept so that a
//! later start can serve the plugin's lists before its component is loaded.
//!
//! A record is bound, in its name and its tag, to the BLAKE3 digest of the plugin's wasm, the
//! engine, the host's version and a description of the plugin's grant: a plugin with other
//! code, on another engine or host, or with another grant (another environment, other files)
//! finds no record. The record is the catalog as JSON, then a tag under the cache key over all
//! of that: without the key nobody can make or alter one, and one that does not verify is
//! dropped. A record is at most `MAX_RECORD` bytes, checked before anything is read.
//!
//! A catalog can depend on more than the code and the grant (a plugin may list what it finds in
//! a granted folder), so a record is what the plugin declared the last time, not necessarily
//! what it declares now: whoever serves from one reads the plugin's lists again once its
//! component is loaded (`mcp::ServerState::confirm_lists`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Cache, Durability, Opened, Role, exposure, hex, os};
use crate::plugin::Catalog;

/// Separates this use of the cache key from its others.
const DOMAIN: &[u8] = b"paddock catalog record, format 1\0";
/// The largest record read: far more than any catalog the host accepts.
const MAX_RECORD: u64 = 16 << 20;
/// The tag after the JSON.
const TAG_LEN: usize = 32;

/// What a record holds: the catalog, and what its tools' wire form leaves out.
#[derive(Serialize, Deserialize)]
struct Body {
    catalog: Catalog,
    /// Each tool's required client capabilities, in the order of `catalog.tools`.
    required: Vec<Option<Map<String, Value>>>,
}

impl Cache {
    /// The catalog recorded for the wasm with `wasm_digest` under the grant described by
    /// `grant`, if there is a valid record. Blocking.
    pub(crate) fn recorded_catalog(&self, wasm_digest: &[u8; 32], grant: &str) -> Option<Catalog> {
        let name = self.catalog_name(wasm_digest, grant);
        let (file, info) = match self.handle.open_file(&name) {
            Ok(Opened::Found(file, info)) => (file, info),
            Ok(Opened::Missing) | Err(_) => return None,
            Ok(Opened::Symlink) => {
                let _ = self.handle.remove(&name);
                return None;
            }
        };
        let body = (exposure(Role::Artifact, &info, self.handle.euid()).is_none() && info.len > TAG_LEN as u64 && info.len <= MAX_RECORD)
            .then(|| read_verified(self, &file, info.len, wasm_digest, grant))
            .flatten();
        let Some(body) = body else {
            tracing::debug!(path = %self.dir.join(&name).display(), "a catalog record is not valid; the plugin's catalog is read from it again");
            let _ = self.handle.remove(&name);
            return None;
        };
        let Body { mut catalog, required } = body;
        if required.len() != catalog.tools.len() {
            let _ = self.handle.remove(&name);
            return None;
        }
        for (tool, required) in catalog.tools.iter_mut().zip(required) {
            tool.required_capabilities = required;
        }
        Some(catalog)
    }

    /// Records `catalog`, read from the wasm with `wasm_digest` under the grant described by
    /// `grant`. Best effort: a record that cannot be written is a catalog read again next time.
    pub(crate) fn record_catalog(&self, wasm_digest: &[u8; 32], grant: &str, catalog: &Catalog) {
        let required = catalog.tools.iter().map(|tool| tool.required_capabilities.clone()).collect();
        let Ok(json) = serde_json::to_vec(&Body { catalog: catalog.clone(), required }) else { return };
        if json.len() as u64 + TAG_LEN as u64 > MAX_RECORD {
            return;
        }
        let tag = self.catalog_tag(wasm_digest, grant, &json);
        // Unsynced: a record lost or torn by a crash only fails its tag.
        let _ = self.write_whole(&self.catalog_name(wasm_digest, grant), &[&json, tag.as_bytes()], Durability::Unsynced);
    }

    fn catalog_mac(&self, part: &[u8], wasm_digest: &[u8; 32], grant: &str) -> blake3::Hasher {
        let mut mac = self.mac.clone();
        mac.update(DOMAIN);
        mac.update(part);
        mac.update(wasm_digest);
        mac.update(&self.engine_digest);
        mac.update(env!("CARGO_PKG_VERSION").as_bytes());
        mac.update(b"\0");
        mac.update(&(grant.len() as u64).to_le_bytes());
        mac.update(grant.as_bytes());
        mac
    }

    fn catalog_name(&self, wasm_digest: &[u8; 32], grant: &str) -> String {
        format!("{}.catalog", hex(&self.catalog_mac(b"name\0", wasm_digest, grant).finalize().as_bytes()[..16]))
    }

    fn catalog_tag(&self, wasm_digest: &[u8; 32], grant: &str, json: &[u8]) -> blake3::Hash {
        let mut mac = self.catalog_mac(b"tag\0", wasm_digest, grant);
        mac.update(json);
        mac.finalize()
    }
}

/// The record's body, if its tag is this wasm's, this grant's and this JSON's.
fn read_verified(cache: &Cache, file: &std::fs::File, len: u64, wasm_digest: &[u8; 32], grant: &str) -> Option<Body> {
    let mut record = vec![0u8; usize::try_from(len).ok()?];
    os::read_exact_at(file, &mut record, 0).ok()?;
    let (json, tag) = record.split_at(record.len() - TAG_LEN);
    // `blake3::Hash` compares in constant time.
    if blake3::Hash::from_slice(tag).ok()? != cache.catalog_tag(wasm_digest, grant, json) {
        return None;
    }
    serde_json::from_slice(json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::{ListCacheHints, PluginInfo};
    use crate::protocol::{CacheHint, CacheScope, Prompt, PromptArgument, Resource, ResourceTemplate, TaskSupport, Tool};

    fn cache(dir: &std::path::Path) -> Cache {
        Cache::open(&dir.join("cache"), &wasmtime::Engine::default()).expect("cache")
    }

    fn catalog() -> Catalog {
        let schema = serde_json::value::RawValue::from_string(r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned()).expect("json");
        let mut capabilities = Map::new();
        capabilities.insert("elicitation".to_owned(), serde_json::json!({}));
        Catalog {
            info: PluginInfo { name: "p".to_owned(), version: "1.2.3".to_owned(), description: Some("d".to_owned()), ..PluginInfo::default() },
            tools: vec![
                Tool::new("echo", schema.clone()).with_description("echoes").with_task_support(TaskSupport::Optional).with_required_capabilities(capabilities),
                Tool::new("plain", schema),
            ],
            resources: vec![Resource::new("file:///a", "a").with_mime_type("text/plain")],
            resource_templates: vec![ResourceTemplate::new("file:///{x}", "x")],
            prompts: vec![Prompt::new("greet").with_arguments(vec![PromptArgument::new("who", true)])],
            cache: ListCacheHints { tools: Some(CacheHint { ttl_ms: 5, scope: CacheScope::Private }), ..ListCacheHints::default() },
        }
    }

    /// The catalog as a client and the router see it: its debug form covers every field.
    fn shown(catalog: &Catalog) -> String {
        format!("{catalog:?}")
    }

    #[test]
    fn a_recorded_catalog_comes_back_whole_for_its_wasm_and_grant_only() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = cache(dir.path());
        let (wasm, grant) = ([3u8; 32], "Grant { env: {} }");
        assert!(cache.recorded_catalog(&wasm, grant).is_none(), "nothing recorded yet");
        cache.record_catalog(&wasm, grant, &catalog());
        let back = cache.recorded_catalog(&wasm, grant).expect("the record");
        assert_eq!(shown(&back), shown(&catalog()));
        assert!(back.tools[0].required_capabilities.is_some(), "what the wire form leaves out comes back too");
        assert!(cache.recorded_catalog(&[4u8; 32], grant).is_none(), "another wasm");
        assert!(cache.recorded_catalog(&wasm, "Grant { env: {\"A\": \"1\"} }").is_none(), "another grant");
    }

    #[test]
    fn an_altered_record_is_not_believed_and_is_dropped() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = cache(dir.path());
        let (wasm, grant) = ([5u8; 32], "g");
        cache.record_catalog(&wasm, grant, &catalog());
        let path = cache.dir.join(cache.catalog_name(&wasm, grant));
        let mut bytes = std::fs::read(&path).expect("read");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let at = text.find("echoes").expect("the description is in the record");
        bytes[at] = b'E';
        std::fs::write(&path, &bytes).expect("write");
        assert!(cache.recorded_catalog(&wasm, grant).is_none(), "a changed description fails the tag");
        assert!(!path.exists(), "and the record is dropped");
    }
}

//! `requestState` for 2026-07-28 input rounds: what the host needs to finish a round trip
//! (the plugin's state and the requests it asked), sealed so a client holds it but can neither
//! read nor change it.
//!
//! Sealing is XChaCha20-Poly1305 under a 32-byte key (from `--state-key-file`, or drawn at
//! start), with a fresh random nonce per state. The associated data binds the state to the
//! request it answers: plugin, method, tool or prompt name or resource URI, a digest of the
//! arguments in canonical form, and the caller. A state replayed on another request, altered,
//! sealed under another key or past its expiry does not open. Replicas that share the key file
//! open each other's states.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{InputMethod, InputRequest, InputResponse, MAX_PLUGIN_STATE};

/// How long a sealed state may be answered.
pub const STATE_TTL: Duration = Duration::from_secs(600);
/// Longest `requestState` the host tries to open, and so the longest it seals.
pub const MAX_SEALED_STATE: usize = 8 << 20;
/// Shortest key file accepted.
const MIN_KEY_FILE: usize = 32;
/// Format version, the first byte of every sealed state.
const VERSION: u8 = 1;
const NONCE: usize = 24;
/// The Poly1305 tag after the sealed bytes.
const TAG: usize = 16;

/// The key that seals request states.
#[derive(Clone)]
pub struct StateKey {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// Why a state key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateKeyError {
    // The cause is part of the message, not a `source`: a report that prints the chain would
    // print it twice.
    #[error("cannot read the state key file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error(
        "the state key file {path} holds {len} bytes; it needs at least {MIN_KEY_FILE} random bytes (for example `(umask 077; head -c 32 /dev/urandom > {path})`)"
    )]
    TooShort { path: String, len: usize },
    #[error("the state key file {path} can be written by other users (mode {mode:o}); make it `chmod 600`")]
    Writable { path: String, mode: u32 },
    #[error("cannot draw a random state key: {0}")]
    Random(String),
}

/// The shared key material in a key file: at least 32 bytes, in a file other users cannot write
/// (a warning is logged when they can read it). Replicas that share it open each other's
/// request states and recognise each other's ids.
///
/// # Errors
/// The file cannot be read, is too short, or can be written by other users.
pub fn key_material(path: &Path) -> Result<Vec<u8>, StateKeyError> {
    use std::os::unix::fs::MetadataExt as _;
    let shown = path.display().to_string();
    let read = |error| StateKeyError::Read { path: shown.clone(), error };
    let metadata = std::fs::metadata(path).map_err(read)?;
    if metadata.mode() & 0o002 != 0 {
        return Err(StateKeyError::Writable { path: shown, mode: metadata.mode() & 0o7777 });
    }
    if metadata.mode() & 0o044 != 0 {
        tracing::warn!(path = %shown, "the state key file can be read by other users; `chmod 600` it");
    }
    let bytes = std::fs::read(path).map_err(read)?;
    if bytes.len() < MIN_KEY_FILE {
        return Err(StateKeyError::TooShort { path: shown, len: bytes.len() });
    }
    Ok(bytes)
}

/// Why a `requestState` was not accepted. Each is answered `-32602`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("`requestState` is not one this server issued for this request, or it was altered")]
    Invalid,
    #[error("`requestState` has expired: send the request again without it")]
    Expired,
}

/// A round the host will not seal: it would not open again (longer than `MAX_SEALED_STATE`
/// once sealed, or a plugin state over `MAX_PLUGIN_STATE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the input round is too large to carry in `requestState`: {bytes} bytes sealed, at most {MAX_SEALED_STATE} (plugin state at most {MAX_PLUGIN_STATE} bytes)"
)]
pub struct TooLarge {
    /// How long the sealed state would have been.
    pub bytes: usize,
}

/// What a request is, for binding a state to it.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub plugin: &'a str,
    pub method: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub target: &'a str,
    /// The arguments (`null` when the method has none).
    pub arguments: &'a Value,
    pub caller: Option<&'a str>,
}

/// What a sealed state carries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    /// The requests of the round still unanswered, to ask again when a retry leaves them out.
    pub requests: Vec<InputRequest>,
    /// Answers of this round a partial retry already gave, carried until the rest arrive.
    pub answered: Vec<InputResponse>,
    /// The plugin's own state.
    pub plugin_state: Option<Vec<u8>>,
}

impl StateKey {
    /// A key drawn at random: states open only in this process.
    pub fn random() -> Result<StateKey, StateKeyError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| StateKeyError::Random(e.to_string()))?;
        Ok(StateKey::from_material(&key))
    }

    /// A key derived from a file's bytes (at least 32), which replicas share.
    pub fn from_file(path: &Path) -> Result<StateKey, StateKeyError> {
        Ok(StateKey::from_material(&key_material(path)?))
    }

    /// The key derived from shared key material (what `key_material` read, or 32 random bytes).
    pub fn from_material(material: &[u8]) -> StateKey {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(material).expect("HMAC takes keys of any length");
        mac.update(b"paddock request-state key v1");
        let key = mac.finalize().into_bytes();
        StateKey { cipher: XChaCha20Poly1305::new(&key) }
    }

    /// Seals a round for a client to hand back with its answers within `STATE_TTL`.
    ///
    /// # Errors
    /// The round would not open again: it is too large.
    pub fn seal(&self, binding: &Binding<'_>, round: &Round) -> Result<String, TooLarge> {
        self.seal_for(binding, round, STATE_TTL)
    }

    /// Seals a round that may be answered for `ttl` (a zero `ttl` has expired already).
    ///
    /// # Errors
    /// The round would not open again: it is too large.
    pub fn seal_for(&self, binding: &Binding<'_>, round: &Round, ttl: Duration) -> Result<String, TooLarge> {
        self.seal_at(binding, round, now() + ttl.as_secs())
    }

    fn seal_at(&self, binding: &Binding<'_>, round: &Round, expires_at: u64) -> Result<String, TooLarge> {
        let requests: Vec<Value> = round.requests.iter().map(|r| json!({"key": r.key, "method": method_tag(r.method), "params": r.params})).collect();
        let answered: Vec<Value> = round.answered.iter().map(|r| json!({"key": r.key, "method": method_tag(r.method), "result": r.result})).collect();
        let header = json!({"exp": expires_at, "requests": requests, "answered": answered}).to_string();
        let state = round.plugin_state.as_deref().unwrap_or_default();
        // The opener's bounds, checked before anything is encrypted: what is sealed opens.
        let bytes = sealed_len(4 + header.len() + 1 + state.len());
        if bytes > MAX_SEALED_STATE || state.len() > MAX_PLUGIN_STATE {
            return Err(TooLarge { bytes });
        }
        let mut plain = Vec::with_capacity(4 + header.len() + 1 + state.len());
        plain.extend_from_slice(&(header.len() as u32).to_be_bytes());
        plain.extend_from_slice(header.as_bytes());
        plain.push(u8::from(round.plugin_state.is_some()));
        plain.extend_from_slice(state);
        let mut nonce = [0u8; NONCE];
        // A nonce that cannot be drawn would repeat one: refuse to seal rather than weaken it.
        getrandom::fill(&mut nonce).expect("the system's random source works");
        let aad = associated_data(binding);
        let sealed = self.cipher.encrypt(XNonce::from_slice(&nonce), Payload { msg: &plain, aad: &aad }).expect("sealing a bounded buffer cannot fail");
        let mut out = Vec::with_capacity(1 + NONCE + sealed.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        let token = BASE64URL.encode(out);
        debug_assert_eq!(token.len(), bytes, "the sealed length is known before sealing");
        Ok(token)
    }

    /// Opens a state for the request it must have been sealed for.
    pub fn open(&self, binding: &Binding<'_>, token: &str) -> Result<Round, SealError> {
        self.open_at(binding, token, now())
    }

    fn open_at(&self, binding: &Binding<'_>, token: &str, now: u64) -> Result<Round, SealError> {
        if token.len() > MAX_SEALED_STATE {
            return Err(SealError::Invalid);
        }
        let raw = BASE64URL.decode(token).map_err(|_| SealError::Invalid)?;
        if raw.len() < 1 + NONCE || raw[0] != VERSION {
            return Err(SealError::Invalid);
        }
        let (nonce, sealed) = raw[1..].split_at(NONCE);
        let aad = associated_data(binding);
        let plain = self.cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad: &aad }).map_err(|_| SealError::Invalid)?;
        // From here on the bytes are our own: a parse failure is a bug, treated as invalid.
        let (len, rest) = plain.split_first_chunk::<4>().ok_or(SealError::Invalid)?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len + 1 {
            return Err(SealError::Invalid);
        }
        let header: Value = serde_json::from_slice(&rest[..len]).map_err(|_| SealError::Invalid)?;
        let expires_at = header.get("exp").and_then(Value::as_u64).ok_or(SealError::Invalid)?;
        if now >= expires_at {
            return Err(SealError::Expired);
        }
        let requests = header
            .get("requests")
            .and_then(Value::as_array)
            .ok_or(SealError::Invalid)?
            .iter()
            .map(|r| {
                Some(InputRequest {
                    key: r.get("key")?.as_str()?.to_owned(),
                    method: method_from_tag(r.get("method")?.as_str()?)?,
                    params: r.get("params")?.as_object()?.clone(),
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(SealError::Invalid)?;
        let answered = header
            .get("answered")
            .and_then(Value::as_array)
            .ok_or(SealError::Invalid)?
            .iter()
            .map(|r| {
                Some(InputResponse {
                    key: r.get("key")?.as_str()?.to_owned(),
                    method: method_from_tag(r.get("method")?.as_str()?)?,
                    result: r.get("result")?.clone(),
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(SealError::Invalid)?;
        let plugin_state = match rest[len] {
            0 => None,
            _ => Some(rest[len + 1..].to_vec()),
        };
        if plugin_state.as_ref().is_some_and(|s| s.len() > MAX_PLUGIN_STATE) {
            return Err(SealError::Invalid);
        }
        Ok(Round { requests, answered, plugin_state })
    }
}

/// The length of the `requestState` that seals `plain` bytes: version, nonce, ciphertext and
/// tag, in unpadded base64url.
fn sealed_len(plain: usize) -> usize {
    let raw = 1 + NONCE + plain + TAG;
    (raw / 3) * 4 + [0, 2, 3][raw % 3]
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn method_tag(method: InputMethod) -> &'static str {
    match method {
        InputMethod::ElicitForm => "elicit-form",
        InputMethod::ElicitUrl => "elicit-url",
        InputMethod::Sample { tools: false, context: false } => "sample",
        InputMethod::Sample { tools: true, context: false } => "sample+tools",
        InputMethod::Sample { tools: false, context: true } => "sample+context",
        InputMethod::Sample { tools: true, context: true } => "sample+tools+context",
        InputMethod::ListRoots => "list-roots",
    }
}

fn method_from_tag(tag: &str) -> Option<InputMethod> {
    Some(match tag {
        "elicit-form" => InputMethod::ElicitForm,
        "elicit-url" => InputMethod::ElicitUrl,
        "sample" => InputMethod::Sample { tools: false, context: false },
        "sample+tools" => InputMethod::Sample { tools: true, context: false },
        "sample+context" => InputMethod::Sample { tools: false, context: true },
        "sample+tools+context" => InputMethod::Sample { tools: true, context: true },
        "list-roots" => InputMethod::ListRoots,
        _ => return None,
    })
}

/// The bytes a state is bound to: each part length-prefixed, the arguments by the SHA-256 of
/// their canonical JSON (keys sorted, no whitespace), so a reordered but equal object binds the same.
fn associated_data(b: &Binding<'_>) -> Vec<u8> {
    let digest = Sha256::digest(crate::jsonrpc::canonical(b.arguments).as_bytes());
    let mut aad = b"paddock request-state v1".to_vec();
    for part in [b.plugin.as_bytes(), b.method.as_bytes(), b.target.as_bytes(), &digest[..], b.caller.unwrap_or("").as_bytes()] {
        aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
        aad.extend_from_slice(part);
    }
    aad.push(u8::from(b.caller.is_some()));
    aad
}

#[cfg(test)]
mod tests;

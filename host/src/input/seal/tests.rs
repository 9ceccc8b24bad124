//! Sealed request states: round trips, and every way a state must fail to open.

use serde_json::json;

use super::*;

fn round() -> Round {
    Round {
        requests: vec![InputRequest {
            key: "user_name".into(),
            method: InputMethod::ElicitForm,
            params: json!({"message": "Who are you?", "requestedSchema": {"type": "object"}}).as_object().cloned().unwrap(),
        }],
        answered: vec![InputResponse { key: "roots".into(), method: InputMethod::ListRoots, result: json!({"roots": []}) }],
        plugin_state: Some(b"step-1".to_vec()),
    }
}

fn binding<'a>(arguments: &'a Value) -> Binding<'a> {
    Binding { plugin: "conf", method: "tools/call", target: "greet", arguments, caller: None }
}

#[test]
fn a_sealed_round_opens_for_its_own_request_only() {
    let key = StateKey::random().unwrap();
    let args = json!({"a": 1, "b": [true, null]});
    let token = key.seal(&binding(&args), &round()).unwrap();
    assert_eq!(key.open(&binding(&args), &token), Ok(round()));

    let reordered = json!({"b": [true, null], "a": 1});
    assert_eq!(key.open(&binding(&reordered), &token), Ok(round()), "equal arguments in another order bind the same");

    let other_args = json!({"a": 2, "b": [true, null]});
    assert_eq!(key.open(&binding(&other_args), &token), Err(SealError::Invalid));
    let other_tool = Binding { target: "other", ..binding(&args) };
    assert_eq!(key.open(&other_tool, &token), Err(SealError::Invalid));
    let other_method = Binding { method: "prompts/get", ..binding(&args) };
    assert_eq!(key.open(&other_method, &token), Err(SealError::Invalid));
    let other_plugin = Binding { plugin: "conf2", ..binding(&args) };
    assert_eq!(key.open(&other_plugin, &token), Err(SealError::Invalid));
    let other_caller = Binding { caller: Some("mallory"), ..binding(&args) };
    assert_eq!(key.open(&other_caller, &token), Err(SealError::Invalid));
}

#[test]
fn the_plugin_state_is_not_readable_in_the_token() {
    let key = StateKey::random().unwrap();
    let args = json!({});
    let secret = Round { plugin_state: Some(b"the-plugin-secret-value".to_vec()), ..round() };
    let token = key.seal(&binding(&args), &secret).unwrap();
    let raw = BASE64URL.decode(&token).unwrap();
    assert!(!raw.windows(10).any(|w| w == b"the-plugin"), "the state is encrypted, not only signed");
    assert!(!raw.windows(9).any(|w| w == b"user_name"));
}

#[test]
fn a_tampered_truncated_or_foreign_state_does_not_open() {
    let key = StateKey::random().unwrap();
    let args = json!({});
    let token = key.seal(&binding(&args), &round()).unwrap();
    let mut raw = BASE64URL.decode(&token).unwrap();
    for i in [0, 1, NONCE + 1, raw.len() / 2, raw.len() - 1] {
        raw[i] ^= 0x01;
        assert_eq!(key.open(&binding(&args), &BASE64URL.encode(&raw)), Err(SealError::Invalid), "byte {i} flipped");
        raw[i] ^= 0x01;
    }
    assert_eq!(key.open(&binding(&args), &token[..token.len() - 4]), Err(SealError::Invalid));
    assert_eq!(key.open(&binding(&args), "not base64!"), Err(SealError::Invalid));
    assert_eq!(key.open(&binding(&args), ""), Err(SealError::Invalid));
    let other = StateKey::random().unwrap();
    assert_eq!(other.open(&binding(&args), &token), Err(SealError::Invalid), "another key");
}

#[test]
fn an_expired_state_is_refused_as_expired() {
    let key = StateKey::random().unwrap();
    let args = json!({});
    let token = key.seal_at(&binding(&args), &round(), 1_000).unwrap();
    assert_eq!(key.open_at(&binding(&args), &token, 999), Ok(round()));
    assert_eq!(key.open_at(&binding(&args), &token, 1_000), Err(SealError::Expired));
}

#[test]
fn replicas_sharing_a_key_file_open_each_other_s_states() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.key");
    std::fs::write(&path, [7u8; 32]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let first = StateKey::from_file(&path).unwrap();
    let second = StateKey::from_file(&path).unwrap();
    let args = json!({"x": 1});
    let token = first.seal(&binding(&args), &round()).unwrap();
    assert_eq!(second.open(&binding(&args), &token), Ok(round()));

    std::fs::write(&path, [7u8; 31]).unwrap();
    assert!(matches!(StateKey::from_file(&path), Err(StateKeyError::TooShort { len: 31, .. })));
    std::fs::write(&path, [7u8; 32]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(matches!(StateKey::from_file(&path), Err(StateKeyError::Writable { .. })));
    assert!(matches!(StateKey::from_file(&dir.path().join("missing")), Err(StateKeyError::Read { .. })));
}

#[test]
fn every_method_tag_round_trips() {
    for method in [
        InputMethod::ElicitForm,
        InputMethod::ElicitUrl,
        InputMethod::ListRoots,
        InputMethod::Sample { tools: false, context: false },
        InputMethod::Sample { tools: true, context: false },
        InputMethod::Sample { tools: false, context: true },
        InputMethod::Sample { tools: true, context: true },
    ] {
        assert_eq!(method_from_tag(method_tag(method)), Some(method));
    }
}

#[test]
fn a_round_too_large_to_open_is_never_sealed() {
    let key = StateKey::random().unwrap();
    let args = json!({});
    let with_filler = |bytes: usize| Round {
        requests: vec![InputRequest {
            key: "big".into(),
            method: InputMethod::ElicitForm,
            params: json!({"message": "a".repeat(bytes), "requestedSchema": {"type": "object"}}).as_object().cloned().unwrap(),
        }],
        answered: Vec::new(),
        plugin_state: Some(vec![7; MAX_PLUGIN_STATE]),
    };
    // 13 MiB of requests would seal to more than the opener reads.
    assert!(matches!(key.seal(&binding(&args), &with_filler(13 << 20)), Err(TooLarge { bytes }) if bytes > MAX_SEALED_STATE));
    // Around the bound: whatever seals opens, and the first round that does not is refused.
    let overhead = key.seal(&binding(&args), &with_filler(0)).unwrap().len();
    let fits = (MAX_SEALED_STATE - overhead) * 3 / 4;
    let (mut sealed, mut refused) = (0, 0);
    for bytes in fits - 4..fits + 8 {
        match key.seal(&binding(&args), &with_filler(bytes)) {
            Ok(token) => {
                assert!(token.len() <= MAX_SEALED_STATE, "{bytes}");
                assert_eq!(key.open(&binding(&args), &token).map(|r| r.requests[0].params["message"].as_str().map(str::len)), Ok(Some(bytes)));
                assert_eq!(refused, 0, "a larger round sealed after a smaller one was refused");
                sealed += 1;
            }
            Err(TooLarge { bytes: len }) => {
                assert!(len > MAX_SEALED_STATE, "{bytes}: {len}");
                refused += 1;
            }
        }
    }
    assert!(sealed > 0 && refused > 0, "the bound lies in the range tried: {sealed} sealed, {refused} refused");
    let oversized_state = Round { plugin_state: Some(vec![0; MAX_PLUGIN_STATE + 1]), ..round() };
    assert!(key.seal(&binding(&args), &oversized_state).is_err(), "a plugin state the opener refuses is not sealed");
}

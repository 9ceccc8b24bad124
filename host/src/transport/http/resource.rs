//! The listener as an OAuth 2.1 resource server: its RFC 9728 metadata and the challenges of
//! its refusals.
//!
//! - `GET /.well-known/oauth-protected-resource` and `/.well-known/oauth-protected-resource/mcp`
//!   answer `{resource, authorization_servers, scopes_supported, bearer_methods_supported}`,
//!   `resource` being the configured URI exactly; without a token (the guard's Host and Origin
//!   checks still apply), and 404 when OAuth is not configured.
//! - A missing or invalid token is 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
//!   (`error="invalid_token"` when a token was presented, `scope="…"` when scopes are
//!   required); a missing scope is 403 `insufficient_scope` naming the scopes needed.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::Shared;
use crate::identity::oauth::Settings;

/// The metadata's path below the resource's origin.
pub(super) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The URL of the metadata for `resource` (RFC 9728 §3.1: the well-known path goes between the
/// origin and the resource's path).
pub(super) fn metadata_url(resource: &str) -> String {
    let (origin, path) = match resource.parse::<http::Uri>() {
        Ok(uri) => {
            let origin = format!("{}://{}", uri.scheme_str().unwrap_or("https"), uri.authority().map_or("", |a| a.as_str()));
            (origin, uri.path().trim_end_matches('/').to_owned())
        }
        Err(_) => (resource.trim_end_matches('/').to_owned(), String::new()),
    };
    format!("{origin}{METADATA_PATH}{path}")
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub(super) async fn metadata(State(shared): State<Arc<Shared>>) -> Response {
    let Some(verifier) = &shared.options.access.oauth else {
        return super::plain(StatusCode::NOT_FOUND, "not found");
    };
    let settings = verifier.settings();
    let body = serde_json::json!({
        "resource": settings.resource,
        "authorization_servers": [settings.issuer],
        "scopes_supported": settings.required_scopes,
        "bearer_methods_supported": ["header"],
    });
    let mut response = super::json_reply(StatusCode::OK, body.to_string());
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
    response
}

/// The `WWW-Authenticate` value of a 401: where the metadata is, `invalid_token` when a token
/// was presented, and the scopes every token needs.
pub(super) fn unauthorized_challenge(settings: &Settings, presented: bool) -> HeaderValue {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", metadata_url(&settings.resource));
    if presented {
        challenge.push_str(", error=\"invalid_token\"");
    }
    if !settings.required_scopes.is_empty() {
        challenge.push_str(&format!(", scope=\"{}\"", settings.required_scopes.join(" ")));
    }
    header_value(challenge)
}

/// The 403 of a valid token that lacks `scopes`: `insufficient_scope`, the scopes needed and
/// (with OAuth configured) where the metadata is, so the client can ask for them (step-up).
/// Scopes a header cannot carry inside quotes are left out.
pub(super) fn insufficient_scope(shared: &Shared, scopes: &[&str]) -> Response {
    let error = crate::jsonrpc::ErrorObject::new(crate::jsonrpc::INVALID_REQUEST, "the token lacks a scope this request needs");
    let mut response = super::json_reply(StatusCode::FORBIDDEN, crate::jsonrpc::error_line(None, &error));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, insufficient_scope_challenge(shared, scopes));
    response
}

/// The `WWW-Authenticate` challenge of a request whose token lacks `scopes` (RFC 6750 §3.1),
/// naming the resource metadata when OAuth is configured: for the listener's required scopes
/// and for a tool policy's.
pub(super) fn insufficient_scope_challenge(shared: &Shared, scopes: &[&str]) -> HeaderValue {
    let needed: Vec<&str> = scopes.iter().copied().filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')).collect();
    let mut challenge = format!("Bearer error=\"insufficient_scope\", scope=\"{}\"", needed.join(" "));
    if let Some(verifier) = &shared.options.access.oauth {
        challenge.push_str(&format!(", resource_metadata=\"{}\"", metadata_url(&verifier.settings().resource)));
    }
    header_value(challenge)
}

fn header_value(text: String) -> HeaderValue {
    // Every part comes from checked settings (URLs, scopes without quotes or spaces); a value a
    // header cannot carry falls back to the bare scheme rather than fail the refusal.
    HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_puts_the_well_known_path_between_origin_and_path() {
        assert_eq!(metadata_url("https://mcp.example.com/mcp"), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
        assert_eq!(metadata_url("http://127.0.0.1:8080/mcp"), "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp");
        assert_eq!(metadata_url("https://mcp.example.com/"), "https://mcp.example.com/.well-known/oauth-protected-resource");
        assert_eq!(metadata_url("https://example.com/tools/mcp"), "https://example.com/.well-known/oauth-protected-resource/tools/mcp");
    }
}

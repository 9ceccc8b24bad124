//! A small blocking HTTP GET over wasi:http, with a bounded body.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// The most body bytes kept.
pub const MAX_BODY: usize = 1 << 20;

/// The most redirects followed.
pub const MAX_REDIRECTS: usize = 5;

/// What came back.
pub struct Response {
    pub status: u16,
    /// The URL that answered (after redirects).
    pub url: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub truncated: bool,
}

/// GETs `url`, following up to `MAX_REDIRECTS` redirects. Each hop is a new wasi:http request,
/// so the host checks every one against the grant; a refused hop is an error saying so.
pub fn get(url: &str) -> Result<Response, String> {
    let mut url = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        match get_once(&url)? {
            Hop::Done(response) => return Ok(response),
            Hop::Redirect(location) => url = resolve(&url, &location),
        }
    }
    Err(format!("more than {MAX_REDIRECTS} redirects"))
}

enum Hop {
    Done(Response),
    Redirect(String),
}

/// `location` made absolute against `base` (absolute URLs and absolute paths).
fn resolve(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let origin_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    if location.starts_with('/') {
        format!("{}{location}", &base[..origin_end])
    } else {
        let dir_end = base.rfind('/').filter(|&i| i >= origin_end).map_or(base.len(), |i| i + 1);
        let prefix = if dir_end == base.len() && dir_end == origin_end { format!("{base}/") } else { base[..dir_end].to_owned() };
        format!("{prefix}{location}")
    }
}

fn get_once(url: &str) -> Result<Hop, String> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else {
        return Err(format!("`{url}` is not an http:// or https:// URL"));
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_owned()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_owned()),
    };
    if authority.is_empty() {
        return Err(format!("`{url}` has no host"));
    }
    let headers = Fields::new();
    let _ = headers.append("user-agent", b"paddock-fetch/0.1");
    let request = OutgoingRequest::new(headers);
    request.set_scheme(Some(&scheme)).map_err(|()| "invalid scheme")?;
    request.set_authority(Some(authority)).map_err(|()| format!("invalid host `{authority}`"))?;
    request.set_path_with_query(Some(&path)).map_err(|()| format!("invalid path `{path}`"))?;
    let pending = outgoing_handler::handle(request, None).map_err(describe)?;
    pending.subscribe().block();
    let response = pending.get().ok_or("no response")?.map_err(|()| "the response was already taken")?.map_err(describe)?;
    let status = response.status();
    if matches!(status, 301 | 302 | 303 | 307 | 308)
        && let Some(location) = response.headers().get("location").first()
    {
        return Ok(Hop::Redirect(String::from_utf8_lossy(location).into_owned()));
    }
    let content_type = response.headers().get("content-type").first().map(|v| String::from_utf8_lossy(v).into_owned());
    let body = response.consume().map_err(|()| "the response has no body")?;
    let stream = body.stream().map_err(|()| "the body has no stream")?;
    let mut bytes = Vec::new();
    let mut truncated = false;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                let room = MAX_BODY - bytes.len();
                if chunk.len() > room {
                    bytes.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                bytes.extend(chunk);
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => return Err(format!("reading the body failed: {}", e.to_debug_string())),
        }
    }
    Ok(Hop::Done(Response { status, url: url.to_owned(), content_type, body: bytes, truncated }))
}

fn describe(error: ErrorCode) -> String {
    match error {
        ErrorCode::HttpRequestDenied => "request denied by the host: the target is not in this plugin's network grant".to_owned(),
        ErrorCode::ConnectionRefused => "connection refused".to_owned(),
        ErrorCode::DnsError(e) => format!("DNS error: {}", e.rcode.unwrap_or_default()),
        ErrorCode::ConnectionTimeout => "connection timed out".to_owned(),
        other => format!("request failed: {other:?}"),
    }
}

//! The `fetch` sample plugin: HTTP GET through wasi:http. The host checks every request (and
//! every redirect, which arrives as a new request) against the operator's network grant.

mod http;

use paddock_sdk::{Deserialize, JsonSchema, Requests, export_plugin, tool};

#[derive(Deserialize, JsonSchema)]
struct GetArgs {
    /// An `http://` or `https://` URL.
    url: String,
}

/// Fetches a URL with HTTP GET (following up to 5 redirects) and returns the status, the final
/// URL, the content type and the body as text (up to 1 MiB).
#[tool(read_only, open_world)]
fn get(args: GetArgs) -> Result<String, String> {
    let response = http::get(&args.url)?;
    let mut out = format!("HTTP {}\nurl: {}\n", response.status, response.url);
    if let Some(content_type) = &response.content_type {
        out.push_str(&format!("content-type: {content_type}\n"));
    }
    if response.truncated {
        out.push_str(&format!("(body truncated to {} bytes)\n", http::MAX_BODY));
    }
    out.push('\n');
    out.push_str(&String::from_utf8_lossy(&response.body));
    Ok(out)
}

export_plugin! {
    name: "fetch",
    version: env!("CARGO_PKG_VERSION"),
    title: "Fetch",
    description: "HTTP GET of a URL, limited to the targets its operator granted",
    requests: Requests::new().network("https://example.com"),
    tools: [get],
}

//! {{name}}: a Paddock plugin serving resources: one fixed, one by URI template.
//!
//! Build: `cargo build --release --target wasm32-wasip2`, then serve the folder holding the
//! `.wasm`; or run `paddock dev .` to rebuild, check and serve on every save.

use paddock_sdk::{UriVars, export_plugin, resource, resource_template};

/// What this plugin serves.
#[resource(uri = "{{scheme}}://about", name = "about", mime_type = "text/plain")]
fn about() -> &'static str {
    "Notes served by {{name}}: read {{scheme}}://notes/{topic}."
}

/// A note on a topic.
#[resource_template(uri_template = "{{scheme}}://notes/{topic}", name = "note", mime_type = "text/plain")]
fn note(vars: UriVars) -> Result<String, String> {
    let topic = vars.get("topic").ok_or("no topic in the URI")?;
    Ok(format!("A note about {topic}."))
}

export_plugin! {
    name: "{{name}}",
    version: env!("CARGO_PKG_VERSION"),
    resources: [about],
    resource_templates: [note],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_about_text_names_the_template() {
        assert!(about().contains("{{scheme}}://notes/"));
    }
}

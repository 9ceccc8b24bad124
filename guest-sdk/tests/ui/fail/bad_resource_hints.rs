use paddock_sdk::{resource, resource_template, UriVars};

#[resource(uri = "demo://a", priority = 1.5)]
fn loud() -> String {
    String::new()
}

#[resource(uri = "demo://b", audience = "everyone")]
fn crowd() -> String {
    String::new()
}

#[resource(uri = "demo://c", cache_scope = "public")]
fn forever() -> String {
    String::new()
}

#[resource_template(uri_template = "demo://d/{x}", cache_ttl_ms = 10, cache_scope = "shared")]
fn shared(_vars: UriVars) -> String {
    String::new()
}

#[resource_template(uri_template = "demo://e/{x}", size = 3)]
fn sized(_vars: UriVars) -> String {
    String::new()
}

fn main() {}

use paddock_sdk::tool;

#[tool(icon = "http://example.com/plain.png")]
fn report() -> String {
    String::new()
}

fn main() {}

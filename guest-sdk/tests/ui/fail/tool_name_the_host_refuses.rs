use paddock_sdk::tool;

/// Greets.
#[tool(name = "say hello")]
fn greet() -> String {
    "hello".into()
}

fn main() {}

use paddock_sdk::{prompt, tool};

#[tool(meta = "[1, 2]")]
fn listing() -> String {
    String::new()
}

#[prompt(meta = "{not json}")]
fn broken() -> String {
    String::new()
}

fn main() {}

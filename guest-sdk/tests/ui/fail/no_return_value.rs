use paddock_sdk::tool;

#[tool]
fn nothing() {}

fn main() {}

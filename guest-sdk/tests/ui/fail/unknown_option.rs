use paddock_sdk::tool;

#[tool(readonly)]
fn echo() -> String {
    String::new()
}

fn main() {}

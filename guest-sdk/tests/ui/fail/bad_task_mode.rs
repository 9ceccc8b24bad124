use paddock_sdk::tool;

#[tool(task = "sometimes")]
fn report() -> String {
    String::new()
}

fn main() {}

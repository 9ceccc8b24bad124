use paddock_sdk::tool;

#[tool(title = "One", title = "Two")]
fn twice() -> String {
    String::new()
}

fn main() {}

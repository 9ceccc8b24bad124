use paddock_sdk::tool;

#[tool]
async fn wait() -> String {
    String::new()
}

fn main() {}

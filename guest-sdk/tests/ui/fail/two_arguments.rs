use paddock_sdk::tool;

#[tool]
fn add(a: u32, b: u32) -> String {
    format!("{}", a + b)
}

fn main() {}

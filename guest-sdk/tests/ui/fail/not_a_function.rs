use paddock_sdk::tool;

#[tool]
struct NotATool {
    field: u32,
}

fn main() {}

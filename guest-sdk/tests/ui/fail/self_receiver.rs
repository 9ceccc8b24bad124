use paddock_sdk::tool;

struct Service;

impl Service {
    #[tool]
    fn run(&self) -> String {
        String::new()
    }
}

fn main() {}

use paddock_sdk::resource;

#[resource(name = "about")]
fn about() -> String {
    String::new()
}

fn main() {}

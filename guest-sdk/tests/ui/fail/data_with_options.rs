use paddock_sdk::data;

#[data(rename_all = "camelCase")]
struct Args {
    text: String,
}

fn main() {}

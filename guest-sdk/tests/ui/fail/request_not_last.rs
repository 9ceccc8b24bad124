use paddock_sdk::{Deserialize, JsonSchema, Request, tool};

#[derive(Deserialize, JsonSchema)]
struct Args {
    text: String,
}

#[tool]
fn echo(cx: &Request, args: Args) -> String {
    format!("{} {}", args.text, cx.protocol_version())
}

fn main() {}

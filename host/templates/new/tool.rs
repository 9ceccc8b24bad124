//! {{name}}: a Paddock plugin with one tool.
//!
//! Build: `cargo build --release --target wasm32-wasip2`, then serve the folder holding the
//! `.wasm`; or run `paddock dev .` to rebuild, check and serve on every save.

use paddock_sdk::{Json, data, export_plugin, tool};

/// What to count.
#[data]
struct Text {
    /// The text to count the words of.
    text: String,
}

/// How many words.
#[data]
struct Count {
    /// Words separated by whitespace.
    words: usize,
}

/// Counts the words of a text.
#[tool(read_only, idempotent)]
fn count_words(args: Text) -> Json<Count> {
    Json(Count { words: args.text.split_whitespace().count() })
}

export_plugin! {
    name: "{{name}}",
    version: env!("CARGO_PKG_VERSION"),
    tools: [count_words],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        let Json(count) = count_words(Text { text: "one two  three".into() });
        assert_eq!(count.words, 3);
    }
}

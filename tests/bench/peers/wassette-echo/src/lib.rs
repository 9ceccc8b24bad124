//! The `echo` component for Wassette: its one export returns its argument.

wit_bindgen::generate!({ world: "echo", path: "wit" });

struct Echo;

impl Guest for Echo {
    fn echo(text: String) -> String {
        text
    }
}

export!(Echo);

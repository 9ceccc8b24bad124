//! A component for another world (`other:thing/w`): the loader must refuse it with a clear reason.

wit_bindgen::generate!({ world: "w", path: "wit" });

struct OtherWorld;

impl Guest for OtherWorld {
    fn run() -> String {
        "not a paddock plugin".to_owned()
    }
}

export!(OtherWorld);

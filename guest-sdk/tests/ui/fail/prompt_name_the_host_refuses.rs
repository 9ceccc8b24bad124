use paddock_sdk::prompt;

/// A prompt whose function name is too long to be exposed.
#[prompt]
fn a_prompt_whose_name_is_far_too_long_to_fit_in_the_sixty_four_bytes_a_name_may_have() -> String {
    "hello".into()
}

fn main() {}

//! The `text` sample plugin: pure text computation with no grants at all, a resource, a
//! resource template and a prompt.

use paddock_sdk::{Deserialize, Json, JsonSchema, PromptMessage, Serialize, UriVars, export_plugin, prompt, resource, resource_template, tool};

#[derive(Deserialize, JsonSchema)]
struct TextArg {
    /// The text to work on.
    text: String,
}

/// Returns `text` exactly as given.
#[tool(read_only, idempotent)]
fn echo(args: TextArg) -> String {
    args.text
}

/// Converts text to upper case.
#[tool(read_only, idempotent)]
fn upper(args: TextArg) -> String {
    args.text.to_uppercase()
}

/// Converts text to lower case.
#[tool(read_only, idempotent)]
fn lower(args: TextArg) -> String {
    args.text.to_lowercase()
}

#[derive(Serialize, JsonSchema)]
struct Counts {
    /// Words separated by whitespace.
    words: usize,
    /// Lines (a trailing newline does not start a new one).
    lines: usize,
    /// Unicode scalar values.
    chars: usize,
    /// UTF-8 bytes.
    bytes: usize,
}

/// Counts the words, lines, characters and bytes of a text.
#[tool(read_only, idempotent)]
fn word_count(args: TextArg) -> Json<Counts> {
    let text = &args.text;
    paddock_sdk::host::debug(&format!("counting {} bytes", text.len()));
    Json(Counts { words: text.split_whitespace().count(), lines: text.lines().count(), chars: text.chars().count(), bytes: text.len() })
}

/// Turns text into a URL slug: lower-case ASCII letters and digits joined by `-`.
#[tool(read_only, idempotent)]
fn slugify(args: TextArg) -> Result<String, String> {
    let mut slug = String::new();
    for c in args.text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-').to_owned();
    if slug.is_empty() { Err("the text has no letters or digits to make a slug from".to_owned()) } else { Ok(slug) }
}

/// Encodes text (as UTF-8) in base64.
#[tool(read_only, idempotent)]
fn base64_encode(args: TextArg) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(args.text.as_bytes())
}

#[derive(Deserialize, JsonSchema)]
struct Base64Arg {
    /// Standard base64, with or without padding.
    data: String,
}

/// Decodes base64 into UTF-8 text.
#[tool(read_only, idempotent)]
fn base64_decode(args: Base64Arg) -> Result<String, String> {
    use base64::Engine;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine.decode(args.data.trim()).map_err(|e| format!("not base64: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "the decoded bytes are not UTF-8 text".to_owned())
}

/// The SHA-256 digest of a text (as UTF-8), in hex.
#[tool(read_only, idempotent)]
fn sha256(args: TextArg) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(args.text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What this plugin is and what it offers.
#[resource(uri = "text://about", name = "about", mime_type = "text/plain")]
fn about() -> &'static str {
    "The text plugin transforms and measures text: echo, upper, lower, word_count, slugify, base64_encode, base64_decode, sha256. It needs no grants."
}

/// Facts about one word: its length, its letters sorted, and whether it reads the same backwards.
#[resource_template(uri_template = "text://words/{word}", name = "word", mime_type = "application/json")]
fn word(vars: UriVars) -> Result<String, String> {
    let word = vars.get("word").ok_or("no word in the URI")?;
    let mut letters: Vec<char> = word.chars().collect();
    let palindrome = letters.iter().eq(letters.iter().rev());
    letters.sort_unstable();
    let sorted: String = letters.into_iter().collect();
    Ok(format!(r#"{{"word":{word:?},"length":{},"sorted":{sorted:?},"palindrome":{palindrome}}}"#, word.chars().count()))
}

#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarize.
    text: String,
    /// The style of the summary, for example "one sentence" or "bullet points".
    style: Option<String>,
}

/// Asks the model for a summary of a text.
#[prompt]
fn summarize(args: SummarizeArgs) -> Vec<PromptMessage> {
    let style = args.style.unwrap_or_else(|| "a short paragraph".to_owned());
    vec![PromptMessage::user(format!("Summarize the following text as {style}:\n\n{}", args.text))]
}

export_plugin! {
    name: "text",
    version: env!("CARGO_PKG_VERSION"),
    title: "Text tools",
    description: "Transforms and measures text; needs no grants",
    instructions: "Use text_* tools for exact text transformations instead of doing them yourself.",
    tools: [echo, upper, lower, word_count, slugify, base64_encode, base64_decode, sha256],
    resources: [about],
    resource_templates: [word],
    prompts: [summarize],
}

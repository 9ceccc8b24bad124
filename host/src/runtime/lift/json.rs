//! Validation of JSON text from plugins: schemas and `_meta` in catalogs, structured content and
//! `_meta` in results.
//!
//! The host keeps such JSON as text (`protocol::Json`) and only parses it when a result or a
//! list page is serialized. Text that is well-formed enough to be stored but not to be parsed
//! there (nesting past serde_json's recursion limit, a lone surrogate escape such as `"\ud800"`,
//! a number out of `f64` range such as `1e400`) would fail that serialization, and with it the
//! whole `tools/list` page of every plugin, or the whole result. So the text is checked here,
//! once, with exactly the parse the serialization does: anything accepted serializes later.
//!
//! Depth is counted first by a linear scan that neither recurses nor allocates, so a hostile
//! `[[[[…` of any length is refused before a parser sees it, and the parse that follows never
//! nests deeper than `MAX_JSON_DEPTH` (well inside serde_json's own limit of 128 and the stack).
//! The same scan finds lone surrogate escapes, which the parse would refuse too, so the reason
//! given names the escape rather than a parser's view of it.

use serde_json::Value;

/// Deepest nesting of arrays and objects accepted in plugin JSON. Real schemas and results nest
/// a dozen levels at most. The cap leaves room for the envelope the host wraps around the value
/// (response, result, list, item: about five levels) within the recursion limit of 128 that
/// serde_json, and clients built on it, apply when they parse a message.
pub const MAX_JSON_DEPTH: usize = 64;

/// Which JSON values a field accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonKind {
    Object,
    /// Any JSON value (for fields MCP does not restrict to objects).
    Any,
}

/// Why JSON text from a plugin is refused. Messages read after the name of the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JsonError {
    #[error("is {len} bytes; at most {max} are allowed")]
    TooLarge { len: usize, max: usize },
    #[error("nests deeper than {max} levels")]
    TooDeep { max: usize },
    #[error("has a lone surrogate escape `\\u{unit:04x}`; strings must hold whole Unicode characters")]
    LoneSurrogate { unit: u16 },
    #[error("is not valid JSON: {0}")]
    Invalid(String),
    #[error("must be a JSON object")]
    NotObject,
}

/// Checks that `text` is at most `max_bytes` long, nests at most `MAX_JSON_DEPTH` levels, has no
/// lone surrogate escape, parses as JSON (which also refuses numbers out of `f64` range) and is
/// of the right kind.
/// (The runtime calls `serialized_len`, which checks the same and counts.)
#[cfg(test)]
pub(crate) fn validate(text: &str, kind: JsonKind, max_bytes: usize) -> Result<(), JsonError> {
    parse(text, kind, max_bytes).map(|_| ())
}

/// `validate`, returning how many bytes the text takes once the host serializes it: the value
/// is parsed and written again, compactly, so whitespace and redundant escapes go, but a number
/// can grow (`1e15` is written `1000000000000000.0`).
pub(crate) fn serialized_len(text: &str, kind: JsonKind, max_bytes: usize) -> Result<usize, JsonError> {
    let value = parse(text, kind, max_bytes)?;
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, &value).map_err(|e| JsonError::Invalid(e.to_string()))?;
    Ok(counter.0)
}

fn parse(text: &str, kind: JsonKind, max_bytes: usize) -> Result<Value, JsonError> {
    if text.len() > max_bytes {
        return Err(JsonError::TooLarge { len: text.len(), max: max_bytes });
    }
    scan(text.as_bytes(), MAX_JSON_DEPTH)?;
    let value: Value = serde_json::from_str(text).map_err(|e| JsonError::Invalid(e.to_string()))?;
    if kind == JsonKind::Object && !value.is_object() {
        return Err(JsonError::NotObject);
    }
    Ok(value)
}

/// A writer that only counts what it is given.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Refuses nesting of arrays and objects deeper than `max` (counting brackets outside strings)
/// and lone surrogate escapes inside strings. For valid JSON the count is exactly the nesting
/// depth; text this lets through may still be invalid, which the parse that follows refuses.
fn scan(text: &[u8], max: usize) -> Result<(), JsonError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = 0;
    while i < text.len() {
        let byte = text[i];
        if in_string {
            match byte {
                b'"' => in_string = false,
                b'\\' => {
                    i += escape_len(text, i)?;
                    continue;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Err(JsonError::TooDeep { max });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The length of the escape at `text[at]` (a backslash inside a string): a `\uXXXX` pair for a
/// surrogate pair, six bytes for any other `\uXXXX`, two otherwise. A high surrogate not followed
/// by a low one, or a low one on its own, is refused.
fn escape_len(text: &[u8], at: usize) -> Result<usize, JsonError> {
    let unit = |at: usize| -> Option<u16> {
        if text.get(at) != Some(&b'\\') || text.get(at + 1) != Some(&b'u') {
            return None;
        }
        let digits = std::str::from_utf8(text.get(at + 2..at + 6)?).ok()?;
        u16::from_str_radix(digits, 16).ok().filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let Some(first) = unit(at) else { return Ok(2) };
    match first {
        0xD800..=0xDBFF => match unit(at + 6) {
            Some(0xDC00..=0xDFFF) => Ok(12),
            _ => Err(JsonError::LoneSurrogate { unit: first }),
        },
        0xDC00..=0xDFFF => Err(JsonError::LoneSurrogate { unit: first }),
        _ => Ok(6),
    }
}

#[cfg(test)]
mod tests;

//! Resource-template matching in linear time.
//!
//! A plugin's RFC 6570 template is reduced to what routing needs: literal text and variables.
//! `{var}` matches one or more characters other than `/`, `?` and `#`; `{+var}`, `{#var}` and
//! exploded `{var*}` match any non-empty run. A `{` without a closing `}` is literal text.
//!
//! Templates come from plugins and URIs from clients, so both are hostile. Trying every way to
//! split a URI among the variables (backtracking) takes exponential time on a template such as
//! `a://{v}{v}{v}…!` and cubic time on an ordinary `calendar://{year}-{month}-{day}`; minutes of
//! CPU on a tokio worker for one read. Instead each template is compiled once, at load, into a
//! position automaton (one position per literal character, one self-looping position per
//! variable) that reads the URI once, one character at a time, keeping the set of live
//! positions as a bit set. Each character costs one pass over a bit set of at most
//! `MAX_TEMPLATE_BYTES / 64` words, so a match costs O(URI length × template length / 64), with
//! no allocation, no cache and no slower fallback, whatever the template and the URI.

/// Longest resource template, in bytes. Every automaton position takes at least one byte of
/// template, so this bounds the work per URI character and the memory of the compiled template;
/// real templates are a few dozen bytes.
pub const MAX_TEMPLATE_BYTES: usize = 1024;
/// Most variables in one template. Real templates have a handful; a template made of nothing
/// but variables is how backtracking matchers were driven into exponential time.
pub const MAX_TEMPLATE_VARIABLES: usize = 32;
/// Longest URI matched against templates, in bytes. A longer `resources/read` URI is refused as
/// an unknown resource before any template sees it, so a client cannot make matching cost more
/// than this many characters per template (listed URIs are at most this long too).
pub const MAX_URI_BYTES: usize = 8192;

/// Why a template cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("is {len} bytes long; at most {max} are allowed")]
    TooLong { len: usize, max: usize },
    #[error("has {count} variables; at most {max} are allowed")]
    TooManyVariables { count: usize, max: usize },
}

/// One piece of a template, as the matcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part<'a> {
    Literal(&'a str),
    /// A variable; `greedy` ones may contain `/`, `?` and `#`.
    Var { greedy: bool },
}

/// Splits a template into literal text and variables, in order.
pub(crate) fn parts(template: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let Some(close) = rest[open..].find('}') else {
            parts.push(Part::Literal(&rest[open..]));
            rest = "";
            break;
        };
        let expr = &rest[open + 1..open + close];
        parts.push(Part::Var { greedy: expr.starts_with('+') || expr.starts_with('#') || expr.ends_with('*') });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// Words of a position bit set. Every position consumes at least one byte of its template, so a
/// template within `MAX_TEMPLATE_BYTES` has at most that many positions.
const WORDS: usize = MAX_TEMPLATE_BYTES.div_ceil(64);

/// A bit set of automaton positions, one bit per position.
type Bits = [u64; WORDS];

/// A compiled template: a chain of positions, each consuming one character. Literal positions
/// accept one character; variable positions accept one character of their class and loop.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    /// Number of positions; the URI matches when the last one is live at its end.
    positions: usize,
    /// Words of the bit sets in use.
    words: usize,
    /// Variable positions that accept any character.
    any: Bits,
    /// Variable positions that accept any character but `/`, `?` and `#`.
    segment: Bits,
    /// Each distinct literal character, sorted, with the range of `masks` that holds its positions.
    chars: Vec<(char, u32, u32)>,
    /// `(word, bits)` pairs, sorted by word within each character's range: the literal positions
    /// a character may fill, stored sparsely so a template costs memory in proportion to its length.
    masks: Vec<(u32, u64)>,
}

impl UriTemplate {
    /// Compiles a template, refusing one over the length or variable caps.
    pub fn compile(template: &str) -> Result<UriTemplate, TemplateError> {
        if template.len() > MAX_TEMPLATE_BYTES {
            return Err(TemplateError::TooLong { len: template.len(), max: MAX_TEMPLATE_BYTES });
        }
        let parts = parts(template);
        let count = parts.iter().filter(|p| matches!(p, Part::Var { .. })).count();
        if count > MAX_TEMPLATE_VARIABLES {
            return Err(TemplateError::TooManyVariables { count, max: MAX_TEMPLATE_VARIABLES });
        }
        let mut any = [0; WORDS];
        let mut segment = [0; WORDS];
        let mut literal_positions: Vec<(char, usize)> = Vec::new();
        let mut at = 0;
        for part in parts {
            match part {
                Part::Literal(text) => {
                    for c in text.chars() {
                        literal_positions.push((c, at));
                        at += 1;
                    }
                }
                Part::Var { greedy: true } => {
                    set(&mut any, at);
                    at += 1;
                }
                Part::Var { greedy: false } => {
                    set(&mut segment, at);
                    at += 1;
                }
            }
        }
        literal_positions.sort_unstable();
        let mut chars: Vec<(char, u32, u32)> = Vec::new();
        let mut masks: Vec<(u32, u64)> = Vec::new();
        for (c, position) in literal_positions {
            // Both fit in u32: there are at most MAX_TEMPLATE_BYTES positions.
            let (word, bit) = ((position / 64) as u32, 1u64 << (position % 64));
            match chars.last_mut() {
                Some((last, _, end)) if *last == c => {
                    match masks.last_mut() {
                        Some((w, bits)) if *w == word => *bits |= bit,
                        _ => masks.push((word, bit)),
                    }
                    *end = masks.len() as u32;
                }
                _ => {
                    masks.push((word, bit));
                    chars.push((c, masks.len() as u32 - 1, masks.len() as u32));
                }
            }
        }
        Ok(UriTemplate { positions: at, words: at.div_ceil(64), any, segment, chars, masks })
    }

    /// Whether `uri` matches. A URI longer than `MAX_URI_BYTES` never does.
    pub fn matches(&self, uri: &str) -> bool {
        if uri.len() > MAX_URI_BYTES {
            return false;
        }
        if self.positions == 0 {
            return uri.is_empty();
        }
        // `live` holds the positions that may have consumed the last character read.
        let mut live: Bits = [0; WORDS];
        for (i, c) in uri.chars().enumerate() {
            let literal = match self.chars.binary_search_by_key(&c, |&(k, _, _)| k) {
                Ok(index) => {
                    let (_, start, end) = self.chars[index];
                    &self.masks[start as usize..end as usize]
                }
                Err(_) => &[],
            };
            let mut literal = literal.iter().peekable();
            let in_segment = !matches!(c, '/' | '?' | '#');
            // Before the first character only position 0 may be entered: the match is anchored.
            let mut carry = u64::from(i == 0);
            let mut alive = 0;
            for w in 0..self.words {
                let variables = self.any[w] | if in_segment { self.segment[w] } else { 0 };
                let literals = literal.next_if(|(word, _)| *word as usize == w).map_or(0, |(_, bits)| *bits);
                // A position is entered from the one before it, or stays live if it loops.
                let entered = (live[w] << 1) | carry;
                carry = live[w] >> 63;
                live[w] = (entered & (variables | literals)) | (live[w] & variables);
                alive |= live[w];
            }
            if alive == 0 {
                return false;
            }
        }
        let last = self.positions - 1;
        live[last / 64] & (1 << (last % 64)) != 0
    }
}

fn set(bits: &mut Bits, position: usize) {
    bits[position / 64] |= 1 << (position % 64);
}

#[cfg(test)]
mod tests;

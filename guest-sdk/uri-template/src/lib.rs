//! Resource-template matching in linear time, shared by the Paddock host, which routes a
//! `resources/read` to the plugin whose template matches the URI, and the guest SDK, which then
//! finds the values of the template's variables in that URI. One matcher for both means a URI
//! the host routes to a plugin is a URI the plugin's SDK can read, and no other.
//!
//! A plugin's RFC 6570 template is reduced to what matching needs: literal text and variables.
//! `{var}` matches one or more characters other than `/`, `?` and `#`; `{+var}`, `{#var}` and
//! exploded `{var*}` match any non-empty run. A `{` without a closing `}` is literal text.
//! A variable's value is exactly the text that stands in its place in the URI (a `{#var}`
//! value keeps the `#` the URI has there), not percent-decoded.
//!
//! Templates come from plugins and URIs from clients, so both are hostile. Trying every way to
//! split a URI among the variables (backtracking) takes exponential time on a template such as
//! `a://{v}{v}{v}…!` and cubic time on an ordinary `calendar://{year}-{month}-{day}`; minutes of
//! CPU on a tokio worker for one read, or a plugin's whole deadline. Instead each template is
//! compiled once into a position automaton (one position per literal character, one
//! self-looping position per variable) that reads the URI once, one character at a time,
//! keeping the set of live positions as a bit set. Each character costs one pass over a bit set
//! of at most `MAX_TEMPLATE_BYTES / 64` words, so a match costs O(URI length × template length
//! / 64), with no cache and no slower fallback, whatever the template and the URI.
//! [`UriTemplate::matches`] (what the host routes with) allocates nothing.
//!
//! [`UriTemplate::captures`] finds the values as well, in two passes that cost the same: the
//! automaton runs backwards over the URI, recording for each character which variables could
//! take it and still let the rest of the URI finish the template; then one walk forwards keeps
//! each variable as long as that record allows. Where a URI can be split among the variables in
//! more than one way (`{a}{b}` against `xyz`), the split chosen is the one in which every
//! variable, from the left, takes the longest value that still lets the rest of the template
//! match (`a` = `xy`, `b` = `z`): what a backtracking matcher trying the longest value first
//! would choose, and the same in the host and the SDK because it is the same code.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

/// Longest resource template, in bytes. Every automaton position takes at least one byte of
/// template, so this bounds the work per URI character and the memory of the compiled template;
/// real templates are a few dozen bytes.
pub const MAX_TEMPLATE_BYTES: usize = 1024;
/// Most variables in one template. Real templates have a handful; a template made of nothing
/// but variables is how backtracking matchers were driven into exponential time.
pub const MAX_TEMPLATE_VARIABLES: usize = 32;
/// Longest URI matched against templates, in bytes. A longer URI matches no template (the host
/// refuses such a `resources/read` as an unknown resource before any template sees it), so a
/// client cannot make matching cost more than this many characters per template.
pub const MAX_URI_BYTES: usize = 8192;

/// Why a template cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// The template is over `MAX_TEMPLATE_BYTES`.
    TooLong { len: usize, max: usize },
    /// The template has more than `MAX_TEMPLATE_VARIABLES` variables.
    TooManyVariables { count: usize, max: usize },
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::TooLong { len, max } => write!(f, "is {len} bytes long; at most {max} are allowed"),
            TemplateError::TooManyVariables { count, max } => write!(f, "has {count} variables; at most {max} are allowed"),
        }
    }
}

impl core::error::Error for TemplateError {}

/// One piece of a template, as the matcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text the URI must hold as it is.
    Literal(&'a str),
    /// A variable: `name` is the expression between the braces without a leading `+` or `#`
    /// and a trailing `*`; `greedy` ones may contain `/`, `?` and `#`.
    Var { name: &'a str, greedy: bool },
}

/// Splits a template into literal text and variables, in order.
pub fn parts(template: &str) -> Vec<Part<'_>> {
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
        let greedy = expr.starts_with('+') || expr.starts_with('#') || expr.ends_with('*');
        let name = expr.strip_prefix(['+', '#']).unwrap_or(expr);
        let name = name.strip_suffix('*').unwrap_or(name);
        parts.push(Part::Var { name, greedy });
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// The variables of `template` that `uri` binds: each variable's name and value, in the order
/// of the template (a name used twice appears twice). `None` when the template is over the caps
/// or the URI does not match; see [`UriTemplate::captures`] for the split chosen.
pub fn bindings<'t, 'u>(template: &'t str, uri: &'u str) -> Option<Vec<(&'t str, &'u str)>> {
    let spans = UriTemplate::compile(template).ok()?.captures(uri)?;
    let names = parts(template).into_iter().filter_map(|part| match part {
        Part::Var { name, .. } => Some(name),
        Part::Literal(_) => None,
    });
    Some(names.zip(spans).map(|(name, span)| (name, &uri[span])).collect())
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
    /// The position of each variable, in template order (at most `MAX_TEMPLATE_VARIABLES`).
    variables: Vec<u16>,
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
        let mut variables = Vec::with_capacity(count);
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
                Part::Var { greedy, .. } => {
                    set(if greedy { &mut any } else { &mut segment }, at);
                    // Fits: there are at most MAX_TEMPLATE_BYTES positions.
                    variables.push(at as u16);
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
        Ok(UriTemplate { positions: at, words: at.div_ceil(64), any, segment, variables, chars, masks })
    }

    /// The literal positions character `c` may fill, as `(word, bits)` pairs sorted by word.
    #[inline]
    fn literal(&self, c: char) -> &[(u32, u64)] {
        match self.chars.binary_search_by_key(&c, |&(k, _, _)| k) {
            Ok(index) => {
                let (_, start, end) = self.chars[index];
                &self.masks[start as usize..end as usize]
            }
            Err(_) => &[],
        }
    }

    /// Whether `uri` matches. A URI longer than `MAX_URI_BYTES` never does.
    #[allow(clippy::needless_range_loop, reason = "`w` indexes four arrays and is compared with the literal masks' words")]
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
            let mut literal = self.literal(c).iter().peekable();
            let in_segment = !matches!(c, '/' | '?' | '#');
            // Before the first character only position 0 may be entered: the match is anchored.
            let mut carry = u64::from(i == 0);
            let mut alive = 0;
            for w in 0..self.words {
                step(1);
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

    /// Where each variable's value is in `uri`, as byte ranges in template order, when `uri`
    /// matches (exactly when [`matches`](Self::matches) says so). Where the URI can be split
    /// among the variables in several ways, every variable, from the left, takes the longest
    /// value that still lets the rest of the template match. Costs the same order of time as
    /// `matches`, and four bytes of memory per byte of the URI (32 KiB at most).
    pub fn captures(&self, uri: &str) -> Option<Vec<Range<usize>>> {
        if uri.len() > MAX_URI_BYTES {
            return None;
        }
        if self.positions == 0 {
            return uri.is_empty().then(Vec::new);
        }
        // Backwards: `viable` holds the positions that may take the character just read (the
        // `i`th) and still read the rest of the URI through to the last position; `stay[i]` has
        // bit `k` set when variable `k`'s position is among them.
        let last = self.positions - 1;
        let mut viable: Bits = [0; WORDS];
        let mut stay: Vec<u32> = Vec::with_capacity(uri.len());
        for (i, c) in uri.chars().rev().enumerate() {
            let mut literal = self.literal(c).iter().rev().peekable();
            let in_segment = !matches!(c, '/' | '?' | '#');
            let mut carry = 0;
            let mut alive = 0;
            for w in (0..self.words).rev() {
                step(1);
                let variables = self.any[w] | if in_segment { self.segment[w] } else { 0 };
                let literals = literal.next_if(|(word, _)| *word as usize == w).map_or(0, |(_, bits)| *bits);
                // A position may take this character if the next one may take the next
                // character, or if it loops and may take the next character itself. The last
                // character is taken by the last position: the match is anchored at both ends.
                let mut left = (viable[w] >> 1) | (carry << 63);
                if i == 0 && w == last / 64 {
                    left |= 1 << (last % 64);
                }
                carry = viable[w] & 1;
                viable[w] = (left & (variables | literals)) | (viable[w] & variables);
                alive |= viable[w];
            }
            if alive == 0 {
                return None;
            }
            step(self.variables.len());
            let bits = self.variables.iter().enumerate().fold(0u32, |bits, (k, &p)| {
                let p = usize::from(p);
                bits | (((viable[p / 64] >> (p % 64)) & 1) as u32) << k
            });
            stay.push(bits);
        }
        if viable[0] & 1 == 0 {
            return None;
        }
        stay.reverse();
        // Forwards, from position 0: a variable keeps the next character whenever it may (the
        // record says the rest still matches), else the walk moves on to the next position,
        // which the record guarantees may take it. Every prefix of the template so takes as
        // much of the URI as any match lets it.
        let mut spans = vec![0..0; self.variables.len()];
        let mut position = 0;
        let mut next_variable = 0;
        let mut current: Option<usize> = None;
        for (i, (offset, c)) in uri.char_indices().enumerate() {
            step(1);
            let stays = i > 0 && current.is_some_and(|k| (stay[i] >> k) & 1 != 0);
            if !stays {
                if i > 0 {
                    position += 1;
                }
                current = None;
                if self.variables.get(next_variable).is_some_and(|&p| usize::from(p) == position) {
                    spans[next_variable].start = offset;
                    current = Some(next_variable);
                    next_variable += 1;
                }
            }
            if let Some(k) = current {
                spans[k].end = offset + c.len_utf8();
            }
        }
        debug_assert_eq!(position, last);
        Some(spans)
    }
}

fn set(bits: &mut Bits, position: usize) {
    bits[position / 64] |= 1 << (position % 64);
}

/// Counts `n` steps of the matcher in tests, so linearity is checked by counting rather than by
/// a clock; nothing at all otherwise.
#[inline(always)]
fn step(n: usize) {
    #[cfg(test)]
    tests::STEPS.with(|steps| steps.set(steps.get() + n as u64));
    #[cfg(not(test))]
    let _ = n;
}

#[cfg(test)]
mod tests;

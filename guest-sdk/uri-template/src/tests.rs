//! Matcher tests: the caps, the grammar, adversarial templates and URIs (linear by counted
//! steps), and property tests against a reference backtracking matcher (the matcher the SDK
//! used before, kept here because it is obviously right and only slow): the host's yes or no
//! and the SDK's values agree with it and with each other on every URI.

use std::borrow::ToOwned;
use std::cell::Cell;
use std::string::{String, ToString};
use std::time::{Duration, Instant};
use std::vec::Vec;
use std::{format, vec};

use proptest::prelude::*;

use super::*;

std::thread_local! {
    /// Steps counted by `step` on this thread.
    pub(crate) static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` and returns what it returned with the matcher steps it took.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    STEPS.with(|steps| steps.set(0));
    let value = f();
    (value, STEPS.with(Cell::get))
}

/// The reference: parses the template on its own and tries every split of the URI, the longest
/// value first for each variable from the left. Exponential in the number of variables, so only
/// for small inputs.
mod reference {
    use std::borrow::ToOwned;
    use std::string::String;
    use std::vec::Vec;

    enum Part {
        Literal(String),
        Var { greedy: bool },
    }

    fn parse(template: &str) -> Vec<Part> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                parts.push(Part::Literal(rest[open..].to_owned()));
                rest = "";
                break;
            };
            let expr = &rest[open + 1..open + close];
            parts.push(Part::Var { greedy: expr.starts_with('+') || expr.starts_with('#') || expr.ends_with('*') });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        parts
    }

    fn match_parts(parts: &[Part], input: &str, values: &mut Vec<String>) -> bool {
        match parts.split_first() {
            None => input.is_empty(),
            Some((Part::Literal(lit), rest)) => input.strip_prefix(lit.as_str()).is_some_and(|tail| match_parts(rest, tail, values)),
            Some((Part::Var { greedy }, rest)) => {
                let stop = if *greedy { input.len() } else { input.find(['/', '?', '#']).unwrap_or(input.len()) };
                (1..=stop).rev().filter(|&n| input.is_char_boundary(n)).any(|n| {
                    values.push(input[..n].to_owned());
                    match_parts(rest, &input[n..], values) || {
                        values.pop();
                        false
                    }
                })
            }
        }
    }

    /// The values of the template's variables, in order, when the URI matches.
    pub(super) fn captures(template: &str, uri: &str) -> Option<Vec<String>> {
        let mut values = Vec::new();
        match_parts(&parse(template), uri, &mut values).then_some(values)
    }
}

fn compiled(template: &str) -> UriTemplate {
    UriTemplate::compile(template).unwrap_or_else(|e| panic!("`{template}` {e}"))
}

/// The values `captures` finds, as strings.
fn values(template: &str, uri: &str) -> Option<Vec<String>> {
    let spans = compiled(template).captures(uri)?;
    Some(spans.into_iter().map(|span| uri[span].to_string()).collect())
}

/// Puts `values` in place of the template's variables, in order.
fn substitute(template: &str, values: &[&str]) -> String {
    let mut values = values.iter();
    parts(template)
        .into_iter()
        .map(|part| match part {
            Part::Literal(text) => text,
            Part::Var { .. } => values.next().expect("a value per variable"),
        })
        .collect()
}

#[test]
fn simple_variables_match_one_segment_and_reserved_ones_match_any_run() {
    let simple = compiled("text://words/{word}");
    assert!(simple.matches("text://words/hello"));
    assert!(!simple.matches("text://words/"));
    assert!(!simple.matches("text://words/a/b"));
    assert!(!simple.matches("text://words/a?b"));
    let two = compiled("db://{table}/rows/{id}");
    assert!(two.matches("db://users/rows/42"));
    assert!(!two.matches("db://users/cols/42"));
    for greedy in ["file://{+path}", "file://{#path}", "file://{path*}"] {
        assert!(compiled(greedy).matches("file:///etc/hosts?x#y"), "{greedy}");
        assert!(!compiled(greedy).matches("file://"), "{greedy}");
    }
    let literal = compiled("plain://no/variables");
    assert!(literal.matches("plain://no/variables"));
    assert!(!literal.matches("plain://no/variables/"));
    assert!(compiled("").matches("") && !compiled("").matches("x"));
    // A variable is one or more characters, not bytes: two variables cannot split one `é`.
    assert!(!compiled("u://{a}{b}").matches("u://é"));
    assert!(compiled("u://{a}{b}").matches("u://éé"));
    // An unclosed brace is literal text.
    assert!(compiled("odd://{x").matches("odd://{x"));
}

#[test]
fn variables_are_named_without_their_operator_and_explode_marker() {
    let named = |template| -> Vec<(&str, bool)> {
        parts(template)
            .into_iter()
            .filter_map(|p| match p {
                Part::Var { name, greedy } => Some((name, greedy)),
                Part::Literal(_) => None,
            })
            .collect()
    };
    assert_eq!(named("x://{a}/{+b}{#c}{d*}{}{+*}{x"), [("a", false), ("b", true), ("c", true), ("d", true), ("", false), ("", true)]);
    assert_eq!(parts("odd://{x"), [Part::Literal("odd://"), Part::Literal("{x")]);
}

#[test]
fn values_are_found_where_the_host_routes_a_read() {
    // Both were routed to the plugin by the host and then not found by the SDK's own matcher.
    assert!(compiled("t://{a*}{b*}{c*}{d*}!").matches("t://ab/cd!"));
    assert_eq!(bindings("t://{a*}{b*}{c*}{d*}!", "t://ab/cd!"), Some(vec![("a", "ab"), ("b", "/"), ("c", "c"), ("d", "d")]));
    assert!(compiled("f://doc{#section}").matches("f://doc#intro"));
    assert_eq!(bindings("f://doc{#section}", "f://doc#intro"), Some(vec![("section", "#intro")]));
    // The SDK's old cases.
    assert_eq!(bindings("text://words/{word}", "text://words/hello"), Some(vec![("word", "hello")]));
    assert_eq!(bindings("db://{table}/{id}", "db://users/42"), Some(vec![("table", "users"), ("id", "42")]));
    assert_eq!(bindings("file://{+path}", "file:///etc/hosts"), Some(vec![("path", "/etc/hosts")]));
    assert_eq!(bindings("u://{a}{b}", "u://éé"), Some(vec![("a", "é"), ("b", "é")]));
    assert_eq!(bindings("plain://x", "plain://x"), Some(vec![]));
    assert_eq!(bindings("", ""), Some(vec![]));
    for (template, uri) in [("text://words/{word}", "text://words/"), ("text://words/{word}", "text://words/a/b"), ("", "x"), ("x://{a}", "")] {
        assert_eq!(bindings(template, uri), None, "{template} {uri}");
    }
}

#[test]
fn of_several_splits_each_variable_from_the_left_takes_the_longest_value() {
    assert_eq!(bindings("x://{a}{b}", "x://xyz"), Some(vec![("a", "xy"), ("b", "z")]));
    assert_eq!(bindings("cal://{y}-{m}-{d}", "cal://1-2-3-4"), Some(vec![("y", "1-2"), ("m", "3"), ("d", "4")]));
    assert_eq!(bindings("p://{+dir}/{file}", "p://a/b/c"), Some(vec![("dir", "a/b"), ("file", "c")]));
    // A name used twice binds twice, each with its own value.
    assert_eq!(bindings("r://{v}/{v}", "r://1/2"), Some(vec![("v", "1"), ("v", "2")]));
}

#[test]
fn templates_over_the_caps_are_refused() {
    let at_cap = format!("a://{}!", "{v}".repeat(MAX_TEMPLATE_VARIABLES));
    assert!(UriTemplate::compile(&at_cap).is_ok());
    let over = format!("a://{}!", "{v}".repeat(MAX_TEMPLATE_VARIABLES + 1));
    assert_eq!(UriTemplate::compile(&over).expect_err("too many variables"), TemplateError::TooManyVariables { count: 33, max: 32 });
    assert_eq!(bindings(&over, &format!("a://{}!", "x".repeat(33))), None);
    let longest = format!("x://{}", "y".repeat(MAX_TEMPLATE_BYTES - 4));
    assert!(compiled(&longest).matches(&longest));
    let too_long = format!("{longest}z");
    assert_eq!(UriTemplate::compile(&too_long).expect_err("too long"), TemplateError::TooLong { len: 1025, max: 1024 });
    assert!(TemplateError::TooManyVariables { count: 33, max: 32 }.to_string().contains("33 variables; at most 32"));
    assert_eq!(TemplateError::TooLong { len: 1025, max: 1024 }.to_string(), "is 1025 bytes long; at most 1024 are allowed");
}

#[test]
fn a_uri_over_the_cap_never_matches() {
    let any = compiled("big://{+rest}");
    let fits = format!("big://{}", "x".repeat(MAX_URI_BYTES - 6));
    assert!(any.matches(&fits));
    assert_eq!(bindings("big://{+rest}", &fits), Some(vec![("rest", &fits[6..])]));
    let over = format!("{fits}x");
    assert!(!any.matches(&over));
    assert_eq!(any.captures(&over), None);
}

/// Each of these takes the backtracking reference minutes or longer.
fn adversarial() -> [(String, String, bool); 6] {
    [
        (format!("a://{}!", "{v}".repeat(32)), format!("a://{}", "x".repeat(MAX_URI_BYTES - 4)), false),
        (format!("a://{}!", "{+v}".repeat(32)), format!("a://{}", "x".repeat(MAX_URI_BYTES - 4)), false),
        (format!("a://{}!", "{v*}".repeat(32)), format!("a://{}!", "x/".repeat((MAX_URI_BYTES - 5) / 2)), true),
        ("calendar://{year}-{month}-{day}".to_owned(), format!("calendar://{}/", "1-".repeat(4000)), false),
        ("calendar://{year}-{month}-{day}".to_owned(), format!("calendar://{}x", "1-".repeat(4000)), true),
        (format!("a://{}{}", "{+v}".repeat(32), "a".repeat(880)), format!("a://{}b", "a".repeat(8000)), false),
    ]
}

#[test]
fn adversarial_templates_and_uris_match_in_linear_time() {
    for (template, uri, expected) in adversarial() {
        let template = compiled(&template);
        let started = Instant::now();
        for _ in 0..10 {
            assert_eq!(template.matches(&uri), expected);
            assert_eq!(template.captures(&uri).is_some(), expected);
        }
        let took = started.elapsed();
        assert!(took < Duration::from_millis(500), "ten matches took {took:?}");
    }
}

#[test]
fn matching_takes_a_bounded_number_of_steps_per_uri_character() {
    // An 8 KiB URI against a template of 32 variables: at most one step per word of the
    // position set per character to say yes or no, plus one per variable and one more per
    // character to find the values; counted, so a busy machine cannot fail it.
    for (template, uri, expected) in adversarial() {
        let compiled = compiled(&template);
        let words = compiled.words as u64;
        let chars = uri.chars().count() as u64;
        let (matched, steps) = counted(|| compiled.matches(&uri));
        assert_eq!(matched, expected, "{template}");
        assert!(steps <= chars * words, "`{template}`: {steps} steps for {chars} characters");
        let (captured, steps) = counted(|| compiled.captures(&uri));
        assert_eq!(captured.is_some(), expected, "{template}");
        assert!(steps <= chars * (words + 32 + 1), "`{template}`: {steps} steps for {chars} characters");
    }
    // Twice the URI, twice the steps: nothing grows faster than the URI.
    let template = compiled(&format!("a://{}!", "{v*}".repeat(32)));
    let (_, short) = counted(|| template.captures(&format!("a://{}!", "x/".repeat(2000))));
    let (_, long) = counted(|| template.captures(&format!("a://{}!", "x/".repeat(4000))));
    assert!(short > 4000 && long <= 2 * short, "{short} then {long} steps");
}

/// A piece of a generated template, with the kind of value it stands for.
#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    Var(&'static str),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof!["[ab:/?#é!}-]{1,3}".prop_map(Piece::Literal), prop::sample::select(vec!["{v}", "{+v}", "{#v}", "{v*}", "{}"]).prop_map(Piece::Var),]
}

/// A value for a variable: one or more characters, without `/`, `?` and `#` unless reserved.
fn value(greedy: bool) -> BoxedStrategy<String> {
    if greedy { "[ab/?#é{}:!-]{1,4}".boxed() } else { "[ab{}:é!-]{1,4}".boxed() }
}

fn is_greedy(var: &str) -> bool {
    var.starts_with("{+") || var.starts_with("{#") || var.ends_with("*}")
}

fn template_of(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Literal(l) => l.as_str(),
            Piece::Var(v) => v,
        })
        .collect()
}

/// What the host and the SDK each make of `uri`: the host's yes or no must be the reference's,
/// and the SDK's values the reference's split, which put back into the template give the URI.
fn agree(template: &str, uri: &str) -> Result<(), TestCaseError> {
    let compiled = UriTemplate::compile(template).expect("small templates compile");
    let expected = reference::captures(template, uri);
    prop_assert_eq!(compiled.matches(uri), expected.is_some());
    let found = values(template, uri);
    prop_assert_eq!(&found, &expected);
    if let Some(found) = found {
        let found: Vec<&str> = found.iter().map(String::as_str).collect();
        prop_assert_eq!(substitute(template, &found), uri);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Arbitrary small templates (stray braces included) and URIs over the characters that
    /// matter: the compiled matcher answers exactly as the backtracking reference does.
    #[test]
    fn the_matcher_agrees_with_the_backtracking_reference(
        template in "[ab/?#é{}+*:-]{0,12}",
        uri in "[ab/?#é{}:-]{0,12}",
    ) {
        agree(&template, &uri)?;
    }

    /// Well-formed templates against URIs built from the same pieces (so matches are common).
    #[test]
    fn the_matcher_agrees_with_the_reference_on_near_misses(
        pieces in prop::collection::vec(piece(), 0..6),
        uri_pieces in prop::collection::vec(prop_oneof!["[ab:/?#é!}-]{1,3}", "[ab/é]{1,3}"], 0..6),
    ) {
        agree(&template_of(&pieces), &uri_pieces.concat())?;
    }

    /// Expanding a template with any values of the right kind gives a URI it matches, and the
    /// values found put back into the template give that URI again.
    #[test]
    fn a_template_matches_its_own_expansions(
        (pieces, values) in prop::collection::vec(piece(), 0..8).prop_flat_map(|pieces| {
            let values: Vec<BoxedStrategy<String>> = pieces
                .iter()
                .map(|p| match p { Piece::Literal(_) => Just(String::new()).boxed(), Piece::Var(v) => value(is_greedy(v)) })
                .collect();
            (Just(pieces), values)
        }),
    ) {
        let template = template_of(&pieces);
        let uri: String = pieces
            .iter()
            .zip(&values)
            .map(|(p, value)| match p { Piece::Literal(l) => l.as_str(), Piece::Var(_) => value.as_str() })
            .collect();
        let compiled = UriTemplate::compile(&template).expect("small templates compile");
        prop_assert!(compiled.matches(&uri), "`{}` does not match its expansion `{}`", template, uri);
        agree(&template, &uri)?;
    }
}

//! Template matcher tests: the caps, adversarial templates and URIs, and property tests against
//! a reference backtracking matcher (the matcher the router used before, kept here because it
//! is obviously right and only slow).

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// The reference: parses the template on its own and tries every split of the URI.
/// Exponential in the number of variables, so only for small inputs.
mod reference {
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

    fn match_parts(parts: &[Part], input: &str) -> bool {
        match parts.split_first() {
            None => input.is_empty(),
            Some((Part::Literal(lit), rest)) => {
                input.strip_prefix(lit.as_str()).is_some_and(|tail| match_parts(rest, tail))
            }
            Some((Part::Var { greedy }, rest)) => {
                let stop = if *greedy { input.len() } else { input.find(['/', '?', '#']).unwrap_or(input.len()) };
                (1..=stop).rev().filter(|&n| input.is_char_boundary(n)).any(|n| match_parts(rest, &input[n..]))
            }
        }
    }

    pub(super) fn matches(template: &str, uri: &str) -> bool {
        match_parts(&parse(template), uri)
    }
}

fn compiled(template: &str) -> UriTemplate {
    UriTemplate::compile(template).unwrap_or_else(|e| panic!("`{template}` {e}"))
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
fn templates_over_the_caps_are_refused() {
    let at_cap = format!("a://{}!", "{v}".repeat(MAX_TEMPLATE_VARIABLES));
    assert!(UriTemplate::compile(&at_cap).is_ok());
    let over = format!("a://{}!", "{v}".repeat(MAX_TEMPLATE_VARIABLES + 1));
    assert_eq!(
        UriTemplate::compile(&over).expect_err("too many variables"),
        TemplateError::TooManyVariables { count: 33, max: 32 }
    );
    let longest = format!("x://{}", "y".repeat(MAX_TEMPLATE_BYTES - 4));
    assert!(compiled(&longest).matches(&longest));
    let too_long = format!("{longest}z");
    assert_eq!(
        UriTemplate::compile(&too_long).expect_err("too long"),
        TemplateError::TooLong { len: 1025, max: 1024 }
    );
    assert!(
        TemplateError::TooManyVariables { count: 33, max: 32 }.to_string().contains("33 variables; at most 32")
    );
}

#[test]
fn a_uri_over_the_cap_never_matches() {
    let any = compiled("big://{+rest}");
    let fits = format!("big://{}", "x".repeat(MAX_URI_BYTES - 6));
    assert!(any.matches(&fits));
    assert!(!any.matches(&format!("{fits}x")));
}

#[test]
fn adversarial_templates_and_uris_match_in_linear_time() {
    // Each of these takes the backtracking reference minutes or longer.
    let cases = [
        (format!("a://{}!", "{v}".repeat(32)), format!("a://{}", "x".repeat(MAX_URI_BYTES - 4)), false),
        (format!("a://{}!", "{+v}".repeat(32)), format!("a://{}", "x".repeat(MAX_URI_BYTES - 4)), false),
        ("calendar://{year}-{month}-{day}".to_owned(), format!("calendar://{}/", "1-".repeat(4000)), false),
        ("calendar://{year}-{month}-{day}".to_owned(), format!("calendar://{}x", "1-".repeat(4000)), true),
        (format!("a://{}{}", "{+v}".repeat(32), "a".repeat(880)), format!("a://{}b", "a".repeat(8000)), false),
    ];
    for (template, uri, expected) in cases {
        let template = compiled(&template);
        let started = Instant::now();
        for _ in 0..10 {
            assert_eq!(template.matches(&uri), expected);
        }
        let took = started.elapsed();
        assert!(took < Duration::from_millis(500), "ten matches took {took:?}");
    }
}

/// A piece of a generated template, with the kind of value it stands for.
#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    Var(&'static str),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        "[ab:/?#é!}-]{1,3}".prop_map(Piece::Literal),
        prop::sample::select(vec!["{v}", "{+v}", "{#v}", "{v*}", "{}"]).prop_map(Piece::Var),
    ]
}

/// A value for a variable: one or more characters, without `/`, `?` and `#` unless reserved.
fn value(greedy: bool) -> BoxedStrategy<String> {
    if greedy { "[ab/?#é{}:!-]{1,4}".boxed() } else { "[ab{}:é!-]{1,4}".boxed() }
}

fn is_greedy(var: &str) -> bool {
    var.starts_with("{+") || var.starts_with("{#") || var.ends_with("*}")
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
        let compiled = UriTemplate::compile(&template).expect("small templates compile");
        prop_assert_eq!(compiled.matches(&uri), reference::matches(&template, &uri));
    }

    /// Well-formed templates against URIs built from the same pieces (so matches are common).
    #[test]
    fn the_matcher_agrees_with_the_reference_on_near_misses(
        pieces in prop::collection::vec(piece(), 0..6),
        uri_pieces in prop::collection::vec(prop_oneof!["[ab:/?#é!}-]{1,3}", "[ab/é]{1,3}"], 0..6),
    ) {
        let template: String = pieces.iter().map(|p| match p { Piece::Literal(l) => l.as_str(), Piece::Var(v) => v }).collect();
        let uri: String = uri_pieces.concat();
        let compiled = UriTemplate::compile(&template).expect("small templates compile");
        prop_assert_eq!(compiled.matches(&uri), reference::matches(&template, &uri));
    }

    /// Expanding a template with any values of the right kind gives a URI it matches.
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
        let template: String = pieces.iter().map(|p| match p { Piece::Literal(l) => l.as_str(), Piece::Var(v) => v }).collect();
        let uri: String = pieces
            .iter()
            .zip(&values)
            .map(|(p, value)| match p { Piece::Literal(l) => l.as_str(), Piece::Var(_) => value.as_str() })
            .collect();
        let compiled = UriTemplate::compile(&template).expect("small templates compile");
        prop_assert!(compiled.matches(&uri), "`{}` does not match its expansion `{}`", template, uri);
    }
}

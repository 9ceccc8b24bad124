//! The SDK finds values exactly where the host routes a read: the two reads the host sent to a
//! plugin that the SDK's own matcher then did not find, adversarial URIs that stalled a plugin,
//! and a property test over generated templates and URIs that the host's answer (`matches`, what
//! the router calls) and the SDK's values agree, the values giving the URI back.

use paddock_uri_template::{MAX_URI_BYTES, Part, UriTemplate, parts};
use proptest::prelude::*;

use super::*;

/// What the host's router answers for `uri`: a template over the caps serves nothing.
fn host_routes(template: &str, uri: &str) -> bool {
    UriTemplate::compile(template).is_ok_and(|compiled| compiled.matches(uri))
}

/// Puts each variable's value, by name, in place of its expression.
fn substitute(template: &str, vars: &UriVars) -> String {
    parts(template)
        .into_iter()
        .map(|part| match part {
            Part::Literal(text) => text,
            Part::Var { name, .. } => vars.get(name).expect("every variable is bound"),
        })
        .collect()
}

#[test]
fn variables_are_extracted() {
    let vars = match_template("text://words/{word}", "text://words/hello").expect("match");
    assert_eq!(vars.get("word"), Some("hello"));
    assert_eq!(vars.uri, "text://words/hello");
    let vars = match_template("db://{table}/{id}", "db://users/42").expect("match");
    assert_eq!((vars.get("table"), vars.get("id")), (Some("users"), Some("42")));
    let vars = match_template("file://{+path}", "file:///etc/hosts").expect("match");
    assert_eq!(vars.get("path"), Some("/etc/hosts"));
    assert_eq!(vars.get("other"), None);
}

#[test]
fn non_matching_uris_are_refused() {
    assert!(match_template("text://words/{word}", "text://words/").is_none());
    assert!(match_template("text://words/{word}", "text://words/a/b").is_none());
    assert!(match_template("text://words/{word}", "text://other/a").is_none());
}

#[test]
fn reads_the_host_routes_to_a_template_are_found() {
    assert!(host_routes("t://{a*}{b*}{c*}{d*}!", "t://ab/cd!"));
    let vars = match_template("t://{a*}{b*}{c*}{d*}!", "t://ab/cd!").expect("routed, so found");
    assert_eq!([vars.get("a"), vars.get("b"), vars.get("c"), vars.get("d")], [Some("ab"), Some("/"), Some("c"), Some("d")]);
    assert!(host_routes("f://doc{#section}", "f://doc#intro"));
    let vars = match_template("f://doc{#section}", "f://doc#intro").expect("routed, so found");
    assert_eq!(vars.get("section"), Some("#intro"));
    // `{x` is literal text, and a name used twice keeps its last value.
    assert_eq!(match_template("odd://{x", "odd://{x"), Some(UriVars { uri: "odd://{x".into(), vars: BTreeMap::new() }));
    assert_eq!(match_template("r://{v}/{v}", "r://1/2").expect("match").get("v"), Some("2"));
}

#[test]
fn adversarial_uris_are_answered_without_backtracking() {
    // Each of these kept the backtracking matcher busy past the plugin's deadline; a test that
    // hangs here fails.
    let vars = format!("a://{}!", "{v}".repeat(32));
    assert!(match_template(&vars, &format!("a://{}", "x".repeat(2048))).is_none());
    assert!(match_template(&vars, &format!("a://{}", "x".repeat(MAX_URI_BYTES - 4))).is_none());
    let exploded = format!("a://{}!", "{v*}".repeat(32));
    let uri = format!("a://{}!", "x/".repeat(1024));
    assert!(host_routes(&exploded, &uri));
    let found = match_template(&exploded, &uri).expect("routed, so found");
    assert_eq!(found.get("v"), Some("/"), "the last of 32 variables takes the last character");
    assert!(match_template("calendar://{year}-{month}-{day}", &format!("calendar://{}/", "1-".repeat(4000))).is_none());
}

#[test]
fn over_the_caps_nothing_matches() {
    let fits = format!("big://{}", "x".repeat(MAX_URI_BYTES - 6));
    assert!(match_template("big://{+rest}", &fits).is_some());
    assert!(match_template("big://{+rest}", &format!("{fits}x")).is_none());
    let many = format!("a://{}!", "{v}".repeat(33));
    assert!(!host_routes(&many, &format!("a://{}!", "x".repeat(33))));
    assert!(match_template(&many, &format!("a://{}!", "x".repeat(33))).is_none());
}

/// A template of literal text (braces only closing ones: an opening one is the crate's own
/// test) and distinctly named variables of every kind.
fn template() -> impl Strategy<Value = String> {
    let piece = prop_oneof!["[ab:/?#é!}-]{1,3}", prop::sample::select(vec!["{\u{0}}", "{+\u{0}}", "{#\u{0}}", "{\u{0}*}"]).prop_map(str::to_owned),];
    prop::collection::vec(piece, 0..7).prop_map(|pieces| pieces.iter().enumerate().map(|(i, text)| text.replace('\u{0}', &format!("v{i}"))).collect())
}

/// A URI for `template`: an expansion (values of the right kind), the same with one character
/// dropped or added, or unrelated text.
fn uri_for(template: &str) -> BoxedStrategy<(String, bool)> {
    let parts: Vec<Result<String, bool>> = parts(template)
        .into_iter()
        .map(|part| match part {
            Part::Literal(text) => Ok(text.to_owned()),
            Part::Var { greedy, .. } => Err(greedy),
        })
        .collect();
    let values: Vec<BoxedStrategy<String>> = parts
        .iter()
        .map(|part| match part {
            Ok(_) => Just(String::new()).boxed(),
            Err(true) => "[ab/?#é{}:!-]{1,4}".boxed(),
            Err(false) => "[ab{}:é!-]{1,4}".boxed(),
        })
        .collect();
    let expansion = values.prop_map(move |values| parts.iter().zip(values).map(|(part, value)| part.clone().unwrap_or(value)).collect::<String>());
    prop_oneof![
        3 => expansion.clone().prop_map(|uri| (uri, true)),
        1 => (expansion.clone(), any::<prop::sample::Index>()).prop_map(|(uri, at)| {
            let mut chars: Vec<char> = uri.chars().collect();
            if !chars.is_empty() {
                chars.remove(at.index(chars.len()));
            }
            (chars.into_iter().collect(), false)
        }),
        1 => (expansion, any::<prop::sample::Index>(), prop::sample::select(vec!['a', '/', '#', '!', 'é'])).prop_map(|(uri, at, c)| {
            let mut chars: Vec<char> = uri.chars().collect();
            chars.insert(at.index(chars.len() + 1), c);
            (chars.into_iter().collect(), false)
        }),
        1 => "[ab:/?#é!{}-]{0,14}".prop_map(|uri| (uri, false)),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Whenever the host routes a URI to a template the SDK finds values that, put back into
    /// the template, give the URI; whenever the host does not, the SDK finds nothing.
    #[test]
    fn the_sdk_finds_values_exactly_where_the_host_routes(
        (template, uri, expanded) in template().prop_flat_map(|template| {
            let uris = uri_for(&template);
            (Just(template), uris).prop_map(|(template, (uri, expanded))| (template, uri, expanded))
        }),
    ) {
        let routed = host_routes(&template, &uri);
        let found = match_template(&template, &uri);
        prop_assert_eq!(routed, found.is_some(), "`{}` against `{}`", template, uri);
        if expanded {
            prop_assert!(routed, "`{}` does not match its expansion `{}`", template, uri);
        }
        if let Some(vars) = found {
            prop_assert_eq!(substitute(&template, &vars), uri);
        }
    }

    /// Long URIs against templates of many variables, which a backtracking matcher could not
    /// answer in time: the same agreement.
    #[test]
    fn the_sdk_and_the_host_agree_on_adversarial_uris(
        kinds in prop::collection::vec(prop::sample::select(vec![("", ""), ("+", ""), ("#", ""), ("", "*")]), 1..=32),
        bang in any::<bool>(),
        body in "[x/!]{0,600}",
    ) {
        let mut template = String::from("a://");
        for (i, (operator, explode)) in kinds.iter().enumerate() {
            template.push_str(&format!("{{{operator}v{i}{explode}}}"));
        }
        if bang {
            template.push('!');
        }
        let uri = format!("a://{body}");
        let found = match_template(&template, &uri);
        prop_assert_eq!(host_routes(&template, &uri), found.is_some(), "`{}` against `{}`", template, uri);
        if let Some(vars) = found {
            prop_assert_eq!(substitute(&template, &vars), uri);
        }
    }
}

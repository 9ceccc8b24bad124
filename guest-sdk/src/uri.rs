//! URI templates of resource templates: level-1 RFC 6570 `{var}` expressions (and `{+var}`
//! for values that may contain `/`), matched against a URI to extract the variables.

use std::collections::BTreeMap;

/// The variables a URI bound in a resource template, by name (percent-decoding is left to the
/// plugin: values are exactly as they appear in the URI).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UriVars {
    /// The URI that was read.
    pub uri: String,
    vars: BTreeMap<String, String>,
}

impl UriVars {
    /// The value of variable `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }
}

/// Matches `uri` against `template`; `None` when it does not fit.
pub(crate) fn match_template(template: &str, uri: &str) -> Option<UriVars> {
    let mut vars = BTreeMap::new();
    if match_from(template, uri, &mut vars) {
        Some(UriVars { uri: uri.to_owned(), vars })
    } else {
        None
    }
}

fn match_from(template: &str, input: &str, vars: &mut BTreeMap<String, String>) -> bool {
    match template.find('{') {
        None => template == input,
        Some(open) => {
            let (literal, rest) = template.split_at(open);
            let Some(input) = input.strip_prefix(literal) else { return false };
            let Some(close) = rest.find('}') else { return false };
            let expr = &rest[1..close];
            let after = &rest[close + 1..];
            let (name, greedy) = match expr.strip_prefix('+') {
                Some(name) => (name, true),
                None => (expr, false),
            };
            let limit = if greedy { input.len() } else { input.find(['/', '?', '#']).unwrap_or(input.len()) };
            for end in (1..=limit).rev().filter(|&n| input.is_char_boundary(n)) {
                let mut attempt = vars.clone();
                attempt.insert(name.to_owned(), input[..end].to_owned());
                if match_from(after, &input[end..], &mut attempt) {
                    *vars = attempt;
                    return true;
                }
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_extracted() {
        let vars = match_template("text://words/{word}", "text://words/hello").expect("match");
        assert_eq!(vars.get("word"), Some("hello"));
        let vars = match_template("db://{table}/{id}", "db://users/42").expect("match");
        assert_eq!((vars.get("table"), vars.get("id")), (Some("users"), Some("42")));
        let vars = match_template("file://{+path}", "file:///etc/hosts").expect("match");
        assert_eq!(vars.get("path"), Some("/etc/hosts"));
    }

    #[test]
    fn non_matching_uris_are_refused() {
        assert!(match_template("text://words/{word}", "text://words/").is_none());
        assert!(match_template("text://words/{word}", "text://words/a/b").is_none());
        assert!(match_template("text://words/{word}", "text://other/a").is_none());
    }
}

//! URI templates of resource templates, matched against a URI to extract the variables by the
//! matcher the host routes with (`paddock-uri-template`): `{var}` is one or more characters
//! other than `/`, `?` and `#`; `{+var}`, `{#var}` and `{var*}` are any non-empty run; an
//! unclosed `{` is literal text. A URI the host sends to a template is one this finds values in,
//! in time linear in the URI, and a URI over the host's cap (8 KiB) matches nothing.

use std::collections::BTreeMap;

/// The variables a URI bound in a resource template, by name (percent-decoding is left to the
/// plugin: values are exactly as they appear in the URI, so a `{#var}` value keeps its `#`).
/// Where the URI can be split among the variables in several ways, each variable from the left
/// takes the longest value that lets the rest match; a name used twice keeps its last value.
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

/// Matches `uri` against `template`; `None` when it does not fit, or the template is over the
/// host's caps (the host serves no plugin with such a template).
pub(crate) fn match_template(template: &str, uri: &str) -> Option<UriVars> {
    let bindings = paddock_uri_template::bindings(template, uri)?;
    let vars = bindings.into_iter().map(|(name, value)| (name.to_owned(), value.to_owned())).collect();
    Some(UriVars { uri: uri.to_owned(), vars })
}

#[cfg(test)]
mod tests;

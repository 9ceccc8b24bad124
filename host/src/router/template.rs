//! Resource-template matching in linear time: the matcher, its caps and its tests live in
//! `paddock-uri-template` (`guest-sdk/uri-template/`), which the guest SDK uses too, so a URI
//! the router sends to a plugin's template is one the plugin's SDK finds the variables in.
//! Each template is compiled once, when the router is built, into a position automaton that
//! reads a URI once (bit-parallel, no backtracking, no allocation); the router only asks
//! whether a URI matches.

pub use paddock_uri_template::{MAX_TEMPLATE_BYTES, MAX_TEMPLATE_VARIABLES, MAX_URI_BYTES, TemplateError, UriTemplate};

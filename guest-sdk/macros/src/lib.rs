//! Attribute macros of `paddock-sdk`. Each keeps the annotated function exactly as written and
//! adds a hidden module of the same name holding its registration record; every bit of
//! parsing, schema and result logic lives in the SDK (`paddock_sdk::__private`), not here.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::{FnArg, ItemFn, LitStr, ReturnType, parse_macro_input};

/// Turns `fn name(args: T) -> R` (or `fn name() -> R`) into an MCP tool.
///
/// `T: serde::Deserialize + schemars::JsonSchema` gives the input schema; the doc comment is the
/// description. A last parameter `cx: &paddock_sdk::Request` gives the request (and the input
/// model). Options: `name = "..."`, `title = "..."`, `description = "..."`, `requires = "sampling,
/// elicitation.url"` (client capabilities a call needs), `task = "optional"` or `task =
/// "required"` (the call may, or must, run as a task the client polls), `icon = "https://..."`
/// or `icon = CONST` (repeatable), `meta = r#"{...}"#` (a JSON object, checked when compiling),
/// and the hints `read_only`, `destructive`, `idempotent`, `open_world`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Tool, attr, item)
}

/// Turns `fn name() -> R` into a resource with a fixed URI: `#[resource(uri = "...")]`, with
/// optional `name`, `title`, `description`, `mime_type`, `size = 1024`, `icon` (repeatable),
/// `meta`, the annotations `audience = "user" | "assistant" | "user, assistant"` and `priority =
/// 0.8`, and a cache hint for reads: `cache_ttl_ms = 60_000` with `cache_scope = "private"` (the
/// default) or `"public"`. Without `cache_ttl_ms`, clients do not reuse a read.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Resource, attr, item)
}

/// Turns `fn name(vars: paddock_sdk::UriVars) -> R` into a resource template:
/// `#[resource_template(uri_template = "scheme://path/{var}")]`, with the options of
/// `#[resource]` except `size`.
#[proc_macro_attribute]
pub fn resource_template(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Template, attr, item)
}

/// Turns `fn name(args: T) -> R` into a prompt; the prompt's arguments are the fields of `T`
/// (each with the `title` and `description` of its schema). Options: `name`, `title`,
/// `description`, `icon` (repeatable), `meta`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Prompt, attr, item)
}

/// Derives `Serialize`, `Deserialize` and `JsonSchema` for a type a tool takes or returns, a
/// prompt's arguments or a form's answer, through the SDK alone: the plugin needs no `serde` or
/// `schemars` of its own. Doc comments become schema descriptions; `#[serde(...)]` and
/// `#[schemars(...)]` attributes on the type and its fields work as usual.
#[proc_macro_attribute]
pub fn data(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = Tokens::from(attr);
        return syn::Error::new_spanned(attr, "#[data] takes no options: put `#[serde(...)]` or `#[schemars(...)]` on the type instead")
            .to_compile_error()
            .into();
    }
    let item = Tokens::from(item);
    quote! {
        #[derive(::paddock_sdk::Serialize, ::paddock_sdk::Deserialize, ::paddock_sdk::JsonSchema)]
        #[serde(crate = "::paddock_sdk::serde")]
        #[schemars(crate = "::paddock_sdk::schemars")]
        #item
    }
    .into()
}

/// Whether the host exposes a tool or prompt named `name` (after its `<plugin>_` prefix): 1 to
/// 64 ASCII letters, digits, `_` and `-`.
fn exposable(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tool,
    Resource,
    Template,
    Prompt,
}

impl Kind {
    fn attribute(self) -> &'static str {
        match self {
            Kind::Tool => "#[tool]",
            Kind::Resource => "#[resource]",
            Kind::Template => "#[resource_template]",
            Kind::Prompt => "#[prompt]",
        }
    }

    /// Options whose value is a string literal.
    fn string_options(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &["name", "title", "description", "requires", "task", "meta"],
            Kind::Resource => &["uri", "name", "title", "description", "mime_type", "meta", "audience", "cache_scope"],
            Kind::Template => &["uri_template", "name", "title", "description", "mime_type", "meta", "audience", "cache_scope"],
            Kind::Prompt => &["name", "title", "description", "meta"],
        }
    }

    /// Options whose value is a number literal.
    fn number_options(self) -> &'static [&'static str] {
        match self {
            Kind::Resource => &["size", "priority", "cache_ttl_ms"],
            Kind::Template => &["priority", "cache_ttl_ms"],
            _ => &[],
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &["read_only", "destructive", "idempotent", "open_world"],
            _ => &[],
        }
    }

    fn known(self) -> String {
        let mut known: Vec<&str> = self.string_options().to_vec();
        known.extend(self.number_options());
        known.push("icon");
        known.extend(self.flags());
        known.join(", ")
    }
}

#[derive(Default)]
struct Options {
    strings: Vec<(String, LitStr)>,
    numbers: Vec<(String, syn::Lit)>,
    icons: Vec<syn::Expr>,
    flags: Vec<String>,
}

impl Options {
    fn string(&self, key: &str) -> Option<&LitStr> {
        self.strings.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn number(&self, key: &str) -> Option<&syn::Lit> {
        self.numbers.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn flag(&self, key: &str) -> bool {
        self.flags.iter().any(|f| f == key)
    }

    fn seen(&self, key: &str) -> bool {
        self.string(key).is_some() || self.number(key).is_some() || self.flag(key)
    }
}

fn expand(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        let Some(ident) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error("expected an option name"));
        };
        if options.seen(&ident) {
            return Err(meta.error(format!("`{ident}` is given twice")));
        }
        if kind.string_options().contains(&ident.as_str()) {
            let value: LitStr = meta.value()?.parse().map_err(|e| syn::Error::new(e.span(), format!("`{ident}` takes a string literal")))?;
            options.strings.push((ident, value));
        } else if kind.number_options().contains(&ident.as_str()) {
            let value: syn::Lit = meta.value()?.parse()?;
            if !matches!(value, syn::Lit::Int(_) | syn::Lit::Float(_)) {
                return Err(syn::Error::new_spanned(value, format!("`{ident}` takes a number")));
            }
            options.numbers.push((ident, value));
        } else if ident == "icon" {
            options.icons.push(meta.value()?.parse()?);
        } else if kind.flags().contains(&ident.as_str()) {
            options.flags.push(ident);
        } else {
            return Err(meta.error(format!("unknown {} option `{ident}`; known options: {}", kind.attribute(), kind.known())));
        }
        Ok(())
    });
    parse_macro_input!(attr with parser);
    let item_tokens: Tokens = item.clone().into();
    let function = match syn::parse2::<ItemFn>(item_tokens.clone()) {
        Ok(function) => function,
        Err(_) => {
            let message = format!("{} can only be applied to a function", kind.attribute());
            return syn::Error::new_spanned(item_tokens, message).to_compile_error().into();
        }
    };
    match generate(kind, &options, &function) {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            let error = error.to_compile_error();
            quote!(#function #error).into()
        }
    }
}

/// The icons as a `&'static [Icon]`; a string literal must be an `https:` or `data:` URI.
fn icons(options: &Options) -> syn::Result<Tokens> {
    let mut icons = Vec::new();
    for icon in &options.icons {
        match icon {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(src), .. }) => {
                let value = src.value();
                if !(value.starts_with("https://") || value.starts_with("data:")) {
                    return Err(syn::Error::new_spanned(src, "an icon is an `https://` or `data:` URI; clients refuse any other source"));
                }
                icons.push(quote!(::paddock_sdk::Icon::new(#src)));
            }
            other => icons.push(quote!(#other)),
        }
    }
    Ok(quote!({
        const ICONS: &[::paddock_sdk::Icon] = &[#(#icons),*];
        ICONS
    }))
}

/// `meta = "..."`, which must be a JSON object.
fn meta(options: &Options) -> syn::Result<Tokens> {
    let Some(lit) = options.string("meta") else { return Ok(quote!(::core::option::Option::None)) };
    match serde_json::from_str::<serde_json::Value>(&lit.value()) {
        Ok(serde_json::Value::Object(_)) => Ok(quote!(::core::option::Option::Some(#lit))),
        Ok(_) => Err(syn::Error::new_spanned(lit, "`meta` is a JSON object, such as r#\"{\"example.com/kind\": \"report\"}\"#")),
        Err(e) => Err(syn::Error::new_spanned(lit, format!("`meta` is not valid JSON: {e}"))),
    }
}

/// The annotations and cache hint of a resource or template.
fn resource_extras(options: &Options) -> syn::Result<(Tokens, Tokens, Tokens)> {
    let audience = match options.string("audience") {
        None => quote!(::core::option::Option::None),
        Some(lit) => {
            let mut roles: Vec<String> = lit.value().split(',').map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()).collect();
            roles.sort();
            roles.dedup();
            let audience = match roles.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
                ["user"] => quote!(User),
                ["assistant"] => quote!(Assistant),
                ["assistant", "user"] => quote!(Both),
                _ => return Err(syn::Error::new_spanned(lit, "`audience` is \"user\", \"assistant\" or \"user, assistant\"")),
            };
            quote!(::core::option::Option::Some(::paddock_sdk::Audience::#audience))
        }
    };
    let priority = match options.number("priority") {
        None => quote!(::core::option::Option::None),
        Some(lit) => {
            let value = match lit {
                syn::Lit::Float(f) => f.base10_parse::<f64>()?,
                syn::Lit::Int(i) => i.base10_parse::<f64>()?,
                _ => unreachable!("only numbers are kept"),
            };
            if !(0.0..=1.0).contains(&value) {
                return Err(syn::Error::new_spanned(lit, "`priority` is from 0.0 (least important) to 1.0 (most important)"));
            }
            quote!(::core::option::Option::Some(#value))
        }
    };
    let scope = options.string("cache_scope");
    let cache = match (options.number("cache_ttl_ms"), scope) {
        (None, None) => quote!(::core::option::Option::None),
        (None, Some(scope)) => return Err(syn::Error::new_spanned(scope, "`cache_scope` needs `cache_ttl_ms`: how long a read may be reused")),
        (Some(ttl), scope) => {
            let ttl = integer(ttl, "cache_ttl_ms")?;
            let constructor = match scope.map(LitStr::value).as_deref() {
                None | Some("private") => quote!(private),
                Some("public") => quote!(public),
                Some(_) => return Err(syn::Error::new_spanned(scope, "`cache_scope` is \"private\" (only the same caller reuses a read) or \"public\"")),
            };
            quote!(::core::option::Option::Some(::paddock_sdk::CacheHint::#constructor(#ttl)))
        }
    };
    Ok((audience, priority, cache))
}

fn integer(lit: &syn::Lit, key: &str) -> syn::Result<u64> {
    match lit {
        syn::Lit::Int(i) => i.base10_parse::<u64>(),
        _ => Err(syn::Error::new_spanned(lit, format!("`{key}` is a whole number"))),
    }
}

fn generate(kind: Kind, options: &Options, function: &ItemFn) -> syn::Result<Tokens> {
    let sig = &function.sig;
    if let Some(asyncness) = &sig.asyncness {
        return Err(syn::Error::new_spanned(
            asyncness,
            format!("{} functions cannot be async: plugin calls are synchronous, write a plain `fn`", kind.attribute()),
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(&sig.generics, format!("{} functions cannot be generic", kind.attribute())));
    }
    let mut arg_type = None;
    let mut takes_request = false;
    for (position, input) in sig.inputs.iter().enumerate() {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new_spanned(receiver, format!("{} functions cannot take `self`: write a free function", kind.attribute())));
            }
            FnArg::Typed(typed) => typed,
        };
        let is_request = matches!(&*typed.ty, syn::Type::Reference(_));
        let expected_last = position + 1 == sig.inputs.len();
        if is_request && expected_last && !takes_request {
            takes_request = true;
        } else if !is_request && position == 0 && arg_type.is_none() {
            arg_type = Some(&*typed.ty);
        } else {
            let what = match kind {
                Kind::Template => "`vars: paddock_sdk::UriVars`, then optionally `cx: &paddock_sdk::Request`",
                Kind::Resource => "no arguments, or only `cx: &paddock_sdk::Request`",
                _ => {
                    "at most one argument struct (put every parameter in one struct that derives `Deserialize` and `JsonSchema`), then optionally `cx: &paddock_sdk::Request`"
                }
            };
            return Err(syn::Error::new_spanned(typed, format!("{} functions take {what}", kind.attribute())));
        }
    }
    if kind == Kind::Resource
        && let Some(arg) = arg_type
    {
        return Err(syn::Error::new_spanned(arg, "#[resource] functions take no arguments; use #[resource_template] for URIs with variables"));
    }
    if kind == Kind::Template && arg_type.is_none() {
        return Err(syn::Error::new_spanned(&sig.ident, "#[resource_template] functions take one argument, `vars: paddock_sdk::UriVars`"));
    }
    if let ReturnType::Default = sig.output {
        return Err(syn::Error::new_spanned(
            &sig.ident,
            format!("{} functions must return a value (for example `String` or `Result<String, String>`)", kind.attribute()),
        ));
    }

    let fn_name = &sig.ident;
    let fn_text = fn_name.to_string();
    let name = options.string("name").map(LitStr::value).unwrap_or_else(|| fn_text.trim_start_matches("r#").to_owned());
    if matches!(kind, Kind::Tool | Kind::Prompt) && !exposable(&name) {
        let what = if kind == Kind::Tool { "tool" } else { "prompt" };
        let message = format!(
            "the host refuses the {what} name `{name}`: names are 1 to 64 ASCII letters, digits, `_` and `-` (and the host puts `<plugin id>_` before them, which must fit too)"
        );
        return Err(match options.string("name") {
            Some(lit) => syn::Error::new_spanned(lit, message),
            None => syn::Error::new_spanned(&sig.ident, message),
        });
    }
    let title = option_lit(options.string("title"));
    let description = match options.string("description") {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => match doc_comment(function) {
            Some(doc) => quote!(::core::option::Option::Some(#doc)),
            None => quote!(::core::option::Option::None),
        },
    };
    let mime = option_lit(options.string("mime_type"));
    let icons = icons(options)?;
    let meta_json = meta(options)?;
    let span = sig.ident.span();
    let def = match kind {
        Kind::Tool => {
            let hints = ["read_only", "destructive", "idempotent", "open_world"].map(|f| options.flag(f));
            let [read_only, destructive, idempotent, open_world] = hints;
            let hints = quote!(::paddock_sdk::__private::ToolHints { read_only: #read_only, destructive: #destructive, idempotent: #idempotent, open_world: #open_world });
            let requires = option_lit(options.string("requires"));
            let task = match options.string("task") {
                None => quote!(::paddock_sdk::__private::TaskMode::Forbidden),
                Some(lit) => match lit.value().as_str() {
                    "forbidden" => quote!(::paddock_sdk::__private::TaskMode::Forbidden),
                    "optional" => quote!(::paddock_sdk::__private::TaskMode::Optional),
                    "required" => quote!(::paddock_sdk::__private::TaskMode::Required),
                    _ => return Err(syn::Error::new_spanned(lit, "`task` is \"optional\" (the call may run as a task) or \"required\" (only as a task)")),
                },
            };
            let meta = quote!(::paddock_sdk::__private::ToolMeta {
                name: #name, title: #title, description: #description, hints: #hints, requires: #requires, task: #task, icons: #icons, meta: #meta_json,
            });
            let constructor = match (arg_type, takes_request) {
                (Some(ty), false) => quote!(::paddock_sdk::__private::ToolDef::new::<#ty, _>(#meta, super::#fn_name)),
                (Some(ty), true) => quote!(::paddock_sdk::__private::ToolDef::with_request::<#ty, _>(#meta, super::#fn_name)),
                (None, false) => quote!(::paddock_sdk::__private::ToolDef::without_arguments(#meta, super::#fn_name)),
                (None, true) => quote!(::paddock_sdk::__private::ToolDef::request_only(#meta, super::#fn_name)),
            };
            quote_spanned!(span=> pub(crate) fn __tool_def() -> ::paddock_sdk::__private::ToolDef { #constructor })
        }
        Kind::Resource | Kind::Template => {
            let (key, constructor) = match (kind, takes_request) {
                (Kind::Resource, false) => ("uri", quote!(new)),
                (Kind::Resource, true) => ("uri", quote!(with_request)),
                (_, false) => ("uri_template", quote!(template)),
                (_, true) => ("uri_template", quote!(template_with_request)),
            };
            let Some(uri) = options.string(key) else {
                let example = if kind == Kind::Resource { "uri = \"scheme://...\"" } else { "uri_template = \"scheme://path/{var}\"" };
                return Err(syn::Error::new_spanned(&sig.ident, format!("{} needs `{example}`", kind.attribute())));
            };
            let text = uri.value();
            if text.is_empty() || text.len() > paddock_uri_template::MAX_URI_BYTES || text.chars().any(char::is_control) {
                return Err(syn::Error::new_spanned(
                    uri,
                    format!("the host refuses this {key}: it must be 1 to {} bytes without control characters", paddock_uri_template::MAX_URI_BYTES),
                ));
            }
            if kind == Kind::Template
                && let Err(error) = paddock_uri_template::UriTemplate::compile(&text)
            {
                return Err(syn::Error::new_spanned(uri, format!("the host refuses this URI template: it {error}")));
            }
            let size = match options.number("size") {
                Some(lit) => {
                    let size = integer(lit, "size")?;
                    quote!(::core::option::Option::Some(#size))
                }
                None => quote!(::core::option::Option::None),
            };
            let (audience, priority, cache) = resource_extras(options)?;
            let meta = quote!(::paddock_sdk::__private::ResourceMeta {
                uri: #uri, name: #name, title: #title, description: #description, mime_type: #mime, size: #size,
                icons: #icons, audience: #audience, priority: #priority, meta: #meta_json, cache: #cache,
            });
            let def_fn = if kind == Kind::Resource { quote!(__resource_def) } else { quote!(__template_def) };
            quote_spanned!(span=> pub(crate) fn #def_fn() -> ::paddock_sdk::__private::ResourceDef {
                ::paddock_sdk::__private::ResourceDef::#constructor(#meta, super::#fn_name)
            })
        }
        Kind::Prompt => {
            let meta = quote!(::paddock_sdk::__private::PromptMeta { name: #name, title: #title, description: #description, icons: #icons, meta: #meta_json });
            let constructor = match (arg_type, takes_request) {
                (Some(ty), false) => quote!(::paddock_sdk::__private::PromptDef::new::<#ty, _>(#meta, super::#fn_name)),
                (Some(ty), true) => quote!(::paddock_sdk::__private::PromptDef::with_request::<#ty, _>(#meta, super::#fn_name)),
                (None, false) => quote!(::paddock_sdk::__private::PromptDef::without_arguments(#meta, super::#fn_name)),
                (None, true) => quote!(::paddock_sdk::__private::PromptDef::request_only(#meta, super::#fn_name)),
            };
            quote_spanned!(span=> pub(crate) fn __prompt_def() -> ::paddock_sdk::__private::PromptDef { #constructor })
        }
    };
    Ok(quote! {
        #function
        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports)]
        pub(crate) mod #fn_name {
            use super::*;
            #def
        }
    })
}

fn option_lit(lit: Option<&LitStr>) -> Tokens {
    match lit {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => quote!(::core::option::Option::None),
    }
}

/// The doc comment, with the one leading space of each `///` line removed.
fn doc_comment(function: &ItemFn) -> Option<String> {
    let lines: Vec<String> = function
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').unwrap_or(&line).to_owned())
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

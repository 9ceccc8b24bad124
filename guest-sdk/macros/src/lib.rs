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
/// "required"` (the call may, or must, run as a task the client polls), and the hints
/// `read_only`, `destructive`, `idempotent`, `open_world`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Tool, attr, item)
}

/// Turns `fn name() -> R` into a resource with a fixed URI: `#[resource(uri = "...")]`, with
/// optional `name`, `title`, `description` and `mime_type`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Resource, attr, item)
}

/// Turns `fn name(vars: paddock_sdk::UriVars) -> R` into a resource template:
/// `#[resource_template(uri_template = "scheme://path/{var}")]`, with optional `name`, `title`,
/// `description` and `mime_type`.
#[proc_macro_attribute]
pub fn resource_template(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Template, attr, item)
}

/// Turns `fn name(args: T) -> R` into a prompt; the prompt's arguments are the fields of `T`.
/// Options: `name`, `title`, `description`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Kind::Prompt, attr, item)
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

    fn string_options(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &["name", "title", "description", "requires", "task"],
            Kind::Resource => &["uri", "name", "title", "description", "mime_type"],
            Kind::Template => &["uri_template", "name", "title", "description", "mime_type"],
            Kind::Prompt => &["name", "title", "description"],
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &["read_only", "destructive", "idempotent", "open_world"],
            _ => &[],
        }
    }
}

#[derive(Default)]
struct Options {
    strings: Vec<(String, LitStr)>,
    flags: Vec<String>,
}

impl Options {
    fn string(&self, key: &str) -> Option<&LitStr> {
        self.strings.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn flag(&self, key: &str) -> bool {
        self.flags.iter().any(|f| f == key)
    }
}

fn expand(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        let Some(ident) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error("expected an option name"));
        };
        if kind.string_options().contains(&ident.as_str()) {
            let value: LitStr = meta.value()?.parse()?;
            options.strings.push((ident, value));
            Ok(())
        } else if kind.flags().contains(&ident.as_str()) {
            options.flags.push(ident);
            Ok(())
        } else {
            let mut known: Vec<&str> = kind.string_options().to_vec();
            known.extend(kind.flags());
            Err(meta.error(format!("unknown {} option `{ident}`; known options: {}", kind.attribute(), known.join(", "))))
        }
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

fn generate(kind: Kind, options: &Options, function: &ItemFn) -> syn::Result<Tokens> {
    let sig = &function.sig;
    if let Some(asyncness) = &sig.asyncness {
        return Err(syn::Error::new_spanned(asyncness, format!("{} functions cannot be async: plugin calls are synchronous, write a plain `fn`", kind.attribute())));
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
                _ => "at most one argument struct (put every parameter in one struct that derives `Deserialize` and `JsonSchema`), then optionally `cx: &paddock_sdk::Request`",
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
        return Err(syn::Error::new_spanned(&sig.ident, format!("{} functions must return a value (for example `String` or `Result<String, String>`)", kind.attribute())));
    }

    let fn_name = &sig.ident;
    let fn_text = fn_name.to_string();
    let name = options.string("name").map(LitStr::value).unwrap_or_else(|| fn_text.trim_start_matches("r#").to_owned());
    let title = option_lit(options.string("title"));
    let description = match options.string("description") {
        Some(lit) => quote!(::core::option::Option::Some(#lit)),
        None => match doc_comment(function) {
            Some(doc) => quote!(::core::option::Option::Some(#doc)),
            None => quote!(::core::option::Option::None),
        },
    };
    let mime = option_lit(options.string("mime_type"));
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
            let meta = quote!(::paddock_sdk::__private::ToolMeta { name: #name, title: #title, description: #description, hints: #hints, requires: #requires, task: #task });
            let constructor = match (arg_type, takes_request) {
                (Some(ty), false) => quote!(::paddock_sdk::__private::ToolDef::new::<#ty, _>(#meta, super::#fn_name)),
                (Some(ty), true) => quote!(::paddock_sdk::__private::ToolDef::with_request::<#ty, _>(#meta, super::#fn_name)),
                (None, false) => quote!(::paddock_sdk::__private::ToolDef::without_arguments(#meta, super::#fn_name)),
                (None, true) => quote!(::paddock_sdk::__private::ToolDef::request_only(#meta, super::#fn_name)),
            };
            quote_spanned!(span=> pub(crate) fn __tool_def() -> ::paddock_sdk::__private::ToolDef { #constructor })
        }
        Kind::Resource => {
            let Some(uri) = options.string("uri") else {
                return Err(syn::Error::new_spanned(&sig.ident, "#[resource] needs `uri = \"scheme://...\"`"));
            };
            let constructor = if takes_request { quote!(with_request) } else { quote!(new) };
            quote_spanned!(span=> pub(crate) fn __resource_def() -> ::paddock_sdk::__private::ResourceDef {
                ::paddock_sdk::__private::ResourceDef::#constructor(#uri, #name, #title, #description, #mime, super::#fn_name)
            })
        }
        Kind::Template => {
            let Some(template) = options.string("uri_template") else {
                return Err(syn::Error::new_spanned(&sig.ident, "#[resource_template] needs `uri_template = \"scheme://path/{var}\"`"));
            };
            let constructor = if takes_request { quote!(with_request) } else { quote!(new) };
            quote_spanned!(span=> pub(crate) fn __template_def() -> ::paddock_sdk::__private::TemplateDef {
                ::paddock_sdk::__private::TemplateDef::#constructor(#template, #name, #title, #description, #mime, super::#fn_name)
            })
        }
        Kind::Prompt => {
            let constructor = match (arg_type, takes_request) {
                (Some(ty), false) => quote!(::paddock_sdk::__private::PromptDef::new::<#ty, _>(#name, #title, #description, super::#fn_name)),
                (Some(ty), true) => quote!(::paddock_sdk::__private::PromptDef::with_request::<#ty, _>(#name, #title, #description, super::#fn_name)),
                (None, false) => quote!(::paddock_sdk::__private::PromptDef::without_arguments(#name, #title, #description, super::#fn_name)),
                (None, true) => quote!(::paddock_sdk::__private::PromptDef::request_only(#name, #title, #description, super::#fn_name)),
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

//! How a plugin describes what it serves beyond names and schemas: icons, annotations for
//! content and resources, and cache hints for lists and reads. Each type is `Copy` and built
//! with `const fn`s, so it can sit in a `const` and be named in a macro option
//! (`#[tool(icon = GEAR)]`).

use crate::bindings::paddock::plugin::types as wit;

/// An icon for the plugin, a tool, a resource, a template or a prompt. Clients only show
/// `https:` and `data:` icons; the macros refuse other sources at compile time.
///
/// ```ignore
/// const GEAR: Icon = Icon::new("https://example.com/gear.svg").theme(Theme::Dark);
/// #[tool(icon = GEAR, icon = "https://example.com/gear-light.png")]
/// fn tune() -> String { "tuned".into() }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icon {
    src: &'static str,
    mime_type: Option<&'static str>,
    sizes: &'static [&'static str],
    theme: Option<Theme>,
}

/// Which background an icon is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Theme {
    /// For a light background.
    Light,
    /// For a dark background.
    Dark,
}

impl Icon {
    /// An icon at `src`, an `https:` or `data:` URI. Without [`Icon::mime_type`], the type is
    /// taken from a `data:` URI or the file extension (`png`, `jpg`, `svg`, `webp`, `gif`, `ico`).
    pub const fn new(src: &'static str) -> Icon {
        Icon { src, mime_type: None, sizes: &[], theme: None }
    }

    /// States the MIME type.
    pub const fn mime_type(self, mime_type: &'static str) -> Icon {
        Icon { mime_type: Some(mime_type), ..self }
    }

    /// The sizes it is drawn at, such as `"48x48"` or `"any"`.
    pub const fn sizes(self, sizes: &'static [&'static str]) -> Icon {
        Icon { sizes, ..self }
    }

    /// The background it is meant for.
    pub const fn theme(self, theme: Theme) -> Icon {
        Icon { theme: Some(theme), ..self }
    }

    pub(crate) fn to_wit(self) -> wit::Icon {
        wit::Icon {
            src: self.src.to_owned(),
            mime_type: self.mime_type.or_else(|| guess_mime_type(self.src)).map(str::to_owned),
            sizes: self.sizes.iter().map(|s| (*s).to_owned()).collect(),
            theme: self.theme.map(|t| match t {
                Theme::Light => "light".to_owned(),
                Theme::Dark => "dark".to_owned(),
            }),
        }
    }
}

pub(crate) fn icons(icons: &[Icon]) -> Vec<wit::Icon> {
    icons.iter().map(|i| i.to_wit()).collect()
}

fn guess_mime_type(src: &str) -> Option<&'static str> {
    if let Some(data) = src.strip_prefix("data:") {
        let media = data.split([';', ',']).next().unwrap_or("");
        return ["image/png", "image/jpeg", "image/svg+xml", "image/webp", "image/gif", "image/x-icon"].into_iter().find(|m| *m == media);
    }
    let path = src.split(['?', '#']).next().unwrap_or(src);
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    match extension.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "svg" => Some("image/svg+xml"),
        "webp" => Some("image/webp"),
        "gif" => Some("image/gif"),
        "ico" => Some("image/x-icon"),
        _ => None,
    }
}

/// Who a content block or a resource is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
    /// Both.
    Both,
}

/// Hints for the client about a content block or a resource: who it is for, how much it
/// matters, when it last changed.
///
/// ```ignore
/// Content::text(diff).annotate(Annotations::for_audience(Audience::User).priority(0.9))
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Annotations {
    audience: Option<Audience>,
    priority: Option<f64>,
    last_modified: Option<String>,
}

impl Annotations {
    /// No hints yet.
    pub fn new() -> Annotations {
        Annotations::default()
    }

    /// For this audience.
    pub fn for_audience(audience: Audience) -> Annotations {
        Annotations { audience: Some(audience), ..Annotations::default() }
    }

    /// From 0.0 (least important) to 1.0 (most important); clamped to that range.
    pub fn priority(mut self, priority: f64) -> Annotations {
        self.priority = Some(if priority.is_nan() { 0.0 } else { priority.clamp(0.0, 1.0) });
        self
    }

    /// When the item last changed, an ISO 8601 timestamp such as `2026-01-12T15:00:58Z`.
    pub fn last_modified(mut self, timestamp: impl Into<String>) -> Annotations {
        self.last_modified = Some(timestamp.into());
        self
    }

    pub(crate) fn to_wit(&self) -> wit::Annotations {
        wit::Annotations { audience: audience(self.audience), priority: self.priority, last_modified: self.last_modified.clone() }
    }
}

pub(crate) fn audience(audience: Option<Audience>) -> Vec<wit::Role> {
    match audience {
        None => Vec::new(),
        Some(Audience::User) => vec![wit::Role::User],
        Some(Audience::Assistant) => vec![wit::Role::Assistant],
        Some(Audience::Both) => vec![wit::Role::User, wit::Role::Assistant],
    }
}

/// How long a client may reuse a list or a read (`ttlMs` and `cacheScope` on 2026-07-28).
///
/// Without one, lists are fresh until the plugin announces a change and reads are not reused.
/// `private` keeps a result to the caller that got it; use it whenever the result depends on who
/// asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    ttl_ms: u64,
    public: bool,
}

impl CacheHint {
    /// Any client or proxy may reuse it for `ttl_ms` milliseconds.
    pub const fn public(ttl_ms: u64) -> CacheHint {
        CacheHint { ttl_ms, public: true }
    }

    /// Only the same caller may reuse it, for `ttl_ms` milliseconds.
    pub const fn private(ttl_ms: u64) -> CacheHint {
        CacheHint { ttl_ms, public: false }
    }

    pub(crate) fn to_wit(self) -> wit::CacheHint {
        wit::CacheHint { ttl_ms: self.ttl_ms, scope: if self.public { wit::CacheScope::Public } else { wit::CacheScope::Private } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_icon_names_its_type_from_its_source_unless_told() {
        let png = Icon::new("https://example.com/a/gear.PNG?v=2").to_wit();
        assert_eq!(png.mime_type.as_deref(), Some("image/png"));
        let data = Icon::new("data:image/svg+xml;base64,PHN2Zy8+").to_wit();
        assert_eq!(data.mime_type.as_deref(), Some("image/svg+xml"));
        assert_eq!(Icon::new("https://example.com/icon").to_wit().mime_type, None);
        let told = Icon::new("https://example.com/icon").mime_type("image/avif").sizes(&["48x48", "any"]).theme(Theme::Dark).to_wit();
        assert_eq!(told.mime_type.as_deref(), Some("image/avif"));
        assert_eq!(told.sizes, ["48x48", "any"]);
        assert_eq!(told.theme.as_deref(), Some("dark"));
    }

    #[test]
    fn annotations_keep_priority_in_range_and_name_each_role_once() {
        let a = Annotations::for_audience(Audience::Both).priority(7.0).last_modified("2026-01-12T15:00:58Z").to_wit();
        assert_eq!(a.audience, [wit::Role::User, wit::Role::Assistant]);
        assert_eq!(a.priority, Some(1.0));
        assert_eq!(Annotations::new().priority(f64::NAN).to_wit().priority, Some(0.0));
        assert!(Annotations::new().to_wit().audience.is_empty());
    }
}

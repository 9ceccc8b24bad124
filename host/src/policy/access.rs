//! Tool policy: which tools, resources and prompts a principal may see and use, which scopes
//! using them takes, and whether a person must approve a tool call first. Plain data decided by
//! pure functions over (principal, kind, exposed name).
//!
//! A rule applies to a request when one of its `who` matches the principal and one of its
//! patterns for the item's kind matches the item's exposed name (a resource's URI, a template's
//! URI template). Then:
//! - a `deny` rule that applies hides the item, whatever else applies (deny wins);
//! - otherwise an `allow` rule that applies makes it usable; with none, the default decides
//!   (`allow` unless the policy says `default = "deny"`);
//! - a usable item still needs every scope named by the rules that apply (OAuth step-up);
//! - a tool's approval is the strictest one the applying rules name (`deny` > `ask` > `auto`);
//!   when none names one, a tool whose annotations say `destructiveHint` takes the policy's
//!   `destructive` approval, any other `auto`.
//!
//! With no rules and the default `allow`, every decision is "usable, auto": the policy is then
//! `AccessRules::open()`, and callers may skip it entirely (`is_open`).

use crate::identity::Principal;

/// What an item is, for matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Tool,
    /// A resource URI, or a resource template's URI template.
    Resource,
    Prompt,
}

/// Whether a rule lets the items it matches be used or hides them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Effect {
    #[default]
    Allow,
    Deny,
}

/// Whether a tool call needs a person's yes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum Approval {
    /// Runs without asking.
    #[default]
    Auto,
    /// Asks the person behind the client first (elicitation), bound to the exact arguments.
    Ask,
    /// Never runs.
    Deny,
}

impl Approval {
    pub fn parse(text: &str) -> Option<Approval> {
        match text {
            "auto" => Some(Approval::Auto),
            "ask" => Some(Approval::Ask),
            "deny" => Some(Approval::Deny),
            _ => None,
        }
    }
}

/// Whom a rule is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// Every principal (`*`).
    Anyone,
    /// The principal with this id (`principal:token alice`, `principal:https://idp.example alice`).
    Principal(String),
    /// Any principal with this subject, whoever issued it (`subject:alice`).
    Subject(String),
    /// Any principal of this issuer (`issuer:https://idp.example`).
    Issuer(String),
    /// Any principal granted this scope (`scope:mcp.read`).
    Scope(String),
    /// Any principal in this group (`group:admins`).
    Group(String),
}

impl Who {
    /// Reads `*`, `principal:ID`, `subject:S`, `issuer:I`, `scope:S` or `group:G`.
    pub fn parse(text: &str) -> Option<Who> {
        if text == "*" {
            return Some(Who::Anyone);
        }
        let (kind, value) = text.split_once(':')?;
        if value.is_empty() {
            return None;
        }
        let value = value.to_owned();
        match kind {
            "principal" => Some(Who::Principal(value)),
            "subject" => Some(Who::Subject(value)),
            "issuer" => Some(Who::Issuer(value)),
            "scope" => Some(Who::Scope(value)),
            "group" => Some(Who::Group(value)),
            _ => None,
        }
    }

    pub fn matches(&self, principal: &Principal) -> bool {
        match self {
            Who::Anyone => true,
            Who::Principal(id) => principal.id() == id,
            Who::Subject(subject) => principal.subject() == subject,
            Who::Issuer(issuer) => principal.issuer() == issuer,
            Who::Scope(scope) => principal.has_scope(scope),
            Who::Group(group) => principal.groups().iter().any(|g| g == group),
        }
    }
}

/// A name pattern: `*` matches any run of characters (`/` included), `?` any one character,
/// everything else itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    pub fn new(text: &str) -> Pattern {
        Pattern(text.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `name` matches, in time linear in `pattern × name` at worst (no backtracking
    /// blow-up: only the last `*` is ever returned to).
    pub fn matches(&self, name: &str) -> bool {
        let pattern: Vec<char> = self.0.chars().collect();
        let name: Vec<char> = name.chars().collect();
        let (mut p, mut n) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match pattern.get(p) {
                Some('*') => {
                    star = Some((p, n));
                    p += 1;
                }
                Some(&c) if c == '?' || c == name[n] => {
                    p += 1;
                    n += 1;
                }
                _ => match star {
                    Some((sp, sn)) => {
                        p = sp + 1;
                        n = sn + 1;
                        star = Some((sp, sn + 1));
                    }
                    None => return false,
                },
            }
        }
        pattern[p..].iter().all(|&c| c == '*')
    }
}

/// One rule of the policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    /// How `paddock check` and refusal logs name it.
    pub name: String,
    pub who: Vec<Who>,
    pub tools: Vec<Pattern>,
    pub resources: Vec<Pattern>,
    pub prompts: Vec<Pattern>,
    pub effect: Effect,
    /// The approval of the tools it matches, if it names one.
    pub approval: Option<Approval>,
    /// Scopes a principal must hold to use what it matches.
    pub scopes: Vec<String>,
}

impl Rule {
    pub fn patterns(&self, kind: ItemKind) -> &[Pattern] {
        match kind {
            ItemKind::Tool => &self.tools,
            ItemKind::Resource => &self.resources,
            ItemKind::Prompt => &self.prompts,
        }
    }

    fn applies(&self, principal: &Principal, kind: ItemKind, name: &str) -> bool {
        self.who.iter().any(|w| w.matches(principal)) && self.patterns(kind).iter().any(|p| p.matches(name))
    }
}

/// The whole policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccessRules {
    /// What an item no `allow` rule matches gets.
    pub default: Effect,
    /// The approval of a tool annotated `destructiveHint` that no rule names an approval for.
    pub destructive: Approval,
    pub rules: Vec<Rule>,
}

/// What a principal may do with one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessDecision {
    /// Neither listed nor usable: answered exactly like an item that does not exist.
    Hidden,
    /// Listed, but using it takes these scopes, which the principal lacks.
    NeedsScopes(Vec<String>),
    /// Usable; a tool call needs this approval first.
    Usable(Approval),
}

impl AccessDecision {
    /// Whether the item is listed for the principal.
    pub fn visible(&self) -> bool {
        !matches!(self, AccessDecision::Hidden)
    }
}

impl AccessRules {
    /// Everything allowed, nothing asked.
    pub fn open() -> AccessRules {
        AccessRules::default()
    }

    /// Whether every decision is "usable, auto" whoever asks (then nothing needs checking,
    /// unless a tool is destructive and `destructive` is not `auto`).
    pub fn is_open(&self) -> bool {
        self.rules.is_empty() && self.default == Effect::Allow && self.destructive == Approval::Auto
    }

    /// What `principal` may do with the item `name` of `kind`; `destructive` is whether a tool's
    /// annotations say `destructiveHint`.
    pub fn decide(&self, principal: &Principal, kind: ItemKind, name: &str, destructive: bool) -> AccessDecision {
        let mut allowed = self.default == Effect::Allow;
        let mut approval: Option<Approval> = None;
        let mut missing: Vec<String> = Vec::new();
        let mut allowed_by_rule = false;
        for rule in self.rules.iter().filter(|r| r.applies(principal, kind, name)) {
            match rule.effect {
                Effect::Deny => return AccessDecision::Hidden,
                Effect::Allow => allowed_by_rule = true,
            }
            approval = approval.max(rule.approval);
            for scope in &rule.scopes {
                if !principal.has_scope(scope) && !missing.contains(scope) {
                    missing.push(scope.clone());
                }
            }
        }
        allowed |= allowed_by_rule;
        if !allowed {
            return AccessDecision::Hidden;
        }
        if !missing.is_empty() {
            return AccessDecision::NeedsScopes(missing);
        }
        let approval = match (kind, approval) {
            (ItemKind::Tool, Some(approval)) => approval,
            (ItemKind::Tool, None) if destructive => self.destructive,
            _ => Approval::Auto,
        };
        AccessDecision::Usable(approval)
    }

    /// The rules (by name) with a pattern that matches none of `names` for its kind: each is
    /// `(rule, kind, pattern)`. A rule with no patterns at all is reported too, with `None`.
    pub fn unmatched<'a>(&'a self, names: &dyn Fn(ItemKind) -> Vec<String>) -> Vec<(&'a str, Option<(ItemKind, &'a str)>)> {
        let tools = names(ItemKind::Tool);
        let resources = names(ItemKind::Resource);
        let prompts = names(ItemKind::Prompt);
        let mut found = Vec::new();
        for rule in &self.rules {
            if rule.tools.is_empty() && rule.resources.is_empty() && rule.prompts.is_empty() {
                found.push((rule.name.as_str(), None));
            }
            for (kind, served) in [(ItemKind::Tool, &tools), (ItemKind::Resource, &resources), (ItemKind::Prompt, &prompts)] {
                for pattern in rule.patterns(kind) {
                    if !served.iter().any(|n| pattern.matches(n)) {
                        found.push((rule.name.as_str(), Some((kind, pattern.as_str()))));
                    }
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rule(who: &str, tools: &[&str], effect: Effect) -> Rule {
        Rule { name: "r".into(), who: vec![Who::parse(who).expect("who")], tools: tools.iter().map(|t| Pattern::new(t)).collect(), effect, ..Rule::default() }
    }

    fn reader() -> Principal {
        Principal::token("rita", vec!["mcp.read".into()]).with_groups(vec!["readers".into()])
    }

    #[test]
    fn patterns_match_stars_and_single_characters() {
        for (pattern, name, expected) in [
            ("*", "", true),
            ("*", "anything/at/all", true),
            ("weather_*", "weather_forecast", true),
            ("weather_*", "xweather_forecast", false),
            ("*_delete", "files_delete", true),
            ("*_delete", "files_delete_all", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("file:///docs/*", "file:///docs/a/b.md", true),
            ("file:///docs/*", "file:///etc/passwd", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXcYYb", false),
            ("", "", true),
            ("", "x", false),
        ] {
            assert_eq!(Pattern::new(pattern).matches(name), expected, "{pattern} ~ {name}");
        }
    }

    #[test]
    fn who_reads_every_form_and_refuses_the_rest() {
        let p = reader();
        assert!(Who::parse("*").expect("any").matches(&p));
        assert!(Who::parse("principal:token rita").expect("id").matches(&p));
        assert!(Who::parse("subject:rita").expect("subject").matches(&p));
        assert!(Who::parse("issuer:token").expect("issuer").matches(&p));
        assert!(Who::parse("scope:mcp.read").expect("scope").matches(&p));
        assert!(Who::parse("group:readers").expect("group").matches(&p));
        assert!(!Who::parse("group:admins").expect("group").matches(&p));
        assert!(!Who::parse("principal:local rita").expect("id").matches(&p));
        for bad in ["", "rita", "group:", "role:x", "**"] {
            assert_eq!(Who::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn deny_wins_allow_opens_a_closed_default_and_scopes_are_required() {
        let mut rules = AccessRules { default: Effect::Deny, ..AccessRules::default() };
        rules.rules.push(rule("group:readers", &["weather_*"], Effect::Allow));
        rules.rules.push(rule("*", &["weather_admin"], Effect::Deny));
        let p = reader();
        assert_eq!(rules.decide(&p, ItemKind::Tool, "weather_forecast", false), AccessDecision::Usable(Approval::Auto));
        assert_eq!(rules.decide(&p, ItemKind::Tool, "weather_admin", false), AccessDecision::Hidden);
        assert_eq!(rules.decide(&p, ItemKind::Tool, "files_read", false), AccessDecision::Hidden);
        assert_eq!(rules.decide(&Principal::token("bob", vec![]), ItemKind::Tool, "weather_forecast", false), AccessDecision::Hidden);
        // Kinds do not mix: a tool pattern says nothing of prompts.
        assert_eq!(rules.decide(&p, ItemKind::Prompt, "weather_forecast", false), AccessDecision::Hidden);

        let mut scoped = rule("*", &["files_*"], Effect::Allow);
        scoped.scopes = vec!["files.write".into()];
        let rules = AccessRules { rules: vec![scoped], ..AccessRules::default() };
        assert_eq!(rules.decide(&p, ItemKind::Tool, "files_write", false), AccessDecision::NeedsScopes(vec!["files.write".into()]));
        let writer = Principal::token("w", vec!["files.write".into()]);
        assert_eq!(rules.decide(&writer, ItemKind::Tool, "files_write", false), AccessDecision::Usable(Approval::Auto));
    }

    #[test]
    fn approvals_take_the_strictest_named_and_destructive_tools_the_default() {
        let mut ask = rule("*", &["files_*"], Effect::Allow);
        ask.approval = Some(Approval::Ask);
        let mut auto = rule("group:readers", &["files_read"], Effect::Allow);
        auto.approval = Some(Approval::Auto);
        let rules = AccessRules { destructive: Approval::Ask, rules: vec![ask, auto], ..AccessRules::default() };
        let p = reader();
        assert_eq!(rules.decide(&p, ItemKind::Tool, "files_read", false), AccessDecision::Usable(Approval::Ask));
        assert_eq!(rules.decide(&p, ItemKind::Tool, "other", true), AccessDecision::Usable(Approval::Ask));
        assert_eq!(rules.decide(&p, ItemKind::Tool, "other", false), AccessDecision::Usable(Approval::Auto));
        assert!(!rules.is_open());
        assert!(AccessRules::open().is_open());
    }

    #[test]
    fn rules_that_match_nothing_served_are_named() {
        let mut r = rule("*", &["weather_*", "gone_*"], Effect::Allow);
        r.name = "weather".into();
        r.resources = vec![Pattern::new("file:///docs/*")];
        let empty = Rule { name: "empty".into(), who: vec![Who::Anyone], ..Rule::default() };
        let rules = AccessRules { rules: vec![r, empty], ..AccessRules::default() };
        let names = |kind: ItemKind| match kind {
            ItemKind::Tool => vec!["weather_forecast".to_owned()],
            ItemKind::Resource => vec!["file:///docs/{path}".to_owned()],
            ItemKind::Prompt => vec![],
        };
        assert_eq!(rules.unmatched(&names), vec![("weather", Some((ItemKind::Tool, "gone_*"))), ("empty", None)]);
    }

    proptest! {
        #[test]
        fn a_name_matches_itself_and_any_pattern_made_by_starring_part_of_it(name in "[a-z_/:.]{0,24}", a in 0usize..25, b in 0usize..25) {
            prop_assert!(Pattern::new(&name).matches(&name));
            let chars: Vec<char> = name.chars().collect();
            let (from, to) = (a.min(b).min(chars.len()), a.max(b).min(chars.len()));
            let starred: String = chars[..from].iter().chain(std::iter::once(&'*')).chain(chars[to..].iter()).collect();
            prop_assert!(Pattern::new(&starred).matches(&name), "{} ~ {}", starred, name);
            let questioned: String = chars.iter().enumerate().map(|(i, c)| if i == from { '?' } else { *c }).collect();
            prop_assert!(Pattern::new(&questioned).matches(&name));
        }

        #[test]
        fn a_pattern_without_wildcards_matches_only_the_same_text(pattern in "[a-z_]{0,8}", name in "[a-z_]{0,8}") {
            prop_assert_eq!(Pattern::new(&pattern).matches(&name), pattern == name);
        }

        #[test]
        fn a_pattern_matches_exactly_when_a_regex_of_it_does(pattern in "[ab*?]{0,8}", name in "[ab]{0,10}") {
            // The reference: a plain recursive matcher.
            fn reference(p: &[char], n: &[char]) -> bool {
                match (p.first(), n.first()) {
                    (None, None) => true,
                    (Some('*'), _) => reference(&p[1..], n) || (!n.is_empty() && reference(p, &n[1..])),
                    (Some('?'), Some(_)) => reference(&p[1..], &n[1..]),
                    (Some(a), Some(b)) if a == b => reference(&p[1..], &n[1..]),
                    _ => false,
                }
            }
            let p: Vec<char> = pattern.chars().collect();
            let n: Vec<char> = name.chars().collect();
            prop_assert_eq!(Pattern::new(&pattern).matches(&name), reference(&p, &n));
        }

        #[test]
        fn a_deny_rule_that_applies_always_hides(default_deny in any::<bool>(), allow_first in any::<bool>(), name in "[a-z]{1,8}") {
            let mut rules = vec![rule("*", &["*"], Effect::Deny)];
            if allow_first {
                rules.insert(0, rule("*", &[name.as_str()], Effect::Allow));
            } else {
                rules.push(rule("*", &[name.as_str()], Effect::Allow));
            }
            let policy = AccessRules { default: if default_deny { Effect::Deny } else { Effect::Allow }, rules, ..AccessRules::default() };
            prop_assert_eq!(policy.decide(&reader(), ItemKind::Tool, &name, false), AccessDecision::Hidden);
        }
    }
}

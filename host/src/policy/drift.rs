//! What happens when a plugin update changes what clients are shown (a tool's name, title,
//! description, schemas or annotations; a prompt's; a resource's): drift, the "rug pull" of a
//! tool that quietly rewrites its description to steer the model.

/// How an update whose exposed definitions changed is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DriftPolicy {
    /// Served, logged at info.
    Allow,
    /// Served, and the change logged as a warning with a readable diff.
    #[default]
    Warn,
    /// Not served until the operator accepts it into `paddock.lock` (`paddock lock --accept`);
    /// the previous version keeps serving meanwhile.
    Hold,
    /// Refused while serving: the previous version keeps serving whatever the lock says.
    Block,
}

/// A `drift` value that is not one of the four.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriftPolicyError {
    #[error("`{0}` is not a drift policy (allow, warn, hold or block)")]
    Unknown(String),
    #[error("must be a string")]
    NotAString,
}

impl std::str::FromStr for DriftPolicy {
    type Err = DriftPolicyError;

    fn from_str(text: &str) -> Result<DriftPolicy, DriftPolicyError> {
        match text {
            "allow" => Ok(DriftPolicy::Allow),
            "warn" => Ok(DriftPolicy::Warn),
            "hold" => Ok(DriftPolicy::Hold),
            "block" => Ok(DriftPolicy::Block),
            other => Err(DriftPolicyError::Unknown(crate::escape::shorten(other))),
        }
    }
}

impl DriftPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            DriftPolicy::Allow => "allow",
            DriftPolicy::Warn => "warn",
            DriftPolicy::Hold => "hold",
            DriftPolicy::Block => "block",
        }
    }
}

/// Every plugin's drift policy: the ones configured per plugin, and the policy of the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftPolicies {
    /// `drift` at the top of the main file: the policy of plugins that set none.
    pub default: DriftPolicy,
    /// Per plugin, its own `drift`.
    pub plugins: std::collections::BTreeMap<String, DriftPolicy>,
}

impl DriftPolicies {
    /// How a change of plugin `id`'s definitions is taken: its own policy, else the default.
    pub fn of(&self, id: &str) -> DriftPolicy {
        self.plugins.get(id).copied().unwrap_or(self.default)
    }
}

/// Where a change of a plugin's definitions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftSource {
    /// A new version of its file, found in the folder.
    Update,
    /// The running plugin announced that its lists changed.
    Announcement,
}

impl DriftPolicy {
    /// Whether a change of definitions is served under this policy.
    pub fn serves(self) -> bool {
        matches!(self, DriftPolicy::Allow | DriftPolicy::Warn)
    }

    /// Logs a change of `plugin`'s definitions (`diff`, one line per change) as this policy takes
    /// it: at info when allowed, as a warning when served with a warning or when an update is
    /// held, as an error when refused. A refused announcement is a refusal (`refusal = "drift"`);
    /// a held or refused update becomes a problem of the folder, which says so itself.
    pub fn log(self, plugin: &str, source: DriftSource, diff: &[String]) {
        let shown = crate::escape::Escaped(plugin);
        let drift = self.as_str();
        let what = match source {
            DriftSource::Update => "changed its definitions",
            DriftSource::Announcement => "announced changed definitions",
        };
        let diff = diff.join("\n  ");
        match (self, source) {
            (DriftPolicy::Allow, _) => tracing::info!(plugin = %shown, drift, "plugin `{shown}` {what}:\n  {diff}"),
            (DriftPolicy::Warn, _) => tracing::warn!(plugin = %shown, drift, "plugin `{shown}` {what} (served):\n  {diff}"),
            (DriftPolicy::Hold, DriftSource::Update) => tracing::warn!(plugin = %shown, drift, "plugin `{shown}` {what}; held until accepted:\n  {diff}"),
            (DriftPolicy::Block, DriftSource::Update) => tracing::error!(plugin = %shown, drift, "plugin `{shown}` {what}; update refused:\n  {diff}"),
            (DriftPolicy::Hold | DriftPolicy::Block, DriftSource::Announcement) => tracing::error!(
                plugin = %shown,
                refusal = "drift",
                drift,
                "refused a list change: plugin `{shown}` {what} while serving (drift = {drift}); the previous lists stay served:\n  {diff}"
            ),
        }
    }
}

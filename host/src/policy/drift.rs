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

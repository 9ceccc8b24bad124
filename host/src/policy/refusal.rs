//! What the host can refuse a plugin, as plain data: the kinds of refusal that are recorded and
//! counted per plugin.

/// The kind of a refusal: what the plugin tried to use or exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefusalKind {
    /// A file or directory outside the plugin's grants, a write to a read-only grant, or a
    /// symlink that leads out of a grant.
    File,
    /// An outgoing HTTP request to a target that is not granted (or resolves to an address that
    /// is not).
    Network,
    /// A raw socket operation.
    Socket,
    /// A name lookup.
    Dns,
    /// More open descriptors or host resources than the call's budget.
    Resources,
    /// More log records or bytes than the call's budget.
    Log,
    /// More progress notifications than the call's budget.
    Progress,
    /// More list-change or resource-update notices than the call's budget.
    Notices,
    /// More guest stdout/stderr records or bytes than the call's budget.
    GuestOutput,
    /// A result larger than the plugin's output limit.
    Output,
    /// Memory beyond the plugin's limit.
    Memory,
}

impl RefusalKind {
    /// Every kind, in a stable order (for counters and reports).
    pub const ALL: [RefusalKind; 11] = [
        RefusalKind::File,
        RefusalKind::Network,
        RefusalKind::Socket,
        RefusalKind::Dns,
        RefusalKind::Resources,
        RefusalKind::Log,
        RefusalKind::Progress,
        RefusalKind::Notices,
        RefusalKind::GuestOutput,
        RefusalKind::Output,
        RefusalKind::Memory,
    ];

    /// The stable name used in log records and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::File => "file",
            RefusalKind::Network => "network",
            RefusalKind::Socket => "socket",
            RefusalKind::Dns => "dns",
            RefusalKind::Resources => "resources",
            RefusalKind::Log => "log",
            RefusalKind::Progress => "progress",
            RefusalKind::Notices => "notices",
            RefusalKind::GuestOutput => "guest-output",
            RefusalKind::Output => "output",
            RefusalKind::Memory => "memory",
        }
    }

    /// Position in `ALL`.
    pub fn index(self) -> usize {
        RefusalKind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

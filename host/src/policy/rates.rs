//! Rate limits as data: how many uses a principal, a principal on one tool, and a plugin (all
//! its callers together) may make, as token buckets with a burst. Tool calls, resource reads,
//! prompt gets and completions are uses; lists, pings and task polls are not.

use std::collections::BTreeMap;
use std::time::Duration;

/// Why a rate does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    #[error("`{0}` is not `N/unit`")]
    NotARate(String),
    #[error("`{0}` is not a whole number")]
    NotANumber(String),
    #[error("a rate of 0 would refuse everything (leave the limit out instead, or deny the tool by policy)")]
    Zero,
    #[error("`{0}` is not a unit (second, minute, hour or day)")]
    NotAUnit(String),
    #[error("a burst of 0 would refuse everything")]
    ZeroBurst,
}

/// A token bucket: `count` uses per `period`, refilled evenly, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub period: Duration,
    pub burst: u32,
}

impl Rate {
    /// Reads `N/second`, `N/minute`, `N/hour` or `N/day` (also `s`, `m`, `h`, `d`); the burst is
    /// `burst`, or `N` itself when not given.
    pub fn parse(text: &str, burst: Option<u32>) -> Result<Rate, RateError> {
        let (count, unit) = text.split_once('/').ok_or_else(|| RateError::NotARate(text.to_owned()))?;
        let count: u32 = count.trim().parse().map_err(|_| RateError::NotANumber(count.trim().to_owned()))?;
        if count == 0 {
            return Err(RateError::Zero);
        }
        let period = match unit.trim() {
            "second" | "s" => Duration::from_secs(1),
            "minute" | "m" => Duration::from_secs(60),
            "hour" | "h" => Duration::from_secs(3600),
            "day" | "d" => Duration::from_secs(86_400),
            other => return Err(RateError::NotAUnit(other.to_owned())),
        };
        let burst = burst.unwrap_or(count);
        if burst == 0 {
            return Err(RateError::ZeroBurst);
        }
        Ok(Rate { count, period, burst })
    }

    /// The time between two uses at the sustained rate.
    pub fn interval(&self) -> Duration {
        (self.period / self.count).max(Duration::from_nanos(1))
    }
}

/// Every rate limit of the server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RateRules {
    /// Each principal, all its uses together.
    pub principal: Option<Rate>,
    /// Each principal on each tool (unless `tools` names the tool).
    pub tool: Option<Rate>,
    /// Each plugin, all its callers together (unless `plugins` names the plugin).
    pub plugin: Option<Rate>,
    /// Each principal on this tool (by exposed name).
    pub tools: BTreeMap<String, Rate>,
    /// This plugin, all its callers together (by plugin id).
    pub plugins: BTreeMap<String, Rate>,
}

impl RateRules {
    /// Whether nothing is limited.
    pub fn is_empty(&self) -> bool {
        self.principal.is_none() && self.tool.is_none() && self.plugin.is_none() && self.tools.is_empty() && self.plugins.is_empty()
    }

    /// The limit of each principal on `tool`.
    pub fn for_tool(&self, tool: &str) -> Option<Rate> {
        self.tools.get(tool).copied().or(self.tool)
    }

    /// The limit of `plugin`, all callers together.
    pub fn for_plugin(&self, plugin: &str) -> Option<Rate> {
        self.plugins.get(plugin).copied().or(self.plugin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_every_unit_and_refuse_what_would_refuse_everything() {
        assert_eq!(Rate::parse("60/minute", None), Ok(Rate { count: 60, period: Duration::from_secs(60), burst: 60 }));
        assert_eq!(Rate::parse("5 / s", Some(2)), Ok(Rate { count: 5, period: Duration::from_secs(1), burst: 2 }));
        assert_eq!(Rate::parse("10/hour", None).map(|r| r.interval()), Ok(Duration::from_secs(360)));
        for bad in ["60", "x/minute", "0/minute", "5/fortnight", "-1/s"] {
            assert!(Rate::parse(bad, None).is_err(), "{bad}");
        }
        assert!(Rate::parse("5/s", Some(0)).is_err());
    }

    #[test]
    fn a_named_tool_or_plugin_has_its_own_limit_and_the_rest_the_default() {
        let one = Rate::parse("1/s", None).expect("rate");
        let two = Rate::parse("2/s", None).expect("rate");
        let rules = RateRules { tool: Some(one), tools: [("slow".to_owned(), two)].into(), ..RateRules::default() };
        assert_eq!(rules.for_tool("slow"), Some(two));
        assert_eq!(rules.for_tool("other"), Some(one));
        assert_eq!(rules.for_plugin("any"), None);
        assert!(!rules.is_empty());
        assert!(RateRules::default().is_empty());
    }
}

//! Cluster-wide rate limits and single-use approvals.
//!
//! A use charges several buckets at once (the principal's on a tool, the principal's, the
//! plugin's) in one script: each is a GCRA "theoretical arrival time" under the store's clock,
//! and either every bucket admits the use and is charged, or none is and the first that refused
//! says when to retry. An approval is spent by `SET … NX` with the expiry of its form.

use std::time::Duration;

use redis::Script;

use super::{Store, StoreError};

/// One bucket: its key (the caller names it; it is hashed into the namespace), its interval
/// between uses and its burst.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub key: String,
    pub interval: Duration,
    pub burst: u32,
}

/// What charging buckets did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charged {
    /// Every bucket admitted the use.
    Admitted,
    /// Bucket `index` refused; nothing was charged; retry after this long.
    Refused { index: usize, retry_after: Duration },
}

const CHARGE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end
  local after = tat + interval
  if after - now > burst * interval then return {i, after - now - burst * interval} end
  next[i] = after
end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, next[i], 'PX', next[i] - now + 1000)
end
return {0, 0}
";

impl Store {
    /// Charges one use to every bucket, or to none.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn charge(&self, buckets: &[Bucket]) -> Result<Charged, StoreError> {
        if buckets.is_empty() {
            return Ok(Charged::Admitted);
        }
        let script = Script::new(CHARGE);
        let mut invocation = script.prepare_invoke();
        for bucket in buckets {
            let digest = blake3::hash(bucket.key.as_bytes());
            invocation.key(self.key(&["rate", &digest.to_hex()[..32]]));
            invocation.arg(bucket.interval.as_millis().max(1) as u64).arg(bucket.burst.max(1));
        }
        let mut connection = self.connection();
        let (index, wait): (i64, i64) = self.call(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(match usize::try_from(index) {
            Ok(0) | Err(_) => Charged::Admitted,
            Ok(index) => Charged::Refused { index: index - 1, retry_after: Duration::from_millis(u64::try_from(wait).unwrap_or(0)) },
        })
    }

    /// Spends approval `nonce`, remembered until `until_ms` (Unix milliseconds): true the first
    /// time, false after.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn spend(&self, nonce: &[u8; 16], until_ms: u64) -> Result<bool, StoreError> {
        let key = self.key(&["spent", &nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()]);
        let mut connection = self.connection();
        let set: Option<String> =
            self.call(async move { redis::cmd("SET").arg(key).arg(1).arg("NX").arg("PXAT").arg(until_ms.max(1)).query_async(&mut connection).await }).await?;
        Ok(set.is_some())
    }
}

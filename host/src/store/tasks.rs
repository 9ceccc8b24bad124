//! 2026-07-28 tasks in the store: one hash per task, expiring with the task, and an index per
//! owner (a sorted set by expiry) for `tasks/list`.
//!
//! A task's fields: `owner` (the principal's id), `plugin`, `status`, `message`, `created`,
//! `updated`, `ttl_ms`, `outcome` (its result or error as JSON), `runner` (the replica running
//! it now; empty while it waits for input), and while it waits: `request:<key>` (each question
//! not answered yet, as the wire shows it), `answer:<key>` (answers received), `deadline` (when
//! the client's answers are due, in Unix milliseconds) and `continuation` (what the next run
//! needs, sealed by the caller). Answer values are never decoded by a script: they are kept as
//! the text the client sent.
//!
//! Each change is one script that checks what it must first: only the task's owner sees, answers
//! or cancels it; only the replica running it writes its progress; a finished task never
//! changes again; and the answers that complete a round hand the task, with its continuation,
//! to exactly one replica (the one whose `tasks/update` completed it).

use std::collections::HashMap;

use redis::Script;

use super::{Store, StoreError};

/// A task as the store holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredTask {
    fields: HashMap<String, String>,
}

impl StoredTask {
    /// A field's value (empty fields read as missing).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The questions not answered yet: key and wire JSON.
    pub fn requests(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().filter_map(|(name, value)| name.strip_prefix("request:").map(|key| (key, value.as_str())))
    }
}

/// The most tasks one owner holds in the store, finished ones included until they expire.
pub const MAX_STORED_PER_OWNER: usize = 1024;

/// What creating a task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Yes,
    /// The id exists already.
    Exists,
    /// The owner holds `MAX_STORED_PER_OWNER` tasks and none has finished.
    Full,
}

/// What cancelling a task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// No such task for this owner.
    Unknown,
    /// It had already ended; it stays as it was.
    AlreadyOver,
    /// Cancelled now; the replica running it is told.
    Now,
}

/// What answers to a task's questions did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// No such task for this owner.
    Unknown,
    /// The task is not waiting for answers (the answers are ignored, as the spec says).
    NotWaiting,
    /// The answers came after the deadline.
    Late,
    /// Taken; other questions are still open.
    Waiting,
    /// The round is complete and this replica runs the next one: its sealed continuation and
    /// every answer (key, JSON text).
    Claimed { continuation: String, answers: Vec<(String, String)> },
}

/// Creates the task unless its id exists; indexes it under its owner. An owner holding
/// `ARGV[3]` tasks gives up the one that expires first among its finished ones, and is refused
/// when every one is unfinished.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  local freed = false
  for _, other in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local status = redis.call('HGET', ARGV[4] .. other, 'status')
    if not status or status == 'completed' or status == 'failed' or status == 'cancelled' then
      redis.call('DEL', ARGV[4] .. other)
      redis.call('ZREM', KEYS[2], other)
      freed = true
      break
    end
  end
  if not freed then return -1 end
end
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], last[2])
return 1
";

/// The running replica writes the task's progress: refused once the task is over or when
/// another replica runs it. ARGV[2] = '1' clears the questions and answers of the last round.
const WRITE: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'runner')
if not st[1] then return -1 end
if st[1] == 'completed' or st[1] == 'failed' or st[1] == 'cancelled' then return 0 end
if st[2] ~= ARGV[1] then return 0 end
if ARGV[2] == '1' then
  local names = redis.call('HKEYS', KEYS[1])
  for _, name in ipairs(names) do
    if string.sub(name, 1, 8) == 'request:' or string.sub(name, 1, 7) == 'answer:' then redis.call('HDEL', KEYS[1], name) end
  end
  redis.call('HDEL', KEYS[1], 'continuation', 'deadline')
end
if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
return 1
";

/// The owner cancels: refused for another owner, a no-op once over; the runner is told.
const CANCEL: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not st[1] or st[2] ~= ARGV[1] then return -1 end
if st[1] == 'completed' or st[1] == 'failed' or st[1] == 'cancelled' then return 0 end
local names = redis.call('HKEYS', KEYS[1])
for _, name in ipairs(names) do
  if string.sub(name, 1, 8) == 'request:' or string.sub(name, 1, 7) == 'answer:' then redis.call('HDEL', KEYS[1], name) end
end
redis.call('HDEL', KEYS[1], 'continuation', 'deadline')
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'message', ARGV[2], 'updated', ARGV[3], 'runner', '')
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
";

/// The owner answers: answers to open questions are kept; the answers that close the last one
/// claim the task for this replica and hand over its continuation and every answer.
const ANSWER: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'owner', 'deadline')
if not st[1] or st[2] ~= ARGV[1] then return {-1} end
if st[1] ~= 'input_required' then return {0} end
if tonumber(st[3] or '0') < tonumber(ARGV[3]) then return {-2} end
for i = 5, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], 'request:' .. ARGV[i]) == 1 then
    redis.call('HDEL', KEYS[1], 'request:' .. ARGV[i])
    redis.call('HSET', KEYS[1], 'answer:' .. ARGV[i], ARGV[i + 1])
  end
end
local names = redis.call('HKEYS', KEYS[1])
local answers = {}
for _, name in ipairs(names) do
  if string.sub(name, 1, 8) == 'request:' then
    redis.call('HSET', KEYS[1], 'updated', ARGV[4])
    return {1}
  end
end
for _, name in ipairs(names) do
  if string.sub(name, 1, 7) == 'answer:' then
    table.insert(answers, string.sub(name, 8))
    table.insert(answers, redis.call('HGET', KEYS[1], name))
    redis.call('HDEL', KEYS[1], name)
  end
end
local continuation = redis.call('HGET', KEYS[1], 'continuation') or ''
redis.call('HDEL', KEYS[1], 'continuation', 'deadline')
redis.call('HSET', KEYS[1], 'status', 'working', 'message', '', 'runner', ARGV[2], 'updated', ARGV[4])
return {2, continuation, unpack(answers)}
";

/// The running replica hands a task over (it is shutting down): its round's continuation is
/// kept, nobody runs it, and it is listed among the orphans every replica is told of.
const HAND_OVER: &str = r"
local st = redis.call('HMGET', KEYS[1], 'status', 'runner')
if not st[1] or st[2] ~= ARGV[1] then return 0 end
if st[1] ~= 'working' then return 0 end
redis.call('HSET', KEYS[1], 'runner', '', 'continuation', ARGV[2], 'updated', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[5])
return 1
";

/// A replica claims an orphan: exactly one does, and only while nobody runs it.
const CLAIM: &str = r"
redis.call('ZREM', KEYS[2], ARGV[2])
local st = redis.call('HMGET', KEYS[1], 'status', 'runner', 'continuation')
if not st[1] or st[1] ~= 'working' or (st[2] and st[2] ~= '') or not st[3] then return false end
redis.call('HDEL', KEYS[1], 'continuation')
redis.call('HSET', KEYS[1], 'runner', ARGV[1], 'updated', ARGV[3])
return st[3]
";

impl Store {
    fn orphans_key(&self) -> String {
        self.key(&["orphans"])
    }

    /// The channel hand-overs are published on.
    pub(super) fn orphan_channel(&self) -> String {
        self.key(&["orphaned"])
    }

    /// Replica `me`, which runs task `id`, hands it over with its round's `continuation`; the
    /// orphan is listed until `expires_at_ms`. False when `me` does not run it (or it is over).
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn hand_over_task(&self, id: &str, me: &str, continuation: &str, updated: &str, expires_at_ms: u64) -> Result<bool, StoreError> {
        let script = Script::new(HAND_OVER);
        let mut invocation = script.key(self.task_key(id));
        invocation.key(self.orphans_key()).arg(me).arg(continuation).arg(updated).arg(expires_at_ms).arg(id).arg(self.orphan_channel());
        let mut connection = self.connection();
        let handed: i64 = self.call(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(handed == 1)
    }

    /// The orphans waiting for a replica (at most `at_most`, the oldest first).
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn orphans(&self, at_most: usize) -> Result<Vec<String>, StoreError> {
        let key = self.orphans_key();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut connection = self.connection();
        self.call(async move {
            redis::cmd("ZREMRANGEBYSCORE").arg(&key).arg("-inf").arg(now).query_async::<i64>(&mut connection).await?;
            redis::cmd("ZRANGE").arg(&key).arg(0).arg(at_most.saturating_sub(1)).query_async(&mut connection).await
        })
        .await
    }

    /// Replica `me` claims orphan `id`: its continuation, or `None` when another replica took it
    /// first (or it ended).
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn claim_orphan(&self, id: &str, me: &str, updated: &str) -> Result<Option<String>, StoreError> {
        let script = Script::new(CLAIM);
        let mut invocation = script.key(self.task_key(id));
        invocation.key(self.orphans_key()).arg(me).arg(id).arg(updated);
        let mut connection = self.connection();
        self.call(async move { invocation.invoke_async(&mut connection).await }).await
    }

    fn task_key(&self, id: &str) -> String {
        self.key(&["task", id])
    }

    fn owner_key(&self, owner: &str) -> String {
        let digest = blake3::hash(owner.as_bytes());
        self.key(&["owner", &digest.to_hex()[..32]])
    }

    /// The channel cancellations are published on.
    pub(super) fn cancel_channel(&self) -> String {
        self.key(&["cancel"])
    }

    /// Creates task `id` of `owner`, kept until `expires_at_ms` (Unix milliseconds), with `fields`
    /// (`owner` among them). An owner holds at most `MAX_STORED_PER_OWNER` tasks: past it, its
    /// finished task that expires first is given up, and if none is finished it is refused.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn create_task(&self, id: &str, owner: &str, expires_at_ms: u64, fields: &[(&str, String)]) -> Result<Created, StoreError> {
        let script = Script::new(CREATE);
        let mut invocation = script.key(self.task_key(id));
        invocation.key(self.owner_key(owner)).arg(expires_at_ms).arg(id).arg(MAX_STORED_PER_OWNER).arg(self.task_key(""));
        for (name, value) in fields {
            invocation.arg(*name).arg(value);
        }
        let mut connection = self.connection();
        let created: i64 = self.call(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(match created {
            1 => Created::Yes,
            0 => Created::Exists,
            _ => Created::Full,
        })
    }

    /// Writes the progress of task `id`, which replica `runner` runs: `fields` replace theirs,
    /// and with `new_round` the last round's questions and answers are cleared first. False
    /// when the task is over, gone, or run by another replica.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn write_task(&self, id: &str, runner: &str, new_round: bool, fields: &[(String, String)]) -> Result<bool, StoreError> {
        let script = Script::new(WRITE);
        let mut invocation = script.key(self.task_key(id));
        invocation.arg(runner).arg(if new_round { "1" } else { "0" });
        for (name, value) in fields {
            invocation.arg(name).arg(value);
        }
        let mut connection = self.connection();
        let written: i64 = self.call(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(written == 1)
    }

    /// Task `id`, if it exists.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn task(&self, id: &str) -> Result<Option<StoredTask>, StoreError> {
        let key = self.task_key(id);
        let mut connection = self.connection();
        let fields: HashMap<String, String> = self.call(async move { redis::cmd("HGETALL").arg(key).query_async(&mut connection).await }).await?;
        Ok((!fields.is_empty()).then_some(StoredTask { fields }))
    }

    /// Every task of `owner` that has not expired, with its id.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn tasks_of(&self, owner: &str, at_most: usize) -> Result<Vec<(String, StoredTask)>, StoreError> {
        let index = self.owner_key(owner);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let mut connection = self.connection();
        let ids: Vec<String> = self
            .call(
                async move { redis::cmd("ZRANGEBYSCORE").arg(&index).arg(now).arg("+inf").arg("LIMIT").arg(0).arg(at_most).query_async(&mut connection).await },
            )
            .await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HGETALL").arg(self.task_key(id));
        }
        let mut connection = self.connection();
        let all: Vec<HashMap<String, String>> = self.call(async move { pipe.query_async(&mut connection).await }).await?;
        Ok(ids
            .into_iter()
            .zip(all)
            .filter(|(_, fields)| fields.get("owner").map(String::as_str) == Some(owner))
            .map(|(id, fields)| (id, StoredTask { fields }))
            .collect())
    }

    /// `owner` cancels task `id` with `message` at `updated` (RFC 3339).
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn cancel_task(&self, id: &str, owner: &str, message: &str, updated: &str) -> Result<Cancelled, StoreError> {
        let script = Script::new(CANCEL);
        let mut invocation = script.key(self.task_key(id));
        invocation.arg(owner).arg(message).arg(updated).arg(self.cancel_channel()).arg(id);
        let mut connection = self.connection();
        let outcome: i64 = self.call(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(match outcome {
            1 => Cancelled::Now,
            0 => Cancelled::AlreadyOver,
            _ => Cancelled::Unknown,
        })
    }

    /// `owner` answers task `id`'s questions (key and JSON text each); `me` claims the task if
    /// the answers complete the round. `now_ms` is checked against the deadline.
    ///
    /// # Errors
    /// The store is unavailable.
    pub async fn answer_task(&self, id: &str, owner: &str, me: &str, now_ms: u64, updated: &str, answers: &[(String, String)]) -> Result<Answered, StoreError> {
        let script = Script::new(ANSWER);
        let mut invocation = script.key(self.task_key(id));
        invocation.arg(owner).arg(me).arg(now_ms).arg(updated);
        for (key, value) in answers {
            invocation.arg(key).arg(value);
        }
        let mut connection = self.connection();
        let reply: Vec<redis::Value> = self.call(async move { invocation.invoke_async(&mut connection).await }).await?;
        let text = |value: &redis::Value| match value {
            redis::Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            redis::Value::SimpleString(s) => s.clone(),
            _ => String::new(),
        };
        let code = match reply.first() {
            Some(redis::Value::Int(code)) => *code,
            _ => return Err(StoreError::Unavailable(self.shown.clone(), "an unexpected answer to a task update".to_owned())),
        };
        Ok(match code {
            2 => {
                let continuation = reply.get(1).map(text).unwrap_or_default();
                let answers = reply[2..].chunks(2).filter_map(|pair| Some((text(pair.first()?), text(pair.get(1)?)))).collect();
                Answered::Claimed { continuation, answers }
            }
            1 => Answered::Waiting,
            0 => Answered::NotWaiting,
            -2 => Answered::Late,
            _ => Answered::Unknown,
        })
    }
}

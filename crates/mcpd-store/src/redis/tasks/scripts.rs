//! The Lua scripts that change a task record, each over the record's one
//! hash (so each step is atomic on a single node and on a cluster alike).
//! They never decode the payloads.

/// Adds a task to its quota's index and makes the index expire with its
/// latest member. KEYS: the zset; ARGV: expiry, id.
pub(super) const INDEX: &str = r#"
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', tonumber(top[2])))
return 1
"#;

/// ARGV: key, request, now. Returns `asked`, `reused` or `over`.
pub(super) const ASK: &str = r#"
local k = KEYS[1]
local st = redis.call('HGET', k, 'status')
if not st or st == 'completed' or st == 'failed' or st == 'cancelled' then
  return 'over'
end
if redis.call('HEXISTS', k, 'u:' .. ARGV[1]) == 1 then
  return 'reused'
end
redis.call('HSET', k, 'q:' .. ARGV[1], ARGV[2], 'u:' .. ARGV[1], '1',
  'status', 'input_required', 'upd', ARGV[3])
return 'asked'
"#;

/// ARGV: now, then key, answer pairs. Returns nil (no such task) or
/// `{accepted, runner}`.
pub(super) const ANSWER: &str = r#"
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then
  return false
end
local n = 0
for i = 2, #ARGV - 1, 2 do
  local q = 'q:' .. ARGV[i]
  if redis.call('HEXISTS', k, q) == 1 then
    redis.call('HDEL', k, q)
    redis.call('HSET', k, 'a:' .. ARGV[i], ARGV[i + 1])
    n = n + 1
  end
end
if n > 0 then
  redis.call('HSET', k, 'upd', ARGV[1])
  if redis.call('HGET', k, 'status') == 'input_required' then
    local left = false
    for _, f in ipairs(redis.call('HKEYS', k)) do
      if string.sub(f, 1, 2) == 'q:' then
        left = true
        break
      end
    end
    if not left then
      redis.call('HSET', k, 'status', 'working')
    end
  end
end
return {n, redis.call('HGET', k, 'runner') or ''}
"#;

/// Returns the delivered answers as key, answer pairs, and removes them.
pub(super) const TAKE: &str = r#"
local k = KEYS[1]
local all = redis.call('HGETALL', k)
local out = {}
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, 1, 2) == 'a:' then
    out[#out + 1] = string.sub(f, 3)
    out[#out + 1] = all[i + 1]
    redis.call('HDEL', k, f)
  end
end
return out
"#;

/// ARGV: status, now, keep until, has message (`1`/`0`), message, has
/// outcome, outcome. Returns `{0}` (no such task), `{0, runner, quota}`
/// (already ended) or `{1, runner, quota}`.
pub(super) const FINISH: &str = r#"
local k = KEYS[1]
local st = redis.call('HGET', k, 'status')
if not st then
  return {0}
end
local runner = redis.call('HGET', k, 'runner') or ''
local quota = redis.call('HGET', k, 'quota') or ''
if st == 'completed' or st == 'failed' or st == 'cancelled' then
  return {0, runner, quota}
end
local created = tonumber(redis.call('HGET', k, 'created') or '')
local ttl = tonumber(redis.call('HGET', k, 'ttl') or '')
if not created or not ttl then
  return redis.error_reply('malformed task record: created or ttl is not a number')
end
redis.call('HSET', k, 'status', ARGV[1], 'upd', ARGV[2])
if ARGV[4] == '1' then
  redis.call('HSET', k, 'msg', ARGV[5])
else
  redis.call('HDEL', k, 'msg')
end
if ARGV[6] == '1' then
  redis.call('HSET', k, 'out', ARGV[7])
else
  redis.call('HDEL', k, 'out')
end
for _, f in ipairs(redis.call('HKEYS', k)) do
  local p = string.sub(f, 1, 2)
  if p == 'q:' or p == 'a:' then
    redis.call('HDEL', k, f)
  end
end
local keep = tonumber(ARGV[3])
if keep > created + ttl then
  redis.call('PEXPIREAT', k, ARGV[3])
  redis.call('HSET', k, 'ttl', string.format('%.0f', keep - created))
end
return {1, runner, quota}
"#;

/// ARGV: now. Returns `{'unknown'}`, `{'terminal'}` or
/// `{'requested', runner}`.
pub(super) const CANCEL: &str = r#"
local k = KEYS[1]
local st = redis.call('HGET', k, 'status')
if not st then
  return {'unknown'}
end
if st == 'completed' or st == 'failed' or st == 'cancelled' then
  return {'terminal'}
end
redis.call('HSET', k, 'cancel', '1', 'upd', ARGV[1])
return {'requested', redis.call('HGET', k, 'runner') or ''}
"#;

/// `EVAL` of `body` over the one key `key`; the caller adds the arguments.
pub(super) fn script(body: &str, key: String) -> redis::Cmd {
    let mut c = redis::cmd("EVAL");
    c.arg(body).arg(1).arg(key);
    c
}

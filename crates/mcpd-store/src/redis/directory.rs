//! [`SessionDirectory`] on plain keys: the session record with a sliding
//! TTL, and its removal (with a tombstone).

use async_trait::async_trait;
use bytes::Bytes;

use super::store::{millis, RedisStore};
use crate::bus::OwnerChange;
use crate::directory::{Removed, SessionDirectory, Touch};
use crate::error::StoreError;
use crate::id::{Owned, ReplicaId, SessionId, HOLDER_PREFIX};

/// Removes a session. KEYS: record, ownership hash, streams index,
/// tombstone; ARGV: the streams' key prefix, the tombstone's time to live,
/// the holder fields' prefix. Returns the holders recorded. Streams are
/// deleted a thousand keys per `DEL` (Lua's stack bounds `unpack`).
const REMOVE: &str = r#"
local holders = {}
local hp = ARGV[3]
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  if string.sub(f, 1, #hp) == hp then
    table.insert(holders, string.sub(f, #hp + 1))
  end
end
local keys = {KEYS[1], KEYS[2], KEYS[3]}
for _, s in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  table.insert(keys, ARGV[1] .. s)
  if #keys == 1000 then
    redis.call('DEL', unpack(keys))
    keys = {}
  end
end
if #keys > 0 then
  redis.call('DEL', unpack(keys))
end
redis.call('SET', KEYS[4], 1, 'PX', ARGV[2])
return holders
"#;

#[async_trait]
impl SessionDirectory for RedisStore {
    async fn put(&self, session: &SessionId, record: Bytes) -> Result<(), StoreError> {
        let key = self.key(session, "s");
        let ttl = millis(self.cfg.session_ttl);
        self.run(|mut h| async move {
            redis::cmd("SET")
                .arg(&key)
                .arg(record.as_ref())
                .arg("PX")
                .arg(ttl)
                .query_async::<()>(&mut h)
                .await
        })
        .await
    }

    /// The record and the holder's ownership entry in one pipeline.
    async fn create(
        &self,
        session: &SessionId,
        record: Bytes,
        holder: Option<&ReplicaId>,
    ) -> Result<(), StoreError> {
        let ttl = millis(self.cfg.session_ttl);
        let mut p = redis::pipe();
        p.cmd("SET")
            .arg(self.key(session, "s"))
            .arg(record.as_ref())
            .arg("PX")
            .arg(ttl);
        if let Some(r) = holder {
            let change = OwnerChange {
                what: Owned::Holder(r.clone()),
                owner: Some(r.clone()),
            };
            self.push_owners(&mut p, session, std::slice::from_ref(&change));
        }
        self.run(|mut h| async move { p.query_async::<()>(&mut h).await })
            .await
    }

    async fn get(&self, session: &SessionId) -> Result<Option<Bytes>, StoreError> {
        let key = self.key(session, "s");
        let ttl = millis(self.cfg.session_ttl);
        let mut p = redis::pipe();
        p.cmd("GET").arg(&key).cmd("PEXPIRE").arg(&key).arg(ttl);
        let (v, _): (Option<Vec<u8>>, redis::Value) = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        Ok(v.map(Bytes::from))
    }

    async fn touch(&self, session: &SessionId) -> Result<Touch, StoreError> {
        let (key, tomb) = (self.key(session, "s"), self.key(session, "deleted"));
        let ttl = millis(self.cfg.session_ttl);
        let mut p = redis::pipe();
        p.cmd("PEXPIRE").arg(&key).arg(ttl).cmd("EXISTS").arg(&tomb);
        let (alive, deleted): (bool, bool) = self
            .run(|mut h| async move { p.query_async(&mut h).await })
            .await?;
        Ok(match (alive, deleted) {
            (_, true) => Touch::Deleted,
            (true, false) => Touch::Alive,
            (false, false) => Touch::Lost,
        })
    }

    /// One script (every key is under the session's hash tag): reads the
    /// holders, deletes the record, the ownership entries, the event
    /// streams and their index, and leaves a tombstone so no holder
    /// mistakes the deletion for lost data.
    async fn remove(&self, session: &SessionId) -> Result<Removed, StoreError> {
        let mut c = redis::cmd("EVAL");
        c.arg(REMOVE)
            .arg(4)
            .arg(self.key(session, "s"))
            .arg(self.key(session, "own"))
            .arg(self.key(session, "streams"))
            .arg(self.key(session, "deleted"))
            .arg(self.key(session, "e:"))
            .arg(millis(self.cfg.session_ttl))
            .arg(HOLDER_PREFIX);
        let holders: Vec<String> = self
            .run(|mut h| async move { c.query_async(&mut h).await })
            .await?;
        Ok(Removed {
            holders: holders.into_iter().map(ReplicaId::from).collect(),
            streams_removed: true,
        })
    }
}

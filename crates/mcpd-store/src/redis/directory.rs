//! [`SessionDirectory`] on plain keys: the session record with a sliding
//! TTL, and its removal (with a tombstone).

use async_trait::async_trait;
use bytes::Bytes;

use super::store::{millis, RedisStore};
use crate::directory::{SessionDirectory, Touch};
use crate::error::StoreError;
use crate::id::SessionId;

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

    async fn get(&self, session: &SessionId) -> Result<Option<Bytes>, StoreError> {
        let key = self.key(session, "s");
        let ttl = millis(self.cfg.session_ttl);
        let mut p = redis::pipe();
        p.cmd("GET")
            .arg(&key)
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(ttl)
            .ignore();
        let (v,): (Option<Vec<u8>>,) = self
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

    /// Deletes the record and the ownership entries, and leaves a
    /// tombstone (the streams are the event log's: `remove_session`).
    async fn remove(&self, session: &SessionId) -> Result<(), StoreError> {
        let mut p = redis::pipe();
        p.cmd("DEL")
            .arg(self.key(session, "s"))
            .arg(self.key(session, "own"))
            .ignore();
        // A tombstone, so no holder mistakes the deletion for lost data.
        p.cmd("SET")
            .arg(self.key(session, "deleted"))
            .arg(1)
            .arg("PX")
            .arg(millis(self.cfg.session_ttl))
            .ignore();
        self.run(|mut h| async move { p.query_async::<()>(&mut h).await })
            .await
    }
}

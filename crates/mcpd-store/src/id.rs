//! The ids mcpd keys its state by, each its own type, so that one cannot be
//! passed where another is meant (`wake(session, replica, stream)` does not
//! compile with two of them swapped), and [`Owned`]: what a replica records
//! itself as the owner of, in place of the strings the store keys by.
//!
//! Every id is a cheap clone (`Arc<str>`), reads as a `&str` (`Deref`), and
//! goes on the wire and into the store as the plain string.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use mcpd_protocol::RequestId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            pub fn new(id: impl Into<Arc<str>>) -> Self {
                Self(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The shared string, for maps keyed by `Arc<str>`.
            pub fn as_arc(&self) -> &Arc<str> {
                &self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(Arc::from(s))
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(Arc::from(s))
            }
        }

        impl From<Arc<str>> for $name {
            fn from(s: Arc<str>) -> Self {
                Self(s)
            }
        }

        impl From<&$name> for $name {
            fn from(s: &$name) -> Self {
                s.clone()
            }
        }

        impl From<&Arc<str>> for $name {
            fn from(s: &Arc<str>) -> Self {
                Self(s.clone())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        #[cfg(feature = "redis")]
        impl redis::ToRedisArgs for $name {
            fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
                out.write_arg(self.0.as_bytes())
            }
        }

        #[cfg(feature = "redis")]
        impl redis::ToSingleRedisArg for $name {}

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d).map(Self::from)
            }
        }
    };
}

id_type!(
    /// A session's id: what `Mcp-Session-Id` carries.
    SessionId
);
id_type!(
    /// One SSE stream of a session: a POST stream (its id chosen by the
    /// session), the standalone GET stream ([`StreamId::get`]) or the
    /// 2024-11-05 transport's one connection ([`StreamId::connection`]).
    StreamId
);
id_type!(
    /// One mcpd process, unique per start (another start is another replica).
    ReplicaId
);
id_type!(
    /// A task of the Tasks extension.
    TaskId
);

impl StreamId {
    /// The session's standalone GET stream.
    pub fn get() -> Self {
        Self::from("g")
    }

    /// The 2024-11-05 transport's one connection.
    pub fn connection() -> Self {
        Self::from("c")
    }

    pub fn is_get(&self) -> bool {
        &*self.0 == "g"
    }

    pub fn is_connection(&self) -> bool {
        &*self.0 == "c"
    }
}

/// What a replica records itself as owning of a session (the store keeps
/// one owner per thing).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owned {
    /// The replica holds an actor of the session.
    Holder(ReplicaId),
    /// The replica holds the session's GET connection.
    Get,
    /// The replica runs this client request of the session.
    Request(RequestId),
}

/// The prefix of a holder's field: [`Owned::Holder`] is `h:<replica>`.
pub(crate) const HOLDER_PREFIX: &str = "h:";

impl Owned {
    /// The field the store keeps the owner under.
    pub fn key(&self) -> String {
        match self {
            Owned::Holder(r) => format!("{HOLDER_PREFIX}{r}"),
            Owned::Get => "g".to_owned(),
            Owned::Request(RequestId::Int(n)) => {
                let mut k = String::from("r:");
                k.push_str(itoa::Buffer::new().format(*n));
                k
            }
            Owned::Request(id) => {
                format!("r:{}", serde_json::to_string(id).unwrap_or_default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_owned_thing_has_its_own_field() {
        let r = ReplicaId::from("abc");
        let keys = [
            Owned::Holder(r).key(),
            Owned::Get.key(),
            Owned::Request(RequestId::Int(7)).key(),
            Owned::Request(RequestId::Str("7".into())).key(),
        ];
        assert_eq!(keys, ["h:abc", "g", "r:7", "r:\"7\""]);
    }

    #[test]
    fn ids_go_on_the_wire_as_plain_strings() {
        let s = SessionId::from("f00");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"f00\"");
        let back: SessionId = serde_json::from_str("\"f00\"").unwrap();
        assert_eq!(back, s);
        assert_eq!(format!("{s} {s:?}"), "f00 \"f00\"");
    }
}

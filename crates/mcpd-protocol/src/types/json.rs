//! The JSON object alias the topic files share. A leaf module of its own so
//! they import it from here rather than from `types`, which re-exports them.

use serde_json::{Map, Value};

/// A JSON object: `params`, `_meta`, capability maps, tool arguments.
pub type JsonObject = Map<String, Value>;

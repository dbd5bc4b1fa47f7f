//! What an upstream sends, as typed messages: the one place a link's JSON
//! becomes `mcpd_protocol`'s `Message`, shared by both transports.

use mcpd_protocol::jsonrpc::{Message, Response};
use mcpd_protocol::{ErrorObject, RequestId};
use serde_json::Value;

/// One JSON text from the upstream as messages (a batch is split). What is
/// not JSON-RPC is dropped with a warning, except an answer that names one
/// of our ids: it still answers that request, with an error, so its caller
/// does not wait out its timeout.
pub fn read(upstream: &str, json: Value) -> Vec<Message> {
    let items = match json {
        Value::Array(batch) => batch,
        one => vec![one],
    };
    items
        .into_iter()
        .filter_map(|v| read_one(upstream, v))
        .collect()
}

fn read_one(upstream: &str, v: Value) -> Option<Message> {
    let answers = match v.get("method") {
        None => v.get("id").and_then(Value::as_i64),
        Some(_) => None,
    };
    match Message::from_value(v) {
        Ok(m) => Some(m),
        Err(e) => match answers {
            Some(id) => Some(Message::Response(Response {
                id: RequestId::Int(id),
                outcome: Err(ErrorObject::internal(format!(
                    "upstream '{upstream}' sent a malformed response: {e}"
                ))),
            })),
            None => {
                tracing::warn!(upstream, "not JSON-RPC, ignored: {e}");
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn batches_are_split_and_strays_dropped() {
        let got = read(
            "up",
            json!([
                {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}},
                {"jsonrpc":"2.0","id":3,"result":{}},
                {"no":"thing"}
            ]),
        );
        assert_eq!(got.len(), 2);
        assert!(matches!(&got[1], Message::Response(r) if r.outcome.is_ok()));
    }

    #[test]
    fn a_malformed_answer_still_fails_its_request() {
        for bad in [
            json!({"jsonrpc":"2.0","id":4,"error":{"code":"x"}}),
            json!({"jsonrpc":"2.0","id":4}),
        ] {
            let got = read("up", bad);
            let [Message::Response(r)] = &got[..] else {
                panic!("{got:?}")
            };
            assert_eq!(r.id, RequestId::Int(4));
            assert!(r.outcome.as_ref().unwrap_err().message.contains("'up'"));
        }
    }
}

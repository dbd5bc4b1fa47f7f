//! Pages of a list (`tools/list`, `resources/list`, …, `skills/list`): opaque
//! cursors that name the kind of list and an offset.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use mcpd_protocol::ErrorObject;

/// Cuts one page out of `items`. Cursors are opaque to clients but checked
/// here: a cursor from another list, out of range or not ours is `-32602`.
pub fn page<T>(
    kind: &str,
    items: Vec<T>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => decode_cursor(kind, c)
            .filter(|&o| o <= items.len())
            .ok_or_else(|| {
                ErrorObject::invalid_params(format!(
                    "Invalid cursor {c:?}: use a nextCursor this server returned for {kind}"
                ))
            })?,
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(kind, end));
    Ok((
        items.into_iter().skip(start).take(end - start).collect(),
        next,
    ))
}

fn encode_cursor(kind: &str, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("mcpd1:{kind}:{offset}"))
}

fn decode_cursor(kind: &str, cursor: &str) -> Option<usize> {
    let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).ok()?).ok()?;
    let rest = raw
        .strip_prefix("mcpd1:")?
        .strip_prefix(kind)?
        .strip_prefix(':')?;
    rest.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_cursors_without_duplicates() {
        let items: Vec<u32> = (0..7).collect();
        let (p1, c1) = page("t", items.clone(), None, 3).unwrap();
        let (p2, c2) = page("t", items.clone(), c1.as_deref(), 3).unwrap();
        let (p3, c3) = page("t", items.clone(), c2.as_deref(), 3).unwrap();
        assert_eq!([p1, p2, p3].concat(), items);
        assert!(c3.is_none());
    }

    #[test]
    fn foreign_or_garbage_cursors_are_invalid_params() {
        let items: Vec<u32> = (0..7).collect();
        for bad in [
            "garbage",
            "",
            &encode_cursor("other", 1),
            &encode_cursor("t", 99),
        ] {
            let e = page("t", items.clone(), Some(bad), 3).unwrap_err();
            assert_eq!(e.code, mcpd_protocol::ErrorCode::INVALID_PARAMS, "{bad}");
        }
    }
}

//! JSON as Cedar values, never through Cedar's JSON format (whose
//! `__entity` / `__extn` objects a client could forge, and which refuses
//! `null` and fractions): a token's claims as sets of strings, a call's
//! arguments as strings.

use cedar_policy::RestrictedExpression;
use serde_json::{Map, Value};

/// A claim as a set of strings: a string is a set of one; numbers and
/// booleans are their JSON text; an array is its scalar elements; objects
/// and `null` are left out (`None`).
pub(crate) fn claim(v: &Value) -> Option<RestrictedExpression> {
    let items: Vec<String> = match v {
        Value::Array(a) => a.iter().filter_map(scalar).collect(),
        other => vec![scalar(other)?],
    };
    Some(RestrictedExpression::new_set(
        items.into_iter().map(RestrictedExpression::new_string),
    ))
}

/// A string as itself, a number or boolean as its JSON text.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        _ => None,
    }
}

/// Each argument as a string: a string as itself, anything else as its
/// JSON text.
pub(crate) fn arguments(
    args: Option<&Map<String, Value>>,
) -> impl Iterator<Item = (String, RestrictedExpression)> + '_ {
    args.into_iter().flatten().map(|(k, v)| {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        (k.clone(), RestrictedExpression::new_string(text))
    })
}

/// The set of `items` as Cedar strings.
pub(crate) fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> RestrictedExpression {
    RestrictedExpression::new_set(
        items
            .into_iter()
            .map(|s| RestrictedExpression::new_string(s.clone())),
    )
}

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

/// The arguments `wanted` names, each as a string ([`text`]).
pub(crate) fn arguments<'a>(
    args: Option<&'a Map<String, Value>>,
    wanted: impl Fn(&str) -> bool + 'a,
) -> impl Iterator<Item = (String, RestrictedExpression)> + 'a {
    args.into_iter()
        .flatten()
        .filter(move |(k, _)| wanted(k))
        .map(|(k, v)| {
            (
                k.clone(),
                RestrictedExpression::new_string(text(v).into_owned()),
            )
        })
}

/// A value as a string: a string as itself, anything else as its JSON
/// text.
pub(crate) fn text(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => s.into(),
        other => other.to_string().into(),
    }
}

/// The set of `items` as Cedar strings.
pub(crate) fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> RestrictedExpression {
    RestrictedExpression::new_set(
        items
            .into_iter()
            .map(|s| RestrictedExpression::new_string(s.clone())),
    )
}

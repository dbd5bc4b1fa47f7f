//! What a tool function may return: anything that turns into a
//! `tools/call` result ([`IntoToolResult`]). `#[mcpd::tool]` converts the
//! function's return value with it, so a tool returns a `String`, a
//! number, [`Content`], [`Json<T>`] (structured content, with `T`'s JSON
//! Schema as the tool's output schema), a [`CallToolResult`], or a
//! `Result` of any of these whose error becomes a tool error.

use mcpd_protocol::types::{CallToolResult, Content, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;

use crate::handler::{schema_for, structured, ToolError};

/// A value a tool returns, turned into its result.
pub trait IntoToolResult {
    /// The result the client gets.
    fn into_tool_result(self) -> Result<CallToolResult, ToolError>;

    /// The output schema this return type declares (`None`: unstructured).
    fn output_schema() -> Option<JsonObject> {
        None
    }
}

/// Structured content: `T` serialised as the result's `structuredContent`
/// (and as its text, for clients that read only content), and `T`'s JSON
/// Schema as the tool's `outputSchema`. `T` should be a struct: an output
/// schema describes an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        structured(&self.0)
    }

    fn output_schema() -> Option<JsonObject> {
        Some(schema_for::<T>())
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult {
            content: vec![self],
            structured_content: None,
            is_error: None,
        })
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult {
            content: self,
            structured_content: None,
            is_error: None,
        })
    }
}

/// No content: the call succeeded and has nothing to say.
impl IntoToolResult for () {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult {
            content: Vec::new(),
            structured_content: None,
            is_error: None,
        })
    }
}

macro_rules! as_text {
    ($($t:ty),*) => {$(
        /// Its text (`42`, `true`).
        impl IntoToolResult for $t {
            fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
                Ok(CallToolResult::text(self.to_string()))
            }
        }
    )*};
}
as_text!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool, char);

/// `Err` is the tool's error as it is (`InvalidArguments`, `Failed`, or
/// a protocol error). Other error types: `#[mcpd::tool]` turns any error
/// that is `Display` into a failed call (an `isError` result whose text
/// is the error's).
impl<T: IntoToolResult> IntoToolResult for Result<T, ToolError> {
    fn into_tool_result(self) -> Result<CallToolResult, ToolError> {
        self.and_then(T::into_tool_result)
    }

    fn output_schema() -> Option<JsonObject> {
        T::output_schema()
    }
}

/// For `#[mcpd::tool]`'s expansion: an error of any type becomes a
/// [`ToolError`], a `ToolError` staying what it is (autoref dispatch: the
/// first trait whose receiver matches wins).
#[doc(hidden)]
pub mod failure {
    use std::cell::Cell;
    use std::fmt::Display;

    use super::ToolError;

    /// The error, taken once by whichever trait applies.
    pub struct Failure<E>(Cell<Option<E>>);

    impl<E> Failure<E> {
        pub fn new(e: E) -> Self {
            Self(Cell::new(Some(e)))
        }

        fn take(&self) -> E {
            self.0.take().expect("a failure is converted once")
        }
    }

    /// A `ToolError` as it is. Called as `(&&Failure::new(e)).tool_error()`:
    /// a receiver of type `&&Failure<ToolError>` matches this impl before
    /// method lookup dereferences it to reach [`ByDisplay`]'s.
    pub trait AsIs {
        fn tool_error(self) -> ToolError;
    }

    impl AsIs for &&Failure<ToolError> {
        fn tool_error(self) -> ToolError {
            self.take()
        }
    }

    /// Any other error: a failed call saying what the error says.
    pub trait ByDisplay {
        fn tool_error(self) -> ToolError;
    }

    impl<E: Display> ByDisplay for &Failure<E> {
        fn tool_error(self) -> ToolError {
            ToolError::Failed(self.take().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::failure::{AsIs, ByDisplay, Failure};
    use super::*;

    #[derive(Serialize, JsonSchema)]
    struct Sum {
        total: i64,
    }

    #[test]
    fn plain_values_become_text_and_json_becomes_structured_content() {
        let text = |r: Result<CallToolResult, ToolError>| {
            serde_json::to_value(r.unwrap()).unwrap()["content"][0]["text"].clone()
        };
        assert_eq!(text("hi".into_tool_result()), "hi");
        assert_eq!(text(42i64.into_tool_result()), "42");
        assert_eq!(text(true.into_tool_result()), "true");
        let r = Json(Sum { total: 3 }).into_tool_result().unwrap();
        assert_eq!(r.structured_content, Some(serde_json::json!({"total": 3})));
        let schema = <Json<Sum>>::output_schema().unwrap();
        assert_eq!(schema["properties"]["total"]["type"], "integer");
        assert_eq!(
            <Result<Json<Sum>, ToolError>>::output_schema(),
            Some(schema)
        );
        assert_eq!(String::output_schema(), None);
        assert!(().into_tool_result().unwrap().content.is_empty());
    }

    #[test]
    // `&&`: the receiver `#[mcpd::tool]`'s expansion uses, on which the
    // dispatch depends.
    #[allow(clippy::needless_borrow)]
    fn an_error_becomes_a_failed_call_and_a_tool_error_stays_itself() {
        let io = std::io::Error::other("disk full");
        match (&&Failure::new(io)).tool_error() {
            ToolError::Failed(m) => assert_eq!(m, "disk full"),
            e => panic!("{e:?}"),
        }
        let bad = ToolError::InvalidArguments("days must be 1-7".into());
        assert!(matches!(
            (&&Failure::new(bad)).tool_error(),
            ToolError::InvalidArguments(m) if m == "days must be 1-7"
        ));
        let r: Result<String, ToolError> = Err(ToolError::Failed("no".into()));
        assert!(matches!(r.into_tool_result(), Err(ToolError::Failed(_))));
    }
}

//! mcpd's attribute macros, re-exported by the `mcpd` crate; depend on
//! `mcpd`, not on this crate.
//!
//! - [`macro@tool`]: makes an `async fn` an MCP tool whose name is the
//!   function's and whose description is its doc comment.
//!
//! The expansion names only `::mcpd::prelude::…`, so it works in any crate
//! that depends on `mcpd` (no `serde` or `schemars` of its own needed).

#![warn(missing_docs)]
use proc_macro::TokenStream;

mod common;
mod options;
mod provider;
mod tool;

/// Makes an `async fn` a tool. The tool's name is the function's name, its
/// description the function's doc comment.
///
/// **Arguments.** Each parameter is one argument of the tool, named as
/// the parameter, its JSON Schema derived from its type (`Option<T>`: not
/// required); describe one with `#[describe("...")]`. A single parameter
/// named `args` is instead the whole arguments object (a type deriving
/// `Deserialize` and `JsonSchema`). A `RequestContext` parameter, anywhere,
/// gets the request's context (progress, logging, questions to the client).
/// A parameter marked `#[state]` is not an argument: the constructor takes
/// it (`hit(counter.clone())`) and each call gets a clone (share state with
/// an `Arc`).
///
/// **Result.** Whatever the function returns that turns into a result
/// (`IntoToolResult`): `String`, a number, `Content`, `Json<T>` (structured
/// content, and `T`'s schema as the output schema), `CallToolResult`, or a
/// `Result` of these, whose `Err` becomes a failed call (`isError`, with the
/// error's text) — a `ToolError` keeps its meaning.
///
/// ```ignore
/// use mcpd::prelude::*;
///
/// /// Adds two numbers.
/// #[mcpd::tool(read_only, title = "Add")]
/// async fn add(a: i64, #[describe("the second number")] b: i64) -> i64 {
///     a + b
/// }
///
/// Server::new("calc", "1.0.0").tool(add()).run()
/// ```
///
/// The function becomes a constructor: `add()` returns the tool (an
/// `impl Tool`). Options: `name = "..."`, `title = "..."`, the annotations
/// `read_only`, `destructive`, `idempotent`, `open_world` (`= false` to
/// say so), and `task = "optional"` (may run as a task, the Tasks
/// extension), `"required"` (only as one) or `"forbidden"` (the default).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(item as syn::ItemFn);
    tool::expand(attr.into(), item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Makes an `async fn` a resource, or a resource template when its URI has
/// `{variables}`: `#[mcpd::resource("config://app")]`,
/// `#[mcpd::resource("weather://{city}/days/{days}", mime = "text/plain")]`.
/// The name is the function's, the description its doc comment. A
/// template's variables are the function's parameters of the same names,
/// parsed from the URI into their types (`days: u8`; a value that does not
/// parse is refused with `-32602` naming it); a `RequestContext` parameter
/// gets the request's context. The return value becomes the contents
/// (`String`, `Json<T>`, `ResourceContents`, or a `Result` of these).
/// `complete(city = cities)` completes a variable with
/// `fn cities(prefix: &str) -> Vec<String>`; `title = "..."` and
/// `name = "..."` as for tools. The function becomes the constructor of
/// its `ResourceProvider`: `Server::new(..).resources(weather())`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(item as syn::ItemFn);
    provider::expand_resource(attr.into(), item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Makes an `async fn` a prompt: its name is the function's, its
/// description the doc comment, its arguments the parameters (`Option<T>`:
/// not required; each parsed from the client's string into its type;
/// described with a doc comment or `#[describe("...")]`). The return value
/// becomes the messages: a `String` is one user message; also
/// `Vec<PromptMessage>`, `GetPromptResult`, or a `Result` of these.
/// `complete(language = languages)` completes an argument. The function
/// becomes the constructor of its `PromptProvider`:
/// `Server::new(..).prompts(review())`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(item as syn::ItemFn);
    provider::expand_prompt(attr.into(), item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream as TokenStream2;
    use quote::quote;
    use syn::ItemFn;

    use crate::common::description;
    use crate::tool::expand;

    fn expand_fn(attr: TokenStream2, item: TokenStream2) -> syn::Result<String> {
        expand(attr, syn::parse2(item).expect("a fn")).map(|t| t.to_string())
    }

    #[test]
    fn the_description_is_the_doc_comment() {
        let item: ItemFn = syn::parse_quote! {
            /// Weather forecast
            /// for a city.
            ///
            /// Days: 1-7.
            async fn forecast(a: A) {}
        };
        assert_eq!(
            description(&item.attrs).as_deref(),
            Some("Weather forecast\nfor a city.\n\nDays: 1-7.")
        );
    }

    #[test]
    fn name_and_description_reach_tool_fn() {
        let out = expand_fn(
            quote!(),
            quote! {
                /// Returns its message unchanged.
                pub async fn echo(args: Echo, ctx: RequestContext) -> R { body() }
            },
        )
        .expect("expands");
        assert!(out.contains("pub fn echo ()"), "{out}");
        assert!(
            out.contains(r#"tool_fn ("echo" , "Returns its message unchanged.""#),
            "{out}"
        );
        // One parameter named `args`: the whole arguments object.
        assert!(out.contains("| __a : Echo ,"), "{out}");
        assert!(out.contains("echo (__a , __ctx)"), "{out}");
    }

    #[test]
    fn each_parameter_is_an_argument_with_its_description() {
        let out = expand_fn(
            quote!(read_only, title = "Add"),
            quote! {
                /// Adds.
                async fn add(a: i64, ctx: RequestContext, #[describe("the other")] b: Option<i64>) -> i64 { a }
            },
        )
        .expect("expands");
        assert!(
            out.contains(
                "struct __addArgs { a : i64 , # [doc = \"the other\"] b : Option < i64 > , }"
            ),
            "{out}"
        );
        assert!(out.contains("add (__a . a , __ctx , __a . b)"), "{out}");
        assert!(
            out.contains("read_only_hint : :: core :: option :: Option :: Some (true)"),
            "{out}"
        );
        assert!(
            out.contains(r#"d . title = :: core :: option :: Option :: Some ("Add" . into ())"#),
            "{out}"
        );
        // The parameter's own attribute is gone from the function.
        assert!(!out.contains("describe"), "{out}");
    }

    #[test]
    fn a_state_parameter_is_the_constructors_and_cloned_into_each_call() {
        let out = expand_fn(
            quote!(),
            quote! {
                /// Counts.
                async fn hits(#[state] hits: Arc<AtomicU64>, by: u64) -> u64 { 0 }
            },
        )
        .expect("expands");
        assert!(
            out.contains("fn hits (__state_hits : Arc < AtomicU64 >)"),
            "{out}"
        );
        assert!(
            out.contains("let __state_hits = :: core :: clone :: Clone :: clone (& __state_hits)"),
            "{out}"
        );
        assert!(out.contains("hits (__state_hits , __a . by)"), "{out}");
        // Not an argument of the tool.
        assert!(out.contains("struct __hitsArgs { by : u64 , }"), "{out}");
    }

    #[test]
    fn a_result_turns_its_error_into_a_tool_error_and_its_ok_type_names_the_schema() {
        let out = expand_fn(
            quote!(),
            quote! {
                /// Sums.
                async fn sum(xs: Vec<i64>) -> Result<Json<Total>, MyError> { todo!() }
            },
        )
        .expect("expands");
        assert!(out.contains("Failure :: new (e)"), "{out}");
        assert!(
            out.contains(
                "< Json < Total > as :: mcpd :: prelude :: IntoToolResult > :: output_schema ()"
            ),
            "{out}"
        );
    }

    #[test]
    fn a_task_policy_reaches_the_builder() {
        let out = expand_fn(
            quote!(task = "optional"),
            quote!(
                /// Writes a report.
                async fn report(a: A, ctx: RequestContext) -> R {}
            ),
        )
        .expect("expands")
        .to_string();
        assert!(
            out.contains("with_task (:: mcpd :: prelude :: TaskSupport :: Optional)"),
            "{out}"
        );
    }

    #[test]
    fn a_raw_identifier_names_the_tool_without_r_hash() {
        let out = expand_fn(
            quote!(),
            quote!(
                /// Types.
                async fn r#type(a: A) -> R {}
            ),
        )
        .expect("expands");
        assert!(out.contains(r#"tool_fn ("type""#), "{out}");
    }

    #[test]
    fn what_is_refused() {
        let refused = |attr: TokenStream2, item: TokenStream2| {
            expand_fn(attr, item).expect_err("refused").to_string()
        };
        assert!(refused(
            quote!(),
            quote!(
                async fn f(a: A) -> R {}
            )
        )
        .contains("doc comment"));
        assert!(refused(
            quote!(),
            quote!(
                /// d
                fn f(a: A) -> R {}
            )
        )
        .contains("async fn"));
        assert!(refused(
            quote!(),
            quote!(
                /// d
                async fn f(s: &str) -> R {}
            )
        )
        .contains("owned"));
        assert!(refused(
            quote!(colour = "x"),
            quote!(
                /// d
                async fn f(a: A) -> R {}
            )
        )
        .contains("takes"));
        assert!(refused(
            quote!(task = "sometimes"),
            quote!(
                /// d
                async fn f(a: A) -> R {}
            )
        )
        .contains("takes"));
        assert!(refused(
            quote!(),
            quote!(
                /// d
                async fn f<T>(a: T) -> R {}
            )
        )
        .contains("generic"));
    }
}

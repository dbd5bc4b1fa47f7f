//! mcpd's attribute macros, re-exported by the `mcpd` crate; depend on
//! `mcpd`, not on this crate.
//!
//! - [`macro@tool`]: makes an `async fn` over typed arguments an MCP tool
//!   whose name is the function's and whose description is its doc comment.
//!
//! The expansion names only `::mcpd::prelude::…`, so it works in any crate
//! that depends on `mcpd`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, ItemFn, Lit, Meta, Visibility};

/// Makes an `async fn` a tool. The tool's name is the function's name, its
/// description the function's doc comment, its input schema the JSON Schema
/// of the argument type (derive `Deserialize` and `JsonSchema` on it).
///
/// ```ignore
/// use mcpd::prelude::*;
///
/// /// Returns its message unchanged.
/// #[mcpd::tool]
/// async fn echo(args: EchoArgs, ctx: RequestContext) -> Result<CallToolResult, ToolError> {
///     Ok(CallToolResult::text(args.message))
/// }
///
/// registry.add_tool(Arc::new(echo()));
/// ```
///
/// The function becomes a constructor: `echo()` returns the tool (an
/// `impl Tool`), built with `tool_fn`. The function may leave out the
/// `RequestContext` parameter when it does not need it.
///
/// `#[mcpd::tool(task = "optional")]` lets the tool run as a task (the
/// Tasks extension); `"required"` runs it only as one; `"forbidden"` is
/// the default.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = syn::parse_macro_input!(item as ItemFn);
    expand(attr.into(), item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `task = "optional" | "required" | "forbidden"`, the one argument.
fn task_support(attr: TokenStream2) -> syn::Result<Option<TokenStream2>> {
    if attr.is_empty() {
        return Ok(None);
    }
    let refuse = |span: proc_macro2::Span| {
        syn::Error::new(
            span,
            "#[mcpd::tool] takes only `task = \"optional\"`, `\"required\"` or `\"forbidden\"`: the name is the function's, the description its doc comment",
        )
    };
    let meta: Meta = syn::parse2(attr.clone()).map_err(|_| refuse(attr.span()))?;
    let Meta::NameValue(nv) = &meta else {
        return Err(refuse(meta.span()));
    };
    if !nv.path.is_ident("task") {
        return Err(refuse(nv.path.span()));
    }
    let Expr::Lit(lit) = &nv.value else {
        return Err(refuse(nv.value.span()));
    };
    let Lit::Str(s) = &lit.lit else {
        return Err(refuse(lit.span()));
    };
    let variant = match s.value().as_str() {
        "optional" => quote!(Optional),
        "required" => quote!(Required),
        "forbidden" => quote!(Forbidden),
        _ => return Err(refuse(s.span())),
    };
    Ok(Some(
        quote!(.with_task(::mcpd::prelude::TaskSupport::#variant)),
    ))
}

fn expand(attr: TokenStream2, mut item: ItemFn) -> syn::Result<TokenStream2> {
    let task = task_support(attr)?;
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "#[mcpd::tool] needs an `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a tool function cannot be generic",
        ));
    }
    let args_ty = match sig.inputs.first() {
        Some(FnArg::Typed(arg)) if sig.inputs.len() <= 2 => arg.ty.clone(),
        _ => {
            return Err(syn::Error::new(
                sig.inputs.span(),
                "a tool function takes its arguments and, optionally, a `RequestContext`: \
                 `async fn name(args: Args, ctx: RequestContext)`",
            ))
        }
    };
    let Some(description) = description(&item.attrs) else {
        return Err(syn::Error::new(
            sig.ident.span(),
            "a tool needs a doc comment: it becomes the tool's description",
        ));
    };
    let ident = sig.ident.clone();
    let name = ident.to_string().trim_start_matches("r#").to_owned();
    let handler = if sig.inputs.len() == 2 {
        quote!(#ident)
    } else {
        quote!(|args: #args_ty, _: ::mcpd::prelude::RequestContext| #ident(args))
    };

    // The constructor keeps the docs (and any `cfg`); the function as
    // written, with its other attributes, moves inside it.
    let (outer, inner): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut item.attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("doc") || a.path().is_ident("cfg"));
    let cfgs = outer.iter().filter(|a| a.path().is_ident("cfg"));
    item.attrs = inner.into_iter().chain(cfgs.cloned()).collect();
    let vis = std::mem::replace(&mut item.vis, Visibility::Inherited);
    Ok(quote! {
        #(#outer)*
        #vis fn #ident() -> impl ::mcpd::prelude::Tool {
            #item
            ::mcpd::prelude::tool_fn(#name, #description, #handler)#task
        }
    })
}

/// The doc comment as one string: each line without the space after `///`,
/// leading and trailing blank lines dropped. `None` when there is no text.
fn description(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        let Expr::Lit(lit) = &nv.value else { continue };
        let Lit::Str(s) = &lit.lit else { continue };
        for line in s.value().split('\n') {
            lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            out.contains(r#"tool_fn ("echo" , "Returns its message unchanged." , echo)"#),
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
                async fn f() -> R {}
            )
        )
        .contains("RequestContext"));
        assert!(refused(
            quote!(name = "x"),
            quote!(
                /// d
                async fn f(a: A) -> R {}
            )
        )
        .contains("takes only"));
        assert!(refused(
            quote!(task = "sometimes"),
            quote!(
                /// d
                async fn f(a: A) -> R {}
            )
        )
        .contains("takes only"));
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

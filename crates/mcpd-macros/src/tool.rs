//! `#[mcpd::tool]`'s expansion: the function becomes a constructor of its
//! tool (`fn add() -> impl Tool`), built with `tool_fn`.

use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, ItemFn, Lit, Meta, Pat, PathArguments, ReturnType,
    Type, Visibility,
};

use crate::options::Options;

/// One argument of the tool: a parameter of the function.
struct Arg {
    ident: syn::Ident,
    ty: Type,
    /// From `#[doc = "..."]` or `#[describe("...")]` on the parameter.
    docs: Vec<Attribute>,
}

/// Where the context goes in the call, and what the arguments are.
enum Inputs {
    /// One parameter named `args`: its type is the whole arguments object.
    Whole(Box<Type>),
    /// Each parameter is one argument.
    Each(Vec<Arg>),
}

fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "RequestContext"))
}

/// A `#[state]` parameter: passed to the constructor, cloned into each call.
struct State {
    at: usize,
    ident: syn::Ident,
    ty: Type,
}

/// Splits the parameters into arguments, the context (at most one,
/// anywhere) and state; strips the attributes the compiler would refuse.
fn inputs(item: &mut ItemFn) -> syn::Result<(Inputs, Option<usize>, Vec<State>)> {
    let mut args = Vec::new();
    let mut ctx = None;
    let mut states = Vec::new();
    for (i, input) in item.sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new(
                input.span(),
                "a tool function takes no `self`",
            ));
        };
        if is_context(&pt.ty) {
            if ctx.replace(i).is_some() {
                return Err(syn::Error::new(pt.span(), "one `RequestContext` is enough"));
            }
            continue;
        }
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new(
                pt.pat.span(),
                "name each argument: its name is the argument's name in the tool's input schema",
            ));
        };
        if let Some(at) = pt.attrs.iter().position(|a| a.path().is_ident("state")) {
            pt.attrs.remove(at);
            states.push(State {
                at: i,
                ident: pi.ident.clone(),
                ty: (*pt.ty).clone(),
            });
            continue;
        }
        if let Type::Reference(r) = &*pt.ty {
            return Err(syn::Error::new(
                r.span(),
                "a tool's arguments are owned values (`String`, not `&str`)",
            ));
        }
        let (docs, rest): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut pt.attrs)
            .into_iter()
            .partition(|a| a.path().is_ident("doc") || a.path().is_ident("describe"));
        pt.attrs = rest;
        let docs = docs.into_iter().map(as_doc).collect::<syn::Result<_>>()?;
        args.push(Arg {
            ident: pi.ident.clone(),
            ty: (*pt.ty).clone(),
            docs,
        });
    }
    if args.len() == 1 && args[0].ident == "args" {
        let a = args.pop().expect("one");
        return Ok((Inputs::Whole(Box::new(a.ty)), ctx, states));
    }
    Ok((Inputs::Each(args), ctx, states))
}

/// `#[describe("text")]` as `#[doc = "text"]` (a doc comment stays one).
fn as_doc(a: Attribute) -> syn::Result<Attribute> {
    if a.path().is_ident("doc") {
        return Ok(a);
    }
    let text: syn::LitStr = a.parse_args()?;
    Ok(syn::parse_quote!(#[doc = #text]))
}

/// `T` of `Result<T, E>` (or of a one-argument `Result<T>` alias); `None`
/// when the return type is not a `Result`.
fn ok_type(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

pub(crate) fn expand(attr: TokenStream2, mut item: ItemFn) -> syn::Result<TokenStream2> {
    let opts = Options::parse(attr)?;
    if item.sig.asyncness.is_none() {
        return Err(syn::Error::new(
            item.sig.fn_token.span(),
            "#[mcpd::tool] needs an `async fn`",
        ));
    }
    if !item.sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.sig.generics.span(),
            "a tool function cannot be generic",
        ));
    }
    let Some(description) = description(&item.attrs) else {
        return Err(syn::Error::new(
            item.sig.ident.span(),
            "a tool needs a doc comment: it becomes the tool's description",
        ));
    };
    let (inputs, ctx_at, states) = inputs(&mut item)?;
    let ident = item.sig.ident.clone();
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());

    // The call of the function as written, from the arguments `__a` and
    // the context `__ctx`.
    let n_params = item.sig.inputs.len();
    let (args_ty, args_struct, call_args) = match &inputs {
        Inputs::Whole(ty) => (quote!(#ty), quote!(), vec![quote!(__a)]),
        Inputs::Each(args) => {
            let fields = args.iter().map(|a| {
                let (id, ty, docs) = (&a.ident, &a.ty, &a.docs);
                quote!(#(#docs)* #id: #ty)
            });
            let st = format_ident!("__{}Args", ident.to_string().trim_start_matches("r#"));
            let s = quote! {
                #[derive(::mcpd::prelude::__private::serde::Deserialize, ::mcpd::prelude::__private::schemars::JsonSchema)]
                #[serde(crate = "::mcpd::prelude::__private::serde")]
                #[schemars(crate = "::mcpd::prelude::__private::schemars")]
                #[allow(non_camel_case_types)]
                struct #st { #(#fields,)* }
            };
            let calls = args.iter().map(|a| {
                let id = &a.ident;
                quote!(__a.#id)
            });
            (quote!(#st), s, calls.collect())
        }
    };
    let mut call = Vec::with_capacity(n_params);
    let mut args_iter = call_args.into_iter();
    for i in 0..n_params {
        if Some(i) == ctx_at {
            call.push(quote!(__ctx));
        } else if let Some(s) = states.iter().find(|s| s.at == i) {
            let id = format_ident!("__state_{}", s.ident);
            call.push(quote!(#id));
        } else if let Some(a) = args_iter.next() {
            call.push(a);
        }
    }

    // The return value turned into the result, and the output schema it
    // declares.
    let ret: Type = match &item.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    let (convert, schema_ty) = match ok_type(&ret) {
        Some(ok) => (
            quote! {
                match __out {
                    ::core::result::Result::Ok(v) => ::mcpd::prelude::IntoToolResult::into_tool_result(v),
                    #[allow(clippy::needless_borrow)]
                    ::core::result::Result::Err(e) => {
                        #[allow(unused_imports)]
                        use ::mcpd::prelude::__private::failure::{AsIs as _, ByDisplay as _};
                        ::core::result::Result::Err((&&::mcpd::prelude::__private::failure::Failure::new(e)).tool_error())
                    }
                }
            },
            ok.clone(),
        ),
        None => (
            quote!(::mcpd::prelude::IntoToolResult::into_tool_result(__out)),
            ret.clone(),
        ),
    };
    let builder = opts.builder_calls();

    // The constructor keeps the docs (and any `cfg`); the function as
    // written, with its other attributes, moves inside it.
    let (outer, inner): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut item.attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("doc") || a.path().is_ident("cfg"));
    let cfgs = outer.iter().filter(|a| a.path().is_ident("cfg"));
    item.attrs = inner.into_iter().chain(cfgs.cloned()).collect();
    let vis = std::mem::replace(&mut item.vis, Visibility::Inherited);
    // Named apart from the function: its own name may be a state's.
    let (sid, sty): (Vec<_>, Vec<_>) = states
        .iter()
        .map(|s| (format_ident!("__state_{}", s.ident), &s.ty))
        .unzip();
    Ok(quote! {
        #(#outer)*
        #vis fn #ident(#(#sid: #sty),*) -> impl ::mcpd::prelude::Tool {
            #item
            #args_struct
            ::mcpd::prelude::tool_fn(
                #name,
                #description,
                move |__a: #args_ty, __ctx: ::mcpd::prelude::RequestContext| {
                    #(let #sid = ::core::clone::Clone::clone(&#sid);)*
                    async move {
                        let _ = &__ctx;
                        let __out = #ident(#(#call),*).await;
                        #convert
                    }
                },
            )
            .with_definition(|d| {
                d.output_schema = <#schema_ty as ::mcpd::prelude::IntoToolResult>::output_schema();
            })
            #builder
        }
    })
}

/// The doc comment as one string: each line without the space after `///`,
/// leading and trailing blank lines dropped. `None` when there is no text.
pub(crate) fn description(attrs: &[Attribute]) -> Option<String> {
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

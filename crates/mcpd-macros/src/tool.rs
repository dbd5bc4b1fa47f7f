//! `#[mcpd::tool]`'s expansion: the function becomes a constructor of its
//! tool (`fn add() -> impl Tool`), built with `tool_fn`.

use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{ItemFn, ReturnType, Type};

use crate::common::{checked, constructor, first_arg_of, name_of, params, Param};
use crate::options::Options;

pub(crate) fn expand(attr: TokenStream2, mut item: ItemFn) -> syn::Result<TokenStream2> {
    let opts = Options::parse(attr)?;
    let description = checked(&item, "tool")?;
    let params = params(&mut item, true)?;
    let ident = item.sig.ident.clone();
    let name = name_of(&opts.name, &item);

    // The arguments: one parameter named `args` is the whole arguments
    // object; otherwise each argument parameter is a field of a struct made
    // for them.
    let args: Vec<_> = params
        .iter()
        .filter_map(|p| match p {
            Param::Arg { ident, ty, docs } => Some((ident, ty, docs)),
            _ => None,
        })
        .collect();
    let whole = args.len() == 1 && *args[0].0 == "args";
    let (args_ty, args_struct) = if whole {
        let ty = args[0].1;
        (quote!(#ty), quote!())
    } else {
        let fields = args.iter().map(|(id, ty, docs)| quote!(#(#docs)* #id: #ty));
        let st = format_ident!("__{}Args", ident.to_string().trim_start_matches("r#"));
        let s = quote! {
            #[derive(::mcpd::prelude::__private::serde::Deserialize, ::mcpd::prelude::__private::schemars::JsonSchema)]
            #[serde(crate = "::mcpd::prelude::__private::serde")]
            #[schemars(crate = "::mcpd::prelude::__private::schemars")]
            #[allow(non_camel_case_types)]
            struct #st { #(#fields,)* }
        };
        (quote!(#st), s)
    };

    // The call of the function as written, from the arguments `__a`, the
    // context `__ctx` and the state (named apart from the function: its own
    // name may be a state's).
    let mut call = Vec::with_capacity(params.len());
    let mut states = Vec::new();
    for p in &params {
        call.push(match p {
            Param::Context => quote!(__ctx),
            Param::State { ident, ty } => {
                let id = format_ident!("__state_{}", ident);
                let c = quote!(#id);
                states.push((id, ty));
                c
            }
            Param::Arg { .. } if whole => quote!(__a),
            Param::Arg { ident, .. } => quote!(__a.#ident),
        });
    }
    let (sid, sty): (Vec<_>, Vec<_>) = states.into_iter().unzip();

    // The return value turned into the result, and the output schema it
    // declares.
    let ret: Type = match &item.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    let (convert, schema_ty) = match first_arg_of(&ret, "Result") {
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
    let body = quote! {
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
    };
    Ok(constructor(
        item,
        quote!(#(#sid: #sty),*),
        quote!(impl ::mcpd::prelude::Tool),
        body,
    ))
}

//! `#[mcpd::resource]` and `#[mcpd::prompt]`: a function becomes the
//! constructor of a resource (or template) provider or a prompt provider,
//! built with `resource_fn` / `prompt_fn` from mcpd's prelude.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ItemFn, Lit, LitStr, Meta, Token};

use crate::common::{checked, constructor, first_arg_of, name_of, params, Param};

/// The attribute: an optional URI first, then `name = "..."`, `title`,
/// `mime` and `complete(arg = function, ...)`.
struct Attr {
    uri: Option<LitStr>,
    name: Option<String>,
    title: Option<String>,
    mime: Option<String>,
    /// (argument, a completion function or a list of choices).
    complete: Vec<(String, Expr)>,
}

impl Parse for Attr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let uri = if input.peek(LitStr) {
            let s: LitStr = input.parse()?;
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            Some(s)
        } else {
            None
        };
        let mut a = Attr {
            uri,
            name: None,
            title: None,
            mime: None,
            complete: Vec::new(),
        };
        for meta in Punctuated::<Meta, Token![,]>::parse_terminated(input)? {
            let key = meta
                .path()
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            match (key.as_str(), &meta) {
                ("name" | "title" | "mime", Meta::NameValue(nv)) => {
                    let Expr::Lit(l) = &nv.value else {
                        return Err(syn::Error::new(nv.value.span(), "a string"));
                    };
                    let Lit::Str(s) = &l.lit else {
                        return Err(syn::Error::new(l.span(), "a string"));
                    };
                    match key.as_str() {
                        "name" => a.name = Some(s.value()),
                        "title" => a.title = Some(s.value()),
                        _ => a.mime = Some(s.value()),
                    }
                }
                ("complete", Meta::List(l)) => {
                    let pairs = l.parse_args_with(
                        Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated,
                    )?;
                    for nv in pairs {
                        let arg = nv
                            .path
                            .get_ident()
                            .ok_or_else(|| syn::Error::new(nv.path.span(), "an argument's name"))?
                            .to_string();
                        if !matches!(nv.value, Expr::Path(_) | Expr::Array(_)) {
                            return Err(syn::Error::new(
                                nv.value.span(),
                                "a function `fn(&str) -> Vec<String>` or a list of choices `[\"a\", \"b\"]`",
                            ));
                        }
                        a.complete.push((arg, nv.value.clone()));
                    }
                }
                _ => {
                    return Err(syn::Error::new(
                        meta.span(),
                        "takes `name = \"...\"`, `title = \"...\"`, `mime = \"...\"` and \
                         `complete(argument = function, ...)`; the description is the doc comment",
                    ))
                }
            }
        }
        Ok(a)
    }
}

fn completions(a: &Attr) -> TokenStream2 {
    let calls = a.complete.iter().map(|(arg, f)| match f {
        Expr::Array(list) => quote!(.with_choices(#arg, &#list)),
        f => quote!(.with_completion(#arg, #f)),
    });
    let title = a.title.as_ref().map(|t| quote!(.with_title(#t)));
    quote!(#title #(#calls)*)
}

pub(crate) fn expand_resource(attr: TokenStream2, mut item: ItemFn) -> syn::Result<TokenStream2> {
    let a: Attr = syn::parse2(attr)?;
    let Some(uri) = a.uri.clone() else {
        return Err(syn::Error::new(
            item.sig.ident.span(),
            "#[mcpd::resource] needs the URI first: `#[mcpd::resource(\"config://app\")]`, or a template `\"weather://{city}\"`",
        ));
    };
    let description = checked(&item, "resource")?;
    let params = params(&mut item, false)?;
    let vars: Vec<String> = uri
        .value()
        .split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(v, _)| v.to_owned()))
        .collect();
    let mut lets = Vec::new();
    let mut call = Vec::new();
    for p in &params {
        match p {
            Param::Context => call.push(quote!(__ctx.clone())),
            Param::State { .. } => unreachable!("params(.., false) refuses #[state]"),
            Param::Arg { ident, ty, .. } => {
                let name = ident.to_string();
                if !vars.contains(&name) {
                    return Err(syn::Error::new(
                        ident.span(),
                        format!(
                            "`{name}` is not a variable of the URI template {:?}",
                            uri.value()
                        ),
                    ));
                }
                lets.push(quote! {
                    let #ident: #ty = ::mcpd::prelude::__private::provide::var::<#ty>(&__vars, #name)?;
                });
                call.push(quote!(#ident));
            }
        }
    }
    let ident = item.sig.ident.clone();
    let name = name_of(&a.name, &item);
    let mime = match &a.mime {
        Some(m) => quote!(::core::option::Option::Some(#m)),
        None => quote!(::core::option::Option::None),
    };
    let more = completions(&a);
    let body = quote! {
        ::mcpd::prelude::__private::provide::resource_fn(
            #uri,
            #name,
            #description,
            #mime,
            |__uri: ::std::string::String,
             __vars: ::mcpd::prelude::__private::provide::Vars,
             __ctx: ::mcpd::prelude::RequestContext| async move {
                let _ = (&__vars, &__ctx);
                #(#lets)*
                let __out = #ident(#(#call),*).await;
                ::mcpd::prelude::__private::provide::IntoContents::into_contents(__out, &__uri, #mime)
            },
        )
        #more
    };
    Ok(constructor(
        item,
        quote!(),
        quote!(impl ::mcpd::prelude::ResourceProvider),
        body,
    ))
}

pub(crate) fn expand_prompt(attr: TokenStream2, mut item: ItemFn) -> syn::Result<TokenStream2> {
    let a: Attr = syn::parse2(attr)?;
    if let Some(uri) = &a.uri {
        return Err(syn::Error::new(uri.span(), "a prompt has no URI"));
    }
    let description = checked(&item, "prompt")?;
    let params = params(&mut item, false)?;
    let mut lets = Vec::new();
    let mut call = Vec::new();
    let mut arguments = Vec::new();
    for p in &params {
        match p {
            Param::Context => call.push(quote!(__ctx.clone())),
            Param::State { .. } => unreachable!("params(.., false) refuses #[state]"),
            Param::Arg { ident, ty, docs } => {
                let name = ident.to_string();
                let docs = match crate::common::description(docs) {
                    Some(d) => quote!(::core::option::Option::Some(#d.into())),
                    None => quote!(::core::option::Option::None),
                };
                let (fetch, required) = match first_arg_of(ty, "Option") {
                    Some(inner) => (
                        quote!(::mcpd::prelude::__private::provide::prompt_arg::<#inner>(&__args, #name)?),
                        false,
                    ),
                    None => (
                        quote! {
                            ::mcpd::prelude::__private::provide::prompt_arg::<#ty>(&__args, #name)?
                                .ok_or_else(|| ::mcpd::prelude::ErrorObject::invalid_params(
                                    ::std::format!("missing argument {:?}", #name)))?
                        },
                        true,
                    ),
                };
                arguments.push(quote! {
                    ::mcpd::prelude::PromptArgument {
                        name: #name.into(),
                        description: #docs,
                        required: ::core::option::Option::Some(#required),
                    }
                });
                lets.push(quote!(let #ident: #ty = #fetch;));
                call.push(quote!(#ident));
            }
        }
    }
    let ident = item.sig.ident.clone();
    let name = name_of(&a.name, &item);
    let more = completions(&a);
    let body = quote! {
        ::mcpd::prelude::__private::provide::prompt_fn(
            #name,
            #description,
            ::std::vec![#(#arguments),*],
            |__args: ::mcpd::prelude::JsonObject, __ctx: ::mcpd::prelude::RequestContext| async move {
                let _ = (&__args, &__ctx);
                #(#lets)*
                let __out = #ident(#(#call),*).await;
                ::mcpd::prelude::__private::provide::IntoPromptResult::into_prompt_result(__out)
            },
        )
        #more
    };
    Ok(constructor(
        item,
        quote!(),
        quote!(impl ::mcpd::prelude::PromptProvider),
        body,
    ))
}

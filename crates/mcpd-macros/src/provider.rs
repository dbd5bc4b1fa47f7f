//! `#[mcpd::resource]` and `#[mcpd::prompt]`: a function becomes the
//! constructor of a resource (or template) provider or a prompt provider,
//! built with `resource_fn` / `prompt_fn` from mcpd's prelude.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, ItemFn, Lit, LitStr, Meta, Pat, PathArguments, Token,
    Type, Visibility,
};

use crate::tool::description;

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

/// One parameter: the context, or an argument (name, type, description).
enum Param {
    Context,
    Arg {
        ident: syn::Ident,
        ty: Box<Type>,
        docs: Option<String>,
    },
}

fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "RequestContext"))
}

/// `T` of `Option<T>`.
fn option_of(ty: &Type) -> Option<&Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    match a.args.first()? {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    }
}

/// The parameters, their describing attributes stripped from the function.
fn params(item: &mut ItemFn) -> syn::Result<Vec<Param>> {
    let mut out = Vec::new();
    for input in item.sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new(input.span(), "takes no `self`"));
        };
        if is_context(&pt.ty) {
            out.push(Param::Context);
            continue;
        }
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new(pt.pat.span(), "name each argument"));
        };
        if let Type::Reference(r) = &*pt.ty {
            return Err(syn::Error::new(
                r.span(),
                "arguments are owned values (`String`, not `&str`)",
            ));
        }
        let (docs, rest): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut pt.attrs)
            .into_iter()
            .partition(|a| a.path().is_ident("doc") || a.path().is_ident("describe"));
        pt.attrs = rest;
        let mut text = description(&docs);
        for a in docs.iter().filter(|a| a.path().is_ident("describe")) {
            text = Some(a.parse_args::<LitStr>()?.value());
        }
        out.push(Param::Arg {
            ident: pi.ident.clone(),
            ty: pt.ty.clone(),
            docs: text,
        });
    }
    Ok(out)
}

fn checked(item: &ItemFn, what: &str) -> syn::Result<String> {
    if item.sig.asyncness.is_none() {
        return Err(syn::Error::new(
            item.sig.fn_token.span(),
            format!("#[mcpd::{what}] needs an `async fn`"),
        ));
    }
    if !item.sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.sig.generics.span(),
            "cannot be generic",
        ));
    }
    description(&item.attrs).ok_or_else(|| {
        syn::Error::new(
            item.sig.ident.span(),
            format!("a {what} needs a doc comment: it becomes its description"),
        )
    })
}

/// The constructor around `item`: its docs outside, the function inside.
fn wrap(mut item: ItemFn, returns: TokenStream2, body: TokenStream2) -> TokenStream2 {
    let (outer, inner): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut item.attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("doc") || a.path().is_ident("cfg"));
    let cfgs = outer.iter().filter(|a| a.path().is_ident("cfg"));
    item.attrs = inner.into_iter().chain(cfgs.cloned()).collect();
    let vis = std::mem::replace(&mut item.vis, Visibility::Inherited);
    let ident = item.sig.ident.clone();
    quote! {
        #(#outer)*
        #vis fn #ident() -> #returns {
            #item
            #body
        }
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
    let params = params(&mut item)?;
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
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());
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
    Ok(wrap(
        item,
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
    let params = params(&mut item)?;
    let mut lets = Vec::new();
    let mut call = Vec::new();
    let mut arguments = Vec::new();
    for p in &params {
        match p {
            Param::Context => call.push(quote!(__ctx.clone())),
            Param::Arg { ident, ty, docs } => {
                let name = ident.to_string();
                let docs = match docs {
                    Some(d) => quote!(::core::option::Option::Some(#d.into())),
                    None => quote!(::core::option::Option::None),
                };
                let (fetch, required) = match option_of(ty) {
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
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());
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
    Ok(wrap(
        item,
        quote!(impl ::mcpd::prelude::PromptProvider),
        body,
    ))
}

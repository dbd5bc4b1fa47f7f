//! What the three attribute macros share: the checks on the function, its
//! parameters (arguments, the context, state), the name and description,
//! and the constructor the function becomes.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, ItemFn, Lit, Meta, Pat, PathArguments, Type,
    Visibility,
};

/// One parameter of the function.
pub(crate) enum Param {
    /// `RequestContext`: the request's context.
    Context,
    /// `#[state]`: passed to the constructor, cloned into each call.
    State { ident: syn::Ident, ty: Box<Type> },
    /// An argument of the tool, template or prompt.
    Arg {
        ident: syn::Ident,
        ty: Box<Type>,
        /// `#[doc = "..."]`, from a doc comment or `#[describe("...")]`.
        docs: Vec<Attribute>,
    },
}

fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "RequestContext"))
}

/// `#[describe("text")]` as `#[doc = "text"]` (a doc comment stays one).
fn as_doc(a: Attribute) -> syn::Result<Attribute> {
    if a.path().is_ident("doc") {
        return Ok(a);
    }
    let text: syn::LitStr = a.parse_args()?;
    Ok(syn::parse_quote!(#[doc = #text]))
}

/// The parameters, in order; the attributes the compiler would refuse on a
/// parameter (`describe`, `state`, doc comments) are taken off the function.
/// `#[state]` only where `state` (tools).
pub(crate) fn params(item: &mut ItemFn, state: bool) -> syn::Result<Vec<Param>> {
    let mut out = Vec::new();
    let mut context = false;
    for input in item.sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new(
                input.span(),
                "the function takes no `self`",
            ));
        };
        if is_context(&pt.ty) {
            if std::mem::replace(&mut context, true) {
                return Err(syn::Error::new(pt.span(), "one `RequestContext` is enough"));
            }
            out.push(Param::Context);
            continue;
        }
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new(
                pt.pat.span(),
                "name each argument: its name is the argument's name in the schema",
            ));
        };
        let ident = pi.ident.clone();
        if let Some(at) = pt.attrs.iter().position(|a| a.path().is_ident("state")) {
            if !state {
                return Err(syn::Error::new(
                    ident.span(),
                    "#[state] is for tools; a resource or prompt reads shared state some other way",
                ));
            }
            pt.attrs.remove(at);
            out.push(Param::State {
                ident,
                ty: pt.ty.clone(),
            });
            continue;
        }
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
        out.push(Param::Arg {
            ident,
            ty: pt.ty.clone(),
            docs: docs.into_iter().map(as_doc).collect::<syn::Result<_>>()?,
        });
    }
    Ok(out)
}

/// The checks every macro makes (an `async fn`, not generic, documented);
/// the description.
pub(crate) fn checked(item: &ItemFn, what: &str) -> syn::Result<String> {
    if item.sig.asyncness.is_none() {
        return Err(syn::Error::new(
            item.sig.fn_token.span(),
            format!("#[mcpd::{what}] needs an `async fn`"),
        ));
    }
    if !item.sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.sig.generics.span(),
            format!("a {what} function cannot be generic"),
        ));
    }
    description(&item.attrs).ok_or_else(|| {
        syn::Error::new(
            item.sig.ident.span(),
            format!("a {what} needs a doc comment: it becomes its description"),
        )
    })
}

/// The name: `name = "..."` if given, else the function's (without `r#`).
pub(crate) fn name_of(given: &Option<String>, item: &ItemFn) -> String {
    given.clone().unwrap_or_else(|| {
        item.sig
            .ident
            .to_string()
            .trim_start_matches("r#")
            .to_owned()
    })
}

/// `T` of `Wrapper<T, ..>` (`Result`, `Option`, or a one-argument alias of
/// them); `None` when `ty` is not a `Wrapper`.
pub(crate) fn first_arg_of<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != wrapper {
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

/// The constructor the function becomes: `fn name(inputs) -> returns`, with
/// the function's docs (and any `cfg`) outside and the function as written,
/// with its other attributes, inside, before `body`.
pub(crate) fn constructor(
    mut item: ItemFn,
    inputs: TokenStream2,
    returns: TokenStream2,
    body: TokenStream2,
) -> TokenStream2 {
    let (outer, inner): (Vec<Attribute>, Vec<Attribute>) = std::mem::take(&mut item.attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("doc") || a.path().is_ident("cfg"));
    let cfgs = outer.iter().filter(|a| a.path().is_ident("cfg"));
    item.attrs = inner.into_iter().chain(cfgs.cloned()).collect();
    let vis = std::mem::replace(&mut item.vis, Visibility::Inherited);
    let ident = item.sig.ident.clone();
    quote! {
        #(#outer)*
        #vis fn #ident(#inputs) -> #returns {
            #item
            #body
        }
    }
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

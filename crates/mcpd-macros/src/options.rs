//! `#[mcpd::tool(...)]`'s options: `name`, `title`, the annotations
//! (`read_only`, `destructive`, `idempotent`, `open_world`) and `task`.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Lit, Meta, Token};

/// What the attribute said.
#[derive(Default)]
pub(crate) struct Options {
    /// The tool's name (default: the function's).
    pub name: Option<String>,
    pub title: Option<String>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    /// `TaskSupport`'s variant.
    pub task: Option<TokenStream2>,
}

const USAGE: &str = "#[mcpd::tool] takes `name = \"...\"`, `title = \"...\"`, \
    `read_only`, `destructive`, `idempotent`, `open_world` (each `= true` or `= false` too) \
    and `task = \"optional\" | \"required\" | \"forbidden\"`; the description is the doc comment";

fn refuse(span: Span) -> syn::Error {
    syn::Error::new(span, USAGE)
}

fn string(e: &Expr) -> syn::Result<String> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Str(s) => Ok(s.value()),
            other => Err(refuse(other.span())),
        },
        other => Err(refuse(other.span())),
    }
}

fn boolean(e: &Expr) -> syn::Result<bool> {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Bool(b) => Ok(b.value),
            other => Err(refuse(other.span())),
        },
        other => Err(refuse(other.span())),
    }
}

impl Options {
    pub(crate) fn parse(attr: TokenStream2) -> syn::Result<Self> {
        let mut o = Options::default();
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated
            .parse2(attr.clone())
            .map_err(|_| refuse(attr.span()))?;
        for meta in metas {
            let key = meta
                .path()
                .get_ident()
                .map(|i| i.to_string())
                .ok_or_else(|| refuse(meta.span()))?;
            let flag = |meta: &Meta| -> syn::Result<bool> {
                match meta {
                    Meta::Path(_) => Ok(true),
                    Meta::NameValue(nv) => boolean(&nv.value),
                    Meta::List(l) => Err(refuse(l.span())),
                }
            };
            let text = |meta: &Meta| -> syn::Result<String> {
                match meta {
                    Meta::NameValue(nv) => string(&nv.value),
                    other => Err(refuse(other.span())),
                }
            };
            match key.as_str() {
                "name" => o.name = Some(text(&meta)?),
                "title" => o.title = Some(text(&meta)?),
                "read_only" => o.read_only = Some(flag(&meta)?),
                "destructive" => o.destructive = Some(flag(&meta)?),
                "idempotent" => o.idempotent = Some(flag(&meta)?),
                "open_world" => o.open_world = Some(flag(&meta)?),
                "task" => {
                    let v = text(&meta)?;
                    o.task = Some(match v.as_str() {
                        "optional" => quote!(Optional),
                        "required" => quote!(Required),
                        "forbidden" => quote!(Forbidden),
                        _ => return Err(refuse(meta.span())),
                    });
                }
                _ => return Err(refuse(meta.span())),
            }
        }
        Ok(o)
    }

    /// The builder calls after `tool_fn(...)`: the title and annotations
    /// into the definition, then the task policy.
    pub(crate) fn builder_calls(&self) -> TokenStream2 {
        let mut out = TokenStream2::new();
        let opt_bool = |b: Option<bool>| match b {
            Some(b) => quote!(::core::option::Option::Some(#b)),
            None => quote!(::core::option::Option::None),
        };
        let any_hint = self.read_only.is_some()
            || self.destructive.is_some()
            || self.idempotent.is_some()
            || self.open_world.is_some();
        if self.title.is_some() || any_hint {
            let title = match &self.title {
                Some(t) => quote!(d.title = ::core::option::Option::Some(#t.into());),
                None => quote!(),
            };
            let hints = if any_hint {
                let (r, de, i, ow) = (
                    opt_bool(self.read_only),
                    opt_bool(self.destructive),
                    opt_bool(self.idempotent),
                    opt_bool(self.open_world),
                );
                quote! {
                    d.annotations = ::core::option::Option::Some(::mcpd::prelude::ToolAnnotations {
                        title: ::core::option::Option::None,
                        read_only_hint: #r,
                        destructive_hint: #de,
                        idempotent_hint: #i,
                        open_world_hint: #ow,
                    });
                }
            } else {
                quote!()
            };
            out.extend(quote!(.with_definition(|d| { #title #hints })));
        }
        if let Some(v) = &self.task {
            out.extend(quote!(.with_task(::mcpd::prelude::TaskSupport::#v)));
        }
        out
    }
}

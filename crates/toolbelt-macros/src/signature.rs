//! Reading the tool function's signature: which parameters become the schema.

use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, Pat, Type};

/// One parameter of the tool function.
pub(crate) enum Arg {
    /// The `ToolContext` argument, passed through and kept out of the schema.
    Context { by_ref: bool },
    /// A JSON argument: a field of the generated argument struct.
    Field(Box<Field>),
}

/// A parameter that becomes a property of the parameter schema.
pub(crate) struct Field {
    /// The parameter name without `mut`.
    pub(crate) ident: Ident,
    /// The parameter type.
    pub(crate) ty: Type,
    /// `///` docs and `#[serde]`/`#[schemars]` attributes, moved to the generated field.
    pub(crate) attrs: Vec<Attribute>,
}

/// Checks that `item` can be a tool and takes its parameters apart.
///
/// Attributes meant for the generated field (docs, `serde`, `schemars`) are
/// removed from `item`, since rustc rejects them on function parameters.
pub(crate) fn read_args(item: &mut ItemFn) -> syn::Result<Vec<Arg>> {
    check_signature(item)?;
    let mut args = Vec::new();
    let mut context_seen = false;
    for input in &mut item.sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new_spanned(
                    receiver,
                    "#[tool] works on free functions; `self` parameters are not supported \
                     (implement `Tool` by hand for a tool with state)",
                ));
            }
            FnArg::Typed(typed) => typed,
        };
        if let Some(by_ref) = context_kind(&typed.ty)? {
            if context_seen {
                return Err(syn::Error::new_spanned(
                    &typed.ty,
                    "#[tool] takes at most one `ToolContext` parameter",
                ));
            }
            context_seen = true;
            args.push(Arg::Context { by_ref });
            continue;
        }
        let ident = plain_ident(&typed.pat)?;
        check_owned(&typed.ty)?;
        let (moved, kept): (Vec<Attribute>, Vec<Attribute>) =
            typed.attrs.drain(..).partition(is_forwarded);
        if let Some(cfg) = kept.iter().find(|a| a.path().is_ident("cfg")) {
            return Err(syn::Error::new_spanned(
                cfg,
                "`#[cfg]` on #[tool] parameters is not supported: the schema would differ between builds",
            ));
        }
        typed.attrs = kept;
        args.push(Arg::Field(Box::new(Field {
            ident,
            ty: (*typed.ty).clone(),
            attrs: moved,
        })));
    }
    Ok(args)
}

fn check_signature(item: &ItemFn) -> syn::Result<()> {
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            "#[tool] needs an `async fn`; add `async` (tools run on the async executor)",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "#[tool] does not support generic functions: the parameter schema must be known \
             at compile time; use concrete types",
        ));
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        return Err(syn::Error::new_spanned(
            token,
            "#[tool] does not support `unsafe fn`: a model cannot uphold its safety contract",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            variadic,
            "#[tool] does not support variadic functions",
        ));
    }
    Ok(())
}

/// `Some(by_ref)` when `ty` is `ToolContext` or `&ToolContext` (by the last path segment).
fn context_kind(ty: &Type) -> syn::Result<Option<bool>> {
    match ty {
        Type::Reference(reference) if is_context_path(&reference.elem) => {
            if let Some(mutability) = reference.mutability {
                return Err(syn::Error::new(
                    mutability.span(),
                    "take the context as `&ToolContext` or `ToolContext`; `&mut` is not supported",
                ));
            }
            Ok(Some(true))
        }
        Type::Paren(inner) => context_kind(&inner.elem),
        Type::Group(inner) => context_kind(&inner.elem),
        other if is_context_path(other) => Ok(Some(false)),
        _ => Ok(None),
    }
}

fn is_context_path(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => {
            path.qself.is_none()
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "ToolContext" && s.arguments.is_none())
        }
        Type::Group(inner) => is_context_path(&inner.elem),
        _ => false,
    }
}

/// The identifier of a `name: Type` parameter; `mut name` is accepted.
fn plain_ident(pat: &Pat) -> syn::Result<Ident> {
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Ok(p.ident.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            "#[tool] parameters must be plain identifiers such as `path: String`, because \
             each name becomes a JSON property; destructure inside the function body",
        )),
    }
}

/// Parameters are deserialised from JSON, so they must own their data.
fn check_owned(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(reference) => Err(syn::Error::new_spanned(
            reference,
            "#[tool] parameters are deserialised from JSON and must own their data; \
             use an owned type (`String` instead of `&str`, `Vec<T>` instead of `&[T]`)",
        )),
        Type::ImplTrait(_) => Err(syn::Error::new_spanned(
            ty,
            "#[tool] does not support `impl Trait` parameters: the schema needs a concrete type",
        )),
        Type::Infer(_) | Type::Never(_) | Type::Ptr(_) | Type::FnPtr(_) | Type::TraitObject(_) => {
            Err(syn::Error::new_spanned(
                ty,
                "#[tool] parameters must be data types that implement `Deserialize` and `JsonSchema`",
            ))
        }
        _ => Ok(()),
    }
}

/// `item` without the parameter attributes rustc would reject, for output after an error.
pub(crate) fn without_field_attrs(item: &ItemFn) -> ItemFn {
    let mut item = item.clone();
    for input in &mut item.sig.inputs {
        if let FnArg::Typed(typed) = input {
            typed.attrs.retain(|attr| !is_forwarded(attr));
        }
    }
    item
}

/// Attributes that belong on the generated struct field rather than the parameter.
fn is_forwarded(attr: &Attribute) -> bool {
    let path = attr.path();
    path.is_ident("doc") || path.is_ident("serde") || path.is_ident("schemars")
}

/// The text of the `///` comments in `attrs`: lines joined, common indentation removed, trimmed.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut raw = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            raw.push(s.value());
        }
    }
    let joined = raw.join("\n");
    let lines: Vec<&str> = joined.lines().collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let text = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use syn::{Attribute, parse_quote};

    use super::doc_text;

    #[test]
    fn doc_text_keeps_paragraphs_and_relative_indentation() {
        let attrs: Vec<Attribute> = vec![
            parse_quote!(#[doc = " Reads a file."]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = "     indented"]),
            parse_quote!(#[inline]),
            parse_quote!(#[doc = " Last.  "]),
        ];
        assert_eq!(
            doc_text(&attrs).as_deref(),
            Some("Reads a file.\n\n    indented\nLast.")
        );
        assert_eq!(doc_text(&[parse_quote!(#[doc = "   "])]), None);
    }

    #[test]
    fn block_doc_comments_are_split_into_lines() {
        let attrs: Vec<Attribute> = vec![parse_quote!(#[doc = "\n   First.\n\n   Second.\n"])];
        assert_eq!(doc_text(&attrs).as_deref(), Some("First.\n\nSecond."));
    }
}

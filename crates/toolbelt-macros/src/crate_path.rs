//! Finding the path of the core API in the crate that uses `#[tool]`.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::Span;

/// The path generated code uses for `toolbelt_core`'s API.
///
/// An explicit `crate = "..."` wins; otherwise the caller's manifest is read
/// for `toolbelt-core` and then the `toolbelt` facade (which re-exports core at
/// its root), honouring renamed dependencies. A crate's own name is written as
/// an absolute `::name` so binaries, examples, tests and doctests of that crate
/// work; inside the library itself, pass `crate = "crate"`.
pub(crate) fn core_path(explicit: Option<syn::Path>) -> syn::Result<syn::Path> {
    if let Some(path) = explicit {
        return Ok(path);
    }
    for package in ["toolbelt-core", "toolbelt"] {
        let name = match crate_name(package) {
            Ok(FoundCrate::Itself) => package.replace('-', "_"),
            Ok(FoundCrate::Name(name)) => name,
            Err(_) => continue,
        };
        let ident = syn::Ident::new(&name, Span::call_site());
        return Ok(syn::parse_quote!(::#ident));
    }
    Err(syn::Error::new(
        Span::call_site(),
        "#[tool] cannot find `toolbelt` or `toolbelt-core` in this crate's Cargo.toml; \
         add one of them as a dependency or name the API path with `#[tool(crate = \"...\")]`",
    ))
}

/// `path` as source text without spaces, for `#[serde(crate = "...")]`.
pub(crate) fn path_string(path: &syn::Path) -> String {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let joined = segments.join("::");
    if path.leading_colon.is_some() {
        format!("::{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::path_string;

    #[test]
    fn paths_print_without_spaces() {
        assert_eq!(path_string(&syn::parse_quote!(::toolbelt)), "::toolbelt");
        assert_eq!(
            path_string(&syn::parse_quote!(crate::facade)),
            "crate::facade"
        );
    }
}

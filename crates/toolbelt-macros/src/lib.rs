#![doc = include_str!("../README.md")]

mod attrs;
mod crate_path;
mod expand;
mod signature;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool: a `Tool` struct, a parameter schema and a link-time registration.
///
/// See the [crate documentation](crate) for the arguments and what is generated.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut args = attrs::ToolArgs::default();
    let parser = syn::meta::parser(|meta| args.parse_item(meta));
    if let Err(err) = syn::parse::Parser::parse(parser, attr) {
        return err.to_compile_error().into();
    }
    let item = match syn::parse::<syn::ItemFn>(item) {
        Ok(item) => item,
        Err(err) => {
            return syn::Error::new(err.span(), format!("#[tool] goes on an `async fn`: {err}"))
                .to_compile_error()
                .into();
        }
    };
    let fallback = signature::without_field_attrs(&item);
    match expand::expand(args, item) {
        Ok(tokens) => tokens.into(),
        // Keep the function so the one error is not followed by "cannot find" ones.
        Err(err) => {
            let mut tokens = err.to_compile_error();
            quote::ToTokens::to_tokens(&fallback, &mut tokens);
            tokens.into()
        }
    }
}

//! The `Wire` derive for `sv2c-binary`. Use it through `sv2c_binary::Wire`, whose docs
//! describe the attributes and what is generated.

mod attr;
mod expand;
mod types;

use proc_macro::TokenStream;

/// Derives `sv2c_binary::Wire` and the borrowed twin of a struct (see `sv2c_binary::Wire`).
#[proc_macro_derive(Wire, attributes(sv2))]
pub fn derive_wire(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    match expand::expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

//! The `Wire` and `MessageSet` derives for `sv2c-binary`. Use them through
//! `sv2c_binary::Wire` / `sv2c_binary::MessageSet`, whose docs describe the attributes and
//! what is generated.
//!
//! `#[derive(Wire)]` runs in three steps: `ast` parses the input (with `attr` for
//! `#[sv2(...)]`), `valid` checks what syntax can check, `expand` generates the code.
//! Errors from the first two are reported together, with `fallback` stub impls so
//! they do not cascade.

mod ast;
mod attr;
mod expand;
mod fallback;
mod message_set;
mod types;
mod valid;

use proc_macro::TokenStream;

/// Derives `sv2c_binary::Wire` and the borrowed twin of a struct (see `sv2c_binary::Wire`).
#[proc_macro_derive(Wire, attributes(sv2))]
pub fn derive_wire(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}

/// Derives `sv2c_binary::MessageSet` for an enum whose variants each hold one message set
/// or derived message (see `sv2c_binary::MessageSet`'s derive docs).
#[proc_macro_derive(MessageSet, attributes(sv2))]
pub fn derive_message_set(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    message_set::derive(&input, syn::parse_quote!(::sv2c_binary)).into()
}

/// `Wire` as re-exported by the `sv2c` facade crate: generated code names `::sv2c`
/// unless `#[sv2(crate = "...")]` says otherwise.
#[doc(hidden)]
#[proc_macro_derive(__WireFacade, attributes(sv2))]
pub fn derive_wire_facade(input: TokenStream) -> TokenStream {
    let mut input = syn::parse_macro_input!(input as syn::DeriveInput);
    message_set::default_to_facade(&mut input);
    expand::derive(&input).into()
}

/// `MessageSet` as re-exported by the `sv2c` facade crate: generated code names `::sv2c`
/// unless `#[sv2(crate = "...")]` says otherwise.
#[doc(hidden)]
#[proc_macro_derive(__MessageSetFacade, attributes(sv2))]
pub fn derive_message_set_facade(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    message_set::derive(&input, syn::parse_quote!(::sv2c)).into()
}

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

#[cfg(test)]
mod tests {
    use proc_macro2::{TokenStream, TokenTree};

    /// Every identifier in `tokens`, groups included.
    fn idents(tokens: TokenStream, out: &mut Vec<String>) {
        for t in tokens {
            match t {
                TokenTree::Ident(i) => out.push(i.to_string()),
                TokenTree::Group(g) => idents(g.stream(), out),
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
        }
    }

    fn assert_no_unsafe(generated: TokenStream) {
        let mut all = Vec::new();
        idents(generated, &mut all);
        assert!(all.len() > 100, "expanded to {} identifiers", all.len());
        assert!(
            !all.iter().any(|i| i == "unsafe"),
            "`unsafe` in the expansion"
        );
    }

    /// A user's `#[derive(Wire)]`, with a field of every kind (fixed, inline-able,
    /// sequence, option, borrowed view), expands to code with no `unsafe` token.
    #[test]
    fn the_wire_derive_of_a_user_type_emits_no_unsafe() {
        let input: syn::DeriveInput = syn::parse_quote! {
            #[sv2(extension_type = 0x4001, msg_type = 0x01, channel_msg)]
            pub struct WorkerReport {
                pub channel_id: u32,
                pub worker: Str0255,
                #[sv2(borrow)]
                pub best_share: U256,
                pub path: Seq0255<U256>,
                pub tail: B064K,
                pub when: Option<u64>,
                pub flag: bool,
            }
        };
        assert_no_unsafe(crate::expand::derive(&input));
        let alias: syn::DeriveInput = syn::parse_quote! {
            pub struct Small {
                pub a: u8,
                pub b: u64,
            }
        };
        assert_no_unsafe(crate::expand::derive(&alias));
    }

    /// The same for `#[derive(MessageSet)]`.
    #[test]
    fn the_message_set_derive_emits_no_unsafe() {
        let input: syn::DeriveInput = syn::parse_quote! {
            pub enum Mine {
                Report(WorkerReport),
                Other(Small),
            }
        };
        assert_no_unsafe(crate::message_set::derive(
            &input,
            syn::parse_quote!(::sv2c_binary),
        ));
    }
}

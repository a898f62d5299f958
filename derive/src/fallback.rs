//! What `#[derive(Wire)]` emits next to its errors: stub impls, so that code using the
//! type (`Name::decode_owned`, `NameRef`, `encode_to_vec`, the message constants) does not
//! add a cascade of "trait not implemented" errors to the one that matters. The stubs are
//! never run: the crate does not compile while the error stands.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::ast::Struct;
use crate::attr::crate_path;

pub(crate) fn expand(input: &Struct<'_>) -> TokenStream {
    // A stub for a generic type would need its parameters right; the generics error is
    // enough on its own.
    if input.generics.is_some() {
        return TokenStream::new();
    }
    let ident = input.ident;
    let vis = input.vis;
    let krate = &input.attrs.krate;
    let ref_ident = format_ident!("{}Ref", ident);
    let message = input.attrs.message.as_ref().map(|m| {
        let (msg_type, ext, ch, name) = (m.msg_type, m.extension_type, m.channel_msg, &m.name);
        quote! {
            impl #krate::MessageType for #ident {
                const EXTENSION_TYPE: u16 = #ext;
                const MSG_TYPE: u8 = #msg_type;
                const CHANNEL_MSG: bool = #ch;
                const NAME: &'static str = #name;
            }
            impl #krate::Frameable for #ident {
                fn wire_extension_type(&self) -> u16 {
                    ::core::unreachable!()
                }
                fn msg_type(&self) -> u8 {
                    ::core::unreachable!()
                }
            }
        }
    });
    quote! {
        #[allow(missing_docs)]
        #vis type #ref_ident<'a> = #ident;

        const _: () = {
            impl #krate::Encode for #ident {
                fn encoded_len(&self) -> usize {
                    ::core::unreachable!()
                }
                fn encode<__B: #krate::__private::BufMut + ?Sized>(&self, _: &mut __B) {
                    ::core::unreachable!()
                }
            }
            impl<'a> #krate::Decode<'a> for #ident {
                fn decode(_: &mut #krate::Reader<'a>) -> ::core::result::Result<Self, #krate::DecodeError> {
                    ::core::unreachable!()
                }
            }
            impl #krate::Wire for #ident {
                type Ref<'a> = #ident;
                const INLINE: bool = true;
                const FIXED_LEN: ::core::option::Option<usize> = ::core::option::Option::None;
                fn to_ref(&self) -> #ident {
                    ::core::unreachable!()
                }
            }
            impl<'a> #krate::WireRef<'a> for #ident {
                type Owned = #ident;
            }
            impl #krate::__private::ToOwnedIn<#ident> for #ident {
                fn to_owned_in(&self, _: &#krate::__private::Backing<'_>) -> #ident {
                    ::core::unreachable!()
                }
            }
            #message
        };
    }
}

/// The stubs for `#[derive(MessageSet)]`: `NameRef` and the set's traits.
pub(crate) fn message_set(input: &syn::DeriveInput, default_crate: &syn::Path) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &input.ident;
    let vis = &input.vis;
    let krate = crate_path(&input.attrs)
        .ok()
        .flatten()
        .unwrap_or_else(|| default_crate.clone());
    let ref_ident = format_ident!("{}Ref", ident);
    quote! {
        #[allow(missing_docs)]
        #vis type #ref_ident<'a> = #ident;

        const _: () = {
            impl #krate::Encode for #ident {
                fn encoded_len(&self) -> usize {
                    ::core::unreachable!()
                }
                fn encode<__B: #krate::__private::BufMut + ?Sized>(&self, _: &mut __B) {
                    ::core::unreachable!()
                }
            }
            impl #krate::Frameable for #ident {
                fn wire_extension_type(&self) -> u16 {
                    ::core::unreachable!()
                }
                fn msg_type(&self) -> u8 {
                    ::core::unreachable!()
                }
            }
            impl #krate::MessageSet for #ident {
                type Ref<'a> = #ident;
                const IDS: &'static [(u16, u8)] = &[];
                fn decode_message(
                    _: u16,
                    _: u8,
                    _: &[u8],
                ) -> ::core::result::Result<Self, #krate::DispatchError> {
                    ::core::unreachable!()
                }
                fn decode_message_ref(
                    _: u16,
                    _: u8,
                    _: &[u8],
                ) -> ::core::result::Result<Self, #krate::DispatchError> {
                    ::core::unreachable!()
                }
            }
        };
    }
}

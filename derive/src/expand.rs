//! Code generation for `#[derive(Wire)]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

use crate::attr::{self, Errors};
use crate::types::{Kind, borrowed};

pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let ident = &input.ident;

    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => Some(named.named.iter().collect::<Vec<_>>()),
            Fields::Unit => Some(Vec::new()),
            Fields::Unnamed(_) => {
                errors.push(syn::Error::new(
                    s.fields.span(),
                    "`Wire` needs named fields (they become the message's fields, in wire order)",
                ));
                None
            }
        },
        Data::Enum(e) => {
            errors.push(syn::Error::new(
                e.enum_token.span,
                "`Wire` can only be derived for structs (a message is its fields in wire order)",
            ));
            None
        }
        Data::Union(u) => {
            errors.push(syn::Error::new(
                u.union_token.span,
                "`Wire` can only be derived for structs",
            ));
            None
        }
    };
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        errors.push(syn::Error::new(
            input.generics.span(),
            "`Wire` does not support generic parameters or lifetimes: write the owned form; the borrowed `Ref<'a>` twin is generated",
        ));
    }
    let attrs = attr::parse(ident, &input.attrs, &mut errors);

    // Spec §2.2: a channel message's payload starts with its U32 channel id.
    if let (Some(span), Some(fields)) = (attrs.channel_msg_span, &fields) {
        let first_ok = fields.first().is_some_and(|f| {
            f.ident.as_ref().is_some_and(|i| i == "channel_id")
                && matches!(&f.ty, syn::Type::Path(p) if p.path.is_ident("u32"))
        });
        if !first_ok {
            let at = fields.first().map_or(span, |f| f.span());
            errors.push(syn::Error::new(
                at,
                "a `channel_msg` message must start with `channel_id: u32` (spec §2.2: the first 4 payload bytes are the channel id)",
            ));
        }
    }
    errors.finish()?;
    let fields = fields.unwrap_or_default();

    let krate = &attrs.krate;
    let vis = &input.vis;
    let ref_ident = format_ident!("{}Ref", ident);

    let names: Vec<_> = fields.iter().filter_map(|f| f.ident.as_ref()).collect();
    let tys: Vec<_> = fields.iter().map(|f| &f.ty).collect();
    let twins: Vec<_> = tys.iter().map(|t| borrowed(t, krate)).collect();
    let ref_tys: Vec<_> = twins.iter().map(|(t, _)| t).collect();
    let all_inline = twins.iter().all(|(_, k)| *k == Kind::Inline);
    let all_known = twins.iter().all(|(_, k)| *k != Kind::Other);
    let field_paths: Vec<_> = names.iter().map(|n| format!("{ident}.{n}")).collect();

    let encode_body = quote! {
        #[inline]
        fn encoded_len(&self) -> usize {
            0 #( + #krate::Encode::encoded_len(&self.#names) )*
        }
        #[inline]
        fn encode<__B: #krate::__private::BufMut + ?Sized>(&self, __buf: &mut __B) {
            #( #krate::Encode::encode(&self.#names, __buf); )*
        }
    };

    let (ref_ty_lt, ref_ty_anon) = if all_inline {
        (quote!(#ident), quote!(#ident))
    } else {
        (quote!(#ref_ident<'a>), quote!(#ref_ident<'_>))
    };

    let decode_body = quote! {
        #[inline]
        fn decode(__r: &mut #krate::Reader<'a>) -> ::core::result::Result<Self, #krate::DecodeError> {
            ::core::result::Result::Ok(Self {
                #(
                    #names: match <#ref_tys as #krate::Decode<'a>>::decode(__r) {
                        ::core::result::Result::Ok(v) => v,
                        ::core::result::Result::Err(e) => {
                            return ::core::result::Result::Err(e.in_field(#field_paths))
                        }
                    },
                )*
            })
        }
    };

    let wire_impl = quote! {
        #[automatically_derived]
        impl #krate::Wire for #ident {
            type Ref<'a> = #ref_ty_lt;
            const INLINE: bool = true #( && <#tys as #krate::Wire>::INLINE )*;
            const FIXED_LEN: ::core::option::Option<usize> = {
                let len = ::core::option::Option::Some(0usize);
                #( let len = #krate::__private::add_fixed(len, <#tys as #krate::Wire>::FIXED_LEN); )*
                len
            };
            #[inline]
            fn to_ref(&self) -> #ref_ty_anon {
                #ref_ident { #( #names: #krate::Wire::to_ref(&self.#names), )* }
            }
        }

        #[automatically_derived]
        impl<'a> #krate::WireRef<'a> for #ref_ty_lt {
            type Owned = #ident;
            #[inline]
            fn to_owned_in(&self, __backing: &#krate::Backing<'_>) -> #ident {
                #ident { #( #names: #krate::WireRef::to_owned_in(&self.#names, __backing), )* }
            }
        }
    };

    let message_impl = attrs.message.as_ref().map(|m| {
        let (msg_type, ext, ch, name) = (m.msg_type, m.extension_type, m.channel_msg, &m.name);
        let consts = quote! {
            const EXTENSION_TYPE: u16 = #ext;
            const MSG_TYPE: u8 = #msg_type;
            const CHANNEL_MSG: bool = #ch;
            const NAME: &'static str = #name;
        };
        let frameable = quote! {
            #[inline]
            fn wire_extension_type(&self) -> u16 {
                <Self as #krate::MessageType>::wire_extension_type()
            }
            #[inline]
            fn msg_type(&self) -> u8 {
                #msg_type
            }
        };
        let owned = quote! {
            #[automatically_derived]
            impl #krate::MessageType for #ident { #consts }
            #[automatically_derived]
            impl #krate::Frameable for #ident { #frameable }
        };
        if all_inline {
            owned
        } else {
            quote! {
                #owned
                #[automatically_derived]
                impl<'a> #krate::MessageType for #ref_ident<'a> { #consts }
                #[automatically_derived]
                impl<'a> #krate::Frameable for #ref_ident<'a> { #frameable }
            }
        }
    });

    let owned_doc = format!("[`{ident}`]");
    let from_bytes_doc = format!(
        "Decodes an owned `{ident}` from the front of a payload (trailing bytes, e.g. TLVs, are ignored).\n\nOne allocation if it has variable-length fields, none otherwise.\n\n# Errors\nAny [`DecodeError`]({}).",
        "struct@::sv2c_binary::DecodeError"
    );

    let tokens = if all_inline {
        let alias_doc = format!(
            "Borrowed form of {owned_doc}: every field is fixed-size, so it is the owned type itself (decoding it borrows and allocates nothing)."
        );
        quote! {
            #[doc = #alias_doc]
            #vis type #ref_ident<'a> = #ident;

            #[automatically_derived]
            impl #krate::Encode for #ident { #encode_body }

            #[automatically_derived]
            impl<'a> #krate::Decode<'a> for #ident { #decode_body }

            #wire_impl
            #message_impl

            #[automatically_derived]
            #[allow(clippy::should_implement_trait, clippy::wrong_self_convention)]
            impl #ident {
                #[doc = #from_bytes_doc]
                #[inline]
                pub fn from_bytes(bytes: &[u8]) -> ::core::result::Result<Self, #krate::DecodeError> {
                    #krate::from_bytes_ref(bytes)
                }

                /// The borrowed form: for a message of fixed-size fields, a copy of it.
                #[inline]
                pub fn as_ref(&self) -> Self {
                    #krate::Wire::to_ref(self)
                }

                /// The owned form: for a message of fixed-size fields, a copy of it.
                #[inline]
                pub fn to_owned(&self) -> Self {
                    #krate::Wire::to_ref(self)
                }
            }
        }
    } else {
        let ref_doc = format!(
            "Borrowed form of {owned_doc}: variable-length fields point into the decoded bytes (no allocation, no copy). Generated by `#[derive(Wire)]`."
        );
        let copy = all_known.then(|| quote!(Copy,));
        let ref_fields = fields.iter().zip(&ref_tys).map(|(f, t)| {
            let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc"));
            let fvis = &f.vis;
            let name = &f.ident;
            quote! { #( #docs )* #fvis #name: #t }
        });
        quote! {
            #[doc = #ref_doc]
            #[derive(Debug, Clone, #copy PartialEq)]
            #vis struct #ref_ident<'a> {
                #( #ref_fields, )*
            }

            #[automatically_derived]
            impl #krate::Encode for #ident { #encode_body }

            #[automatically_derived]
            impl<'a> #krate::Encode for #ref_ident<'a> { #encode_body }

            #[automatically_derived]
            impl<'a> #krate::Decode<'a> for #ref_ident<'a> { #decode_body }

            #wire_impl
            #message_impl

            #[automatically_derived]
            #[allow(clippy::should_implement_trait)]
            impl #ident {
                #[doc = #from_bytes_doc]
                #[inline]
                pub fn from_bytes(bytes: &[u8]) -> ::core::result::Result<Self, #krate::DecodeError> {
                    <Self as #krate::Wire>::decode_owned(bytes)
                }

                /// The borrowed view of this message (no allocation, no copy).
                #[inline]
                pub fn as_ref(&self) -> #ref_ident<'_> {
                    #krate::Wire::to_ref(self)
                }
            }

            #[automatically_derived]
            impl<'a> #ref_ident<'a> {
                /// Decodes the borrowed form from the front of a payload, pointing into it
                /// (no allocation; trailing bytes are ignored).
                ///
                /// # Errors
                /// Any decode error.
                #[inline]
                pub fn from_bytes(bytes: &'a [u8]) -> ::core::result::Result<Self, #krate::DecodeError> {
                    #krate::from_bytes_ref(bytes)
                }

                /// The owned form, with at most one allocation for all variable-length data.
                #[inline]
                pub fn to_owned(&self) -> #ident {
                    #krate::WireRef::to_owned_value(self)
                }
            }
        }
    };
    Ok(tokens)
}

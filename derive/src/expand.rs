//! Step 3 of `#[derive(Wire)]`: code generation, and the pipeline that runs
//! parse → validate → expand (or the errors plus a fallback).
//!
//! Field types are used only through the trait system: the borrowed form of a field of
//! type `T` is `<T as Wire>::Ref<'a>`, and the owned/borrowed conversions are
//! `Wire::to_ref` and `__private::ToOwnedIn::to_owned_in`. The only decision taken from spelling is
//! whether `NameRef` is an alias of the struct (see `types`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::DeriveInput;
use syn::spanned::Spanned;

use crate::ast::{self, Struct};
use crate::attr::Errors;
use crate::{fallback, types, valid};

/// The whole derive: its output, or its errors together with stub impls.
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let parsed = ast::parse(input, &mut errors);
    valid::check(&parsed, &mut errors);
    match errors.finish() {
        Ok(()) => expand(&parsed),
        Err(err) => {
            let mut out = err.to_compile_error();
            out.extend(fallback::expand(&parsed));
            out
        }
    }
}

/// Generates the code for a struct that passed validation.
pub(crate) fn expand(input: &Struct<'_>) -> TokenStream {
    let ident = input.ident;
    let vis = input.vis;
    let krate = &input.attrs.krate;
    let ref_ident = format_ident!("{}Ref", ident);
    let fields = input.fields.as_deref().unwrap_or(&[]);

    let names: Vec<_> = fields.iter().map(|f| f.ident).collect();
    let tys: Vec<_> = fields.iter().map(|f| f.ty).collect();
    // `NameRef` is the struct itself when every field type is spelled as a fixed-size
    // type; the compiler confirms it below (`FixedWire`).
    // A field marked `#[sv2(borrow)]` (a type `types::borrow_kind` knows, checked in
    // `valid`) is a view into the input in the twin, so a struct with one is never an alias.
    let borrows: Vec<Option<types::Borrow>> = fields
        .iter()
        .map(|f| f.borrow.and_then(|_| types::borrow_kind(f.ty)))
        .collect();
    // The byte arrays' sizes: those fields are decoded and encoded through `__private`.
    let views: Vec<Option<usize>> = borrows
        .iter()
        .map(|b| match b {
            Some(types::Borrow::Array(n)) => Some(*n),
            _ => None,
        })
        .collect();
    let alias =
        fields.iter().all(|f| types::spelled_fixed(f.ty)) && borrows.iter().all(Option::is_none);
    // Each field's borrowed form: named directly for this crate's types (keeps `NameRef`
    // covariant in `'a`; checked by `__private::Twin`), else through the trait (see `types`).
    let named_twins: Vec<_> = tys
        .iter()
        .zip(&borrows)
        .map(|(t, borrow)| match borrow {
            Some(types::Borrow::Array(n)) => Some(quote!(&'a [u8; #n])),
            Some(types::Borrow::B032) => Some(quote!(#krate::B032Ref<'a>)),
            None => types::named_twin(t, krate, &quote!('a)),
        })
        .collect();
    let ref_tys: Vec<_> = tys
        .iter()
        .zip(&named_twins)
        .map(|(t, twin)| match twin {
            Some(twin) if !alias => twin.clone(),
            _ => quote!(<#t as #krate::Wire>::Ref<'a>),
        })
        .collect();
    let field_paths: Vec<_> = names.iter().map(|n| format!("{ident}.{n}")).collect();

    // Type checks the compiler does for us, each pointing at the field type.
    let mut checks = Vec::new();
    if let Some(first) = fields
        .first()
        .filter(|_| input.attrs.channel_msg_span.is_some())
    {
        let ty = first.ty;
        checks.push(quote_spanned! {ty.span()=>
            const _: fn() = #krate::__private::channel_id::<#ty>;
        });
    }
    if alias {
        for ty in &tys {
            checks.push(quote_spanned! {ty.span()=>
                const _: fn() = #krate::__private::fixed_wire::<#ty>;
            });
        }
    }

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

    // The twin encodes a borrowed byte array as its bytes; every other field as the owned.
    let ref_lens = names.iter().zip(&views).map(|(n, view)| match view {
        Some(len) => quote!(#len),
        None => quote!(#krate::Encode::encoded_len(&self.#n)),
    });
    let ref_encodes = names.iter().zip(&views).map(|(n, view)| match view {
        Some(_) => quote!(#krate::__private::encode_view(self.#n, __buf)),
        None => quote!(#krate::Encode::encode(&self.#n, __buf)),
    });
    let ref_encode_body = quote! {
        #[inline]
        fn encoded_len(&self) -> usize {
            0 #( + #ref_lens )*
        }
        #[inline]
        fn encode<__B: #krate::__private::BufMut + ?Sized>(&self, __buf: &mut __B) {
            #( #ref_encodes; )*
        }
    };

    // In the alias case each field is decoded as its borrowed form and converted, so the
    // code type-checks for any `Wire` field type and a wrongly spelled one gives only the
    // `FixedWire` error; for fixed-size types the conversion is a copy.
    let decoded = |v: TokenStream| {
        if alias {
            quote!(#krate::__private::ToOwnedIn::to_owned_in(&#v, &#krate::__private::Backing::none()))
        } else {
            v
        }
    };
    let decoded_field = decoded(quote!(v));
    let decode_calls: Vec<_> = tys
        .iter()
        .zip(&ref_tys)
        .zip(&views)
        .map(|((ty, rt), view)| match view {
            Some(n) => quote!(#krate::__private::decode_view::<#ty, #n>(__r)),
            None => quote!(<#rt as #krate::Decode<'a>>::decode(__r)),
        })
        .collect();
    let decode_body = quote! {
        #[inline]
        fn decode(__r: &mut #krate::Reader<'a>) -> ::core::result::Result<Self, #krate::DecodeError> {
            ::core::result::Result::Ok(Self {
                #(
                    #names: match #decode_calls {
                        ::core::result::Result::Ok(v) => #decoded_field,
                        ::core::result::Result::Err(e) => {
                            return ::core::result::Result::Err(e.in_field(#field_paths))
                        }
                    },
                )*
            })
        }
    };

    // `to_ref` names its lifetime `'a` in the struct case, so that its conversions read
    // like `to_owned_in`'s (and a failed one is reported once for both).
    let (ref_ty_lt, to_ref_sig) = if alias {
        (quote!(#ident), quote!(fn to_ref(&self) -> #ident))
    } else {
        (
            quote!(#ref_ident<'a>),
            quote!(fn to_ref<'a>(&'a self) -> #ref_ident<'a>),
        )
    };
    let ctor = if alias { ident } else { &ref_ident };
    // Owned → borrowed and back, field by field. In the struct case this goes through
    // `__private` helpers that check the twin named by `types::named_twin` really is the
    // field type's `Ref` (one error at the field type if not; identical errors at one
    // span are reported once).
    // In the struct case a field whose twin is named converts through `__private::Twin`,
    // implemented only for this crate's types: a type of the user's own that only shares
    // the name fails there, with one message, at the field type.
    let to_ref_fields: Vec<_> = names
        .iter()
        .zip(&tys)
        .zip(&named_twins)
        .map(|((n, ty), twin)| {
            if alias {
                return decoded(quote!(#krate::Wire::to_ref(&self.#n)));
            }
            match twin {
                Some(twin) => quote_spanned! {ty.span()=>
                    <#ty as #krate::__private::Twin<'a, #twin>>::to_twin(&self.#n)
                },
                None => quote!(#krate::Wire::to_ref(&self.#n)),
            }
        })
        .collect();
    let owned_fields: Vec<_> = names
        .iter()
        .zip(&tys)
        .zip(&named_twins)
        .map(|((n, ty), twin)| {
            if alias {
                return quote!(#krate::__private::ToOwnedIn::to_owned_in(&#krate::Wire::to_ref(&self.#n), __backing));
            }
            match twin {
                Some(twin) => quote_spanned! {ty.span()=>
                    <#ty as #krate::__private::Twin<'a, #twin>>::from_twin(&self.#n, __backing)
                },
                None => quote!(#krate::__private::ToOwnedIn::to_owned_in(&self.#n, __backing)),
            }
        })
        .collect();

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
            #to_ref_sig {
                #ctor { #( #names: #to_ref_fields, )* }
            }
        }

        #[automatically_derived]
        impl<'a> #krate::WireRef<'a> for #ref_ty_lt {
            type Owned = #ident;
        }

        #[automatically_derived]
        impl<'a> #krate::__private::ToOwnedIn<#ident> for #ref_ty_lt {
            // Always inlined: an owned decode builds the value right after validating it,
            // in the message's own decode function. With `#[inline]` only, the compiler
            // keeps the conversion out of line for most messages: a call, and the fields
            // passed through memory, 25-45 of the 160-220 instructions of their owned
            // decodes (sv2c-icount).
            #[inline(always)]
            fn to_owned_in(&self, __backing: &#krate::__private::Backing<'_>) -> #ident {
                #ident { #( #names: #owned_fields, )* }
            }
        }
    };

    let message_impl = input.attrs.message.as_ref().map(|m| {
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
        if alias {
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
    let twin = if alias {
        let alias_doc = format!(
            "Borrowed form of {owned_doc}: every field is fixed-size, so it is the owned type itself (decoding it borrows and allocates nothing)."
        );
        quote! {
            #[doc = #alias_doc]
            #vis type #ref_ident<'a> = #ident;

            #[automatically_derived]
            impl<'a> #krate::Decode<'a> for #ident { #decode_body }
        }
    } else {
        let ref_doc = format!(
            "Borrowed form of {owned_doc}: variable-length fields point into the decoded bytes (no allocation, no copy). Generated by `#[derive(Wire)]`."
        );
        let ref_fields = fields.iter().zip(&ref_tys).map(|(f, t)| {
            let (docs, fvis, name) = (&f.docs, f.vis, f.ident);
            quote! { #( #docs )* #fvis #name: #t }
        });
        let ref_name = ref_ident.to_string();
        quote! {
            #[doc = #ref_doc]
            #vis struct #ref_ident<'a> {
                #( #ref_fields, )*
            }

            #[automatically_derived]
            impl<'a> ::core::fmt::Debug for #ref_ident<'a>
            where
                #( #ref_tys: ::core::fmt::Debug, )*
            {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.debug_struct(#ref_name)
                        #( .field(::core::stringify!(#names), &self.#names) )*
                        .finish()
                }
            }

            #[automatically_derived]
            impl<'a> ::core::clone::Clone for #ref_ident<'a>
            where
                #( #ref_tys: ::core::clone::Clone, )*
            {
                #[inline]
                fn clone(&self) -> Self {
                    Self { #( #names: ::core::clone::Clone::clone(&self.#names), )* }
                }
            }

            #[automatically_derived]
            impl<'a> ::core::marker::Copy for #ref_ident<'a>
            where
                #( #ref_tys: ::core::marker::Copy, )*
            {
            }

            #[automatically_derived]
            impl<'a> ::core::cmp::PartialEq for #ref_ident<'a>
            where
                #( #ref_tys: ::core::cmp::PartialEq, )*
            {
                #[inline]
                fn eq(&self, other: &Self) -> bool {
                    true #( && self.#names == other.#names )*
                }
            }

            #[automatically_derived]
            impl<'a> #krate::Encode for #ref_ident<'a> { #ref_encode_body }

            #[automatically_derived]
            impl<'a> #krate::Decode<'a> for #ref_ident<'a> { #decode_body }
        }
    };

    quote! {
        #twin

        #[automatically_derived]
        impl #krate::Encode for #ident { #encode_body }

        #wire_impl
        #message_impl

        const _: () = {
            #( #checks )*
        };
    }
}

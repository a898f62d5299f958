//! `#[derive(MessageSet)]`: one enum whose variants are message sets (dispatch enums,
//! other derived sets) or single derived messages, composed into one set.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

use crate::attr::crate_path;
use crate::fallback;

/// The whole derive: its output, or its error together with stub impls (so code using the
/// enum adds no errors of its own).
pub(crate) fn derive(input: &DeriveInput, default_crate: syn::Path) -> TokenStream {
    match expand(input, default_crate.clone()) {
        Ok(tokens) => tokens,
        Err(err) => {
            let mut out = err.to_compile_error();
            out.extend(fallback::message_set(input, &default_crate));
            out
        }
    }
}

/// Expands the derive; `default_crate` is the path the generated code names the binary
/// crate by when the enum has no `#[sv2(crate = "...")]`.
pub(crate) fn expand(input: &DeriveInput, default_crate: syn::Path) -> syn::Result<TokenStream> {
    let krate = crate_path(&input.attrs)?.unwrap_or(default_crate);
    let ident = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "#[derive(MessageSet)] does not support generic parameters",
        ));
    }
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            ident.span(),
            "#[derive(MessageSet)] applies to an enum whose variants each hold one message set or message, e.g. `Std(Message)`",
        ));
    };
    if data.variants.is_empty() {
        return Err(syn::Error::new(
            ident.span(),
            "#[derive(MessageSet)] needs at least one variant",
        ));
    }
    let mut names = Vec::new();
    let mut tys = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for v in &data.variants {
        let ty = match &v.fields {
            Fields::Unnamed(f) if f.unnamed.len() == 1 => f.unnamed.first().map(|f| f.ty.clone()),
            _ => None,
        };
        match ty {
            Some(ty) if v.discriminant.is_none() => {
                names.push(v.ident.clone());
                tys.push(ty);
            }
            _ => {
                let e = syn::Error::new(
                    v.span(),
                    "each variant of a #[derive(MessageSet)] enum holds exactly one message set or message: `Name(Type)`",
                );
                match &mut errors {
                    Some(all) => all.combine(e),
                    None => errors = Some(e),
                }
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }

    let vis = &input.vis;
    let ref_ident = format_ident!("{}Ref", ident);
    let ref_doc = format!("Borrowed form of [`{ident}`]: each variant holds its set's `Ref`.");

    // Pairwise overlap checks, each with a message naming the two variants.
    let mut checks = Vec::new();
    for i in 0..tys.len() {
        for j in i + 1..tys.len() {
            let (a, b) = (&tys[i], &tys[j]);
            let (set, va, vb) = (
                ident.to_string(),
                names[i].to_string(),
                names[j].to_string(),
            );
            // The report (the id in hex, both messages) is built by a const fn, because
            // the ids are only known once the variants' `IDS` are evaluated.
            checks.push(quote! {
                {
                    const REPORT: #krate::__private::Overlap = #krate::__private::Overlap::check(
                        #set,
                        #krate::__private::Side {
                            variant: #va,
                            ids: <#a as #krate::MessageSet>::IDS,
                            names: <#a as #krate::MessageSet>::NAMES,
                        },
                        #krate::__private::Side {
                            variant: #vb,
                            ids: <#b as #krate::MessageSet>::IDS,
                            names: <#b as #krate::MessageSet>::NAMES,
                        },
                    );
                    if let ::core::option::Option::Some(msg) = REPORT.message() {
                        ::core::panic!("{}", msg);
                    }
                }
            });
        }
    }
    let ids_const = format_ident!("__{}_IDS_LEN", ident.to_string().to_uppercase());

    Ok(quote! {
        #[doc = #ref_doc]
        #[allow(missing_docs)]
        #vis enum #ref_ident<'a> {
            #( #names(<#tys as #krate::MessageSet>::Ref<'a>), )*
        }

        impl<'a> ::core::fmt::Debug for #ref_ident<'a>
        where
            #( <#tys as #krate::MessageSet>::Ref<'a>: ::core::fmt::Debug, )*
        {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self {
                    #( Self::#names(m) => f.debug_tuple(::core::stringify!(#names)).field(m).finish(), )*
                }
            }
        }

        impl<'a> ::core::clone::Clone for #ref_ident<'a>
        where
            #( <#tys as #krate::MessageSet>::Ref<'a>: ::core::clone::Clone, )*
        {
            fn clone(&self) -> Self {
                match self {
                    #( Self::#names(m) => Self::#names(::core::clone::Clone::clone(m)), )*
                }
            }
        }

        impl<'a> ::core::cmp::PartialEq for #ref_ident<'a>
        where
            #( <#tys as #krate::MessageSet>::Ref<'a>: ::core::cmp::PartialEq, )*
        {
            #[allow(unreachable_patterns)]
            fn eq(&self, other: &Self) -> bool {
                match (self, other) {
                    #( (Self::#names(a), Self::#names(b)) => a == b, )*
                    _ => false,
                }
            }
        }

        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        const #ids_const: usize = #krate::__private::ids_len(&[ #( <#tys as #krate::MessageSet>::IDS, )* ]);

        const _: () = {
            #( #checks )*
        };

        impl #krate::Encode for #ident {
            #[inline]
            fn encoded_len(&self) -> usize {
                match self { #( Self::#names(m) => #krate::Encode::encoded_len(m), )* }
            }
            #[inline]
            fn encode<__B: #krate::__private::BufMut + ?Sized>(&self, __buf: &mut __B) {
                match self { #( Self::#names(m) => #krate::Encode::encode(m, __buf), )* }
            }
        }

        impl #krate::Frameable for #ident {
            #[inline]
            fn wire_extension_type(&self) -> u16 {
                match self { #( Self::#names(m) => #krate::Frameable::wire_extension_type(m), )* }
            }
            #[inline]
            fn msg_type(&self) -> u8 {
                match self { #( Self::#names(m) => #krate::Frameable::msg_type(m), )* }
            }
            #[inline]
            fn put_frame<__B, __E, __F>(&self, __buf: &mut __B, __put_header: __F) -> ::core::result::Result<(), __E>
            where
                __B: #krate::__private::BufMut + ?Sized,
                __E: ::core::convert::From<#krate::PayloadTooLarge>,
                __F: ::core::ops::FnOnce(#krate::Header, &mut __B) -> ::core::result::Result<(), __E>,
            {
                match self { #( Self::#names(m) => #krate::__private::put_variant_frame(m, __buf, __put_header), )* }
            }
        }

        impl<'a> #krate::Encode for #ref_ident<'a> {
            #[inline]
            fn encoded_len(&self) -> usize {
                match self { #( Self::#names(m) => #krate::Encode::encoded_len(m), )* }
            }
            #[inline]
            fn encode<__B: #krate::__private::BufMut + ?Sized>(&self, __buf: &mut __B) {
                match self { #( Self::#names(m) => #krate::Encode::encode(m, __buf), )* }
            }
        }

        impl<'a> #krate::Frameable for #ref_ident<'a> {
            #[inline]
            fn wire_extension_type(&self) -> u16 {
                match self { #( Self::#names(m) => #krate::Frameable::wire_extension_type(m), )* }
            }
            #[inline]
            fn msg_type(&self) -> u8 {
                match self { #( Self::#names(m) => #krate::Frameable::msg_type(m), )* }
            }
            #[inline]
            fn put_frame<__B, __E, __F>(&self, __buf: &mut __B, __put_header: __F) -> ::core::result::Result<(), __E>
            where
                __B: #krate::__private::BufMut + ?Sized,
                __E: ::core::convert::From<#krate::PayloadTooLarge>,
                __F: ::core::ops::FnOnce(#krate::Header, &mut __B) -> ::core::result::Result<(), __E>,
            {
                match self { #( Self::#names(m) => #krate::__private::put_variant_frame(m, __buf, __put_header), )* }
            }
        }

        #(
            impl ::core::convert::From<#tys> for #ident {
                #[inline]
                fn from(m: #tys) -> Self {
                    Self::#names(m)
                }
            }
        )*

        impl #krate::MessageSet for #ident {
            type Ref<'a> = #ref_ident<'a>;

            const IDS: &'static [(u16, u8)] = &#krate::__private::ids_concat::<#ids_const>(
                &[ #( <#tys as #krate::MessageSet>::IDS, )* ]
            );
            const NAMES: &'static [&'static str] = &#krate::__private::names_concat::<#ids_const>(
                &[ #( <#tys as #krate::MessageSet>::IDS, )* ],
                &[ #( <#tys as #krate::MessageSet>::NAMES, )* ],
            );

            fn decode_message(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
            ) -> ::core::result::Result<Self, #krate::DispatchError> {
                #(
                    match <#tys as #krate::MessageSet>::decode_message(extension_type, msg_type, payload) {
                        ::core::result::Result::Ok(m) => return ::core::result::Result::Ok(Self::#names(m)),
                        ::core::result::Result::Err(#krate::DispatchError::Decode(e)) => {
                            return ::core::result::Result::Err(#krate::DispatchError::Decode(e));
                        }
                        ::core::result::Result::Err(_) => {}
                    }
                )*
                ::core::result::Result::Err(#krate::DispatchError::UnknownMessage {
                    extension_id: extension_type & !#krate::CHANNEL_BIT,
                    msg_type,
                })
            }

            fn decode_message_ref(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
            ) -> ::core::result::Result<#ref_ident<'_>, #krate::DispatchError> {
                #(
                    match <#tys as #krate::MessageSet>::decode_message_ref(extension_type, msg_type, payload) {
                        ::core::result::Result::Ok(m) => return ::core::result::Result::Ok(#ref_ident::#names(m)),
                        ::core::result::Result::Err(#krate::DispatchError::Decode(e)) => {
                            return ::core::result::Result::Err(#krate::DispatchError::Decode(e));
                        }
                        ::core::result::Result::Err(_) => {}
                    }
                )*
                ::core::result::Result::Err(#krate::DispatchError::UnknownMessage {
                    extension_id: extension_type & !#krate::CHANNEL_BIT,
                    msg_type,
                })
            }
        }
    })
}

/// Whether `#[sv2(...)]` already names the crate (the facade's entries then leave it).
pub(crate) fn names_crate(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("sv2")).any(|a| {
        let mut found = false;
        let _ = a.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                found = true;
            }
            // Consume any value so parsing continues past it.
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
        found
    })
}

/// Makes generated code name `::sv2c` unless the input names a crate itself (the facade's
/// `Wire` entry).
pub(crate) fn default_to_facade(input: &mut DeriveInput) {
    if !names_crate(&input.attrs) {
        input
            .attrs
            .push(syn::parse_quote!(#[sv2(crate = "::sv2c")]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facade_entry_emits_sv2c_paths_only() {
        let input: DeriveInput = syn::parse_quote! { enum P { A(X), B(Y) } };
        let out = expand(&input, syn::parse_quote!(::sv2c))
            .unwrap()
            .to_string();
        assert!(out.contains(":: sv2c :: MessageSet"), "{out}");
        assert!(!out.contains("sv2c_binary"), "{out}");
        let out = expand(&input, syn::parse_quote!(::sv2c_binary))
            .unwrap()
            .to_string();
        assert!(out.contains(":: sv2c_binary :: MessageSet"));
    }

    #[test]
    fn an_explicit_crate_wins_over_the_default() {
        let input: DeriveInput = syn::parse_quote! {
            #[sv2(crate = "my::path")]
            enum P { A(X) }
        };
        let out = expand(&input, syn::parse_quote!(::sv2c))
            .unwrap()
            .to_string();
        assert!(out.contains("my :: path :: MessageSet"));
        assert!(!out.contains(":: sv2c ::"));
    }

    #[test]
    fn wire_facade_adds_the_crate_once() {
        let mut plain: DeriveInput = syn::parse_quote! {
            #[sv2(msg_type = 1)]
            struct S { a: u32 }
        };
        default_to_facade(&mut plain);
        assert!(names_crate(&plain.attrs));
        let out = crate::expand::derive(&plain).to_string();
        assert!(out.contains(":: sv2c :: Wire"), "{out}");
        assert!(!out.contains("sv2c_binary ::"), "{out}");

        let mut named: DeriveInput = syn::parse_quote! {
            #[sv2(msg_type = 1, crate = "other")]
            struct S { a: u32 }
        };
        let before = named.attrs.len();
        default_to_facade(&mut named);
        assert_eq!(named.attrs.len(), before);
    }
}

//! Picking the borrowed twin of a field type.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{GenericArgument, PathArguments, Type};

/// How a field type behaves in the borrowed form.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Fixed-size, read by value: the borrowed form is the type itself.
    Inline,
    /// One of this crate's variable-length types: a known `…Ref<'a>` twin.
    Borrowed,
    /// Any other `Wire` type: `<T as Wire>::Ref<'a>`.
    Other,
}

/// Names of this crate's fixed-size types (their borrowed form is themselves).
const INLINE: &[&str] = &[
    "u8",
    "u16",
    "u32",
    "u64",
    "f32",
    "bool",
    "U24",
    "U256",
    "PubKey",
    "Signature",
    "Mac",
    "B032",
    "Protocol",
];

/// Names of this crate's length-prefixed types and their twins.
const PREFIXED: &[(&str, &str)] = &[
    ("Str0255", "Str0255Ref"),
    ("B0255", "B0255Ref"),
    ("B064K", "B064KRef"),
    ("B016M", "B016MRef"),
];

/// Names of this crate's sequence types and their twins.
const SEQS: &[(&str, &str)] = &[("Seq0255", "Seq0255Ref"), ("Seq064K", "Seq064KRef")];

/// The borrowed twin of `ty` (with lifetime `'a`) and its kind.
pub(crate) fn borrowed(ty: &Type, krate: &syn::Path) -> (TokenStream, Kind) {
    let other = || (quote!(<#ty as #krate::Wire>::Ref<'a>), Kind::Other);
    let Type::Path(tp) = ty else {
        return other();
    };
    if tp.qself.is_some() {
        return other();
    }
    let Some(last) = tp.path.segments.last() else {
        return other();
    };
    let name = last.ident.to_string();
    let single_arg = || match &last.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match args.args.first() {
            Some(GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    };
    if INLINE.contains(&name.as_str()) && last.arguments.is_empty() {
        return (quote!(#ty), Kind::Inline);
    }
    if let Some((_, twin)) = PREFIXED.iter().find(|(n, _)| *n == name)
        && last.arguments.is_empty()
    {
        let twin = syn::Ident::new(twin, last.ident.span());
        return (quote!(#krate::#twin<'a>), Kind::Borrowed);
    }
    if let Some((_, twin)) = SEQS.iter().find(|(n, _)| *n == name)
        && let Some(elem) = single_arg()
    {
        let twin = syn::Ident::new(twin, last.ident.span());
        return (quote!(#krate::#twin<'a, #elem>), Kind::Borrowed);
    }
    if name == "Option"
        && let Some(inner) = single_arg()
    {
        return match borrowed(inner, krate) {
            (_, Kind::Inline) => (quote!(#ty), Kind::Inline),
            (_, Kind::Other) => other(),
            (twin, Kind::Borrowed) => (quote!(::core::option::Option<#twin>), Kind::Borrowed),
        };
    }
    other()
}

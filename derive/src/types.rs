//! What the derive takes from how a field type is *spelled*. Field types are otherwise
//! used only through the trait system (`<T as Wire>::Ref<'a>`, `<T as Wire>::INLINE`, …),
//! so type aliases and types from any crate work whatever their names. Two things need
//! more than the trait system gives, and for those only the spelling is used, and the
//! compiler then checks it:
//!
//! * Whether `NameRef<'a>` is a type alias of the struct itself: this must be known
//!   while expanding, before any type is resolved. A struct whose every field type is
//!   spelled as one of this crate's fixed-size types gets the alias, and each field is
//!   checked to really be such a type (`__private::FixedWire`).
//! * The variance of `NameRef<'a>`: a field of type `<T as Wire>::Ref<'a>` makes the
//!   struct invariant in `'a` (the compiler cannot see through a projection), where
//!   `Str0255Ref<'a>` keeps it covariant, so a view can be passed where a shorter-lived
//!   one is expected. So a field spelled as one of this crate's types is given that
//!   type's borrowed twin by name, and checked to be exactly `<T as Wire>::Ref<'a>`
//!   (`__private::Twin`).
//!
//! Only bare names and paths through `sv2c_binary::` / `sv2c::` are read this way. A type
//! of your own that merely shares a name is a compile error naming it, never a silent
//! misreading; written as a path (`self::U256`) or through an alias with another name it
//! is read through the trait system like any other type.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{GenericArgument, PathArguments, Type};

/// Names of the fixed-size types that are their own borrowed form.
const FIXED: &[&str] = &[
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

/// Names of the fixed byte arrays a field can borrow (`#[sv2(borrow)]`), with their sizes.
const BYTE_ARRAYS: &[(&str, usize)] =
    &[("U256", 32), ("PubKey", 32), ("Signature", 64), ("Mac", 16)];

/// Names of the length-prefixed types and of their borrowed twins.
const PREFIXED: &[(&str, &str)] = &[
    ("Str0255", "Str0255Ref"),
    ("B0255", "B0255Ref"),
    ("B064K", "B064KRef"),
    ("B016M", "B016MRef"),
];

/// Names of the sequence types and of their borrowed twins.
const SEQS: &[(&str, &str)] = &[("Seq0255", "Seq0255Ref"), ("Seq064K", "Seq064KRef")];

/// A field type as spelled, when it names one of this crate's types.
enum Spelled<'t> {
    /// A fixed-size type: its own borrowed form.
    Fixed,
    /// A length-prefixed type, with the name of its twin.
    Prefixed(&'static str),
    /// A sequence, with the name of its twin and the element type.
    Seq(&'static str, &'t Type),
    /// `Option<inner>`.
    Option(&'t Type),
}

fn spelled(ty: &Type) -> Option<Spelled<'_>> {
    let Type::Path(tp) = ty else {
        return None;
    };
    if tp.qself.is_some() {
        return None;
    }
    let segs = &tp.path.segments;
    let last = segs.last()?;
    let through_us = segs.len() == 1
        || (segs.len() == 2
            && segs
                .first()
                .is_some_and(|s| s.ident == "sv2c_binary" || s.ident == "sv2c"));
    if !through_us {
        return None;
    }
    let single_arg = || match &last.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match args.args.first() {
            Some(GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    };
    match &last.arguments {
        PathArguments::None => {
            if FIXED.iter().any(|n| last.ident == n) {
                Some(Spelled::Fixed)
            } else {
                PREFIXED
                    .iter()
                    .find(|(n, _)| last.ident == n)
                    .map(|(_, twin)| Spelled::Prefixed(twin))
            }
        }
        _ if last.ident == "Option" && segs.len() == 1 => single_arg().map(Spelled::Option),
        _ => {
            let (_, twin) = SEQS.iter().find(|(n, _)| last.ident == n)?;
            single_arg().map(|elem| Spelled::Seq(twin, elem))
        }
    }
}

/// Whether `ty` is spelled as a fixed-size type (or an `Option` of one).
pub(crate) fn spelled_fixed(ty: &Type) -> bool {
    match spelled(ty) {
        Some(Spelled::Fixed) => true,
        Some(Spelled::Option(inner)) => spelled_fixed(inner),
        _ => false,
    }
}

/// What a field marked `#[sv2(borrow)]` becomes in the borrowed twin.
#[derive(Debug, PartialEq)]
pub(crate) enum Borrow {
    /// One of this crate's byte arrays of this size: `&'a [u8; N]`.
    Array(usize),
    /// `B032`: its borrowed form `B032Ref<'a>`.
    B032,
}

/// The borrowed form of `ty` under `#[sv2(borrow)]`, when it is spelled as one of the types
/// the attribute applies to.
pub(crate) fn borrow_kind(ty: &Type) -> Option<Borrow> {
    let Some(Spelled::Fixed) = spelled(ty) else {
        return None;
    };
    let Type::Path(tp) = ty else {
        return None;
    };
    let last = tp.path.segments.last()?;
    if last.ident == "B032" {
        return Some(Borrow::B032);
    }
    BYTE_ARRAYS
        .iter()
        .find(|(n, _)| last.ident == n)
        .map(|(_, len)| Borrow::Array(*len))
}

/// The borrowed twin of `ty` (with lifetime `lt`) named directly, when `ty` is spelled as one
/// of this crate's types; `None` means "use `<T as Wire>::Ref<'a>`".
pub(crate) fn named_twin(ty: &Type, krate: &syn::Path, lt: &TokenStream) -> Option<TokenStream> {
    Some(match spelled(ty)? {
        Spelled::Fixed => quote!(#ty),
        Spelled::Prefixed(twin) => {
            let twin = syn::Ident::new(twin, proc_macro2::Span::call_site());
            quote!(#krate::#twin<#lt>)
        }
        Spelled::Seq(twin, elem) => {
            let twin = syn::Ident::new(twin, proc_macro2::Span::call_site());
            quote!(#krate::#twin<#lt, #elem>)
        }
        Spelled::Option(inner) => {
            let inner = named_twin(inner, krate, lt)?;
            quote!(::core::option::Option<#inner>)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(src: &str) -> bool {
        spelled_fixed(&syn::parse_str(src).unwrap())
    }

    #[test]
    fn twins_are_named_only_for_our_spellings() {
        let krate: syn::Path = syn::parse_quote!(::k);
        let twin = |src: &str| {
            named_twin(&syn::parse_str(src).unwrap(), &krate, &quote!('a)).map(|t| t.to_string())
        };
        assert_eq!(
            twin("Str0255").as_deref(),
            Some(":: k :: Str0255Ref < 'a >")
        );
        assert_eq!(
            twin("Seq064K<U256>").as_deref(),
            Some(":: k :: Seq064KRef < 'a , U256 >")
        );
        assert_eq!(
            twin("Option<B0255>").as_deref(),
            Some(":: core :: option :: Option < :: k :: B0255Ref < 'a > >")
        );
        assert_eq!(twin("u32").as_deref(), Some("u32"));
        for none in ["Hash", "user::B0255", "Option<Hash>", "Vec<u8>"] {
            assert_eq!(twin(none), None, "{none}");
        }
    }

    #[test]
    fn only_bare_or_crate_paths_of_fixed_types_are_taken_as_fixed() {
        for yes in [
            "u32",
            "U256",
            "sv2c_binary::U24",
            "sv2c::B032",
            "Option<U256>",
        ] {
            assert!(fixed(yes), "{yes}");
        }
        for no in [
            "Str0255",
            "Hash",
            "self::U256",
            "my::U256",
            "Option<Str0255>",
            "Seq0255<U256>",
            "[u8; 4]",
            "U256<T>",
        ] {
            assert!(!fixed(no), "{no}");
        }
    }

    #[test]
    fn only_our_byte_arrays_and_b032_can_be_borrowed() {
        let kind = |src: &str| borrow_kind(&syn::parse_str(src).unwrap());
        assert_eq!(kind("U256"), Some(Borrow::Array(32)));
        assert_eq!(kind("sv2c::PubKey"), Some(Borrow::Array(32)));
        assert_eq!(kind("sv2c_binary::Signature"), Some(Borrow::Array(64)));
        assert_eq!(kind("Mac"), Some(Borrow::Array(16)));
        assert_eq!(kind("sv2c::B032"), Some(Borrow::B032));
        for no in [
            "u32",
            "U24",
            "Str0255",
            "self::U256",
            "Option<U256>",
            "[u8; 32]",
        ] {
            assert_eq!(kind(no), None, "{no}");
        }
    }
}

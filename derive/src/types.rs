//! The one decision the derive takes from how a field type is *spelled*: whether the
//! borrowed twin `NameRef<'a>` can be a type alias of the struct itself.
//!
//! Everything else about a field type goes through the trait system
//! (`<T as Wire>::Ref<'a>`, `<T as Wire>::INLINE`, …), so type aliases and types from any
//! crate work. This one cannot: whether to emit `type NameRef<'a> = Name;` or a new
//! struct must be known while expanding, before any type is resolved. So a struct whose
//! every field type is spelled as one of the fixed-size types below gets the alias, and
//! the generated code then asks the compiler to confirm each field type really is a
//! fixed-size type that is its own borrowed form (`__private::FixedWire`): a type of your
//! own that only shares the name is a compile error naming it, never a silent
//! misreading. Any other spelling (an alias such as `type Hash = U256;`, a path such as
//! `self::U256`) gets a generated struct, which is correct for every `Wire` type.

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

/// Whether `ty` is spelled as a fixed-size type (or an `Option` of one): a bare name, or
/// a path through `sv2c_binary` / `sv2c`.
pub(crate) fn spelled_fixed(ty: &Type) -> bool {
    let Type::Path(tp) = ty else {
        return false;
    };
    if tp.qself.is_some() {
        return false;
    }
    let segs = &tp.path.segments;
    let Some(last) = segs.last() else {
        return false;
    };
    let through_us = segs.len() == 1
        || (segs.len() == 2
            && segs
                .first()
                .is_some_and(|s| s.ident == "sv2c_binary" || s.ident == "sv2c"));
    if !through_us {
        return false;
    }
    match &last.arguments {
        PathArguments::None => FIXED.iter().any(|n| last.ident == n),
        PathArguments::AngleBracketed(args) if last.ident == "Option" && segs.len() == 1 => {
            match args.args.first() {
                Some(GenericArgument::Type(inner)) if args.args.len() == 1 => spelled_fixed(inner),
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(src: &str) -> bool {
        spelled_fixed(&syn::parse_str(src).unwrap())
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
}

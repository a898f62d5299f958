//! Parsing and validating `#[sv2(...)]`.

use syn::spanned::Spanned;
use syn::{Attribute, LitInt, LitStr};

/// Attribute names, kept in one place.
const SV2: &str = "sv2";
const MSG_TYPE: &str = "msg_type";
const EXTENSION_TYPE: &str = "extension_type";
const CHANNEL_MSG: &str = "channel_msg";
const NAME: &str = "name";
const CRATE: &str = "crate";
const BORROW: &str = "borrow";

/// The message constants, when the struct is a message.
pub(crate) struct MessageAttrs {
    pub(crate) msg_type: u8,
    pub(crate) extension_type: u16,
    pub(crate) channel_msg: bool,
    pub(crate) name: String,
}

/// Everything `#[sv2(...)]` says about a struct.
pub(crate) struct StructAttrs {
    pub(crate) message: Option<MessageAttrs>,
    pub(crate) krate: syn::Path,
    /// Span of `channel_msg`, for errors about the first field.
    pub(crate) channel_msg_span: Option<proc_macro2::Span>,
}

/// Collects errors so that every mistake is reported at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, err: syn::Error) {
        match &mut self.0 {
            Some(e) => e.combine(err),
            None => self.0 = Some(err),
        }
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Parses a field's `#[sv2(...)]`: only `borrow` is known there. Returns its span.
pub(crate) fn parse_field(attrs: &[Attribute], errors: &mut Errors) -> Option<proc_macro2::Span> {
    let mut borrow = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident(SV2)) {
        let res = attr.parse_nested_meta(|meta| {
            let key = meta.path.clone();
            if !key.is_ident(BORROW) {
                return Err(syn::Error::new(
                    key.span(),
                    "unknown `sv2` field attribute key; expected: borrow",
                ));
            }
            if borrow.is_some() {
                return Err(syn::Error::new(key.span(), "duplicate `sv2` attribute key"));
            }
            borrow = Some(key.span());
            Ok(())
        });
        if let Err(e) = res {
            errors.push(e);
        }
    }
    borrow
}

pub(crate) fn parse(ident: &syn::Ident, attrs: &[Attribute], errors: &mut Errors) -> StructAttrs {
    let mut msg_type: Option<u8> = None;
    let mut extension_type: Option<(u16, proc_macro2::Span)> = None;
    let mut channel_msg: Option<proc_macro2::Span> = None;
    let mut name: Option<(String, proc_macro2::Span)> = None;
    let mut krate: Option<syn::Path> = None;

    for attr in attrs.iter().filter(|a| a.path().is_ident(SV2)) {
        let res = attr.parse_nested_meta(|meta| {
            let key = meta.path.clone();
            let dup = |present: bool| -> syn::Result<()> {
                if present {
                    Err(syn::Error::new(key.span(), "duplicate `sv2` attribute key"))
                } else {
                    Ok(())
                }
            };
            if key.is_ident(MSG_TYPE) {
                dup(msg_type.is_some())?;
                let lit: LitInt = meta.value()?.parse()?;
                let v: u8 = lit.base10_parse().map_err(|_| {
                    syn::Error::new(lit.span(), "msg_type must be an integer in 0..=255")
                })?;
                msg_type = Some(v);
            } else if key.is_ident(EXTENSION_TYPE) {
                dup(extension_type.is_some())?;
                let lit: LitInt = meta.value()?.parse()?;
                let v: u16 = lit
                    .base10_parse()
                    .ok()
                    .filter(|v| *v <= 0x7fff)
                    .ok_or_else(|| {
                        syn::Error::new(
                            lit.span(),
                            "extension_type must be in 0..=0x7FFF (bit 15 is the channel_msg bit; use `channel_msg`)",
                        )
                    })?;
                extension_type = Some((v, key.span()));
            } else if key.is_ident(CHANNEL_MSG) {
                dup(channel_msg.is_some())?;
                channel_msg = Some(key.span());
            } else if key.is_ident(NAME) {
                dup(name.is_some())?;
                let lit: LitStr = meta.value()?.parse()?;
                name = Some((lit.value(), key.span()));
            } else if key.is_ident(CRATE) {
                dup(krate.is_some())?;
                let lit: LitStr = meta.value()?.parse()?;
                krate = Some(lit.parse()?);
            } else {
                return Err(syn::Error::new(
                    key.span(),
                    "unknown `sv2` attribute key; expected one of: msg_type, extension_type, channel_msg, name, crate",
                ));
            }
            Ok(())
        });
        if let Err(e) = res {
            errors.push(e);
        }
    }

    let message = match msg_type {
        Some(msg_type) => Some(MessageAttrs {
            msg_type,
            extension_type: extension_type.map_or(0, |(v, _)| v),
            channel_msg: channel_msg.is_some(),
            name: name.map_or_else(|| ident.to_string(), |(n, _)| n),
        }),
        None => {
            let orphan = [
                extension_type.map(|(_, s)| (s, EXTENSION_TYPE)),
                channel_msg.map(|s| (s, CHANNEL_MSG)),
                name.map(|(_, s)| (s, NAME)),
            ];
            for (span, key) in orphan.into_iter().flatten() {
                errors.push(syn::Error::new(
                    span,
                    format!("`{key}` only applies to messages: add `msg_type = ...`"),
                ));
            }
            None
        }
    };

    StructAttrs {
        message,
        krate: krate.unwrap_or_else(|| syn::parse_quote!(::sv2c_binary)),
        channel_msg_span: channel_msg,
    }
}

/// `#[sv2(crate = "path")]` on a `#[derive(MessageSet)]` enum, if present.
pub(crate) fn crate_path(attrs: &[syn::Attribute]) -> syn::Result<Option<syn::Path>> {
    let mut out = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident(SV2)) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(CRATE) {
                let lit: LitStr = meta.value()?.parse()?;
                out = Some(lit.parse()?);
                Ok(())
            } else {
                Err(meta.error("the only `sv2` key on a #[derive(MessageSet)] enum is `crate`"))
            }
        })?;
    }
    Ok(out)
}

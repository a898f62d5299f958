//! Step 2 of `#[derive(Wire)]`: the rules a parsed struct must follow that syntax alone
//! can check. Rules about field *types* are left to the compiler (see `expand`), which
//! knows what a name resolves to.

use syn::spanned::Spanned;

use crate::ast::Struct;
use crate::attr::Errors;
use crate::types;

pub(crate) fn check(input: &Struct<'_>, errors: &mut Errors) {
    if let Some(generics) = input.generics {
        errors.push(syn::Error::new(
            generics.span(),
            "`Wire` does not support generic parameters or lifetimes: write the owned form; the borrowed `Ref<'a>` twin is generated",
        ));
    }

    // Spec §2.2: a channel message's payload starts with its U32 channel id. The name is
    // checked here; that its type is `u32` is checked by the compiler (an alias of `u32`
    // is fine), through `__private::ChannelId`.
    let channel_fields = input.attrs.channel_msg_span.zip(input.fields.as_ref());
    if let Some((span, fields)) =
        channel_fields.filter(|(_, fields)| fields.first().is_none_or(|f| f.ident != "channel_id"))
    {
        let at = fields.first().map_or(span, |f| f.ident.span());
        errors.push(syn::Error::new(
            at,
            "a `channel_msg` message must start with `channel_id: u32` (spec §2.2: the first 4 payload bytes are the channel id)",
        ));
    }

    // `#[sv2(borrow)]` makes the twin hold a view into the input: only for the types in
    // `types::borrow_kind`.
    for f in input.fields.iter().flatten() {
        if let Some(span) = f.borrow.filter(|_| types::borrow_kind(f.ty).is_none()) {
            errors.push(syn::Error::new(
                span,
                "`borrow` applies to fields of type U256, PubKey, Signature, Mac (the borrowed twin then holds `&'a [u8; N]` pointing into the input) or B032 (`B032Ref<'a>`)",
            ));
        }
    }
}

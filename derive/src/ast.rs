//! Step 1 of `#[derive(Wire)]`: parse the input into the model the later steps use,
//! collecting every error instead of stopping at the first.

use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Type, Visibility};

use crate::attr::{self, Errors, StructAttrs};

/// A struct the derive applies to.
pub(crate) struct Struct<'i> {
    pub(crate) ident: &'i syn::Ident,
    pub(crate) vis: &'i Visibility,
    /// `None` when the input is not a struct with named fields (already an error).
    pub(crate) fields: Option<Vec<Field<'i>>>,
    pub(crate) attrs: StructAttrs,
    /// The input has generic parameters or a where clause (validation rejects it).
    pub(crate) generics: Option<&'i syn::Generics>,
}

/// One field, in wire order.
pub(crate) struct Field<'i> {
    pub(crate) ident: &'i syn::Ident,
    pub(crate) ty: &'i Type,
    pub(crate) vis: &'i Visibility,
    /// The field's `///` docs, copied onto the borrowed twin.
    pub(crate) docs: Vec<&'i Attribute>,
    /// `#[sv2(borrow)]`: the borrowed twin holds a reference to the field's bytes instead
    /// of a copy (span of the key, for errors).
    pub(crate) borrow: Option<proc_macro2::Span>,
}

pub(crate) fn parse<'i>(input: &'i DeriveInput, errors: &mut Errors) -> Struct<'i> {
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => Some(
                named
                    .named
                    .iter()
                    .filter_map(|f| {
                        Some(Field {
                            ident: f.ident.as_ref()?,
                            ty: &f.ty,
                            vis: &f.vis,
                            docs: f
                                .attrs
                                .iter()
                                .filter(|a| a.path().is_ident("doc"))
                                .collect(),
                            borrow: attr::parse_field(&f.attrs, errors),
                        })
                    })
                    .collect(),
            ),
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
    let generics = (!input.generics.params.is_empty() || input.generics.where_clause.is_some())
        .then_some(&input.generics);
    Struct {
        ident: &input.ident,
        vis: &input.vis,
        fields,
        attrs: attr::parse(&input.ident, &input.attrs, errors),
        generics,
    }
}

//! Request ids: [`Id`] (owned) and [`IdRef`] (borrowed from a line).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

/// A JSON-RPC id: a non-negative integer (what firmware sends), a string, or `null`
/// (notifications). A message without an `"id"` member reads as `Null`; a negative or
/// fractional id makes the line [invalid](crate::InvalidKind::Id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Id {
    /// `"id": 4`.
    Num(u64),
    /// `"id": "a1"`.
    Str(String),
    /// `"id": null`, or no id.
    #[default]
    Null,
}

impl Id {
    /// Reads the `"id"` member's value (`None`: no such member).
    pub(crate) fn from_json(v: Option<&Value>) -> Option<Id> {
        match v {
            None | Some(Value::Null) => Some(Id::Null),
            Some(Value::Number(n)) => n.as_u64().map(Id::Num),
            Some(Value::String(s)) => Some(Id::Str(s.clone())),
            Some(_) => None,
        }
    }

    /// The same id, borrowed.
    pub fn as_ref(&self) -> IdRef<'_> {
        match self {
            Id::Num(n) => IdRef::Num(*n),
            Id::Str(s) => IdRef::Str(Cow::Borrowed(s)),
            Id::Null => IdRef::Null,
        }
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Num(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::Str(s.to_owned())
    }
}

/// As JSON: `4`, `"a1"`, `null`.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_ref().fmt(f)
    }
}

/// An [`Id`] borrowed from the line it was read from. A string id is borrowed unless it
/// holds JSON escapes (then it is unescaped into an owned string: the only case in which
/// reading one allocates).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum IdRef<'a> {
    /// `"id": 4`.
    Num(u64),
    /// `"id": "a1"`.
    Str(Cow<'a, str>),
    /// `"id": null`, or no id.
    #[default]
    Null,
}

impl IdRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> Id {
        match self {
            IdRef::Num(n) => Id::Num(*n),
            IdRef::Str(s) => Id::Str(s.as_ref().to_owned()),
            IdRef::Null => Id::Null,
        }
    }
}

/// As JSON: `4`, `"a1"`, `null`.
impl fmt::Display for IdRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdRef::Num(n) => write!(f, "{n}"),
            IdRef::Str(s) => write!(f, "{}", Value::from(s.as_ref())),
            IdRef::Null => f.write_str("null"),
        }
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for IdRef<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;

        impl<'de> Visitor<'de> for IdVisitor {
            type Value = IdRef<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer, a string or null")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(IdRef::Num(v))
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(IdRef::Str(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(IdRef::Str(Cow::Owned(v.to_owned())))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(IdRef::Null)
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(IdRef::Null)
            }
        }

        d.deserialize_any(IdVisitor)
    }
}

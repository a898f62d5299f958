//! `serde` support (feature `serde`): the JSON mapping of the golden vectors, documented
//! with the messages ([`messages`](crate::messages#json-feature-serde-on-by-default)).
//! Binary formats get bytes for the byte types and `f32` for F32. Deserializing checks
//! every bound and returns a serde error, never panics; hex input may use either case.
//!
//! **F32.** A finite value is written as the number whose shortest decimal form is exact
//! for the f32 (e.g. `728189.625`). JSON has no NaN or infinity, so those are strings:
//! `"inf"`, `"-inf"`, `"NaN"` (the canonical quiet NaN `0x7fc00000`) or `"NaN:0x7fc00001"`
//! (any other NaN, with its exact bits). Deserializing accepts numbers (rejecting finite
//! ones beyond the f32 range) and these strings.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::Wire;
use crate::messages::Protocol;
use crate::tlv::TlvBuf;
use crate::types::hex_digit;
use crate::types::{
    B016M, B032, B064K, B0255, Mac, PubKey, Seq064K, Seq0255, Signature, Str0255, U24, U256,
};

// ===== hex =====

const HEX: &[u8; 16] = b"0123456789abcdef";

fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    s
}

/// Decodes hex of at most `max` bytes; the length is checked before allocating.
fn from_hex<E: de::Error>(s: &str, max: usize, what: &str) -> Result<Vec<u8>, E> {
    let digits = s.as_bytes();
    if digits.len() % 2 != 0 {
        return Err(E::custom(format!(
            "{what}: hex string has an odd number of digits ({})",
            digits.len()
        )));
    }
    let len = digits.len() / 2;
    if len > max {
        return Err(E::invalid_length(
            len,
            &format!("{what}: at most {max} bytes").as_str(),
        ));
    }
    let mut out = Vec::with_capacity(len);
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        let (Some(&hi), Some(&lo)) = (pair.first(), pair.get(1)) else {
            break;
        };
        match (hex_digit(hi), hex_digit(lo)) {
            (Some(h), Some(l)) => out.push(h << 4 | l),
            _ => {
                return Err(E::custom(format!(
                    "{what}: invalid hex digit at position {}",
                    2 * i
                )));
            }
        }
    }
    Ok(out)
}

/// Serializes bytes as lowercase hex (human-readable formats) or as bytes.
struct HexBytes<'a>(&'a [u8]);

impl Serialize for HexBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&to_hex(self.0))
        } else {
            s.serialize_bytes(self.0)
        }
    }
}

/// Reads bytes of at most `max` (exactly `max` if `exact`): a hex string, raw bytes or a
/// sequence of numbers.
struct BytesVisitor {
    max: usize,
    exact: bool,
    what: &'static str,
}

impl BytesVisitor {
    fn check<E: de::Error>(&self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        if v.len() > self.max || (self.exact && v.len() != self.max) {
            return Err(E::invalid_length(v.len(), self));
        }
        Ok(v)
    }

    fn deserialize<'de, D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        if d.is_human_readable() {
            d.deserialize_str(self)
        } else {
            d.deserialize_bytes(self)
        }
    }
}

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bound = if self.exact { "exactly" } else { "at most" };
        write!(
            f,
            "{}: a hex string of {bound} {} bytes",
            self.what, self.max
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        let bytes = from_hex(v, self.max, self.what)?;
        self.check(bytes)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        if v.len() > self.max {
            return Err(E::invalid_length(v.len(), &self));
        }
        self.check(v.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        self.check(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max));
        while let Some(b) = seq.next_element::<u8>()? {
            if out.len() == self.max {
                return Err(de::Error::invalid_length(out.len() + 1, &self));
            }
            out.push(b);
        }
        self.check(out)
    }
}

// ===== fixed-size byte arrays =====

macro_rules! serde_array {
    ($t:ident, $n:literal, $what:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                HexBytes(&self.0).serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = BytesVisitor {
                    max: $n,
                    exact: true,
                    what: $what,
                }
                .deserialize(d)?;
                $t::try_from(v.as_slice()).map_err(de::Error::custom)
            }
        }
    };
}

serde_array!(U256, 32, "U256");
serde_array!(PubKey, 32, "PUBKEY");
serde_array!(Signature, 64, "SIGNATURE");
serde_array!(Mac, 16, "MAC");

// ===== length-prefixed bytes =====

macro_rules! serde_prefixed {
    ($t:ident, $what:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                HexBytes(self.as_ref()).serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = BytesVisitor {
                    max: $t::MAX_LEN,
                    exact: false,
                    what: $what,
                }
                .deserialize(d)?;
                $t::try_from(v).map_err(de::Error::custom)
            }
        }
    };
}

serde_prefixed!(B032, "B0_32");
serde_prefixed!(B0255, "B0_255");
serde_prefixed!(B064K, "B0_64K");
serde_prefixed!(B016M, "B0_16M");

// ===== STR0_255 =====

const STR_HEX_KEY: &str = "hex";

impl Serialize for Str0255 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return s.serialize_bytes(self.as_bytes());
        }
        match self.as_str() {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(STR_HEX_KEY, &HexBytes(self.as_bytes()))?;
                map.end()
            }
        }
    }
}

struct StrVisitor;

impl StrVisitor {
    fn bytes<E: de::Error>(v: Vec<u8>) -> Result<Str0255, E> {
        let len = v.len();
        Str0255::try_from(v).map_err(|_| E::invalid_length(len, &StrVisitor))
    }
}

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str0255;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("STR0_255: a string of at most 255 UTF-8 bytes, or {\"hex\": \"...\"} of at most 255 bytes")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Str0255, E> {
        self.visit_bytes(v.as_bytes())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Str0255, E> {
        Self::bytes(v.into_bytes())
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Str0255, E> {
        if v.len() > Str0255::MAX_LEN {
            return Err(E::invalid_length(v.len(), &self));
        }
        Self::bytes(v.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Str0255, E> {
        Self::bytes(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Str0255, A::Error> {
        let visitor = BytesVisitor {
            max: Str0255::MAX_LEN,
            exact: false,
            what: "STR0_255",
        };
        Self::bytes(visitor.visit_seq(seq)?)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Str0255, A::Error> {
        let Some(key) = map.next_key::<String>()? else {
            return Err(de::Error::missing_field(STR_HEX_KEY));
        };
        if key != STR_HEX_KEY {
            return Err(de::Error::unknown_field(&key, &[STR_HEX_KEY]));
        }
        let hex: String = map.next_value()?;
        if map.next_key::<String>()?.is_some() {
            return Err(de::Error::custom(
                "STR0_255: the hex form has only the key \"hex\"",
            ));
        }
        Self::bytes(from_hex(&hex, Str0255::MAX_LEN, "STR0_255")?)
    }
}

impl<'de> Deserialize<'de> for Str0255 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            d.deserialize_any(StrVisitor)
        } else {
            d.deserialize_bytes(StrVisitor)
        }
    }
}

// ===== sequences =====

struct SeqVisitor<T> {
    max: usize,
    what: &'static str,
    _t: PhantomData<fn() -> T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for SeqVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: an array of at most {} elements",
            self.what, self.max
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // Do not trust the size hint beyond a modest preallocation.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max).min(4096));
        while let Some(item) = seq.next_element::<T>()? {
            if out.len() == self.max {
                return Err(de::Error::invalid_length(out.len() + 1, &self));
            }
            out.push(item);
        }
        Ok(out)
    }
}

macro_rules! serde_seq {
    ($t:ident, $what:literal) => {
        impl<T: Wire + Serialize> Serialize for $t<T> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.iter())
            }
        }

        impl<'de, T: Wire + Deserialize<'de>> Deserialize<'de> for $t<T> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let items = d.deserialize_seq(SeqVisitor::<T> {
                    max: $t::<T>::MAX_LEN,
                    what: $what,
                    _t: PhantomData,
                })?;
                $t::from_slice(&items).map_err(de::Error::custom)
            }
        }
    };
}

serde_seq!(Seq0255, "SEQ0_255");
serde_seq!(Seq064K, "SEQ0_64K");

// ===== numbers =====

impl Serialize for U24 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.get())
    }
}

impl<'de> Deserialize<'de> for U24 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u32::deserialize(d)?;
        U24::try_from(v).map_err(|_| {
            de::Error::invalid_value(
                de::Unexpected::Unsigned(v.into()),
                &"a U24 (at most 16777215)",
            )
        })
    }
}

impl Serialize for Protocol {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.as_u8())
    }
}

impl<'de> Deserialize<'de> for Protocol {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u8::deserialize(d)?;
        Protocol::from_u8(v).ok_or_else(|| {
            de::Error::invalid_value(
                de::Unexpected::Unsigned(v.into()),
                &"a protocol id: 0 (Mining), 1 (Job Declaration) or 2 (Template Distribution)",
            )
        })
    }
}

/// `#[serde(with = ...)]` for `F32` fields: see the module docs.
pub(crate) mod f32_field {
    use super::*;

    const CANONICAL_NAN: u32 = 0x7fc0_0000;

    pub(crate) fn serialize<S: Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return s.serialize_f32(*v);
        }
        if v.is_finite() {
            // Widening is exact, and the shortest f64 decimal of it is exact too.
            s.serialize_f64(f64::from(*v))
        } else if v.is_infinite() {
            s.serialize_str(if *v > 0.0 { "inf" } else { "-inf" })
        } else if v.to_bits() == CANONICAL_NAN {
            s.serialize_str("NaN")
        } else {
            s.serialize_str(&format!("NaN:{:#010x}", v.to_bits()))
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
        if d.is_human_readable() {
            d.deserialize_any(F32Visitor)
        } else {
            d.deserialize_f32(F32Visitor)
        }
    }

    struct F32Visitor;

    impl Visitor<'_> for F32Visitor {
        type Value = f32;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("F32: a number in the f32 range, \"inf\", \"-inf\", \"NaN\" or \"NaN:0x<8 hex digits>\"")
        }

        fn visit_f32<E: de::Error>(self, v: f32) -> Result<f32, E> {
            Ok(v)
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f32, E> {
            let narrow = v as f32;
            if v.is_finite() && !narrow.is_finite() {
                return Err(E::invalid_value(de::Unexpected::Float(v), &self));
            }
            Ok(narrow)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f32, E> {
            Ok(v as f32)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f32, E> {
            Ok(v as f32)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<f32, E> {
            match v {
                "inf" | "+inf" | "Infinity" => Ok(f32::INFINITY),
                "-inf" | "-Infinity" => Ok(f32::NEG_INFINITY),
                "NaN" | "nan" => Ok(f32::from_bits(CANONICAL_NAN)),
                _ => {
                    let bits = v
                        .strip_prefix("NaN:0x")
                        .filter(|h| h.len() == 8)
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .map(f32::from_bits)
                        .filter(|f| f.is_nan());
                    bits.ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }
    }
}

// ===== TLV records =====

/// `{"extension_type": 2, "field_type": 1, "value": "<hex>"}`, as in the vectors.
impl Serialize for TlvBuf {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Tlv", 3)?;
        st.serialize_field("extension_type", &self.extension_type())?;
        st.serialize_field("field_type", &self.field_type())?;
        st.serialize_field("value", &HexBytes(self.value()))?;
        st.end()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TlvRepr {
    extension_type: u16,
    field_type: u8,
    value: B064K,
}

impl<'de> Deserialize<'de> for TlvBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = TlvRepr::deserialize(d)?;
        TlvBuf::from_shared(t.extension_type, t.field_type, t.value.into_inner())
            .map_err(de::Error::custom)
    }
}

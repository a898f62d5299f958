//! Writing JSON lines straight into the codec's write buffer.

use std::io::Write;

use bytes::{BufMut, BytesMut};
use serde::Serialize;

use crate::hex;
use crate::id::IdRef;

/// The largest integer an `f64` holds exactly: a whole number up to it is written without
/// a fraction (`1024`, not `1024.0`).
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// A JSON writer over a `BytesMut`. Writing into memory cannot fail, so none of its
/// methods return errors.
pub(crate) struct Out<'a>(pub(crate) &'a mut BytesMut);

impl Out<'_> {
    pub(crate) fn raw(&mut self, s: &[u8]) -> &mut Self {
        self.0.extend_from_slice(s);
        self
    }

    /// Any serializable value (strings with their escapes, numbers, `Value`s).
    pub(crate) fn val<T: Serialize + ?Sized>(&mut self, v: &T) -> &mut Self {
        // Writing into a `BytesMut` cannot fail, and our values (strings, numbers, `Value`)
        // always serialize.
        let _ = serde_json::to_writer((&mut *self.0).writer(), v);
        self
    }

    pub(crate) fn u64(&mut self, n: u64) -> &mut Self {
        let _ = write!((&mut *self.0).writer(), "{n}");
        self
    }

    /// A number: whole numbers without a fraction, others in their shortest exact form.
    pub(crate) fn f64(&mut self, x: f64) -> &mut Self {
        if x.fract() == 0.0 && x.abs() <= EXACT_INT {
            let _ = write!((&mut *self.0).writer(), "{}", x as i64); // exact: checked above
            self
        } else {
            self.val(&x)
        }
    }

    /// Bytes as a string of lowercase hex digits.
    pub(crate) fn hex(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.put_u8(b'"');
        hex::encode_into(bytes, self.0);
        self.0.put_u8(b'"');
        self
    }

    /// A 32-bit word as a string of 8 hex digits.
    pub(crate) fn word(&mut self, v: u32) -> &mut Self {
        self.0.put_u8(b'"');
        self.0.extend_from_slice(&hex::u32_digits(v));
        self.0.put_u8(b'"');
        self
    }

    pub(crate) fn id(&mut self, id: &IdRef<'_>) -> &mut Self {
        match id {
            IdRef::Num(n) => self.u64(*n),
            IdRef::Str(s) => self.val(s.as_ref()),
            IdRef::Null => self.raw(b"null"),
        }
    }

    /// `{"id":…,` and `"jsonrpc":"2.0",` if asked: the start of every message.
    pub(crate) fn head(&mut self, id: &IdRef<'_>, jsonrpc2: bool) -> &mut Self {
        self.raw(b"{\"id\":").id(id).raw(b",");
        if jsonrpc2 {
            self.raw(b"\"jsonrpc\":\"2.0\",");
        }
        self
    }
}

/// A number as a JSON value: whole numbers as integers.
pub(crate) fn number(x: f64) -> serde_json::Value {
    if x.fract() == 0.0 && x.abs() <= EXACT_INT {
        serde_json::Value::from(x as i64) // exact: checked above
    } else {
        serde_json::Value::from(x)
    }
}

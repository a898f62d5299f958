//! Reading a known method's `"params"` array (or a response's result) from a JSON value.

use serde_json::Value;

use crate::error::ParamsError;
use crate::hex::{self, Extranonce};

/// The parameters of one message, by position. Missing and `null` parameters read alike.
#[derive(Clone, Copy)]
pub(crate) struct Params<'a>(pub(crate) &'a [Value]);

impl<'a> Params<'a> {
    /// The array in `v`; `null` (or no `"params"`) is the empty array.
    pub(crate) fn of(v: &'a Value) -> Result<Self, ParamsError> {
        match v {
            Value::Array(a) => Ok(Params(a)),
            Value::Null => Ok(Params(&[])),
            _ => Err(ParamsError::NotArray),
        }
    }

    /// Checks that there are between `min` and `max` parameters.
    pub(crate) fn count(
        self,
        min: usize,
        max: usize,
        expected: &'static str,
    ) -> Result<Self, ParamsError> {
        if (min..=max).contains(&self.0.len()) {
            Ok(self)
        } else {
            Err(ParamsError::Count {
                got: self.0.len(),
                expected,
            })
        }
    }

    fn get(self, i: usize) -> Option<&'a Value> {
        self.0.get(i).filter(|v| !v.is_null())
    }

    pub(crate) fn opt_str(
        self,
        i: usize,
        field: &'static str,
    ) -> Result<Option<&'a str>, ParamsError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(wrong(field, "a string")),
        }
    }

    pub(crate) fn str(self, i: usize, field: &'static str) -> Result<&'a str, ParamsError> {
        self.opt_str(i, field)?.ok_or(wrong(field, "a string"))
    }

    pub(crate) fn word(self, i: usize, field: &'static str) -> Result<u32, ParamsError> {
        hex::parse_u32(self.str(i, field)?).ok_or(wrong(field, "1 to 8 hex digits"))
    }

    pub(crate) fn bytes(self, i: usize, field: &'static str) -> Result<Vec<u8>, ParamsError> {
        hex::field(hex::decode_vec(self.str(i, field)?), field)
    }

    pub(crate) fn hash(self, i: usize, field: &'static str) -> Result<[u8; 32], ParamsError> {
        hash(self.get(i), field)
    }

    pub(crate) fn extranonce(
        self,
        i: usize,
        field: &'static str,
    ) -> Result<Extranonce, ParamsError> {
        Extranonce::from_hex(self.str(i, field)?).ok_or(wrong(field, "at most 32 bytes in hex"))
    }

    pub(crate) fn f64(self, i: usize, field: &'static str) -> Result<f64, ParamsError> {
        self.get(i)
            .and_then(Value::as_f64)
            .ok_or(wrong(field, "a number"))
    }

    pub(crate) fn opt_u64(self, i: usize, field: &'static str) -> Result<Option<u64>, ParamsError> {
        self.get(i).map(|v| uint(v, field)).transpose()
    }

    pub(crate) fn u64(self, i: usize, field: &'static str) -> Result<u64, ParamsError> {
        self.opt_u64(i, field)?
            .ok_or(wrong(field, "a non-negative integer"))
    }

    pub(crate) fn bool(self, i: usize, field: &'static str) -> Result<bool, ParamsError> {
        self.get(i)
            .and_then(Value::as_bool)
            .ok_or(wrong(field, "true or false"))
    }

    pub(crate) fn array(self, i: usize, field: &'static str) -> Result<&'a [Value], ParamsError> {
        match self.get(i) {
            Some(Value::Array(a)) => Ok(a),
            _ => Err(wrong(field, "an array")),
        }
    }
}

/// A [`ParamsError::Field`].
pub(crate) fn wrong(field: &'static str, expected: &'static str) -> ParamsError {
    ParamsError::Field { field, expected }
}

/// 64 hex digits.
pub(crate) fn hash(v: Option<&Value>, field: &'static str) -> Result<[u8; 32], ParamsError> {
    v.and_then(Value::as_str)
        .and_then(hex::decode_array)
        .ok_or(wrong(field, "64 hex digits"))
}

/// A non-negative integer, also written as a string of decimal digits (`2` or `"2"`).
pub(crate) fn uint(v: &Value, field: &'static str) -> Result<u64, ParamsError> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or(wrong(field, "a non-negative integer"))
}

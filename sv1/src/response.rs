//! Responses: [`Response`] with its `[code, message, data]` error, and the typed results
//! of `mining.subscribe` and `mining.configure`.

use serde_json::{Map, Value};

use crate::error::ParamsError;
use crate::hex::{self, Extranonce};
use crate::json::Out;
use crate::params::{Params, uint, wrong};

/// A response: `{"id": 2, "result": true, "error": null}`.
///
/// Which request it answers is known only from its id, so the result is kept as JSON and
/// read with a typed accessor when the caller knows what it asked:
/// [`as_bool`](Self::as_bool) (`mining.authorize`, `mining.submit`, …),
/// [`subscribe_result`](Self::subscribe_result),
/// [`configure_result`](Self::configure_result).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Response {
    /// The result (`null` in an error response).
    pub result: Value,
    /// The error, if the request failed.
    pub error: Option<RpcError>,
}

impl Response {
    /// A successful response with this result.
    pub fn ok(result: impl Into<Value>) -> Self {
        Response {
            result: result.into(),
            error: None,
        }
    }

    /// An error response: `"result": null`.
    pub fn error(error: RpcError) -> Self {
        Response {
            result: Value::Null,
            error: Some(error),
        }
    }

    /// The answer to `mining.subscribe`.
    pub fn subscribe(result: &SubscribeResult) -> Self {
        let subscriptions: Vec<Value> = result
            .subscriptions
            .iter()
            .map(|(method, id)| Value::from(vec![method.as_str(), id.as_str()]))
            .collect();
        Response::ok(vec![
            Value::from(subscriptions),
            hex::encode_string(result.extranonce1.as_bytes()).into(),
            result.extranonce2_size.into(),
        ])
    }

    /// The answer to `mining.configure`.
    pub fn configure(result: &ConfigureResult) -> Self {
        let mut map = Map::new();
        if let Some(on) = result.version_rolling {
            map.insert(VR.into(), on.into());
        }
        if let Some(mask) = result.version_rolling_mask {
            map.insert(
                VR_MASK.into(),
                hex::encode_string(&mask.to_be_bytes()).into(),
            );
        }
        if let Some(n) = result.version_rolling_min_bit_count {
            map.insert(VR_MIN_BITS.into(), n.into());
        }
        if let Some(on) = result.minimum_difficulty {
            map.insert(MIN_DIFF.into(), on.into());
        }
        map.extend(result.other.iter().map(|(k, v)| (k.clone(), v.clone())));
        Response::ok(map)
    }

    /// The result as `true`/`false` (what `mining.authorize`, `mining.submit` and
    /// `mining.extranonce.subscribe` answer), `None` if it is not a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        self.result.as_bool()
    }

    /// The result read as the answer to `mining.subscribe`.
    ///
    /// # Errors
    /// [`ParamsError`] if it does not have that shape.
    pub fn subscribe_result(&self) -> Result<SubscribeResult, ParamsError> {
        SubscribeResult::from_result(&self.result)
    }

    /// The result read as the answer to `mining.configure`.
    ///
    /// # Errors
    /// [`ParamsError`] if it does not have that shape.
    pub fn configure_result(&self) -> Result<ConfigureResult, ParamsError> {
        ConfigureResult::from_result(&self.result)
    }

    pub(crate) fn from_json(result: Value, error: Option<&Value>) -> Result<Self, ParamsError> {
        let error = match error {
            None | Some(Value::Null) => None,
            Some(e) => Some(RpcError::from_json(e)?),
        };
        Ok(Response { result, error })
    }

    pub(crate) fn write_fields(&self, out: &mut Out<'_>) {
        out.raw(b"\"result\":")
            .val(&self.result)
            .raw(b",\"error\":");
        match &self.error {
            None => {
                out.raw(b"null");
            }
            Some(e) => {
                out.raw(b"[")
                    .val(&e.code)
                    .raw(b",")
                    .val(&e.message)
                    .raw(b",");
                out.val(&e.data).raw(b"]");
            }
        }
    }
}

// ===== RpcError =====

/// A response's error. Sent as `[code, message, data]` (what SV1 pools send); read from
/// that array, from `[code, message]`, or from a JSON-RPC 2.0 object
/// `{"code": …, "message": …, "data": …}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RpcError {
    /// The code: 20 other, 21 job not found, 22 duplicate share, 23 low difficulty share,
    /// 24 unauthorized worker, 25 not subscribed (the codes SV1 pools use).
    pub code: i64,
    /// What went wrong, for people.
    pub message: String,
    /// Anything else (`null` if nothing).
    pub data: Value,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: Value::Null,
        }
    }

    fn from_json(v: &Value) -> Result<Self, ParamsError> {
        let shape = || wrong("error", "[code, message, data], an object or null");
        let (code, message, data) = match v {
            Value::Array(a) if (2..=3).contains(&a.len()) => (&a[0], &a[1], a.get(2)),
            Value::Object(m) => (
                m.get("code").ok_or_else(shape)?,
                m.get("message").ok_or_else(shape)?,
                m.get("data"),
            ),
            _ => return Err(shape()),
        };
        Ok(RpcError {
            code: code.as_i64().ok_or_else(shape)?,
            message: message.as_str().ok_or_else(shape)?.to_owned(),
            data: data.cloned().unwrap_or(Value::Null),
        })
    }
}

// ===== mining.subscribe's result =====

/// The answer to `mining.subscribe`:
/// `[[["mining.set_difficulty", "1"], ["mining.notify", "1"]], "08000002", 4]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubscribeResult {
    /// `(method, subscription id)` pairs. Some pools send a single pair
    /// (`["mining.notify", "ae6812eb4cd7735a302a8a9dd95cf71f"]`) instead of a list of
    /// them; it reads as a list of one.
    pub subscriptions: Vec<(String, String)>,
    /// The connection's extranonce1.
    pub extranonce1: Extranonce,
    /// The size of extranonce2 in bytes.
    pub extranonce2_size: usize,
}

impl SubscribeResult {
    fn from_result(v: &Value) -> Result<Self, ParamsError> {
        let p = Params::of(v)?.count(3, 3, "3")?;
        let pair = |v: &Value| match v.as_array().map(Vec::as_slice) {
            Some([Value::String(m), Value::String(id)]) => Some((m.clone(), id.clone())),
            _ => None,
        };
        let list = p.array(0, "subscriptions")?;
        let subscriptions = match list {
            [Value::String(_), Value::String(_)] => pair(&p.0[0]).into_iter().collect(),
            _ => list
                .iter()
                .map(pair)
                .collect::<Option<_>>()
                .ok_or(wrong("subscriptions", "[method, id] pairs"))?,
        };
        Ok(SubscribeResult {
            subscriptions,
            extranonce1: p.extranonce(1, "extranonce1")?,
            extranonce2_size: usize::try_from(p.u64(2, "extranonce2_size")?)
                .map_err(|_| wrong("extranonce2_size", "a size"))?,
        })
    }
}

// ===== mining.configure's result =====

const VR: &str = "version-rolling";
const VR_MASK: &str = "version-rolling.mask";
const VR_MIN_BITS: &str = "version-rolling.min-bit-count";
const MIN_DIFF: &str = "minimum-difficulty";

/// The answer to `mining.configure` (BIP 310):
/// `{"version-rolling": true, "version-rolling.mask": "1fffe000"}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigureResult {
    /// `version-rolling`: whether the pool accepts version rolling.
    pub version_rolling: Option<bool>,
    /// `version-rolling.mask`: the bits the miner may roll.
    pub version_rolling_mask: Option<u32>,
    /// `version-rolling.min-bit-count`, if the pool sends it back.
    pub version_rolling_min_bit_count: Option<u32>,
    /// `minimum-difficulty`: whether the pool accepts the minimum difficulty.
    pub minimum_difficulty: Option<bool>,
    /// Every other member, as sent.
    pub other: Map<String, Value>,
}

impl ConfigureResult {
    fn from_result(v: &Value) -> Result<Self, ParamsError> {
        let Value::Object(map) = v else {
            return Err(ParamsError::NotArray);
        };
        let mut other = map.clone();
        let flag = |other: &mut Map<String, Value>, key: &'static str| {
            other
                .remove(key)
                .map(|v| v.as_bool().ok_or(wrong(key, "true or false")))
                .transpose()
        };
        let version_rolling = flag(&mut other, VR)?;
        let minimum_difficulty = flag(&mut other, MIN_DIFF)?;
        let version_rolling_mask = other
            .remove(VR_MASK)
            .map(|v| {
                v.as_str()
                    .and_then(hex::parse_u32)
                    .ok_or(wrong(VR_MASK, "1 to 8 hex digits"))
            })
            .transpose()?;
        let version_rolling_min_bit_count = other
            .remove(VR_MIN_BITS)
            .map(|v| {
                uint(&v, VR_MIN_BITS).and_then(|n| {
                    u32::try_from(n).map_err(|_| wrong(VR_MIN_BITS, "an integer below 2^32"))
                })
            })
            .transpose()?;
        Ok(ConfigureResult {
            version_rolling,
            version_rolling_mask,
            version_rolling_min_bit_count,
            minimum_difficulty,
            other,
        })
    }
}

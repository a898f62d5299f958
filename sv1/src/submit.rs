//! `mining.submit`, the message of every share: [`Submit`] (owned) and [`SubmitRef`], read
//! from a line without allocating.

use std::borrow::Cow;
use std::fmt;

use bytes::BytesMut;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

use crate::error::ParamsError;
use crate::hex::{self, Extranonce};
use crate::id::IdRef;
use crate::json::Out;
use crate::params::Params;

/// The method name.
pub(crate) const METHOD: &str = "mining.submit";

/// `mining.submit`: `["worker.1", "4f", "00000001", "6650ab12", "1d2b3c4d"]`, and with
/// version rolling a sixth parameter, the rolled version bits (`"00002000"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Submit {
    /// The worker name, as authorized.
    pub worker: String,
    /// The job id from `mining.notify`.
    pub job_id: String,
    /// The extranonce2 the miner used.
    pub extranonce2: Extranonce,
    /// The block time.
    pub ntime: u32,
    /// The nonce.
    pub nonce: u32,
    /// The version bits rolled (BIP 310), if any.
    pub version_bits: Option<u32>,
}

impl Submit {
    pub(crate) fn from_params(p: Params<'_>) -> Result<Self, ParamsError> {
        let p = p.count(5, 6, "5 or 6")?;
        Ok(Submit {
            worker: p.str(0, "worker")?.to_owned(),
            job_id: p.str(1, "job_id")?.to_owned(),
            extranonce2: p.extranonce(2, "extranonce2")?,
            ntime: p.word(3, "ntime")?,
            nonce: p.word(4, "nonce")?,
            version_bits: if p.0.len() == 6 {
                Some(p.word(5, "version_bits")?)
            } else {
                None
            },
        })
    }

    pub(crate) fn write_params(&self, out: &mut Out<'_>) {
        write_params(
            out,
            &self.worker,
            &self.job_id,
            &self.extranonce2,
            [self.ntime, self.nonce],
            self.version_bits,
        );
    }
}

fn write_params(
    out: &mut Out<'_>,
    worker: &str,
    job_id: &str,
    extranonce2: &Extranonce,
    [ntime, nonce]: [u32; 2],
    version_bits: Option<u32>,
) {
    out.val(worker).raw(b",").val(job_id).raw(b",");
    out.hex(extranonce2.as_bytes())
        .raw(b",")
        .word(ntime)
        .raw(b",")
        .word(nonce);
    if let Some(v) = version_bits {
        out.raw(b",").word(v);
    }
}

// ===== SubmitRef =====

/// A `mining.submit` line read in place, without allocating. The hex fields are decoded
/// into an inline [`Extranonce`] and `u32`s; the worker name, job id and a string id are
/// borrowed from the line. Two exceptions allocate: a string holding JSON escapes is
/// unescaped into an owned string, and a member this type does not read whose value nests
/// arrays or objects more than one level deep is skipped with `serde_json`'s scratch
/// stack. Firmware sends neither.
///
/// A line it accepts reads as the same [`Body::Submit`](crate::message::Body::Submit)
/// with [`Sv1Message::from_line`](crate::message::Sv1Message::from_line).
/// The converse holds but for a line naming a member twice (`"id"` twice, say): this
/// parser refuses it, `from_line` keeps the last value, as `serde_json` does.
///
/// ```
/// use sv2c_sv1::{IdRef, SubmitRef};
///
/// let line = br#"{"params":["acct.w1","4f","00000001","6650ab12","1d2b3c4d","00002000"],"id":7,"method":"mining.submit"}"#;
/// let share = SubmitRef::parse(line)?;
/// assert_eq!(share.id, IdRef::Num(7));
/// assert_eq!(&*share.worker, "acct.w1");
/// assert_eq!(share.extranonce2.as_bytes(), &[0, 0, 0, 1]);
/// assert_eq!((share.ntime, share.nonce), (0x6650_ab12, 0x1d2b_3c4d));
/// assert_eq!(share.version_bits, Some(0x2000));
/// # Ok::<(), sv2c_sv1::NotSubmit>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitRef<'a> {
    /// The request id.
    pub id: IdRef<'a>,
    /// `true` if the line carried `"jsonrpc": "2.0"`.
    pub jsonrpc2: bool,
    /// The worker name.
    pub worker: Cow<'a, str>,
    /// The job id.
    pub job_id: Cow<'a, str>,
    /// The extranonce2.
    pub extranonce2: Extranonce,
    /// The block time.
    pub ntime: u32,
    /// The nonce.
    pub nonce: u32,
    /// The version bits rolled, if any.
    pub version_bits: Option<u32>,
}

/// The line is not a well-formed `mining.submit` request.
/// [`Sv1Message::from_line`](crate::message::Sv1Message::from_line) says what it is
/// instead, or what is wrong with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a well-formed mining.submit line")]
pub struct NotSubmit;

impl<'a> SubmitRef<'a> {
    /// Reads a `mining.submit` request from one line (with or without its line ending).
    ///
    /// # Errors
    /// [`NotSubmit`] if the line is anything else, or a `mining.submit` whose parameters
    /// are not five or six well-formed strings.
    pub fn parse(line: &'a [u8]) -> Result<Self, NotSubmit> {
        let wire: Wire<'a> = serde_json::from_slice(line).map_err(|_| NotSubmit)?;
        if wire.method.0 != METHOD {
            return Err(NotSubmit);
        }
        let p = wire.params;
        Ok(SubmitRef {
            id: wire.id,
            jsonrpc2: wire.jsonrpc.0,
            worker: p.worker,
            job_id: p.job_id,
            extranonce2: p.extranonce2,
            ntime: p.ntime,
            nonce: p.nonce,
            version_bits: p.version_bits,
        })
    }

    /// Appends the request as one line, `\n` included.
    pub fn encode(&self, dst: &mut BytesMut) {
        let mut out = Out(dst);
        out.head(&self.id, self.jsonrpc2);
        out.raw(b"\"method\":\"mining.submit\",\"params\":[");
        write_params(
            &mut out,
            &self.worker,
            &self.job_id,
            &self.extranonce2,
            [self.ntime, self.nonce],
            self.version_bits,
        );
        out.raw(b"]}\n");
    }
}

// ===== serde, borrowing =====

/// The members of a `mining.submit` line; others are skipped without being read into
/// memory.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    id: IdRef<'a>,
    #[serde(borrow)]
    method: CowStr<'a>,
    #[serde(borrow)]
    params: WireParams<'a>,
    #[serde(default)]
    jsonrpc: JsonRpc2,
}

/// `true` for `"jsonrpc": "2.0"`; any other value is tolerated and read as `false`.
#[derive(Default)]
struct JsonRpc2(bool);

impl<'de> Deserialize<'de> for JsonRpc2 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonRpc2;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonRpc2(v == "2.0"))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(JsonRpc2(false))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(JsonRpc2(false))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(JsonRpc2(false))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(JsonRpc2(false))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(JsonRpc2(false))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| JsonRpc2(false))
            }

            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| JsonRpc2(false))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string borrowed from the line unless it holds escapes.
struct CowStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

struct WireParams<'a> {
    worker: Cow<'a, str>,
    job_id: Cow<'a, str>,
    extranonce2: Extranonce,
    ntime: u32,
    nonce: u32,
    version_bits: Option<u32>,
}

impl<'de: 'a, 'a> Deserialize<'de> for WireParams<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WireParams<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("5 or 6 strings")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut next = || -> Result<CowStr<'de>, A::Error> {
                    seq.next_element()?
                        .ok_or_else(|| de::Error::custom("too few parameters"))
                };
                let worker = next()?.0;
                let job_id = next()?.0;
                let extranonce2 = Extranonce::from_hex(&next()?.0)
                    .ok_or_else(|| de::Error::custom("extranonce2"))?;
                let ntime = word(&next()?.0)?;
                let nonce = word(&next()?.0)?;
                let version_bits = match seq.next_element::<CowStr<'de>>()? {
                    None => None,
                    Some(v) => Some(word(&v.0)?),
                };
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom("too many parameters"));
                }
                Ok(WireParams {
                    worker,
                    job_id,
                    extranonce2,
                    ntime,
                    nonce,
                    version_bits,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

fn word<E: de::Error>(s: &str) -> Result<u32, E> {
    hex::parse_u32(s).ok_or_else(|| E::custom("hex word"))
}

//! [`Sv1Message`]: one JSON-RPC line, its id and its typed [`Body`].

use bytes::BytesMut;
use serde_json::Value;

use crate::client::{Authorize, Configure, Subscribe, SuggestDifficulty};
use crate::error::{InvalidKind, ParamsError};
use crate::id::Id;
use crate::json::Out;
use crate::params::Params;
use crate::response::Response;
use crate::server::{Notify, Reconnect, SetDifficulty, SetExtranonce, SetVersionMask};
use crate::submit::{self, Submit, SubmitRef};

/// One Stratum V1 message: a request, a notification or a response.
///
/// ```
/// use sv2c_sv1::{Body, Id, SetDifficulty, Sv1Message};
///
/// let msg = Sv1Message::from_line(br#"{"id":null,"method":"mining.set_difficulty","params":[0.5]}"#)?;
/// assert_eq!(msg.id, Id::Null);
/// assert_eq!(msg.body, Body::SetDifficulty(SetDifficulty { difficulty: 0.5 }));
/// assert_eq!(msg.to_line(), "{\"id\":null,\"method\":\"mining.set_difficulty\",\"params\":[0.5]}\n");
/// # Ok::<(), sv2c_sv1::InvalidKind>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Sv1Message {
    /// The id: a request's, or the request's a response answers; [`Id::Null`] for
    /// notifications.
    pub id: Id,
    /// `true` if the line carried `"jsonrpc": "2.0"`; the message is then written with it
    /// again. Other `"jsonrpc"` values are tolerated and not kept.
    pub jsonrpc2: bool,
    /// What it says.
    pub body: Body,
}

/// What a message says, by method.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Body {
    /// `mining.subscribe` (miner to pool).
    Subscribe(Subscribe),
    /// `mining.authorize` (miner to pool).
    Authorize(Authorize),
    /// `mining.configure`, BIP 310 (miner to pool).
    Configure(Configure),
    /// `mining.suggest_difficulty` (miner to pool).
    SuggestDifficulty(SuggestDifficulty),
    /// `mining.extranonce.subscribe` (miner to pool); its parameters are ignored.
    ExtranonceSubscribe,
    /// `mining.submit` (miner to pool).
    Submit(Submit),
    /// `mining.notify` (pool to miner).
    Notify(Notify),
    /// `mining.set_difficulty` (pool to miner).
    SetDifficulty(SetDifficulty),
    /// `mining.set_extranonce` (pool to miner).
    SetExtranonce(SetExtranonce),
    /// `mining.set_version_mask` (pool to miner).
    SetVersionMask(SetVersionMask),
    /// `client.reconnect` (pool to miner).
    Reconnect(Reconnect),
    /// A response to a request (either way).
    Response(Response),
    /// A method this crate has no type for, with its parameters as sent (`null` if it had
    /// none). Not an error: a proxy can forward it, an endpoint ignore or refuse it.
    Unknown {
        /// The method name.
        method: String,
        /// The `"params"` member.
        params: Value,
    },
}

impl Body {
    /// The method name, `None` for a response.
    pub fn method(&self) -> Option<&str> {
        Some(match self {
            Body::Subscribe(_) => "mining.subscribe",
            Body::Authorize(_) => "mining.authorize",
            Body::Configure(_) => "mining.configure",
            Body::SuggestDifficulty(_) => "mining.suggest_difficulty",
            Body::ExtranonceSubscribe => "mining.extranonce.subscribe",
            Body::Submit(_) => submit::METHOD,
            Body::Notify(_) => "mining.notify",
            Body::SetDifficulty(_) => "mining.set_difficulty",
            Body::SetExtranonce(_) => "mining.set_extranonce",
            Body::SetVersionMask(_) => "mining.set_version_mask",
            Body::Reconnect(_) => "client.reconnect",
            Body::Unknown { method, .. } => method,
            Body::Response(_) => return None,
        })
    }

    /// Reads the parameters of `method`.
    fn from_params(method: &str, params: Value) -> Result<Body, InvalidKind> {
        /// The parameters of a known method, as its type reads them.
        fn typed<T>(
            method: &'static str,
            params: &Value,
            read: impl FnOnce(Params<'_>) -> Result<T, ParamsError>,
        ) -> Result<T, InvalidKind> {
            Params::of(params)
                .and_then(read)
                .map_err(|source| InvalidKind::Params { method, source })
        }
        let p = &params;
        Ok(match method {
            "mining.subscribe" => {
                Body::Subscribe(typed("mining.subscribe", p, Subscribe::from_params)?)
            }
            "mining.authorize" => {
                Body::Authorize(typed("mining.authorize", p, Authorize::from_params)?)
            }
            "mining.configure" => {
                Body::Configure(typed("mining.configure", p, Configure::from_params)?)
            }
            "mining.suggest_difficulty" => Body::SuggestDifficulty(typed(
                "mining.suggest_difficulty",
                p,
                SuggestDifficulty::from_params,
            )?),
            "mining.extranonce.subscribe" => Body::ExtranonceSubscribe,
            submit::METHOD => Body::Submit(typed(submit::METHOD, p, Submit::from_params)?),
            "mining.notify" => Body::Notify(typed("mining.notify", p, Notify::from_params)?),
            "mining.set_difficulty" => Body::SetDifficulty(typed(
                "mining.set_difficulty",
                p,
                SetDifficulty::from_params,
            )?),
            "mining.set_extranonce" => Body::SetExtranonce(typed(
                "mining.set_extranonce",
                p,
                SetExtranonce::from_params,
            )?),
            "mining.set_version_mask" => Body::SetVersionMask(typed(
                "mining.set_version_mask",
                p,
                SetVersionMask::from_params,
            )?),
            "client.reconnect" => {
                Body::Reconnect(typed("client.reconnect", p, Reconnect::from_params)?)
            }
            _ => Body::Unknown {
                method: method.to_owned(),
                params,
            },
        })
    }

    fn write_params(&self, out: &mut Out<'_>) {
        match self {
            Body::Subscribe(m) => m.write_params(out),
            Body::Authorize(m) => m.write_params(out),
            Body::Configure(m) => m.write_params(out),
            Body::SuggestDifficulty(m) => m.write_params(out),
            Body::ExtranonceSubscribe => {}
            Body::Submit(m) => m.write_params(out),
            Body::Notify(m) => m.write_params(out),
            Body::SetDifficulty(m) => m.write_params(out),
            Body::SetExtranonce(m) => m.write_params(out),
            Body::SetVersionMask(m) => m.write_params(out),
            Body::Reconnect(m) => m.write_params(out),
            Body::Response(_) | Body::Unknown { .. } => {}
        }
    }
}

impl Sv1Message {
    /// A request (miner to pool, or a pool's request) with this id.
    pub fn request(id: impl Into<Id>, body: Body) -> Self {
        Sv1Message {
            id: id.into(),
            jsonrpc2: false,
            body,
        }
    }

    /// A notification: `"id": null`.
    pub fn notification(body: Body) -> Self {
        Sv1Message {
            id: Id::Null,
            jsonrpc2: false,
            body,
        }
    }

    /// A response to the request with this id.
    pub fn response(id: impl Into<Id>, response: Response) -> Self {
        Sv1Message {
            id: id.into(),
            jsonrpc2: false,
            body: Body::Response(response),
        }
    }

    /// Reads one line (with or without its line ending).
    ///
    /// An object with a `"method"` member is a request or notification; one without, but
    /// with `"result"` or `"error"`, is a response. A known method whose `"params"` is
    /// missing or `null` reads as if it were `[]`.
    ///
    /// # Errors
    /// [`InvalidKind`] (never [`InvalidKind::TooLong`]): not JSON, not JSON-RPC, a bad
    /// id, or a known method with parameters of the wrong shape.
    pub fn from_line(line: &[u8]) -> Result<Self, InvalidKind> {
        // The share path: no `Value` tree. Any other line, and a malformed share, takes the
        // general path below, which says what is wrong.
        if contains(line, submit::METHOD.as_bytes()) {
            if let Ok(share) = SubmitRef::parse(line) {
                return Ok(share.to_message());
            }
        }
        let value: Value = serde_json::from_slice(line).map_err(InvalidKind::Json)?;
        let Value::Object(mut obj) = value else {
            return Err(InvalidKind::NotRpc);
        };
        let id = Id::from_json(obj.get("id")).ok_or(InvalidKind::Id)?;
        let jsonrpc2 = obj.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
        let body =
            match obj.remove("method") {
                Some(Value::String(method)) => {
                    let params = obj.remove("params").unwrap_or(Value::Null);
                    Body::from_params(&method, params)?
                }
                Some(_) => return Err(InvalidKind::NotRpc),
                None if obj.contains_key("result") || obj.contains_key("error") => {
                    let result = obj.remove("result").unwrap_or(Value::Null);
                    Body::Response(Response::from_json(result, obj.get("error")).map_err(
                        |source| InvalidKind::Params {
                            method: "response",
                            source,
                        },
                    )?)
                }
                None => return Err(InvalidKind::NotRpc),
            };
        Ok(Sv1Message { id, jsonrpc2, body })
    }

    /// Appends the message as one line of JSON, `\n` included.
    pub fn encode(&self, dst: &mut BytesMut) {
        let mut out = Out(dst);
        out.head(&self.id.as_ref(), self.jsonrpc2);
        match &self.body {
            Body::Response(r) => r.write_fields(&mut out),
            Body::Unknown { method, params } => {
                out.raw(b"\"method\":").val(method);
                if !params.is_null() {
                    out.raw(b",\"params\":").val(params);
                }
            }
            body => {
                out.raw(b"\"method\":")
                    .val(body.method().unwrap_or_default());
                out.raw(b",\"params\":[");
                body.write_params(&mut out);
                out.raw(b"]");
            }
        }
        out.raw(b"}\n");
    }

    /// The message as one line of JSON, `\n` included.
    pub fn to_line(&self) -> String {
        let mut buf = BytesMut::with_capacity(128);
        self.encode(&mut buf);
        // Everything written is JSON text, which is UTF-8.
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// `true` if `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Kept here, with the owned message it builds, so that `submit` (the borrowed share)
/// does not depend on this module.
impl SubmitRef<'_> {
    /// The owned message.
    pub fn to_message(&self) -> Sv1Message {
        Sv1Message {
            id: self.id.to_owned(),
            jsonrpc2: self.jsonrpc2,
            body: Body::Submit(Submit {
                worker: self.worker.as_ref().to_owned(),
                job_id: self.job_id.as_ref().to_owned(),
                extranonce2: self.extranonce2,
                ntime: self.ntime,
                nonce: self.nonce,
                version_bits: self.version_bits,
            }),
        }
    }
}

//! Stratum V1 for sv2c: the JSON-RPC-over-newlines protocol that mining firmware speaks,
//! as typed messages and a `tokio_util` codec, for proxies that bring SV1 miners to
//! Stratum V2 pools.
//!
//! ```
//! use sv2c_sv1::{Body, Id, Response, SubscribeResult, Extranonce, Sv1Message};
//!
//! // A miner subscribes...
//! let line = br#"{"id": 1, "method": "mining.subscribe", "params": ["bmminer/2.0.0"]}"#;
//! let msg = Sv1Message::from_line(line)?;
//! let Body::Subscribe(sub) = &msg.body else { panic!() };
//! assert_eq!(sub.user_agent.as_deref(), Some("bmminer/2.0.0"));
//!
//! // ...and the pool answers.
//! let answer = Sv1Message::response(msg.id, Response::subscribe(&SubscribeResult {
//!     subscriptions: vec![("mining.notify".into(), "1".into())],
//!     extranonce1: Extranonce::from_hex("08000002").unwrap(),
//!     extranonce2_size: 4,
//! }));
//! assert_eq!(
//!     answer.to_line(),
//!     "{\"id\":1,\"result\":[[[\"mining.notify\",\"1\"]],\"08000002\",4],\"error\":null}\n",
//! );
//! # Ok::<(), sv2c_sv1::InvalidKind>(())
//! ```
//!
//! # What is where
//! * [`Sv1Message`]: one line: its [`Id`], whether it said `"jsonrpc": "2.0"`, and its
//!   [`Body`], one variant per method: what miners send ([`Subscribe`], [`Authorize`],
//!   [`Configure`] (BIP 310), [`SuggestDifficulty`], `ExtranonceSubscribe`, [`Submit`]),
//!   what pools send ([`Notify`], [`SetDifficulty`], [`SetExtranonce`],
//!   [`SetVersionMask`], [`Reconnect`]), [`Response`]s (with the typed results
//!   [`SubscribeResult`] and [`ConfigureResult`] and the error [`RpcError`]), and
//!   `Unknown` for any other method: an item, not an error.
//! * [`SubmitRef`]: `mining.submit`, the message of every share, read from its line
//!   without allocating.
//! * [`Sv1Codec`]: the `Decoder`/`Encoder` for `Framed`. A line that is not a message is an
//!   [`Sv1Item::Invalid`] item and the stream goes on; a line above the length limit is
//!   reported and dropped without being buffered.
//!
//! # Compatibility
//! The crate's tests read a corpus of lines shaped as cgminer/bmminer, ESP-Miner
//! (Bitaxe), WhatsMiner and pools send them, beside SRI's `sv1_api`; where the two read a
//! line differently, the crate README says which and why.

#![forbid(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]

mod client;
mod codec;
mod error;
mod hex;
mod id;
mod json;
mod message;
mod params;
mod response;
mod server;
mod submit;

pub use client::{
    Authorize, Configure, MINIMUM_DIFFICULTY, SUBSCRIBE_EXTRANONCE, Subscribe, SuggestDifficulty,
    VERSION_ROLLING,
};
pub use codec::{DEFAULT_MAX_LINE_LEN, Sv1Codec, Sv1Item};
pub use error::{InvalidKind, InvalidLine, ParamsError, Sv1Error};
pub use hex::{Extranonce, parse_u32 as parse_hex_u32};
pub use id::{Id, IdRef};
pub use message::{Body, Sv1Message};
pub use response::{ConfigureResult, Response, RpcError, SubscribeResult};
pub use server::{Notify, Reconnect, SetDifficulty, SetExtranonce, SetVersionMask};
pub use submit::{NotSubmit, Submit, SubmitRef};

/// The crate README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

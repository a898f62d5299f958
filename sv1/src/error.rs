//! Errors: [`Sv1Error`] ends a stream, [`InvalidLine`] is one line the peer got wrong.

use std::io;

use bytes::Bytes;

/// An error after which a `Framed` stream of [`Sv1Codec`](crate::Sv1Codec) cannot go on:
/// only I/O. Everything a peer can get wrong in a line is an
/// [`Sv1Item::Invalid`](crate::Sv1Item::Invalid) item instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Sv1Error {
    /// An I/O error from the underlying stream.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A line the decoder could not turn into a message. The line has been consumed: the next
/// item is the next line's.
#[derive(Debug, thiserror::Error)]
#[error("invalid Stratum V1 line: {kind}")]
pub struct InvalidLine {
    /// What is wrong with it.
    pub kind: InvalidKind,
    /// The line without its line ending, cut to its first [`InvalidLine::EXCERPT_LEN`]
    /// bytes, for logs.
    pub excerpt: Bytes,
}

impl InvalidLine {
    /// The longest [`excerpt`](Self::excerpt) kept, in bytes.
    pub const EXCERPT_LEN: usize = 256;

    pub(crate) fn new(kind: InvalidKind, line: &[u8]) -> Self {
        InvalidLine {
            kind,
            excerpt: Bytes::copy_from_slice(&line[..line.len().min(Self::EXCERPT_LEN)]),
        }
    }
}

/// Why a line is not a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidKind {
    /// The line is longer than the codec's limit. The decoder reported it as soon as the
    /// limit was passed and drops the rest of the line as it arrives, without buffering it.
    #[error("line longer than {max} bytes")]
    TooLong {
        /// The codec's limit ([`Sv1Codec::max_line_len`](crate::Sv1Codec::max_line_len)).
        max: usize,
    },
    /// Not JSON (or not UTF-8).
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// JSON, but not a JSON-RPC object: neither a request or notification (`"method"`) nor
    /// a response (`"result"` or `"error"`).
    #[error("JSON that is not a request, response or notification")]
    NotRpc,
    /// An `"id"` that is neither a non-negative integer, a string nor `null`.
    #[error("id is not a non-negative integer, a string or null")]
    Id,
    /// A method this crate knows, with parameters of the wrong shape.
    #[error("{method}: {source}")]
    Params {
        /// The method, e.g. `"mining.submit"`.
        method: &'static str,
        /// What is wrong with its parameters.
        #[source]
        source: ParamsError,
    },
}

/// What is wrong with the parameters of a known method (or with the result of a response,
/// read with one of [`Response`](crate::Response)'s typed accessors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamsError {
    /// `"params"` (or the result) is not an array (for `mining.configure`'s result: not an
    /// object).
    #[error("not an array")]
    NotArray,
    /// The wrong number of parameters.
    #[error("{got} parameters, expected {expected}")]
    Count {
        /// How many there are.
        got: usize,
        /// How many the method takes, e.g. `"5 or 6"`.
        expected: &'static str,
    },
    /// One parameter has the wrong type or value.
    #[error("{field}: expected {expected}")]
    Field {
        /// The parameter, e.g. `"ntime"`.
        field: &'static str,
        /// What it should be, e.g. `"hex digits"`.
        expected: &'static str,
    },
}

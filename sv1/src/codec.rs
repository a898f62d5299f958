//! [`Sv1Codec`]: newline-delimited JSON-RPC for `tokio_util::codec::Framed`.

use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::error::{InvalidKind, InvalidLine, Sv1Error};
use crate::message::Sv1Message;

/// The default longest line, in bytes, line ending excluded: 16 KiB. A `mining.notify`
/// with a large coinbase and a full merkle branch stays below 4 KiB; a pool that sends
/// larger jobs raises it with [`Sv1Codec::with_max_line_len`].
pub const DEFAULT_MAX_LINE_LEN: usize = 16 * 1024;

/// One item of an SV1 stream: a message, or a line that is not one.
#[derive(Debug)]
pub enum Sv1Item {
    /// A message.
    Message(Sv1Message),
    /// A line that is not a message (too long, not JSON, not JSON-RPC, bad parameters).
    /// The line is gone from the stream; the next item is the next line's. Whether to
    /// answer with an error, log it or close the connection is the caller's choice.
    Invalid(InvalidLine),
}

impl Sv1Item {
    /// The message, or the invalid line as an error.
    ///
    /// # Errors
    /// The [`InvalidLine`] of an [`Sv1Item::Invalid`].
    pub fn into_result(self) -> Result<Sv1Message, InvalidLine> {
        match self {
            Sv1Item::Message(m) => Ok(m),
            Sv1Item::Invalid(e) => Err(e),
        }
    }
}

/// Stratum V1 framing: one JSON-RPC message per line, for
/// `Framed<TcpStream, Sv1Codec>`. It yields [`Sv1Item`]s and sends [`Sv1Message`]s.
///
/// # Lines
/// A line ends with `\n`; a `\r` before it and blank lines are ignored (a blank line longer
/// than the limit is too long, like any other). The stream's last
/// line may end without `\n`. A line of more than [`max_line_len`](Self::max_line_len)
/// bytes (default [`DEFAULT_MAX_LINE_LEN`]) is reported as
/// [`InvalidKind::TooLong`] as soon as that many bytes have arrived without a newline;
/// the rest of it is dropped as it arrives, without being buffered, and decoding resumes
/// after its newline. The read buffer thus never holds more than one line of the limit
/// plus one read.
///
/// # Errors and the stream
/// Nothing a peer writes ends the stream: a line that is not a message is an
/// [`Sv1Item::Invalid`] item and the next line decodes as usual, so a
/// `while let Some(item) = framed.next().await` loop sees every line. The decoder's
/// error, [`Sv1Error`], is only I/O.
///
/// # Buffers
/// Lines are parsed in place in `Framed`'s read buffer (a `BytesMut`), not copied into a
/// `sv2c-buffer-pool` slot: `Framed` owns that buffer and hands the codec a `&mut
/// BytesMut`, so a pool slot would add a copy of every line without saving the buffer.
/// A `mining.submit` line is read with [`SubmitRef`](crate::SubmitRef) (no `Value` tree);
/// the owned [`Submit`](crate::Submit) it yields costs the worker name and job id
/// strings. A read loop of your own can call [`SubmitRef::parse`](crate::SubmitRef::parse)
/// on each line and allocate nothing.
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// use sv2c_sv1::{Body, Response, Sv1Codec, Sv1Item, Sv1Message};
/// use tokio::io::AsyncWriteExt;
/// use tokio_util::codec::Framed;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (mut miner, pool) = tokio::io::duplex(4096);
/// let mut pool = Framed::new(pool, Sv1Codec::new());
/// miner.write_all(b"{\"id\":1,\"method\":\"mining.subscribe\",\"params\":[\"cgminer/4.11.1\"]}\n").await?;
/// miner.write_all(b"not json\n").await?;
/// miner.write_all(b"{\"id\":2,\"method\":\"mining.authorize\",\"params\":[\"acct.w1\",\"x\"]}\n").await?;
///
/// let Some(Ok(Sv1Item::Message(m))) = pool.next().await else { panic!() };
/// assert!(matches!(m.body, Body::Subscribe(_)));
/// let Some(Ok(Sv1Item::Invalid(bad))) = pool.next().await else { panic!() };
/// assert_eq!(&bad.excerpt[..], b"not json");
/// let Some(Ok(Sv1Item::Message(auth))) = pool.next().await else { panic!() };
/// pool.send(Sv1Message::response(auth.id, Response::ok(true))).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Sv1Codec {
    max_line_len: usize,
    /// Bytes at the front of the buffer already searched for a newline.
    searched: usize,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
}

impl Default for Sv1Codec {
    fn default() -> Self {
        Self::new()
    }
}

impl Sv1Codec {
    /// A codec accepting lines up to [`DEFAULT_MAX_LINE_LEN`] bytes.
    pub fn new() -> Self {
        Sv1Codec {
            max_line_len: DEFAULT_MAX_LINE_LEN,
            searched: 0,
            discarding: false,
        }
    }

    /// Sets the longest line accepted, in bytes, line ending excluded.
    #[must_use]
    pub fn with_max_line_len(mut self, max: usize) -> Self {
        self.max_line_len = max;
        self
    }

    /// The longest line accepted, in bytes, line ending excluded.
    pub fn max_line_len(&self) -> usize {
        self.max_line_len
    }

    /// Decodes one line (its ending already cut off); `None` for a blank line.
    fn line(&self, line: &[u8]) -> Option<Sv1Item> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // The limit first, blank or not: `decode` reports a line too long before its
        // end arrives, so a whole line must be judged the same way.
        if line.len() > self.max_line_len {
            return Some(too_long(self.max_line_len, line));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(match Sv1Message::from_line(line) {
            Ok(m) => Sv1Item::Message(m),
            Err(kind) => Sv1Item::Invalid(InvalidLine::new(kind, line)),
        })
    }
}

/// Free bytes kept after an incomplete line: a `mining.submit` line (about 190 bytes)
/// and then some.
const READ_ROOM: usize = 256;

/// Keeps [`READ_ROOM`] free bytes after what `src` holds. `Framed` reads into the
/// buffer's spare capacity and reserves only one byte before a read, so a line that
/// arrives when little is left at the buffer's end would take two reads. The room comes
/// from the bytes already consumed at the buffer's front (the incomplete line is moved
/// there) when they are enough, as they are in a buffer of 512 bytes or more. A buffer
/// without capacity (given back by its owner, or all consumed) is left to `Framed`.
fn keep_room(src: &mut BytesMut) {
    if src.capacity() > 0 && src.capacity() - src.len() < READ_ROOM {
        src.reserve(READ_ROOM);
    }
}

fn too_long(max: usize, line: &[u8]) -> Sv1Item {
    Sv1Item::Invalid(InvalidLine::new(InvalidKind::TooLong { max }, line))
}

impl Decoder for Sv1Codec {
    type Item = Sv1Item;
    type Error = Sv1Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Sv1Item>, Sv1Error> {
        loop {
            let Some(offset) = src[self.searched..].iter().position(|&b| b == b'\n') else {
                if self.discarding {
                    src.clear();
                    self.searched = 0;
                    return Ok(None);
                }
                // `+ 1`: room for a `\r` before the newline still to come.
                if src.len() > self.max_line_len + 1 {
                    // Report it now and drop what came, rather than wait for its end.
                    let item = too_long(self.max_line_len, src);
                    src.clear();
                    self.searched = 0;
                    self.discarding = true;
                    return Ok(Some(item));
                }
                self.searched = src.len();
                keep_room(src);
                return Ok(None);
            };
            let end = self.searched + offset;
            self.searched = 0;
            if std::mem::take(&mut self.discarding) {
                src.advance(end + 1);
                continue;
            }
            let item = self.line(&src[..end]);
            src.advance(end + 1);
            if let Some(item) = item {
                return Ok(Some(item));
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Sv1Item>, Sv1Error> {
        if let Some(item) = self.decode(src)? {
            return Ok(Some(item));
        }
        // The last line, without a newline (or the tail of one too long).
        let item = if std::mem::take(&mut self.discarding) {
            None
        } else {
            self.line(src)
        };
        src.clear();
        self.searched = 0;
        Ok(item)
    }
}

impl Encoder<&Sv1Message> for Sv1Codec {
    type Error = Sv1Error;

    fn encode(&mut self, item: &Sv1Message, dst: &mut BytesMut) -> Result<(), Sv1Error> {
        item.encode(dst);
        Ok(())
    }
}

impl Encoder<Sv1Message> for Sv1Codec {
    type Error = Sv1Error;

    fn encode(&mut self, item: Sv1Message, dst: &mut BytesMut) -> Result<(), Sv1Error> {
        item.encode(dst);
        Ok(())
    }
}

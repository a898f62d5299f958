//! Transport encryption of Sv2 frames (SV2-WIRE §4.7, §4.8).
//!
//! ```text
//! plaintext frame:  hdr(6) | payload(L)
//! on the wire:      ENC(hdr) (6+16) | ENC(piece 0) (≤65519+16) | ENC(piece 1) | ...
//! ```
//!
//! Every AEAD call uses the next nonce of its direction and empty associated data. The
//! header's `msg_length` is the plaintext length L; a frame with L = 0 is just 22 bytes.

use core::fmt;

use crate::aead::Aead;
use crate::error::NoiseError;
use crate::{ENCRYPTED_HEADER_LEN, HEADER_LEN, MAC_LEN, MAX_CHUNK_PLAINTEXT, MAX_PAYLOAD_LEN};
use bytes::{BufMut, BytesMut};
use sv2c_binary::{Header, PayloadTooLarge};

/// Bytes on the wire for a frame whose payload is `payload_len` bytes:
/// `22 + L + 16 · ceil(L / 65519)`.
///
/// ```
/// assert_eq!(sv2c_noise::wire_len(0), 22);
/// assert_eq!(sv2c_noise::wire_len(38), 76);
/// assert_eq!(sv2c_noise::wire_len(140_009), 140_079);
/// ```
pub const fn wire_len(payload_len: usize) -> usize {
    ENCRYPTED_HEADER_LEN + payload_ciphertext_len(payload_len)
}

/// Ciphertext bytes that follow the 22-byte header: `L + 16 · ceil(L / 65519)`.
pub const fn payload_ciphertext_len(payload_len: usize) -> usize {
    payload_len + MAC_LEN * payload_len.div_ceil(MAX_CHUNK_PLAINTEXT)
}

/// The `msg_length` of a 6-byte plaintext header, read by the workspace's one [`Header`].
#[inline]
fn header_payload_len(header: &[u8; HEADER_LEN]) -> usize {
    Header::parse(*header).msg_length()
}

// ===== NoiseEncryptor =====

/// The sending half of a transport: our key and our nonce counter.
///
/// Only a completed handshake creates one ([`Transport::split`](crate::Transport::split)).
pub struct NoiseEncryptor {
    cipher: Aead,
    nonce: u64,
}

impl NoiseEncryptor {
    pub(crate) fn new(key: &[u8; 32]) -> Result<Self, NoiseError> {
        Ok(Self {
            cipher: Aead::new(key).map_err(|_| NoiseError::AeadBackend)?,
            nonce: 0,
        })
    }

    /// Encrypts one plaintext Sv2 frame (6-byte header + payload) and appends the
    /// [`wire_len`] ciphertext bytes to `out`. Returns the number of bytes appended.
    ///
    /// Each piece is copied into `out` and sealed where it lies there, so the only
    /// allocation is `out` growing; a buffer with [`wire_len`] bytes of spare capacity (for
    /// instance a `Framed` write buffer after a flush) is written without any.
    ///
    /// # Errors
    ///
    /// [`NoiseError::FrameTooShort`] or [`NoiseError::FrameLengthMismatch`] for a malformed
    /// frame, [`NoiseError::NonceExhausted`] when this direction has no nonces left for the
    /// whole frame. Nothing is appended and no nonce is used on error.
    pub fn encrypt_frame(&mut self, frame: &[u8], out: &mut BytesMut) -> Result<usize, NoiseError> {
        let Some((header, payload)) = frame.split_first_chunk::<HEADER_LEN>() else {
            return Err(NoiseError::FrameTooShort(frame.len()));
        };
        self.encrypt_parts(header, payload, out)
    }

    /// Like [`NoiseEncryptor::encrypt_frame`] with the header and the payload given
    /// separately, so a caller that serializes them apart needs no plaintext copy.
    ///
    /// # Errors
    ///
    /// As [`NoiseEncryptor::encrypt_frame`].
    pub fn encrypt_parts(
        &mut self,
        header: &[u8; HEADER_LEN],
        payload: &[u8],
        out: &mut BytesMut,
    ) -> Result<usize, NoiseError> {
        let announced = header_payload_len(header);
        if announced != payload.len() {
            return Err(NoiseError::FrameLengthMismatch {
                announced,
                actual: payload.len(),
            });
        }
        // One nonce for the header, one per chunk; the last one used must stay below
        // u64::MAX, which Noise reserves.
        let calls = 1 + payload.len().div_ceil(MAX_CHUNK_PLAINTEXT) as u64;
        if self.nonce.checked_add(calls).is_none() {
            return Err(NoiseError::NonceExhausted);
        }

        let start = out.len();
        let total = wire_len(payload.len());
        out.reserve(total);
        match self.seal_all(header, payload, out) {
            Ok(next_nonce) => {
                self.nonce = next_nonce;
                Ok(total)
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    }

    /// Writes the ciphertext; returns the nonce after the last one used.
    fn seal_all(
        &self,
        header: &[u8; HEADER_LEN],
        payload: &[u8],
        out: &mut BytesMut,
    ) -> Result<u64, NoiseError> {
        let mut n = self.nonce;
        self.seal_piece(&mut n, header, out)?;
        for piece in payload.chunks(MAX_CHUNK_PLAINTEXT) {
            self.seal_piece(&mut n, piece, out)?;
        }
        Ok(n)
    }

    /// Appends `piece`, encrypts it in place and appends its tag.
    #[inline]
    fn seal_piece(&self, n: &mut u64, piece: &[u8], out: &mut BytesMut) -> Result<(), NoiseError> {
        let at = out.len();
        out.put_slice(piece);
        let tag = self
            .cipher
            .seal(*n, &[], out.get_mut(at..).unwrap_or_default())
            .map_err(|_| NoiseError::AeadBackend)?;
        out.put_slice(&tag);
        *n += 1;
        Ok(())
    }

    /// The nonce the next AEAD call will use.
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    #[cfg(test)]
    pub(crate) fn set_nonce(&mut self, n: u64) {
        self.nonce = n;
    }
}

impl fmt::Debug for NoiseEncryptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoiseEncryptor")
            .field("nonce", &self.nonce)
            .finish_non_exhaustive()
    }
}

// ===== NoiseDecryptor =====

/// Where the decryptor is inside the current frame.
enum State {
    /// Collecting the 22-byte encrypted header.
    Header {
        buf: [u8; ENCRYPTED_HEADER_LEN],
        filled: usize,
    },
    /// Header known; collecting and decrypting payload chunks at the end of the caller's
    /// buffer.
    Payload(PayloadState),
    /// An error happened; nothing more is accepted.
    Poisoned,
}

/// Between frames: waiting for the first byte of an encrypted header.
const IDLE: State = State::Header {
    buf: [0; ENCRYPTED_HEADER_LEN],
    filled: 0,
};

/// Progress through the payload of a frame. The frame itself lives at the end of the
/// caller's buffer: the decrypted header, the decrypted pieces, then the ciphertext of the
/// current piece ([`PayloadState::assembled`] bytes in all).
struct PayloadState {
    /// L from the header.
    payload_len: usize,
    /// Plaintext payload bytes already authenticated and decrypted.
    decrypted: usize,
    /// Ciphertext bytes of the current piece already in the buffer (after the decrypted
    /// part).
    piece_filled: usize,
    /// Tag of the current piece, collected apart so the buffer never holds tags.
    tag: [u8; MAC_LEN],
    tag_filled: usize,
    /// Index of the current chunk within the frame.
    chunk: usize,
}

impl PayloadState {
    /// Plaintext length of the current piece.
    fn piece_len(&self) -> usize {
        (self.payload_len - self.decrypted).min(MAX_CHUNK_PLAINTEXT)
    }

    /// Ciphertext bytes still missing to complete the frame.
    fn missing(&self) -> usize {
        let piece = self.piece_len();
        let after = self.payload_len - self.decrypted - piece;
        (piece - self.piece_filled) + (MAC_LEN - self.tag_filled) + payload_ciphertext_len(after)
    }

    /// Bytes of this frame at the end of the caller's buffer.
    fn assembled(&self) -> usize {
        HEADER_LEN + self.decrypted + self.piece_filled
    }

    /// Payload bytes (plaintext, so tags excluded) not yet in the buffer.
    fn payload_still_expected(&self) -> usize {
        self.payload_len - self.decrypted - self.piece_filled
    }
}

/// The receiving half of a transport: the peer's key, the nonce counter, and a sans-io
/// frame reassembler.
///
/// Feed it ciphertext in pieces of any size. [`NoiseDecryptor::decrypt_into`] assembles
/// each frame at the end of a buffer the caller owns and reuses: every chunk is
/// authenticated and decrypted in place there, so a connection that keeps its buffer makes
/// no heap allocation per frame. [`NoiseDecryptor::decrypt`] is the convenience form that
/// returns each frame as a new `Vec<u8>` (one allocation per frame).
///
/// The payload size is checked against [`NoiseDecryptor::max_payload_len`] as soon as the
/// header is authenticated, before any payload byte is buffered, and the buffer is grown
/// only for bytes that have actually arrived (at most the frame's remaining payload), so
/// a peer announcing a large frame and sending little costs little. After any error the
/// decryptor is poisoned and every later call returns [`NoiseError::Poisoned`].
pub struct NoiseDecryptor {
    cipher: Aead,
    nonce: u64,
    max_payload_len: usize,
    state: State,
    /// The frame under assembly for [`NoiseDecryptor::decrypt`] (empty between frames).
    pending: BytesMut,
}

impl NoiseDecryptor {
    pub(crate) fn new(key: &[u8; 32]) -> Result<Self, NoiseError> {
        Ok(Self {
            cipher: Aead::new(key).map_err(|_| NoiseError::AeadBackend)?,
            nonce: 0,
            max_payload_len: MAX_PAYLOAD_LEN,
            state: IDLE,
            pending: BytesMut::new(),
        })
    }

    /// The largest payload accepted (default: the protocol maximum, 2^24 − 1).
    pub fn max_payload_len(&self) -> usize {
        self.max_payload_len
    }

    /// Sets the largest payload accepted; larger frames fail with
    /// [`NoiseError::PayloadTooLarge`] before any of their payload is buffered.
    pub fn set_max_payload_len(&mut self, max: usize) {
        self.max_payload_len = max;
    }

    /// Builder form of [`NoiseDecryptor::set_max_payload_len`].
    pub fn with_max_payload_len(mut self, max: usize) -> Self {
        self.max_payload_len = max;
        self
    }

    /// Consumes bytes from the front of `input` until a frame is complete or `input` is
    /// empty, assembling the plaintext frame (6-byte header + payload) at the end of
    /// `frame`. Returns `Ok(Some(len))` when a frame is complete: it is the last `len`
    /// bytes of `frame`, and the rest of `input` is left for the next call. Returns
    /// `Ok(None)` once all of `input` has been taken in without completing a frame.
    ///
    /// Ciphertext is copied from `input` into `frame` and each chunk is authenticated and
    /// decrypted where it lies there; tags are never stored in `frame`. `frame` grows only
    /// when its spare capacity is too small for the bytes that arrived, so reusing one
    /// buffer (emptied by the consumer between frames) makes decryption allocation-free in
    /// steady state.
    ///
    /// While a frame is in progress ([`NoiseDecryptor::is_mid_frame`]) its bytes sit at
    /// the end of `frame`: pass the same buffer to every call and leave that tail alone
    /// (consuming complete frames from the front is fine). A tail changed mid-frame makes
    /// the frame fail authentication, never a panic. On error the unfinished frame is
    /// removed from `frame`.
    ///
    /// ```
    /// # use sv2c_noise::*;
    /// # let authority = AuthorityKeypair::generate()?;
    /// # let responder = Responder::from_authority(StaticKeypair::generate()?, &authority, 0, u32::MAX)?;
    /// # let (act1, initiator) = Initiator::new(authority.public_key())?.step_1();
    /// # let (act2, server) = responder.step(&act1)?;
    /// # let (mut tx, _) = initiator.step_2(&act2, unix_time_now())?.split();
    /// # let (_, mut rx) = server.split();
    /// use bytes::BytesMut;
    ///
    /// let mut wire = BytesMut::new();
    /// tx.encrypt_frame(&[0, 0, 0x10, 2, 0, 0, 0xaa, 0xbb], &mut wire)?;
    /// tx.encrypt_frame(&[0, 0, 0x11, 0, 0, 0], &mut wire)?;
    ///
    /// let mut frame = BytesMut::with_capacity(64); // reused for every frame
    /// let mut input: &[u8] = &wire;
    /// assert_eq!(rx.decrypt_into(&mut input, &mut frame)?, Some(8));
    /// assert_eq!(&frame[..], [0, 0, 0x10, 2, 0, 0, 0xaa, 0xbb]);
    /// frame.clear(); // consumed
    /// assert_eq!(rx.decrypt_into(&mut input, &mut frame)?, Some(6));
    /// assert_eq!(&frame[..], [0, 0, 0x11, 0, 0, 0]);
    /// assert!(input.is_empty());
    /// # Ok::<(), NoiseError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`NoiseError::HeaderDecrypt`], [`NoiseError::ChunkDecrypt`],
    /// [`NoiseError::PayloadTooLarge`], [`NoiseError::NonceExhausted`], and
    /// [`NoiseError::Poisoned`] for any call after one of those.
    pub fn decrypt_into(
        &mut self,
        input: &mut &[u8],
        frame: &mut BytesMut,
    ) -> Result<Option<usize>, NoiseError> {
        let result = self.step(input, frame);
        if result.is_err() {
            // Drop the partial frame and refuse all further input.
            if let State::Payload(p) = &self.state {
                frame.truncate(frame.len().saturating_sub(p.assembled()));
            }
            self.state = State::Poisoned;
        }
        result
    }

    /// Like [`NoiseDecryptor::decrypt_into`], with the decryptor keeping the partial frame
    /// itself and returning each complete frame (6-byte header + payload) as a new
    /// `Vec<u8>`: one heap allocation per frame. Do not switch between the two methods in
    /// the middle of a frame.
    ///
    /// ```
    /// # use sv2c_noise::*;
    /// # let authority = AuthorityKeypair::generate()?;
    /// # let responder = Responder::from_authority(StaticKeypair::generate()?, &authority, 0, u32::MAX)?;
    /// # let (act1, initiator) = Initiator::new(authority.public_key())?.step_1();
    /// # let (act2, server) = responder.step(&act1)?;
    /// # let (mut tx, _) = initiator.step_2(&act2, unix_time_now())?.split();
    /// # let (_, mut rx) = server.split();
    /// let mut wire = bytes::BytesMut::new();
    /// tx.encrypt_frame(&[0, 0, 0x10, 2, 0, 0, 0xaa, 0xbb], &mut wire)?;
    /// tx.encrypt_frame(&[0, 0, 0x11, 0, 0, 0], &mut wire)?;
    ///
    /// let mut input: &[u8] = &wire;
    /// let mut frames = Vec::new();
    /// while let Some(frame) = rx.decrypt(&mut input)? {
    ///     frames.push(frame);
    /// }
    /// assert!(input.is_empty());
    /// assert_eq!(frames, [vec![0, 0, 0x10, 2, 0, 0, 0xaa, 0xbb], vec![0, 0, 0x11, 0, 0, 0]]);
    /// # Ok::<(), NoiseError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`NoiseDecryptor::decrypt_into`].
    pub fn decrypt(&mut self, input: &mut &[u8]) -> Result<Option<Vec<u8>>, NoiseError> {
        let mut frame = core::mem::take(&mut self.pending);
        match self.decrypt_into(input, &mut frame)? {
            // `frame` holds exactly this frame: its allocation becomes the Vec.
            Some(_) => Ok(Some(Vec::from(frame))),
            None => {
                self.pending = frame;
                Ok(None)
            }
        }
    }

    fn step(&mut self, input: &mut &[u8], out: &mut BytesMut) -> Result<Option<usize>, NoiseError> {
        loop {
            match &mut self.state {
                State::Poisoned => return Err(NoiseError::Poisoned),
                State::Header { buf, filled } => {
                    let want = ENCRYPTED_HEADER_LEN - *filled;
                    let take = want.min(input.len());
                    let (head, rest) = input.split_at(take);
                    buf[*filled..*filled + take].copy_from_slice(head);
                    *filled += take;
                    *input = rest;
                    if *filled < ENCRYPTED_HEADER_LEN {
                        return Ok(None);
                    }
                    let [h0, h1, h2, h3, h4, h5, tag @ ..] = *buf;
                    let mut header = [h0, h1, h2, h3, h4, h5];
                    let n = next_nonce(&mut self.nonce)?;
                    self.cipher
                        .open(n, &[], &mut header, &tag)
                        .map_err(|_| NoiseError::HeaderDecrypt)?;

                    let payload_len = header_payload_len(&header);
                    if payload_len > self.max_payload_len {
                        return Err(PayloadTooLarge {
                            len: payload_len,
                            max: self.max_payload_len,
                        }
                        .into());
                    }
                    self.state = IDLE;
                    // Room for the header and for as much payload as has arrived.
                    out.reserve(HEADER_LEN + payload_len.min(input.len()));
                    out.put_slice(&header);
                    if payload_len == 0 {
                        return Ok(Some(HEADER_LEN));
                    }
                    self.state = State::Payload(PayloadState {
                        payload_len,
                        decrypted: 0,
                        piece_filled: 0,
                        tag: [0; MAC_LEN],
                        tag_filled: 0,
                        chunk: 0,
                    });
                }
                State::Payload(p) => {
                    if input.is_empty() {
                        return Ok(None);
                    }
                    out.reserve(input.len().min(p.payload_still_expected()));
                    if open_pieces(&self.cipher, &mut self.nonce, p, input, out)? {
                        let len = HEADER_LEN + p.payload_len;
                        self.state = IDLE;
                        return Ok(Some(len));
                    }
                    return Ok(None);
                }
            }
        }
    }

    /// Ciphertext bytes still needed to finish the frame in progress (22 when idle), a good
    /// minimum size for the next read. 0 once poisoned.
    pub fn bytes_needed(&self) -> usize {
        match &self.state {
            State::Header { filled, .. } => ENCRYPTED_HEADER_LEN - filled,
            State::Payload(p) => p.missing(),
            State::Poisoned => 0,
        }
    }

    /// Whether part of a frame has been received but not completed.
    pub fn is_mid_frame(&self) -> bool {
        match &self.state {
            State::Header { filled, .. } => *filled > 0,
            State::Payload(_) => true,
            State::Poisoned => false,
        }
    }

    /// Call at end of stream: [`NoiseError::Truncated`] if the stream stopped inside a frame,
    /// [`NoiseError::Poisoned`] if an earlier call failed.
    ///
    /// # Errors
    ///
    /// As described above.
    pub fn finish(&self) -> Result<(), NoiseError> {
        match self.buffered() {
            _ if matches!(self.state, State::Poisoned) => Err(NoiseError::Poisoned),
            0 => Ok(()),
            buffered => Err(NoiseError::Truncated { buffered }),
        }
    }

    /// Ciphertext bytes received of the frame in progress: 0 between frames (and once
    /// poisoned). What a peer has sent of a frame it has not finished, for a server's
    /// partial-frame timeout.
    pub fn buffered(&self) -> usize {
        match &self.state {
            State::Header { filled, .. } => *filled,
            State::Payload(p) => {
                ENCRYPTED_HEADER_LEN
                    + payload_ciphertext_len(p.decrypted)
                    + p.piece_filled
                    + p.tag_filled
            }
            State::Poisoned => 0,
        }
    }

    /// The nonce the next AEAD call will use.
    pub fn nonce(&self) -> u64 {
        self.nonce
    }

    #[cfg(test)]
    pub(crate) fn set_nonce(&mut self, n: u64) {
        self.nonce = n;
    }
}

/// Takes the next nonce, refusing the reserved value u64::MAX.
#[inline]
fn next_nonce(counter: &mut u64) -> Result<u64, NoiseError> {
    let n = *counter;
    if n == u64::MAX {
        return Err(NoiseError::NonceExhausted);
    }
    *counter = n + 1;
    Ok(n)
}

/// Appends payload ciphertext from `input` to `out`, opening each chunk in place as soon
/// as its tag is complete. Returns `true` once the last chunk is open.
fn open_pieces(
    cipher: &Aead,
    counter: &mut u64,
    p: &mut PayloadState,
    input: &mut &[u8],
    out: &mut BytesMut,
) -> Result<bool, NoiseError> {
    loop {
        let piece_len = p.piece_len();
        if p.piece_filled < piece_len {
            let take = (piece_len - p.piece_filled).min(input.len());
            let (head, rest) = input.split_at(take);
            out.put_slice(head);
            p.piece_filled += take;
            *input = rest;
        }
        if p.piece_filled == piece_len && p.tag_filled < MAC_LEN {
            let take = (MAC_LEN - p.tag_filled).min(input.len());
            let (head, rest) = input.split_at(take);
            p.tag[p.tag_filled..p.tag_filled + take].copy_from_slice(head);
            p.tag_filled += take;
            *input = rest;
        }
        if p.tag_filled < MAC_LEN {
            return Ok(false);
        }

        let n = next_nonce(counter)?;
        // The piece is the last `piece_len` bytes of `out` (unless the caller changed the
        // buffer mid-frame, in which case authentication fails).
        let start = out.len().saturating_sub(piece_len);
        let piece = out.get_mut(start..).unwrap_or_default();
        cipher
            .open(n, &[], piece, &p.tag)
            .map_err(|_| NoiseError::ChunkDecrypt { index: p.chunk })?;
        p.decrypted += piece_len;
        p.piece_filled = 0;
        p.tag_filled = 0;
        p.chunk += 1;
        if p.decrypted == p.payload_len {
            return Ok(true);
        }
    }
}

impl fmt::Debug for NoiseDecryptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NoiseDecryptor")
            .field("nonce", &self.nonce)
            .field("max_payload_len", &self.max_payload_len)
            .field("bytes_needed", &self.bytes_needed())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (NoiseEncryptor, NoiseDecryptor) {
        let key = [0x42; 32];
        (
            NoiseEncryptor::new(&key).unwrap(),
            NoiseDecryptor::new(&key).unwrap(),
        )
    }

    fn frame(len: usize) -> Vec<u8> {
        let mut f = vec![0x01, 0x80, 0x33];
        f.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
        f.extend((0..len).map(|i| (i * 7 + 3) as u8));
        f
    }

    #[test]
    fn encryptor_refuses_a_frame_that_needs_the_reserved_nonce() {
        let (mut tx, _) = pair();
        // A 1-byte payload needs 2 nonces: u64::MAX - 2 and u64::MAX - 1 are fine...
        tx.set_nonce(u64::MAX - 2);
        let mut out = BytesMut::new();
        tx.encrypt_frame(&frame(1), &mut out).unwrap();
        assert_eq!(tx.nonce(), u64::MAX);
        // ...after which even an empty frame would need u64::MAX itself.
        let before = out.len();
        assert_eq!(
            tx.encrypt_frame(&frame(0), &mut out),
            Err(NoiseError::NonceExhausted)
        );
        assert_eq!(out.len(), before, "nothing appended on error");
    }

    #[test]
    fn encryptor_checks_the_whole_frame_before_using_any_nonce() {
        let (mut tx, _) = pair();
        tx.set_nonce(u64::MAX - 2);
        let mut out = BytesMut::new();
        // 65520 bytes = 2 chunks + header = 3 nonces, one too many.
        assert_eq!(
            tx.encrypt_frame(&frame(65_520), &mut out),
            Err(NoiseError::NonceExhausted)
        );
        assert!(out.is_empty());
        assert_eq!(tx.nonce(), u64::MAX - 2);
    }

    #[test]
    fn decryptor_stops_at_the_reserved_nonce_and_stays_poisoned() {
        let (mut tx, mut rx) = pair();
        tx.set_nonce(u64::MAX - 1);
        rx.set_nonce(u64::MAX - 1);
        let mut out = BytesMut::new();
        // The header uses u64::MAX - 1; the payload chunk would need u64::MAX. Encrypt the
        // header-only frame instead and then feed a second header.
        tx.encrypt_frame(&frame(0), &mut out).unwrap();
        let mut input: &[u8] = &out;
        assert_eq!(rx.decrypt(&mut input).unwrap(), Some(frame(0)));
        let mut input: &[u8] = &out;
        assert_eq!(rx.decrypt(&mut input), Err(NoiseError::NonceExhausted));
        assert_eq!(rx.decrypt(&mut input), Err(NoiseError::Poisoned));
        assert_eq!(rx.finish(), Err(NoiseError::Poisoned));
    }

    #[test]
    fn payload_buffer_follows_what_arrived_not_what_was_announced() {
        let (mut tx, mut rx) = pair();
        let f = frame(300_000);
        let mut wire = BytesMut::new();
        tx.encrypt_frame(&f, &mut wire).unwrap();
        // Header plus a little: capacity must follow the bytes received, not the 300 kB
        // announced.
        let mut buf = BytesMut::new();
        let mut input: &[u8] = &wire[..22 + 100];
        assert_eq!(rx.decrypt_into(&mut input, &mut buf).unwrap(), None);
        assert!(buf.capacity() <= HEADER_LEN + 100, "{}", buf.capacity());
        // Feed the rest in 1000-byte pieces and watch the capacity.
        let mut rest: &[u8] = &wire[22 + 100..];
        let mut received = 100;
        let mut done = None;
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(rest.len().min(1000));
            rest = tail;
            received += piece.len();
            let mut p_in = piece;
            if let Some(len) = rx.decrypt_into(&mut p_in, &mut buf).unwrap() {
                done = Some(len);
            } else {
                // Amortized doubling: never more than twice what is held plus one piece.
                assert!(buf.capacity() <= 2 * (HEADER_LEN + received) + 1000);
            }
        }
        assert_eq!(done, Some(f.len()));
        assert_eq!(&buf[..], &f[..]);
    }

    #[test]
    fn decrypt_into_appends_after_what_the_buffer_holds_and_reuses_it() {
        let (mut tx, mut rx) = pair();
        let frames = [frame(10), frame(0), frame(70_000), frame(1)];
        let mut wire = BytesMut::new();
        for f in &frames {
            tx.encrypt_frame(f, &mut wire).unwrap();
        }
        // Something already in the buffer stays in front of the frames.
        let mut buf = BytesMut::from(&b"keep"[..]);
        let mut input: &[u8] = &wire;
        let mut expected = b"keep".to_vec();
        for f in &frames {
            // Cut each frame's ciphertext in two to cross the call boundary mid-frame.
            let len = wire_len(f.len() - HEADER_LEN);
            let (first, second) = input[..len].split_at(len / 2);
            let (mut a, mut b) = (first, second);
            assert_eq!(rx.decrypt_into(&mut a, &mut buf).unwrap(), None);
            assert!(rx.is_mid_frame());
            assert_eq!(rx.decrypt_into(&mut b, &mut buf).unwrap(), Some(f.len()));
            assert!(a.is_empty() && b.is_empty());
            expected.extend_from_slice(f);
            assert_eq!(&buf[..], &expected[..]);
            input = &input[len..];
        }
        assert!(input.is_empty());
    }

    #[test]
    fn a_failed_chunk_removes_the_partial_frame_from_the_buffer() {
        let (mut tx, mut rx) = pair();
        let mut wire = BytesMut::new();
        tx.encrypt_frame(&frame(100_000), &mut wire).unwrap();
        // Damage the second chunk: the first one is decrypted into the buffer, then the
        // frame fails and the buffer is back to what it held before.
        let at = ENCRYPTED_HEADER_LEN + crate::MAX_CHUNK_CIPHERTEXT + 5;
        wire[at] ^= 1;
        let mut buf = BytesMut::from(&b"before"[..]);
        let mut input: &[u8] = &wire;
        assert_eq!(
            rx.decrypt_into(&mut input, &mut buf),
            Err(NoiseError::ChunkDecrypt { index: 1 })
        );
        assert_eq!(&buf[..], b"before");
        assert_eq!(
            rx.decrypt_into(&mut &wire[..], &mut buf),
            Err(NoiseError::Poisoned)
        );
    }

    #[test]
    fn a_buffer_changed_mid_frame_fails_authentication() {
        let (mut tx, mut rx) = pair();
        let mut wire = BytesMut::new();
        tx.encrypt_frame(&frame(50), &mut wire).unwrap();
        let mut buf = BytesMut::new();
        let mut input: &[u8] = &wire[..40];
        assert_eq!(rx.decrypt_into(&mut input, &mut buf).unwrap(), None);
        // The caller throws away the partial frame: no panic, a typed error.
        buf.clear();
        let mut input: &[u8] = &wire[40..];
        assert_eq!(
            rx.decrypt_into(&mut input, &mut buf),
            Err(NoiseError::ChunkDecrypt { index: 0 })
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn bytes_needed_counts_down_to_the_end_of_the_frame() {
        let (mut tx, mut rx) = pair();
        let f = frame(70_000);
        let mut wire = BytesMut::new();
        tx.encrypt_frame(&f, &mut wire).unwrap();
        assert_eq!(wire.len(), wire_len(70_000));
        assert_eq!(rx.bytes_needed(), 22);
        for i in 0..wire.len() - 1 {
            let mut b: &[u8] = &wire[i..i + 1];
            assert_eq!(rx.decrypt(&mut b).unwrap(), None);
            // Until the header is open only the rest of the header is known to be needed.
            let expected = if i + 1 < 22 {
                22 - i - 1
            } else {
                wire.len() - i - 1
            };
            assert_eq!(rx.bytes_needed(), expected, "after byte {i}");
            assert!(rx.is_mid_frame());
            // Every byte fed so far is counted, across the two chunks' tags.
            assert_eq!(rx.buffered(), i + 1, "after byte {i}");
        }
        let mut b: &[u8] = &wire[wire.len() - 1..];
        assert_eq!(rx.decrypt(&mut b).unwrap(), Some(f));
        assert_eq!(rx.bytes_needed(), 22);
        assert!(!rx.is_mid_frame());
        assert_eq!(rx.buffered(), 0);
    }
}

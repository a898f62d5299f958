//! Stratum V2 Noise transport: the `Noise_NX_Secp256k1+EllSwift_ChaChaPoly_SHA256`
//! handshake, the authority-signed server certificate, and frame encryption, with no I/O.
//!
//! ```
//! use sv2c_noise::{AuthorityKeypair, Initiator, Responder, StaticKeypair, unix_time_now};
//!
//! // Server setup: the pool authority certifies the server's static key for one day.
//! let authority = AuthorityKeypair::generate()?;
//! let now = unix_time_now();
//! let responder =
//!     Responder::from_authority(StaticKeypair::generate()?, &authority, now, now + 86_400)?;
//!
//! // Client knows the authority key (usually as its base58check string).
//! let authority_key = authority.public_key().to_string().parse()?;
//!
//! // act 1: client -> server, 64 bytes
//! let (act1, initiator) = Initiator::new(authority_key)?.step_1();
//! // act 2: server -> client, 234 bytes
//! let (act2, server) = responder.step(&act1)?;
//! let client = initiator.step_2(&act2, now)?;
//!
//! // Transport: each side splits into a sending and a receiving half.
//! let (mut client_tx, _client_rx) = client.split();
//! let (_server_tx, mut server_rx) = server.split();
//!
//! // A plaintext Sv2 frame: extension_type 0, msg_type 0x00, msg_length 3, payload.
//! let frame = [0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x01, 0x02, 0x03];
//! let mut wire = bytes::BytesMut::new();
//! client_tx.encrypt_frame(&frame, &mut wire)?;
//! assert_eq!(wire.len(), sv2c_noise::wire_len(3)); // 22 + 3 + 16
//!
//! let mut input = &wire[..];
//! let decrypted = server_rx.decrypt(&mut input)?;
//! assert_eq!(decrypted.as_deref(), Some(&frame[..]));
//! # Ok::<(), sv2c_noise::NoiseError>(())
//! ```
//!
//! # Model
//!
//! Everything follows SV2-WIRE §4 (the workspace's wire digest of the Sv2 specification).
//!
//! * **Handshake** ([`Initiator`] → [`InitiatorAwaitingAct2`] → [`Transport`];
//!   [`Responder::step`] → [`Transport`]). Act 1 is the client's 64-byte ElligatorSwift
//!   ephemeral key; act 2 is the server's ephemeral key, its encrypted static key and its
//!   encrypted [`Certificate`] (234 bytes). Handshake messages are raw bytes with no Sv2
//!   header. Each step consumes its state, so transport keys only exist after a
//!   successful handshake.
//! * **Certificate**. The authority ([`AuthorityKeypair`]) signs
//!   `SHA256(version ‖ valid_from ‖ not_valid_after ‖ server_x_only)` with BIP340. The client
//!   verifies it against its configured [`AuthorityPublicKey`] with ±10 s of clock slack.
//! * **Transport**. [`Transport::split`] yields a [`NoiseEncryptor`] (our key and nonce) and a
//!   [`NoiseDecryptor`] (the peer's key and nonce) — separate values, so the directions never
//!   share a cipher state. A frame is sent as its 6-byte header sealed into 22 bytes, then the
//!   payload in pieces of at most 65 519 bytes, each sealed with its own 16-byte tag:
//!
//! ```text
//! | ENC(hdr) 22 | ENC(piece 0) ≤ 65535 | ENC(piece 1) | ... |     wire_len(L) = 22 + L + 16·⌈L/65519⌉
//! ```
//!
//! The decryptor is a sans-io reassembler: give it ciphertext in pieces of any size, get
//! plaintext frames back. It checks the announced payload size against a configurable
//! maximum before buffering any payload, grows its buffer only as ciphertext arrives, and
//! poisons itself on the first error (bad tag, oversize frame, nonce exhaustion).
//!
//! Both directions work in caller-owned [`bytes::BytesMut`] buffers: the encryptor copies
//! each piece into the output buffer and seals it there
//! ([`NoiseEncryptor::encrypt_frame`]), the decryptor assembles each frame in a buffer the
//! caller reuses and opens every chunk where it lies ([`NoiseDecryptor::decrypt_into`]).
//! With buffers that keep their capacity, a connection makes no heap allocation per
//! frame. [`NoiseDecryptor::decrypt`] returns owned `Vec<u8>` frames instead, at one
//! allocation each.
//!
//! # Errors
//!
//! Every failure is a [`NoiseError`]; no input makes this crate panic.

#![deny(unsafe_code)]

mod aead;
mod certificate;
mod error;
mod handshake;
// The one foreign call: key generation without a context rerandomization per key.
#[allow(unsafe_code)]
mod keygen;
mod keys;
mod random;
mod sizes;
mod symmetric;
mod transport;

/// The `bytes` crate whose [`BytesMut`](bytes::BytesMut) the transport reads and writes.
pub use bytes;
pub use certificate::{CERTIFICATE_CLOCK_SLACK, CERTIFICATE_VERSION, Certificate};
pub use error::{Act2Part, AuthorityKeyStringError, NoiseError};
pub use handshake::{Initiator, InitiatorAwaitingAct2, Responder, Transport, unix_time_now};
pub use keys::{AuthorityKeypair, AuthorityPublicKey, EphemeralKey, StaticKeypair};
pub use sizes::{
    ACT1_LEN, ACT2_LEN, ELLSWIFT_LEN, ENCRYPTED_HEADER_LEN, HEADER_LEN, MAC_LEN,
    MAX_CHUNK_CIPHERTEXT, MAX_CHUNK_PLAINTEXT, MAX_PAYLOAD_LEN,
};
pub use symmetric::PROTOCOL_NAME;
pub use transport::{NoiseDecryptor, NoiseEncryptor, payload_ciphertext_len, wire_len};
// The plaintext frame header and the payload-limit error are defined once for the
// workspace, in `sv2c-binary`.
pub use sv2c_binary::{Header, PayloadTooLarge};

//! The sizes of keys, tags, handshake acts and transport frames.

use crate::certificate::Certificate;

/// Size of an ElligatorSwift-encoded public key.
pub const ELLSWIFT_LEN: usize = 64;
/// Size of a Poly1305 tag.
pub const MAC_LEN: usize = 16;
/// Size of handshake act 1 (initiator → responder).
pub const ACT1_LEN: usize = ELLSWIFT_LEN;
/// Size of handshake act 2 (responder → initiator): 64 + (64 + 16) + (74 + 16).
pub const ACT2_LEN: usize = ELLSWIFT_LEN + (ELLSWIFT_LEN + MAC_LEN) + (Certificate::LEN + MAC_LEN);
// The plaintext frame header's size and the largest payload a U24 `msg_length` can
// announce are defined once for the workspace, in `sv2c-binary`.
pub use sv2c_binary::{HEADER_LEN, MAX_PAYLOAD_LEN};
/// Size of an encrypted Sv2 frame header.
pub const ENCRYPTED_HEADER_LEN: usize = HEADER_LEN + MAC_LEN;
/// Largest ciphertext chunk, tag included.
pub const MAX_CHUNK_CIPHERTEXT: usize = 65_535;
/// Largest plaintext piece per chunk.
pub const MAX_CHUNK_PLAINTEXT: usize = MAX_CHUNK_CIPHERTEXT - MAC_LEN;

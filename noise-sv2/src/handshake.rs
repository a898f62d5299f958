//! The NX handshake (SV2-WIRE §4.5) as typestates.
//!
//! ```text
//! Initiator --step_1--> InitiatorAwaitingAct2 --step_2(act2)--> Transport
//!            (act 1, 64 B)
//! Responder --step(act1)--> (act 2, 234 B) + Transport
//! ```
//!
//! Each step consumes its state, so a handshake cannot be resumed after a failure and no
//! transport key exists before the handshake is complete.

use core::fmt;

use secp256k1::PublicKey;
use secp256k1::ellswift::{ElligatorSwift, Party};
use zeroize::Zeroize;

use crate::certificate::Certificate;
use crate::error::{Act2Part, NoiseError};
use crate::keys::{AuthorityKeypair, AuthorityPublicKey, EllKey, EphemeralKey, StaticKeypair};
use crate::symmetric::{SymmetricState, ecdh};
use crate::transport::{NoiseDecryptor, NoiseEncryptor};
use crate::{ACT1_LEN, ACT2_LEN, ELLSWIFT_LEN, MAC_LEN};

/// Offsets inside act 2.
const RS_START: usize = ELLSWIFT_LEN; // 64
const RS_END: usize = RS_START + ELLSWIFT_LEN + MAC_LEN; // 144
// The certificate ends the second message (234 bytes).
const _: () = assert!(RS_END + Certificate::LEN + MAC_LEN == ACT2_LEN);

/// Current unix time in seconds, saturated to the `u32` range (0 before 1970).
pub fn unix_time_now() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
        .unwrap_or(0)
}

// ===== Initiator =====

/// The client side before it has sent act 1.
pub struct Initiator {
    authority: Option<AuthorityPublicKey>,
    e: EllKey,
}

impl Initiator {
    /// A client that authenticates the server with the pool authority key `authority`.
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if no ephemeral key can be drawn.
    pub fn new(authority: AuthorityPublicKey) -> Result<Self, NoiseError> {
        Ok(Self::with_ephemeral(
            Some(authority),
            EphemeralKey::generate()?,
        ))
    }

    /// A client that accepts any server certificate without checking it.
    ///
    /// The channel is still encrypted, but anyone in the path can impersonate the server.
    /// Use it only between local processes or in tests (SRI does the same when no authority
    /// key is configured).
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if no ephemeral key can be drawn.
    pub fn new_unauthenticated() -> Result<Self, NoiseError> {
        Ok(Self::with_ephemeral(None, EphemeralKey::generate()?))
    }

    /// A client with a caller-chosen ephemeral key, to reproduce fixed test vectors.
    /// `None` skips the certificate check as in [`Initiator::new_unauthenticated`].
    pub fn with_ephemeral(authority: Option<AuthorityPublicKey>, ephemeral: EphemeralKey) -> Self {
        Self {
            authority,
            e: ephemeral.into_ell_key(),
        }
    }

    /// Produces act 1 (`-> e`): the 64-byte ElligatorSwift encoding of the ephemeral key.
    pub fn step_1(self) -> ([u8; ACT1_LEN], InitiatorAwaitingAct2) {
        let mut sym = SymmetricState::new();
        let act1 = *self.e.ellswift();
        sym.mix_hash(&act1);
        // EncryptAndHash(empty payload) without a key is MixHash(empty); it must happen.
        sym.mix_hash(&[]);
        (
            act1,
            InitiatorAwaitingAct2 {
                authority: self.authority,
                e: self.e,
                sym,
            },
        )
    }
}

impl fmt::Debug for Initiator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Initiator")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

/// The client after act 1, waiting for the server's 234-byte act 2.
pub struct InitiatorAwaitingAct2 {
    authority: Option<AuthorityPublicKey>,
    e: EllKey,
    sym: SymmetricState,
}

impl InitiatorAwaitingAct2 {
    /// Processes act 2 (`<- e, ee, s, es` + certificate) and, if the server proves it holds
    /// a static key certified by the authority at time `now` (unix seconds), returns the
    /// transport keys.
    ///
    /// # Errors
    ///
    /// - [`NoiseError::HandshakeLength`] unless `act2` is exactly 234 bytes;
    /// - [`NoiseError::HandshakeDecrypt`] if the encrypted static key or certificate fails
    ///   authentication;
    /// - the certificate errors of [`Certificate::verify`] when an authority key is set.
    ///
    /// Any error ends the handshake: close the connection.
    pub fn step_2(mut self, act2: &[u8], now: u32) -> Result<Transport, NoiseError> {
        let act2: &[u8; ACT2_LEN] = act2.try_into().map_err(|_| NoiseError::HandshakeLength {
            expected: ACT2_LEN,
            actual: act2.len(),
        })?;
        let re: [u8; ELLSWIFT_LEN] = sub_array(act2, 0)?;
        let mut rs: [u8; ELLSWIFT_LEN + MAC_LEN] = sub_array(act2, RS_START)?;
        let mut cert: [u8; Certificate::LEN + MAC_LEN] = sub_array(act2, RS_END)?;
        let ie = *self.e.ellswift();
        let sym = &mut self.sym;

        // <- e, ee
        sym.mix_hash(&re);
        let mut ee = ecdh(self.e.secret(), Party::Initiator, &ie, &re);
        sym.mix_key(&ee);
        ee.zeroize();

        // <- s
        sym.decrypt_and_hash(&mut rs)
            .map_err(|_| NoiseError::HandshakeDecrypt(Act2Part::StaticKey))?;
        let rs_ell: [u8; ELLSWIFT_LEN] = sub_array(&rs, 0)?;

        // es
        let mut es = ecdh(self.e.secret(), Party::Initiator, &ie, &rs_ell);
        sym.mix_key(&es);
        es.zeroize();

        // payload: the certificate
        sym.decrypt_and_hash(&mut cert)
            .map_err(|_| NoiseError::HandshakeDecrypt(Act2Part::Certificate))?;
        let certificate = Certificate::from_bytes(&sub_array(&cert, 0)?);

        if let Some(authority) = &self.authority {
            let rs_x_only = ellswift_x_only(&rs_ell);
            certificate.verify(authority, &rs_x_only, now)?;
        }

        let (mut k1, mut k2) = sym.split();
        let halves = transport_halves(&k1, &k2);
        k1.zeroize();
        k2.zeroize();
        let (encryptor, decryptor) = halves?;
        let transport = Transport {
            encryptor,
            decryptor,
            handshake_hash: *sym.h(),
            server: Some(ServerIdentity {
                static_ellswift: rs_ell,
                certificate,
            }),
        };
        Ok(transport)
    }
}

impl fmt::Debug for InitiatorAwaitingAct2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InitiatorAwaitingAct2")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

// ===== Responder =====

/// The server side: a static key and the certificate the authority signed for it.
///
/// One `Responder` answers any number of connections ([`Responder::step`] takes `&self`).
/// The certificate is fixed; renew it with [`Responder::set_certificate`] before it
/// expires.
#[derive(Clone)]
pub struct Responder {
    static_key: StaticKeypair,
    certificate: Certificate,
}

impl Responder {
    /// A responder presenting `certificate` for `static_key`. The certificate is sent as it
    /// is; make sure it was signed for `static_key.x_only_public_key()`.
    pub fn new(static_key: StaticKeypair, certificate: Certificate) -> Self {
        Self {
            static_key,
            certificate,
        }
    }

    /// A responder whose certificate is signed here by `authority`, valid from `valid_from`
    /// to `not_valid_after` (unix seconds).
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if the OS RNG fails.
    pub fn from_authority(
        static_key: StaticKeypair,
        authority: &AuthorityKeypair,
        valid_from: u32,
        not_valid_after: u32,
    ) -> Result<Self, NoiseError> {
        let certificate = Certificate::sign(
            authority,
            &static_key.x_only_public_key(),
            valid_from,
            not_valid_after,
        )?;
        Ok(Self::new(static_key, certificate))
    }

    /// The certificate sent to clients.
    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }

    /// Replaces the certificate (e.g. a renewed one) for later handshakes.
    pub fn set_certificate(&mut self, certificate: Certificate) {
        self.certificate = certificate;
    }

    /// The static key.
    pub fn static_key(&self) -> &StaticKeypair {
        &self.static_key
    }

    /// Answers act 1 with act 2 and returns the transport keys.
    ///
    /// # Errors
    ///
    /// [`NoiseError::HandshakeLength`] unless `act1` is exactly 64 bytes (every 64-byte
    /// string is a valid ElligatorSwift encoding), [`NoiseError::RandomSource`] if no
    /// ephemeral key can be drawn.
    pub fn step(&self, act1: &[u8]) -> Result<([u8; ACT2_LEN], Transport), NoiseError> {
        let act1 = act1_array(act1)?;
        self.respond(act1, EphemeralKey::generate()?.into_ell_key())
    }

    /// [`Responder::step`] with a caller-chosen ephemeral key: one made ahead of time (a
    /// server that makes fresh keys while idle spends less of a handshake storm on them),
    /// or a fixed one to reproduce a test vector. Use each key once.
    ///
    /// # Errors
    ///
    /// [`NoiseError::HandshakeLength`] unless `act1` is exactly 64 bytes.
    pub fn step_with_ephemeral(
        &self,
        act1: &[u8],
        ephemeral: EphemeralKey,
    ) -> Result<([u8; ACT2_LEN], Transport), NoiseError> {
        let act1 = act1_array(act1)?;
        self.respond(act1, ephemeral.into_ell_key())
    }

    fn respond(
        &self,
        ie: [u8; ACT1_LEN],
        e: EllKey,
    ) -> Result<([u8; ACT2_LEN], Transport), NoiseError> {
        let mut sym = SymmetricState::new();
        // -> e
        sym.mix_hash(&ie);
        sym.mix_hash(&[]);

        let mut act2 = [0u8; ACT2_LEN];
        let (re_out, rest) = act2.split_at_mut(RS_START);
        let (rs_out, cert_out) = rest.split_at_mut(RS_END - RS_START);

        // <- e, ee
        let re = *e.ellswift();
        re_out.copy_from_slice(&re);
        sym.mix_hash(&re);
        let mut ee = ecdh(e.secret(), Party::Responder, &ie, &re);
        sym.mix_key(&ee);
        ee.zeroize();
        drop(e);

        // <- s
        let rs = self.static_key.ell_key();
        rs_out[..ELLSWIFT_LEN].copy_from_slice(rs.ellswift());
        sym.encrypt_and_hash(rs_out)
            .map_err(|_| NoiseError::AeadBackend)?;

        // es
        let mut es = ecdh(rs.secret(), Party::Responder, &ie, rs.ellswift());
        sym.mix_key(&es);
        es.zeroize();

        // payload: the certificate
        cert_out[..Certificate::LEN].copy_from_slice(&self.certificate.to_bytes());
        sym.encrypt_and_hash(cert_out)
            .map_err(|_| NoiseError::AeadBackend)?;

        let (mut k1, mut k2) = sym.split();
        let halves = transport_halves(&k2, &k1);
        k1.zeroize();
        k2.zeroize();
        let (encryptor, decryptor) = halves?;
        let transport = Transport {
            encryptor,
            decryptor,
            handshake_hash: *sym.h(),
            server: None,
        };
        Ok((act2, transport))
    }
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("static_key", &self.static_key)
            .field("certificate", &self.certificate)
            .finish()
    }
}

/// The sending and receiving halves for keys `send` and `receive`.
fn transport_halves(
    send: &[u8; 32],
    receive: &[u8; 32],
) -> Result<(NoiseEncryptor, NoiseDecryptor), NoiseError> {
    Ok((NoiseEncryptor::new(send)?, NoiseDecryptor::new(receive)?))
}

fn act1_array(act1: &[u8]) -> Result<[u8; ACT1_LEN], NoiseError> {
    act1.try_into().map_err(|_| NoiseError::HandshakeLength {
        expected: ACT1_LEN,
        actual: act1.len(),
    })
}

/// `src[start..start + N]` as an array. Call sites pass fixed-size handshake buffers with
/// constant offsets, so this never fails in practice; if it did, it would report the
/// buffer as a wrongly sized act 2 instead of panicking.
fn sub_array<const N: usize>(src: &[u8], start: usize) -> Result<[u8; N], NoiseError> {
    start
        .checked_add(N)
        .and_then(|end| src.get(start..end))
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or(NoiseError::HandshakeLength {
            expected: ACT2_LEN,
            actual: src.len(),
        })
}

/// The x-only key of a 64-byte ElligatorSwift encoding.
fn ellswift_x_only(ell: &[u8; 64]) -> [u8; 32] {
    PublicKey::from_ellswift(ElligatorSwift::from_array(*ell))
        .x_only_public_key()
        .0
        .to_byte_array()
}

// ===== Transport =====

/// What the client learned about the server during the handshake.
#[derive(Debug, Clone, Copy)]
struct ServerIdentity {
    static_ellswift: [u8; 64],
    certificate: Certificate,
}

/// The result of a completed handshake: one cipher state per direction.
///
/// [`Transport::split`] hands out the [`NoiseEncryptor`] (our sending key and nonce) and the
/// [`NoiseDecryptor`] (the peer's sending key and nonce) as two separate values, so each
/// direction can live in its own task.
pub struct Transport {
    encryptor: NoiseEncryptor,
    decryptor: NoiseDecryptor,
    handshake_hash: [u8; 32],
    server: Option<ServerIdentity>,
}

impl Transport {
    /// Splits into the sending and receiving halves.
    pub fn split(self) -> (NoiseEncryptor, NoiseDecryptor) {
        (self.encryptor, self.decryptor)
    }

    /// The sending half.
    pub fn encryptor(&mut self) -> &mut NoiseEncryptor {
        &mut self.encryptor
    }

    /// The receiving half.
    pub fn decryptor(&mut self) -> &mut NoiseDecryptor {
        &mut self.decryptor
    }

    /// The final handshake hash `h`, identical on both sides (usable for channel binding).
    pub fn handshake_hash(&self) -> &[u8; 32] {
        &self.handshake_hash
    }

    /// On the initiator: the certificate the server presented (verified unless the initiator
    /// was built without an authority key). `None` on the responder.
    pub fn server_certificate(&self) -> Option<&Certificate> {
        self.server.as_ref().map(|s| &s.certificate)
    }

    /// On the initiator: the server's static key in x-only form. `None` on the responder.
    pub fn server_static_key(&self) -> Option<[u8; 32]> {
        self.server
            .as_ref()
            .map(|s| ellswift_x_only(&s.static_ellswift))
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("encryptor", &self.encryptor)
            .field("decryptor", &self.decryptor)
            .field("server_certificate", &self.server_certificate())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    //! The §4.9 intermediate values, which the public API does not expose.
    use super::*;

    fn h32(s: &str) -> [u8; 32] {
        hex::decode(s).unwrap().try_into().unwrap()
    }
    fn h64(s: &str) -> [u8; 64] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    #[test]
    fn spec_vector_intermediate_state() {
        let ie = ell_key_from(
            "1111111111111111111111111111111111111111111111111111111111111111",
            "f5962c51828e028546105360511635b8b63c6f94ea73d04e26f24eab63931c8e0ec1e646c878fced6c65171fd3997a6d0b8b1b15590876e846a51620cb096c59",
        );
        let re = ell_key_from(
            "2222222222222222222222222222222222222222222222222222222222222222",
            "a35af1ea1dd30c1defe8e6349ee7d5b8bcaf292f9e834e077d043d5f781d1a1d90486b1ff7845917843489a5a19444865db2b5f3cfdfc2e561cef4f52c59c5fe",
        );
        let rs = ell_key_from(
            "3333333333333333333333333333333333333333333333333333333333333333",
            "ed412fd076b3d84901884715e81590ed5a18d7ff4d3544768b44ed41012e06a74c323da5fab6d0181c12cc9b7b4148e2b0b87ca8f6e11a477dce0a75e7f5a6a2",
        );

        let mut sym = SymmetricState::new();
        assert_eq!(
            sym.ck(),
            &h32("2eb47881208e9eee1f669f67c66ee70ea9ea88090d503fe830dc4bc83e29bf10")
        );
        assert_eq!(
            sym.h(),
            &h32("922fa32e4f487c0d59caa3bed7899ce3d98db7e13dbd3b7cf2d23dd433dc6104")
        );
        sym.mix_hash(ie.ellswift());
        assert_eq!(
            sym.h(),
            &h32("4feb65b64111532d9a57dff95579db09e38291d13f00ca627a644c1fd6f1d680")
        );
        sym.mix_hash(&[]);
        assert_eq!(
            sym.h(),
            &h32("86f3c60c20f0118e64525953e6afc9b2493cca16e679f7d7f331dee4ac3e7f7c")
        );
        sym.mix_hash(re.ellswift());
        assert_eq!(
            sym.h(),
            &h32("2f9079a4e16b65444767ec66d9a70285353c1de81085ed38fadb66f2e342c7dc")
        );

        let ee_i = ecdh(ie.secret(), Party::Initiator, ie.ellswift(), re.ellswift());
        let ee_r = ecdh(re.secret(), Party::Responder, ie.ellswift(), re.ellswift());
        let ee = h32("2931fe36daab78a55f95145be407395ec9d6e68cd3bb8a9fe475bfe3d4db9e74");
        assert_eq!(ee_i, ee);
        assert_eq!(ee_r, ee);
        sym.mix_key(&ee);
        assert_eq!(
            sym.ck(),
            &h32("58adb2615409e543dd574c40ab56457527cde289c41bcbc77ef1ad8a1cb9d23e")
        );
        assert_eq!(
            sym.k(),
            Some(&h32(
                "aa533ad5f3995f7be182a13d58dd51c75d5551364a5dca236b4bf36676ff1913"
            ))
        );

        let mut ct_s = [0u8; 80];
        ct_s[..64].copy_from_slice(rs.ellswift());
        sym.encrypt_and_hash(&mut ct_s).unwrap();
        assert_eq!(
            sym.h(),
            &h32("97c05a147e732ceca9f145d8e9dc2a1184d7069d45e95061e0e6642bf82ba3e9")
        );

        let es_i = ecdh(ie.secret(), Party::Initiator, ie.ellswift(), rs.ellswift());
        let es_r = ecdh(rs.secret(), Party::Responder, ie.ellswift(), rs.ellswift());
        let es = h32("0ce429dda3d16f368beb947207d772988121e1311a3b70dc5531268644b6a2f3");
        assert_eq!(es_i, es);
        assert_eq!(es_r, es);
        sym.mix_key(&es);
        assert_eq!(
            sym.ck(),
            &h32("631bf85e57c84c59490a5785b0ed61fdd61cf63398a49815902670932ff743e8")
        );
        assert_eq!(
            sym.k(),
            Some(&h32(
                "e968f5aa4118b5e1d9ae0c049a5091636b68778bf3283c532c88bf61c51b41f1"
            ))
        );

        let cert = hex::decode("000000f1536510ff53652772dc305ddc113d03eecd124bdea317a70b772015b1bec49b763356e0adc03cc765037e5bc99d169a77f80d8c067a35d40d7685e90fc7d14f1218ba33179d39").unwrap();
        let mut ct_cert = [0u8; 90];
        ct_cert[..74].copy_from_slice(&cert);
        sym.encrypt_and_hash(&mut ct_cert).unwrap();
        assert_eq!(
            sym.h(),
            &h32("586f29637c7adfb3c3764a8b31fa4aff074268411bcafd9185514c2075b6dfbd")
        );

        let (k1, k2) = sym.split();
        assert_eq!(
            k1,
            h32("b4bd056f855a7f05ccdf7ba5888b27f1485115bf35cea2be5d9c244aa5b89a6b")
        );
        assert_eq!(
            k2,
            h32("0334980148f759562d3eb7aed4b88ccd3aab5f6d2f2c96e5ea3b7a2169c351e2")
        );
    }

    fn ell_key_from(secret: &str, ell: &str) -> EllKey {
        EphemeralKey::from_parts(h32(secret), h64(ell))
            .unwrap()
            .into_ell_key()
    }
}

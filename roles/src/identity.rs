//! Noise server identities for the roles: an authority key pair, a static key and the
//! certificate that binds them, made up on the spot or from a stored authority secret.
//!
//! A server role ([`Pool`](crate::pool::Pool), [`MockPool`](crate::mock_pool::MockPool), the
//! [`Proxy`](crate::proxy::Proxy) towards its miners) takes the `Arc<NoiseIdentity>` these
//! return; its clients are configured with the returned [`AuthorityPublicKey`].
//!
//! A [`NoiseIdentity`] keeps its certificate valid for as long as the server runs: it
//! keeps the authority's key, and once half of the certificate's validity has passed, the
//! next handshake signs a new certificate for the same static key (one signature per
//! renewal, not per connection). Clients see no change: the authority and the static key
//! stay the same.
//!
//! With a key stock ([`NoiseIdentity::with_key_stock`]) it also makes the handshakes'
//! ephemeral keys ahead of time, on a thread of its own that works only while no
//! handshake has taken a key for [`KEY_STOCK_QUIET`]: a handshake storm then spends its
//! CPU on the two ECDHs, not on key generation (a third of a handshake's secp256k1 work).
//! Each key is fresh and used once; the stock is made again after the storm. When the
//! stock is empty, a handshake makes its own key as it would without one.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use sv2c_codec::noise::{
    self, AuthorityKeypair, AuthorityPublicKey, EphemeralKey, NoiseError, Responder, StaticKeypair,
};

/// Keys the `pool` and `mining_proxy` programs keep made ahead (`--key-stock`): enough for
/// 16,384 miners coming back at once, 1.5 MiB, about 0.5 s of one core to make.
pub const DEFAULT_KEY_STOCK: usize = 16_384;

/// How long no handshake may have taken a key before the stock's thread makes more: it
/// does not compete with a storm, whose handshakes take keys far more often.
pub const KEY_STOCK_QUIET: Duration = Duration::from_millis(100);

/// A server's Noise identity whose certificate is renewed before it expires (see the
/// [module docs](self)).
pub struct NoiseIdentity {
    authority: AuthorityKeypair,
    validity: u32,
    current: RwLock<Arc<Responder>>,
    stock: Option<Arc<KeyStock>>,
}

/// Ephemeral keys made ahead, and what the thread that makes them needs to know.
struct KeyStock {
    state: Mutex<StockState>,
    /// Signalled when a key is taken from a full stock.
    taken: Condvar,
    capacity: usize,
}

struct StockState {
    keys: VecDeque<EphemeralKey>,
    last_taken: Option<Instant>,
}

impl KeyStock {
    fn lock(&self) -> std::sync::MutexGuard<'_, StockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The stock's thread: makes keys while the stock is short and no handshake has taken one
/// for [`KEY_STOCK_QUIET`]; ends once the identity is gone.
fn make_keys(stock: Weak<KeyStock>) {
    while let Some(stock) = stock.upgrade() {
        let state = stock.lock();
        if state.keys.len() >= stock.capacity {
            // Full: wait for a take (or, now and then, to see whether the identity is gone).
            let _ = stock.taken.wait_timeout(state, Duration::from_secs(1));
            continue;
        }
        if let Some(quiet) = state
            .last_taken
            .and_then(|t| KEY_STOCK_QUIET.checked_sub(t.elapsed()))
        {
            drop(state);
            drop(stock);
            std::thread::sleep(quiet);
            continue;
        }
        drop(state);
        match EphemeralKey::generate() {
            Ok(key) => stock.lock().keys.push_back(key),
            Err(e) => {
                tracing::warn!("Noise key stock: {e}; trying again in 1 s");
                drop(stock);
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

impl std::fmt::Debug for NoiseIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoiseIdentity")
            .field("authority", &self.authority.public_key())
            .field("validity_secs", &self.validity)
            .finish_non_exhaustive()
    }
}

impl NoiseIdentity {
    /// `static_key` certified by `authority` from now for `validity` (at least 2 s), and
    /// again whenever half of that has passed.
    ///
    /// # Errors
    /// The OS random number generator fails.
    pub fn new(
        authority: AuthorityKeypair,
        static_key: StaticKeypair,
        validity: Duration,
    ) -> Result<NoiseIdentity, NoiseError> {
        let validity = u32::try_from(validity.as_secs()).unwrap_or(u32::MAX).max(2);
        let now = noise::unix_time_now();
        let responder =
            Responder::from_authority(static_key, &authority, now, now.saturating_add(validity))?;
        Ok(NoiseIdentity {
            authority,
            validity,
            current: RwLock::new(Arc::new(responder)),
            stock: None,
        })
    }

    /// Keeps `keys` ephemeral keys made ahead for the handshakes (see the
    /// [module docs](self)): starts the thread that makes them (none for 0) and holds
    /// `keys` × 96 bytes.
    ///
    /// # Errors
    /// The thread cannot be started.
    pub fn with_key_stock(mut self, keys: usize) -> std::io::Result<NoiseIdentity> {
        if keys == 0 {
            self.stock = None;
            return Ok(self);
        }
        let stock = Arc::new(KeyStock {
            state: Mutex::new(StockState {
                keys: VecDeque::with_capacity(keys),
                last_taken: None,
            }),
            taken: Condvar::new(),
            capacity: keys,
        });
        let weak = Arc::downgrade(&stock);
        std::thread::Builder::new()
            .name("noise-keys".into())
            .spawn(move || make_keys(weak))?;
        self.stock = Some(stock);
        Ok(self)
    }

    /// A fresh ephemeral key for a handshake: the oldest of the stock, or one made now
    /// when the stock is empty (or there is none).
    ///
    /// # Errors
    /// The OS random number generator fails.
    pub fn ephemeral_key(&self) -> Result<EphemeralKey, NoiseError> {
        if let Some(stock) = &self.stock {
            let mut state = stock.lock();
            let was_full = state.keys.len() >= stock.capacity;
            state.last_taken = Some(Instant::now());
            if let Some(key) = state.keys.pop_front() {
                drop(state);
                if was_full {
                    stock.taken.notify_one();
                }
                return Ok(key);
            }
        }
        EphemeralKey::generate()
    }

    /// Keys in the stock now (0 without one).
    pub fn keys_in_stock(&self) -> usize {
        self.stock.as_ref().map_or(0, |s| s.lock().keys.len())
    }

    /// The public key clients are configured with.
    pub fn authority_public_key(&self) -> AuthorityPublicKey {
        self.authority.public_key()
    }

    /// The responder for a handshake now: its certificate is renewed first if half of its
    /// validity has passed.
    pub fn responder(&self) -> Arc<Responder> {
        self.responder_at(noise::unix_time_now())
    }

    /// [`responder`](Self::responder) at `now` (unix seconds).
    pub fn responder_at(&self, now: u32) -> Arc<Responder> {
        let current = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let renew_at = current
            .certificate()
            .valid_from()
            .saturating_add(self.validity / 2);
        if now < renew_at {
            return current;
        }
        let mut slot = self.current.write().unwrap_or_else(|e| e.into_inner());
        // Another handshake may have renewed it meanwhile.
        if slot.certificate().valid_from() >= renew_at {
            return slot.clone();
        }
        let static_key = slot.static_key().clone();
        match Responder::from_authority(
            static_key,
            &self.authority,
            now,
            now.saturating_add(self.validity),
        ) {
            Ok(renewed) => {
                tracing::info!(
                    "Noise certificate renewed, valid until unix time {}",
                    renewed.certificate().not_valid_after()
                );
                *slot = Arc::new(renewed);
            }
            // The old certificate is still valid for half its time: try again next time.
            Err(e) => tracing::warn!("Noise certificate not renewed: {e}"),
        }
        slot.clone()
    }
}

/// How long the certificates generated by [`noise_server_identity`] are valid.
pub const CERTIFICATE_VALIDITY: Duration = Duration::from_secs(3600);

/// A Noise server identity made up on the spot: a new authority, a new static key, and a
/// certificate from the authority for that key, valid from now for `validity` and renewed
/// at half of it. Returns the authority's public key (what clients are configured with)
/// and the identity.
///
/// ```
/// use std::time::Duration;
///
/// let (authority, _responder) = sv2c_roles::identity::noise_server_identity(Duration::from_secs(60))?;
/// println!("clients verify the server with {authority}"); // a base58check string
/// # Ok::<(), sv2c_codec::noise::NoiseError>(())
/// ```
///
/// # Errors
/// The OS random number generator fails.
pub fn noise_server_identity(
    validity: Duration,
) -> Result<(AuthorityPublicKey, Arc<NoiseIdentity>), NoiseError> {
    let authority = AuthorityKeypair::generate()?;
    let key = authority.public_key();
    let identity = NoiseIdentity::new(authority, StaticKeypair::generate()?, validity)?;
    Ok((key, Arc::new(identity)))
}

/// A Noise server identity for a long-running server: the authority's secret is read from
/// `secret_file` (64 hex digits) when given, so that clients can be configured once with
/// its public key, and generated otherwise; the static key is new and its certificate,
/// signed by the authority, is valid from now for `validity` and renewed at half of it.
/// Give it a key stock ([`NoiseIdentity::with_key_stock`]) before sharing it.
///
/// # Errors
/// The file cannot be read or does not hold a valid secret key, or the OS random number
/// generator fails.
pub fn load_or_generate_identity(
    secret_file: Option<&std::path::Path>,
    validity: Duration,
) -> Result<(AuthorityPublicKey, NoiseIdentity), String> {
    let authority = match secret_file {
        None => AuthorityKeypair::generate().map_err(|e| e.to_string())?,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let bytes = hex::decode(text.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| format!("{}: expected 64 hex digits", path.display()))?;
            AuthorityKeypair::from_secret_bytes(bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
    };
    let key = authority.public_key();
    let keypair = StaticKeypair::generate().map_err(|e| e.to_string())?;
    let identity = NoiseIdentity::new(authority, keypair, validity).map_err(|e| e.to_string())?;
    Ok((key, identity))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_is_renewed_at_half_its_validity_for_the_same_keys() {
        let authority = AuthorityKeypair::generate().unwrap();
        let key = authority.public_key();
        let identity = NoiseIdentity::new(
            authority,
            StaticKeypair::generate().unwrap(),
            Duration::from_secs(100),
        )
        .unwrap();
        let first = identity.responder();
        let from = first.certificate().valid_from();
        assert_eq!(first.certificate().not_valid_after(), from + 100);
        // Before half the validity: the same responder, no new signature.
        assert!(Arc::ptr_eq(&first, &identity.responder_at(from + 49)));
        // From half of it: a new certificate, valid from then, for the same static key.
        let renewed = identity.responder_at(from + 50);
        assert!(!Arc::ptr_eq(&first, &renewed));
        assert_eq!(renewed.certificate().valid_from(), from + 50);
        assert_eq!(renewed.certificate().not_valid_after(), from + 150);
        assert_eq!(
            renewed.static_key().x_only_public_key(),
            first.static_key().x_only_public_key()
        );
        assert!(Arc::ptr_eq(&renewed, &identity.responder_at(from + 60)));
        assert_eq!(identity.authority_public_key(), key);
        // A client at a time past the first certificate's end refuses it and accepts the
        // renewed one.
        let handshake = |responder: &Responder, now: u32| {
            let (act1, waiting) = sv2c_codec::noise::Initiator::new(key).unwrap().step_1();
            let (act2, _) = responder.step(&act1).unwrap();
            waiting.step_2(&act2, now).map(|_| ())
        };
        assert!(handshake(&first, from + 120).is_err());
        assert!(handshake(&renewed, from + 120).is_ok());
    }

    fn identity_with_stock(keys: usize) -> NoiseIdentity {
        NoiseIdentity::new(
            AuthorityKeypair::generate().unwrap(),
            StaticKeypair::generate().unwrap(),
            Duration::from_secs(100),
        )
        .unwrap()
        .with_key_stock(keys)
        .unwrap()
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn the_key_stock_is_made_used_once_each_and_made_again_after_a_quiet_spell() {
        let identity = identity_with_stock(16);
        wait_for("a full stock", || identity.keys_in_stock() == 16);
        let mut seen = std::collections::HashSet::new();
        let taken_at = Instant::now();
        for _ in 0..16 {
            assert!(seen.insert(*identity.ephemeral_key().unwrap().ellswift()));
        }
        // Nothing is made while handshakes take keys.
        if taken_at.elapsed() < KEY_STOCK_QUIET {
            assert_eq!(identity.keys_in_stock(), 0);
        }
        // An empty stock still gives fresh keys, made on the spot.
        for _ in 0..4 {
            assert!(seen.insert(*identity.ephemeral_key().unwrap().ellswift()));
        }
        wait_for("the stock made again", || identity.keys_in_stock() == 16);
        for _ in 0..16 {
            assert!(seen.insert(*identity.ephemeral_key().unwrap().ellswift()));
        }
        // Every key completes a handshake with this identity's certificate.
        let key = identity.authority_public_key();
        let (act1, waiting) = sv2c_codec::noise::Initiator::new(key).unwrap().step_1();
        let ephemeral = identity.ephemeral_key().unwrap();
        let sent = *ephemeral.ellswift();
        let (act2, _) = identity
            .responder()
            .step_with_ephemeral(&act1, ephemeral)
            .unwrap();
        assert_eq!(act2[..64], sent[..]);
        assert!(waiting.step_2(&act2, noise::unix_time_now()).is_ok());
    }

    #[test]
    fn without_a_stock_no_thread_and_keys_are_made_on_the_spot() {
        let identity = identity_with_stock(0);
        assert!(identity.stock.is_none());
        assert_eq!(identity.keys_in_stock(), 0);
        let a = *identity.ephemeral_key().unwrap().ellswift();
        let b = *identity.ephemeral_key().unwrap().ellswift();
        assert_ne!(a, b);
    }

    #[test]
    fn the_stock_and_its_thread_go_with_the_identity() {
        let identity = identity_with_stock(4);
        wait_for("a full stock", || identity.keys_in_stock() == 4);
        let stock = Arc::downgrade(identity.stock.as_ref().unwrap());
        drop(identity);
        // The thread holds the stock at most through one wait (1 s) and then lets go.
        wait_for("the stock dropped", || stock.strong_count() == 0);
    }
}

//! [`NoiseIdentity`]: a server's Noise identity for as long as it runs.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use sv2c_noise::{
    AuthorityKeypair, AuthorityPublicKey, EphemeralKey, NoiseError, Responder, StaticKeypair,
    unix_time_now,
};

/// How long no handshake may have taken a key before the stock's thread makes more: it
/// does not compete with a storm, whose handshakes take keys far more often.
pub const KEY_STOCK_QUIET: Duration = Duration::from_millis(100);

/// A server's Noise identity: an authority key pair, a static key and the certificate that
/// binds them, renewed while the server runs, with ephemeral keys made ahead for handshake
/// storms.
///
/// A server that runs for longer than one certificate is valid keeps a [`NoiseIdentity`]
/// instead of a [`Responder`]: it holds the authority's key, and once half of the
/// certificate's validity has passed, the next handshake signs a new certificate for the
/// same static key (one signature per renewal, not per connection). Clients see no change:
/// they are configured with the authority's public key, which stays the same, and so does
/// the static key.
///
/// With a key stock ([`NoiseIdentity::with_key_stock`]) it also makes the handshakes'
/// ephemeral keys ahead of time, on a thread of its own that works only while no handshake
/// has taken a key for [`KEY_STOCK_QUIET`]: when every miner of a restarted pool comes back
/// at once, the handshakes spend their CPU on the two ECDHs, not on key generation (a
/// third of a handshake's secp256k1 work). Each key is fresh and used once; the stock is
/// made again after the storm. When the stock is empty, a handshake makes its own key as it
/// would without one.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use sv2c_codec::Sv2Codec;
/// use sv2c_codec::noise::{self, AuthorityKeypair, Initiator, NoiseIdentity, StaticKeypair};
/// # use sv2c_binary::messages::Message;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// // Keep the authority's secret (`AuthorityKeypair::from_secret_bytes`) to give clients
/// // the same key across restarts; certificates of an hour, renewed every half hour;
/// // 1,024 ephemeral keys made ahead.
/// let authority = AuthorityKeypair::generate()?;
/// let authority_key = authority.public_key(); // what clients are configured with
/// let identity = NoiseIdentity::new(authority, StaticKeypair::generate()?, Duration::from_secs(3600))?
///     .with_key_stock(1024)?;
/// let identity = Arc::new(identity);
///
/// let (client_io, server_io) = tokio::io::duplex(64 * 1024); // or a TcpStream per accept
/// let server = {
///     let identity = Arc::clone(&identity);
///     tokio::spawn(async move { identity.accept(server_io, Sv2Codec::<Message>::new()).await })
/// };
/// let client = noise::connect(client_io, Initiator::new(authority_key)?, Sv2Codec::<Message>::new());
/// let (client, server) = tokio::join!(client, server);
/// let (_client, _server) = (client?, server??);
/// # Ok(())
/// # }
/// ```
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
        let now = unix_time_now();
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
    /// [type docs](NoiseIdentity)): starts the thread that makes them (none for 0) and holds
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
        self.responder_at(unix_time_now())
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
            let (act1, waiting) = sv2c_noise::Initiator::new(key).unwrap().step_1();
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
        let (act1, waiting) = sv2c_noise::Initiator::new(key).unwrap().step_1();
        let ephemeral = identity.ephemeral_key().unwrap();
        let sent = *ephemeral.ellswift();
        let (act2, _) = identity
            .responder()
            .step_with_ephemeral(&act1, ephemeral)
            .unwrap();
        assert_eq!(act2[..64], sent[..]);
        assert!(waiting.step_2(&act2, unix_time_now()).is_ok());
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

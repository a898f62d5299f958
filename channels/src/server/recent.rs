//! [`RecentShares`]: the header hashes of recently accepted shares, to refuse a share
//! submitted twice.

use hashbrown::HashSet;

/// The header hashes of the shares accepted recently, for duplicate detection.
///
/// Remembers at least the last [`budget`](Self::budget) hashes inserted and at most twice
/// as many: they are kept in two generations of up to `budget` each. When the newer one
/// is full, the older one is forgotten (a resubmission of its shares would be taken as
/// new) and the newer one takes its place, reusing the older one's table. A fresh hash
/// costs a lookup in the older generation and an insertion in the newer one; nothing is
/// removed one by one.
///
/// A hash is remembered by its first 16 bytes (the least significant: a share's hash,
/// below its target, has its zeros at the other end), 16 bytes a share. Two distinct
/// shares are taken for one with odds of 2⁻¹²⁸ a pair, the order of a SHA-256 collision;
/// a miner who searched for such a pair (2⁶⁴ hashes) would only have its own second
/// share refused.
///
/// ```
/// use sv2c_channels::server::RecentShares;
///
/// let mut recent = RecentShares::new(2);
/// assert!(recent.insert([1; 32]));
/// assert!(!recent.insert([1; 32])); // a duplicate
/// assert!(recent.insert([2; 32]));
/// assert!(recent.insert([3; 32]));
/// assert!(recent.contains(&[2; 32]) && recent.contains(&[3; 32])); // the last two
/// ```
#[derive(Debug, Clone)]
pub struct RecentShares {
    newer: HashSet<u128>,
    older: HashSet<u128>,
    budget: usize,
}

impl RecentShares {
    /// Remembers at least the last `budget` hashes (at least 1). Holds no memory until the
    /// first insertion.
    pub fn new(budget: usize) -> Self {
        RecentShares {
            newer: HashSet::new(),
            older: HashSet::new(),
            budget: budget.max(1),
        }
    }

    /// How many hashes are remembered at least.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Whether `hash` is remembered.
    pub fn contains(&self, hash: &[u8; 32]) -> bool {
        let key = key(hash);
        self.newer.contains(&key) || self.in_older(key)
    }

    /// Remembers `hash`; `false` if it was remembered already (a duplicate).
    pub fn insert(&mut self, hash: [u8; 32]) -> bool {
        let key = key(&hash);
        if self.in_older(key) || !self.newer.insert(key) {
            return false;
        }
        if self.newer.len() >= self.budget {
            core::mem::swap(&mut self.newer, &mut self.older);
            self.newer.clear();
        }
        true
    }

    /// Whether the older generation holds `key` (no lookup while it is empty: a channel
    /// that has not filled a generation yet).
    fn in_older(&self, key: u128) -> bool {
        !self.older.is_empty() && self.older.contains(&key)
    }

    /// How many hashes are remembered now.
    pub fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }

    /// Whether no hash is remembered.
    pub fn is_empty(&self) -> bool {
        self.newer.is_empty() && self.older.is_empty()
    }

    /// Forgets every hash and keeps the tables' memory for the next ones.
    pub fn clear(&mut self) {
        self.newer.clear();
        self.older.clear();
    }

    /// Forgets every hash and gives the tables' memory back.
    pub fn release(&mut self) {
        self.newer = HashSet::new();
        self.older = HashSet::new();
    }
}

/// What a hash is remembered by (see [`RecentShares`]).
fn key(hash: &[u8; 32]) -> u128 {
    let mut low = [0; 16];
    low.copy_from_slice(&hash[..16]);
    u128::from_le_bytes(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u32) -> [u8; 32] {
        let mut hash = [0; 32];
        hash[..4].copy_from_slice(&i.to_le_bytes());
        hash
    }

    #[test]
    fn remembers_at_least_the_budget_and_at_most_twice_as_many() {
        let mut recent = RecentShares::new(4);
        for i in 0..100 {
            assert!(recent.insert(h(i)), "{i} is new");
            assert!(!recent.insert(h(i)), "{i} again");
            // The last four (or all so far) are always remembered.
            for j in i.saturating_sub(3)..=i {
                assert!(recent.contains(&h(j)), "{j} after {i}");
            }
            assert!(recent.len() <= 8, "{} after {i}", recent.len());
        }
        // 96..=99 filled a generation and were moved to the older one: 92..=95 are gone.
        assert!(!recent.contains(&h(95)));
        assert!(recent.insert(h(95)));
    }

    #[test]
    fn clear_and_release_forget_everything() {
        let mut recent = RecentShares::new(3);
        for i in 0..5 {
            recent.insert(h(i));
        }
        assert_eq!(recent.len(), 5);
        recent.clear();
        assert!(recent.is_empty());
        assert!(recent.insert(h(4)));
        recent.release();
        assert!(recent.is_empty() && !recent.contains(&h(4)));
        assert_eq!(RecentShares::new(0).budget(), 1);
    }
}

//! [`RecentShares`]: the header hashes of recently accepted shares, to refuse a share
//! submitted twice.

use alloc::vec;
use alloc::vec::Vec;

/// The header hashes of the shares accepted recently, for duplicate detection.
///
/// Remembers at least the last [`budget`](Self::budget) hashes inserted and at most twice
/// as many, in two generations of up to `budget` each. When the newer one is full, the
/// older one is forgotten (a resubmission of its shares would be taken as new) and the
/// newer one takes its place.
///
/// Both generations live in one open-addressing table (linear probing, at most half
/// full), each entry tagged with its generation: a share is looked up and inserted with
/// the same probe, so a channel whose table is not in the core's cache pays one cache miss
/// a share. Forgetting a generation rebuilds the table from the entries kept, once per
/// `budget` insertions. The table grows by doubling from its first insertion up to the
/// power of two at or above `4 × budget` slots of 8 bytes (32 KiB for a budget of 1,024).
///
/// A hash is remembered by 62 bits of its first 8 bytes (the least significant: a share's
/// hash, below its target, has its zeros at the other end). A share is taken for an
/// earlier one with odds of at most `2 × budget` in 2⁶² (about 4 × 10⁻¹⁶ for a budget of
/// 1,024); a miner who searched for such a pair would only have its own second share
/// refused. Where a hash lands in the table is those bits too: a miner who keeps back the
/// shares that land elsewhere, to crowd one part of the table, pays for it with the shares
/// it keeps back and slows only its own channel's lookups, each bounded by the table.
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
    /// A power of two long, or empty before the first insertion; 0 is a free slot, an
    /// entry is [`entry`]'s value with its generation's bit ([`Self::generation`]).
    slots: Vec<u64>,
    /// The newer generation's bit: 0 or 1.
    generation: u64,
    /// Entries of the newer generation.
    newer: usize,
    /// Entries of the older generation.
    older: usize,
    budget: usize,
}

/// The table's length before it first grows.
const FIRST_SLOTS: usize = 16;

impl RecentShares {
    /// Remembers at least the last `budget` hashes (at least 1). Holds no memory until the
    /// first insertion.
    pub fn new(budget: usize) -> Self {
        RecentShares {
            slots: Vec::new(),
            generation: 0,
            newer: 0,
            older: 0,
            budget: budget.max(1),
        }
    }

    /// How many hashes are remembered at least.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Whether `hash` is remembered.
    pub fn contains(&self, hash: &[u8; 32]) -> bool {
        !self.slots.is_empty() && self.find(entry(hash)).is_err()
    }

    /// Remembers `hash`; `false` if it was remembered already (a duplicate).
    pub fn insert(&mut self, hash: [u8; 32]) -> bool {
        let entry = entry(&hash);
        if (self.len() + 1) * 2 > self.slots.len() {
            let len = (self.slots.len() * 2).max(FIRST_SLOTS);
            self.rebuild(len, |_| true);
        }
        let Ok(free) = self.find(entry) else {
            return false;
        };
        self.slots[free] = entry | self.generation;
        self.newer += 1;
        if self.newer >= self.budget {
            let newer = self.generation;
            self.rebuild(self.slots.len(), |e| e & 1 == newer);
            self.generation ^= 1;
            self.older = core::mem::take(&mut self.newer);
        }
        true
    }

    /// The free slot where `entry` would go, or `Err` if it is remembered (in either
    /// generation). The table must not be empty, and has a free slot.
    fn find(&self, entry: u64) -> Result<usize, ()> {
        let mask = self.slots.len() - 1;
        let mut i = home(entry, mask);
        loop {
            match self.slots[i] {
                0 => return Ok(i),
                e if e | 1 == entry | 1 => return Err(()),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Makes the table `len` slots long (a power of two, more than twice the entries
    /// kept) with only the entries `keep` says.
    fn rebuild(&mut self, len: usize, keep: impl Fn(u64) -> bool) {
        let old = core::mem::replace(&mut self.slots, vec![0; len]);
        let mask = len - 1;
        for e in old.into_iter().filter(|&e| e != 0 && keep(e)) {
            let mut i = home(e, mask);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = e;
        }
    }

    /// How many hashes are remembered now.
    pub fn len(&self) -> usize {
        self.newer + self.older
    }

    /// Whether no hash is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every hash and keeps the table's memory for the next ones.
    pub fn clear(&mut self) {
        self.slots.fill(0);
        self.newer = 0;
        self.older = 0;
    }

    /// Forgets every hash and gives the table's memory back.
    pub fn release(&mut self) {
        self.slots = Vec::new();
        self.newer = 0;
        self.older = 0;
    }
}

/// What a hash is remembered by (see [`RecentShares`]): its first 8 bytes, little-endian,
/// shifted up by two; bit 1 set so that no entry is 0 (a free slot), bit 0 left for the
/// generation.
fn entry(hash: &[u8; 32]) -> u64 {
    let mut low = [0; 8];
    low.copy_from_slice(&hash[..8]);
    (u64::from_le_bytes(low) << 2) | 2
}

/// The slot where a lookup of `entry` starts, in a table of `mask + 1` slots.
fn home(entry: u64, mask: usize) -> usize {
    (entry >> 2) as usize & mask
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

    /// Against a model of the two generations (two ordered sets), over hashes spread as
    /// real ones are, with resubmissions of recent and older shares among them: the same
    /// verdicts, and a table never longer than `4 × budget` rounded up.
    #[test]
    fn agrees_with_two_generations_of_sets() {
        use alloc::collections::BTreeSet;
        for budget in [1, 3, 64, 1000] {
            let mut recent = RecentShares::new(budget);
            let (mut newer, mut older) = (BTreeSet::new(), BTreeSet::new());
            let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
            let mut hashes: Vec<[u8; 32]> = Vec::new();
            for i in 0..20 * budget + 100 {
                // xorshift64: uniform first bytes, like a header hash's.
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let hash = match (i % 5, hashes.len()) {
                    (0, n) if n > 0 => hashes[seed as usize % n],
                    _ => {
                        let mut h = [0; 32];
                        h[..8].copy_from_slice(&seed.to_le_bytes());
                        hashes.push(h);
                        h
                    }
                };
                let known = newer.contains(&hash) || older.contains(&hash);
                assert_eq!(recent.contains(&hash), known, "budget {budget}, step {i}");
                assert_eq!(recent.insert(hash), !known, "budget {budget}, step {i}");
                if !known {
                    newer.insert(hash);
                    if newer.len() >= budget {
                        older = core::mem::take(&mut newer);
                    }
                }
                assert_eq!(recent.len(), newer.len() + older.len());
                assert!(recent.slots.len() <= (4 * budget).next_power_of_two().max(16));
            }
        }
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

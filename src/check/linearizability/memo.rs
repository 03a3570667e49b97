//! The search's memo: the positions already explored, as an open-addressing hash table with a
//! fixed hasher (no random state, so no `HashMap`; lookups do not allocate).
//!
//! A position is (placed ops, state). The placed ops are split in two: those with a known
//! outcome, which key the table with the state, and those with an unknown outcome (Jepsen's
//! `:info`), of which each key keeps every set seen. A position is *covered* when the table
//! holds its key with a subset of its unknown-outcome ops: placing fewer of those ops in the
//! same state leaves every continuation open (see [`Memo::insert`]).

use std::hash::{Hash, Hasher};

const EMPTY: u32 = u32::MAX;

/// A set of explored positions; every bit set has the same number of words.
pub(super) struct Memo<S> {
    /// Words of a known-outcome bit set, and of an unknown-outcome one (0 when the partition
    /// has no unknown-outcome ops: then each key holds one empty set, which covers itself).
    words: usize,
    info_words: usize,
    /// Per key: its hash, its known-outcome bits, its state, the newest of its
    /// unknown-outcome sets.
    hashes: Vec<u64>,
    bits: Vec<u64>,
    states: Vec<S>,
    newest: Vec<u32>,
    /// Unknown-outcome sets: their bits, and the older set of the same key (`EMPTY`: none).
    info_bits: Vec<u64>,
    older: Vec<u32>,
    slots: Vec<u32>,
}

impl<S: Eq + Hash + Clone> Memo<S> {
    pub(super) fn new(words: usize, info_words: usize) -> Self {
        Self {
            words,
            info_words,
            hashes: Vec::new(),
            bits: Vec::new(),
            states: Vec::new(),
            newest: Vec::new(),
            info_bits: Vec::new(),
            older: Vec::new(),
            slots: vec![EMPTY; 1024],
        }
    }

    /// Adds the position (`known` and `info`: the placed ops with a known and with an unknown
    /// outcome; `state`: the state after them); `false` if it is covered already, by itself or
    /// by a position with the same known ops and state and a subset of `info`.
    ///
    /// Covering is sound because an op with an unknown outcome need never be placed, and never
    /// holds back another: its return time is +∞. So every continuation of the covered
    /// position, placing ops none of which it placed, is one of the covering position too (an
    /// op whose equivalent twin the covering position has not placed is swapped for that
    /// twin). Without it, a put that overwrites the effect of `k` unknown-outcome appends
    /// leaves the search `2^k` positions that differ only in which of them it placed.
    /// `known_hash` is a hash of `known` alone (the engine keeps one as it places ops).
    pub(super) fn insert(
        &mut self,
        known: &[u64],
        known_hash: u64,
        info: &[u64],
        state: &S,
    ) -> bool {
        debug_assert_eq!((known.len(), info.len()), (self.words, self.info_words));
        if (self.states.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = Self::hash(known_hash, state);
        let mut slot = self.home(hash);
        loop {
            match self.slots[slot] {
                EMPTY => break,
                key if self.is(key as usize, hash, known, state) => {
                    let key = key as usize;
                    if self.covers(self.newest[key], info) {
                        return false;
                    }
                    self.newest[key] = self.push_info(info, self.newest[key]);
                    return true;
                }
                _ => slot = (slot + 1) & (self.slots.len() - 1),
            }
        }
        self.slots[slot] = self.states.len() as u32;
        self.hashes.push(hash);
        self.bits.extend_from_slice(known);
        self.states.push(state.clone());
        let first = self.push_info(info, EMPTY);
        self.newest.push(first);
        true
    }

    /// Whether a set of the chain from `set` is a subset of `info`.
    fn covers(&self, mut set: u32, info: &[u64]) -> bool {
        while set != EMPTY {
            let at = set as usize * self.info_words;
            let stored = &self.info_bits[at..at + self.info_words];
            if stored.iter().zip(info).all(|(s, i)| s & !i == 0) {
                return true;
            }
            set = self.older[set as usize];
        }
        false
    }

    fn push_info(&mut self, info: &[u64], older: u32) -> u32 {
        self.info_bits.extend_from_slice(info);
        self.older.push(older);
        (self.older.len() - 1) as u32
    }

    fn is(&self, key: usize, hash: u64, known: &[u64], state: &S) -> bool {
        self.hashes[key] == hash
            && &self.bits[key * self.words..(key + 1) * self.words] == known
            && self.states[key] == *state
    }

    /// The hash of a key: its known-outcome bits' hash and its state's.
    fn hash(known_hash: u64, state: &S) -> u64 {
        let mut hasher = FxHasher(known_hash);
        state.hash(&mut hasher);
        hasher.finish()
    }

    fn home(&self, hash: u64) -> usize {
        (hash as usize) & (self.slots.len() - 1)
    }

    fn grow(&mut self) {
        self.slots = vec![EMPTY; self.slots.len() * 2];
        for key in 0..self.states.len() {
            let mut slot = self.home(self.hashes[key]);
            while self.slots[slot] != EMPTY {
                slot = (slot + 1) & (self.slots.len() - 1);
            }
            self.slots[slot] = key as u32;
        }
    }
}

/// The Fx hash (rustc's): fixed, fast, good enough for a table that compares keys in full.
struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(SEED);
    }

    fn finish(&self) -> u64 {
        // Fold the high bits in: the table indexes with the low ones.
        self.0 ^ (self.0 >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::Memo;

    #[test]
    fn a_position_is_covered_by_itself_and_by_fewer_unknown_outcome_ops_in_the_same_state() {
        let mut memo = Memo::new(1, 1);
        assert!(memo.insert(&[0b01], 0b01, &[0b100], &7));
        assert!(!memo.insert(&[0b01], 0b01, &[0b100], &7), "itself");
        assert!(
            !memo.insert(&[0b01], 0b01, &[0b110], &7),
            "a superset of its :info ops"
        );
        assert!(memo.insert(&[0b01], 0b01, &[0b010], &7), "not a superset");
        assert!(memo.insert(&[0b01], 0b01, &[0b000], &7), "fewer :info ops");
        assert!(
            !memo.insert(&[0b01], 0b01, &[0b111], &7),
            "covered by the empty set now"
        );
        assert!(memo.insert(&[0b01], 0b01, &[0b100], &8), "another state");
        assert!(memo.insert(&[0b11], 0b11, &[0b100], &7), "other known ops");
    }

    #[test]
    fn many_positions_survive_growing_the_table() {
        let mut memo = Memo::new(1, 0);
        for i in 0..5000u64 {
            assert!(memo.insert(&[i], i, &[], &(i % 3)));
        }
        for i in 0..5000u64 {
            assert!(!memo.insert(&[i], i, &[], &(i % 3)));
        }
    }
}

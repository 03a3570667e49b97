//! The search's memo: the set of (linearized operations, state) pairs already explored, as an
//! open-addressing hash table with a fixed hasher (no random state, so no `HashMap`; lookups do
//! not allocate).

use std::hash::{Hash, Hasher};

const EMPTY: u32 = u32::MAX;

/// A set of (bitset, state) pairs; every bitset has the same number of words.
pub(super) struct Memo<S> {
    words: usize,
    bits: Vec<u64>,
    states: Vec<S>,
    slots: Vec<u32>,
}

impl<S: Eq + Hash + Clone> Memo<S> {
    pub(super) fn new(words: usize) -> Self {
        Self {
            words,
            bits: Vec::new(),
            states: Vec::new(),
            slots: vec![EMPTY; 1024],
        }
    }

    /// Adds the pair; `false` if it was already there.
    pub(super) fn insert(&mut self, bits: &[u64], state: &S) -> bool {
        if (self.states.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mut slot = self.home(bits, state);
        loop {
            match self.slots[slot] {
                EMPTY => break,
                entry if self.is(entry as usize, bits, state) => return false,
                _ => slot = (slot + 1) & (self.slots.len() - 1),
            }
        }
        self.slots[slot] = self.states.len() as u32;
        self.bits.extend_from_slice(bits);
        self.states.push(state.clone());
        true
    }

    fn is(&self, entry: usize, bits: &[u64], state: &S) -> bool {
        &self.bits[entry * self.words..(entry + 1) * self.words] == bits
            && self.states[entry] == *state
    }

    fn home(&self, bits: &[u64], state: &S) -> usize {
        let mut hasher = FxHasher(0);
        bits.hash(&mut hasher);
        state.hash(&mut hasher);
        (hasher.finish() as usize) & (self.slots.len() - 1)
    }

    fn grow(&mut self) {
        self.slots = vec![EMPTY; self.slots.len() * 2];
        for entry in 0..self.states.len() {
            let bits = &self.bits[entry * self.words..(entry + 1) * self.words];
            let mut slot = self.home(bits, &self.states[entry]);
            while self.slots[slot] != EMPTY {
                slot = (slot + 1) & (self.slots.len() - 1);
            }
            self.slots[slot] = entry as u32;
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

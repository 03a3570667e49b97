//! The search's memo: the positions already explored, as an open-addressing hash table with a
//! fixed hasher (no random state, so no `HashMap`; lookups do not allocate).
//!
//! A position is (placed ops, state). The placed ops are split in two: those with a known
//! outcome, which key the table with the state, and those with an unknown outcome (Jepsen's
//! `:info`), of which each key keeps the minimal sets seen (a set that arrives drops the
//! stored sets it is a subset of: they cover nothing it does not). A position is *covered*
//! when the table holds its key with a subset of its unknown-outcome ops: placing fewer of
//! those ops in the same state leaves every continuation open (see [`Memo::insert`]).
//!
//! A key's known-outcome ops are stored as the words of their bit set from its first word
//! that is not full (every lower word has all its ops placed) to its last word with a placed
//! op ([`Known`]): a search places ops roughly in call order, so that window spans the ops
//! running at once, not the history, and a key costs the same at 1k ops as at 100k (with
//! whole bit sets, a 100k-op history's search wrote 12 KiB per position: quadratic in time
//! and memory, issue 21).
//!
//! The memo is the search's only store that grows with the steps, so it is capped: it records
//! at most the entries it is allowed ([`Memo::allow`]; each recorded position is one entry,
//! a key or one more unknown-outcome set of a key), and answers [`Insert::Full`] instead of
//! recording one more (docs/checks.md#linearizability-engine).

use std::hash::{Hash, Hasher};

const EMPTY: u32 = u32::MAX;

/// The placed known-outcome ops of a position: words `first..first + words.len()` of their bit
/// set, every word below `first` full (all placed) and every word above none placed. The
/// engine keeps it canonical (`first` the lowest word that is not full, `words` ending at the
/// last word with a placed op, empty when there is none above `first`), so that equal sets
/// give equal `Known`s.
#[derive(Clone, Copy, Debug)]
pub(super) struct Known<'a> {
    pub(super) first: usize,
    pub(super) words: &'a [u64],
}

/// What [`Memo::insert`] did with a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Insert {
    /// Recorded: it was not covered.
    New,
    /// Not recorded: an explored position covers it.
    Covered,
    /// Not recorded: it is not covered, but the memo holds the entries it is allowed already.
    Full,
}

/// A set of explored positions.
pub(super) struct Memo<S> {
    /// The most entries (recorded positions) it may hold now ([`Memo::allow`]).
    max_entries: u64,
    /// Words of an unknown-outcome set (0 when the partition has no unknown-outcome ops:
    /// then each key holds one empty set, which covers itself).
    info_words: usize,
    /// Per key: its hash, its known-outcome window (first word, where its words start in
    /// `bits`, how many), its state, the newest of its unknown-outcome sets.
    hashes: Vec<u64>,
    firsts: Vec<usize>,
    starts: Vec<usize>,
    lens: Vec<u32>,
    bits: Vec<u64>,
    states: Vec<S>,
    newest: Vec<u32>,
    /// Unknown-outcome sets: their bits, and the older set of the same key (`EMPTY`: none).
    info_bits: Vec<u64>,
    older: Vec<u32>,
    slots: Vec<u32>,
}

impl<S: Eq + Hash + Clone> Memo<S> {
    /// An empty memo for unknown-outcome sets of `info_words` words, allowed no entry yet.
    pub(super) fn new(info_words: usize) -> Self {
        Self {
            max_entries: 0,
            info_words,
            hashes: Vec::new(),
            firsts: Vec::new(),
            starts: Vec::new(),
            lens: Vec::new(),
            bits: Vec::new(),
            states: Vec::new(),
            newest: Vec::new(),
            info_bits: Vec::new(),
            older: Vec::new(),
            slots: vec![EMPTY; 1024],
        }
    }

    /// Lets the memo hold up to `max_entries` entries from now on (fewer than it holds: it
    /// records nothing more).
    pub(super) fn allow(&mut self, max_entries: u64) {
        self.max_entries = max_entries;
    }

    /// The positions recorded: one per [`Insert::New`], whether it made a key or added an
    /// unknown-outcome set to one (a set a newer one covers is unlinked from its key's chain
    /// but keeps its room, so it still counts).
    pub(super) fn entries(&self) -> u64 {
        self.older.len() as u64
    }

    /// Adds the position (`known` and `info`: the placed ops with a known and with an unknown
    /// outcome; `state`: the state after them): [`Insert::Covered`] if it is covered already,
    /// by itself or by a position with the same known ops and state and a subset of `info`;
    /// [`Insert::Full`] (nothing recorded, nothing allocated, nothing changed) if it is not
    /// covered and the memo holds the entries it is allowed.
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
        known: Known<'_>,
        known_hash: u64,
        info: &[u64],
        state: &S,
    ) -> Insert {
        debug_assert_eq!(info.len(), self.info_words);
        let full = self.entries() >= self.max_entries;
        if !full && (self.states.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let hash = Self::hash(known_hash, state);
        let mut slot = self.home(hash);
        loop {
            match self.slots[slot] {
                EMPTY => break,
                key if self.is(key as usize, hash, known, state) => {
                    let key = key as usize;
                    if full {
                        return match self.covers(self.newest[key], info) {
                            true => Insert::Covered,
                            false => Insert::Full,
                        };
                    }
                    let Some(rest) = self.minimal_without_supersets(self.newest[key], info) else {
                        return Insert::Covered;
                    };
                    self.newest[key] = self.push_info(info, rest);
                    return Insert::New;
                }
                _ => slot = (slot + 1) & (self.slots.len() - 1),
            }
        }
        if full {
            return Insert::Full;
        }
        self.slots[slot] = self.states.len() as u32;
        self.hashes.push(hash);
        self.firsts.push(known.first);
        self.starts.push(self.bits.len());
        self.lens.push(known.words.len() as u32);
        self.bits.extend_from_slice(known.words);
        self.states.push(state.clone());
        let set = self.push_info(info, EMPTY);
        self.newest.push(set);
        Insert::New
    }

    /// Whether a set of the chain from `head` is a subset of `info`, without changing the chain
    /// (as [`Self::minimal_without_supersets`] does when none is).
    fn covers(&self, head: u32, info: &[u64]) -> bool {
        let w = self.info_words;
        let mut set = head;
        while set != EMPTY {
            let stored = &self.info_bits[set as usize * w..(set as usize + 1) * w];
            if stored.iter().zip(info).all(|(s, i)| s & !i == 0) {
                return true;
            }
            set = self.older[set as usize];
        }
        false
    }

    /// The chain from `head` without the sets that are supersets of `info` (each is covered by
    /// `info` from now on, so keeping only minimal sets loses nothing and keeps chains short),
    /// or `None` if a set of the chain is a subset of `info` (the position is covered). A chain
    /// never holds both (a set is recorded only when none covers it, and it unlinks those it
    /// covers), so `None` comes before any set is unlinked.
    fn minimal_without_supersets(&mut self, head: u32, info: &[u64]) -> Option<u32> {
        let w = self.info_words;
        let (mut head, mut prev, mut set) = (head, EMPTY, head);
        while set != EMPTY {
            let stored = &self.info_bits[set as usize * w..(set as usize + 1) * w];
            if stored.iter().zip(info).all(|(s, i)| s & !i == 0) {
                return None;
            }
            let next = self.older[set as usize];
            if info.iter().zip(stored).all(|(i, s)| i & !s == 0) {
                if prev == EMPTY {
                    head = next;
                } else {
                    self.older[prev as usize] = next;
                }
            } else {
                prev = set;
            }
            set = next;
        }
        Some(head)
    }

    fn push_info(&mut self, info: &[u64], older: u32) -> u32 {
        self.info_bits.extend_from_slice(info);
        self.older.push(older);
        (self.older.len() - 1) as u32
    }

    fn is(&self, key: usize, hash: u64, known: Known<'_>, state: &S) -> bool {
        let start = self.starts[key];
        self.hashes[key] == hash
            && self.firsts[key] == known.first
            && self.lens[key] as usize == known.words.len()
            && self.bits[start..start + known.words.len()] == *known.words
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
    use super::{Insert, Known, Memo};

    /// A memo allowed as many entries as it wants.
    fn unbounded<S: Eq + std::hash::Hash + Clone>(info_words: usize) -> Memo<S> {
        let mut memo = Memo::new(info_words);
        memo.allow(u64::MAX);
        memo
    }

    impl<S: Eq + std::hash::Hash + Clone> Memo<S> {
        /// [`Memo::insert`] in a memo that is never full: whether the position was recorded.
        fn add(&mut self, known: Known<'_>, known_hash: u64, info: &[u64], state: &S) -> bool {
            let insert = self.insert(known, known_hash, info, state);
            assert_ne!(insert, Insert::Full, "the tests' memos have room");
            insert == Insert::New
        }
    }

    /// The known-outcome ops of a one-word bit set (with no full word below it).
    fn one(word: &[u64; 1]) -> Known<'_> {
        Known {
            first: 0,
            words: if word[0] == 0 { &[] } else { word },
        }
    }

    #[test]
    fn a_position_is_covered_by_itself_and_by_fewer_unknown_outcome_ops_in_the_same_state() {
        let mut memo = unbounded(1);
        assert!(memo.add(one(&[0b01]), 0b01, &[0b100], &7));
        assert!(!memo.add(one(&[0b01]), 0b01, &[0b100], &7), "itself");
        assert!(
            !memo.add(one(&[0b01]), 0b01, &[0b110], &7),
            "a superset of its :info ops"
        );
        assert!(memo.add(one(&[0b01]), 0b01, &[0b010], &7), "not a superset");
        assert!(
            memo.add(one(&[0b01]), 0b01, &[0b000], &7),
            "fewer :info ops"
        );
        assert!(
            !memo.add(one(&[0b01]), 0b01, &[0b111], &7),
            "covered by the empty set now"
        );
        assert!(memo.add(one(&[0b01]), 0b01, &[0b100], &8), "another state");
        assert!(
            memo.add(one(&[0b11]), 0b11, &[0b100], &7),
            "other known ops"
        );
    }

    #[test]
    fn a_key_keeps_only_its_minimal_unknown_outcome_sets() {
        let mut memo = unbounded(1);
        for info in [0b0110, 0b0011, 0b1100, 0b0101] {
            assert!(memo.add(one(&[0]), 0, &[info], &1));
        }
        assert_eq!(
            memo.sets_of_first_key(),
            vec![0b0101, 0b1100, 0b0011, 0b0110]
        );
        assert!(
            memo.add(one(&[0]), 0, &[0b0100], &1),
            "a subset of three of them"
        );
        assert_eq!(memo.sets_of_first_key(), vec![0b0100, 0b0011]);
        assert!(!memo.add(one(&[0]), 0, &[0b1110], &1), "covered by 0b0100");
        assert!(!memo.add(one(&[0]), 0, &[0b0111], &1), "covered by both");
        assert!(memo.add(one(&[0]), 0, &[0b1001], &1), "covered by neither");
        assert_eq!(memo.sets_of_first_key(), vec![0b1001, 0b0100, 0b0011]);
    }

    impl Memo<i32> {
        /// The first key's unknown-outcome sets, newest first (one word each).
        fn sets_of_first_key(&self) -> Vec<u64> {
            let mut sets = Vec::new();
            let mut set = self.newest[0];
            while set != super::EMPTY {
                sets.push(self.info_bits[set as usize]);
                set = self.older[set as usize];
            }
            sets
        }
    }

    #[test]
    fn a_key_is_its_window_of_words_and_where_it_starts() {
        let mut memo = unbounded(0);
        let at = |first, words| Known { first, words };
        assert!(memo.add(at(1, &[0b1]), 5, &[], &0));
        assert!(
            memo.add(at(2, &[0b1]), 5, &[], &0),
            "the same words higher up"
        );
        assert!(memo.add(at(1, &[0b1, 0b1]), 5, &[], &0), "a longer window");
        assert!(memo.add(at(1, &[]), 5, &[], &0), "nothing placed above it");
        for (first, words) in [(1, &[0b1][..]), (2, &[0b1]), (1, &[0b1, 0b1]), (1, &[])] {
            assert!(!memo.add(at(first, words), 5, &[], &0), "{first} {words:?}");
        }
    }

    #[test]
    fn a_full_memo_records_nothing_more_but_still_knows_what_it_covers() {
        let mut memo = Memo::new(1);
        memo.allow(3);
        for (known, info) in [(0b01, 0b100), (0b01, 0b010), (0b11, 0b100)] {
            assert_eq!(memo.insert(one(&[known]), known, &[info], &7), Insert::New);
        }
        assert_eq!(memo.entries(), 3);
        assert_eq!(
            memo.insert(one(&[0b01]), 0b01, &[0b110], &7),
            Insert::Covered,
            "covered by a recorded set"
        );
        assert_eq!(
            memo.insert(one(&[0b01]), 0b01, &[0b001], &7),
            Insert::Full,
            "a new set of a recorded key"
        );
        assert_eq!(
            memo.insert(one(&[0b01]), 0b01, &[0b100], &8),
            Insert::Full,
            "a new key"
        );
        assert_eq!(memo.entries(), 3, "nothing was recorded");
        memo.allow(4);
        assert_eq!(
            memo.insert(one(&[0b01]), 0b01, &[0b001], &7),
            Insert::New,
            "recorded once the memo is allowed more"
        );
        assert_eq!(
            memo.insert(one(&[0b11]), 0b11, &[0b100], &7),
            Insert::Covered,
            "what it recorded before it was full"
        );
    }

    #[test]
    fn many_positions_survive_growing_the_table() {
        let mut memo = unbounded(0);
        for i in 0..5000u64 {
            assert!(memo.add(one(&[i]), i, &[], &(i % 3)));
        }
        for i in 0..5000u64 {
            assert!(!memo.add(one(&[i]), i, &[], &(i % 3)));
        }
    }
}

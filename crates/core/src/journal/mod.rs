//! The fenced single-writer journal: an append-only [`Ledger`] where every write is a CAS on
//! the tip, and the [`Journal`] a lease holder writes through.
//!
//! Safety comes from the ledger, not from the holder's clock (docs/contracts.md#journal): opening a
//! journal appends `Fence { epoch }` by CAS, after which a stale writer's CAS at its old tip
//! fails and its journal is poisoned. The holder's local validity check only keeps honest
//! writers from trying.

mod lease;
mod mem;
mod store;
mod writer;

use std::fmt;

use async_trait::async_trait;

use crate::lease::{Owner, SessionId};

pub use lease::{JournalLease, LossCause, SkewMargin};
pub use mem::MemLedger;
pub use store::{Store, StoreConfig};
pub use writer::{Journal, JournalError};

/// A position in a ledger. Records are numbered from 1 with no gaps; the tip of an empty
/// ledger is 0.
pub type Seq = u64;

/// Identifies one opened journal: the owner that opened it and a counter local to that
/// owner's [`Store`]. Unique, so two writers never produce byte-identical records and an
/// ambiguous append can be resolved by reading back.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct WriterId {
    /// The process incarnation that opened the journal.
    pub owner: Owner,
    /// Which of that owner's journals, from 1.
    pub journal: u64,
}

impl fmt::Display for WriterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/j{}", self.owner, self.journal)
    }
}

/// One ledger record.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Record {
    /// Written when a journal opens: from here on, only writers with `epoch` or later may
    /// append.
    Fence {
        /// The opener's lease token.
        epoch: u64,
        /// The opener.
        owner: Owner,
        /// The journal the fence opens.
        writer_id: WriterId,
    },
    /// An application event.
    Event {
        /// The journal that wrote it.
        writer_id: WriterId,
        /// 1, 2, 3… within that journal.
        seq_in_writer: u64,
        /// Opaque application bytes.
        payload: Vec<u8>,
    },
}

impl Record {
    /// The journal that wrote the record.
    pub fn writer_id(&self) -> &WriterId {
        match self {
            Record::Fence { writer_id, .. } | Record::Event { writer_id, .. } => writer_id,
        }
    }

    /// The fence epoch, for a fence.
    pub fn fence_epoch(&self) -> Option<u64> {
        match self {
            Record::Fence { epoch, .. } => Some(*epoch),
            Record::Event { .. } => None,
        }
    }
}

/// A record at its position.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Entry {
    /// Position, from 1.
    pub seq: Seq,
    /// The record committed there.
    pub record: Record,
}

impl Entry {
    /// The entries of `log` (a ledger's records, seq 1 first) at position `from` or later, as
    /// [`Ledger::read`] answers them (`from = 0` reads from 1).
    pub fn read_from(log: &[Record], from: Seq) -> Vec<Entry> {
        let first = from.max(1);
        let entries = (first..)
            .zip(log.iter().skip((first - 1) as usize))
            .map(|(seq, record)| Entry {
                seq,
                record: record.clone(),
            })
            .collect::<Vec<Entry>>();
        debug_assert!(
            entries.first().is_none_or(|e| e.seq == first)
                && entries.last().is_none_or(|e| e.seq == log.len() as Seq),
            "seq continuity (docs/contracts.md#journal): a read from {first} returns seqs \
             {first}..=tip (tip {})",
            log.len()
        );
        entries
    }
}

/// What a [`Ledger`] call answers: its value, or why it did not succeed.
pub type LedgerResult<T> = Result<T, LedgerError>;

/// Why a ledger call did not succeed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LedgerError {
    /// The CAS failed: the tip was `actual`, not the expected one. Nothing was written.
    #[error("CAS conflict: the tip is {actual}")]
    Conflict {
        /// The tip the ledger had.
        actual: Seq,
    },
    /// The call certainly had no effect (e.g. connection refused before sending).
    #[error("ledger unavailable: {reason}")]
    Unavailable {
        /// What went wrong.
        reason: String,
    },
    /// The request was malformed (e.g. an oversized payload) and was refused; nothing was
    /// written. Retrying the same request fails the same way.
    #[error("ledger request refused as invalid: {reason}")]
    Invalid {
        /// What is wrong with it.
        reason: String,
    },
    /// The call may or may not have taken effect (e.g. a timeout after sending).
    #[error("ledger outcome unknown: {reason}")]
    Unknown {
        /// What went wrong.
        reason: String,
    },
}

/// An append-only log per name in which every append is a compare-and-set on the tip.
///
/// A ledger makes each record durable before it acknowledges it.
#[async_trait]
pub trait Ledger: Send + Sync + fmt::Debug {
    /// The sequence number of the last record of `name` (0 when empty).
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] / [`LedgerError::Unknown`].
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq>;

    /// Commits `record` at `expected + 1` if the tip is `expected`, returning the new tip.
    ///
    /// # Errors
    /// [`LedgerError::Conflict`] with the actual tip when it is not `expected`;
    /// [`LedgerError::Unavailable`] (no effect) or [`LedgerError::Unknown`] (maybe committed).
    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq>;

    /// Every record of `name` at position `from` or later (`from = 0` reads from 1), in
    /// order.
    ///
    /// # Errors
    /// [`LedgerError::Unavailable`] / [`LedgerError::Unknown`].
    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>>;
}

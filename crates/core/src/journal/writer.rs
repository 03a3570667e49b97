//! `Journal`: appends events by CAS on the tracked tip, under a held lease.

use std::sync::Arc;

use tokio::sync::Mutex;

use super::{JournalLease, Ledger, LedgerError, LossCause, Record, Seq, WriterId};
use crate::hooks::{LeaseUse, Observation, PausePoint};
use crate::lease::SessionId;
use crate::mutant::Mutant;

/// Why opening a journal or appending to it failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum JournalError {
    /// The lease is no longer valid on the holder's clock (or was released or overtaken);
    /// nothing was sent. The cause is the error's `source()`.
    #[error("the journal's lease is lost")]
    LeaseLost {
        /// Why the lease was lost.
        #[source]
        cause: LossCause,
    },
    /// The CAS at `expected` failed and the record at `expected + 1` is not ours: another
    /// writer has fenced this one. The journal is poisoned.
    #[error("fenced: expected tip {expected}, the ledger's tip is {actual}")]
    Fenced {
        /// The tip this journal tracked.
        expected: Seq,
        /// The tip the ledger reported.
        actual: Seq,
    },
    /// The append's outcome stayed unknown after reading back: the tip is no longer known,
    /// so the journal is poisoned. History records it as `info`.
    #[error("append at tip {expected} has an unknown outcome: {reason}")]
    Ambiguous {
        /// The tip the append expected.
        expected: Seq,
        /// Why the outcome is unknown.
        reason: String,
    },
    /// An earlier append fenced or was ambiguous; a poisoned journal refuses every append.
    /// Drop it, release the lease and acquire anew before opening again.
    #[error("the journal is poisoned by an earlier failure: {first}")]
    Poisoned {
        /// The failure that poisoned it.
        first: Box<JournalError>,
    },
    /// The lease epoch is not strictly greater than the highest fence already in the ledger.
    #[error("lease epoch {epoch} is not above the ledger's highest fence {highest_fence}")]
    StaleEpoch {
        /// The lease's epoch.
        epoch: u64,
        /// The highest fence epoch found.
        highest_fence: u64,
    },
    /// Opening conflicted on every attempt to commit the fence.
    #[error("the fence did not commit in {attempts} attempts: the tip kept moving")]
    FenceContention {
        /// Attempts made.
        attempts: u32,
    },
    /// The ledger was unavailable and the call had no effect; the journal is unchanged.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

impl JournalError {
    pub(crate) fn lease_lost(cause: LossCause) -> Self {
        JournalError::LeaseLost { cause }
    }

    /// Whether this error poisons the journal that returned it.
    pub fn poisons(&self) -> bool {
        matches!(
            self,
            JournalError::Fenced { .. }
                | JournalError::Ambiguous { .. }
                | JournalError::Poisoned { .. }
        )
    }
}

/// A fenced single-writer journal of one session, opened by [`super::Store::open_journal`].
///
/// Appends are serialised (one in flight at a time) and each is a CAS at the tracked tip;
/// the tip advances only on a known success. Share it with `Arc` to append from many tasks.
#[derive(Debug)]
pub struct Journal {
    session: SessionId,
    ledger: Arc<dyn Ledger>,
    lease: JournalLease,
    writer_id: WriterId,
    state: Mutex<WriterState>,
}

#[derive(Debug, Default)]
struct WriterState {
    tip: Seq,
    appended: u64,
    poison: Option<JournalError>,
}

impl Journal {
    pub(super) fn new(
        session: SessionId,
        ledger: Arc<dyn Ledger>,
        lease: JournalLease,
        writer_id: WriterId,
    ) -> Self {
        Journal {
            session,
            ledger,
            lease,
            writer_id,
            state: Mutex::new(WriterState::default()),
        }
    }

    /// Ready to append after the fence committed at `tip`.
    pub(super) fn ready_at(self, tip: Seq) -> Self {
        self.state
            .try_lock()
            .expect("a new journal is not shared")
            .tip = tip;
        self
    }

    /// The session this journal writes.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// This journal's writer id, carried by every record it writes.
    pub fn writer_id(&self) -> &WriterId {
        &self.writer_id
    }

    /// The lease this journal writes under.
    pub fn lease(&self) -> &JournalLease {
        &self.lease
    }

    /// The last position this journal knows it (or the ledger before it) committed.
    pub async fn tip(&self) -> Seq {
        self.state.lock().await.tip
    }

    /// The `seq_in_writer` the next event will carry (1 for the first).
    pub async fn next_seq_in_writer(&self) -> u64 {
        self.state.lock().await.appended + 1
    }

    /// Whether an earlier failure poisoned the journal.
    pub async fn is_poisoned(&self) -> bool {
        self.state.lock().await.poison.is_some()
    }

    /// Appends an event carrying `payload`, returning its position.
    ///
    /// Checks the lease on the holder's clock (recording the decision as a validity check),
    /// then appends by CAS at the tracked tip. A
    /// conflict whose record at `expected + 1` is ours (an earlier try that committed) is a
    /// success; an unknown outcome is resolved by reading that position back.
    ///
    /// # Errors
    /// [`JournalError::LeaseLost`] (nothing sent); [`JournalError::Fenced`] and
    /// [`JournalError::Ambiguous`], which poison the journal; [`JournalError::Poisoned`] for
    /// every append after that; [`JournalError::Ledger`] when nothing was written.
    pub async fn append(&self, payload: Vec<u8>) -> Result<Seq, JournalError> {
        self.append_for(LeaseUse::Append, payload).await
    }

    /// Appends a graceful shutdown's final clean-up event: an append like any other (its own
    /// validity check, its own pause point [`PausePoint::BeforeCleanupAppend`] before it),
    /// recorded as a clean-up decision so STOP judges it as one.
    ///
    /// # Errors
    /// As [`Journal::append`].
    pub async fn append_cleanup(&self, payload: Vec<u8>) -> Result<Seq, JournalError> {
        self.append_for(LeaseUse::CleanupAppend, payload).await
    }

    /// The append of [`Journal::append`] and [`Journal::append_cleanup`]: `purpose` names the
    /// pause point before the check and the decision the validity line records.
    async fn append_for(&self, purpose: LeaseUse, payload: Vec<u8>) -> Result<Seq, JournalError> {
        let mut state = self.state.lock().await;
        if let Some(first) = &state.poison {
            return Err(JournalError::Poisoned {
                first: Box::new(first.clone()),
            });
        }
        self.check_validity(purpose).await?;
        let expected = state.tip;
        debug_assert!(
            state.poison.is_none(),
            "a poisoned journal sends nothing (docs/contracts.md#journal)"
        );
        let record = Record::Event {
            writer_id: self.writer_id.clone(),
            seq_in_writer: state.appended + 1,
            payload,
        };
        let outcome = self
            .ledger
            .append(&self.session, expected, record.clone())
            .await;
        if outcome.is_ok()
            && self.lease.mutant() == Some(Mutant::CommittedAppendReportedLost)
            && let Err(cause) = self.lease.check()
        {
            return Err(JournalError::lease_lost(cause));
        }
        let result = match outcome {
            Ok(tip) => Ok(tip),
            Err(LedgerError::Conflict { actual }) => {
                self.resolve(expected, &record, |_| JournalError::Fenced {
                    expected,
                    actual,
                })
                .await
            }
            Err(LedgerError::Unknown { reason }) => {
                let unknown = |why: String| JournalError::Ambiguous {
                    expected,
                    reason: format!("{reason}; {why}"),
                };
                self.resolve(expected, &record, unknown).await
            }
            Err(unavailable) => return Err(unavailable.into()),
        };
        match &result {
            Ok(tip) => {
                debug_assert!(
                    *tip > expected,
                    "seq continuity (docs/contracts.md#journal): an append sent at tip {expected} \
                     committed at {tip}, not after it"
                );
                state.tip = *tip;
                state.appended += 1;
            }
            Err(error) => state.poison = Some(error.clone()),
        }
        result
    }

    /// The holder's validity check before an append (docs/contracts.md#client-side-validity),
    /// between its pause points, recorded as a `ValidityCheck` observation; `Err` when the
    /// lease is no longer valid. A cleanup append skips the check only under its mutant.
    async fn check_validity(&self, purpose: LeaseUse) -> Result<(), JournalError> {
        let hooks = self.lease.hooks();
        let (point, skips_check) = match purpose {
            LeaseUse::CleanupAppend => (
                PausePoint::BeforeCleanupAppend,
                self.lease.mutant() == Some(Mutant::CleanupAppendSkipsValidity),
            ),
            _ => (PausePoint::BeforeAppendCheck, false),
        };
        hooks.pause_point(point).await;
        if !skips_check {
            self.lease.check().map_err(JournalError::lease_lost)?;
        }
        hooks.observe(|| Observation::ValidityCheck {
            session: self.session.clone(),
            purpose,
            epoch: self.lease.epoch(),
            local: self.lease.clock().now(),
            valid_until: self.lease.valid_until(),
        });
        hooks.pause_point(PausePoint::BeforeAppendSend).await;
        Ok(())
    }

    /// Reads back position `expected + 1` after a failed or unknown append of `record`: ours
    /// there is a success; another record there means this writer was fenced; nothing there
    /// (or a failed read) leaves the outcome unknown, reported through `unresolved`.
    async fn resolve(
        &self,
        expected: Seq,
        record: &Record,
        unresolved: impl Fn(String) -> JournalError,
    ) -> Result<Seq, JournalError> {
        match self.ledger.read(&self.session, expected + 1).await {
            Ok(entries) => match entries.first() {
                Some(entry) if entry.record == *record => {
                    debug_assert!(
                        entry.seq > expected,
                        "seq continuity (docs/contracts.md#journal): a read from {} returned seq \
                         {}",
                        expected + 1,
                        entry.seq
                    );
                    Ok(entry.seq)
                }
                Some(_) => Err(JournalError::Fenced {
                    expected,
                    actual: entries.last().map_or(expected + 1, |e| e.seq),
                }),
                None => Err(unresolved("record not visible on read-back".into())),
            },
            Err(read) => Err(unresolved(format!("read-back failed: {read}"))),
        }
    }
}

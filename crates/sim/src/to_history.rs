//! The system under test's values as the history writes them: the recorder's side of the
//! line format (docs/history.md). The history knows nothing of leases, journals or hooks;
//! the world and live mode record through these conversions, lossless where the history keeps
//! the whole value (a ledger record; the unit tests read one back).

use leasesim_core::hooks::LeaseUse;
use leasesim_core::journal::{JournalError, LedgerError, LossCause, Record, WriterId};
use leasesim_core::lease::{Lease, LeaseError, Owner};
use leasesim_history::{
    HistLeaseUse, HistLossCause, HistRecord, HistWriterId, OpResult, Process, micros,
};

/// A value of the system under test as the history writes it.
pub trait ToHistory {
    /// The history's type for it.
    type Hist;

    /// `self` as the history writes it.
    fn to_history(&self) -> Self::Hist;
}

/// The result of a successful acquire or renew that returned `lease`.
pub fn granted(lease: &Lease) -> OpResult {
    OpResult::Granted {
        token: lease.token(),
        expiry_authority_us: micros(lease.expiry().since_origin()),
        ttl_us: micros(lease.ttl()),
    }
}

impl ToHistory for Owner {
    type Hist = Process;

    fn to_history(&self) -> Process {
        Process::new(self.replica.clone(), self.incarnation)
    }
}

impl ToHistory for WriterId {
    type Hist = HistWriterId;

    fn to_history(&self) -> HistWriterId {
        HistWriterId {
            owner: self.owner.to_history(),
            journal: self.journal,
        }
    }
}

impl ToHistory for Record {
    type Hist = HistRecord;

    fn to_history(&self) -> HistRecord {
        match self {
            Record::Fence {
                epoch,
                owner,
                writer_id,
            } => HistRecord::Fence {
                epoch: *epoch,
                owner: owner.to_history(),
                writer_id: writer_id.to_history(),
            },
            Record::Event {
                writer_id,
                seq_in_writer,
                payload,
            } => HistRecord::Event {
                writer_id: writer_id.to_history(),
                seq_in_writer: *seq_in_writer,
                payload: payload.clone(),
            },
        }
    }
}

impl ToHistory for LeaseUse {
    type Hist = HistLeaseUse;

    fn to_history(&self) -> HistLeaseUse {
        match self {
            LeaseUse::Append => HistLeaseUse::Append,
            LeaseUse::JournalOpen => HistLeaseUse::JournalOpen,
            LeaseUse::CleanupAppend => HistLeaseUse::CleanupAppend,
        }
    }
}

impl ToHistory for LeaseError {
    type Hist = OpResult;

    fn to_history(&self) -> OpResult {
        match self {
            LeaseError::Held { holder_token } => OpResult::Held {
                holder_token: *holder_token,
            },
            LeaseError::Unsupported => OpResult::Unsupported {},
            // The history keeps one word for "no answer the contract names": both are
            // unknown outcomes to the checkers.
            LeaseError::Unavailable { reason } | LeaseError::Unexpected { status: reason } => {
                OpResult::Unavailable {
                    reason: reason.clone(),
                }
            }
            LeaseError::InvalidSession { reason } => OpResult::Invalid {
                reason: reason.clone(),
            },
        }
    }
}

impl ToHistory for LedgerError {
    type Hist = OpResult;

    fn to_history(&self) -> OpResult {
        match self {
            LedgerError::Conflict { actual } => OpResult::Conflict { actual: *actual },
            LedgerError::Unavailable { reason } => OpResult::Unavailable {
                reason: reason.clone(),
            },
            LedgerError::Invalid { reason } => OpResult::Invalid {
                reason: reason.clone(),
            },
            LedgerError::Unknown { reason } => OpResult::Unknown {
                reason: reason.clone(),
            },
        }
    }
}

impl ToHistory for JournalError {
    type Hist = OpResult;

    fn to_history(&self) -> OpResult {
        match self {
            JournalError::LeaseLost { cause } => OpResult::LeaseLost {
                cause: cause.to_history(),
            },
            JournalError::Fenced { expected, actual } => OpResult::Fenced {
                expected: *expected,
                actual: *actual,
            },
            JournalError::Ambiguous { expected, reason } => OpResult::Ambiguous {
                expected: *expected,
                reason: reason.clone(),
            },
            JournalError::Poisoned { first } => OpResult::Poisoned {
                first: first.to_string(),
            },
            JournalError::StaleEpoch {
                epoch,
                highest_fence,
            } => OpResult::StaleEpoch {
                epoch: *epoch,
                highest_fence: *highest_fence,
            },
            JournalError::FenceContention { attempts } => OpResult::FenceContention {
                attempts: *attempts,
            },
            JournalError::Ledger(ledger) => ledger.to_history(),
        }
    }
}

impl ToHistory for LossCause {
    type Hist = HistLossCause;

    fn to_history(&self) -> HistLossCause {
        match self {
            LossCause::Released => HistLossCause::Released {},
            LossCause::Overtaken { holder_token } => HistLossCause::Overtaken {
                holder_token: *holder_token,
            },
            LossCause::Deadline { valid_until } => HistLossCause::Deadline {
                valid_until_local_us: micros(valid_until.since_origin()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use leasesim_core::clock::Instant;
    use leasesim_core::lease::SessionId;
    use leasesim_history::{LedgerLine, Line};

    /// The lease owner a history process stands for.
    fn owner_of(process: Process) -> Owner {
        Owner::new(process.replica, process.incarnation)
    }

    /// The journal writer id `id` stands for.
    fn writer_id_of(id: HistWriterId) -> WriterId {
        WriterId {
            owner: owner_of(id.owner),
            journal: id.journal,
        }
    }

    /// The journal record `record` stands for: the inverse of `to_history`, so the test shows
    /// that nothing is lost.
    fn record_of(record: HistRecord) -> Record {
        match record {
            HistRecord::Fence {
                epoch,
                owner,
                writer_id,
            } => Record::Fence {
                epoch,
                owner: owner_of(owner),
                writer_id: writer_id_of(writer_id),
            },
            HistRecord::Event {
                writer_id,
                seq_in_writer,
                payload,
            } => Record::Event {
                writer_id: writer_id_of(writer_id),
                seq_in_writer,
                payload,
            },
        }
    }

    #[test]
    fn records_convert_losslessly_to_and_from_the_journal() {
        let owner = Owner::new("replica-1", 2);
        let writer_id = WriterId {
            owner: owner.clone(),
            journal: 3,
        };
        let records = [
            Record::Fence {
                epoch: 9,
                owner,
                writer_id: writer_id.clone(),
            },
            Record::Event {
                writer_id,
                seq_in_writer: 4,
                payload: (0..=255).collect(),
            },
        ];
        for record in records {
            let hist = record.to_history();
            let line = Line::from(LedgerLine {
                session: "s".into(),
                seq: 1,
                record: hist.clone(),
            });
            assert_eq!(Line::from_json(&line.to_json()), Ok(line));
            assert_eq!(record_of(hist), record);
        }
    }

    #[test]
    fn results_convert_from_the_system_under_tests_errors() {
        let lease = Lease::new(
            SessionId::new("s1").expect("valid"),
            Owner::new("replica-1", 0),
            5,
            Instant::from_origin(Duration::from_nanos(7_000_000_999)),
            Duration::from_secs(3),
        );
        assert_eq!(
            granted(&lease),
            OpResult::Granted {
                token: 5,
                expiry_authority_us: 7_000_000,
                ttl_us: 3_000_000,
            }
        );
        assert_eq!(
            LeaseError::Held {
                holder_token: Some(6)
            }
            .to_history(),
            OpResult::Held {
                holder_token: Some(6)
            }
        );
        assert_eq!(
            JournalError::Ledger(LedgerError::Conflict { actual: 3 }).to_history(),
            OpResult::Conflict { actual: 3 }
        );
        assert_eq!(
            JournalError::LeaseLost {
                cause: LossCause::Deadline {
                    valid_until: Instant::from_origin(Duration::from_micros(3_700_000)),
                },
            }
            .to_history(),
            OpResult::LeaseLost {
                cause: HistLossCause::Deadline {
                    valid_until_local_us: 3_700_000
                }
            }
        );
        let poisoned = JournalError::Poisoned {
            first: Box::new(JournalError::Fenced {
                expected: 4,
                actual: 5,
            }),
        };
        assert_eq!(
            poisoned.to_history(),
            OpResult::Poisoned {
                first: "fenced: expected tip 4, the ledger's tip is 5".into()
            }
        );
    }
}

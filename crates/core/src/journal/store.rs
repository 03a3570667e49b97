//! `Store`: acquires leases and opens fenced journals for one owner.

use std::sync::Arc;

use super::{
    Entry, JournalError, JournalLease, Ledger, LedgerError, LedgerResult, Record, SkewMargin,
    WriterId,
};
use crate::clock::Clock;
use crate::hooks::{HookSlot, LeaseUse, Observation, PausePoint};
use crate::journal::Journal;
use crate::lease::{LeaseError, Owner, SessionId, SessionLease};
use crate::mutant::Mutant;
use crate::sync::{AtomicU64, Ordering};

/// Settings of a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Margin subtracted from the granted TTL when judging validity locally (default 10%).
    pub skew_margin: SkewMargin,
    /// How many times opening a journal tries to commit its fence when CAS keeps conflicting
    /// (default 8).
    pub fence_attempts: u32,
    /// Harness hooks (pause points, observations); none by default.
    pub hooks: HookSlot,
    /// The TTL this replica's own configuration names, if any (default none). Validity never
    /// uses it: the holder counts the TTL the authority granted
    /// (docs/contracts.md#client-side-validity); only [`Mutant::ClientUsesConfiguredTtl`] reads it.
    pub configured_ttl: Option<std::time::Duration>,
    /// A planted bug, or `None` (the default) for the correct code. The store honours
    /// [`Mutant::OpenAcceptsStaleEpoch`] and hands the mutant to every hold it acquires
    /// ([`JournalLease::mutant`]), whose journals, renewer and service read it.
    pub mutant: Option<Mutant>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            skew_margin: SkewMargin::default(),
            fence_attempts: 8,
            hooks: HookSlot::default(),
            configured_ttl: None,
            mutant: None,
        }
    }
}

/// One owner's access to a lease authority and a ledger: acquires leases and opens the
/// fenced journals written under them.
#[derive(Debug)]
pub struct Store {
    owner: Owner,
    authority: Arc<dyn SessionLease>,
    ledger: Arc<dyn Ledger>,
    clock: Arc<dyn Clock>,
    config: StoreConfig,
    journals_opened: AtomicU64,
}

impl Store {
    /// A store for `owner` over `authority` and `ledger`, timing everything on `clock`.
    pub fn new(
        owner: Owner,
        authority: Arc<dyn SessionLease>,
        ledger: Arc<dyn Ledger>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Store {
            owner,
            authority,
            ledger,
            clock,
            config: StoreConfig::default(),
            journals_opened: AtomicU64::new(0),
        }
    }

    /// The same store with `config`.
    pub fn with_config(mut self, config: StoreConfig) -> Self {
        self.config = config;
        self
    }

    /// The owner this store acts for.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The lease authority this store acquires from (for raw calls a harness scripts).
    pub fn authority(&self) -> &Arc<dyn SessionLease> {
        &self.authority
    }

    /// The harness hooks the store was configured with (none by default): the service
    /// reports its observations through them.
    pub fn hooks(&self) -> &HookSlot {
        &self.config.hooks
    }

    /// The planted bug the store runs, if any (`None`: the correct code).
    pub fn mutant(&self) -> Option<Mutant> {
        self.config.mutant
    }

    /// The store's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Acquires `session` for this store's owner.
    ///
    /// # Errors
    /// The authority's: [`LeaseError::Held`] when another live owner holds it, etc.
    pub async fn acquire_lease(&self, session: &SessionId) -> Result<JournalLease, LeaseError> {
        JournalLease::acquire(
            self.authority.clone(),
            self.clock.clone(),
            &self.config,
            session,
            &self.owner,
        )
        .await
    }

    /// Opens the journal of the lease's session: reads the tip and the highest fence epoch,
    /// refuses a lease whose epoch is not strictly greater, and commits `Fence { epoch }` by
    /// CAS at the tip, re-reading and retrying on conflict while the lease is valid. Each try
    /// judges the lease first and records that decision as a validity check (STOP judges it
    /// as it judges an append's). The journal is ready only once its fence has committed.
    ///
    /// # Errors
    /// [`JournalError::StaleEpoch`]; [`JournalError::LeaseLost`];
    /// [`JournalError::FenceContention`] after `fence_attempts` conflicts;
    /// [`JournalError::Ambiguous`] when the fence's outcome cannot be learnt;
    /// [`JournalError::Ledger`] when the ledger is unavailable.
    pub async fn open_journal(&self, lease: &JournalLease) -> Result<Journal, JournalError> {
        let session = lease.session();
        let epoch = lease.epoch();
        let writer_id = WriterId {
            owner: self.owner.clone(),
            journal: self.journals_opened.fetch_add(1, Ordering::Relaxed) + 1,
        };
        let fence = Record::Fence {
            epoch,
            owner: self.owner.clone(),
            writer_id: writer_id.clone(),
        };
        let mut scan = FenceScan::default();
        let hooks = lease.hooks();
        for _ in 0..self.config.fence_attempts {
            hooks.pause_point(PausePoint::BeforeOpenCheck).await;
            lease.check().map_err(JournalError::lease_lost)?;
            hooks.observe(|| Observation::ValidityCheck {
                session: session.clone(),
                purpose: LeaseUse::JournalOpen,
                epoch,
                local: lease.clock().now(),
                valid_until: lease.valid_until(),
            });
            scan.advance(self.ledger.read(&session, scan.tip + 1).await?);
            if epoch <= scan.highest_epoch
                && self.config.mutant != Some(Mutant::OpenAcceptsStaleEpoch)
            {
                return Err(JournalError::StaleEpoch {
                    epoch,
                    highest_fence: scan.highest_epoch,
                });
            }
            debug_assert!(
                epoch > scan.highest_epoch
                    || self.config.mutant == Some(Mutant::OpenAcceptsStaleEpoch),
                "fence epochs rise (docs/contracts.md#journal): fence {epoch} would follow fence \
                 {}",
                scan.highest_epoch
            );
            let expected = scan.tip;
            let outcome = self.ledger.append(&session, expected, fence.clone()).await;
            let committed = match outcome {
                Ok(tip) => Some(tip),
                Err(LedgerError::Conflict { .. }) => None,
                Err(LedgerError::Unknown { reason }) => {
                    self.read_back(&session, expected, &fence, reason).await?
                }
                Err(unavailable) => return Err(unavailable.into()),
            };
            if let Some(tip) = committed {
                let journal = Journal::new(session, self.ledger.clone(), lease.clone(), writer_id);
                return Ok(journal.ready_at(tip));
            }
        }
        Err(JournalError::FenceContention {
            attempts: self.config.fence_attempts,
        })
    }

    /// Learns whether `fence`, appended at `expected` with an unknown outcome, committed:
    /// `Some(tip)` if it is at `expected + 1`, `None` if another record is.
    async fn read_back(
        &self,
        session: &SessionId,
        expected: u64,
        fence: &Record,
        reason: String,
    ) -> Result<Option<u64>, JournalError> {
        let ambiguous = |reason| JournalError::Ambiguous { expected, reason };
        let entries = self
            .ledger
            .read(session, expected + 1)
            .await
            .map_err(|e| ambiguous(format!("{reason}; read-back failed: {e}")))?;
        match entries.first() {
            Some(entry) if entry.record == *fence => Ok(Some(entry.seq)),
            Some(_) => Ok(None),
            None => Err(ambiguous(format!(
                "{reason}; fence not visible on read-back"
            ))),
        }
    }

    /// The events of `session` in order, without fences.
    ///
    /// # Errors
    /// The ledger's.
    pub async fn replay(&self, session: &SessionId) -> LedgerResult<Vec<Entry>> {
        let mut entries = self.replay_full(session).await?;
        entries.retain(|entry| matches!(entry.record, Record::Event { .. }));
        Ok(entries)
    }

    /// Every record of `session` in order, fences included.
    ///
    /// # Errors
    /// The ledger's.
    pub async fn replay_full(&self, session: &SessionId) -> LedgerResult<Vec<Entry>> {
        self.ledger.read(session, 1).await
    }
}

/// What opening has read of the ledger so far, so each retry reads only what is new.
#[derive(Default)]
struct FenceScan {
    tip: u64,
    highest_epoch: u64,
}

impl FenceScan {
    fn advance(&mut self, entries: Vec<Entry>) {
        let (tip, highest_epoch) = (self.tip, self.highest_epoch);
        for entry in entries {
            self.tip = self.tip.max(entry.seq);
            if let Some(epoch) = entry.record.fence_epoch() {
                self.highest_epoch = self.highest_epoch.max(epoch);
            }
        }
        debug_assert!(
            self.tip >= tip && self.highest_epoch >= highest_epoch,
            "a fence scan only moves forward: tip {tip} then {}, highest fence {highest_epoch} \
             then {}",
            self.tip,
            self.highest_epoch
        );
    }
}

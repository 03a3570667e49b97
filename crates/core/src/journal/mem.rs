//! `MemLedger`: the reference ledger, a map of vectors behind a mutex.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{Entry, Ledger, LedgerError, LedgerResult, Record, Seq};
use crate::lease::SessionId;
use crate::mutant::Mutant;
use crate::sync::{Mutex, lock};

/// The in-process ledger and the reference implementation of [`Ledger`]: one mutex over an
/// ordered map from name to its records; each append checks and commits in one critical
/// section. Nothing is durable beyond the process.
#[derive(Debug, Default)]
pub struct MemLedger {
    mutant: Option<Mutant>,
    logs: Mutex<BTreeMap<SessionId, Vec<Record>>>,
}

impl MemLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same ledger running `mutant` (a planted bug), or the correct code for `None`.
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self
    }
}

#[async_trait]
impl Ledger for MemLedger {
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq> {
        Ok(lock(&self.logs).get(name).map_or(0, |log| log.len() as Seq))
    }

    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq> {
        let mut logs = lock(&self.logs);
        let log = logs.entry(name.clone()).or_default();
        let actual = log.len() as Seq;
        if expected < actual
            && self.mutant == Some(Mutant::FenceWrittenBlind)
            && matches!(record, Record::Fence { .. })
        {
            // A blind put at `expected + 1`: overwrites what committed there.
            let len = log.len();
            log[expected as usize] = record;
            debug_assert_eq!(
                log.len(),
                len,
                "a blind put overwrites a committed record, never adds one"
            );
            return Ok(expected + 1);
        }
        if actual != expected && self.mutant != Some(Mutant::AppendIgnoresExpectedTip) {
            return Err(LedgerError::Conflict { actual });
        }
        log.push(record);
        debug_assert_eq!(
            log.len() as Seq,
            actual + 1,
            "seq continuity: a ledger's records are numbered from 1 with no gaps \
             (docs/contracts.md#journal); tip after an append at {actual}"
        );
        Ok(actual + 1)
    }

    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>> {
        let logs = lock(&self.logs);
        let Some(log) = logs.get(name) else {
            return Ok(Vec::new());
        };
        Ok(Entry::read_from(log, from))
    }
}

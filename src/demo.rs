//! A short built-in demonstration of why the fence matters, run by `leasesim demo` until the
//! campaign runner exists.
//!
//! Field case F3 in miniature (`shared/cases/scenarios.md`): replica A's monotonic clock runs
//! 40% slow, so A still believes its lease valid after the authority let it expire and gave
//! the session to B. A's local check passes; only the fence at the ledger stops A's stale
//! append.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, ManualClock};
use crate::journal::{JournalError, MemLedger, Record, Store};
use crate::lease::{MemLease, Owner, SessionId};

/// What the demo saw.
#[derive(Debug)]
pub struct DemoOutcome {
    /// A step-by-step account, one line per step.
    pub narrative: String,
    /// The ledger at the end, one line per record (`seq: record`).
    pub ledger: Vec<String>,
    /// Whether everything happened as the contract says: A fenced, the ledger exactly
    /// fence 1, a1, fence 2, b1.
    pub as_expected: bool,
}

/// Runs the demo. Deterministic: no real time, no randomness.
///
/// # Errors
/// A description of the first step that failed outright (a bug in the system under test).
pub async fn run() -> Result<DemoOutcome, String> {
    const TTL: Duration = Duration::from_secs(10);
    let authority_clock = ManualClock::new();
    let a_clock = ManualClock::new();
    let b_clock = ManualClock::new();
    let authority = Arc::new(MemLease::new(Arc::new(authority_clock.clone()), TTL));
    let ledger = Arc::new(MemLedger::new());
    let store = |name: &str, clock: &ManualClock| {
        let owner = Owner::new(name, 0);
        Store::new(
            owner,
            authority.clone(),
            ledger.clone(),
            Arc::new(clock.clone()),
        )
    };
    let (a, b) = (store("replica-a", &a_clock), store("replica-b", &b_clock));
    let s1 = SessionId::new("s1").map_err(|e| e.to_string())?;
    let mut log = String::new();
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");

    let a_lease = a
        .acquire_lease(&s1)
        .await
        .map_err(|e| fail("A acquire", &e))?;
    let a_journal = a
        .open_journal(&a_lease)
        .await
        .map_err(|e| fail("A open", &e))?;
    let a1 = a_journal
        .append(b"a1".to_vec())
        .await
        .map_err(|e| fail("A append a1", &e))?;
    let _ = writeln!(
        log,
        "t=0s   A acquires s1 (token {}), opens the journal, appends a1 at {a1}",
        a_lease.epoch()
    );

    // 12 s pass; A's clock, 40% slow, counts 7.2 s and A is cut off from the authority.
    authority_clock.advance(Duration::from_secs(12));
    b_clock.advance(Duration::from_secs(12));
    a_clock.advance(Duration::from_millis(7_200));
    let _ = writeln!(
        log,
        "t=12s  the lease has expired at the authority; A's slow clock reads {:?}, A's deadline is {:?}",
        a_clock.now(),
        a_lease.valid_until()
    );

    let b_lease = b
        .acquire_lease(&s1)
        .await
        .map_err(|e| fail("B acquire", &e))?;
    let b_journal = b
        .open_journal(&b_lease)
        .await
        .map_err(|e| fail("B open", &e))?;
    let b1 = b_journal
        .append(b"b1".to_vec())
        .await
        .map_err(|e| fail("B append b1", &e))?;
    let _ = writeln!(
        log,
        "t=12s  B acquires s1 (token {}), fences the journal, appends b1 at {b1}",
        b_lease.epoch()
    );

    let a_valid = a_lease.is_valid();
    let stale = a_journal.append(b"a2".to_vec()).await;
    let _ = writeln!(
        log,
        "t=12s  A still believes its lease valid ({a_valid}) and appends a2: {stale:?}"
    );

    let ledger = render_ledger(&b, &s1).await?;
    let a_fenced = matches!(stale, Err(JournalError::Fenced { .. }));
    let exact = ledger
        == [
            "1: fence 1 by replica-a#0",
            "2: a1 by replica-a#0",
            "3: fence 2 by replica-b#0",
            "4: b1 by replica-b#0",
        ];
    Ok(DemoOutcome {
        narrative: log,
        ledger,
        as_expected: a_valid && a_fenced && exact,
    })
}

async fn render_ledger(store: &Store, session: &SessionId) -> Result<Vec<String>, String> {
    let entries = store
        .replay_full(session)
        .await
        .map_err(|e| e.to_string())?;
    let line = |seq, record: &Record| match record {
        Record::Fence { epoch, owner, .. } => format!("{seq}: fence {epoch} by {owner}"),
        Record::Event {
            writer_id, payload, ..
        } => {
            format!(
                "{seq}: {} by {}",
                String::from_utf8_lossy(payload),
                writer_id.owner
            )
        }
    };
    Ok(entries.iter().map(|e| line(e.seq, &e.record)).collect())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_stale_writer_is_fenced_and_the_ledger_is_exact() {
        let outcome = super::run().await.unwrap();
        assert!(
            outcome.as_expected,
            "{}\n{:?}",
            outcome.narrative, outcome.ledger
        );
    }
}

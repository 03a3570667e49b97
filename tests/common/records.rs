//! The owners, session and ledger records the journal tests of several binaries (`core`,
//! `remote`, `live`, `mutants`) build and read, written once. Each includes this file with
//! `#[path]`: it builds on the `leasesim` library, which `leasesim-testkit` must not depend on
//! (docs/testing.md#helpers-written-once).

// Each binary that includes this file uses a part of it.
#![allow(dead_code)]

use std::future::Future;

use leasesim::journal::{Journal, JournalError, Ledger, Record, WriterId};
use leasesim::lease::{Owner, SessionId};

/// Replica 1's first incarnation.
pub fn replica_1() -> Owner {
    Owner::new("replica-1", 0)
}

/// Replica 2's first incarnation.
pub fn replica_2() -> Owner {
    Owner::new("replica-2", 0)
}

/// The session the tests lease.
pub fn s1() -> SessionId {
    SessionId::new("s1").unwrap()
}

/// The `journal`th journal opened by `owner`'s store.
pub fn writer(owner: Owner, journal: u64) -> WriterId {
    WriterId { owner, journal }
}

/// The fence `owner`'s `journal`th journal writes under lease token `epoch`.
pub fn fence(epoch: u64, owner: Owner, journal: u64) -> Record {
    Record::Fence {
        epoch,
        owner: owner.clone(),
        writer_id: writer(owner, journal),
    }
}

/// The `seq_in_writer`th event of `owner`'s `journal`th journal.
pub fn event(owner: Owner, journal: u64, seq_in_writer: u64, payload: &str) -> Record {
    Record::Event {
        writer_id: writer(owner, journal),
        seq_in_writer,
        payload: payload.as_bytes().to_vec(),
    }
}

/// Every record of `session` in `ledger`, from position 1, in order.
pub async fn read_all(ledger: &dyn Ledger, session: &SessionId) -> Vec<Record> {
    let entries = ledger.read(session, 1).await.unwrap();
    entries.into_iter().map(|entry| entry.record).collect()
}

/// The end of a takeover (docs/contracts.md#journal) where replica-1 (A) wrote `a1` at seq 2
/// under fence 1 and replica-2 (B) then fenced the session (seq 3) and wrote `b1` at seq 4,
/// while A still believes it holds the lease: A's next append is fenced (expected 2, found 4)
/// and poisons A's journal, whose tracked tip stays 2; the ledger (`records`, read after A's
/// attempts) holds just those four records; B's next append lands at 5.
pub async fn assert_stale_writer_fenced(
    a: &Journal,
    records: impl Future<Output = Vec<Record>>,
    b: &Journal,
) {
    let fenced = JournalError::Fenced {
        expected: 2,
        actual: 4,
    };
    assert_eq!(a.append(b"a2".to_vec()).await, Err(fenced.clone()));
    assert!(a.is_poisoned().await);
    assert_eq!(a.tip().await, 2, "the tracked tip only moves on success");
    let poisoned = JournalError::Poisoned {
        first: Box::new(fenced),
    };
    assert_eq!(a.append(b"a3".to_vec()).await, Err(poisoned));
    assert_eq!(
        records.await,
        [
            fence(1, replica_1(), 1),
            event(replica_1(), 1, 1, "a1"),
            fence(2, replica_2(), 1),
            event(replica_2(), 1, 1, "b1"),
        ]
    );
    assert_eq!(
        b.append(b"b2".to_vec()).await,
        Ok(5),
        "the new holder is unaffected"
    );
}

//! The owners, session and ledger records the journal tests of several binaries (`core`,
//! `remote`, `live`, `mutants`) build and read, written once. Each includes this file with
//! `#[path]`: it builds on the `leasesim` library, which `leasesim-testkit` must not depend on
//! (docs/testing.md#helpers-written-once).

// Each binary that includes this file uses a part of it.
#![allow(dead_code)]

use leasesim::journal::{Ledger, Record, WriterId};
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

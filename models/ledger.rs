//! `MemLedger` under loom: writers racing CAS appends on one name.
//!
//! Each writer appends its records one by one, each time reading the tip and appending at
//! it, and retrying on `Conflict` (every conflict means another writer committed, so the
//! retries end). After the join, **LEDGER**: every acknowledged append committed at
//! `expected + 1` (a CAS chain, not a blind append); the ledger reads back as positions
//! `1..=n` with no gaps; each acknowledged record is there exactly once, at its position;
//! and nothing is there that was not acknowledged.

use std::collections::BTreeSet;
use std::sync::Arc;

use leasesim::journal::{Ledger, LedgerError, MemLedger, Record, Seq, WriterId};
use leasesim::lease::Owner;
use leasesim::mutant::Mutant;
use loom::future::block_on;
use loom::thread;

use crate::support::{Sometimes, assert_killed, check, s1};

/// `writers` threads each appending `records` records, against a ledger running `mutant`.
pub fn racing_appends(
    writers: u64,
    records: u64,
    mutant: Option<Mutant>,
) -> impl Fn() + Send + Sync + 'static {
    racing_appends_counting(writers, records, mutant, Sometimes::default())
}

/// The same, counting the interleavings in which some append lost a CAS race.
pub fn racing_appends_counting(
    writers: u64,
    records: u64,
    mutant: Option<Mutant>,
    conflicts: Sometimes,
) -> impl Fn() + Send + Sync + 'static {
    move || {
        let ledger = Arc::new(MemLedger::new().with_mutant(mutant));
        let threads: Vec<_> = (1..=writers)
            .map(|writer| {
                let ledger = ledger.clone();
                thread::spawn(move || append_all(&*ledger, writer, records))
            })
            .collect();
        let mut acks = Vec::new();
        let mut lost_races = 0;
        for thread in threads {
            let (writer_acks, writer_conflicts) = thread.join().expect("a writer panicked");
            acks.extend(writer_acks);
            lost_races += writer_conflicts;
        }
        let entries = block_on(ledger.read(&s1(), 1)).expect("MemLedger reads cannot fail");
        judge(&acks, &entries);
        if lost_races > 0 {
            conflicts.saw();
        }
    }
}

/// An acknowledged append: the tip it expected, the position it was given, the record.
struct Ack {
    expected: Seq,
    seq: Seq,
    record: Record,
}

/// Appends `records` records for `writer`, retrying each on conflict. Returns the
/// acknowledgements and how many conflicts it met.
fn append_all(ledger: &dyn Ledger, writer: u64, records: u64) -> (Vec<Ack>, usize) {
    let mut acks = Vec::new();
    let mut conflicts = 0;
    for n in 1..=records {
        let record = event(writer, n);
        loop {
            let expected = block_on(ledger.tip(&s1())).expect("MemLedger tips cannot fail");
            match block_on(ledger.append(&s1(), expected, record.clone())) {
                Ok(seq) => {
                    acks.push(Ack {
                        expected,
                        seq,
                        record,
                    });
                    break;
                }
                Err(LedgerError::Conflict { .. }) => conflicts += 1,
                Err(other) => panic!("MemLedger append failed unexpectedly: {other}"),
            }
        }
    }
    (acks, conflicts)
}

fn event(writer: u64, n: u64) -> Record {
    Record::Event {
        writer_id: WriterId {
            owner: Owner::new(format!("writer-{writer}"), 0),
            journal: 1,
        },
        seq_in_writer: n,
        payload: Vec::new(),
    }
}

fn judge(acks: &[Ack], entries: &[leasesim::journal::Entry]) {
    for ack in acks {
        assert!(
            ack.seq == ack.expected + 1,
            "LEDGER: an append expecting tip {} was acknowledged at {}: a CAS commits at \
             expected + 1 or not at all",
            ack.expected,
            ack.seq
        );
    }
    for (index, entry) in entries.iter().enumerate() {
        assert!(
            entry.seq == index as Seq + 1,
            "LEDGER: position {} read back as {}: the ledger has a gap",
            index + 1,
            entry.seq
        );
    }
    let mut distinct = BTreeSet::new();
    for entry in entries {
        assert!(
            distinct.insert(format!("{:?}", entry.record)),
            "LEDGER: {:?} is in the ledger twice",
            entry.record
        );
    }
    for ack in acks {
        let committed = entries.get(ack.seq as usize - 1).map(|e| &e.record);
        assert!(
            committed == Some(&ack.record),
            "LEDGER: {:?} was acknowledged at {} but the ledger has {committed:?} there: a \
             lost append",
            ack.record,
            ack.seq
        );
    }
    assert!(
        entries.len() == acks.len(),
        "LEDGER: the ledger holds {} records but {} appends were acknowledged",
        entries.len(),
        acks.len()
    );
}

#[test]
fn two_writers_racing_cas_appends_lose_nothing_duplicate_nothing_and_leave_no_gap() {
    let conflicts = Sometimes::default();
    check(racing_appends_counting(2, 2, None, conflicts.clone()));
    conflicts.assert_reached("a CAS conflict");
}

#[test]
fn three_writers_racing_cas_appends_lose_nothing_duplicate_nothing_and_leave_no_gap() {
    check(racing_appends(3, 1, None));
}

#[test]
fn an_append_ignoring_the_expected_tip_is_killed_by_an_append_not_at_expected_plus_one() {
    assert_killed(
        "LEDGER",
        racing_appends(2, 1, Some(Mutant::AppendIgnoresExpectedTip)),
    );
}

//! LEDGER — each ledger is one CAS chain; every acknowledged append is in the final ledger
//! exactly once, at the acknowledged position, with the same record; nothing is overwritten.
//!
//! Judged from the final ledger and the `ok` op lines: the ledger's positions are exactly
//! 1…n, each once (a gap or a second record at one position breaks the chain); no record
//! appears twice; an acknowledged `ledger_append` committed at `expected + 1` and its record
//! is there; an acknowledged `journal_append` has its event (writer id, `seq_in_writer`) there;
//! an opened journal has its fence at `fence_seq`.

use super::{Check, Evidence, InvariantReport};
use leasesim_history::{HistRecord, History, Op, OpLine, OpResult, Outcome};

/// Whether a ledger record is the one an acknowledged op wrote.
type RecordTest<'a> = Box<dyn Fn(&HistRecord) -> bool + 'a>;

/// Checks LEDGER over `history`: first each session's chain on its own (positions, no record
/// twice), then every acknowledged write against it.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Ledger);
    let ledger = history.final_ledger();
    for (session, records) in &ledger {
        report.checks += 1;
        check_positions(&mut report, session, records);
        check_no_record_twice(&mut report, session, records);
    }
    let empty = Vec::new();
    for op in history.ops().filter(|op| op.outcome == Outcome::Ok) {
        check_append_position(&mut report, op);
        let Some((seq, matches)) = acknowledged(op) else {
            continue;
        };
        report.checks += 1;
        let records = ledger.get(&op.session).unwrap_or(&empty);
        check_acknowledged(&mut report, op, records, seq, &matches);
    }
    report
}

/// The positions are exactly 1…n, each once: the first one out of place is a second record at
/// a position (below its place) or a gap (above it).
fn check_positions(report: &mut InvariantReport, session: &str, records: &[(u64, HistRecord)]) {
    let mut seqs: Vec<u64> = records.iter().map(|(seq, _)| *seq).collect();
    seqs.sort_unstable();
    for (want, seq) in (1u64..).zip(&seqs) {
        if *seq != want {
            let problem = if *seq < want {
                format!("{session}: two records at seq {seq} (one overwrote the chain)")
            } else {
                format!("{session}: the chain has a gap: seq {want} is missing before {seq}")
            };
            report.violation(problem, vec![Evidence::seq(session, *seq)]);
            break;
        }
    }
}

/// No record is in the ledger twice (records are unique: writer id and sequence).
fn check_no_record_twice(
    report: &mut InvariantReport,
    session: &str,
    records: &[(u64, HistRecord)],
) {
    let mut seen: Vec<(&HistRecord, u64)> = Vec::new();
    for (seq, record) in records {
        if let Some((_, first)) = seen.iter().find(|(r, _)| *r == record) {
            report.violation(
                format!("{session}: the same record is at seq {first} and seq {seq}"),
                vec![Evidence::seq(session, *first), Evidence::seq(session, *seq)],
            );
        } else {
            seen.push((record, *seq));
        }
    }
}

/// An acknowledged `ledger_append` was acknowledged where its CAS commits: `expected + 1`.
fn check_append_position(report: &mut InvariantReport, op: &OpLine) {
    if let (Op::LedgerAppend { expected, .. }, Some(OpResult::Appended { seq })) =
        (&op.op, &op.result)
        && *seq != expected + 1
    {
        report.violation(
            format!(
                "{}: op {} appended at expected tip {expected} but was acknowledged at seq {seq}, not {}",
                op.session,
                op.id,
                expected + 1
            ),
            vec![Evidence::Op(op.id)],
        );
    }
}

/// Where an acknowledged write says its record is, and how to recognise that record: a ledger
/// append's record, a journal append's event (writer id, `seq_in_writer`), an opened journal's
/// fence. `None` for an op that writes nothing.
fn acknowledged(op: &OpLine) -> Option<(u64, RecordTest<'_>)> {
    debug_assert_eq!(
        op.outcome,
        Outcome::Ok,
        "only acknowledged writes are judged"
    );
    Some(match (&op.op, &op.result) {
        (Op::LedgerAppend { record, .. }, Some(OpResult::Appended { seq })) => {
            (*seq, Box::new(move |r: &HistRecord| r == record))
        }
        (
            Op::JournalAppend {
                writer_id,
                seq_in_writer,
            },
            Some(OpResult::Appended { seq }),
        ) => (
            *seq,
            Box::new(move |r: &HistRecord| {
                matches!(r, HistRecord::Event { writer_id: w, seq_in_writer: s, .. }
                    if w == writer_id && s == seq_in_writer)
            }),
        ),
        (
            Op::JournalOpen { epoch },
            Some(OpResult::Opened {
                writer_id,
                fence_seq,
            }),
        ) => (
            *fence_seq,
            Box::new(move |r: &HistRecord| {
                matches!(r, HistRecord::Fence { writer_id: w, epoch: e, .. }
                    if w == writer_id && e == epoch)
            }),
        ),
        _ => return None,
    })
}

/// The acknowledged record is at `seq`, and only there.
fn check_acknowledged(
    report: &mut InvariantReport,
    op: &OpLine,
    records: &[(u64, HistRecord)],
    seq: u64,
    matches: &RecordTest,
) {
    let here: Vec<&HistRecord> = records
        .iter()
        .filter(|(s, _)| *s == seq)
        .map(|(_, r)| r)
        .collect();
    let everywhere: Vec<u64> = records
        .iter()
        .filter(|(_, r)| matches(r))
        .map(|(s, _)| *s)
        .collect();
    if !here.iter().any(|r| matches(r)) {
        let mut evidence = vec![Evidence::Op(op.id)];
        evidence.extend(here.iter().map(|_| Evidence::seq(&op.session, seq)));
        evidence.extend(everywhere.iter().map(|s| Evidence::seq(&op.session, *s)));
        let found = if here.is_empty() {
            "nothing is there".to_string()
        } else {
            "another record is there".to_string()
        };
        let elsewhere = if everywhere.is_empty() {
            "it is nowhere in the ledger".to_string()
        } else {
            format!("it is at seq {everywhere:?}")
        };
        report.violation(
            format!(
                "{}: op {} ({}) was acknowledged at seq {seq} but {found}; {elsewhere}",
                op.session,
                op.id,
                op.op.name()
            ),
            evidence,
        );
    } else if everywhere.len() > 1 {
        let mut evidence = vec![Evidence::Op(op.id)];
        evidence.extend(everywhere.iter().map(|s| Evidence::seq(&op.session, *s)));
        report.violation(
            format!(
                "{}: op {} ({}) acknowledged at seq {seq} is in the ledger {} times, at seqs {everywhere:?}",
                op.session,
                op.id,
                op.op.name(),
                everywhere.len()
            ),
            evidence,
        );
    }
}

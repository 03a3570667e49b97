//! LEDGER — each ledger is one CAS chain; every acknowledged append is in the final ledger
//! exactly once, at the acknowledged position, with the same record; nothing is overwritten.
//!
//! Judged from the final ledger and the `ok` op lines: the ledger's positions are exactly
//! 1…n, each once (a gap or a second record at one position breaks the chain); no record
//! appears twice; an acknowledged `ledger_append` committed at `expected + 1` and its record
//! is there; an acknowledged `journal_append` has its event (writer id, `seq_in_writer`) there;
//! an opened journal has its fence at `fence_seq`.

use super::{Check, Evidence, InvariantReport};
use crate::history::{HistRecord, History, Op, OpResult, Outcome};

/// Whether a ledger record is the one an acknowledged op wrote.
type RecordTest<'a> = Box<dyn Fn(&HistRecord) -> bool + 'a>;

/// Checks LEDGER over `history`.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Ledger);
    let ledger = history.final_ledger();
    let empty = Vec::new();
    for (session, records) in &ledger {
        let mut seqs: Vec<u64> = records.iter().map(|(seq, _)| *seq).collect();
        seqs.sort_unstable();
        report.checks += 1;
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
    for op in history.ops() {
        if op.outcome != Outcome::Ok {
            continue;
        }
        let records = ledger.get(&op.session).unwrap_or(&empty);
        let at = |seq: u64| -> Vec<&HistRecord> {
            records
                .iter()
                .filter(|(s, _)| *s == seq)
                .map(|(_, r)| r)
                .collect()
        };
        let (seq, matches): (u64, RecordTest) = match (&op.op, &op.result) {
            (Op::LedgerAppend { expected, record }, Some(OpResult::Appended { seq })) => {
                if *seq != expected + 1 {
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
            _ => continue,
        };
        report.checks += 1;
        let here = at(seq);
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
    report
}

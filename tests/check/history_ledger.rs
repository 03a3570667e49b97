//! The CAS ledger model on hand-built histories read through `check_ledger_history`, and the
//! resolution of unknown-outcome appends against the final ledger.

use leasesim::check::linearizability::ledger::{LedgerCall, LedgerOutput};
use leasesim::check::linearizability::{Budget, Verdict, check_ledger_history, ledger_operations};
use leasesim::history::{
    HistRecord, HistWriterId, History, LedgerLine, Line, Op, OpResult, Outcome, Process,
};

use crate::support::{op_line, stuck_index};

const S: &str = "s1";

fn process(replica: &str) -> Process {
    Process::new(replica, 0)
}

/// Event `n` of replica's first journal.
fn event(replica: &str, n: u64) -> HistRecord {
    HistRecord::Event {
        writer_id: HistWriterId {
            owner: process(replica),
            journal: 1,
        },
        seq_in_writer: n,
        payload: vec![n as u8],
    }
}

fn tip(id: u64, replica: &str, window: (u64, u64), seq: u64) -> Line {
    op_line(
        id,
        process(replica),
        Op::LedgerTip {},
        window,
        Outcome::Ok,
        OpResult::Tip { seq },
    )
}

/// How an append was answered.
#[derive(Clone, Copy)]
enum Answered {
    /// Appended at `expected + 1`.
    Acked,
    /// Its outcome never learned (a timeout).
    TimedOut,
    /// Refused: the tip was `actual`, not the expected one.
    Conflict { actual: u64 },
}
use Answered::{Acked, Conflict, TimedOut};

/// An append by `replica` at `expected` over `window`, answered as `answered` says.
fn append(
    id: u64,
    replica: &str,
    window: (u64, u64),
    expected: u64,
    record: HistRecord,
    answered: Answered,
) -> Line {
    let (outcome, result) = match answered {
        Acked => (Outcome::Ok, OpResult::Appended { seq: expected + 1 }),
        TimedOut => (
            Outcome::Info,
            OpResult::Unknown {
                reason: "timeout".into(),
            },
        ),
        Conflict { actual } => (Outcome::Fail, OpResult::Conflict { actual }),
    };
    let op = Op::LedgerAppend { expected, record };
    op_line(id, process(replica), op, window, outcome, result)
}

fn final_record(seq: u64, record: HistRecord) -> Line {
    Line::Ledger(LedgerLine {
        session: S.into(),
        seq,
        record,
    })
}

fn verdict(lines: Vec<Line>) -> Verdict {
    verdict_of(&History::from_lines("hand", lines))
}

fn verdict_of(history: &History) -> Verdict {
    check_ledger_history(history, Budget::default()).unwrap()
}

/// replica-1's first append acknowledged at seq 1, its second (window 20–30 µs) with an
/// outcome it never learned, then `rest`.
fn with_an_unknown_second_append<const N: usize>(rest: [Line; N]) -> History {
    let mut lines = vec![
        append(1, "replica-1", (0, 10), 0, event("replica-1", 1), Acked),
        append(2, "replica-1", (20, 30), 1, event("replica-1", 2), TimedOut),
    ];
    lines.extend(rest);
    History::from_lines("hand", lines)
}

/// replica-1 (0–10 µs), then replica-2 (20–30 µs), both told their append committed at seq 1.
fn both_acked_at_seq_1() -> Vec<Line> {
    vec![
        append(1, "replica-1", (0, 10), 0, event("replica-1", 1), Acked),
        append(2, "replica-2", (20, 30), 0, event("replica-2", 1), Acked),
    ]
}

#[test]
fn two_writers_racing_for_one_position_are_linearizable() {
    let lines = vec![
        tip(1, "replica-1", (0, 10), 0),
        append(2, "replica-1", (20, 30), 0, event("replica-1", 1), Acked),
        append(
            3,
            "replica-2",
            (25, 40),
            0,
            event("replica-2", 1),
            Conflict { actual: 1 },
        ),
        tip(4, "replica-2", (50, 60), 1),
        append(5, "replica-2", (70, 80), 1, event("replica-2", 1), Acked),
        final_record(1, event("replica-1", 1)),
        final_record(2, event("replica-2", 1)),
    ];
    assert_eq!(verdict(lines), Verdict::Linearizable);
}

/// An explanation names the replicas, as the rest of the output does, never the engine's
/// process numbers; the tip reads the checker adds are its own.
#[test]
fn an_explanation_names_replicas_not_process_numbers() {
    let mut lines = both_acked_at_seq_1();
    lines.push(final_record(1, event("replica-2", 1)));
    let Verdict::NotLinearizable(explanation) = verdict(lines) else {
        panic!("not linearizable");
    };
    let text = explanation.to_string();
    assert!(text.contains("replica-"), "{text}");
    assert!(!text.contains("process "), "{text}");
}

#[test]
fn an_acknowledged_append_missing_from_the_chain_is_not_linearizable() {
    // replica-1 was told its record committed at 1, but the final ledger holds replica-2's.
    let mut lines = both_acked_at_seq_1();
    lines.push(final_record(1, event("replica-2", 1)));
    let v = verdict(lines);
    assert!(matches!(v, Verdict::NotLinearizable(_)), "{v:?}");
    // Without replica-2's append the chain would still be short of the final ledger.
    let lines = vec![append(
        1,
        "replica-1",
        (0, 10),
        0,
        event("replica-1", 1),
        Acked,
    )];
    assert_eq!(
        verdict(lines.clone()),
        Verdict::Linearizable,
        "no final ledger: nothing to compare with"
    );
    let mut with_empty_chain = lines;
    with_empty_chain.push(final_record(1, event("replica-2", 1)));
    assert_eq!(stuck_index(&verdict(with_empty_chain)), 0);
}

#[test]
fn two_acknowledged_appends_at_one_position_are_not_linearizable() {
    let lines = both_acked_at_seq_1();
    let v = verdict(lines);
    assert_eq!(stuck_index(&v), 1, "{v:?}");
}

#[test]
fn a_tip_read_that_goes_backwards_is_not_linearizable() {
    let lines = vec![
        append(1, "replica-1", (0, 10), 0, event("replica-1", 1), Acked),
        tip(2, "replica-2", (20, 30), 1),
        tip(3, "replica-2", (40, 50), 0),
        final_record(1, event("replica-1", 1)),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 2);
}

#[test]
fn a_conflict_naming_the_wrong_tip_is_not_linearizable() {
    let lines = vec![
        append(1, "replica-1", (0, 10), 0, event("replica-1", 1), Acked),
        append(
            2,
            "replica-2",
            (20, 30),
            0,
            event("replica-2", 1),
            Conflict { actual: 3 },
        ),
        final_record(1, event("replica-1", 1)),
    ];
    assert_eq!(stuck_index(&verdict(lines)), 1);
}

#[test]
fn an_unknown_append_found_in_the_final_ledger_becomes_ok_at_its_seq() {
    let history = with_an_unknown_second_append([
        tip(3, "replica-2", (40, 50), 2),
        final_record(1, event("replica-1", 1)),
        final_record(2, event("replica-1", 2)),
    ]);
    let ops = ledger_operations(&history).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (1, 0, 0));
    assert_eq!(ops.op_ids, [Some(1), Some(2), Some(3), None]);
    assert_eq!(ops.ops[1].output, Some(LedgerOutput::Appended(2)));
    // The added final read returns the final ledger's length, after everything.
    assert_eq!(ops.ops[3].input.call, LedgerCall::Tip);
    assert_eq!(ops.ops[3].output, Some(LedgerOutput::Tip(2)));
    assert_eq!(ops.ops[3].call, 51);
    assert_eq!(verdict_of(&history), Verdict::Linearizable);
}

#[test]
fn an_unknown_append_absent_from_the_final_ledger_is_dropped() {
    let history = with_an_unknown_second_append([
        tip(3, "replica-2", (40, 50), 1),
        final_record(1, event("replica-1", 1)),
    ]);
    let ops = ledger_operations(&history).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (0, 1, 0));
    assert_eq!(ops.op_ids, [Some(1), Some(3), None]);
    assert_eq!(verdict_of(&history), Verdict::Linearizable);
}

#[test]
fn an_unknown_append_without_a_final_ledger_stays_unknown_and_the_verdict_is_linearizable() {
    let history = with_an_unknown_second_append([
        tip(3, "replica-2", (40, 50), 2),
        tip(4, "replica-2", (60, 70), 2),
    ]);
    let ops = ledger_operations(&history).unwrap();
    assert_eq!((ops.resolved, ops.dropped, ops.unknown), (0, 0, 1));
    assert_eq!(ops.ops[1].output, None);
    assert_eq!(verdict_of(&history), Verdict::Linearizable);
}

#[test]
fn a_history_that_does_not_validate_is_an_error() {
    let lines = vec![
        tip(1, "replica-1", (0, 10), 0),
        tip(1, "replica-2", (0, 10), 0),
    ];
    let error =
        check_ledger_history(&History::from_lines("hand", lines), Budget::default()).unwrap_err();
    assert!(
        error.to_string().contains("op id 1 is already used"),
        "{error}"
    );
}

//! Mermaid `sequenceDiagram`s of a history (GitHub renders them in Markdown).
//!
//! Participants: the replicas (one per process, i.e. replica and incarnation, in replica
//! order), then `lease` and `ledger`. Each operation is a request arrow at its invocation and
//! a reply arrow (`-->>`) at its completion carrying the outcome (`Granted token 2`,
//! `Conflict tip=5`); an operation still pending has no reply. Notes show the phase markers
//! and the clock faults the history records (restarts, suspends, drift). Events are ordered
//! by true time, then by kind and op id, so the text is deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use leasesim_history::hosts;
use leasesim_history::{
    HistLossCause, HistRecord, HistWriterId, History, Op, OpLine, OpResult, Outcome, Phase, Process,
};

/// One line of the diagram: (true time µs, rank at that instant, op id or tie-break, text,
/// whether it is a message arrow).
type Event = (u64, u8, u64, String, bool);

/// The rank of a violation note among events at one instant: after everything else.
const MARK: u8 = 4;

/// The diagram of `history`: only the operations of `session` when given, at most
/// `max_messages` arrows (requests and replies). When there are more, the window kept ends
/// just after the last operation named by `violation` (or at the start when there is none),
/// and notes say how many were left out.
pub fn sequence_diagram(history: &History, session: Option<&str>, max_messages: usize) -> String {
    sequence_diagram_marked(history, session, max_messages, &[], "")
}

/// [`sequence_diagram`], with a `Note over` after the reply of each operation in `marked`
/// (op ids, e.g. a violation's evidence) saying `label` (e.g. `FENCE violated`).
pub fn sequence_diagram_marked(
    history: &History,
    session: Option<&str>,
    max_messages: usize,
    marked: &[u64],
    label: &str,
) -> String {
    let ops = drawn_ops(history, session);
    let mut processes: Vec<&Process> = ops.iter().map(|op| &op.process).collect();
    processes.sort_by(|a, b| process_order(a, b));
    processes.dedup();
    let ids: BTreeMap<&Process, String> = processes
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, format!("r{}", i + 1)))
        .collect();

    // (true time, rank, tie-break, text, is a message)
    let mut events: Vec<Event> = Vec::new();
    let marked: BTreeSet<u64> = marked.iter().copied().collect();
    for op in &ops {
        op_events(
            op,
            &ids[&op.process],
            marked.contains(&op.id),
            label,
            &mut events,
        );
    }
    let first = processes.first().map_or(hosts::LEASE, |p| ids[p].as_str());
    phase_notes(history, first, &mut events);
    clock_notes(history, &ids, &mut events);
    events.sort();
    render_diagram(&processes, &ids, first, &events, max_messages, &marked)
}

/// The operations drawn: those of `session` (all when `None`), without the ledger appends a
/// journal append made (the journal append stands for them).
fn drawn_ops<'h>(history: &'h History, session: Option<&str>) -> Vec<&'h OpLine> {
    let ops: Vec<&OpLine> = history
        .ops()
        .filter(|op| session.is_none_or(|s| op.session == s))
        .collect();
    // `(writer, seq_in_writer)` of every journal append: their ledger appends are not
    // drawn twice.
    let nested: BTreeSet<(&HistWriterId, u64)> =
        ops.iter().filter_map(|op| op.op.journal_append()).collect();
    ops.into_iter()
        .filter(|op| !is_nested(op, &nested))
        .collect()
}

/// An operation's request, its reply (if it completed) and, when `marked`, a note saying
/// `label` after the reply. `me` is the caller's participant id.
fn op_events(op: &OpLine, me: &str, marked: bool, label: &str, events: &mut Vec<Event>) {
    let target = target(&op.op);
    // At one instant, replies come before new requests (a reply arrives, then the next
    // call goes out), but an op's own reply after its request.
    events.push((
        op.invoke_us,
        2,
        op.id,
        format!(
            "{me}->>{target}: {}",
            escape(&format!("{} {}", seconds(op.invoke_us), request(op)))
        ),
        true,
    ));
    if let (Some(complete_us), Some(result)) = (op.complete_us, &op.result) {
        events.push((
            complete_us,
            if complete_us > op.invoke_us { 1 } else { 3 },
            op.id,
            format!(
                "{target}-->>{me}: {}",
                escape(&reply(op.outcome, result, op.id))
            ),
            true,
        ));
    }
    if marked {
        let at = op.complete_us.unwrap_or(op.invoke_us);
        let text = if label.is_empty() {
            format!("violation: op {}", op.id)
        } else {
            format!("{label}: op {}", op.id)
        };
        events.push((
            at,
            MARK,
            op.id,
            format!("Note over {me}: {}", escape(&text)),
            false,
        ));
    }
}

/// A note over every participant (from `first` to `ledger`) at each phase marker.
fn phase_notes(history: &History, first: &str, events: &mut Vec<Event>) {
    for phase in history.phases() {
        let name = match phase.name {
            Phase::FaultsHealed => "faults healed",
            Phase::RunEnded => "run ended",
        };
        events.push((
            phase.at_us,
            0,
            0,
            format!(
                "Note over {first},ledger: {}",
                escape(&format!("{} {name}", seconds(phase.at_us)))
            ),
            false,
        ));
    }
}

/// The diagram's text: participants, then the sorted `events` of the window kept (at most
/// `max_messages` messages), with notes counting the messages left out before and after.
fn render_diagram(
    processes: &[&Process],
    ids: &BTreeMap<&Process, String>,
    first: &str,
    events: &[Event],
    max_messages: usize,
    marked: &BTreeSet<u64>,
) -> String {
    let messages = events.iter().filter(|e| e.4).count();
    let (start, end) = window(events, max_messages, marked);
    let before = events[..start].iter().filter(|e| e.4).count();
    let after = messages - before - events[start..end].iter().filter(|e| e.4).count();

    let mut out = String::from("sequenceDiagram\n");
    for process in processes {
        let _ = writeln!(
            out,
            "    participant {} as {}",
            ids[process],
            escape(&process_name(process))
        );
    }
    out.push_str("    participant lease\n    participant ledger\n");
    if before > 0 {
        let _ = writeln!(
            out,
            "    Note over {first},ledger: {before} earlier messages left out"
        );
    }
    for event in &events[start..end] {
        let _ = writeln!(out, "    {}", event.3);
    }
    if after > 0 {
        let _ = writeln!(
            out,
            "    Note over {first},ledger: {after} later messages left out"
        );
    }
    out
}

/// The slice of `events` to draw: at most `max` messages, ending after the last marked
/// operation's events when there is one.
fn window(events: &[Event], max: usize, marked: &BTreeSet<u64>) -> (usize, usize) {
    let total = events.iter().filter(|e| e.4).count();
    if total <= max {
        return (0, events.len());
    }
    let last_marked = events
        .iter()
        .rposition(|e| e.1 == MARK && marked.contains(&e.2));
    match last_marked {
        Some(end) => {
            let end = end + 1;
            let mut start = end;
            let mut kept = 0;
            while start > 0 && (kept < max || !events[start - 1].4) {
                if events[start - 1].4 {
                    kept += 1;
                }
                start -= 1;
            }
            (start, end)
        }
        None => {
            let mut end = 0;
            let mut kept = 0;
            while end < events.len() && (kept < max || !events[end].4) {
                if events[end].4 {
                    kept += 1;
                }
                end += 1;
            }
            (0, end)
        }
    }
}

fn is_nested(op: &OpLine, nested: &BTreeSet<(&HistWriterId, u64)>) -> bool {
    match &op.op {
        Op::LedgerAppend {
            record:
                HistRecord::Event {
                    writer_id,
                    seq_in_writer,
                    ..
                },
            ..
        } => nested.contains(&(writer_id, *seq_in_writer)),
        _ => false,
    }
}

/// Replicas in natural order (`replica-2` before `replica-10`), then incarnation.
fn process_order(a: &Process, b: &Process) -> std::cmp::Ordering {
    natural_key(&a.replica)
        .cmp(&natural_key(&b.replica))
        .then(a.incarnation.cmp(&b.incarnation))
}

fn natural_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (
        stem.to_owned(),
        number.parse().unwrap_or(0),
        name.to_owned(),
    )
}

fn process_name(process: &Process) -> String {
    if process.incarnation == 0 {
        process.replica.clone()
    } else {
        format!("{} (incarnation {})", process.replica, process.incarnation)
    }
}

fn target(op: &Op) -> &'static str {
    match op {
        Op::LeaseAcquire { .. } | Op::LeaseRenew { .. } | Op::LeaseRelease { .. } => hosts::LEASE,
        _ => hosts::LEDGER,
    }
}

/// Seconds of true time with ms precision: `12.345s`.
fn seconds(us: u64) -> String {
    format!("{}.{:03}s", us / 1_000_000, us % 1_000_000 / 1_000)
}

pub(super) fn request(op: &OpLine) -> String {
    let session = &op.session;
    match &op.op {
        Op::LeaseAcquire { .. } => format!("acquire {session}"),
        Op::LeaseRenew { token, .. } => format!("renew {session} token {token}"),
        Op::LeaseRelease { token, .. } => format!("release {session} token {token}"),
        Op::LedgerTip {} => format!("tip {session}"),
        Op::LedgerAppend { expected, record } => match record {
            HistRecord::Fence { epoch, .. } => format!("append fence {epoch} @{expected}"),
            HistRecord::Event {
                writer_id,
                seq_in_writer,
                ..
            } => format!(
                "append event w{}.{seq_in_writer} @{expected}",
                writer_id.journal
            ),
        },
        Op::JournalOpen { epoch } => format!("open {session} epoch {epoch}"),
        Op::JournalAppend {
            writer_id,
            seq_in_writer,
        } => format!("journal append w{}.{seq_in_writer}", writer_id.journal),
        Op::KubeGet {} => format!("get lease {session}"),
        Op::KubeCreate {
            holder_identity,
            transitions,
        } => format!("create lease {session} holder {holder_identity:?} transitions {transitions}"),
        Op::KubeUpdate {
            expected_rv,
            holder_identity,
            transitions,
        } => {
            let rv =
                expected_rv.map_or_else(|| "unconditional".to_owned(), |rv| format!("rv {rv}"));
            format!(
                "update lease {session} ({rv}) holder {holder_identity:?} transitions {transitions}"
            )
        }
        Op::KubeDelete { expected_rv } => match expected_rv {
            Some(rv) => format!("delete lease {session} (rv {rv})"),
            None => format!("delete lease {session} (unconditional)"),
        },
        Op::TargetGet {} => format!("adapter gets lease {session}"),
        Op::TargetSignal {} => format!("signal of {session} changed"),
    }
}

pub(super) fn reply(outcome: Outcome, result: &OpResult, id: u64) -> String {
    let text = match result {
        OpResult::Granted { token, .. } => format!("Granted token {token}"),
        OpResult::Released {} => "Released".to_owned(),
        OpResult::Held {
            holder_token: Some(token),
        } => format!("Held by token {token}"),
        OpResult::Held { holder_token: None } => "Held".to_owned(),
        OpResult::Unsupported {} => "Unsupported".to_owned(),
        OpResult::Unavailable { reason } => format!("Unavailable ({})", short(reason)),
        OpResult::Invalid { reason } => format!("Invalid ({})", short(reason)),
        OpResult::Tip { seq } => format!("Tip {seq}"),
        OpResult::Appended { seq } => format!("Appended at {seq}"),
        OpResult::Conflict { actual } => format!("Conflict tip={actual}"),
        OpResult::Unknown { reason } => format!("Unknown ({})", short(reason)),
        OpResult::Opened { fence_seq, .. } => format!("Opened, fence at {fence_seq}"),
        OpResult::StaleEpoch {
            epoch,
            highest_fence,
        } => format!("StaleEpoch {epoch} (highest fence {highest_fence})"),
        OpResult::FenceContention { attempts } => format!("FenceContention x{attempts}"),
        OpResult::Fenced { expected, actual } => {
            format!("Fenced (expected {expected} tip={actual})")
        }
        OpResult::Ambiguous { expected, .. } => format!("Ambiguous @{expected}"),
        OpResult::LeaseLost { cause } => match cause {
            HistLossCause::Released {} => "LeaseLost (released)".to_owned(),
            HistLossCause::Overtaken { holder_token } => match holder_token {
                Some(token) => format!("LeaseLost (overtaken by token {token})"),
                None => "LeaseLost (overtaken)".to_owned(),
            },
            HistLossCause::Deadline {
                valid_until_local_us,
            } => format!(
                "LeaseLost (deadline {} local)",
                seconds(*valid_until_local_us)
            ),
        },
        OpResult::Poisoned { .. } => "Poisoned".to_owned(),
        OpResult::CutOff { .. } => "cut off".to_owned(),
        OpResult::KubeObject {
            resource_version,
            holder_identity,
            transitions,
        } => format!(
            "Lease rv {resource_version} holder {holder_identity:?} transitions {transitions}"
        ),
        OpResult::KubeNotFound {} => "404 Not Found".to_owned(),
        OpResult::KubeConflict {} => "409 Conflict".to_owned(),
        OpResult::KubeStatus { code, reason } => format!("{code} {}", short(reason)),
        OpResult::Signal { leads: true } => "I lead".to_owned(),
        OpResult::Signal { leads: false } => "I do not lead".to_owned(),
    };
    let outcome = match outcome {
        Outcome::Ok => "",
        Outcome::Fail => " [fail]",
        Outcome::Info => " [info]",
    };
    format!("{text}{outcome} (op {id})")
}

/// A reason cut to its first 40 characters.
fn short(reason: &str) -> String {
    let mut cut: String = reason.chars().take(40).collect();
    if cut.len() < reason.len() {
        cut.push('…');
    }
    cut
}

/// Notes for clock segments that are faults: restarts, suspends, drift (not a host's first
/// plain segment).
fn clock_notes(history: &History, ids: &BTreeMap<&Process, String>, events: &mut Vec<Event>) {
    let mut previous: BTreeMap<&str, (u64, bool, i64)> = BTreeMap::new();
    for segment in history.clock_segments() {
        let before = previous.insert(
            &segment.host,
            (segment.boot, segment.suspended, segment.drift_ppm),
        );
        let participant = match segment.host.as_str() {
            hosts::LEASE | hosts::LEDGER => Some(segment.host.clone()),
            host => ids
                .iter()
                .find(|(p, _)| p.replica == host && p.incarnation == segment.boot)
                .or_else(|| ids.iter().find(|(p, _)| p.replica == host))
                .map(|(_, id)| id.clone()),
        };
        let Some(participant) = participant else {
            continue;
        };
        let (boot, suspended, drift) = before.unwrap_or((0, false, 0));
        let mut what = Vec::new();
        if segment.boot > boot {
            what.push(format!(
                "{} restarted (boot {})",
                segment.host, segment.boot
            ));
        }
        if segment.suspended && !suspended {
            what.push(format!("{} suspended", segment.host));
        }
        if !segment.suspended && suspended && segment.boot == boot {
            what.push(format!("{} resumed", segment.host));
        }
        if segment.drift_ppm != drift {
            what.push(format!("{} drift {} ppm", segment.host, segment.drift_ppm));
        }
        if what.is_empty() {
            continue;
        }
        events.push((
            segment.from_us,
            0,
            1,
            format!(
                "Note over {participant}: {}",
                escape(&format!("{} {}", seconds(segment.from_us), what.join(", ")))
            ),
            false,
        ));
    }
}

/// Text safe in a mermaid message or note: `;` `#` `:` `<` `>` `"` and braces become
/// entity codes (`#59;`…); line breaks become spaces.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            ';' | '#' | ':' | '<' | '>' | '"' | '{' | '}' | '%' | '`' => {
                let _ = write!(out, "#{};", u32::from(c));
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_history::{ClockLine, Line, OpLine, PhaseLine};

    fn op(
        id: u64,
        replica: &str,
        (invoke_us, complete_us): (u64, Option<u64>),
        call: Op,
        outcome: Outcome,
        result: Option<OpResult>,
    ) -> Line {
        Line::Op(OpLine {
            id,
            process: Process::new(replica, 0),
            session: "s1".into(),
            op: call,
            invoke_us,
            complete_us,
            invoke_local_us: invoke_us,
            complete_local_us: complete_us,
            outcome,
            result,
        })
    }

    /// `owner`'s acquire, invoked and completed `at`, granted `token` for 10 s from the
    /// invocation.
    fn acquire(id: u64, owner: &Process, at: (u64, Option<u64>), token: u64) -> Line {
        let granted = OpResult::Granted {
            token,
            expiry_authority_us: at.0 + 10_000_000,
            ttl_us: 10_000_000,
        };
        let call = Op::LeaseAcquire {
            owner: owner.clone(),
        };
        op(id, &owner.replica, at, call, Outcome::Ok, Some(granted))
    }

    /// A ledger append at tip `expected` of `writer`'s event `seq_in_writer`.
    fn event_append(expected: u64, writer: HistWriterId, seq_in_writer: u64) -> Op {
        let record = HistRecord::Event {
            writer_id: writer,
            seq_in_writer,
            payload: Vec::new(),
        };
        Op::LedgerAppend { expected, record }
    }

    /// The history's operations: A's (before the takeover), then B's takeover, A's stale
    /// append refused, and B's renew left without a reply.
    fn ops() -> Vec<Line> {
        let a = Process::new("replica-1", 0);
        let writer = HistWriterId {
            owner: a.clone(),
            journal: 1,
        };
        let mut lines = holder_ops(&a, &writer);
        lines.extend(takeover_ops(writer));
        lines
    }

    /// A's acquire and journal append, with the append's own ledger call.
    fn holder_ops(a: &Process, writer: &HistWriterId) -> Vec<Line> {
        vec![
            acquire(1, a, (0, Some(1_000)), 1),
            op(
                2,
                "replica-1",
                (2_000, Some(3_000)),
                Op::JournalAppend {
                    writer_id: writer.clone(),
                    seq_in_writer: 1,
                },
                Outcome::Ok,
                Some(OpResult::Appended { seq: 2 }),
            ),
            // The journal append's own ledger call: not drawn twice.
            op(
                3,
                "replica-1",
                (2_100, Some(2_900)),
                event_append(1, writer.clone(), 1),
                Outcome::Ok,
                Some(OpResult::Appended { seq: 2 }),
            ),
        ]
    }

    /// B's takeover, A's stale append refused, B's renew left without a reply.
    fn takeover_ops(writer: HistWriterId) -> Vec<Line> {
        let b = Process::new("replica-2", 0);
        vec![
            acquire(4, &b, (12_000_000, Some(12_001_000)), 2),
            op(
                5,
                "replica-1",
                (17_000_000, Some(17_001_000)),
                event_append(2, writer, 2),
                Outcome::Fail,
                Some(OpResult::Conflict { actual: 4 }),
            ),
            op(
                6,
                "replica-2",
                (18_000_000, None),
                Op::LeaseRenew { owner: b, token: 2 },
                Outcome::Info,
                None,
            ),
        ]
    }

    /// A's clock: running, suspended from 2 s to 17 s, running again.
    fn clocks() -> Vec<Line> {
        vec![
            Line::Clock(ClockLine {
                host: "replica-1".into(),
                boot: 0,
                from_us: 0,
                local_from_us: 0,
                drift_ppm: 0,
                suspended: false,
            }),
            Line::Clock(ClockLine {
                host: "replica-1".into(),
                boot: 0,
                from_us: 2_000_000,
                local_from_us: 2_000_000,
                drift_ppm: 0,
                suspended: true,
            }),
            Line::Clock(ClockLine {
                host: "replica-1".into(),
                boot: 0,
                from_us: 17_000_000,
                local_from_us: 2_000_000,
                drift_ppm: 0,
                suspended: false,
            }),
        ]
    }

    fn history() -> History {
        let mut lines = ops();
        lines.extend(clocks());
        lines.push(Line::Phase(PhaseLine {
            name: Phase::FaultsHealed,
            at_us: 20_000_000,
        }));
        History::from_lines("h", lines)
    }

    #[test]
    fn diagram_text() {
        let text = sequence_diagram_marked(&history(), Some("s1"), 100, &[5], "FENCE violated");
        let expected = "\
sequenceDiagram
    participant r1 as replica-1
    participant r2 as replica-2
    participant lease
    participant ledger
    r1->>lease: 0.000s acquire s1
    lease-->>r1: Granted token 1 (op 1)
    r1->>ledger: 0.002s journal append w1.1
    ledger-->>r1: Appended at 2 (op 2)
    Note over r1: 2.000s replica-1 suspended
    r2->>lease: 12.000s acquire s1
    lease-->>r2: Granted token 2 (op 4)
    Note over r1: 17.000s replica-1 resumed
    r1->>ledger: 17.000s append event w1.2 @2
    ledger-->>r1: Conflict tip=4 [fail] (op 5)
    Note over r1: FENCE violated#58; op 5
    r2->>lease: 18.000s renew s1 token 2
    Note over r1,ledger: 20.000s faults healed
";
        assert_eq!(text, expected);
    }

    #[test]
    fn long_diagrams_keep_the_window_up_to_the_violation() {
        let text = sequence_diagram_marked(&history(), None, 3, &[4], "EXCL violated");
        assert!(text.contains("    Note over r1,ledger: 3 earlier messages left out\n"));
        assert!(text.contains("lease-->>r2: Granted token 2 (op 4)\n"));
        assert!(text.contains("Note over r2: EXCL violated#58; op 4\n"));
        assert!(text.contains("    Note over r1,ledger: 3 later messages left out\n"));
        assert!(!text.contains("op 5"));
        // Without a mark: the first messages.
        let text = sequence_diagram(&history(), None, 2);
        assert!(text.contains("lease-->>r1: Granted token 1 (op 1)\n"));
        assert!(text.contains("7 later messages left out"));
    }

    #[test]
    fn escapes_what_mermaid_chokes_on() {
        assert_eq!(escape("a;b#c:d\ne<f>"), "a#59;b#35;c#58;d e#60;f#62;");
    }
}

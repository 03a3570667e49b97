//! The merge of a live run's per-process files into one history (the contract is in
//! [`crate::live`], "The merge"): the orchestrator's `config` line; every operation,
//! renumbered from 1 in order of (`invoke_us`, file, id), the last line of an id winning, one
//! still pending completed at its process's end as `info`, cut off; then decisions, validity
//! checks, events, writes and nemesis lines by `at_us` (ties in file order); the `phase`
//! lines; every `clock` line by host, boot and `from_us`; the final ledger (of the last
//! ledger boot that wrote one). A torn last line is dropped and reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::lines::{LineFileError, read_line_file};
use crate::history::{History, HistoryError, Line, OpResult, Outcome};

/// One process incarnation's file, and how the process ended.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ProcessFile {
    /// Its host (`lease`, `ledger`, `replica-1`, …).
    pub host: String,
    /// Its boot or incarnation.
    pub boot: u64,
    /// `processes/HOST-BOOT.jsonl`.
    pub path: PathBuf,
    /// True time it ended (killed, exited, or the run's end), µs: a pending operation of it
    /// completes here.
    pub end_us: u64,
    /// What ended it (`crash`, `run ended`): the cut-off operations' reason.
    pub end: String,
}

/// A merged history and what the merge had to leave out.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Merged {
    /// The history's lines.
    pub lines: Vec<Line>,
    /// Files whose torn last line was dropped, with its length in bytes.
    pub torn: Vec<(PathBuf, usize)>,
    /// Files that do not exist (a process killed before it created its file).
    pub missing: Vec<PathBuf>,
    /// Operations completed as cut off.
    pub cut_off: usize,
}

/// The merge failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// A file is unreadable or damaged (not merely torn).
    #[error(transparent)]
    File(#[from] LineFileError),
    /// The orchestrator's file has no `config` line.
    #[error("{0}: no config line (the orchestrator writes it first)")]
    NoConfig(PathBuf),
    /// The merged lines are not a valid history: a process wrote something wrong.
    #[error("the merged history is invalid: {0}")]
    Invalid(HistoryError),
}

/// Reads and merges the orchestrator's file and `processes` (in the order given: that is the
/// file order of ties).
///
/// # Errors
/// [`MergeError`]: a damaged file, no config line, or a merged history that does not
/// [`History::validate`].
pub fn merge_files(orchestrator: &Path, processes: &[ProcessFile]) -> Result<Merged, MergeError> {
    let mut torn = Vec::new();
    let mut missing = Vec::new();
    let own = read_line_file(orchestrator)?;
    if let Some(bytes) = own.torn_tail_bytes {
        torn.push((orchestrator.to_owned(), bytes));
    }
    let mut files = Vec::new();
    for process in processes {
        if !process.path.exists() {
            missing.push(process.path.clone());
            continue;
        }
        let contents = read_line_file(&process.path)?;
        if let Some(bytes) = contents.torn_tail_bytes {
            torn.push((process.path.clone(), bytes));
        }
        files.push((process.clone(), contents.lines));
    }
    if !own.lines.iter().any(|l| matches!(l, Line::Config(_))) {
        return Err(MergeError::NoConfig(orchestrator.to_owned()));
    }
    let (lines, cut_off) = merge_lines(own.lines, files);
    History::from_lines("history.jsonl", lines.clone())
        .validate()
        .map_err(MergeError::Invalid)?;
    Ok(Merged {
        lines,
        torn,
        missing,
        cut_off,
    })
}

/// When a line merged by its one true time happened, µs; `None` for the lines merged
/// otherwise (config, ops, phases, clocks, ledger).
fn timed_at(line: &Line) -> Option<u64> {
    match line {
        Line::Decision(d) => Some(d.at_us),
        Line::Validity(v) => Some(v.at_us),
        Line::Event(e) => Some(e.at_us),
        Line::Write(w) => Some(w.at_us),
        Line::Nemesis(n) => Some(n.at_us),
        Line::Work(w) => Some(w.at_us),
        _ => None,
    }
}

/// The merge itself, on lines already read: the orchestrator's lines (config, phases,
/// nemesis) and each process's, in file order. Returns the lines and how many operations
/// were cut off.
pub fn merge_lines(
    orchestrator: Vec<Line>,
    processes: Vec<(ProcessFile, Vec<Line>)>,
) -> (Vec<Line>, usize) {
    let mut config = None;
    let mut phases = Vec::new();
    let mut timed = Vec::new();
    let mut clocks = Vec::new();
    let mut ops = Vec::new();
    let mut ledger: Option<Vec<Line>> = None;
    let mut cut_off = 0;
    let take_timed = |line: Line, timed: &mut Vec<(u64, Line)>| {
        if let Some(at) = timed_at(&line) {
            timed.push((at, line));
        }
    };
    for line in orchestrator {
        match line {
            Line::Config(c) if config.is_none() => config = Some(Line::Config(c)),
            Line::Phase(p) => phases.push(Line::Phase(p)),
            Line::Clock(c) => clocks.push(c),
            other => take_timed(other, &mut timed),
        }
    }
    for (file_index, (process, lines)) in processes.into_iter().enumerate() {
        // id → the last line of that id, in first-seen order.
        let mut by_id = BTreeMap::new();
        let mut file_ledger = Vec::new();
        for line in lines {
            match line {
                Line::Op(op) => {
                    by_id.insert(op.id, op);
                }
                Line::Clock(c) => clocks.push(c),
                Line::Ledger(l) => file_ledger.push(Line::Ledger(l)),
                // The orchestrator's config and phases are the run's; a process's are not.
                Line::Config(_) | Line::Phase(_) => {}
                other => take_timed(other, &mut timed),
            }
        }
        for (id, mut op) in by_id {
            if op.is_pending() {
                op.complete_us = Some(process.end_us.max(op.invoke_us));
                op.complete_local_us = None;
                op.outcome = Outcome::Info;
                op.result = Some(OpResult::CutOff {
                    reason: process.end.clone(),
                });
                cut_off += 1;
            }
            ops.push(((op.invoke_us, file_index, id), op));
        }
        if !file_ledger.is_empty() {
            ledger = Some(file_ledger);
        }
    }
    ops.sort_by_key(|(key, _)| *key);
    // Stable: ties keep file order.
    timed.sort_by_key(|(at, _)| *at);
    clocks.sort_by(|a, b| (&a.host, a.boot, a.from_us).cmp(&(&b.host, b.boot, b.from_us)));
    let mut lines = Vec::new();
    lines.extend(config);
    lines.extend(ops.into_iter().zip(1u64..).map(|((_, mut op), id)| {
        op.id = id;
        Line::Op(op)
    }));
    lines.extend(timed.into_iter().map(|(_, line)| line));
    lines.extend(phases);
    lines.extend(clocks.into_iter().map(Line::Clock));
    lines.extend(ledger.unwrap_or_default());
    (lines, cut_off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{
        ClockLine, ConfigLine, HistRecord, LedgerLine, NemesisAction, NemesisLine, Op, OpLine,
        Phase, PhaseLine, Process,
    };
    use crate::live::lines::LineFile;

    fn config() -> Line {
        Line::Config(ConfigLine {
            ttl_us: 2_000_000,
            skew_margin_us: 200_000,
            renew_interval_us: 666_666,
            longest_reconnect_backoff_us: 500_000,
            grace_period_us: 2_000_000,
            mutant: None,
            seed: 1,
            replicas: 2,
            sessions: vec!["s1".into()],
            authority: Some("lease".into()),
        })
    }

    fn clock(host: &str, boot: u64, from_us: u64) -> Line {
        Line::Clock(ClockLine {
            host: host.into(),
            boot,
            from_us,
            local_from_us: 7,
            drift_ppm: 0,
            suspended: false,
        })
    }

    fn tip(id: u64, replica: &str, invoke_us: u64, complete_us: Option<u64>) -> Line {
        Line::Op(OpLine {
            id,
            process: Process {
                replica: replica.into(),
                incarnation: 0,
            },
            session: "s1".into(),
            op: Op::LedgerTip {},
            invoke_us,
            complete_us,
            invoke_local_us: invoke_us,
            complete_local_us: complete_us,
            outcome: if complete_us.is_some() {
                Outcome::Ok
            } else {
                Outcome::Info
            },
            result: complete_us.map(|_| OpResult::Tip { seq: 0 }),
        })
    }

    fn process(host: &str, end_us: u64) -> ProcessFile {
        ProcessFile {
            host: host.into(),
            boot: 0,
            path: PathBuf::from(format!("{host}-0.jsonl")),
            end_us,
            end: "crash".into(),
        }
    }

    fn ops(lines: &[Line]) -> Vec<&OpLine> {
        lines
            .iter()
            .filter_map(|l| match l {
                Line::Op(op) => Some(op),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn operations_are_renumbered_by_invocation_and_the_last_line_of_an_id_wins() {
        let a = vec![
            clock("replica-1", 0, 10),
            tip(1, "replica-1", 300, None),
            tip(1, "replica-1", 300, Some(400)),
        ];
        let b = vec![
            clock("replica-2", 0, 5),
            tip(1, "replica-2", 100, Some(200)),
        ];
        let (lines, cut) = merge_lines(
            vec![config()],
            vec![
                (process("replica-1", 900), a),
                (process("replica-2", 900), b),
            ],
        );
        assert_eq!(cut, 0);
        let ops = ops(&lines);
        assert_eq!(ops.len(), 2);
        assert_eq!(
            (ops[0].id, ops[0].process.replica.as_str()),
            (1, "replica-2")
        );
        assert_eq!((ops[1].id, ops[1].complete_us), (2, Some(400)));
        assert!(matches!(lines[0], Line::Config(_)));
        History::from_lines("merged", lines).validate().unwrap();
    }

    #[test]
    fn a_pending_operation_is_cut_off_at_its_processs_kill() {
        let a = vec![clock("replica-1", 0, 0), tip(1, "replica-1", 300, None)];
        let (lines, cut) = merge_lines(vec![config()], vec![(process("replica-1", 5_000), a)]);
        assert_eq!(cut, 1);
        let op = ops(&lines)[0].clone();
        assert_eq!(op.complete_us, Some(5_000));
        assert_eq!(op.outcome, Outcome::Info);
        assert_eq!(op.complete_local_us, None);
        assert_eq!(
            op.result,
            Some(OpResult::CutOff {
                reason: "crash".into()
            })
        );
        History::from_lines("merged", lines).validate().unwrap();
    }

    /// The ledger's line `seq` of a fence by replica-1.
    fn fence_ledger_line(seq: u64) -> Line {
        let owner = Process {
            replica: "replica-1".into(),
            incarnation: 0,
        };
        Line::Ledger(LedgerLine {
            session: "s1".into(),
            seq,
            record: HistRecord::Fence {
                epoch: 1,
                owner: owner.clone(),
                writer_id: crate::history::HistWriterId { owner, journal: 1 },
            },
        })
    }

    /// A merge of a driver file (config, a nemesis line, a phase line), the ledger's two boots
    /// (the second rewrote ledger line 1 and added 2) and the lease host's one; returns the
    /// merged lines, the nemesis line and the phase line.
    fn merged_two_ledger_boots() -> (Vec<Line>, Line, Line) {
        let nemesis = Line::Nemesis(NemesisLine {
            at_us: 50,
            host: "ledger".into(),
            action: NemesisAction::Sigkill,
            peer: None,
            detail: None,
        });
        let phase = Line::Phase(PhaseLine {
            name: Phase::FaultsHealed,
            at_us: 60,
        });
        let (lines, _) = merge_lines(
            vec![config(), nemesis.clone(), phase.clone()],
            vec![
                (
                    ProcessFile {
                        boot: 0,
                        ..process("ledger", 50)
                    },
                    vec![clock("ledger", 0, 0), fence_ledger_line(1)],
                ),
                (
                    ProcessFile {
                        boot: 1,
                        ..process("ledger", 90)
                    },
                    vec![
                        clock("ledger", 1, 51),
                        fence_ledger_line(1),
                        fence_ledger_line(2),
                    ],
                ),
                (process("lease", 90), vec![clock("lease", 0, 3)]),
            ],
        );
        (lines, nemesis, phase)
    }

    #[test]
    fn a_merge_of_two_ledger_boots_is_a_valid_history() {
        let (lines, _, _) = merged_two_ledger_boots();
        History::from_lines("merged", lines).validate().unwrap();
    }

    #[test]
    fn clock_lines_are_ordered_by_host_boot_and_start() {
        let (lines, _, _) = merged_two_ledger_boots();
        let clocks: Vec<(String, u64)> = lines
            .iter()
            .filter_map(|l| match l {
                Line::Clock(c) => Some((c.host.clone(), c.boot)),
                _ => None,
            })
            .collect();
        assert_eq!(
            clocks,
            [
                ("lease".into(), 0),
                ("ledger".into(), 0),
                ("ledger".into(), 1)
            ]
        );
    }

    #[test]
    fn the_last_ledger_boot_wins() {
        let (lines, _, _) = merged_two_ledger_boots();
        let ledgers = lines
            .iter()
            .filter(|l| matches!(l, Line::Ledger(_)))
            .count();
        assert_eq!(ledgers, 2, "the final ledger of the last boot only");
    }

    #[test]
    fn the_driver_lines_follow_the_config_in_their_order() {
        let (lines, nemesis, phase) = merged_two_ledger_boots();
        assert_eq!(lines[1], nemesis);
        assert_eq!(lines[2], phase);
    }

    #[test]
    fn a_torn_tail_is_dropped_and_reported_and_a_missing_file_noted() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("orchestrator.jsonl");
        let file = LineFile::create(&own).unwrap();
        file.append(&config()).unwrap();
        file.close().unwrap();
        let replica = dir.path().join("replica-1-0.jsonl");
        std::fs::write(
            &replica,
            format!(
                "{}\n{}\n{{\"v\":1,\"kind\":\"op\",\"id\"",
                clock("replica-1", 0, 0).to_json(),
                tip(1, "replica-1", 10, Some(20)).to_json()
            ),
        )
        .unwrap();
        let processes = [
            ProcessFile {
                path: replica.clone(),
                ..process("replica-1", 100)
            },
            ProcessFile {
                path: dir.path().join("replica-2-0.jsonl"),
                ..process("replica-2", 100)
            },
        ];
        let merged = merge_files(&own, &processes).unwrap();
        assert_eq!(merged.torn, vec![(replica, 23)]);
        assert_eq!(merged.missing.len(), 1);
        assert_eq!(ops(&merged.lines).len(), 1);
    }
}

//! Coverage: named "sometimes" events a run reached (docs/campaigns.md).
//!
//! A campaign that never took a lease over after expiry, never had a stale append refused by
//! the fence, never retried a fence… has not tested what it claims to. [`coverage`] counts,
//! per run, each [`CoverageEvent`] from the run's history alone (never its trace).
//!
//! Sources, event by event (every count is exact, never sampled):
//!
//! | event | source |
//! |---|---|
//! | `takeover-after-expiry`, `graceful-handover` | `decision` lines, per session in true-time order |
//! | `stale-append-rejected`, `lease-lost-before-append`, `open-refused-stale-epoch` | `op` results |
//! | `fence-retried`, `ambiguous-append-resolved` | `ledger_append` ops of a writer (and its `journal_append`s) |
//! | `renew-lost` | `lease_renew` ops |
//! | `stale-release-ignored`, `stale-renew-refused`, `grace-period-refusal` | `decision` lines |
//! | `takeover-after-expiry`, `graceful-handover` (a backend without an authority, KubeLease) | `write` lines, per session in acceptance order: a write raising `leaseTransitions` for another holder, after an empty holder (handover) or not (takeover) |
//! | `authority-restart` | `clock` lines of the authority's host (or of the host of the `write` lines) |
//! | `run-cancelled-on-loss`, `sticky-disable` | `event` lines the service reports (`Observation`s through its hooks) |
//! | `record-deleted` | `event` lines the lease authority reports (`MemLease::delete_record`, `collect_expired_record`) |
//! | `backward-wall-jump-survived` | `event` lines the nemesis writes when it steps a wall clock back |

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{
    Decision, HistEvent, HistRecord, HistWriterId, History, LedgerLine, Line, Op, OpLine, OpResult,
    Outcome, Process, Refusal, Request,
};
use crate::results::CoverageEvent;

/// Counts the coverage events of one run: event name → count, with every [`CoverageEvent`]
/// present (0 when not reached).
pub fn coverage(history: &History) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<CoverageEvent, u64> = CoverageEvent::ALL
        .into_iter()
        .map(|event| (event, 0))
        .collect();
    let mut add = |event: CoverageEvent, n: u64| {
        *counts.entry(event).or_default() += n;
    };
    handovers(history, &mut add);
    write_handovers(history, &mut add);
    decisions(history, &mut add);
    ops(history, &mut add);
    writers(history, &mut add);
    add(CoverageEvent::AuthorityRestart, authority_restarts(history));
    reported(history, &mut add);
    counts
        .into_iter()
        .map(|(event, n)| (event.name().to_owned(), n))
        .collect()
}

/// Takeovers and handovers: per session, each grant to an owner other than the last holder.
fn handovers(history: &History, add: &mut impl FnMut(CoverageEvent, u64)) {
    let mut decisions: Vec<(usize, _)> = history.decisions().enumerate().collect();
    decisions.sort_by_key(|(index, d)| (d.at_us, *index));
    // Per session: the last granted owner and whether it released since.
    let mut holders: BTreeMap<&str, (&Process, bool)> = BTreeMap::new();
    for (_, line) in decisions {
        match &line.decision {
            Decision::Grant { .. } => {
                if let Some((holder, released)) = holders.get(line.session.as_str())
                    && *holder != &line.owner
                {
                    let event = if *released {
                        CoverageEvent::GracefulHandover
                    } else {
                        CoverageEvent::TakeoverAfterExpiry
                    };
                    add(event, 1);
                }
                holders.insert(&line.session, (&line.owner, false));
            }
            Decision::Release { ended: true, .. } => {
                if let Some((holder, released)) = holders.get_mut(line.session.as_str())
                    && *holder == &line.owner
                {
                    *released = true;
                }
            }
            _ => {}
        }
    }
}

/// Takeovers and handovers of a backend without an authority (a Kubernetes API server): per
/// session, in acceptance order, each accepted write that raises `leaseTransitions` for a
/// holder other than the last one — a graceful handover when the object was released (empty
/// holder) before it, a takeover after expiry otherwise.
fn write_handovers(history: &History, add: &mut impl FnMut(CoverageEvent, u64)) {
    // Per session: the last holder ("" once released) and the transitions of the last write.
    let mut last: BTreeMap<&str, (&str, Option<&str>, u64)> = BTreeMap::new();
    for write in history.writes() {
        let holder = write.holder_identity.as_str();
        let Some((current, previous_holder, transitions)) = last.get(write.session.as_str()) else {
            last.insert(&write.session, (holder, None, write.transitions));
            continue;
        };
        let took_over = write.transitions > *transitions && !holder.is_empty();
        let previous = if current.is_empty() {
            *previous_holder
        } else {
            Some(*current)
        };
        if took_over && previous.is_some_and(|p| p != holder) {
            add(
                if current.is_empty() {
                    CoverageEvent::GracefulHandover
                } else {
                    CoverageEvent::TakeoverAfterExpiry
                },
                1,
            );
        }
        last.insert(&write.session, (holder, previous, write.transitions));
    }
}

/// Events that are one decision line each.
fn decisions(history: &History, add: &mut impl FnMut(CoverageEvent, u64)) {
    for line in history.decisions() {
        match &line.decision {
            Decision::Release { ended: false, .. } => add(CoverageEvent::StaleReleaseIgnored, 1),
            Decision::Refuse {
                request: Request::Renew,
                reason: Refusal::Held { .. },
                ..
            } => add(CoverageEvent::StaleRenewRefused, 1),
            Decision::Refuse {
                reason: Refusal::GracePeriod { .. },
                ..
            } => add(CoverageEvent::GracePeriodRefusal, 1),
            _ => {}
        }
    }
}

/// Events that are one operation each.
fn ops(history: &History, add: &mut impl FnMut(CoverageEvent, u64)) {
    let (epochs, highest) = epochs(history);
    let ttl_us = history.config().ok().map(|config| config.ttl_us);
    let journal_events: BTreeSet<(&HistWriterId, u64)> = history
        .ops()
        .filter_map(|op| op.op.journal_append())
        .collect();
    // Refused after a newer fence: the session's highest fence is above the writer's epoch
    // (or the writer's epoch is unknown: the refusal itself is the evidence).
    let newer_fence = |session: &str, writer: &HistWriterId| match epochs.get(writer) {
        Some(epoch) => highest.get(session).is_some_and(|top| top > epoch),
        None => true,
    };
    for op in history.ops() {
        match (&op.op, &op.result) {
            (Op::JournalAppend { writer_id, .. }, Some(OpResult::Fenced { .. }))
                if newer_fence(&op.session, writer_id) =>
            {
                add(CoverageEvent::StaleAppendRejected, 1)
            }
            // A raw ledger append of an event (a scripted call, not a journal's own).
            (
                Op::LedgerAppend {
                    record:
                        HistRecord::Event {
                            writer_id,
                            seq_in_writer,
                            ..
                        },
                    ..
                },
                Some(OpResult::Conflict { .. }),
            ) if !journal_events.contains(&(writer_id, *seq_in_writer))
                && newer_fence(&op.session, writer_id) =>
            {
                add(CoverageEvent::StaleAppendRejected, 1)
            }
            (Op::JournalAppend { .. }, Some(OpResult::LeaseLost { .. })) => {
                add(CoverageEvent::LeaseLostBeforeAppend, 1)
            }
            (Op::JournalOpen { .. }, Some(OpResult::StaleEpoch { .. })) => {
                add(CoverageEvent::OpenRefusedStaleEpoch, 1)
            }
            (Op::LeaseRenew { .. }, _) if renew_lost(op, ttl_us) => {
                add(CoverageEvent::RenewLost, 1)
            }
            _ => {}
        }
    }
}

/// Each writer's epoch and each session's highest fence, from the final ledger and the fence
/// appends (a fence that never committed still names its writer's epoch).
type Epochs<'h> = (BTreeMap<&'h HistWriterId, u64>, BTreeMap<&'h str, u64>);

fn epochs(history: &History) -> Epochs<'_> {
    let mut epochs: BTreeMap<&HistWriterId, u64> = BTreeMap::new();
    let mut highest: BTreeMap<&str, u64> = BTreeMap::new();
    for line in history.lines() {
        if let Line::Ledger(LedgerLine {
            session,
            record: HistRecord::Fence {
                epoch, writer_id, ..
            },
            ..
        }) = line
        {
            epochs.insert(writer_id, *epoch);
            let top = highest.entry(session.as_str()).or_default();
            *top = (*top).max(*epoch);
        }
    }
    for op in history.ops() {
        if let Op::LedgerAppend {
            record: HistRecord::Fence {
                epoch, writer_id, ..
            },
            ..
        } = &op.op
        {
            epochs.entry(writer_id).or_insert(*epoch);
        }
    }
    (epochs, highest)
}

/// A renew that did not renew: refused, failed, or without a reply (timed out, abandoned).
/// A call cut off (no reply when the run ended or its process crashed) counts only when it
/// waited at least a TTL (`ttl_us`; the lease was surely lost meanwhile), so a renew merely
/// in flight at the end of the run is not a loss.
fn renew_lost(op: &OpLine, ttl_us: Option<u64>) -> bool {
    match &op.result {
        Some(OpResult::Granted { .. }) => false,
        Some(OpResult::CutOff { reason }) if reason == "crash" => false,
        Some(OpResult::CutOff { .. }) | None => {
            let waited = op.complete_us.unwrap_or(op.invoke_us) - op.invoke_us;
            ttl_us.is_none_or(|ttl| waited >= ttl)
        }
        Some(_) => op.outcome != Outcome::Ok,
    }
}

/// Per writer (one opened journal): fence retries and resolved ambiguous appends.
fn writers(history: &History, add: &mut impl FnMut(CoverageEvent, u64)) {
    // Fence appends by writer, in invocation order.
    let mut fences: BTreeMap<&HistWriterId, Vec<(u64, u64)>> = BTreeMap::new();
    // Appends with an unknown outcome: (writer, Some(seq_in_writer) for an event, None for a
    // fence) and the true time the reply came.
    let mut unknown: Vec<(&HistWriterId, Option<u64>, u64)> = Vec::new();
    for op in history.ops() {
        let Op::LedgerAppend { record, .. } = &op.op else {
            continue;
        };
        let (writer, event) = match record {
            HistRecord::Fence { writer_id, .. } => {
                fences
                    .entry(writer_id)
                    .or_default()
                    .push((op.invoke_us, op.id));
                (writer_id, None)
            }
            HistRecord::Event {
                writer_id,
                seq_in_writer,
                ..
            } => (writer_id, Some(*seq_in_writer)),
        };
        if matches!(op.result, Some(OpResult::Unknown { .. })) {
            unknown.push((writer, event, op.complete_us.unwrap_or(op.invoke_us)));
        }
    }
    let retried = fences
        .values()
        .filter(|attempts| attempts.len() > 1)
        .count();
    add(CoverageEvent::FenceRetried, retried as u64);

    // Resolved: an event's journal append ended appended or fenced (not ambiguous); a
    // fence's writer went on to append anything after the unknown reply.
    let mut resolved = 0u64;
    for (writer, event, replied_us) in unknown {
        let learnt = match event {
            Some(seq) => history.ops().any(|op| {
                matches!(&op.op, Op::JournalAppend { writer_id, seq_in_writer }
                    if writer_id == writer && *seq_in_writer == seq)
                    && matches!(
                        op.result,
                        Some(OpResult::Appended { .. } | OpResult::Fenced { .. })
                    )
            }),
            None => history.ops().any(|op| {
                op.invoke_us >= replied_us
                    && match &op.op {
                        Op::LedgerAppend {
                            record:
                                HistRecord::Fence { writer_id, .. }
                                | HistRecord::Event { writer_id, .. },
                            ..
                        } => writer_id == writer,
                        Op::JournalAppend { writer_id, .. } => writer_id == writer,
                        _ => false,
                    }
            }),
        };
        resolved += u64::from(learnt);
    }
    add(CoverageEvent::AmbiguousAppendResolved, resolved);
}

/// Restarts of the lease authority: its clock segments with a boot above the one before.
fn authority_restarts(history: &History) -> u64 {
    // A backend without an authority (a Kubernetes API server): the host of its writes.
    let host = history
        .authority_host()
        .or_else(|| history.writes().next().map(|w| w.host.as_str()));
    let mut boots: Vec<u64> = history
        .clock_segments()
        .filter(|segment| Some(segment.host.as_str()) == host)
        .map(|segment| segment.boot)
        .collect();
    boots.dedup();
    boots.windows(2).filter(|pair| pair[1] > pair[0]).count() as u64
}

/// Events the hosts reported (`event` lines).
fn reported(history: &History, add: &mut impl FnMut(CoverageEvent, u64)) {
    for line in history.events() {
        let event = match line.event {
            HistEvent::RunCancelledOnLoss => CoverageEvent::RunCancelledOnLoss,
            HistEvent::StickyDisable => CoverageEvent::StickyDisable,
            HistEvent::RecordDeleted => CoverageEvent::RecordDeleted,
            HistEvent::BackwardWallJump => CoverageEvent::BackwardWallJumpSurvived,
        };
        add(event, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{ClockLine, ConfigLine, DecisionLine, EventLine, Line};

    fn p(replica: &str, incarnation: u64) -> Process {
        Process::new(replica, incarnation)
    }

    fn decision(at_us: u64, owner: Process, decision: Decision) -> Line {
        Line::Decision(DecisionLine {
            session: "s1".into(),
            owner,
            decision,
            at_authority_us: at_us,
            at_us,
        })
    }

    fn grant(token: u64) -> Decision {
        Decision::Grant {
            token,
            expiry_authority_us: 0,
            ttl_us: 10,
        }
    }

    fn op(id: u64, process: Process, op: Op, outcome: Outcome, result: OpResult) -> Line {
        Line::Op(OpLine {
            id,
            process,
            session: "s1".into(),
            op,
            invoke_us: id * 10,
            complete_us: Some(id * 10 + 5),
            invoke_local_us: id * 10,
            complete_local_us: Some(id * 10 + 5),
            outcome,
            result: Some(result),
        })
    }

    /// A TTL of 100 µs, renewals every 33 µs, one replica, session s1.
    fn config() -> Line {
        Line::Config(ConfigLine {
            ttl_us: 100,
            skew_margin_us: 10,
            renew_interval_us: 33,
            longest_reconnect_backoff_us: 5,
            grace_period_us: 100,
            mutant: None,
            seed: 1,
            replicas: 1,
            sessions: vec!["s1".into()],
            authority: Some("lease".into()),
        })
    }

    fn writer(replica: &str, journal: u64) -> HistWriterId {
        HistWriterId {
            owner: p(replica, 0),
            journal,
        }
    }

    fn fence(epoch: u64, w: &HistWriterId) -> HistRecord {
        HistRecord::Fence {
            epoch,
            owner: w.owner.clone(),
            writer_id: w.clone(),
        }
    }

    fn event(w: &HistWriterId, seq_in_writer: u64) -> HistRecord {
        HistRecord::Event {
            writer_id: w.clone(),
            seq_in_writer,
            payload: Vec::new(),
        }
    }

    fn count(lines: Vec<Line>) -> BTreeMap<String, u64> {
        coverage(&History::from_lines("t", lines))
    }

    #[test]
    fn kube_takeovers_and_handovers_from_write_lines() {
        use crate::history::{WriteLine, WriteVerb};
        let write = |verb, holder: &str, transitions, rv| {
            Line::Write(WriteLine {
                host: "apiserver".into(),
                session: "s1".into(),
                object: "s1-x".into(),
                verb,
                holder_identity: holder.into(),
                transitions,
                resource_version: rv,
                at_us: rv,
            })
        };
        let counts = count(vec![
            config(),
            write(WriteVerb::Create, "replica-1#0", 1, 1),
            write(WriteVerb::Update, "replica-1#0", 1, 2), // a renew
            write(WriteVerb::Update, "replica-2#0", 2, 3), // taken over
            write(WriteVerb::Update, "", 2, 4),            // released
            write(WriteVerb::Update, "replica-1#0", 3, 5), // handed over
            write(WriteVerb::Update, "", 3, 6),            // released
            write(WriteVerb::Update, "replica-1#0", 4, 7), // the same owner again
        ]);
        assert_eq!(counts["takeover-after-expiry"], 1);
        assert_eq!(counts["graceful-handover"], 1);
    }

    fn only(counts: &BTreeMap<String, u64>) -> BTreeMap<&str, u64> {
        counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (k.as_str(), *n))
            .collect()
    }

    #[test]
    fn every_event_is_counted_even_when_zero() {
        let counts = count(Vec::new());
        assert_eq!(counts.len(), CoverageEvent::ALL.len());
        assert!(counts.values().all(|n| *n == 0));
    }

    #[test]
    fn takeover_and_handover_are_told_apart() {
        let (a, b, c) = (p("replica-1", 0), p("replica-2", 0), p("replica-3", 0));
        let lines = vec![
            decision(1, a.clone(), grant(1)),
            decision(2, a.clone(), grant(1)), // same-owner re-acquire: neither
            decision(3, b.clone(), grant(2)), // a never released: takeover
            decision(
                4,
                a.clone(),
                Decision::Release {
                    token: 1,
                    ended: false,
                },
            ),
            decision(
                5,
                b.clone(),
                Decision::Release {
                    token: 2,
                    ended: true,
                },
            ),
            decision(6, c.clone(), grant(3)), // b released: handover
            decision(7, p("replica-3", 1), grant(4)), // a restarted c is a new owner
        ];
        let counts = count(lines);
        assert_eq!(
            only(&counts),
            BTreeMap::from([
                ("takeover-after-expiry", 2),
                ("graceful-handover", 1),
                ("stale-release-ignored", 1),
            ])
        );
    }

    #[test]
    fn refusals_by_kind() {
        let a = p("replica-1", 0);
        let lines = vec![
            decision(
                1,
                a.clone(),
                Decision::Refuse {
                    request: Request::Acquire,
                    token: None,
                    reason: Refusal::GracePeriod {
                        remaining_authority_us: 5,
                    },
                },
            ),
            decision(
                2,
                a.clone(),
                Decision::Refuse {
                    request: Request::Renew,
                    token: Some(1),
                    reason: Refusal::Held {
                        holder_token: Some(2),
                    },
                },
            ),
            decision(
                3,
                a.clone(),
                Decision::Refuse {
                    request: Request::Acquire,
                    token: None,
                    reason: Refusal::Held {
                        holder_token: Some(2),
                    },
                },
            ),
        ];
        assert_eq!(
            only(&count(lines)),
            BTreeMap::from([("grace-period-refusal", 1), ("stale-renew-refused", 1)])
        );
    }

    #[test]
    fn stale_append_needs_a_newer_fence() {
        let (wa, wb) = (writer("replica-1", 1), writer("replica-2", 1));
        let a = p("replica-1", 0);
        let ledger = |seq, record| {
            Line::Ledger(crate::history::LedgerLine {
                session: "s1".into(),
                seq,
                record,
            })
        };
        let fenced = OpResult::Fenced {
            expected: 2,
            actual: 4,
        };
        let append = |w: &HistWriterId, n| Op::JournalAppend {
            writer_id: w.clone(),
            seq_in_writer: n,
        };
        let lines = vec![
            op(1, a.clone(), append(&wa, 2), Outcome::Fail, fenced.clone()),
            // b was fenced too, but nothing newer than b's fence exists: not stale.
            op(2, p("replica-2", 0), append(&wb, 2), Outcome::Fail, fenced),
            op(
                3,
                a.clone(),
                append(&wa, 3),
                Outcome::Fail,
                OpResult::LeaseLost {
                    cause: crate::history::HistLossCause::Released {},
                },
            ),
            // A raw (scripted) ledger append of an event refused at the CAS.
            op(
                4,
                a.clone(),
                Op::LedgerAppend {
                    expected: 2,
                    record: event(&wa, 9),
                },
                Outcome::Fail,
                OpResult::Conflict { actual: 4 },
            ),
            op(
                5,
                a,
                Op::JournalOpen { epoch: 1 },
                Outcome::Fail,
                OpResult::StaleEpoch {
                    epoch: 1,
                    highest_fence: 2,
                },
            ),
            ledger(1, fence(1, &wa)),
            ledger(2, event(&wa, 1)),
            ledger(3, fence(2, &wb)),
            ledger(4, event(&wb, 1)),
        ];
        assert_eq!(
            only(&count(lines)),
            BTreeMap::from([
                ("stale-append-rejected", 2),
                ("lease-lost-before-append", 1),
                ("open-refused-stale-epoch", 1),
            ])
        );
    }

    #[test]
    fn fence_retries_and_resolved_ambiguous_appends() {
        let (wa, wb) = (writer("replica-1", 1), writer("replica-2", 1));
        let (a, b) = (p("replica-1", 0), p("replica-2", 0));
        let append = |expected, record| Op::LedgerAppend { expected, record };
        let unknown = OpResult::Unknown {
            reason: "timeout".into(),
        };
        let lines = vec![
            // a's fence conflicts, then commits: one retried open.
            op(
                1,
                a.clone(),
                append(0, fence(1, &wa)),
                Outcome::Fail,
                OpResult::Conflict { actual: 1 },
            ),
            op(
                2,
                a.clone(),
                append(1, fence(1, &wa)),
                Outcome::Ok,
                OpResult::Appended { seq: 2 },
            ),
            // a's event 1: unknown at the ledger, resolved by the journal as appended.
            op(
                3,
                a.clone(),
                append(2, event(&wa, 1)),
                Outcome::Info,
                unknown.clone(),
            ),
            op(
                4,
                a.clone(),
                Op::JournalAppend {
                    writer_id: wa.clone(),
                    seq_in_writer: 1,
                },
                Outcome::Ok,
                OpResult::Appended { seq: 3 },
            ),
            // b's fence: unknown, and b never writes again: not resolved.
            op(5, b, append(3, fence(2, &wb)), Outcome::Info, unknown),
        ];
        assert_eq!(
            only(&count(lines)),
            BTreeMap::from([("fence-retried", 1), ("ambiguous-append-resolved", 1)])
        );
    }

    #[test]
    fn renews_lost_but_not_cut_off_in_flight() {
        let a = p("replica-1", 0);
        let renew = Op::LeaseRenew {
            owner: a.clone(),
            token: 1,
        };
        let config = config();
        let cut_off = |id, waited, reason: &str| {
            let Line::Op(mut line) = op(
                id,
                a.clone(),
                renew.clone(),
                Outcome::Info,
                OpResult::CutOff {
                    reason: reason.into(),
                },
            ) else {
                unreachable!()
            };
            line.complete_us = Some(line.invoke_us + waited);
            Line::Op(line)
        };
        let lines = vec![
            config,
            op(
                1,
                a.clone(),
                renew.clone(),
                Outcome::Ok,
                OpResult::Granted {
                    token: 1,
                    expiry_authority_us: 5,
                    ttl_us: 5,
                },
            ),
            op(
                2,
                a.clone(),
                renew.clone(),
                Outcome::Fail,
                OpResult::Held {
                    holder_token: Some(2),
                },
            ),
            op(
                3,
                a.clone(),
                renew.clone(),
                Outcome::Info,
                OpResult::Unavailable {
                    reason: "deadline".into(),
                },
            ),
            // Abandoned for a whole TTL: lost. In flight at the end, or a crash: not lost.
            cut_off(4, 100, "no reply before the run ended"),
            cut_off(5, 20, "no reply before the run ended"),
            cut_off(6, 500, "crash"),
        ];
        assert_eq!(only(&count(lines)), BTreeMap::from([("renew-lost", 3)]));
    }

    #[test]
    fn authority_restarts_from_clock_lines() {
        let clock = |host: &str, boot, from_us| {
            Line::Clock(ClockLine {
                host: host.into(),
                boot,
                from_us,
                local_from_us: 0,
                drift_ppm: 0,
                suspended: false,
            })
        };
        let config = config();
        let lines = vec![
            config,
            clock("lease", 0, 0),
            clock("lease", 0, 5), // a drift change, not a restart
            clock("lease", 1, 10),
            clock("lease", 2, 20),
            clock("replica-1", 1, 30),
        ];
        assert_eq!(
            only(&count(lines)),
            BTreeMap::from([("authority-restart", 2)])
        );
    }

    #[test]
    fn reported_events_from_event_lines() {
        let event = |at_us: u64, host: &str, event: HistEvent| {
            Line::Event(EventLine {
                at_us,
                host: host.into(),
                event,
            })
        };
        let lines = vec![
            event(5, "replica-1", HistEvent::RunCancelledOnLoss),
            event(6, "replica-2", HistEvent::StickyDisable),
            event(7, "lease", HistEvent::RecordDeleted),
            event(8, "replica-3", HistEvent::BackwardWallJump),
            event(9, "replica-1", HistEvent::RunCancelledOnLoss),
        ];
        assert_eq!(
            only(&count(lines)),
            BTreeMap::from([
                ("run-cancelled-on-loss", 2),
                ("sticky-disable", 1),
                ("record-deleted", 1),
                ("backward-wall-jump-survived", 1),
            ])
        );
    }
}

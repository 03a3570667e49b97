//! SIGNAL — code that decides for itself: a target crate's own "I lead" signal (its
//! `target_signal` lines, docs/targets.md) holds only while its lease does
//! (docs/checks.md#signal).
//!
//! A **span** is one stretch of "I lead" as the crate's adapter saw it: from a `target_signal`
//! line with `leads: true` to the first of, for that process and session: the next change of
//! the signal; the adapter letting the crate go (the invocation of its `lease_release`, or the
//! completion of an acquire it answered without a grant: a refused crate is stopped); the end
//! of the process's boot (a crash); the end of the run. Each span is judged twice:
//!
//! - **Signal outlives the lease**: the crate's lease is its last accepted write naming it
//!   holder (`write` lines: the crates' own Lease writes are not op lines) plus the TTL, counted
//!   on its host's monotonic clock from the moment the API server accepted the write (no
//!   earlier than the crate sent it, so never shorter than the expiry the crate computed). The
//!   span must end by then, and cannot start before such a write.
//! - **Two leaders**: no two processes' spans of one session overlap.
//!
//! Each finding is classed by the faults on the process whose lease ran out (the older leader
//! of an overlap), from the `nemesis` lines ([`HostFaults`]): when it starts while that host's
//! link to the API server is held or delayed and ends within one renew interval of the hold's
//! end (the crate's next renew sees the loss), it is an **unfenced overlap, expected without
//! fencing**; after a clock fault on that host, it is **under a clock fault** (a crate that
//! reads its own clock is only as right as that clock; EXCL and EXPIRY judge the clocks). Both
//! are [`InvariantReport::allowed`], never violations. Anything else is a violation.

use std::collections::BTreeMap;

use super::holders::{Clocks, parse_holder};
use super::host_faults::HostFaults;
use super::{Check, Evidence, InvariantReport, Violation};
use leasesim_history::time::seconds_us;
use leasesim_history::{History, Op, OpLine, OpResult, Outcome, Phase, Process, WriteLine};

/// One stretch of "I lead" of one process for one session, in true time.
#[derive(Clone, Debug)]
struct Span<'h> {
    /// The `target_signal` line that started it.
    on: &'h OpLine,
    /// True time it ended, µs.
    until_us: u64,
    /// What ended it, in words (`its signal changed (op 12)`).
    end: String,
}

impl Span<'_> {
    fn process(&self) -> &Process {
        &self.on.process
    }

    fn start_us(&self) -> u64 {
        self.on.invoke_us
    }
}

/// The span-changing things one process did to one session, in true time.
enum Event<'h> {
    /// Its signal changed to `leads`.
    Signal(&'h OpLine, bool),
    /// The adapter let the crate go.
    LetGo(&'h OpLine),
}

/// Why a history without a span of "I lead" is not judged.
const NO_SIGNAL: &str = "no target_signal lines: only a target crate reports its own \"I lead\"";

/// Checks SIGNAL over `history`.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Signal);
    // Every backend of our own has no signal: judge nothing before reading clocks and faults.
    if !history.ops().any(|op| matches!(op.op, Op::TargetSignal {})) {
        report.why_not_judged = Some(NO_SIGNAL.into());
        return report;
    }
    let Ok(config) = history.config() else {
        report.why_not_judged = Some("no config line (no TTL to judge a signal by)".into());
        return report;
    };
    let clocks = Clocks::new(history);
    let faults = HostFaults::new(history);
    let judge = Judge {
        history,
        clocks: &clocks,
        faults: &faults,
        server: history.writes().next().map(|write| write.host.as_str()),
        ttl_us: config.ttl_us,
        renew_us: config.renew_interval_us,
    };
    let spans = spans(history, &clocks, &faults);
    if spans.values().all(Vec::is_empty) {
        report.why_not_judged = Some(NO_SIGNAL.into());
    }
    for spans in spans.values() {
        for span in spans {
            report.checks += 1;
            judge.outlives(&mut report, span);
        }
        judge.overlaps(&mut report, spans);
    }
    report
}

/// Every span, by session, each session's sorted by start (then op id).
fn spans<'h>(
    history: &'h History,
    clocks: &Clocks,
    faults: &HostFaults,
) -> BTreeMap<String, Vec<Span<'h>>> {
    let mut events: BTreeMap<(String, Process), Vec<(u64, Event<'h>)>> = BTreeMap::new();
    for op in history.ops() {
        let event = match (&op.op, &op.result, op.outcome) {
            (Op::TargetSignal {}, Some(OpResult::Signal { leads }), _) => {
                (op.invoke_us, Event::Signal(op, *leads))
            }
            (Op::LeaseRelease { .. }, _, _) => (op.invoke_us, Event::LetGo(op)),
            (Op::LeaseAcquire { .. }, Some(_), Outcome::Fail | Outcome::Info) => {
                (op.complete_us.unwrap_or(op.invoke_us), Event::LetGo(op))
            }
            _ => continue,
        };
        let key = (op.session.clone(), op.process.clone());
        events.entry(key).or_default().push(event);
    }
    let run_end = history.phase_at_us(Phase::RunEnded).unwrap_or(u64::MAX);
    let mut by_session: BTreeMap<String, Vec<Span<'h>>> = BTreeMap::new();
    for ((session, _), mut events) in events {
        events.sort_by_key(|(at, event)| (*at, event_op(event).id));
        let spans = by_session.entry(session).or_default();
        let mut open: Option<&'h OpLine> = None;
        for (at_us, event) in events {
            let end = match (open, event) {
                (None, Event::Signal(on, true)) => {
                    open = Some(on);
                    continue;
                }
                (Some(_), Event::Signal(off, false)) => {
                    format!("its signal changed (op {})", off.id)
                }
                (Some(_), Event::LetGo(op)) => format!("the adapter let it go (op {})", op.id),
                _ => continue,
            };
            spans.extend(open.take().map(|on| closed(on, at_us, end)));
        }
        spans.extend(open.map(|on| closed(on, run_end, "the run ended".into())));
    }
    for spans in by_session.values_mut() {
        // A crash ends a span first: its process stopped there (its `crash` line, else the
        // end of its boot).
        for span in spans.iter_mut() {
            let host = &span.process().replica;
            let crash = faults
                .crash_in(host, span.start_us(), span.until_us)
                .or_else(|| clocks.boot_end(span.process()));
            if let Some(crash) = crash
                && crash < span.until_us
            {
                span.until_us = crash.max(span.start_us());
                span.end = "its host crashed".into();
            }
        }
        spans.sort_by_key(|s| (s.start_us(), s.on.id));
    }
    by_session
}

fn event_op<'h>(event: &Event<'h>) -> &'h OpLine {
    match event {
        Event::Signal(op, _) | Event::LetGo(op) => op,
    }
}

fn closed(on: &OpLine, until_us: u64, end: String) -> Span<'_> {
    Span {
        on,
        until_us: until_us.max(on.invoke_us),
        end,
    }
}

/// What SIGNAL judges a span by.
struct Judge<'a> {
    history: &'a History,
    clocks: &'a Clocks,
    faults: &'a HostFaults,
    /// The host that accepted the Lease writes (the API server), whose link to a process is
    /// the one that can be held or delayed; `None` without write lines.
    server: Option<&'a str>,
    /// The crates' lease duration (the world's TTL), µs.
    ttl_us: u64,
    /// The crates' renew interval, µs.
    renew_us: u64,
}

/// A stretch of a span past its lease: from the lease's end (or the span's start, without a
/// write naming it) to the next write naming it or the span's end.
struct Outlived<'h> {
    from_us: u64,
    until_us: u64,
    /// The last accepted write naming the process holder before `from_us`.
    write: Option<&'h WriteLine>,
}

impl<'a> Judge<'a> {
    /// Judges whether `span`'s signal outlives its lease.
    fn outlives(&self, report: &mut InvariantReport, span: &Span<'a>) {
        let Some(outlived) = self.first_outlived(span) else {
            return;
        };
        let process = span.process();
        let lease = match outlived.write {
            Some(write) => format!(
                "its lease (its last accepted write naming it holder at {} + TTL {} on its clock) \
                 ended at {}",
                seconds_us(write.at_us),
                seconds_us(self.ttl_us),
                seconds_us(outlived.from_us)
            ),
            None => "no accepted write names it holder".to_string(),
        };
        let message = format!(
            "{}: {process}'s signal outlives the lease: it says \"I lead\" from {} until {} ({}), \
             but {lease}: {} past it",
            span.on.session,
            seconds_us(span.start_us()),
            seconds_us(span.until_us),
            span.end,
            seconds_us(outlived.until_us - outlived.from_us),
        );
        let evidence: Vec<Evidence> = [Evidence::Op(span.on.id)]
            .into_iter()
            .chain(outlived.write.map(Evidence::write))
            .collect();
        self.classify(
            report,
            process,
            outlived.from_us,
            outlived.until_us,
            message,
            evidence,
        );
    }

    /// The first stretch of `span` past its lease, if any.
    fn first_outlived(&self, span: &Span<'a>) -> Option<Outlived<'a>> {
        let naming: Vec<&WriteLine> = self
            .history
            .writes()
            .filter(|w| w.session == span.on.session)
            .filter(|w| parse_holder(&w.holder_identity).as_ref() == Some(span.process()))
            .collect();
        let mut write = naming.iter().copied().rfind(|w| w.at_us <= span.start_us());
        let mut from_us = span.start_us();
        let later = naming.iter().copied().filter(|w| w.at_us > span.start_us());
        for next in later.map(Some).chain([None]) {
            let until_us = next.map_or(span.until_us, |w| w.at_us.min(span.until_us));
            let expiry = write.map_or(from_us, |w| self.expiry(span.process(), w));
            if expiry.max(from_us) < until_us {
                return Some(Outlived {
                    from_us: expiry.max(from_us),
                    until_us,
                    write,
                });
            }
            match next {
                Some(next) if next.at_us < span.until_us => {
                    (write, from_us) = (Some(next), next.at_us)
                }
                _ => return None,
            }
        }
        None
    }

    /// True time the lease `write` gave `process` ends: the TTL counted on its monotonic clock
    /// from the write's acceptance (`u64::MAX` when its boot ends first).
    fn expiry(&self, process: &Process, write: &WriteLine) -> u64 {
        let local = self.clocks.reading(process, write.at_us);
        self.clocks
            .true_at(process, local.saturating_add(self.ttl_us))
            .unwrap_or(u64::MAX)
    }

    /// Judges every pair of `spans` (one session's, by start) of different processes that
    /// overlap; the older leader is the one whose span started first.
    fn overlaps(&self, report: &mut InvariantReport, spans: &[Span<'a>]) {
        for (i, old) in spans.iter().enumerate() {
            for new in &spans[i + 1..] {
                let (from_us, until_us) = (new.start_us(), old.until_us.min(new.until_us));
                if from_us >= until_us || old.process() == new.process() {
                    continue;
                }
                let message = format!(
                    "{}: two leaders: {} says \"I lead\" from {} and {} from {}; both until {} \
                     ({} together)",
                    old.on.session,
                    old.process(),
                    seconds_us(old.start_us()),
                    new.process(),
                    seconds_us(new.start_us()),
                    seconds_us(until_us),
                    seconds_us(until_us - from_us),
                );
                let evidence = vec![Evidence::Op(old.on.id), Evidence::Op(new.on.id)];
                self.classify(report, old.process(), from_us, until_us, message, evidence);
            }
        }
    }

    /// Records a finding on `process`'s lease over true time `[from_us, until_us)`: allowed
    /// when its link was held or delayed, or its clock faulted (module docs), else a violation.
    fn classify(
        &self,
        report: &mut InvariantReport,
        process: &Process,
        from_us: u64,
        until_us: u64,
        message: String,
        evidence: Vec<Evidence>,
    ) {
        let host = process.replica.as_str();
        let held = self
            .server
            .and_then(|server| self.faults.held_at(host, server, from_us))
            .filter(|held| until_us <= held.until_us.saturating_add(self.renew_us));
        let class = if held.is_some() {
            Some(format!(
                "unfenced overlap (expected without fencing): {host}'s link to the API server \
                 was held or delayed"
            ))
        } else {
            self.faults
                .clock_fault_before(host, until_us)
                .map(|at| format!("under a clock fault on {host} (at {})", seconds_us(at)))
        };
        match class {
            Some(class) => report.allowed.push(Violation {
                invariant: Check::Signal,
                message: format!("{class}; {message}"),
                evidence,
            }),
            None => report.violation(message, evidence),
        }
    }
}

//! The faults a host was under, read back from the history's `nemesis` lines (docs/history.md):
//! when its link was **held or delayed**, and when its **clock** was faulted. SIGNAL classes an
//! overlap by them (docs/checks.md#signal); the other checks ignore nemesis lines.
//!
//! A link fault is kept for its pair of hosts (`host` and `peer`, either way). Held or delayed: `hold` until
//! the pair's `release`, `hold_replies` until the pair's `release_replies`, `delay_replies`
//! until the pair's `deliver`, `latency` until a `heal`; every one of them also ends at a `heal`
//! (on `all`) and at the end of the history. A clock fault is an instant: `clock_drift`,
//! `wall_jump`, `wall_offset` (the simulation's names) or `clock` (live mode's), on the host;
//! so is a crash (`crash`; live mode's `sigkill`).

use std::collections::BTreeMap;

use leasesim_history::{History, NemesisAction, NemesisLine};

/// What an action tells SIGNAL about the host (and peer) it names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Meaning {
    /// A held or delayed link, ended on the same pair by the given action (`None`: only a
    /// heal ends it).
    Held(Option<NemesisAction>),
    /// A fault of the host's clock.
    ClockFault,
    /// The host crashed.
    Crash,
    /// Nothing SIGNAL reads.
    Other,
}

/// What `action` means here. Exhaustive, so a new action is a decision, not a silent
/// `Other`.
fn meaning(action: NemesisAction) -> Meaning {
    use NemesisAction as A;
    match action {
        A::Hold => Meaning::Held(Some(A::Release)),
        A::HoldReplies => Meaning::Held(Some(A::ReleaseReplies)),
        A::DelayReplies => Meaning::Held(Some(A::Deliver)),
        A::Latency => Meaning::Held(None),
        A::ClockDrift | A::WallJump | A::WallOffset | A::Clock => Meaning::ClockFault,
        A::Crash | A::Sigkill => Meaning::Crash,
        A::Pause
        | A::Suspend
        | A::Stall
        | A::WorkerPanic
        | A::Resume
        | A::Restart
        | A::Isolate
        | A::Deliver
        | A::ReleaseReplies
        | A::DeleteLeaseRecord
        | A::AuthorityErrors
        | A::Serve
        | A::AimAtHolder
        | A::Fork
        | A::Partition
        | A::PartitionOneWay
        | A::Release
        | A::LinkFlaps
        | A::Heal
        | A::Sigstop
        | A::Sigcont
        | A::Start
        | A::Reset
        | A::Dropped => Meaning::Other,
    }
}

/// One stretch of true time a host's link was held or delayed, µs (`until_us` is `u64::MAX`
/// when nothing ended it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Held {
    /// When the fault started.
    pub from_us: u64,
    /// When it ended.
    pub until_us: u64,
}

/// Each host's held or delayed stretches, clock faults and crashes, by host name.
#[derive(Debug, Default)]
pub(crate) struct HostFaults {
    /// By the pair of hosts, in order.
    held: BTreeMap<[String; 2], Vec<Held>>,
    clock_faults: BTreeMap<String, Vec<u64>>,
    crashes: BTreeMap<String, Vec<u64>>,
}

impl HostFaults {
    /// The faults `history`'s nemesis lines show.
    pub(crate) fn new(history: &History) -> Self {
        let mut lines: Vec<&NemesisLine> = history.nemesis_actions().collect();
        lines.sort_by_key(|line| line.at_us);
        let mut faults = HostFaults::default();
        for (i, line) in lines.iter().enumerate() {
            let end = match meaning(line.action) {
                Meaning::Held(end) => end,
                Meaning::ClockFault => {
                    at_host(&mut faults.clock_faults, line);
                    continue;
                }
                Meaning::Crash => {
                    at_host(&mut faults.crashes, line);
                    continue;
                }
                Meaning::Other => continue,
            };
            let until_us = lines[i + 1..]
                .iter()
                .find(|later| {
                    later.action == NemesisAction::Heal
                        || Some(later.action) == end && same_pair(line, later)
                })
                .map_or(u64::MAX, |later| later.at_us);
            let held = Held {
                from_us: line.at_us,
                until_us,
            };
            if let Some(peer) = &line.peer {
                let pair = ordered(&line.host, peer);
                faults.held.entry(pair).or_default().push(held);
            }
        }
        faults
    }

    /// The held or delayed stretch of the link between `host` and `peer` that true time `at_us`
    /// falls in (the one that ends last, when several do).
    pub(crate) fn held_at(&self, host: &str, peer: &str, at_us: u64) -> Option<Held> {
        self.held
            .get(&ordered(host, peer))?
            .iter()
            .filter(|held| held.from_us <= at_us && at_us < held.until_us)
            .max_by_key(|held| held.until_us)
            .copied()
    }

    /// The first clock fault on `host` before true time `until_us`, µs.
    pub(crate) fn clock_fault_before(&self, host: &str, until_us: u64) -> Option<u64> {
        first_in(&self.clock_faults, host, 0, until_us)
    }

    /// The first crash (`crash`, live mode's `sigkill`) of `host` in true time
    /// `[from_us, until_us)`, µs.
    pub(crate) fn crash_in(&self, host: &str, from_us: u64, until_us: u64) -> Option<u64> {
        first_in(&self.crashes, host, from_us, until_us)
    }
}

/// The pair `a`, `b` in order: a link's key either way round.
fn ordered(a: &str, b: &str) -> [String; 2] {
    let mut pair = [a.to_owned(), b.to_owned()];
    pair.sort();
    pair
}

/// Notes nemesis line `line`'s instant among its host's in `instants`.
fn at_host(instants: &mut BTreeMap<String, Vec<u64>>, line: &NemesisLine) {
    instants
        .entry(line.host.clone())
        .or_default()
        .push(line.at_us);
}

/// The first of `host`'s instants in true time `[from_us, until_us)`.
fn first_in(
    instants: &BTreeMap<String, Vec<u64>>,
    host: &str,
    from_us: u64,
    until_us: u64,
) -> Option<u64> {
    instants
        .get(host)?
        .iter()
        .copied()
        .find(|at| (from_us..until_us).contains(at))
}

/// Whether `a` and `b` act on the same pair of hosts, in either order.
fn same_pair(a: &NemesisLine, b: &NemesisLine) -> bool {
    pair(a) == pair(b)
}

/// The hosts `line` acts on, in order.
fn pair(line: &NemesisLine) -> [Option<&str>; 2] {
    let mut ends = [Some(line.host.as_str()), line.peer.as_deref()];
    ends.sort();
    ends
}

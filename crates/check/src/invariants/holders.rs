//! The holders' side of a lease, for a backend without an authority clock (KubeLease,
//! docs/backends.md#kubelease and docs/checks.md#excl): which process a Lease object's
//! `holderIdentity` names, each process's monotonic clock read through its clock segments, and
//! each holder's validity windows placed in true time.
//!
//! A **validity window** is what a successful `lease_acquire` / `lease_renew` of process P let
//! P believe (docs/contracts.md#client-side-validity): from the true time the call completed (P
//! cannot act on a grant before it has it; a KubeLease acquire is a series of reads and
//! updates that can take seconds under held replies, and its grant is written by the last of
//! them) to `valid_until` = `invoke_local_us` + the granted `ttl_us` − the skew margin of that
//! TTL on P's own clock — the deadline STOP recomputes
//! ([`super::stop::Margin::valid_until_local_us`]), counted from the call's start, which only
//! shortens it — mapped to true time through P's clock segments in P's boot (its incarnation)
//! ([`ClockMap::true_at_in_boot`]). It is cut short at the first of, after it starts:
//! the true invoke time of P's own release of that token; the completion of P's renew of that
//! token answered `held` (P observed the loss); the end of P's boot (P crashed). A release or
//! held renew of a *higher* token of P's cuts it too: P holds the lease value its last grant
//! returned, so when a renew returned another token (a bug TOKEN reports), the release of the
//! new value ends P's use of the old one as well; a stale release of a lower token cuts
//! nothing later. Without clock segments for P's host, P's clock is taken to equal true time.

use std::collections::BTreeMap;

use super::stop::Margin;
use leasesim_history::{ClockLine, ClockMap, History, Op, OpLine, OpResult, Outcome, Process};

/// The process `holder_identity` names: an owner's Display form `replica-N#incarnation`
/// (`Owner` in `crates/core/src/lease/mod.rs`); `None` for `""` or anything else.
pub fn parse_holder(holder_identity: &str) -> Option<Process> {
    let (replica, incarnation) = holder_identity.rsplit_once('#')?;
    let number = replica.strip_prefix("replica-")?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let incarnation = incarnation.parse::<u64>().ok()?;
    Some(Process::new(replica, incarnation))
}

/// Every host's monotonic clock, for reading a process's clock in its own boot.
pub(crate) struct Clocks {
    maps: BTreeMap<String, ClockMap>,
}

impl Clocks {
    /// The clock maps of `history` (none when its segments do not form maps: every clock is
    /// then taken to equal true time).
    pub(crate) fn new(history: &History) -> Self {
        Clocks {
            maps: history.clock_maps().unwrap_or_default(),
        }
    }

    /// `process`'s boot's segments, each with the true time the next segment (of any boot)
    /// starts; `None` without segments for its host or for its boot.
    fn boot_segments(&self, process: &Process) -> Option<Vec<(&ClockLine, Option<u64>)>> {
        let segments = self.maps.get(&process.replica)?.segments();
        let own: Vec<(&ClockLine, Option<u64>)> = segments
            .iter()
            .enumerate()
            .filter(|(_, s)| s.boot == process.incarnation)
            .map(|(i, s)| (s, segments.get(i + 1).map(|next| next.from_us)))
            .collect();
        (!own.is_empty()).then_some(own)
    }

    /// True time at which `process`'s clock reads `local_us` in its boot; `None` when its boot
    /// ends first (or its clock never gets there). Without segments: `local_us` itself.
    pub(crate) fn true_at(&self, process: &Process, local_us: u64) -> Option<u64> {
        match self.maps.get(&process.replica) {
            Some(map) if self.boot_segments(process).is_some() => {
                map.true_at_in_boot(process.incarnation, local_us)
            }
            _ => Some(local_us),
        }
    }

    /// True time `process`'s boot ended (its host restarted with a later boot); `None` when it
    /// ran to the end of the history, or without segments.
    pub(crate) fn boot_end(&self, process: &Process) -> Option<u64> {
        self.boot_segments(process)?
            .last()
            .and_then(|(_, next)| *next)
    }

    /// True time `process`'s boot started; `None` without segments.
    pub(crate) fn boot_start(&self, process: &Process) -> Option<u64> {
        Some(self.boot_segments(process)?.first()?.0.from_us)
    }

    /// `process`'s reading at true time `true_us`, in its boot: its first reading before the
    /// boot started, its last one after the boot ended; without segments, `true_us` itself.
    pub(crate) fn reading(&self, process: &Process, true_us: u64) -> u64 {
        let Some(segments) = self.boot_segments(process) else {
            return true_us;
        };
        let Some((segment, next)) = segments.iter().rev().find(|(s, _)| s.from_us <= true_us)
        else {
            return segments[0].0.local_from_us;
        };
        let at = next.map_or(true_us, |next| true_us.min(next));
        if segment.suspended {
            return segment.local_from_us;
        }
        let elapsed = i128::from(at - segment.from_us);
        let advanced = elapsed * (1_000_000 + i128::from(segment.drift_ppm)) / 1_000_000;
        u64::try_from(i128::from(segment.local_from_us) + advanced).unwrap_or(u64::MAX)
    }

    /// The slowest and fastest rate error of `process`'s clock over true time
    /// `[from_us, to_us]`, ppm (a suspended segment counts as −1 000 000: the clock stands
    /// still); `(0, 0)` without segments.
    pub(crate) fn drift_range(&self, process: &Process, from_us: u64, to_us: u64) -> (i64, i64) {
        let Some(segments) = self.boot_segments(process) else {
            return (0, 0);
        };
        let rates = segments
            .iter()
            .filter(|(s, next)| s.from_us <= to_us && next.is_none_or(|next| next > from_us))
            .map(|(s, _)| if s.suspended { -1_000_000 } else { s.drift_ppm });
        rates
            .fold(None, |range: Option<(i64, i64)>, rate| {
                Some(range.map_or((rate, rate), |(lo, hi)| (lo.min(rate), hi.max(rate))))
            })
            .unwrap_or((0, 0))
    }
}

/// What cut a validity window short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut<'h> {
    /// The holder's own release of the token, invoked then.
    Release(&'h OpLine),
    /// The holder's renew of the token answered `held`, completed then.
    HeldRenew(&'h OpLine),
    /// The holder's boot ended (it crashed).
    Crash,
}

/// One validity window of a holder, in true time.
#[derive(Clone, Debug)]
pub(crate) struct Window<'h> {
    /// The successful acquire or renew it comes from.
    pub(crate) op: &'h OpLine,
    /// The token it granted.
    pub(crate) token: u64,
    /// The TTL it granted, µs.
    pub(crate) ttl_us: u64,
    /// True time it starts (the op's completion: when the holder has the grant), µs.
    pub(crate) from_us: u64,
    /// True time it ends, after any cut, µs (`u64::MAX`: never, a clock stopped for good).
    pub(crate) until_us: u64,
    /// What cut it short, if anything did.
    pub(crate) cut: Option<Cut<'h>>,
}

impl Window<'_> {
    /// Whether true time `at_us` lies inside the window.
    pub(crate) fn contains(&self, at_us: u64) -> bool {
        self.from_us < at_us && at_us < self.until_us
    }

    /// The holder.
    pub(crate) fn process(&self) -> &Process {
        &self.op.process
    }

    /// The window as evidence.
    pub(crate) fn evidence(&self) -> super::Evidence {
        super::Evidence::Window {
            process: self.op.process.clone(),
            session: self.op.session.clone(),
            token: self.token,
            op: self.op.id,
            from_us: self.from_us,
            until_us: self.until_us,
        }
    }

    /// What cut the window, in words (`""` when nothing did).
    pub(crate) fn cut_words(&self) -> String {
        match self.cut {
            None => String::new(),
            Some(Cut::Release(op)) => format!(", cut by its release (op {})", op.id),
            Some(Cut::HeldRenew(op)) => format!(", cut by its renew answered held (op {})", op.id),
            Some(Cut::Crash) => ", cut by its crash".to_string(),
        }
    }
}

/// Every holder's validity windows, by session, each session's sorted by start (then op id).
pub(crate) fn windows<'h>(
    history: &'h History,
    clocks: &Clocks,
    margin: Margin,
) -> BTreeMap<String, Vec<Window<'h>>> {
    let mut by_session: BTreeMap<String, Vec<Window<'h>>> = BTreeMap::new();
    for op in history.ops() {
        let (Op::LeaseAcquire { .. } | Op::LeaseRenew { .. }, Outcome::Ok) = (&op.op, op.outcome)
        else {
            continue;
        };
        let Some(OpResult::Granted { token, ttl_us, .. }) = op.result else {
            continue;
        };
        let Some(granted_us) = op.complete_us else {
            continue;
        };
        let valid_until = margin.valid_until_local_us(op, ttl_us);
        // The deadline in true time; when P's boot ends before its clock gets there, the
        // crash cuts the window (below). A deadline already past when the grant arrived
        // leaves an empty window.
        let until_us = clocks
            .true_at(&op.process, valid_until)
            .map(|true_us| true_us.max(granted_us))
            .or_else(|| clocks.boot_end(&op.process))
            .unwrap_or(u64::MAX);
        let mut window = Window {
            op,
            token,
            ttl_us,
            from_us: granted_us,
            until_us,
            cut: None,
        };
        if let Some(crash) = clocks.boot_end(&op.process)
            && crash <= window.until_us
        {
            window.until_us = crash;
            window.cut = Some(Cut::Crash);
        }
        by_session
            .entry(op.session.clone())
            .or_default()
            .push(window);
    }
    for op in history.ops() {
        let (at_us, cut) = match (&op.op, op.outcome, &op.result) {
            (Op::LeaseRelease { token, .. }, _, _) => {
                (Some(op.invoke_us), (*token, Cut::Release(op)))
            }
            (Op::LeaseRenew { token, .. }, Outcome::Fail, Some(OpResult::Held { .. })) => {
                (op.complete_us, (*token, Cut::HeldRenew(op)))
            }
            _ => continue,
        };
        let (Some(at_us), (token, cut)) = (at_us, cut) else {
            continue;
        };
        for window in by_session.get_mut(&op.session).into_iter().flatten() {
            if window.op.process == op.process
                && window.token <= token
                && at_us >= window.from_us
                && at_us < window.until_us
            {
                window.until_us = at_us;
                window.cut = Some(cut);
            }
        }
    }
    for windows in by_session.values_mut() {
        windows.sort_by_key(|w| (w.from_us, w.op.id));
    }
    by_session
}

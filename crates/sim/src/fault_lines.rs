//! What the history says of each nemesis action: `nemesis` lines ([`NemesisLine`]), so a
//! history alone shows every fault (the timeline draws them; the checkers ignore them).
//!
//! A fault with an extent is two lines on the host it hits: its start (`pause`, `suspend`,
//! `stall`, `crash`, `partition`, `hold`, `delay_replies`, `hold_replies`, `authority_errors`,
//! …) and its end (`resume` for a freeze, `restart` after a crash, `release`, `deliver` or
//! `release_replies` for a held link, `serve` after an error window, `heal` on `all` for everything). A freeze's `resume` is
//! written when the freeze starts, at the time it will end, and clamped to the run's end by
//! the world; an armed freeze's lines are written when its pause point was reached
//! ([`freeze_lines`]). Instant faults (`clock_drift`, `wall_jump`, `wall_offset`,
//! `delete_lease_record`) are one line.

use std::time::Duration;

use super::gate::{ArmedFreeze, FreezeKind};
use super::schedule::Fault;
use leasesim_history::{NemesisAction, NemesisLine, micros};

/// The catch-all host of a heal.
pub const ALL: &str = "all";

/// A line at `at_us` on `host`.
pub fn line(
    at_us: u64,
    action: NemesisAction,
    host: &str,
    peer: Option<&str>,
    detail: Option<String>,
) -> NemesisLine {
    NemesisLine {
        at_us,
        host: host.to_owned(),
        action,
        peer: peer.map(str::to_owned),
        detail,
    }
}

/// The lines of scheduled `fault` applied at `now` (`authority`: the lease authority's host,
/// which lease record deletions hit). An armed freeze (at a pause point) has none here: see
/// [`freeze_lines`].
pub fn fault_lines(now: Duration, fault: &Fault, authority: &str) -> Vec<NemesisLine> {
    let at = micros(now);
    match fault {
        Fault::Pause {
            host,
            duration_ms,
            at_point: None,
        } => timed_freeze(at, NemesisAction::Pause, host, *duration_ms, None),
        Fault::Suspend {
            host,
            duration_ms,
            at_point: None,
        } => timed_freeze(at, NemesisAction::Suspend, host, *duration_ms, None),
        // Armed freezes and worker panics are written when a task reaches their point
        // ([`freeze_lines`]); each bounce of a restart series as a `restart` when it happens.
        Fault::Pause { .. }
        | Fault::Suspend { .. }
        | Fault::Stall { .. }
        | Fault::WorkerPanic { .. }
        | Fault::LeaseServiceRestarts { .. } => Vec::new(),
        // Every other fault is one line: on a link, or on a host.
        _ => link_line(at, fault)
            .or_else(|| host_line(at, fault, authority))
            .into_iter()
            .collect(),
    }
}

/// The one line of a fault on a link (host, then peer), at `at` µs; `None` for any other.
fn link_line(at: u64, fault: &Fault) -> Option<NemesisLine> {
    let ms = |n: u64| Some(format!("{n} ms"));
    let (action, host, peer, detail) = match fault {
        Fault::Partition { a, b } => (NemesisAction::Partition, a, b, None),
        Fault::PartitionOneWay { from, to } => (NemesisAction::PartitionOneWay, from, to, None),
        Fault::Hold { a, b } => (NemesisAction::Hold, a, b, None),
        Fault::Release { a, b } => (NemesisAction::Release, a, b, None),
        Fault::Latency {
            a,
            b,
            latency_ms,
            jitter_ms,
        } => (
            NemesisAction::Latency,
            a,
            b,
            Some(format!("{latency_ms} ms + up to {jitter_ms} ms")),
        ),
        Fault::LinkFlaps { a, b, fail_ppm } => (
            NemesisAction::LinkFlaps,
            a,
            b,
            Some(format!("{fail_ppm} ppm")),
        ),
        Fault::DelayReplies { from, to, delay_ms } => {
            (NemesisAction::DelayReplies, from, to, ms(*delay_ms))
        }
        Fault::HoldReplies {
            from,
            to,
            duration_ms,
        } => (NemesisAction::HoldReplies, from, to, ms(*duration_ms)),
        _ => return None,
    };
    Some(line(at, action, host, Some(peer), detail))
}

/// The one line of a fault on a host (or, for a heal, on [`ALL`]), at `at` µs; `None` for
/// any other.
fn host_line(at: u64, fault: &Fault, authority: &str) -> Option<NemesisLine> {
    let (action, host, peer, detail): (_, &str, _, _) = match fault {
        Fault::Isolate { host } => (NemesisAction::Isolate, host, None, None),
        Fault::Heal => (NemesisAction::Heal, ALL, None, None),
        Fault::ClockDrift { host, ppm } => (
            NemesisAction::ClockDrift,
            host,
            None,
            Some(format!("{ppm:+} ppm")),
        ),
        Fault::WallJump { host, delta_ms } => (
            NemesisAction::WallJump,
            host,
            None,
            Some(format!("{delta_ms:+} ms")),
        ),
        Fault::WallOffset { host, offset_ms } => (
            NemesisAction::WallOffset,
            host,
            None,
            Some(format!("{offset_ms:+} ms")),
        ),
        Fault::Crash { host } => (NemesisAction::Crash, host, None, None),
        Fault::Fork { host, mode } => (NemesisAction::Fork, host, None, Some(mode.name().into())),
        Fault::Restart { host } => (NemesisAction::Restart, host, None, None),
        Fault::DeleteLeaseRecord { session } => (
            NemesisAction::DeleteLeaseRecord,
            authority,
            None,
            Some(format!("session {session}")),
        ),
        Fault::AuthorityErrors {
            duration_ms,
            status,
            to,
        } => (
            NemesisAction::AuthorityErrors,
            authority,
            to.as_deref(),
            Some(format!("{status:?} for {duration_ms} ms")),
        ),
        _ => return None,
    };
    Some(line(at, action, host, peer, detail))
}

/// The lines of an armed freeze that fired on `host` at true time `start`.
pub fn freeze_lines(host: &str, start: Duration, armed: &ArmedFreeze) -> Vec<NemesisLine> {
    let action = match armed.kind {
        FreezeKind::Pause => NemesisAction::Pause,
        FreezeKind::Suspend => NemesisAction::Suspend,
        FreezeKind::Stall => NemesisAction::Stall,
        FreezeKind::Panic => NemesisAction::WorkerPanic,
    };
    let point = serde_json::to_value(armed.point)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    timed_freeze(
        micros(start),
        action,
        host,
        armed.duration.as_millis() as u64,
        Some(point),
    )
}

/// A freeze's start line and its `resume` line `duration_ms` later.
fn timed_freeze(
    at_us: u64,
    action: NemesisAction,
    host: &str,
    duration_ms: u64,
    point: Option<String>,
) -> Vec<NemesisLine> {
    let detail = match point {
        Some(point) => format!("{duration_ms} ms at {point}"),
        None => format!("{duration_ms} ms"),
    };
    vec![
        line(at_us, action, host, None, Some(detail)),
        line(
            at_us.saturating_add(duration_ms.saturating_mul(1_000)),
            NemesisAction::Resume,
            host,
            None,
            None,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_core::hooks::PausePoint;

    #[test]
    fn a_timed_pause_is_a_start_and_a_resume_line() {
        let fault = Fault::Pause {
            host: "replica-1".into(),
            duration_ms: 2_500,
            at_point: None,
        };
        let lines = fault_lines(Duration::from_secs(3), &fault, "lease");
        let summary: Vec<(u64, NemesisAction, &str)> = lines
            .iter()
            .map(|l| (l.at_us, l.action, l.host.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (3_000_000, NemesisAction::Pause, "replica-1"),
                (5_500_000, NemesisAction::Resume, "replica-1")
            ]
        );
    }

    #[test]
    fn an_armed_freeze_names_its_pause_point() {
        let armed = ArmedFreeze {
            point: PausePoint::BeforeAppendSend,
            kind: FreezeKind::Suspend,
            duration: Duration::from_millis(100),
        };
        let lines = freeze_lines("replica-2", Duration::from_millis(700), &armed);
        assert_eq!(lines[0].action, NemesisAction::Suspend);
        assert_eq!(
            lines[0].detail.as_deref(),
            Some("100 ms at before_append_send")
        );
        assert_eq!(
            (lines[1].action, lines[1].at_us),
            (NemesisAction::Resume, 800_000)
        );
    }

    #[test]
    fn a_partition_names_both_ends() {
        let fault = Fault::Partition {
            a: "replica-1".into(),
            b: "lease".into(),
        };
        let lines = fault_lines(Duration::ZERO, &fault, "lease");
        assert_eq!(lines.len(), 1);
        assert_eq!(
            (lines[0].host.as_str(), lines[0].peer.as_deref()),
            ("replica-1", Some("lease"))
        );
    }
}

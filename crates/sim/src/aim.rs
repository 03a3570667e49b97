//! Faults aimed at a session's holder (docs/world.md#faults-aimed-at-the-holder): which
//! replica holds a session when a fault strikes, read from what the authority decided so far,
//! and the fault turned on that replica.
//!
//! After Jepsen's nemesis targeting (`jepsen.nemesis.combined`, `:primaries`: the nodes the
//! database itself calls primary when the fault strikes), with the lease authority in the
//! database's place.

use super::fault_lines;
use super::record::Recorder;
use super::schedule::{Fault, Target};
use leasesim_history::{Decision, Line, NemesisAction, NemesisLine};

/// The replica holding `session` after `lines` (a run's decisions, writes and events so far,
/// in the order they happened): the owner of the session's latest grant or renewal the
/// authority decided, or on a backend judged on its API server's writes (KubeLease) the
/// `holderIdentity` of the session's latest accepted write. `None` when nothing was granted
/// yet, or the latest grant ended: a release that ended it, a write that emptied
/// `holderIdentity` or deleted the object. Expiry does not end it: a holder nobody took over
/// from still acts on its lease until its own clock says it is over, and it is the replica a
/// fault aimed at the holder means to strike.
pub fn holder(lines: &[Line], session: &str) -> Option<String> {
    lines
        .iter()
        .rev()
        .find_map(|line| match line {
            Line::Decision(d) if d.session == session => match &d.decision {
                Decision::Grant { .. } | Decision::Renew { .. } => {
                    Some(Some(d.owner.replica.clone()))
                }
                Decision::Release { ended: true, .. } => Some(None),
                Decision::Release { ended: false, .. } | Decision::Refuse { .. } => None,
            },
            Line::Write(w) if w.session == session => Some(replica_of_identity(&w.holder_identity)),
            _ => None,
        })
        .flatten()
}

/// The replica of a `holderIdentity` (`replica-2#1`: incarnation 1 of `replica-2`); `None`
/// for an empty one.
fn replica_of_identity(identity: &str) -> Option<String> {
    let replica = identity.split('#').next().unwrap_or_default();
    (!replica.is_empty()).then(|| replica.to_owned())
}

/// Turns `fault` on the replica `target` resolves to now, from what `recorder` recorded so
/// far, and records the `aim_at_holder` line at `at_us` ([`aim`]).
pub(crate) fn strike(recorder: &Recorder, fault: &mut Fault, target: &Target, at_us: u64) {
    let Target::Holder(session) = target;
    let holder = recorder.with_lines(|lines| holder(lines, session));
    recorder.nemesis(aim(fault, target, holder, at_us));
}

/// Turns `fault` on the replica `target` resolves to, `holder` (from [`holder`]), and returns
/// the `aim_at_holder` line that says so, at `at_us` on the replica struck. Nobody holding
/// the session: the fault strikes the replica the schedule names, unchanged, and the line
/// says nobody held it.
pub fn aim(fault: &mut Fault, target: &Target, holder: Option<String>, at_us: u64) -> NemesisLine {
    let Target::Holder(session) = target;
    let Some(replica) = fault.replica_mut() else {
        unreachable!("a schedule with a target names one replica (validated): {fault:?}")
    };
    let detail = match holder {
        Some(holder) => {
            *replica = holder;
            format!("holder of {session}")
        }
        None => format!("nobody holds {session}: the schedule's replica"),
    };
    fault_lines::line(
        at_us,
        NemesisAction::AimAtHolder,
        replica,
        None,
        Some(detail),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasesim_history::{DecisionLine, Process, WriteLine, WriteVerb};

    fn decision(session: &str, replica: &str, decision: Decision) -> Line {
        Line::Decision(DecisionLine {
            session: session.into(),
            owner: Process::new(replica, 0),
            decision,
            at_authority_us: 0,
            at_us: 0,
        })
    }

    fn grant(session: &str, replica: &str) -> Line {
        let decision_ = Decision::Grant {
            token: 1,
            expiry_authority_us: 10_000_000,
            ttl_us: 10_000_000,
        };
        decision(session, replica, decision_)
    }

    fn write(session: &str, holder_identity: &str) -> Line {
        Line::Write(WriteLine {
            host: "apiserver".into(),
            session: session.into(),
            object: session.into(),
            verb: WriteVerb::Update,
            holder_identity: holder_identity.into(),
            transitions: 1,
            resource_version: 7,
            at_us: 0,
        })
    }

    #[test]
    fn the_holder_is_the_owner_of_the_sessions_latest_grant() {
        let lines = [grant("s1", "replica-1"), grant("s2", "replica-3")];
        assert_eq!(holder(&lines, "s1").as_deref(), Some("replica-1"));
        assert_eq!(holder(&lines, "s2").as_deref(), Some("replica-3"));
        assert_eq!(holder(&lines, "s3"), None, "never granted");
        let taken_over = [grant("s1", "replica-1"), grant("s1", "replica-2")];
        assert_eq!(holder(&taken_over, "s1").as_deref(), Some("replica-2"));
    }

    #[test]
    fn a_release_that_ended_the_hold_leaves_nobody_and_a_stale_one_changes_nothing() {
        let release = |ended| Decision::Release { token: 1, ended };
        let ended = [
            grant("s1", "replica-1"),
            decision("s1", "replica-1", release(true)),
        ];
        assert_eq!(holder(&ended, "s1"), None);
        let stale = [
            grant("s1", "replica-2"),
            decision("s1", "replica-1", release(false)),
        ];
        assert_eq!(holder(&stale, "s1").as_deref(), Some("replica-2"));
    }

    #[test]
    fn on_the_api_server_the_holder_is_the_latest_writes_holder_identity() {
        let lines = [write("s1", "replica-1#0"), write("s1", "replica-2#3")];
        assert_eq!(holder(&lines, "s1").as_deref(), Some("replica-2"));
        let released = [write("s1", "replica-1#0"), write("s1", "")];
        assert_eq!(holder(&released, "s1"), None);
    }

    #[test]
    fn an_aimed_fault_strikes_the_holder_or_else_the_replica_it_names() {
        let pause = || Fault::Pause {
            host: "replica-1".into(),
            duration_ms: 5_000,
            at_point: None,
        };
        let target = Target::Holder("s1".into());
        let mut aimed = pause();
        let line = aim(&mut aimed, &target, Some("replica-3".into()), 7);
        assert_eq!(
            aimed,
            Fault::Pause {
                host: "replica-3".into(),
                duration_ms: 5_000,
                at_point: None
            }
        );
        assert_eq!(
            (line.at_us, line.action, line.host.as_str()),
            (7, NemesisAction::AimAtHolder, "replica-3")
        );
        assert_eq!(line.detail.as_deref(), Some("holder of s1"));
        let mut unheld = pause();
        let line = aim(&mut unheld, &target, None, 7);
        assert_eq!(unheld, pause());
        assert_eq!(line.host, "replica-1");
        assert_eq!(
            line.detail.as_deref(),
            Some("nobody holds s1: the schedule's replica")
        );
    }
}

//! Faults of the authority and of its replies, each from its scenario file in `sims/`, ending in
//! its right outcome: a grant held one way beyond the TTL arrives and is not used
//! (`hold_replies`), and an append acknowledged past the deadline is `ok` (it committed); a renewer whose renewals are answered PERMISSION_DENIED gives the lease
//! up at its own deadline (`authority_errors`); a series of lease service restarts with
//! downtime waits out the grace period once, on uptime (`lease_service_restarts` with
//! `downtime_ms`).

use leasesim::history::{Decision, HistLossCause, History, OpResult, Outcome, Refusal};

use crate::support::{B1_AFTER_A_FENCED_NOTHING, appended, ledger, ops, outcomes, run};

const A: &str = "replica-1";
const B: &str = "replica-2";
const SEEDS: [u64; 2] = [1, 2];

/// Tokens of the grants the authority decided, in order, as `(replica, token, true time µs)`.
fn grants(history: &History) -> Vec<(String, u64, u64)> {
    history
        .decisions()
        .filter_map(|d| match d.decision {
            Decision::Grant { token, .. } => Some((d.owner.replica.clone(), token, d.at_us)),
            _ => None,
        })
        .collect()
}

fn deadline(valid_until_local_us: u64) -> OpResult {
    OpResult::LeaseLost {
        cause: HistLossCause::Deadline {
            valid_until_local_us,
        },
    }
}

#[test]
fn a_grant_held_one_way_past_the_ttl_arrives_and_is_not_used() {
    for seed in SEEDS {
        let history = run("late-grant-held-one-way", seed);
        let acquire = ops(&history, A, "lease_acquire")[0];
        // Sent at 2 s, answered on the same call after the hold ended at 13 s: the
        // connection lived through the hold.
        assert_eq!(acquire.outcome, Outcome::Ok, "seed {seed}");
        assert!(matches!(
            acquire.result,
            Some(OpResult::Granted { token: 1, .. })
        ));
        assert!(acquire.invoke_us < 2_100_000, "seed {seed}: {acquire:?}");
        assert!(
            acquire.complete_us.is_some_and(|c| c >= 13_000_000),
            "seed {seed}: {acquire:?}"
        );
        let open = ops(&history, A, "journal_open")[0];
        assert_eq!(
            (open.outcome, open.result.clone()),
            (Outcome::Fail, Some(deadline(11_000_000))),
            "seed {seed}: the grant came after 2 + 10 - 1 s on replica-1's clock"
        );
        let tokens: Vec<(String, u64)> = grants(&history)
            .into_iter()
            .map(|(replica, token, _)| (replica, token))
            .collect();
        assert_eq!(tokens, [(A.into(), 1), (B.into(), 2)], "seed {seed}");
        assert_eq!(ledger(&history, "s1"), B1_AFTER_A_FENCED_NOTHING);
    }
}

#[test]
fn an_append_acknowledged_past_the_deadline_is_ok_because_it_committed() {
    for seed in SEEDS {
        let history = run("committed-append-reply-late", seed);
        let a2 = ops(&history, A, "journal_append")[1];
        // Sent at 2 s, committed, acknowledged after the hold ended at 15.5 s: past replica-1's
        // 9 s deadline, but the append took effect, so it is `ok`, never a `fail`.
        assert_eq!(
            (a2.outcome, a2.result.clone()),
            (Outcome::Ok, Some(OpResult::Appended { seq: 3 })),
            "seed {seed}"
        );
        assert!(
            a2.complete_us.is_some_and(|c| c >= 15_500_000),
            "seed {seed}: {a2:?}"
        );
        let tokens: Vec<(String, u64)> = grants(&history)
            .into_iter()
            .map(|(replica, token, _)| (replica, token))
            .collect();
        assert_eq!(tokens, [(A.into(), 1), (B.into(), 2)], "seed {seed}");
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "a2 replica-1",
                "fence 2 replica-2",
                "b1 replica-2"
            ]
        );
    }
}

#[test]
fn renewals_answered_permission_denied_end_the_hold_at_its_own_deadline() {
    for seed in SEEDS {
        let history = run("authority-denies-renewals", seed);
        assert_eq!(
            outcomes(&history, A, "journal_append"),
            [
                appended(2),
                appended(3),
                appended(4),
                (Outcome::Fail, deadline(12_334_000))
            ],
            "seed {seed}: a4 at 16 s is past the deadline of the renew sent at 3.334 s"
        );
        // Every renew inside the window was answered the status, retried, never a success.
        let denied: Vec<_> = ops(&history, A, "lease_renew")
            .into_iter()
            .filter(|op| op.invoke_us >= 4_000_000)
            .collect();
        assert!(denied.len() >= 2, "seed {seed}: {denied:?}");
        for op in &denied {
            assert!(
                matches!(&op.result, Some(OpResult::Unavailable { reason }) if reason.contains("PermissionDenied")),
                "seed {seed}: {op:?}"
            );
        }
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "a2 replica-1",
                "a3 replica-1",
                "fence 2 replica-2",
                "b1 replica-2"
            ]
        );
    }
}

#[test]
fn a_restart_series_with_downtime_waits_out_the_grace_once_on_uptime() {
    for seed in SEEDS {
        let history = run("lease-restarts-with-downtime", seed);
        // Six restarts, each down for 1 s: the down authority's clock is stopped.
        let segments: Vec<(u64, bool)> = history
            .clock_segments()
            .filter(|s| s.host == "lease")
            .map(|s| (s.from_us, s.suspended))
            .collect();
        let expected: Vec<(u64, bool)> = (0..6)
            .flat_map(|i| {
                let at = 3_000_000 + i * 5_000_000;
                [(at, true), (at + 1_000_000, false)]
            })
            .collect();
        assert_eq!(segments[1..], expected[..], "seed {seed}");
        let first_refusal = history
            .decisions()
            .find(|d| d.owner.replica == B)
            .map(|d| (d.at_us / 1_000_000, d.decision.clone()));
        assert!(
            matches!(
                first_refusal,
                Some((
                    12,
                    Decision::Refuse {
                        reason: Refusal::GracePeriod { .. },
                        ..
                    }
                ))
            ),
            "seed {seed}: {first_refusal:?}"
        );
        // Granted inside the series, a TTL of uptime (and what the crashes lost) after the
        // grant of 1 s: 2 s + 4 s a boot, the boots of 4, 9 and 14 s, then 19 s.
        let granted = grants(&history);
        assert_eq!((granted[1].0.as_str(), granted[1].1), (B, 2), "seed {seed}");
        assert!(
            (16_000_000..21_000_000).contains(&granted[1].2),
            "seed {seed}: {granted:?}"
        );
    }
}

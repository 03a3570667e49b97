//! Field cases F9–F13 of `docs/field-cases.md` (issue 43: public bugs of 2023–2026), each run
//! from its scenario file on more than one seed, end in the right outcome the case names.

use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::history::{Decision, HistLossCause, History, OpResult, Outcome};

use crate::support::{A1_THEN_B1, appended, grants, ledger, ops, outcomes, run};

const A: &str = "replica-1";
const B: &str = "replica-2";

const SEEDS: [u64; 2] = [1, 2];

/// The releases the authority answered, as `(replica, token presented, ended a hold)`.
fn releases(history: &History) -> Vec<(String, u64, bool)> {
    history
        .decisions()
        .filter_map(|d| match d.decision {
            Decision::Release { token, ended } => Some((d.owner.replica.clone(), token, ended)),
            _ => None,
        })
        .collect()
}

fn held(holder_token: Option<u64>) -> (Outcome, OpResult) {
    (Outcome::Fail, OpResult::Held { holder_token })
}

fn granted_token(outcome: &(Outcome, OpResult)) -> Option<u64> {
    match outcome {
        (Outcome::Ok, OpResult::Granted { token, .. }) => Some(*token),
        _ => None,
    }
}

/// F9 (etcd-io/etcd#22082): the retry of a release whose reply was lost presents the old
/// token, so it frees nothing of the same owner's newer hold.
#[test]
fn f9_a_retried_release_leaves_the_same_owners_newer_hold_alone() {
    for seed in SEEDS {
        let history = run("f9-retried-release-frees-newer-hold", seed);
        assert_eq!(
            releases(&history),
            [(A.into(), 1, true), (A.into(), 1, false)],
            "seed {seed}: the first release ends token 1, its retry ends nothing"
        );
        let a_releases = outcomes(&history, A, "lease_release");
        assert!(
            matches!(a_releases[0], (Outcome::Info, OpResult::Unavailable { .. })),
            "seed {seed}: the first release's reply is lost: {a_releases:?}"
        );
        assert_eq!(
            grants(&history),
            [(A.into(), 1), (A.into(), 2)],
            "seed {seed}"
        );
        assert_eq!(outcomes(&history, B, "lease_acquire"), [held(Some(2))]);
        let renews: Vec<Option<u64>> = outcomes(&history, A, "lease_renew")
            .iter()
            .map(granted_token)
            .collect();
        assert_eq!(renews, [Some(2)], "seed {seed}: A still holds token 2");
    }
}

/// F10 (kubernetes/kubernetes#139991): every run ends in a graceful shutdown, often while the
/// run still appends; the leases change hands at once and no check breaks (STOP: no append
/// judged valid after its hold was released).
#[test]
fn f10_a_shutdown_releases_only_after_the_work_has_let_go() {
    for seed in SEEDS {
        let history = run("f10-release-before-work-ends", seed);
        let violated = judge(&history, Budget::default()).violated();
        assert!(violated.is_empty(), "seed {seed}: {violated:?}");
        let ended = releases(&history).iter().filter(|r| r.2).count();
        assert!(ended >= 2, "seed {seed}: {ended} releases ended a hold");
        let holders: Vec<String> = grants(&history).into_iter().map(|g| g.0).collect();
        let handovers = holders.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(
            handovers >= 2,
            "seed {seed}: s1 changed hands {handovers} times"
        );
    }
}

/// F11 (cirello-io/dynamolock#280): a renew applied whose reply was lost is retried, and the
/// retry renews the same lease: no loss, no gap, the other replica refused.
#[test]
fn f11_a_renewal_whose_reply_was_lost_is_renewed_by_its_retry() {
    for seed in SEEDS {
        let history = run("f11-heartbeat-reply-lost", seed);
        let renews = outcomes(&history, A, "lease_renew");
        assert!(
            matches!(renews[0], (Outcome::Info, OpResult::Unavailable { .. })),
            "seed {seed}: the first renew's reply is lost: {renews:?}"
        );
        assert!(
            renews[1..].iter().all(|r| granted_token(r) == Some(1)),
            "seed {seed}: every later renew keeps token 1: {renews:?}"
        );
        let applied = history
            .decisions()
            .filter(|d| matches!(d.decision, Decision::Renew { token: 1, .. }))
            .filter(|d| d.at_us < 5_000_000)
            .count();
        assert_eq!(applied, 1, "seed {seed}: the lost renew was applied");
        assert_eq!(grants(&history), [(A.into(), 1)], "seed {seed}");
        assert_eq!(outcomes(&history, B, "lease_acquire"), [held(Some(1))]);
        assert_eq!(
            outcomes(&history, A, "journal_append"),
            [appended(2), appended(3), appended(4)],
            "seed {seed}"
        );
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "a2 replica-1",
                "a3 replica-1"
            ]
        );
    }
}

/// F12 (cagriekin/charts#326, impossible by design): the candidate is answered at once, and a
/// grant that arrives after its lease could have run out is never used.
#[test]
fn f12_a_grant_that_arrives_too_late_is_never_used() {
    for seed in SEEDS {
        let history = run("f12-campaign-outlives-its-session", seed);
        let acquires = outcomes(&history, B, "lease_acquire");
        let tokens: Vec<Option<u64>> = acquires.iter().map(granted_token).collect();
        assert_eq!(acquires[0], held(Some(1)), "seed {seed}");
        assert_eq!(tokens[1..], [Some(2), Some(3)], "seed {seed}: {acquires:?}");
        let refused_at_once = ops(&history, B, "lease_acquire")[0]
            .complete_us
            .is_some_and(|c| c < 1_100_000);
        assert!(refused_at_once, "seed {seed}: the Held answer waited");
        let opens = outcomes(&history, B, "journal_open");
        assert!(
            matches!(opens[0], (Outcome::Fail, OpResult::LeaseLost { .. })),
            "seed {seed}: {opens:?}"
        );
        assert!(matches!(opens[1], (Outcome::Ok, OpResult::Opened { .. })));
        assert_eq!(
            grants(&history),
            [(A.into(), 1), (B.into(), 2), (B.into(), 3)]
        );
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "fence 3 replica-2",
                "b1 replica-2"
            ]
        );
    }
}

/// F13 (CURATOR-696, apache/druid#16411): the holder cut off past its TTL stops at its own
/// deadline, and its renew after the heal recreates nothing.
#[test]
fn f13_a_holder_whose_lease_lapsed_leads_no_more() {
    for seed in SEEDS {
        let history = run("f13-leader-after-session-expiry", seed);
        let lost = OpResult::LeaseLost {
            cause: HistLossCause::Deadline {
                valid_until_local_us: 9_000_000,
            },
        };
        assert_eq!(
            outcomes(&history, A, "journal_append"),
            [
                appended(2),
                (Outcome::Fail, lost.clone()),
                (Outcome::Fail, lost)
            ],
            "seed {seed}: a2 (11 s) and a3 (14 s) are refused unsent"
        );
        let late_renews: Vec<(Outcome, OpResult)> = ops(&history, A, "lease_renew")
            .into_iter()
            .filter(|op| op.invoke_us >= 12_500_000)
            .map(|op| (op.outcome, op.result.clone().unwrap()))
            .collect();
        // The first try after the heal finds the channel broken by the partition.
        assert_eq!(late_renews.last(), Some(&held(None)), "seed {seed}");
        assert!(
            late_renews.iter().all(|r| granted_token(r).is_none()),
            "seed {seed}: {late_renews:?}"
        );
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
    }
}

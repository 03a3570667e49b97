//! Replica-side faults and calls, each from its scenario in `sims/`: a scripted graceful
//! shutdown, pauses before each validity decision (an append's, an open's, a clean-up
//! append's), a worker that panics mid-run, and a configured TTL that differs from the one
//! granted. Each asserts the right outcome of the correct implementation on two seeds.

use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::history::{
    Decision, HistLeaseUse, HistLossCause, HistRecord, History, Op, OpResult, Outcome,
};

use crate::support::{
    A1_THEN_B1, B1_AFTER_A_FENCED_NOTHING, appended, grants, ledger, ops, outcomes, run,
};

const A: &str = "replica-1";
const B: &str = "replica-2";

const SEEDS: [u64; 2] = [1, 2];

/// A call refused unsent because the holder's own deadline, 9 s on its clock (acquired at
/// 0 with the granted 10 s TTL, minus the 1 s margin), had passed.
fn lost_at_nine_seconds() -> (Outcome, OpResult) {
    let cause = HistLossCause::Deadline {
        valid_until_local_us: 9_000_000,
    };
    (Outcome::Fail, OpResult::LeaseLost { cause })
}

/// What `replica` judged its lease valid for, in order.
fn decisions(history: &History, replica: &str) -> Vec<HistLeaseUse> {
    history
        .validity_checks()
        .filter(|check| check.process.replica == replica)
        .map(|check| check.purpose)
        .collect()
}

fn assert_clean(history: &History, seed: u64) {
    let violated = judge(history, Budget::default()).violated();
    assert!(violated.is_empty(), "seed {seed}: {violated:?}");
}

/// `sims/<name>.toml` run on each of [`SEEDS`], each judged clean: `(seed, history)`.
fn clean_runs(name: &str) -> impl Iterator<Item = (u64, History)> + '_ {
    SEEDS.into_iter().map(move |seed| {
        let history = run(name, seed);
        assert_clean(&history, seed);
        (seed, history)
    })
}

/// Asserts that A's appends were a1, acknowledged at position 2, and one more refused unsent
/// at A's 9 s deadline ([`lost_at_nine_seconds`]); `why` says why it was refused.
fn assert_a1_then_lost_at_nine_seconds(history: &History, seed: u64, why: &str) {
    assert_eq!(
        outcomes(history, A, "journal_append"),
        [appended(2), lost_at_nine_seconds()],
        "seed {seed}: {why}"
    );
}

#[test]
fn a_scripted_shutdown_cleans_up_releases_and_hands_over_at_once() {
    for (seed, history) in clean_runs("scripted-shutdown-hands-over") {
        assert_eq!(
            ledger(&history, "s1"),
            [
                "fence 1 replica-1",
                "a1 replica-1",
                "clean-up replica-1",
                "fence 2 replica-2",
                "b1 replica-2"
            ],
            "seed {seed}"
        );
        assert_eq!(
            decisions(&history, A),
            [
                HistLeaseUse::JournalOpen,
                HistLeaseUse::Append,
                HistLeaseUse::CleanupAppend
            ],
            "seed {seed}: the open, a1 and the clean-up are each judged"
        );
        let release = ops(&history, A, "lease_release");
        assert_eq!(release.len(), 1, "seed {seed}");
        assert_eq!(release[0].outcome, Outcome::Ok);
        assert!(
            (5_000_000..6_000_000).contains(&release[0].invoke_us),
            "seed {seed}: released at {} µs, not at the 5 s shutdown",
            release[0].invoke_us
        );
        // The renewer ended with the hold: no renew after the release.
        let late_renews = ops(&history, A, "lease_renew")
            .into_iter()
            .filter(|renew| renew.invoke_us >= release[0].invoke_us)
            .count();
        assert_eq!(late_renews, 0, "seed {seed}");
        // B gets token 2 at its 6 s acquire, 4 s before A's lease could have run out.
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
        let b = ops(&history, B, "lease_acquire");
        assert_eq!(b.len(), 1);
        assert!(matches!(
            b[0].result,
            Some(OpResult::Granted { token: 2, .. })
        ));
        assert!(
            b[0].complete_us.is_some_and(|c| c < 7_000_000),
            "seed {seed}"
        );
    }
}

#[test]
fn a_pause_before_the_append_check_ends_in_a_refusal_never_sent() {
    for (seed, history) in clean_runs("pause-before-the-append-check") {
        assert_a1_then_lost_at_nine_seconds(
            &history,
            seed,
            "a2, judged after the 15 s pause, is refused",
        );
        // A sent its fence and a1 only; a2 never reached the ledger (F1's a2 is sent and fenced).
        assert_eq!(ops(&history, A, "ledger_append").len(), 2, "seed {seed}");
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
        assert_eq!(grants(&history), [(A.into(), 1), (B.into(), 2)]);
    }
}

#[test]
fn a_pause_before_the_open_check_ends_in_a_refusal_with_nothing_sent() {
    for (seed, history) in clean_runs("pause-before-the-open-check") {
        assert_eq!(
            outcomes(&history, A, "journal_open"),
            [lost_at_nine_seconds()],
            "seed {seed}: the open, judged after the 15 s pause, is refused"
        );
        assert!(ops(&history, A, "ledger_append").is_empty(), "seed {seed}");
        assert!(decisions(&history, A).is_empty(), "seed {seed}");
        assert_eq!(ledger(&history, "s1"), B1_AFTER_A_FENCED_NOTHING);
    }
}

#[test]
fn a_pause_before_the_cleanup_append_ends_in_a_refusal_never_sent() {
    for (seed, history) in clean_runs("cleanup-append-after-long-pause") {
        assert_a1_then_lost_at_nine_seconds(
            &history,
            seed,
            "the clean-up, judged after the 15 s pause, is refused",
        );
        assert_eq!(
            decisions(&history, A),
            [HistLeaseUse::JournalOpen, HistLeaseUse::Append],
            "seed {seed}: no clean-up decision was made"
        );
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
        // The shutdown still releases; token 1 is stale by then, so it ends nothing.
        let ended: Vec<bool> = history
            .decisions()
            .filter_map(|d| match d.decision {
                Decision::Release { token: 1, ended } => Some(ended),
                _ => None,
            })
            .collect();
        assert_eq!(ended, [false], "seed {seed}");
    }
}

#[test]
fn a_configured_ttl_longer_than_granted_changes_nothing() {
    for (seed, history) in clean_runs("configured-ttl-ignored") {
        assert_a1_then_lost_at_nine_seconds(
            &history,
            seed,
            "a2 at 14 s is refused at the granted TTL's deadline, not the configured 27 s",
        );
        assert_eq!(ledger(&history, "s1"), A1_THEN_B1);
    }
}

#[test]
fn a_worker_that_panics_ends_its_renewer_and_releases_its_lease() {
    for (seed, history) in clean_runs("worker-panics-mid-run") {
        // A's first append panicked after its check, before its send: cut off, never answered.
        let appends = ops(&history, A, "journal_append");
        let panicked = appends
            .iter()
            .min_by_key(|op| op.invoke_us)
            .expect("replica-1 appended");
        assert_eq!(panicked.outcome, Outcome::Info, "seed {seed}");
        assert!(
            matches!(panicked.result, Some(OpResult::CutOff { .. })),
            "seed {seed}: {:?}",
            panicked.result
        );
        let at = panicked.invoke_us;
        let Op::JournalAppend {
            writer_id,
            seq_in_writer,
        } = &panicked.op
        else {
            unreachable!("filtered on journal_append");
        };
        let sent = history
            .final_ledger()
            .into_values()
            .flatten()
            .any(|(_, r)| {
                matches!(r, HistRecord::Event { writer_id: w, seq_in_writer: n, .. }
                if w == *writer_id && n == *seq_in_writer)
            });
        assert!(!sent, "seed {seed}: the panicked append reached the ledger");
        // The hold it ran under: A's last grant before the panic.
        let token = ops(&history, A, "lease_acquire")
            .into_iter()
            .filter(|op| op.complete_us.is_some_and(|c| c <= at))
            .filter_map(|op| match op.result {
                Some(OpResult::Granted { token, .. }) => Some(token),
                _ => None,
            })
            .next_back()
            .expect("replica-1 held a lease when it panicked");
        let release = ops(&history, A, "lease_release")
            .into_iter()
            .find(|op| matches!(op.op, Op::LeaseRelease { token: t, .. } if t == token))
            .unwrap_or_else(|| panic!("seed {seed}: token {token} was never released"));
        assert_eq!(release.outcome, Outcome::Ok, "seed {seed}");
        assert!(
            (at..at + 1_000_000).contains(&release.invoke_us),
            "seed {seed}: released at {} µs, not right after the panic at {at} µs",
            release.invoke_us
        );
        let renewed_after = ops(&history, A, "lease_renew").into_iter().any(|op| {
            matches!(op.op, Op::LeaseRenew { token: t, .. } if t == token)
                && op.invoke_us >= release.invoke_us
        });
        assert!(!renewed_after, "seed {seed}: the renewer outlived the run");
        // The replica went on: the same incarnation acquired again later.
        let again = ops(&history, A, "lease_acquire").into_iter().any(|op| {
            op.process.incarnation == panicked.process.incarnation
                && op.invoke_us > release.invoke_us
                && op.outcome == Outcome::Ok
        });
        assert!(again, "seed {seed}: replica-1 never ran again");
    }
}

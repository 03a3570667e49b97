//! The mutant catalogue's kills, asserted (issue "Mutants"): every planted bug dies where
//! `mutants::kill` says — a scenario reporting the named check on its pinned seed (and the
//! correct implementation clean on the same run), a conformance rule, or a loom suite.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use leasesim::campaign::scenario::Scenario;
use leasesim::check::Check;
use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::clock::ManualClock;
use leasesim::conformance::{RULES, Subject};
use leasesim::lease::MemLease;
use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};
use leasesim::sim::runfile;
use leasesim_testkit::failures_on_two_threads;

use records::read_all;

#[path = "../common/records.rs"]
mod records;

const TTL: Duration = Duration::from_secs(10);

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The checks violated by `scenario` on `seed` with `mutant` planted.
fn violated(scenario: &str, seed: u64, mutant: Option<Mutant>) -> Vec<Check> {
    let scenario = Scenario::load(&repo(scenario)).expect("the kill's scenario loads");
    let mut run = scenario.resolve(seed).expect("the kill's run resolves");
    run.mutant = mutant.map(|m| m.name().to_owned());
    let (history, _) =
        runfile::execute(&run, Duration::from_secs(120)).expect("the kill's run runs");
    judge(&history, Budget::default()).violated()
}

/// Every scenario kill, two at a time (each kill's worlds are independent and a world's bytes
/// do not depend on what runs beside it), so the catalogue uses both cores of a 2-core machine.
#[test]
fn every_scenario_kill_reports_its_check_and_the_correct_implementation_is_clean() {
    let kills: Vec<(Mutant, &str, Check, u64)> = Mutant::ALL
        .iter()
        .filter_map(|&mutant| match mutants::kill(mutant) {
            Kill::Scenario {
                scenario,
                check,
                seed,
            } => Some((mutant, scenario, check, seed)),
            _ => None,
        })
        .collect();
    assert!(!kills.is_empty(), "no mutant is killed by a scenario");
    let failures = failures_on_two_threads(&kills, |&(mutant, scenario, check, seed)| {
        kill_failure(mutant, scenario, check, seed)
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Why `mutant`'s scenario kill failed, if it did: the mutant not reporting `check`, or the
/// correct implementation not clean on the same run.
fn kill_failure(mutant: Mutant, scenario: &str, check: Check, seed: u64) -> Option<String> {
    let with = violated(scenario, seed, Some(mutant));
    if !with.contains(&check) {
        return Some(format!(
            "{mutant} was not killed: {scenario} seed {seed} violated {with:?}, not {check}"
        ));
    }
    let without = violated(scenario, seed, None);
    (!without.is_empty()).then(|| {
        format!("the correct implementation violates {without:?} on {scenario} seed {seed}")
    })
}

/// The field bugs of issue 43 (docs/field-cases.md, F9–F13) whose track-record row names a
/// mutant: `(scenario, mutant, check)`. Their kill rows stay where they were; these are the
/// same bugs met again in the field.
const FIELD_BUG_KILLS: [(&str, Mutant, Check); 5] = [
    (
        "sims/f9-retried-release-frees-newer-hold.toml",
        Mutant::ReleaseBySessionOnly,
        Check::Excl,
    ),
    (
        "sims/f10-release-before-work-ends.toml",
        Mutant::CleanupBeforeInvalidate,
        Check::Stop,
    ),
    (
        "sims/f12-campaign-outlives-its-session.toml",
        Mutant::ValidityFromReceiptTime,
        Check::Stop,
    ),
    (
        "sims/f13-leader-after-session-expiry.toml",
        Mutant::NoLocalDeadline,
        Check::Stop,
    ),
    (
        "sims/f13-leader-after-session-expiry.toml",
        Mutant::RenewRecreatesRecord,
        Check::Excl,
    ),
];

/// Each field bug's mutant breaks the check its track-record row names on the bug's own
/// scenario (seed 1), and the correct implementation is clean on the same run.
#[test]
fn every_field_bug_of_issue_43_kills_its_mutant_on_its_own_scenario() {
    let failures = failures_on_two_threads(&FIELD_BUG_KILLS, |&(scenario, mutant, check)| {
        kill_failure(mutant, scenario, check, 1)
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

/// DEFINITE's proof: a journal that reports a committed append lost breaks only the promise of
/// its `fail`; every other check passes the same run, so without DEFINITE it would survive.
#[test]
fn only_definite_kills_a_committed_append_reported_lost() {
    let mutant = Mutant::CommittedAppendReportedLost;
    let Kill::Scenario { scenario, seed, .. } = mutants::kill(mutant) else {
        panic!("{mutant} is killed by a scenario");
    };
    assert_eq!(violated(scenario, seed, Some(mutant)), [Check::Definite]);
}

fn mem_lease(mutant: Option<Mutant>) -> Subject {
    let clock = ManualClock::new();
    let lease = MemLease::new(Arc::new(clock.clone()), TTL).with_mutant(mutant);
    Subject::with_manual_clock(Arc::new(lease), clock, TTL)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conformance_kill_breaks_its_rule_on_mem_lease() {
    for &mutant in Mutant::ALL {
        let Kill::Conformance { rule } = mutants::kill(mutant) else {
            continue;
        };
        // A bug planted in another backend (flock: tests/flock runs its rule over
        // FlockLease; etcd: tests/etcd over EtcdLease) leaves MemLease unchanged.
        if !matches!(mutant.backend(), None | Some("grpc")) {
            continue;
        }
        let found = RULES
            .iter()
            .find(|r| r.name == rule)
            .unwrap_or_else(|| panic!("{mutant}: no conformance rule named {rule}"));
        let outcome = (found.run)(mem_lease(Some(mutant))).await;
        assert!(outcome.is_err(), "{mutant} passed conformance rule {rule}");
        let correct = (found.run)(mem_lease(None)).await;
        assert!(
            correct.is_ok(),
            "the correct MemLease breaks {rule}: {correct:?}"
        );
    }
}

/// Loom suites cannot run in this build (they need the `loom` feature; CI runs them); this
/// checks that the named suite exists and has a test planting the mutant.
#[test]
fn every_loom_kill_names_a_suite_that_plants_the_mutant() {
    for &mutant in Mutant::ALL {
        let Kill::Loom { suite } = mutants::kill(mutant) else {
            continue;
        };
        let source = std::fs::read_to_string(repo(&format!("models/{suite}.rs")))
            .unwrap_or_else(|e| panic!("{mutant}: loom suite models/{suite}.rs: {e}"));
        let variant = format!("Mutant::{mutant:?}");
        assert!(
            source.contains(&variant),
            "{mutant}: models/{suite}.rs never plants {variant}"
        );
    }
}

#[test]
fn names_round_trip_and_every_mutant_says_what_is_wrong() {
    for &mutant in Mutant::ALL {
        assert_eq!(Mutant::from_name(mutant.name()), Some(mutant));
        assert!(!mutants::describe(mutant).is_empty());
    }
    let mut names: Vec<&str> = Mutant::ALL.iter().map(|m| m.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Mutant::ALL.len(), "two mutants share a name");
}

/// The track record (docs/field-cases.md#track-record) also names `append-ignores-expected-tip`
/// as F3's mutant: the world's ledger service runs it, so A's appends after fence 2 land instead of being fenced.
#[test]
fn append_ignores_expected_tip_is_also_killed_by_fence_on_f3() {
    let scenario = "sims/f3-slow-clock-cut-off-from-lease.toml";
    let with = violated(scenario, 1, Some(Mutant::AppendIgnoresExpectedTip));
    assert!(with.contains(&Check::Fence), "F3 seed 1 violated {with:?}");
    assert!(violated(scenario, 1, None).is_empty());
}

/// A lone replica that stops asking while its work is pending turns nobody away and writes
/// nothing wrong: only LIVE's pending-work rule (docs/checks.md#live) sees it, and on its
/// scenario's pinned seed no other check flags the run.
#[test]
fn gives_up_contending_is_killed_by_live_alone() {
    let scenario = "sims/lone-replica-gives-up.toml";
    let with = violated(scenario, 1, Some(Mutant::GivesUpContending));
    assert_eq!(with, vec![Check::Live], "{scenario} seed 1");
}

/// `fence-written-blind` overwrites what committed at the opener's `expected + 1`, in the
/// ledger service's durable store as in `MemLedger`: the overwrite survives a reopen.
#[tokio::test]
async fn a_blind_fence_overwrites_the_acknowledged_record_it_lands_on() {
    use leasesim::journal::{DurableLedger, Ledger, LedgerError, MemLedger, Record, WriterId};
    use leasesim::lease::{Owner, SessionId};
    use leasesim::storage::MemStorage;

    let session = SessionId::new("s1").unwrap();
    let writer = |replica: &str| WriterId {
        owner: Owner::new(replica, 0),
        journal: 1,
    };
    let event = |n: u64| Record::Event {
        writer_id: writer("a"),
        seq_in_writer: n,
        payload: vec![b'a', b'0' + n as u8],
    };
    let fence = Record::Fence {
        epoch: 2,
        owner: Owner::new("b", 0),
        writer_id: writer("b"),
    };
    let disk = MemStorage::new();
    let durable = DurableLedger::open(Arc::new(disk.clone())).await.unwrap();
    for ledger in [
        Arc::new(durable.with_mutant(Some(Mutant::FenceWrittenBlind))) as Arc<dyn Ledger>,
        Arc::new(MemLedger::new().with_mutant(Some(Mutant::FenceWrittenBlind))),
    ] {
        for n in 1..=3 {
            assert_eq!(ledger.append(&session, n - 1, event(n)).await, Ok(n));
        }
        // An event at a stale tip still conflicts; a fence there overwrites position 2.
        assert_eq!(
            ledger.append(&session, 1, event(9)).await,
            Err(LedgerError::Conflict { actual: 3 })
        );
        assert_eq!(ledger.append(&session, 1, fence.clone()).await, Ok(2));
        assert_eq!(
            read_all(&*ledger, &session).await,
            [event(1), fence.clone(), event(3)]
        );
    }
    let reopened = DurableLedger::open(Arc::new(disk)).await.unwrap();
    assert_eq!(
        read_all(&reopened, &session).await,
        [event(1), fence, event(3)]
    );
    // The correct ledger refuses the same fence.
    let correct = MemLedger::new();
    correct.append(&session, 0, event(1)).await.unwrap();
    assert!(matches!(
        correct
            .append(
                &session,
                0,
                Record::Fence {
                    epoch: 2,
                    owner: Owner::new("b", 0),
                    writer_id: writer("b"),
                }
            )
            .await,
        Err(LedgerError::Conflict { actual: 1 })
    ));
}

/// Field case F9's rule in the contract (etcd-io/etcd#22082): a release that matches the
/// session alone frees the owner's newer hold when its older release is retried, and breaks
/// `retried_release_of_own_older_hold_frees_nothing` on `MemLease`; the correct one keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_by_session_only_breaks_the_retried_release_rule() {
    let rule = RULES
        .iter()
        .find(|r| r.name == "retried_release_of_own_older_hold_frees_nothing")
        .expect("the rule is in the suite");
    let mutant = Mutant::ReleaseBySessionOnly;
    let outcome = (rule.run)(mem_lease(Some(mutant))).await;
    assert!(outcome.is_err(), "{mutant} passed {}", rule.name);
    let correct = (rule.run)(mem_lease(None)).await;
    assert!(
        correct.is_ok(),
        "the correct MemLease breaks it: {correct:?}"
    );
}

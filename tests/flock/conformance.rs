//! The conformance suite over `FlockLease` in real time (a small TTL; the suite's advance
//! really sleeps), each rule in a fresh temporary directory; and the flock mutants whose kill
//! is a conformance rule, or whose rule is a second witness beside a world kill, failing
//! exactly that rule.

use std::sync::Arc;
use std::time::Duration;

use leasesim::conformance::{RULES, Subject, broken_rules};
use leasesim::lease::{FlockLease, FlockLeaseConfig};
use leasesim::mutant::Mutant;
use leasesim::mutants::{self, Kill};

/// Small enough to keep the file short, large enough that a record write (two fsyncs, about
/// 12 ms on this machine's ext4) and a loaded scheduler stay well inside the rules' margins
/// (the tightest is a quarter of it: `renew_keeps_token_and_extends_expiry`).
const TTL: Duration = Duration::from_millis(500);

/// A `FlockLease` running `mutant` over a fresh temporary directory (kept as long as the
/// subject), in real time.
fn flock_subject(mutant: Option<Mutant>) -> Subject {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = FlockLeaseConfig::new(dir.path(), TTL);
    config.mutant = mutant;
    let lease = FlockLease::open(config).expect("a FlockLease over a local temporary directory");
    Subject::with_real_time(Arc::new(lease), TTL).keep_alive(dir)
}

mod flock_lease {
    leasesim::conformance_tests!(|| async { super::flock_subject(None) });
}

/// Rules [`broken_by`] runs at once. With all nineteen at once, their record writes (two
/// fsyncs each) queue behind each other: once in fifteen runs of this binary on a loaded
/// machine the correct code broke a rule, its real-time margin lost. Six at once keep the
/// queue short (no failure in the runs since) and each pass of the suite near 1.2 s.
const RULES_AT_ONCE: usize = 6;

/// The rules `mutant` (or the correct code, for `None`) breaks over `FlockLease`, in suite
/// order. The rules run [`RULES_AT_ONCE`] at a time, one task each; give the runtime a
/// worker per task, as a record write blocks its worker.
async fn broken_by(mutant: Option<Mutant>) -> Vec<&'static str> {
    let slots = Arc::new(tokio::sync::Semaphore::new(RULES_AT_ONCE));
    let runs: Vec<_> = RULES
        .iter()
        .map(|rule| {
            let slots = slots.clone();
            tokio::spawn(async move {
                let _slot = slots
                    .acquire()
                    .await
                    .expect("the semaphore is never closed");
                (rule.run)(flock_subject(mutant)).await
            })
        })
        .collect();
    broken_rules(&format!("{mutant:?}"), runs).await
}

/// Flock mutants killed by a world scenario (the flock model) whose conformance rule over
/// real files stays a second witness: `(mutant, rule)`.
const ALSO_BROKEN: &[(Mutant, &str)] = &[(
    Mutant::RenewWithoutExpiryCheck,
    "renew_after_expiry_is_held",
)];

/// Every flock mutant whose kill is a conformance rule, and every one listed in
/// [`ALSO_BROKEN`], breaks exactly its rule over `FlockLease`; the correct one breaks none.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn every_flock_conformance_kill_breaks_exactly_its_rule() {
    let mut pairs: Vec<(Mutant, &str)> = Mutant::ALL
        .iter()
        .filter(|mutant| mutant.backend() == Some("flock"))
        .filter_map(|&mutant| match mutants::kill(mutant) {
            Kill::Conformance { rule } => Some((mutant, rule)),
            _ => None,
        })
        .collect();
    for &(mutant, rule) in ALSO_BROKEN {
        assert_eq!(mutant.backend(), Some("flock"), "{mutant}");
        assert!(
            !matches!(mutants::kill(mutant), Kill::Conformance { .. }),
            "{mutant}: its kill is the rule already; list it once"
        );
        pairs.push((mutant, rule));
    }
    for (mutant, rule) in pairs {
        assert_eq!(broken_by(Some(mutant)).await, [rule], "{mutant}");
    }
    assert_eq!(
        broken_by(None).await,
        Vec::<&str>::new(),
        "the correct FlockLease"
    );
}

//! `leasesim campaign --mutants all|NAME,…`: the detection table (issue "Mutants"). For each
//! planted bug, how it was killed — the campaign's own scenarios (seeds in order, every
//! scenario per seed, until a run breaks a check), a conformance rule, or a loom suite — how
//! many seeds and how long it took, and the size of the shrunk counterexample.
//!
//! # Sharding
//!
//! A campaign split by `--shard K/N` splits its detection table too ([`owned_mutants`]): the
//! mutants `--mutants` selects, in catalogue order ([`Mutant::ALL`]) without repeats, are
//! dealt out like runs, so shard K/N detects those at 0-based positions i with
//! `i % N == K - 1` (for `--mutants all`, i is the catalogue index). Each mutant's detection
//! itself is never split: it tries the same seeds and scenarios in every shard, so its row
//! is the row a whole campaign writes, and `report merge` unions the shards' rows.

use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use super::execute::execute;
use super::request::scenario_command;
use super::scenario::Scenario;
use super::shrink;
use super::stopwatch::Stopwatch;
use crate::check::Check;
use crate::clock::ManualClock;
use crate::conformance::{RULES, Subject};
use crate::lease::{FlockLease, FlockLeaseConfig, MemLease};
use crate::mutant::Mutant;
use crate::mutants::{self, Kill};
use crate::results::plan::Shard;
use crate::results::record::Detection;
use crate::sim::runfile::{BackendSpec, RunFile};

/// The mutants of `selected` that `shard` detects, in catalogue order: the selection sorted
/// by [`Mutant::position`] with repeats dropped, then every N-th from the K-th (see the
/// module page); all of them without a shard. N shards together detect each selected
/// mutant exactly once.
pub fn owned_mutants(selected: &[Mutant], shard: Option<Shard>) -> Vec<Mutant> {
    let mut mutants = selected.to_vec();
    mutants.sort_by_key(|m| m.position());
    mutants.dedup();
    mutants
        .into_iter()
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|s| s.owns(*i as u64)))
        .map(|(_, mutant)| mutant)
        .collect()
}

/// What a detection run needs from the campaign.
pub struct DetectOptions<'a> {
    /// The campaign's scenarios, in campaign order, with their paths.
    pub scenarios: &'a [(&'a Path, &'a Scenario)],
    /// The backend every scenario runs on (the campaign's `--backend`), if one was given.
    pub backend: Option<&'a BackendSpec>,
    /// The first seed to try.
    pub first_seed: u64,
    /// How many seeds to try per mutant before it counts as survived.
    pub seeds: u64,
    /// Threads (one mutant per thread at a time).
    pub jobs: usize,
    /// Wall-clock limit of one run (`None`: derived from each run's simulated length,
    /// [`crate::sim::runfile::RunFile::wall_timeout`]).
    pub run_timeout: Option<Duration>,
    /// Shrink each first detection into `out/shrunk/`.
    pub shrink: bool,
    /// The report folder.
    pub out: &'a Path,
}

/// Detects every mutant in `mutants` and returns the table in their order.
pub fn detect(options: &DetectOptions<'_>, mutants: &[Mutant]) -> Vec<Detection> {
    let queue = Mutex::new(mutants.iter().copied().enumerate());
    let table: Mutex<Vec<(usize, Detection)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            // Campaign jobs are harness threads; each world still runs on one thread.
            #[allow(clippy::disallowed_methods)]
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((index, mutant)) = next else { return };
                    let detection = detect_one(options, mutant);
                    eprintln!(
                        "mutant {}: {}{}",
                        detection.mutant,
                        if detection.killed {
                            "killed by "
                        } else {
                            "SURVIVED: "
                        },
                        detection.killed_by
                    );
                    table
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((index, detection));
                }
            });
        }
    });
    let mut table = table.into_inner().unwrap_or_else(|p| p.into_inner());
    table.sort_by_key(|(index, _)| *index);
    table.into_iter().map(|(_, detection)| detection).collect()
}

fn detect_one(options: &DetectOptions<'_>, mutant: Mutant) -> Detection {
    let mut detection = Detection::undetected(mutant.name(), mutants::describe(mutant));
    match mutants::kill(mutant) {
        Kill::Conformance { rule } if mutant.backend() == Some("etcd") => {
            // A real etcd server: `cargo test --release --features etcd --test etcd` runs the
            // rule over `EtcdLease`, and its `every_etcd_conformance_kill_breaks_exactly_its_rule`
            // checks that the mutant fails it.
            detection.killed = true;
            detection.killed_by = format!(
                "conformance rule {rule} over EtcdLease (run by `cargo test --release --features etcd --test etcd`, not in this process)"
            );
        }
        Kill::Conformance { rule } => {
            detection.killed = conformance_breaks(mutant, rule);
            detection.killed_by = format!("conformance rule {rule}");
        }
        Kill::Loom { suite } => {
            // A loom model needs its own build (the `loom` feature); CI runs it and
            // `tests/mutants` checks that the suite plants this mutant.
            detection.killed = true;
            detection.killed_by = format!(
                "loom suite {suite} (run by `cargo test --release --features loom --test models`, not in this process)"
            );
        }
        Kill::Process { test } => {
            // Real processes and real files: `cargo test --release --test flock` runs it, and its
            // `every_flock_kill_fails_its_test` checks that the mutant fails it.
            detection.killed = true;
            detection.killed_by = format!(
                "flock process test {test} (run by `cargo test --release --test flock`, not in this process)"
            );
        }
        Kill::Scenario { .. } => campaign_kill(options, mutant, &mut detection),
    }
    detection
}

/// Runs seeds in order, every scenario per seed, until a run breaks a check the scenario
/// does not expect broken.
fn campaign_kill(options: &DetectOptions<'_>, mutant: Mutant, detection: &mut Detection) {
    let clock = Stopwatch::start();
    let mut runs = 0u64;
    for n in 0..options.seeds {
        let seed = options.first_seed + n;
        for (path, scenario) in options.scenarios {
            // A mutant planted in another backend's code cannot show on this scenario.
            if !mutants::applies_to(mutant, scenario.world.backend.name()) {
                continue;
            }
            let Ok(mut run) = scenario.resolve(seed) else {
                continue;
            };
            run.mutant = Some(mutant.name().to_owned());
            runs += 1;
            let replay = scenario_command(&run, path, options.backend);
            let executed = execute(&run, run.wall_timeout(options.run_timeout), replay.clone());
            let Some(check) =
                killed_by(options, (path, scenario), &run, &executed.record.unexpected)
            else {
                continue;
            };
            detection.killed = true;
            detection.killed_by = format!("{check} in {} (seed {seed})", scenario.name());
            detection.seeds_to_detection = Some(n + 1);
            detection.runs_to_detection = Some(runs);
            detection.wall_ms_to_detection = Some(clock.elapsed_ms());
            detection.check = Some(check);
            detection.replay = Some(replay);
            if options.shrink {
                let shrunk = shrink::shrink(&run, check, run.wall_timeout(options.run_timeout));
                let file = format!(
                    "shrunk/mutant-{}-{}-seed{seed}.run.json",
                    mutant.name(),
                    scenario.name()
                );
                let path = options.out.join(&file);
                let saved = path
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .map_err(|e| e.to_string())
                    .and_then(|()| shrunk.run.save(&path).map_err(|e| e.to_string()))
                    .and_then(|()| {
                        super::counterexample::keep(
                            options.out,
                            &file,
                            &shrunk.run,
                            shrunk.history.as_ref(),
                            check,
                            &shrunk.violations,
                            shrunk.run.wall_timeout(options.run_timeout),
                        )
                    });
                if let Err(error) = saved {
                    eprintln!("cannot write {}: {error}", path.display());
                } else {
                    detection.shrunk = Some((shrunk.run.schedule.faults.len(), shrunk.operations));
                    detection.run_file = Some(file);
                    detection.violations = shrunk.violations;
                }
            }
            return;
        }
    }
    detection.killed_by = format!(
        "nothing: {} seeds × {} scenarios ran clean",
        options.seeds,
        options.scenarios.len()
    );
}

/// The check that kills the mutant of `run`, which broke `found`: the first of them the same
/// run of the correct implementation keeps ([`own_check`]). What the correct run breaks too
/// is a false alarm of the world, printed with its rerun command.
fn killed_by(
    options: &DetectOptions<'_>,
    (path, scenario): (&Path, &Scenario),
    run: &RunFile,
    found: &[Check],
) -> Option<Check> {
    if found.is_empty() {
        return None;
    }
    let correct = RunFile {
        mutant: None,
        ..run.clone()
    };
    let baseline = execute(
        &correct,
        correct.wall_timeout(options.run_timeout),
        scenario_command(&correct, path, options.backend),
    );
    let alarms = &baseline.record.unexpected;
    if !alarms.is_empty() {
        eprintln!(
            "false alarm: {} seed {} breaks {} without a mutant (found while detecting {}; run `{}`)",
            scenario.name(),
            run.seed,
            check_list(alarms),
            run.mutant.as_deref().unwrap_or("-"),
            baseline.record.replay
        );
    }
    own_check(found, alarms)
}

/// The first check a mutant's run breaks that the same run of the correct implementation
/// keeps: a check both break is the world's false alarm, not the mutant's kill.
fn own_check(found: &[Check], alarms: &[Check]) -> Option<Check> {
    found.iter().find(|check| !alarms.contains(check)).copied()
}

fn check_list(checks: &[Check]) -> String {
    checks
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether conformance rule `rule` fails on the backend `mutant` is planted in: a
/// `FlockLease` in a fresh temporary directory in real time for a flock mutant, else a
/// `MemLease` on a manual clock.
fn conformance_breaks(mutant: Mutant, rule: &str) -> bool {
    let Some(found) = RULES.iter().find(|r| r.name == rule) else {
        return false;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return false;
    };
    runtime.block_on(async {
        let Some(subject) = conformance_subject(mutant) else {
            return false;
        };
        (found.run)(subject).await.is_err()
    })
}

/// A fresh subject carrying `mutant` on its own backend, or `None` when it cannot be made
/// (no temporary directory).
fn conformance_subject(mutant: Mutant) -> Option<Subject> {
    if mutant.backend() == Some("flock") {
        // Real time: flock leases judge expiry on CLOCK_BOOTTIME, which no fake clock moves;
        // a small TTL keeps the rule short.
        let ttl = Duration::from_millis(200);
        let dir = tempfile::tempdir().ok()?;
        let mut config = FlockLeaseConfig::new(dir.path(), ttl);
        config.mutant = Some(mutant);
        let lease = FlockLease::open(config).ok()?;
        return Some(Subject::with_real_time(Arc::new(lease), ttl).keep_alive(dir));
    }
    let clock = ManualClock::new();
    let ttl = Duration::from_secs(10);
    let lease = MemLease::new(Arc::new(clock.clone()), ttl).with_mutant(Some(mutant));
    Some(Subject::with_manual_clock(Arc::new(lease), clock, ttl))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four shards detect every mutant of the catalogue exactly once, each in catalogue
    /// order, shard K taking positions K-1, K-1+4, …
    #[test]
    fn four_shards_deal_out_the_catalogue_once() {
        let shards: Vec<Vec<Mutant>> = (1..=4)
            .map(|index| owned_mutants(Mutant::ALL, Some(Shard { index, of: 4 })))
            .collect();
        assert_eq!(
            shards[1][..2],
            [Mutant::ALL[1], Mutant::ALL[5]],
            "shard 2/4 starts at position 1"
        );
        let mut all: Vec<Mutant> = shards.concat();
        assert_eq!(all.len(), Mutant::ALL.len());
        all.sort_by_key(|m| m.position());
        assert_eq!(all, Mutant::ALL);
        for shard in &shards {
            assert!(shard.windows(2).all(|w| w[0].position() < w[1].position()));
        }
    }

    /// A selection given out of order or with repeats is detected once per mutant, in
    /// catalogue order, and dealt out by its own positions (not the catalogue's).
    #[test]
    fn a_selection_is_sorted_deduplicated_then_dealt_out() {
        let selected = [
            Mutant::ExpiryOffByOne,
            Mutant::TokenNotAdvancedOnExpiry,
            Mutant::ExpiryOffByOne,
            Mutant::ReleaseBySessionOnly,
        ];
        let whole = [
            Mutant::TokenNotAdvancedOnExpiry,
            Mutant::ReleaseBySessionOnly,
            Mutant::ExpiryOffByOne,
        ];
        assert_eq!(owned_mutants(&selected, None), whole);
        let shard = |index| owned_mutants(&selected, Some(Shard { index, of: 2 }));
        assert_eq!(shard(1), [whole[0], whole[2]]);
        assert_eq!(shard(2), [whole[1]]);
        assert!(owned_mutants(&selected, Some(Shard { index: 4, of: 4 })).is_empty());
    }

    /// A mutant is killed by a check its run breaks and the correct implementation's same run
    /// keeps; a check both break is a false alarm, and a run breaking only those kills nothing.
    #[test]
    fn a_check_the_correct_implementation_breaks_too_is_no_kill() {
        use Check::{Excl, Live, Token};
        assert_eq!(own_check(&[Token, Excl], &[]), Some(Token));
        assert_eq!(own_check(&[Live, Token], &[Live]), Some(Token));
        assert_eq!(own_check(&[Live], &[Live, Excl]), None);
        assert_eq!(check_list(&[Live, Excl]), "LIVE, EXCL");
    }

    /// A flock mutant's conformance rule runs over `FlockLease` (on `MemLease` the planted
    /// bug does not exist, so the rule would pass), and only its own rule fails:
    /// `renew-without-expiry-check`, killed in the world now, keeps its rule as a second
    /// witness (tests/flock).
    #[test]
    fn a_flock_conformance_rule_runs_over_flock_lease() {
        let mutant = Mutant::RenewWithoutExpiryCheck;
        let rule = "renew_after_expiry_is_held";
        assert!(conformance_breaks(mutant, rule), "{mutant} passed {rule}");
        assert!(!conformance_breaks(mutant, "fresh_acquire"));
    }
}

//! The one table the target tests run from: for each target, its kube swarm run (scenario,
//! seed, the verdict expected) and each committed finding's run file with the violation it
//! replays with (each target's FINDINGS.md names the test that replays it).

/// One target and what its tests expect.
pub struct Target {
    /// Its folder under `targets/`; the backend is `target:<name>`.
    pub name: &'static str,
    /// A kube swarm run of it: a real contest that replays byte for byte.
    pub run: SwarmRun,
    /// Its committed findings, `targets/<name>/findings/<file>`.
    pub findings: &'static [Finding],
}

/// A kube swarm scenario's seed on a target.
pub struct SwarmRun {
    /// The scenario, from the repository's root.
    pub scenario: &'static str,
    /// Its seed.
    pub seed: &'static str,
    /// The run's exit code.
    pub exit: i32,
    /// The verdict line it prints last.
    pub verdict: &'static str,
}

/// A committed finding's run file and the violation it replays with.
pub struct Finding {
    /// Its file name in `targets/<target>/findings/`.
    pub file: &'static str,
    /// The replay's exit code.
    pub exit: i32,
    /// The verdict line.
    pub verdict: &'static str,
    /// What the replay's report says of the violation (each a part of stdout).
    pub shows: &'static [&'static str],
}

/// Every target and its findings.
pub const TARGETS: [Target; 3] = [
    Target {
        name: "kube-lease-manager",
        // 13 leadership changes, 80 accepted writes; finding 2 on every takeover, every
        // other check holds.
        run: SwarmRun {
            scenario: "sims/kube-swarm-partitions.toml",
            seed: "1",
            exit: 1,
            verdict: "verdict: FAIL: TOKEN violated — exit 1",
        },
        findings: &[
            Finding {
                file: "1-two-leaders-after-a-forced-release.run.json",
                exit: 1,
                // EXCL holds: replica-3's grant came past its own deadline (its acquire was
                // sent at 2.506 s, a 4 s grant), so its window is empty (FINDINGS.md).
                verdict: "verdict: FAIL: TOKEN, SIGNAL violated — exit 1",
                shows: &[
                    "SIGNAL: s2: two leaders: replica-2 says \"I lead\" from 8.369 s and replica-3 from 10.305 s",
                    "EXCL: 1 check, 0 violations",
                ],
            },
            Finding {
                file: "2-takeover-in-two-writes.run.json",
                exit: 1,
                verdict: "verdict: FAIL: TOKEN violated — exit 1",
                shows: &[
                    "a takeover by \"replica-3#0\" kept leaseTransitions 0, not above the earlier value",
                ],
            },
            Finding {
                file: "3-a-candidate-with-its-wall-clock-ahead-takes-a-live-lock.run.json",
                exit: 1,
                verdict: "verdict: FAIL: TOKEN, EXCL, SIGNAL violated — exit 1",
                shows: &[
                    "SIGNAL: s1: two leaders: replica-1 says \"I lead\" from 33.274 s and replica-3 from 38.268 s",
                    "EXCL: s1: replica-1's window (token 1",
                    "and replica-3's window (token 2",
                ],
            },
            Finding {
                file: "4-the-signal-outlives-the-lease-while-the-api-is-unreachable.run.json",
                exit: 1,
                // EXCL holds: replica-3's grant came past its own deadline (FINDINGS.md).
                verdict: "verdict: FAIL: TOKEN, SIGNAL violated — exit 1",
                shows: &[
                    "SIGNAL: s2: replica-1's signal outlives the lease: it says \"I lead\" from 0.022 s until 13.796 s",
                    "SIGNAL: s2: two leaders: replica-1 says \"I lead\" from 0.022 s and replica-3 from 10.385 s",
                    "EXCL: 4 checks, 0 violations",
                ],
            },
        ],
    },
    Target {
        name: "kubert",
        // 12 leadership changes, 63 accepted writes; clean.
        run: SwarmRun {
            scenario: "sims/kube-swarm-partitions.toml",
            seed: "1",
            exit: 0,
            verdict: "verdict: clean (not judged: EXPIRY) — exit 0",
        },
        findings: &[
            Finding {
                file: "1-a-candidate-with-its-wall-clock-ahead-takes-a-live-claim.run.json",
                exit: 1,
                verdict: "verdict: FAIL: EXCL, EXPIRY, SIGNAL violated — exit 1",
                shows: &[
                    "SIGNAL: s2: two leaders: replica-2#1 says \"I lead\" from 21.923 s and replica-3 from 22.373 s",
                    "EXCL: s2: replica-2#1's window (token 2",
                    "and replica-3's window (token 3",
                    "replica-3#0 took the lease over from \"replica-2#1\"",
                ],
            },
            Finding {
                file: "1b-a-restarted-candidate-takes-over-by-wall-clock-before-watching-a-ttl.run.json",
                exit: 1,
                // No clock fault: the takeover breaks the rule, and overlaps nothing.
                verdict: "verdict: FAIL: EXPIRY violated — exit 1",
                shows: &[
                    "replica-2#1 took the lease over from \"replica-3#0\" at 10.424 s (rv 3) after \
                     its clock advanced only 0.008 s since it booted",
                ],
            },
        ],
    },
    Target {
        name: "kube-leader-election",
        // 20 changes of a crate's signal to "I lead", 47 API writes; every check holds.
        run: SwarmRun {
            scenario: "sims/kube-swarm-partitions.toml",
            seed: "1",
            exit: 0,
            verdict: "verdict: clean (not judged: EXPIRY, DEFINITE, LIN-LEASE) — exit 0",
        },
        findings: &[
            Finding {
                file: "1-two-candidates-take-a-vacated-lease-at-once.run.json",
                exit: 1,
                verdict: "verdict: FAIL: TOKEN, EXCL, EXPIRY, SIGNAL violated — exit 1",
                shows: &[
                    "SIGNAL: s2: two leaders: replica-2#1 says \"I lead\" from 33.353 s and replica-3 from 33.354 s",
                    "a takeover by \"replica-3#0\" kept leaseTransitions 3",
                    "replica-2#1's window (token 3",
                    "and replica-3's window (token 3",
                ],
            },
            Finding {
                file: "2-a-candidate-with-its-wall-clock-ahead-takes-a-live-lease.run.json",
                exit: 1,
                verdict: "verdict: FAIL: EXCL, EXPIRY, SIGNAL violated — exit 1",
                shows: &[
                    "SIGNAL: s1: two leaders: replica-2 says \"I lead\" from 1.348 s and replica-3 from 2.580 s",
                    "EXCL: s1: replica-2's window (token 1",
                    "and replica-3's window (token 2",
                ],
            },
            Finding {
                file: "3-a-candidate-with-its-wall-clock-behind-never-takes-a-vacated-lease.run.json",
                exit: 5,
                verdict: "verdict: FAIL: LIVE violated (liveness) — exit 5",
                shows: &["LIVE: s1: no acknowledged journal append between the heal at 23.250 s"],
            },
        ],
    },
];

/// The target named `name` (its folder under `targets/`).
pub fn target(name: &str) -> &'static Target {
    let found = TARGETS.iter().find(|target| target.name == name);
    found.unwrap_or_else(|| panic!("no target {name} in the table"))
}

#[test]
fn every_committed_finding_has_a_row_and_every_row_a_run_file() {
    let repo = super::support::repo();
    for target in &TARGETS {
        let dir = repo.join("targets").join(target.name).join("findings");
        let mut committed: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|file| file.ends_with(".run.json"))
            .collect();
        committed.sort();
        let mut rows: Vec<String> = target.findings.iter().map(|f| f.file.to_owned()).collect();
        rows.sort();
        assert_eq!(committed, rows, "{}", dir.display());
    }
}

//! Rendering a hand-built campaign: a clean scenario, one with an unexpected violation and
//! its shrunk run, one with a harness error, one inconclusive, one mutant scenario whose
//! expected violation was caught and one whose was not.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use leasesim_check::invariants::Evidence;
use leasesim_check::{CheckResult, CheckVerdict};
use leasesim_history::Process;
use leasesim_results::record::{
    CheckRecord, Detection, EvidenceRecord, RunStatus, ViolationRecord,
};
use leasesim_testkit::assert_has_lines;

pub(super) fn meta(commit: &str, shard: Option<&str>) -> CampaignMeta {
    CampaignMeta {
        v: RECORD_VERSION,
        seeds: "0..4".into(),
        sims: "sims/field-cases".into(),
        scenarios: vec![
            "clean".into(),
            "f1-pause".into(),
            "flaky".into(),
            "slow".into(),
            "mutant-caught".into(),
            "mutant-missed".into(),
        ],
        shard: shard.map(str::to_owned),
        merged: false,
        mutant: None,
        backend: None,
        binary: "leasesim".into(),
        git_commit: commit.into(),
        config_hash: "c0ffee".into(),
        cargo_lock_hash: "10c4".into(),
    }
}

pub(super) fn info(name: &str, about: &str, coverage: &[&str], violate: &[&str]) -> ScenarioInfo {
    ScenarioInfo {
        name: name.into(),
        about: about.into(),
        coverage: coverage.iter().map(|s| (*s).to_owned()).collect(),
        violate: violate.iter().map(|s| s.parse().unwrap()).collect(),
        coverage_within_seeds: BTreeMap::new(),
        left_out: None,
    }
}

pub(super) fn campaign(commit: &str, shard: Option<&str>) -> CampaignFile {
    CampaignFile {
        v: RECORD_VERSION,
        wall_ms: None,
        meta: meta(commit, shard),
        scenarios: vec![
            info(
                "clean",
                "contention without faults",
                &["takeover-after-expiry", "graceful-handover"],
                &[],
            ),
            info(
                "f1-pause",
                "stop-the-world pause longer than the TTL",
                &["stale-append-rejected"],
                &[],
            ),
            info("flaky", "a world that panics", &[], &[]),
            info("slow", "a search that runs out of budget", &[], &[]),
            info(
                "mutant-caught",
                "a planted bug FENCE catches",
                &[],
                &["FENCE"],
            ),
            info(
                "mutant-missed",
                "a planted bug nobody catches",
                &[],
                &["EXCL"],
            ),
        ],
    }
}

/// Every check passing, with `checks` individual checks each.
pub(super) fn checks(expected: &[&str]) -> Vec<CheckRecord> {
    Check::ALL
        .into_iter()
        .map(|name| CheckRecord {
            name,
            checks: 10,
            expected_violation: expected.contains(&name.name()),
            verdict: CheckVerdict::Pass,
            not_judged: None,
            violations: Vec::new(),
            allowed: Vec::new(),
        })
        .collect()
}

pub(super) fn fail(checks: &mut [CheckRecord], name: &str, message: &str, evidence: &[Evidence]) {
    let check = checks.iter_mut().find(|c| c.name.name() == name).unwrap();
    check.verdict = CheckVerdict::Fail;
    check.violations.push(violation(message, evidence));
}

/// The hand-built campaign (of commit `abc123`, not a shard) cut to its first `n` scenarios.
pub(super) fn first_scenarios(n: usize) -> CampaignFile {
    let mut file = campaign("abc123", None);
    file.meta.scenarios.truncate(n);
    file.scenarios.truncate(n);
    file
}

/// The minimal run of [`late_append_kill`].
pub(super) const LATE_APPEND_RUN: &str = "shrunk/mutant-no-local-deadline-f1-pause-seed0.run.json";

/// The `no-local-deadline` mutant killed by STOP in f1-pause (seed 0): its minimal run
/// [`LATE_APPEND_RUN`] violated by the [`late_append`], reran by `replay`.
pub(super) fn late_append_kill(replay: &str) -> Detection {
    let mut killed = detection(
        "no-local-deadline",
        "STOP in f1-pause (seed 0)",
        Some(LATE_APPEND_RUN),
    );
    killed.check = Some(Check::Stop);
    killed.violations = vec![violation(
        "replica-1#0 appended after its validity deadline",
        &late_append(),
    )];
    killed.replay = Some(replay.into());
    killed
}

/// A violation of an invariant: `message`, proven by `evidence`.
pub(super) fn violation(message: &str, evidence: &[Evidence]) -> ViolationRecord {
    ViolationRecord {
        message: message.into(),
        evidence: evidence.iter().cloned().map(Into::into).collect(),
        linearization: None,
    }
}

/// A STOP violation's evidence: an append and the validity check it came after, at 9.5 s.
pub(super) fn late_append() -> [Evidence; 2] {
    let validity = Evidence::Validity {
        process: Process::new("replica-1", 0),
        session: "s1".into(),
        at_local_us: 9_400_000,
        at_us: 9_500_000,
    };
    [Evidence::Op(7), validity]
}

pub(super) fn run(
    scenario: &str,
    seed: u64,
    status: RunStatus,
    checks: Vec<CheckRecord>,
) -> RunRecord {
    RunRecord {
        v: RECORD_VERSION,
        scenario: scenario.into(),
        seed,
        status,
        unexpected: checks
            .iter()
            .filter(|c| c.verdict == CheckVerdict::Fail && !c.expected_violation)
            .map(|c| c.name)
            .collect(),
        checks,
        coverage: BTreeMap::from([
            ("takeover-after-expiry".to_owned(), seed),
            ("stale-append-rejected".to_owned(), 0),
        ]),
        drawn: serde_json::Value::Null,
        faults: 2,
        operations: 40,
        wall_ms: 100 + seed,
        error: None,
        replay: format!("leasesim run --scenario sims/field-cases/{scenario}.toml --seed {seed}"),
    }
}

pub(super) fn results() -> Vec<RunRecord> {
    let mut out = vec![
        run("clean", 0, RunStatus::Clean, checks(&[])),
        run("clean", 1, RunStatus::Clean, checks(&[])),
    ];
    let mut violated = checks(&[]);
    fail(
        &mut violated,
        "FENCE",
        "a record of writer epoch 1 committed after Fence{2}",
        &[Evidence::seq("s1", 4), Evidence::Op(12)],
    );
    out.push(run("f1-pause", 2, RunStatus::Violation, violated));
    out.push(run("f1-pause", 3, RunStatus::Clean, checks(&[])));
    let mut harness = run("flaky", 0, RunStatus::HarnessError, Vec::new());
    harness.error = Some("panicked at src/sim/world.rs: <boom> & \"quotes\" | pipe".into());
    out.push(harness);
    let mut unknown = checks(&[]);
    let lin_lease = unknown.iter_mut().find(|c| c.name.name() == "LIN-LEASE");
    lin_lease.unwrap().verdict = CheckVerdict::Unknown;
    out.push(run("slow", 1, RunStatus::Inconclusive, unknown));
    let mut caught = checks(&["FENCE"]);
    fail(
        &mut caught,
        "FENCE",
        "stale append landed",
        &[Evidence::Op(3)],
    );
    out.push(run("mutant-caught", 0, RunStatus::Clean, caught));
    out.push(run("mutant-missed", 0, RunStatus::Clean, checks(&["EXCL"])));
    out
}

pub(super) fn shrunk() -> Vec<ShrunkRun> {
    vec![ShrunkRun {
        scenario: "f1-pause".into(),
        seed: 2,
        check: Check::Fence,
        run_file: "shrunk/f1-pause-2-FENCE.json".into(),
        replay: "leasesim replay shrunk/f1-pause-2-FENCE.json".into(),
        faults: (3, 1),
        operations: (40, 6),
        attempts: 17,
        violations: vec![violation(
            "a record of writer epoch 1 committed after Fence{2}",
            &[Evidence::seq("s1", 4), Evidence::Op(12)],
        )],
        sequence_diagram: "sequenceDiagram\n    participant r1 as replica-1\n    participant lease\n    participant ledger\n    r1->>lease: 0.000s acquire s1\n    lease-->>r1: Granted token 1 (op 1)\n".into(),
    }]
}

fn write_folder(dir: &Path, campaign: &CampaignFile, results: &[RunRecord], shrunk: &[ShrunkRun]) {
    fs::create_dir_all(dir.join("shrunk")).unwrap();
    fs::write(dir.join(CAMPAIGN_FILE), pretty(campaign)).unwrap();
    write_lines(&dir.join(RESULTS_FILE), results).unwrap();
    write_lines(&dir.join(SHRUNK_FILE), shrunk).unwrap();
    for run in shrunk {
        fs::write(
            dir.join(&run.run_file),
            format!("{{\"seed\":{}}}\n", run.seed),
        )
        .unwrap();
    }
}

/// Rendering `dir` fails with an error that says `expected`.
fn assert_render_fails(dir: &Path, expected: &str) {
    let error = render(dir).unwrap_err().to_string();
    assert!(error.contains(expected), "{error}");
}

/// report.md of `data` holds `expected`.
pub(super) fn assert_markdown_has(data: &ReportData, expected: &str) {
    let (md, _, _) = render_text(data);
    assert!(md.contains(expected), "{md}");
}

fn read(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn render_writes_the_three_outputs_with_the_campaign_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), &campaign("abc123", None), &results(), &shrunk());
    assert_eq!(
        render(dir.path()).unwrap(),
        Exit::HarnessError,
        "a harness error wins"
    );

    let md = read(dir.path(), "report.md");
    let lines = [
        "| seeds | 0..4 |",
        "| git commit | `abc123` |",
        "| config hash | `c0ffee` |",
        "| Cargo.lock hash | `10c4` |",
        "| shard | — |",
        "| mutant | none |",
        "| runs | 8 (5 clean, 1 violation, 0 liveness, 1 inconclusive, 1 harness-error) |",
        "**Verdict: harness error: 1 run could not be judged (first: flaky seed 0); 1 scenario violated FENCE; expected violation never seen (mutant-missed: EXCL); 16 of 24 planned runs missing (see Missing runs); not a clean campaign; 1 run ran out of a check's budget; no violation found, with 2 warnings: coverage event `graceful-handover` never reached in clean; coverage event `stale-append-rejected` never reached in f1-pause (exit 3)**",
        "| FENCE | 2 | 20 | 1 | 1 | 0 | **FAIL** |",
        "| LIN-LEASE | 1 | 10 | 0 | 0 | 1 | inconclusive |",
        "| FENCE | 1 | 10 | 1 | 1 | 0 | caught (expected) |",
        "| EXCL | 1 | 10 | 0 | 0 | 0 | **NOT CAUGHT** (expected violation never seen) |",
        "| takeover-after-expiry | 1 ✓ | 5 | 0 | 1 | 0 | 0 |",
        "| graceful-handover | **0 ✗** | 0 | 0 | 0 | 0 | 0 |",
        "| flaky | 0 | panicked at src/sim/world.rs: &lt;boom&gt; & \"quotes\" \\| pipe | `leasesim run --scenario sims/field-cases/flaky.toml --seed 0` |",
        "- minimal run: `shrunk/f1-pause-2-FENCE.json`",
        "  leasesim replay shrunk/f1-pause-2-FENCE.json",
        "- op 12",
        "```mermaid",
        "    lease-->>r1: Granted token 1 (op 1)",
    ];
    assert_has_lines(&md, "report.md", &lines);
    assert!(md.contains("- **mutant-missed**: expects **EXCL** to be violated, but no run"));
    assert!(md.contains("- clean: expects coverage event `graceful-handover`, never reached."));
    // Check rows in report order.
    let order: Vec<usize> = Check::ALL
        .iter()
        .map(|c| md.find(&format!("\n| {c} | 2 | 20 |")).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]));

    let junit = read(dir.path(), "junit.xml");
    assert!(junit.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"leasesim campaign\" tests=\"56\" failures=\"2\" errors=\"1\" skipped=\"1\">"));
    assert!(junit.contains("<testcase classname=\"leasesim.clean\" name=\"TOKEN\"/>"));
    assert!(junit.contains("<failure message=\"FENCE violated in 1 of 2 runs (1 violations)\" type=\"violation\">seed 2 (replay: leasesim run --scenario sims/field-cases/f1-pause.toml --seed 2)\n  a record of writer epoch 1 committed after Fence{2}\n    - ledger s1 seq 4\n    - op 12\nminimal run: shrunk/f1-pause-2-FENCE.json"));
    assert!(junit.contains("type=\"expected-violation-not-seen\""));
    assert!(junit.contains(
        "<skipped message=\"inconclusive in 1 of 1 run (a search ran out of budget)\"/>"
    ));
    assert!(junit.contains("<error message=\"1 run could not be judged (seeds 0)\" type=\"harness-error\">seed 0: panicked at src/sim/world.rs: &lt;boom&gt; &amp; &quot;quotes&quot; | pipe"));
    assert_eq!(junit.matches("<testcase ").count(), 56);

    let summary: Summary = serde_json::from_str(&read(dir.path(), "summary.json")).unwrap();
    assert_eq!(summary.v, SUMMARY_VERSION);
    assert_eq!(summary.exit_code, 3);
    assert_eq!(summary.runs, 8);
    assert_eq!(summary.by_status["violation"], 1);
    assert_eq!(summary.harness_errors.len(), 1);
    assert_eq!(summary.harness_errors[0].seed, 0);
    assert_eq!(summary.shrunk[0].run_file, "shrunk/f1-pause-2-FENCE.json");
    let f1 = &summary.scenarios[1];
    assert_eq!(f1.name, "f1-pause");
    assert_eq!(f1.coverage["takeover-after-expiry"], 5);
    let fence = f1.checks.iter().find(|c| c.name == Check::Fence).unwrap();
    assert_eq!((fence.runs, fence.checks, fence.violations), (2, 20, 1));
    assert_eq!(summary.scenarios[5].unreached_violations, vec![Check::Excl]);
    assert_eq!(
        summary.scenarios[0].unreached_coverage,
        vec!["graceful-handover"]
    );
}

#[test]
fn exit_codes_follow_the_design_order() {
    let code = |keep: &dyn Fn(&RunRecord) -> bool, campaign: CampaignFile| {
        let results: Vec<RunRecord> = results().into_iter().filter(|r| keep(r)).collect();
        ReportData::new(campaign, results, Vec::new())
            .summary()
            .exit_code
    };
    assert_eq!(code(&|_| true, campaign("c", None)), 3);
    assert_eq!(code(&|r| r.scenario != "flaky", campaign("c", None)), 1);
    // Without the unexpected violation, the expected one never seen still fails.
    let no_violation = |r: &RunRecord| r.scenario != "flaky" && r.scenario != "f1-pause";
    assert_eq!(code(&no_violation, campaign("c", None)), 1);
    let mut fixed = campaign("c", None);
    fixed.scenarios[5].violate.clear();
    let fixed_results = |r: &RunRecord| no_violation(r) && r.scenario != "mutant-missed";
    assert_eq!(code(&fixed_results, fixed.clone()), 4);
    let mut live = checks(&[]);
    fail(&mut live, "LIVE", "nobody appended", &[]);
    let mut results: Vec<RunRecord> = results().into_iter().filter(fixed_results).collect();
    results.push(run("clean", 9, RunStatus::Liveness, live));
    let data = ReportData::new(fixed.clone(), results, Vec::new());
    assert_eq!(data.summary().exit_code, 5);
    let clean = |r: &RunRecord| fixed_results(r) && r.scenario != "slow";
    assert_eq!(code(&clean, fixed), 0);
}

/// The verdict line names what failed (scenarios and checks, survived mutants, expected
/// violations never seen), an incomplete campaign as such, and a clean one with its coverage
/// warnings, which leave the exit code at 0.
#[test]
fn verdict_lines_say_what_failed_and_warn_of_unreached_coverage() {
    let verdict = |keep: &dyn Fn(&RunRecord) -> bool, campaign: CampaignFile| {
        let results: Vec<RunRecord> = results().into_iter().filter(|r| keep(r)).collect();
        let summary = ReportData::new(campaign, results, Vec::new()).summary();
        (summary.exit_code, summary.verdict)
    };
    let warning = ", with 1 warning: coverage event `graceful-handover` never reached in clean";
    let warnings = ", with 2 warnings: coverage event `graceful-handover` never reached in \
                    clean; coverage event `stale-append-rejected` never reached in f1-pause";
    assert_eq!(
        verdict(&|r| r.scenario != "flaky", campaign("c", None)),
        (
            1,
            format!(
                "FAIL: 1 scenario violated FENCE; expected violation never seen \
                 (mutant-missed: EXCL); 1 run ran out of a check's budget; no violation \
                 found{warnings}"
            )
        )
    );
    assert_eq!(
        verdict(&|_| true, campaign("c", None)).1,
        format!(
            "harness error: 1 run could not be judged (first: flaky seed 0); 1 scenario \
             violated FENCE; expected violation never seen (mutant-missed: EXCL); 1 run ran \
             out of a check's budget; no violation found{warnings}"
        )
    );
    let mut fixed = campaign("c", None);
    fixed.scenarios[5].violate.clear();
    let clean = |r: &RunRecord| {
        !["flaky", "f1-pause", "mutant-missed", "slow"].contains(&r.scenario.as_str())
    };
    assert_eq!(
        verdict(&clean, fixed.clone()),
        (0, format!("clean{warning}"))
    );
    fixed.scenarios[0].coverage.clear();
    assert_eq!(verdict(&clean, fixed.clone()), (0, "clean".to_owned()));
    let mut data = ReportData::new(fixed, Vec::new(), Vec::new());
    assert_eq!(
        data.summary().verdict,
        "incomplete: no run finished; not a clean campaign"
    );
    data.results = results().into_iter().filter(clean).collect();
    let mut survivor =
        Detection::undetected("fence-written-blind", "a journal's fence is written blind");
    survivor.killed_by = "survived".into();
    data.mutants = vec![survivor];
    assert_eq!(
        (data.summary().exit_code, data.summary().verdict),
        (
            1,
            "FAIL: 1 mutant survived (fence-written-blind)".to_owned()
        )
    );
}

/// The hand-built campaign's `clean` runs alone (seeds 0 and 1), its expected event
/// `graceful-handover` promised within `within` seeds (by default, within 1).
fn clean_promising(within: Option<u64>) -> ReportData {
    let mut campaign = campaign("c", None);
    if let Some(within) = within {
        campaign.scenarios[0]
            .coverage_within_seeds
            .insert("graceful-handover".into(), within);
    }
    let clean = results()
        .into_iter()
        .filter(|r| r.scenario == "clean")
        .collect();
    ReportData::new(campaign, clean, Vec::new())
}

/// An expected event promised within more seeds than a campaign ran is a note, not a
/// warning; from that many seeds on, a miss is the warning again (the promise never hides a
/// miss of a campaign long enough to keep it).
#[test]
fn an_event_promised_within_more_seeds_than_ran_is_a_note_not_a_warning() {
    let summary_within = |within: Option<u64>| clean_promising(within).summary();
    let seeds = summary_within(None).scenarios[0].runs;
    assert_eq!(
        seeds, 2,
        "the hand-built campaign ran seeds 0 and 1 of clean"
    );
    let warning = "coverage event `graceful-handover` never reached in clean";

    // Promised within 3 seeds, 2 ran: a note, the verdict clean without a warning.
    let short = summary_within(Some(3));
    assert_eq!(short.verdict, "clean");
    assert!(short.warnings.is_empty(), "{:?}", short.warnings);
    let note = "coverage event `graceful-handover` not reached in 2 seeds of clean (expected \
                within 3 seeds)";
    assert_eq!(short.notes, vec![note]);
    assert!(short.scenarios[0].unreached_coverage.is_empty());
    assert_eq!(
        short.scenarios[0].pending_coverage,
        vec![PendingCoverage {
            event: "graceful-handover".into(),
            seeds: 2,
            within_seeds: 3,
        }]
    );
    let closing = short.closing_lines(Path::new("out"));
    assert_eq!(
        closing,
        format!("note: {note}\nclean — exit 0 — report: out/report.md")
    );
    let data = clean_promising(Some(3));
    let markdown = markdown::render(&data, &data.summary());
    assert!(
        markdown.contains("## Coverage for a longer campaign\n\n"),
        "{markdown}"
    );
    assert!(markdown.contains(&format!("- {note}.\n")), "{markdown}");
    assert!(markdown.contains(" 0 (within 3 seeds) |"), "{markdown}");
    assert!(!markdown.contains("## Expectations not met"), "{markdown}");

    // Promised within the 2 seeds that ran, or by default within 1: the warning.
    for within in [Some(2), None] {
        let due = summary_within(within);
        assert_eq!(due.verdict, format!("clean, with 1 warning: {warning}"));
        assert_eq!(due.warnings, vec![warning]);
        assert!(due.notes.is_empty());
        assert!(due.scenarios[0].pending_coverage.is_empty());
    }
}

/// report.html and junit.xml list what report.md lists: a coverage warning, and a note for an
/// event promised within more seeds than ran — in JUnit as the suite's output, never as a
/// failing testcase (a warning is not a violation).
#[test]
fn coverage_warnings_and_notes_are_in_every_format() {
    let render = |within: Option<u64>| {
        let data = clean_promising(within);
        let summary = data.summary();
        (html::render(&data, &summary), render_text(&data).2)
    };
    let warning = "coverage event `graceful-handover` never reached in clean";
    let note = "coverage event `graceful-handover` not reached in 2 seeds of clean (expected \
                within 3 seeds)";

    let (page, junit) = render(None);
    assert!(page.contains("<h2>Coverage warnings</h2>"), "{page}");
    assert!(
        page.contains("never reached in clean</li>")
            && page.contains("<code>graceful-handover</code>"),
        "{page}"
    );
    assert!(!page.contains("Coverage for a longer campaign"), "{page}");
    assert_suite_output(&junit, &format!("warning: {warning}"));
    assert!(!junit.contains("<failure message=\"coverage"), "{junit}");

    let (page, junit) = render(Some(3));
    assert!(
        page.contains("<h2>Coverage for a longer campaign</h2>"),
        "{page}"
    );
    assert!(
        page.contains("Not warnings: each scenario promises"),
        "{page}"
    );
    assert!(!page.contains("Coverage warnings"), "{page}");
    assert_suite_output(&junit, &format!("note: {note}"));
}

/// junit.xml's suite output is `line`, escaped.
fn assert_suite_output(junit: &str, line: &str) {
    let output = format!("<system-out>{}</system-out>", junit::escape(line));
    assert!(junit.contains(&output), "{junit}");
}

#[test]
fn seeds_that_ran_are_listed_as_ranges() {
    use super::summary::seed_ranges;
    assert_eq!(
        seed_ranges([3, 0, 1, 2, 40, 41, 44, 2]),
        "0..4, 40..42, 44..45"
    );
    assert_eq!(seed_ranges(0..37), "0..37");
    assert_eq!(seed_ranges([]), "none");
    let max = u64::MAX;
    assert_eq!(
        seed_ranges([max, 0, max - 1]),
        format!("0..1, {}..={max}", max - 1)
    );
}

#[test]
fn rendering_is_deterministic_whatever_the_completion_order() {
    let data = ReportData::new(campaign("abc123", None), results(), shrunk());
    let mut shuffled = results();
    shuffled.reverse();
    shuffled.push(results()[0].clone()); // a duplicate (scenario, seed)
    let other = ReportData::new(campaign("abc123", None), shuffled, shrunk());
    assert_eq!(render_text(&data), render_text(&other));
}

#[test]
fn report_md_snapshot() {
    let data = ReportData::new(campaign("abc123", None), results(), shrunk());
    let (md, _, _) = render_text(&data);
    insta::assert_snapshot!("report_md", md);
}

/// Two shards' folders `a` and `b`, and `out` for their merge, under `root`.
fn shard_folders(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    (root.join("a"), root.join("b"), root.join("out"))
}

#[test]
fn merge_of_two_shards() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shard_folders(root.path());
    let all = results();
    // Shard 1: even positions of the run order (seed × 6 + scenario), shard 2: odd ones,
    // plus a duplicate of one of its own.
    let plan = leasesim_results::plan::CampaignPlan::of(&meta("abc123", Some("1/2"))).unwrap();
    let (one, mut two): (Vec<RunRecord>, Vec<RunRecord>) = all
        .iter()
        .cloned()
        .partition(|r| plan.owns(&r.scenario, r.seed));
    two.push(two[0].clone());
    let (shrunk_one, shrunk_two) = if one.iter().any(|r| r.scenario == "f1-pause" && r.seed == 2) {
        (shrunk(), Vec::new())
    } else {
        (Vec::new(), shrunk())
    };
    write_folder(&a, &campaign("abc123", Some("1/2")), &one, &shrunk_one);
    write_folder(&b, &campaign("abc123", Some("2/2")), &two, &shrunk_two);

    let code = merge(&[a.clone(), b.clone()], &out, false).unwrap();
    assert_eq!(code, Exit::HarnessError);
    let merged = ReportData::read(&out).unwrap();
    assert_eq!(
        merged.results.len(),
        all.len(),
        "deduplicated by (scenario, seed)"
    );
    assert_eq!(merged.campaign.meta.shard.as_deref(), Some("1/2+2/2"));
    // Replayed from its copy in the merged folder, as a whole campaign into `out` says.
    let mut in_out = shrunk();
    in_out[0].replay = format!(
        "leasesim replay {}",
        out.join("shrunk/f1-pause-2-FENCE.json").display()
    );
    assert_ne!(in_out, shrunk());
    assert_eq!(merged.shrunk, in_out);
    assert_eq!(
        read(&out, "shrunk/f1-pause-2-FENCE.json"),
        "{\"seed\":2}\n",
        "the minimal run file is copied"
    );
    // The merged report is the unsharded one, but for the shard line.
    let mut whole = ReportData::new(
        CampaignFile {
            meta: merged.campaign.meta.clone(),
            ..campaign("abc123", None)
        },
        all,
        in_out,
    );
    whole.completeness.clone_from(&merged.completeness);
    assert_eq!(read(&out, "report.md"), render_text(&whole).0);
}

#[test]
fn merge_refuses_shards_of_different_campaigns_unless_forced() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shard_folders(root.path());
    write_folder(&a, &campaign("abc123", Some("1/2")), &results()[..2], &[]);
    write_folder(&b, &campaign("def456", Some("2/2")), &results()[2..4], &[]);
    let error = merge(&[a.clone(), b.clone()], &out, false).unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(
            error,
            ReportError::Mismatch {
                what: "git commit",
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("abc123 vs def456"), "{text}");
    assert!(text.contains("--force"), "{text}");
    assert!(!out.exists(), "nothing written");
    assert_eq!(merge(&[a, b], &out, true).unwrap(), Exit::SafetyViolation);
    let md = read(&out, "report.md");
    assert!(md.contains("| git commit | `abc123+def456` |"), "{md}");
}

#[test]
fn malformed_results_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), &campaign("abc123", None), &results()[..1], &[]);
    let path = dir.path().join(RESULTS_FILE);
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str("{\"v\":1,\"scenario\":\"clean\"}\n");
    fs::write(&path, text).unwrap();
    let error = render(dir.path()).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, ReportError::Malformed { line: 2, .. }),
        "{message}"
    );
    assert!(
        message.contains("results.jsonl:2: missing field"),
        "{message}"
    );

    fs::write(&path, "not json\n").unwrap();
    assert_render_fails(dir.path(), "results.jsonl:1:");

    fs::write(dir.path().join(SHRUNK_FILE), "{}\n").unwrap();
    fs::write(&path, "").unwrap();
    assert_render_fails(dir.path(), "shrunk.jsonl:1:");
}

#[test]
fn missing_files_and_bad_paths_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert_render_fails(dir.path(), "campaign.json");

    write_folder(dir.path(), &campaign("abc123", None), &[], &[]);
    fs::remove_file(dir.path().join(RESULTS_FILE)).unwrap();
    assert_render_fails(dir.path(), "results.jsonl");

    let mut escaping = shrunk();
    escaping[0].run_file = "../elsewhere.json".into();
    write_folder(dir.path(), &campaign("abc123", None), &[], &[]);
    write_lines(&dir.path().join(SHRUNK_FILE), &escaping).unwrap();
    assert_render_fails(dir.path(), "shrunk.jsonl:1: run_file `../elsewhere.json`");

    assert!(matches!(
        merge(&[], dir.path(), false),
        Err(ReportError::NoInput)
    ));
}

#[test]
fn an_empty_campaign_is_incomplete_never_clean() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), &campaign("abc123", None), &[], &[]);
    fs::remove_file(dir.path().join(SHRUNK_FILE)).unwrap();
    assert_eq!(render(dir.path()).unwrap(), Exit::Incomplete);
    let md = read(dir.path(), "report.md");
    assert!(md.contains("(exit 6)**"), "{md}");
    assert!(md.contains("24 of 24 planned runs have no record:"), "{md}");
    assert!(md.contains("- clean seed 0\n"), "{md}");
    // Built in memory, with no plan to judge against: no runs is still incomplete.
    let data = ReportData::new(campaign("abc123", None), Vec::new(), Vec::new());
    assert_eq!(data.summary().exit(), Exit::Incomplete);
}

/// Only `clean` records, one per seed 0..4: clean but for the 20 runs of the other
/// scenarios.
fn clean_runs(keep: impl Fn(u64) -> bool) -> Vec<RunRecord> {
    (0..4)
        .filter(|seed| keep(*seed))
        .map(|seed| run("clean", seed, RunStatus::Clean, checks(&[])))
        .collect()
}

#[test]
fn records_outside_the_plan_are_an_error_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut records = clean_runs(|_| true);
    records.push(run("clean", 9, RunStatus::Clean, checks(&[])));
    records.push(run("nope", 0, RunStatus::Clean, checks(&[])));
    write_folder(dir.path(), &campaign("abc123", None), &records, &[]);
    let error = render(dir.path()).unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, ReportError::Stray { count: 2, .. }),
        "{text}"
    );
    assert!(text.contains("clean seed 9, nope seed 0"), "{text}");
    assert!(text.contains("seeds 0..4"), "{text}");
}

#[test]
fn a_tampered_shard_in_campaign_json_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), &campaign("abc123", Some("7/3")), &[], &[]);
    assert_render_fails(dir.path(), "campaign.json:1: shard: `7/3` is not a shard");
}

#[test]
fn a_merge_missing_a_shard_is_incomplete_and_names_it() {
    let root = tempfile::tempdir().unwrap();
    let (a, out) = (root.path().join("a"), root.path().join("out"));
    // Shard 1/2 owns the even positions: `clean` (position seed × 6) for every seed.
    write_folder(
        &a,
        &campaign("abc123", Some("1/2")),
        &clean_runs(|_| true),
        &[],
    );
    assert_eq!(
        merge(std::slice::from_ref(&a), &out, false).unwrap(),
        Exit::Incomplete
    );
    let md = read(&out, "report.md");
    assert!(md.contains("- shard 2/2 (not merged)"), "{md}");
    assert!(md.contains("20 of 24 planned runs have no record:"), "{md}");
    let summary: Summary = serde_json::from_str(&read(&out, "summary.json")).unwrap();
    assert_eq!((summary.planned_runs, summary.missing_runs), (Some(24), 20));

    // The same shard twice, or a shard of another split, is not a campaign's shards.
    let error = merge(&[a.clone(), a.clone()], &out, false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("shard 1/2 is also in"), "{error}");
    let b = root.path().join("b");
    write_folder(&b, &campaign("abc123", Some("2/3")), &[], &[]);
    let error = merge(&[a.clone(), b], &out, false).unwrap_err().to_string();
    assert!(error.contains("are not shards of one campaign"), "{error}");
    let mut other = campaign("abc123", Some("2/2"));
    other.meta.seeds = "0..8".into();
    let c = root.path().join("c");
    write_folder(&c, &other, &[], &[]);
    let error = merge(&[a, c], &out, false).unwrap_err().to_string();
    assert!(error.contains("seeds or scenarios (0..8;"), "{error}");
}

/// A detection row of mutant `name`, killed by `killed_by`, with a minimal run file when
/// `run_file` is given.
pub(super) fn detection(name: &str, killed_by: &str, run_file: Option<&str>) -> Detection {
    Detection {
        killed: true,
        killed_by: killed_by.into(),
        seeds_to_detection: run_file.map(|_| 2),
        runs_to_detection: run_file.map(|_| 3),
        wall_ms_to_detection: run_file.map(|_| 40),
        shrunk: run_file.map(|_| (1, 6)),
        run_file: run_file.map(Into::into),
        ..Detection::undetected(name, &format!("{name} is planted"))
    }
}

fn write_mutants(dir: &Path, rows: &[Detection]) {
    write_lines(&dir.join(MUTANTS_FILE), rows).unwrap();
    for file in rows.iter().filter_map(|d| d.run_file.as_ref()) {
        fs::write(dir.join(file), format!("{{\"file\":\"{file}\"}}\n")).unwrap();
    }
}

/// The minimal run file of `release-by-session-only` in shard 2/2's detection table.
const MUTANT_RUN_FILE: &str = "shrunk/mutant-release-by-session-only-clean-seed1.run.json";

/// Shards `a` (1/2) and `b` (2/2) of a clean campaign under `root`, with their detection
/// tables out of catalogue order within a shard and across shards; returns `a`, `b` and the
/// merge's `out` folder (not yet written).
fn shards_with_detections(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (a, b, out) = shard_folders(root);
    let plan = leasesim_results::plan::CampaignPlan::of(&meta("abc123", Some("1/2"))).unwrap();
    let (one, two): (Vec<RunRecord>, Vec<RunRecord>) = clean_runs(|_| true)
        .into_iter()
        .partition(|r| plan.owns(&r.scenario, r.seed));
    write_folder(&a, &campaign("abc123", Some("1/2")), &one, &[]);
    write_folder(&b, &campaign("abc123", Some("2/2")), &two, &[]);
    write_mutants(
        &a,
        &[
            detection("expiry-off-by-one", "conformance rule a", None),
            detection("token-not-advanced-on-expiry", "conformance rule b", None),
        ],
    );
    write_mutants(
        &b,
        &[detection(
            "release-by-session-only",
            "EXCL in clean (seed 1)",
            Some(MUTANT_RUN_FILE),
        )],
    );
    (a, b, out)
}

#[test]
fn merge_unions_detection_tables_in_catalogue_order() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shards_with_detections(root.path());
    merge(&[a, b], &out, false).unwrap();
    let merged = ReportData::read(&out).unwrap();
    let names: Vec<&str> = merged.mutants.iter().map(|d| d.mutant.as_str()).collect();
    assert_eq!(
        names,
        [
            "token-not-advanced-on-expiry",
            "release-by-session-only",
            "expiry-off-by-one"
        ]
    );
    assert_eq!(
        merged.mutants[1],
        detection(
            "release-by-session-only",
            "EXCL in clean (seed 1)",
            Some(MUTANT_RUN_FILE)
        )
    );
}

#[test]
fn merge_copies_each_mutants_minimal_run_file() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shards_with_detections(root.path());
    merge(&[a, b], &out, false).unwrap();
    assert_eq!(
        read(&out, MUTANT_RUN_FILE),
        format!("{{\"file\":\"{MUTANT_RUN_FILE}\"}}\n"),
        "the mutant's minimal run file is copied"
    );
}

#[test]
fn merge_scores_the_union_of_the_detection_tables() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shards_with_detections(root.path());
    merge(&[a, b], &out, false).unwrap();
    let md = read(&out, "report.md");
    assert!(md.contains("Mutation score: **3/3**"), "{md}");
    let summary: Summary = serde_json::from_str(&read(&out, "summary.json")).unwrap();
    assert_eq!(summary.mutation_score, Some((3, 3)));
}

#[test]
fn merge_refuses_a_mutant_in_two_shards_unless_forced() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shards_with_detections(root.path());
    // The same mutant in two shards (shards made before detection was sharded) is refused,
    // naming both folders; --force keeps the first folder's row.
    write_mutants(
        &b,
        &[detection(
            "token-not-advanced-on-expiry",
            "conformance rule c",
            None,
        )],
    );
    let error = merge(&[a.clone(), b.clone()], &out, false)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&format!(
            "cannot merge {}: mutant `token-not-advanced-on-expiry`",
            b.display()
        )) && error.contains(&format!("and in {}'s", a.display()))
            && error.contains("--force"),
        "{error}"
    );
    merge(&[a, b], &out, true).unwrap();
    let forced = ReportData::read(&out).unwrap();
    assert_eq!(forced.mutants.len(), 2);
    assert_eq!(forced.mutants[0].killed_by, "conformance rule b");
}

#[test]
fn merged_again_without_any_detection_table_the_old_one_is_gone() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = shards_with_detections(root.path());
    merge(&[a.clone(), b], &out, false).unwrap();
    assert!(out.join(MUTANTS_FILE).exists());
    fs::remove_file(a.join(MUTANTS_FILE)).unwrap();
    merge(std::slice::from_ref(&a), &out, false).unwrap();
    assert!(!out.join(MUTANTS_FILE).exists());
}

#[test]
fn a_mutant_run_file_outside_the_folder_is_malformed() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(
        dir.path(),
        &campaign("abc123", None),
        &clean_runs(|_| true),
        &[],
    );
    let mut row = detection("release-by-session-only", "EXCL", Some("x"));
    row.run_file = Some("../elsewhere.run.json".into());
    write_lines(
        &dir.path().join(MUTANTS_FILE),
        &[detection("expiry-off-by-one", "rule", None), row],
    )
    .unwrap();
    assert_render_fails(
        dir.path(),
        "mutants.jsonl:2: run_file `../elsewhere.run.json` is not a path inside",
    );
}

#[test]
fn xml_escaping() {
    assert_eq!(
        junit::escape("a<b>&\"c'\u{1}\td"),
        "a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}\td"
    );
}

#[test]
fn a_check_no_run_could_judge_is_not_judged_in_every_output() {
    let mut unjudged = checks(&[]);
    let excl = unjudged.iter_mut().find(|c| c.name == Check::Excl).unwrap();
    excl.checks = 0;
    excl.verdict = CheckVerdict::NotJudged;
    excl.not_judged = Some("no grant, renew or release decision lines".into());
    let json = serde_json::to_string(&*excl).unwrap();
    assert!(
        json.contains(
            r#""verdict":"not-judged","not_judged":"no grant, renew or release decision lines""#
        ),
        "{json}"
    );
    let results = vec![run("clean", 0, RunStatus::Clean, unjudged)];
    let data = ReportData::new(campaign("abc123", None), results, Vec::new());
    let summary = data.summary();
    assert_eq!(summary.exit_code, 0, "not judged alone is clean");
    let excl = summary.scenarios[0]
        .checks
        .iter()
        .find(|c| c.name == Check::Excl)
        .unwrap();
    assert_eq!(
        (excl.result, excl.not_judged_runs),
        (CheckResult::NotJudged, 1)
    );
    let (md, _, junit) = render_text(&data);
    assert!(
        md.contains(
            "| EXCL | 1 | 0 | 0 | 0 | 0 | not judged (no grant, renew or release decision lines) |"
        ),
        "{md}"
    );
    assert!(
        junit.contains(
            "<testcase classname=\"leasesim.clean\" name=\"EXCL\">\n      <skipped message=\"not judged: no grant, renew or release decision lines\"/>\n    </testcase>"
        ),
        "{junit}"
    );
    assert!(junit.contains("<testcase classname=\"leasesim.clean\" name=\"TOKEN\"/>"));
}

/// A budget that ran out before some scenarios ran: incomplete (exit 6), naming them, never
/// clean — though every run that finished was clean (the reviewer's `--budget 2s`, 18 of 40
/// scenarios unrun, had said "clean").
#[test]
fn a_budget_campaign_that_never_ran_some_scenarios_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    // The four scenarios that expect no violation, so only completeness decides the exit.
    let mut file = first_scenarios(4);
    file.meta.seeds = "budget 2s".into();
    write_folder(dir.path(), &file, &clean_runs(|_| true), &[]);
    assert_eq!(render(dir.path()).unwrap(), Exit::Incomplete);
    let md = read(dir.path(), "report.md");
    assert!(
        md.contains(
            "incomplete: 3 scenarios of 4 never ran within the budget (f1-pause, flaky, slow); \
             give a longer --budget; not a clean campaign"
        ),
        "{md}"
    );
    // Every scenario ran at least once: clean.
    let every: Vec<RunRecord> = file
        .meta
        .scenarios
        .iter()
        .map(|name| run(name, 0, RunStatus::Clean, checks(&[])))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), &file, &every, &[]);
    assert_eq!(render(dir.path()).unwrap(), Exit::Clean);
}

/// A mutant's counterexample shows what a scenario's shrunk violation shows, rendered the
/// same way: the check and its rule, the violation's message and evidence, the command that
/// reruns it with the mutant planted, its timeline and its clean twin's (the reviewer had
/// only the timelines).
#[test]
fn a_mutant_counterexample_shows_check_rule_evidence_and_its_replay_with_the_mutant() {
    let mut data = ReportData::new(campaign("abc123", None), results(), shrunk());
    let file = LATE_APPEND_RUN;
    data.mutants = vec![late_append_kill(
        "leasesim run --scenario sims/field-cases/f1-pause.toml --seed 0 --mutant \
         no-local-deadline",
    )];
    let files = Counterexample::of(file);
    data.timelines
        .insert(files.timeline.clone(), "<svg/>".into());
    data.timelines
        .insert(files.clean_timeline.clone(), "<svg/>".into());
    let (md, _, _) = render_text(&data);
    let start = md.find("### Mutant counterexamples").expect("the section");
    let mutant = &md[start..];
    let expected = format!(
        "### Mutant counterexamples

#### `no-local-deadline`: STOP in f1-pause (seed 0)

- minimal run: `{file}` (history: `{}`)
- shrunk to 1 fault and 6 operations
- replay the run it was found in, the mutant planted (the minimal run file plants it too: \
`leasesim replay` it):

  ```sh
  leasesim run --scenario sims/field-cases/f1-pause.toml --seed 0 --mutant no-local-deadline
  ```

Check failed: **STOP** (a replica stops using its lease once lost or past its validity \
deadline).

**replica-1#0 appended after its validity deadline**

- op 7
- validity s1 by replica-1 at 9.500 s (local 9.400 s)

![timeline of the minimal run]({})

The same run on the correct implementation (`mutant: null`, its history in `{}`):

![timeline of the clean twin]({})

",
        files.history, files.timeline, files.clean_history, files.clean_timeline
    );
    assert_eq!(mutant, expected);
    // A scenario's shrunk violation says its check and rule the same way.
    let violations = &md[md.find("## Violations (shrunk)").unwrap()..start];
    assert!(
        violations.contains(&format!(
            "Check failed: **FENCE** ({}).\n\n**a record of writer epoch 1",
            Check::Fence.rule()
        )),
        "{violations}"
    );
}

/// The seeds every scenario ran are a range; a seed only some scenarios ran (the last seed
/// of a budget campaign) is named apart with how many — the header had said `0..13` when 22
/// of 40 scenarios ran only 0..12.
#[test]
fn a_seed_that_ran_on_only_some_scenarios_is_named_apart() {
    use super::summary::seeds_run;
    let names = ["clean", "f1-pause", "flaky", "slow"];
    let clean = |scenario: &str, seed: u64| run(scenario, seed, RunStatus::Clean, checks(&[]));
    let mut records: Vec<RunRecord> = names
        .iter()
        .flat_map(|name| (0..3).map(move |seed| clean(name, seed)))
        .collect();
    assert_eq!(seeds_run(&records, 4), "0..3", "a complete campaign");
    records.extend([clean("clean", 3), clean("f1-pause", 3)]);
    assert_eq!(seeds_run(&records, 4), "0..3; 3 on 2 of 4 scenarios");
    records.extend([clean("clean", 4), clean("f1-pause", 4), clean("clean", 5)]);
    assert_eq!(
        seeds_run(&records, 4),
        "0..3; 3..5 on 2 of 4 scenarios; 5 on 1 of 4 scenarios"
    );
    // A scenario that never ran: no seed ran on every scenario.
    let three: Vec<RunRecord> = records
        .iter()
        .filter(|r| r.scenario != "slow" && r.seed < 3)
        .cloned()
        .collect();
    assert_eq!(seeds_run(&three, 4), "0..3 on 3 of 4 scenarios");
    assert_eq!(seeds_run(&[], 4), "none");
    // Past five partial ranges, the rest are counted.
    let ragged: Vec<RunRecord> = (0..8)
        .flat_map(|seed| (0..=seed % 2).map(move |n| clean(names[n as usize], seed)))
        .collect();
    assert_eq!(
        seeds_run(&ragged, 4),
        "0 on 1 of 4 scenarios; 1 on 2 of 4 scenarios; 2 on 1 of 4 scenarios; 3 on 2 of 4 \
         scenarios; 4 on 1 of 4 scenarios; … and 3 more"
    );

    // What summary.json and the header say of a budget campaign.
    let mut file = first_scenarios(4);
    file.meta.seeds = "budget 2s".into();
    let data = ReportData::new(file, records, Vec::new());
    let summary = data.summary();
    assert_eq!(
        summary.seeds_run,
        "0..3; 3..5 on 2 of 4 scenarios; 5 on 1 of 4 scenarios"
    );
    assert_markdown_has(
        &data,
        "| seeds | budget 2s; ran 0..3; 3..5 on 2 of 4 scenarios; 5 on 1 of 4 scenarios |",
    );
}

#[test]
fn kinds_a_backend_left_out_are_in_the_markdown_the_page_and_the_summary() {
    let mut campaign = campaign("c", None);
    campaign.scenarios[0].left_out = Some(crate::LeftOut {
        backend: "target:kube-lease-manager".into(),
        kinds: vec!["pause".into(), "clock_drift".into()],
    });
    let data = ReportData::new(campaign, results(), Vec::new());
    let summary = data.summary();
    let line = "`clean` on `target:kube-lease-manager`: pause, clock_drift";
    assert_eq!(summary.left_out, vec![line.to_owned()]);
    assert_markdown_has(
        &data,
        &format!(
            "## Fault kinds left out\n\n{}\n\n- {line}.\n",
            super::summary::LEFT_OUT_INTRO
        ),
    );
    let page = html::render(&data, &summary);
    assert!(
        page.contains(
            "<ul id=\"left-out\"><li><code>clean</code> on <code>target:kube-lease-manager</code>: pause, clock_drift</li></ul>"
        ),
        "{page}"
    );

    let data = ReportData::new(super::tests::campaign("c", None), results(), Vec::new());
    assert!(data.summary().left_out.is_empty());
    assert!(!render_text(&data).0.contains("Fault kinds left out"));
}

/// The committed sample report's `results.jsonl` and `summary.json` read into the typed
/// records and write back as the same JSON: the typed check verdicts and results are spelled
/// as the files always spelled them, so neither file's version changed.
#[test]
fn the_sample_reports_records_read_into_typed_verdicts_and_write_back_the_same_json() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reports/sample");
    let value = |json: &str| serde_json::from_str::<serde_json::Value>(json).unwrap();
    let results = fs::read_to_string(sample.join(RESULTS_FILE)).unwrap();
    let mut verdicts = BTreeMap::new();
    for line in results.lines() {
        let record: RunRecord = serde_json::from_str(line).unwrap();
        assert!(READ_VERSIONS.contains(&record.v), "{}", record.v);
        for check in &record.checks {
            *verdicts.entry(check.verdict).or_insert(0) += 1;
        }
        assert_eq!(serde_json::to_value(&record).unwrap(), value(line));
    }
    assert_eq!(
        verdicts.keys().copied().collect::<Vec<_>>(),
        [CheckVerdict::Pass, CheckVerdict::NotJudged],
        "the sample has both kinds of verdict a clean campaign has"
    );
    let summary = fs::read_to_string(sample.join("summary.json")).unwrap();
    let read: Summary = serde_json::from_str(&summary).unwrap();
    assert_eq!(read.v, SUMMARY_VERSION);
    assert_eq!(serde_json::to_value(&read).unwrap(), value(&summary));
}

/// A check verdict `results.jsonl` does not know is bad input naming the file, the line
/// and the verdicts it accepts, never a check silently counted as passed.
#[test]
fn an_unknown_check_verdict_in_results_jsonl_is_refused_naming_the_accepted_ones() {
    let dir = tempfile::tempdir().unwrap();
    write_folder(dir.path(), &campaign("abc123", None), &results(), &shrunk());
    let path = dir.path().join(RESULTS_FILE);
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let edited = lines[1].replacen(r#""verdict":"pass""#, r#""verdict":"passed""#, 1);
    lines[1] = &edited;
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let error = ReportData::read(dir.path()).unwrap_err();
    assert!(!error.is_io(), "bad input, not a harness error: {error}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}:2: unknown variant `passed`", path.display()))
            && message.contains("expected one of `pass`, `fail`, `not-judged`, `unknown`"),
        "{message}"
    );
}
/// Two runs as `results.jsonl` version 1 kept them: each piece of evidence a line of prose,
/// a linearizability explanation among them line by line.
const RESULTS_V1: &str = r#"{"v":1,"scenario":"f1-pause","seed":2,"status":"violation","unexpected":["FENCE"],"checks":[{"name":"FENCE","checks":10,"expected_violation":false,"verdict":"fail","violations":[{"message":"a record of writer epoch 1 committed after Fence{2}","evidence":["ledger s1 seq 4","op 12"]}]}],"coverage":{},"drawn":null,"faults":2,"operations":40,"wall_ms":100,"error":null,"replay":"leasesim run --scenario sims/field-cases/f1-pause.toml --seed 2"}
{"v":1,"scenario":"f1-pause","seed":3,"status":"violation","unexpected":["LIN-LEASE"],"checks":[{"name":"LIN-LEASE","checks":10,"expected_violation":false,"verdict":"fail","violations":[{"message":"no linearization of partition \"s1\"","evidence":["replica-2 acquire s1 got token 2, but the lease could only be held by replica-1 then.","  partition: \"s1\"","stuck: op 4","prefix: op 1"]}]}],"coverage":{},"drawn":null,"faults":2,"operations":40,"wall_ms":100,"error":null,"replay":"leasesim run --scenario sims/field-cases/f1-pause.toml --seed 3"}
"#;

/// A report folder of version 1 is still read and rendered: each evidence line is shown as
/// it was written; a version this build does not know is refused, naming the ones it reads.
#[test]
fn a_results_file_of_version_1_is_read_its_evidence_shown_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut old = campaign("abc123", None);
    (old.v, old.meta.v) = (1, 1);
    write_folder(dir.path(), &old, &[], &[]);
    fs::write(dir.path().join(RESULTS_FILE), RESULTS_V1).unwrap();
    let data = ReportData::read(dir.path()).unwrap();
    let fence = &data.results[0].checks[0].violations[0];
    assert_eq!(
        fence.evidence,
        [
            EvidenceRecord::Written("ledger s1 seq 4".into()),
            EvidenceRecord::Written("op 12".into())
        ]
    );
    assert_eq!(fence.found().count(), 0, "prose is no data");
    assert_eq!(data.results[1].checks[0].violations[0].linearization, None);
    assert_eq!(render(dir.path()).unwrap(), Exit::SafetyViolation);
    let junit = read(dir.path(), "junit.xml");
    for line in [
        "    - ledger s1 seq 4\n    - op 12\n",
        "    - replica-2 acquire s1 got token 2, but the lease could only be held by replica-1 \
         then.\n    -   partition: &quot;s1&quot;\n    - stuck: op 4\n    - prefix: op 1\n",
    ] {
        assert!(junit.contains(line), "{line:?} in {junit}");
    }

    let newer = RESULTS_V1.replacen("\"v\":1", "\"v\":3", 1);
    fs::write(dir.path().join(RESULTS_FILE), newer).unwrap();
    assert_render_fails(
        dir.path(),
        "results.jsonl:1: schema version 3 is not one this leasesim reads (1 to 2)",
    );
}

/// What a run judged now writes reads back as the same data: its evidence tagged by kind,
/// a linearizability explanation whole with its op ids.
#[test]
fn a_violation_record_round_trips_as_tagged_data() {
    let mut record = violation("late", &late_append());
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(json["evidence"][0], serde_json::json!({"op": 7}));
    assert_eq!(json["evidence"][1]["validity"]["at_us"], 9_500_000);
    assert!(json.get("linearization").is_none(), "{json}");
    assert_eq!(
        serde_json::from_value::<ViolationRecord>(json).unwrap(),
        record
    );
    record.evidence.clear();
    record.linearization = Some(Box::new(leasesim_check::linearizability::LinEvidence {
        explanation: leasesim_check::linearizability::Explanation {
            partition: "()".into(),
            summary: "process 1 read 2 at [3, 4], but the register could only hold 1 then".into(),
            stuck_index: 1,
            stuck_process: 1,
            stuck_call: 3,
            stuck_return: Some(4),
            stuck: "process 1 read 2 at [3, 4]".into(),
            placed_before: 1,
            states_before: vec!["the register holds 1: a read then returns 1, not 2".into()],
            states_omitted: 0,
            longest_prefix: vec!["process 0 wrote 1 at [1, 2] -> the register holds 1".into()],
            longest_prefix_indices: vec![0],
        },
        stuck_op: Some(2),
        prefix_ops: vec![1],
    }));
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(json["linearization"]["stuck_op"], 2);
    assert_eq!(
        serde_json::from_value::<ViolationRecord>(json).unwrap(),
        record
    );
    assert_eq!(
        record.evidence_lines().last().map(String::as_str),
        Some("prefix: op 1")
    );
}

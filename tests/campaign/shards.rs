//! `--shard K/N` and `report merge`: the shards of a campaign together make exactly the
//! unsharded campaign, its detection table of `--mutants` included.

use std::path::Path;
use std::process::Output;

use leasesim_testkit::{assert_exit, both, leasesim, stderr};

use crate::support::{campaign_args, copy_sims, every, keys, results, without_wall_time};

const SCENARIOS: [&str; 2] = ["f1-pause-longer-than-ttl", "f6-late-release"];

fn campaign(root: &Path, out: &str, shard: Option<&str>) -> Output {
    let mut args = campaign_args("0..3", "1", out, &[]);
    if let Some(shard) = shard {
        args.extend(["--shard", shard]);
    }
    leasesim!().run_in(root, &args)
}

#[test]
fn two_shards_merged_are_exactly_the_unsharded_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    for (out, shard) in [("a", "1/2"), ("b", "2/2")] {
        let output = campaign(tmp.path(), out, Some(shard));
        assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    }
    let (a, b) = (
        results(&tmp.path().join("a")),
        results(&tmp.path().join("b")),
    );
    // Six runs split 3 + 3, with nothing in both.
    assert_eq!((a.len(), b.len()), (3, 3));
    let (a_keys, b_keys) = (keys(&a), keys(&b));
    assert!(
        a_keys.iter().all(|k| !b_keys.contains(k)),
        "{a_keys:?} {b_keys:?}"
    );

    let merged = leasesim!().run_in(tmp.path(), ["report", "merge", "a", "b", "--out", "c"]);
    assert_eq!(merged.status.code(), Some(0), "{}", both(&merged));
    let c = results(&tmp.path().join("c"));
    assert_eq!(keys(&c), every(&SCENARIOS, 0..3));

    let whole = campaign(tmp.path(), "whole", None);
    assert_eq!(whole.status.code(), Some(0), "{}", both(&whole));
    let whole_results = results(&tmp.path().join("whole"));
    assert_eq!(keys(&c), keys(&whole_results));
    // The same runs, not merely the same keys.
    assert_eq!(without_wall_time(&c), without_wall_time(&whole_results));

    // The merged report says where it came from, and judges like the whole campaign.
    let report = std::fs::read_to_string(tmp.path().join("c/report.md")).unwrap();
    assert!(report.contains("| shard | 1/2+2/2 |"), "{report}");
    let whole_report = std::fs::read_to_string(tmp.path().join("whole/report.md")).unwrap();
    // Everything after the header table (whose shard row differs): verdict, matrix, checks.
    let body = |text: &str| text.split("\n**Verdict: ").nth(1).unwrap().to_owned();
    assert_eq!(body(&report), body(&whole_report));
}

/// Bad-input probe D7: 2 of 3 shards merged were "clean (exit 0)".
#[test]
fn a_merge_missing_a_shard_is_incomplete_exit_6_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    for (out, shard) in [("a", "1/3"), ("b", "2/3")] {
        let output = campaign(tmp.path(), out, Some(shard));
        assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    }
    let merged = leasesim!().run_in(tmp.path(), ["report", "merge", "a", "b", "--out", "c"]);
    assert_eq!(merged.status.code(), Some(6), "{}", both(&merged));
    let report = std::fs::read_to_string(tmp.path().join("c/report.md")).unwrap();
    assert!(report.contains("(exit 6)**"), "{report}");
    assert!(
        report.contains("2 of 6 planned runs have no record:"),
        "{report}"
    );
    assert!(report.contains("- shard 3/3 (not merged)"), "{report}");
    // Rendered again, the merged folder still knows it is incomplete.
    let render = leasesim!().run_in(tmp.path(), ["report", "render", "c"]);
    assert_eq!(render.status.code(), Some(6), "{}", both(&render));
    // Both print the verdict line last, as a campaign does.
    for output in [&merged, &render] {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let last = stdout.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("incomplete: 2 of 6 planned runs missing (see Missing runs)")
                && last.ends_with(" — exit 6 — report: c/report.md"),
            "{}",
            both(output)
        );
    }

    // A tampered shard in a campaign.json is refused.
    let path = tmp.path().join("b/campaign.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"2/3\"", "\"7/3\"")).unwrap();
    let tampered = leasesim!().run_in(tmp.path(), ["report", "merge", "a", "b", "--out", "d"]);
    assert_exit(&tampered, 2, &["`7/3` is not a shard"]);
}

/// Bad-input probe D7: `--shard 30/30` of 20 runs exited 0 "clean" with no run.
#[test]
fn a_shard_that_owns_no_run_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let output = campaign(tmp.path(), "a", Some("7/7"));
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    let err = stderr(&output);
    assert!(
        err.contains(
            "--shard 7/7: this shard owns no run: the campaign has 6 runs (3 seeds × 2 scenarios)"
        ),
        "{err}"
    );
}

/// Bad-input probe D7: records outside the campaign were counted, an empty results file
/// was "clean".
#[test]
fn render_refuses_stray_records_and_calls_empty_results_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sims(tmp.path(), "sims", &SCENARIOS);
    let output = campaign(tmp.path(), "a", None);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let path = tmp.path().join("a/results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    let stray = first.replacen("\"seed\":0", "\"seed\":9", 1);
    assert_ne!(stray, first);
    std::fs::write(&path, format!("{text}{stray}\n")).unwrap();
    let render = leasesim!().run_in(tmp.path(), ["report", "render", "a"]);
    assert_eq!(render.status.code(), Some(2), "{}", both(&render));
    let err = stderr(&render);
    assert!(
        err.contains("1 records are not runs of this campaign (seeds 0..3"),
        "{err}"
    );
    assert!(err.contains("seed 9"), "{err}");

    std::fs::write(&path, "").unwrap();
    let empty = leasesim!().run_in(tmp.path(), ["report", "render", "a"]);
    assert_eq!(empty.status.code(), Some(6), "{}", both(&empty));
    let report = std::fs::read_to_string(tmp.path().join("a/report.md")).unwrap();
    assert!(
        report.contains("6 of 6 planned runs have no record:"),
        "{report}"
    );
}

/// What may differ between a whole campaign's outputs and those of its four shards merged:
/// (file, field, why). A field is a JSON pointer into the file (into every line of a
/// `.jsonl`), `line order`, or for `report.md` a row (`| shard |`) or a column (`wall time`)
/// of a table. Everything else must be byte for byte the same. (A shrunk run's replay
/// command names the report folder it is in, `whole/` or `merged/`; these campaigns' runs
/// are clean, so none is shrunk, and their mutants' minimal runs are named by relative
/// paths.)
const MAY_DIFFER: [(&str, &str, &str); 13] = [
    (
        "campaign.json",
        "/meta/shard",
        "the merge lists the shards it holds (1/4+2/4+3/4+4/4); the whole campaign none (null)",
    ),
    (
        "campaign.json",
        "/meta/merged",
        "true in a merge (absent otherwise): the folder stands for the whole campaign",
    ),
    (
        "campaign.json",
        "/wall_ms",
        "wall-clock time of the campaign; a merge keeps the longest shard's",
    ),
    ("summary.json", "/meta/shard", "as in campaign.json"),
    ("summary.json", "/meta/merged", "as in campaign.json"),
    ("summary.json", "/wall_ms", "as in campaign.json"),
    (
        "summary.json",
        "/runs_wall_ms_sum",
        "the sum of the runs' wall-clock times",
    ),
    ("results.jsonl", "/wall_ms", "one run's wall-clock time"),
    (
        "results.jsonl",
        "line order",
        "completion order in a campaign, sorted by (scenario, seed) in a merge",
    ),
    ("shrunk.jsonl", "line order", "as in results.jsonl"),
    (
        "mutants.jsonl",
        "/wall_ms_to_detection",
        "wall-clock time until a mutant's first kill",
    ),
    ("report.md", "| shard |", "the shard row shows /meta/shard"),
    (
        "report.md",
        "wall time",
        "the mutant table's column of /wall_ms_to_detection",
    ),
];

/// The outputs compared, with `report.md`, `summary.json` and `junit.xml` rendered from the
/// data files; the minimal run files under `shrunk/` are compared too.
const COMPARED: [&str; 7] = [
    "campaign.json",
    "results.jsonl",
    "shrunk.jsonl",
    "mutants.jsonl",
    "report.md",
    "summary.json",
    "junit.xml",
];

/// Two scenarios × three seeds: six runs, dealt 2, 2, 1, 1 to four shards.
const SEEDS: &str = "0..3";

/// Five mutants given out of catalogue order: in catalogue order they are
/// token-not-advanced-on-expiry (0), acquire-check-then-act (1), release-by-session-only
/// (3), clock-read-before-lock (4) and expiry-off-by-one (17), so shard 1/4 detects the
/// first and the fifth, and shards 2, 3 and 4 one each: conformance and loom kills, and a
/// scenario kill with a shrunk counterexample whose run file the merge must copy (one, to
/// keep the test quick: each shrink is tens of runs).
const MUTANTS: &str = "expiry-off-by-one,release-by-session-only,acquire-check-then-act,\
                       token-not-advanced-on-expiry,clock-read-before-lock";

/// `leasesim campaign` over `sims` into `out`, with `extra` arguments; not waited for.
fn start_campaign(root: &Path, out: &str, extra: &[&str]) -> std::process::Child {
    leasesim!()
        .command()
        .current_dir(root)
        .args([
            "campaign", "--sims", "sims", "--seeds", SEEDS, "--jobs", "1",
        ])
        .args(["--no-progress", "--out", out])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs the campaign whole (`whole/`) and as four shards (`s1/`…`s4/`, all at once), each
/// asserted to exit 0, then merges the shards into `merged/`.
fn whole_and_shards(root: &Path, extra: &[&str]) -> Output {
    copy_sims(root, "sims", &SCENARIOS);
    let mut children = vec![start_campaign(root, "whole", extra)];
    for k in 1..=4 {
        let shard = format!("{k}/4");
        let mut args = extra.to_vec();
        args.extend(["--shard", &shard]);
        children.push(start_campaign(root, &format!("s{k}"), &args));
    }
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    }
    merge_shards(root, "merged", &[])
}

/// `leasesim report merge s1 s2 s3 s4 --out OUT` with `extra` arguments.
fn merge_shards(root: &Path, out: &str, extra: &[&str]) -> Output {
    let mut args = vec!["report", "merge", "s1", "s2", "s3", "s4", "--out", out];
    args.extend(extra);
    leasesim!().run_in(root, &args)
}

/// `text` of `file` without the JSON fields [`MAY_DIFFER`] lists for it (lines sorted for
/// `line order`), and the fields it found.
fn normalised(file: &str, text: &str) -> (String, Vec<&'static str>) {
    let fields: Vec<&'static str> = MAY_DIFFER
        .iter()
        .filter(|(f, _, _)| *f == file)
        .map(|(_, field, _)| *field)
        .collect();
    if file == "report.md" {
        return markdown_normalised(text, &fields);
    }
    let mut found: Vec<&'static str> = Vec::new();
    let mut json = |line: &str| {
        let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
        for field in fields.iter().filter(|f| f.starts_with('/')) {
            // Removed rather than replaced: a field may be absent on one side (`merged`).
            let (parent, key) = field.rsplit_once('/').unwrap();
            let removed = value
                .pointer_mut(parent)
                .and_then(|object| object.as_object_mut()?.remove(key));
            if removed.is_some() {
                found.push(field);
            }
        }
        serde_json::to_string_pretty(&value).unwrap()
    };
    let text = if file.ends_with(".jsonl") {
        let mut lines: Vec<String> = text.lines().map(&mut json).collect();
        if fields.contains(&"line order") {
            lines.sort();
            found.push("line order");
        }
        lines.join("\n")
    } else if file.ends_with(".json") {
        json(text)
    } else {
        text.to_owned()
    };
    (text, found)
}

/// `report.md` with the rows (`| key |`) and the cells of the columns (by header) that
/// `fields` names replaced by `~`, and the fields it found.
fn markdown_normalised(text: &str, fields: &[&'static str]) -> (String, Vec<&'static str>) {
    let mut found: Vec<&'static str> = Vec::new();
    let mut column: Option<(usize, &'static str)> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut cells: Vec<&str> = line.split(" | ").collect();
        if !line.starts_with('|') {
            column = None;
        } else if let Some(&row) = fields.iter().find(|f| line.starts_with(**f)) {
            lines.push(format!("{row} ~ |"));
            found.push(row);
            continue;
        } else if let Some(&header) = fields.iter().find(|f| cells.contains(*f)) {
            column = cells
                .iter()
                .position(|c| *c == header)
                .map(|at| (at, header));
        } else if let Some((at, header)) = column.filter(|_| !line.starts_with("|---"))
            && at < cells.len()
        {
            cells[at] = "~";
            found.push(header);
        }
        lines.push(cells.join(" | "));
    }
    (lines.join("\n"), found)
}

/// The whole campaign's outputs equal the merged shards' but for [`MAY_DIFFER`], and so do
/// their minimal run files; returns the (file, field) entries of [`MAY_DIFFER`] that were
/// found in either.
fn assert_outputs_equal(root: &Path) -> Vec<(&'static str, &'static str)> {
    let mut found = Vec::new();
    for file in COMPARED {
        let read = |dir: &str| std::fs::read_to_string(root.join(dir).join(file)).ok();
        let (whole, merged) = (read("whole"), read("merged"));
        assert_eq!(
            whole.is_some(),
            merged.is_some(),
            "{file}: in one folder only"
        );
        let (Some(whole), Some(merged)) = (whole, merged) else {
            continue;
        };
        let (whole, in_whole) = normalised(file, &whole);
        let (merged, in_merged) = normalised(file, &merged);
        assert_eq!(whole, merged, "{file} differs beyond MAY_DIFFER");
        found.extend(
            in_whole
                .into_iter()
                .chain(in_merged)
                .map(|field| (file, field)),
        );
    }
    assert_eq!(
        run_files(&root.join("whole")),
        run_files(&root.join("merged"))
    );
    found.sort();
    found.dedup();
    found
}

/// The files under `<dir>/shrunk/` (name → bytes).
fn run_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir.join("shrunk")) else {
        return Vec::new();
    };
    let mut files: Vec<(String, Vec<u8>)> = entries
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The mutants of `<dir>/mutants.jsonl`, in file order.
fn detected(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("mutants.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            row["mutant"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn four_shards_merged_render_as_the_whole_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let merged = whole_and_shards(tmp.path(), &[]);
    assert_eq!(merged.status.code(), Some(0), "{}", both(&merged));
    assert!(!tmp.path().join("merged/mutants.jsonl").exists());
    let report = std::fs::read_to_string(tmp.path().join("merged/report.md")).unwrap();
    assert!(report.contains("| shard | 1/4+2/4+3/4+4/4 |"), "{report}");
    let found = assert_outputs_equal(tmp.path());
    let expected: Vec<(&str, &str)> = MAY_DIFFER
        .iter()
        .filter(|(file, field, _)| *file != "mutants.jsonl" && *field != "wall time")
        .map(|(file, field, _)| (*file, *field))
        .collect();
    assert_eq!(
        found,
        sorted(expected),
        "every field MAY_DIFFER lists is one the outputs have"
    );
}

#[test]
#[ignore = "slow: four shards of a --mutants campaign and their merge (about 15 s); runs in .ci/run's slow step: cargo test --release -- --ignored"]
fn four_shards_merged_hold_the_whole_detection_table() {
    let tmp = tempfile::tempdir().unwrap();
    let merged = whole_and_shards(tmp.path(), &["--mutants", MUTANTS, "--mutant-seeds", "2"]);
    assert_eq!(merged.status.code(), Some(0), "{}", both(&merged));
    let whole = each_shard_detects_its_share_and_the_merge_the_whole(tmp.path());
    the_scenario_kills_run_files_are_copied(&tmp.path().join("merged"));
    let report = std::fs::read_to_string(tmp.path().join("merged/report.md")).unwrap();
    assert!(report.contains("Mutation score: **5/5**"), "{report}");
    the_counterexamples_replay_command_reproduces_the_kill(tmp.path(), &report);
    let found = assert_outputs_equal(tmp.path());
    let every: Vec<(&str, &str)> = MAY_DIFFER
        .iter()
        .map(|(f, field, _)| (*f, *field))
        .collect();
    assert_eq!(
        found,
        sorted(every),
        "every field MAY_DIFFER lists is one the outputs have"
    );
    one_mutant_in_two_shards_is_refused_unless_forced(tmp.path(), &whole);
}

/// Shard K/4 under `dir` detects the selected mutants at positions i % 4 == K-1, in
/// catalogue order; the merge detects what the whole campaign does. Returns the whole's.
fn each_shard_detects_its_share_and_the_merge_the_whole(dir: &Path) -> Vec<String> {
    let shard = |k: u32| detected(&dir.join(format!("s{k}")));
    assert_eq!(
        shard(1),
        ["token-not-advanced-on-expiry", "expiry-off-by-one"]
    );
    assert_eq!(shard(2), ["acquire-check-then-act"]);
    assert_eq!(shard(3), ["release-by-session-only"]);
    assert_eq!(shard(4), ["clock-read-before-lock"]);
    let whole = detected(&dir.join("whole"));
    assert_eq!(
        whole,
        [
            "token-not-advanced-on-expiry",
            "acquire-check-then-act",
            "release-by-session-only",
            "clock-read-before-lock",
            "expiry-off-by-one"
        ]
    );
    assert_eq!(detected(&dir.join("merged")), whole);
    whole
}

/// The scenario kill's minimal run file was copied from its shard into `merged`, with its
/// history and timeline and its clean twin's (a mutant's counterexample).
fn the_scenario_kills_run_files_are_copied(merged: &Path) {
    let merged: Vec<String> = run_files(merged)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        merged.iter().filter(|n| n.ends_with(".run.json")).count(),
        1
    );
    for kept in [
        ".history.jsonl",
        ".timeline.svg",
        ".clean.history.jsonl",
        ".clean.timeline.svg",
    ] {
        assert!(
            merged.iter().any(|n| n.ends_with(kept)),
            "{kept} not in {merged:?}"
        );
    }
}

/// The scenario kill's counterexample in `report` says which check failed and how to rerun
/// it with the mutant planted; that command, run in `dir`, reproduces the kill.
fn the_counterexamples_replay_command_reproduces_the_kill(dir: &Path, report: &str) {
    let counterexample = report
        .split("#### `release-by-session-only`: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no counterexample of release-by-session-only:\n{report}"));
    let check = counterexample.split(' ').next().unwrap();
    assert!(
        counterexample.contains(&format!("Check failed: **{check}** (")),
        "{counterexample}"
    );
    let replay = counterexample
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("leasesim run "))
        .unwrap_or_else(|| panic!("no replay command:\n{counterexample}"));
    assert!(
        replay.ends_with(" --mutant release-by-session-only"),
        "{replay}"
    );
    let mut args: Vec<&str> = replay.split_whitespace().skip(1).collect();
    args.extend(["--out", "replayed"]);
    let replayed = leasesim!().run_in(dir, &args);
    let stdout = String::from_utf8_lossy(&replayed.stdout);
    let verdict = stdout.lines().last().unwrap_or_default();
    assert!(
        verdict.starts_with("verdict: FAIL: ") && verdict.contains(check),
        "{}",
        both(&replayed)
    );
}

/// Shards made before detection was sharded each hold the whole table: with shard 2 under
/// `dir` given the `whole` campaign's, the same mutant in two shards is refused, naming both,
/// unless --force (the first folder's row wins).
fn one_mutant_in_two_shards_is_refused_unless_forced(dir: &Path, whole: &[String]) {
    std::fs::copy(
        dir.join("whole/mutants.jsonl"),
        dir.join("s2/mutants.jsonl"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("s2/shrunk")).unwrap();
    for (name, bytes) in run_files(&dir.join("whole")) {
        std::fs::write(dir.join("s2/shrunk").join(name), bytes).unwrap();
    }
    let twice = merge_shards(dir, "twice", &[]);
    assert_eq!(twice.status.code(), Some(2), "{}", both(&twice));
    assert!(
        stderr(&twice).contains(
            "cannot merge s2: mutant `token-not-advanced-on-expiry` is in its detection table and in s1's"
        ),
        "{}",
        stderr(&twice)
    );
    let forced = merge_shards(dir, "forced", &["--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", both(&forced));
    assert_eq!(detected(&dir.join("forced")), whole);
}

fn sorted(mut items: Vec<(&'static str, &'static str)>) -> Vec<(&'static str, &'static str)> {
    items.sort();
    items
}

//! Preparing scenario folders and reading what a campaign wrote (running the binary: `leasesim_testkit`).

use std::path::{Path, PathBuf};

/// The repository's `sims/`.
pub fn repo_sims() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sims")
}

/// `campaign --sims sims --seeds SEEDS --jobs JOBS --no-progress --out OUT EXTRA…`: the
/// arguments of a campaign over the `sims/` folder beside it, for [`leasesim_testkit::Binary`].
pub fn campaign_args<'a>(
    seeds: &'a str,
    jobs: &'a str,
    out: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "campaign",
        "--sims",
        "sims",
        "--seeds",
        seeds,
        "--jobs",
        jobs,
        "--no-progress",
        "--out",
        out,
    ];
    args.extend(extra);
    args
}

/// Copies `sims/<name>.toml` for each name into `<root>/<folder>/`, with `field-cases/`
/// beside them (the scripts and schedules the field cases name); returns the folder.
pub fn copy_sims(root: &Path, folder: &str, names: &[&str]) -> PathBuf {
    let sims = root.join(folder);
    let cases = sims.join("field-cases");
    std::fs::create_dir_all(&cases).unwrap();
    for entry in std::fs::read_dir(repo_sims().join("field-cases")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, cases.join(path.file_name().unwrap())).unwrap();
    }
    for name in names {
        let file = format!("{name}.toml");
        std::fs::copy(repo_sims().join(&file), sims.join(&file)).unwrap();
    }
    sims
}

/// Edits `<sims>/<name>.toml` with `edit`, asserting that it changed the text.
pub fn edit_scenario(sims: &Path, name: &str, edit: impl FnOnce(&str) -> String) {
    let path = sims.join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit of {name} changed nothing");
    std::fs::write(&path, edited).unwrap();
}

/// The lines of `<out>/results.jsonl` as JSON values.
pub fn results(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The (scenario, seed) of every record, sorted.
pub fn keys(records: &[serde_json::Value]) -> Vec<(String, u64)> {
    let mut keys: Vec<(String, u64)> = records
        .iter()
        .map(|r| {
            (
                r["scenario"].as_str().unwrap().to_owned(),
                r["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    keys
}

/// `(scenario, seed)` for every scenario and seed.
pub fn every(scenarios: &[&str], seeds: std::ops::Range<u64>) -> Vec<(String, u64)> {
    let mut keys: Vec<(String, u64)> = scenarios
        .iter()
        .flat_map(|s| seeds.clone().map(move |seed| ((*s).to_owned(), seed)))
        .collect();
    keys.sort();
    keys
}

/// The records with their wall-clock time (the only field that may differ between two runs
/// of the same seed) removed, sorted by (scenario, seed).
pub fn without_wall_time(records: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let mut records: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.as_object_mut().unwrap().remove("wall_ms");
            r
        })
        .collect();
    records.sort_by_key(|r| (r["scenario"].to_string(), r["seed"].as_u64()));
    records
}

/// The scenario planted with a bug the invariants catch, and the bug: the F4 field case
/// with `mutant = "fence-written-blind"` (a journal's fence is appended without comparing the
/// tip) and no `violate` expectation, so the scenario's expectation is wrong. A scripted
/// field case: its shrinks take a few seconds (a swarm run's take minutes), and it breaks two
/// checks, so "one counterexample per violated check" is still asserted.
pub const MUTANT_SCENARIO: &str = "f4-fence-compares-the-tip";

/// The planted bug of [`MUTANT_SCENARIO`].
pub const MUTANT: &str = "fence-written-blind";

/// Seeds of [`MUTANT_SCENARIO`] with [`MUTANT`]: seed 1 (pinned; it violates LEDGER and
/// LIN-LEDGER, as every seed of the scripted case does).
pub const MUTANT_SEEDS: &str = "1..2";

/// The checks [`MUTANT`] breaks on [`MUTANT_SEEDS`], in report order.
pub const MUTANT_VIOLATES: [&str; 2] = ["LEDGER", "LIN-LEDGER"];

/// A copy of [`MUTANT_SCENARIO`] carrying [`MUTANT`], in `<root>/sims/`.
pub fn mutant_sims(root: &Path) -> PathBuf {
    let sims = copy_sims(root, "sims", &[MUTANT_SCENARIO]);
    edit_scenario(&sims, MUTANT_SCENARIO, |text| {
        text.replacen(
            "\n[world]",
            &format!("\nmutant = \"{MUTANT}\"\n\n[world]"),
            1,
        )
    });
    sims
}

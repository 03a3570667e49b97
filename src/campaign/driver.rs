//! `leasesim campaign`: seeds × scenarios in parallel, with progress, resumable results,
//! shrinking of failures and the report (docs/campaigns.md).
//!
//! Each run is independent and deterministic, so jobs only decide *when* a run happens,
//! never *what* it does: `results.jsonl` lines arrive in completion order, and the report
//! sorts them.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sha2::{Digest, Sha256};

use super::execute::{Executed, execute};
use super::request::scenario_command;
use super::scenario::Scenario;
use super::shrink;
use super::stopwatch::Stopwatch;
use crate::check::Check;
use crate::exit::Exit;
use crate::mutant::Mutant;
use crate::report::Summary;
use crate::results::plan::CampaignPlan;
use crate::results::plan::{RunKey, SeedPlan, Shard, runs};
use crate::results::record::{CampaignMeta, RECORD_VERSION, RunRecord, RunStatus, ShrunkRun};
use crate::sim::config::WorldEngine;
use crate::sim::runfile::{BackendSpec, RunFile};

/// Everything `leasesim campaign` is told.
#[derive(Clone, Debug)]
pub struct CampaignOptions {
    /// The folder of scenario files (`*.toml`, not recursive).
    pub sims: PathBuf,
    /// The seeds.
    pub seeds: SeedPlan,
    /// Runs at once (each on a thread of its own).
    pub jobs: usize,
    /// This machine's shard, if the campaign is split.
    pub shard: Option<Shard>,
    /// The report folder.
    pub out: PathBuf,
    /// Wall-clock limit of one run; past it the run is a hang (a harness error naming its
    /// seed). `None`: derived from each run's simulated length ([`RunFile::wall_timeout`]);
    /// a limit given is refused when some scenario's longest run may need more
    /// ([`crate::sim::wall::timeout`]).
    pub run_timeout: Option<Duration>,
    /// Keep the results already in `out/results.jsonl` and run only the missing runs.
    pub resume: bool,
    /// Shrink failing runs (one per scenario and violated check).
    pub shrink: bool,
    /// Copy each minimal failing run into `sims/regressions/`.
    pub save_regressions: bool,
    /// Show a progress bar (else a line every 10 s) on stderr.
    pub progress: bool,
    /// A planted bug for every run, by name (replacing the scenarios' own).
    pub mutant: Option<String>,
    /// After the campaign, detect these mutants (`--mutants`): the detection table and the
    /// mutation score go into the report. Detected in catalogue order, once each; a shard
    /// detects only its share ([`super::mutants::owned_mutants`]).
    pub detect: Vec<Mutant>,
    /// Seeds tried per mutant before it counts as survived.
    pub mutant_seeds: u64,
    /// The backend every scenario runs on (`--backend`), in place of its own `[world]
    /// backend`; every scenario is checked on it when loaded ([`Scenario::load_on`]).
    pub backend: Option<BackendSpec>,
    /// What runs every scenario's world (`--engine`; none: turmoil)
    /// (docs/world.md#the-world-on-the-engine); recorded in each run file.
    pub engine: Option<WorldEngine>,
    /// The binary running the campaign (`leasesim`, `leasesim-targets`), recorded in
    /// `campaign.json` for the report's reproduction key.
    pub binary: &'static str,
}

/// Why a campaign could not run (its runs' own failures are results, not errors).
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// A scenario file, option or resume file is wrong: exit 2.
    #[error("{0}")]
    BadInput(String),
    /// Writing the results or report failed: exit 3.
    #[error("{0}")]
    Harness(String),
}

impl CampaignError {
    /// The exit code of docs/exit-codes.md.
    pub fn exit_code(&self) -> Exit {
        match self {
            CampaignError::BadInput(_) => Exit::BadInput,
            CampaignError::Harness(_) => Exit::HarnessError,
        }
    }
}

/// A scenario as the campaign runs it.
struct Loaded {
    path: PathBuf,
    scenario: Scenario,
}

/// The seeds as the start banner says them: `seeds 0..10`, or for a budget `seeds 0, 1, 2…
/// for a budget of 50s` ([`SeedPlan`]'s own text, `budget 50s`, is what `campaign.json`
/// keeps).
fn seeds_phrase(seeds: SeedPlan) -> String {
    match seeds {
        SeedPlan::Range { .. } => format!("seeds {seeds}"),
        SeedPlan::Budget(budget) => format!(
            "seeds 0, 1, 2… for a budget of {}",
            humantime::format_duration(budget)
        ),
    }
}

/// What the start banner says of `--engine`: nothing for turmoil (the default), else `, on
/// the engine` (docs/world.md#the-world-on-the-engine).
fn engine_phrase(engine: Option<WorldEngine>) -> &'static str {
    match engine {
        Some(WorldEngine::Engine) => ", on the engine",
        Some(WorldEngine::Turmoil) | None => "",
    }
}

/// Runs the campaign and writes its report into `options.out`; returns the report's
/// [`Summary`]: its exit code (0 clean, 1 unexpected safety violation or an expected
/// violation never seen, 3 a harness error, 4 inconclusive, 5 liveness, 6 incomplete) and
/// its verdict line.
///
/// # Errors
/// [`CampaignError::BadInput`] for a bad scenario file or option, and
/// [`CampaignError::Harness`] when the report folder cannot be written.
pub fn campaign(options: &CampaignOptions) -> Result<Summary, CampaignError> {
    validate(options)?;
    let scenarios = load_scenarios(&options.sims, options.backend.as_ref(), options.engine)?;
    owns_some_run(options, scenarios.len())?;
    mutant_planted_somewhere(options, &scenarios)?;
    run_timeout_fits(options, &scenarios)?;
    let meta = meta(options, &scenarios)?;
    // Held until the campaign returns: a second campaign, run or live on this --out is
    // refused while this one writes it.
    let _lock = crate::input::OutputLock::take(&options.out).map_err(|e| match e {
        crate::input::InputError::Write { source, .. } => CampaignError::BadInput(format!(
            "--out {}: cannot create that folder: {source}",
            options.out.display()
        )),
        other => CampaignError::BadInput(format!("--out: {other}")),
    })?;
    let results_path = options.out.join("results.jsonl");
    let done = if options.resume {
        let done = finished_runs(&options.out, &meta, &scenarios)?;
        // Rendered again at the end: until then no verdict stands beside records it was
        // not rendered from.
        crate::input::remove_stale(&options.out, &crate::report::RENDERED_FILES)
            .map_err(|e| CampaignError::Harness(e.to_string()))?;
        done
    } else {
        clear_results(&options.out)?;
        BTreeSet::new()
    };
    let clock = Stopwatch::start();
    write_campaign_file(&options.out, &meta, &scenarios, None)?;
    eprintln!(
        "campaign: {} scenarios from {}, {}, {} jobs{}{}{} -> {}",
        scenarios.len(),
        options.sims.display(),
        seeds_phrase(options.seeds),
        options.jobs,
        engine_phrase(options.engine),
        options
            .shard
            .map_or(String::new(), |s| format!(", shard {s}")),
        if done.is_empty() {
            String::new()
        } else {
            format!(", resuming after {} finished runs", done.len())
        },
        options.out.display()
    );
    print_left_out_kinds(&scenarios);
    run_all(options, &scenarios, done, &results_path)?;
    if options.shrink {
        let failures = unshrunk_failures(&options.out, &scenarios)?;
        shrink_failures(options, &scenarios, &failures)?;
    }
    if !options.detect.is_empty() {
        detect_mutants(options, &scenarios)?;
    }
    write_campaign_file(&options.out, &meta, &scenarios, Some(clock.elapsed_ms()))?;
    crate::report::render_summary(&options.out).map_err(|e| {
        if e.is_io() {
            CampaignError::Harness(e.to_string())
        } else {
            CampaignError::BadInput(e.to_string())
        }
    })
}

/// The shortest `--run-timeout`: below it no world can even start, and every run would be
/// reported as a hang.
pub const MIN_RUN_TIMEOUT: Duration = Duration::from_millis(100);

/// The most `--mutant-seeds`: each seed is a run of every scenario per mutant, and the
/// mutant phase has no budget of its own.
pub const MAX_MUTANT_SEEDS: u64 = 1000;

/// Refuses options that cannot make a meaningful campaign (usage errors, exit 2).
fn validate(options: &CampaignOptions) -> Result<(), CampaignError> {
    let bad = |message: String| Err(CampaignError::BadInput(message));
    if let Some(given) = options.run_timeout
        && given < MIN_RUN_TIMEOUT
    {
        return bad(format!(
            "--run-timeout {}: every run would be a hang; give at least {} (by default each \
             run gets a minute plus 4 × what its simulated time takes)",
            humantime::format_duration(given),
            humantime::format_duration(MIN_RUN_TIMEOUT)
        ));
    }
    if options.seeds.budget().is_some_and(|b| b.is_zero()) {
        return bad(
            "--budget 0s: no run could start, and a campaign of no runs proves nothing; give a budget such as 50s"
                .into(),
        );
    }
    if !options.detect.is_empty() && !(1..=MAX_MUTANT_SEEDS).contains(&options.mutant_seeds) {
        return bad(format!(
            "--mutant-seeds {}: give 1 to {MAX_MUTANT_SEEDS} seeds per mutant (0 would try nothing and call every mutant survived)",
            options.mutant_seeds
        ));
    }
    Ok(())
}

/// Refuses a shard that owns no run of a seed range (`--shard 30/30` of 20 runs): it would
/// report a campaign of no runs.
fn owns_some_run(options: &CampaignOptions, scenarios: usize) -> Result<(), CampaignError> {
    let (Some(shard), Some(seeds)) = (options.shard, options.seeds.len()) else {
        return Ok(());
    };
    let total = u128::from(seeds) * scenarios as u128;
    if crate::results::plan::owned_by(total, shard) == 0 {
        return Err(CampaignError::BadInput(format!(
            "--shard {shard}: this shard owns no run: the campaign has {total} runs ({seeds} seeds × {scenarios} scenarios), so use at most {total} shards"
        )));
    }
    Ok(())
}

/// Every `*.toml` directly in `sims`, by file name.
fn load_scenarios(
    sims: &Path,
    backend: Option<&BackendSpec>,
    engine: Option<WorldEngine>,
) -> Result<Vec<Loaded>, CampaignError> {
    let entries = std::fs::read_dir(sims).map_err(|e| {
        CampaignError::BadInput(format!(
            "--sims {}: cannot read that folder: {e}; pass the folder of scenario files (sims/ in the repository)",
            sims.display()
        ))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(CampaignError::BadInput(format!(
            "--sims {}: no scenario files (*.toml) there",
            sims.display()
        )));
    }
    paths
        .into_iter()
        .map(|path| {
            let mut scenario = Scenario::load_on(&path, backend)
                .map_err(|e| CampaignError::BadInput(e.to_string()))?;
            if let Some(engine) = engine {
                scenario.world.engine = engine;
            }
            Ok(Loaded { path, scenario })
        })
        .collect()
}

/// The campaign's identity: seeds, scenarios, shard, git commit, and the hashes of the
/// scenario files and of the Cargo.lock the binary was built with.
fn meta(options: &CampaignOptions, scenarios: &[Loaded]) -> Result<CampaignMeta, CampaignError> {
    let mut config = Sha256::new();
    for loaded in scenarios {
        let bytes = crate::input::read_bytes(&loaded.path, crate::input::DOCUMENT_LIMIT)
            .map_err(|e| CampaignError::BadInput(e.to_string()))?;
        config.update(loaded.scenario.name().as_bytes());
        config.update((bytes.len() as u64).to_le_bytes());
        config.update(&bytes);
    }
    config.update(options.seeds.to_string().as_bytes());
    config.update(options.mutant.as_deref().unwrap_or("").as_bytes());
    // Past the mutant's bytes, so a campaign without --backend keeps its hash.
    if let Some(backend) = &options.backend {
        config.update(b"\0backend ");
        config.update(backend.name().as_bytes());
    }
    // Likewise past the backend's: a campaign on turmoil keeps its hash.
    if let Some(WorldEngine::Engine) = options.engine {
        config.update(b"\0engine engine");
    }
    Ok(CampaignMeta {
        v: RECORD_VERSION,
        seeds: options.seeds.to_string(),
        sims: options.sims.display().to_string(),
        scenarios: scenarios.iter().map(|l| l.scenario.name()).collect(),
        shard: options.shard.map(|s| s.to_string()),
        merged: false,
        mutant: options.mutant.clone(),
        backend: options.backend.as_ref().map(|b| b.name().to_owned()),
        binary: options.binary.to_owned(),
        git_commit: git_commit(&options.sims),
        config_hash: hex(&config.finalize()[..8]),
        cargo_lock_hash: cargo_lock_hash(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The Cargo.lock this binary was built with, hashed: turmoil's RNG is only portable within
/// one lock (docs/determinism.md#rules).
pub fn cargo_lock_hash() -> String {
    let lock = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"));
    hex(&Sha256::digest(lock)[..8])
}

/// `git rev-parse HEAD` of the checkout holding `dir` (the scenarios' folder), with `-dirty`
/// for uncommitted changes, or `unknown` outside a git checkout.
pub fn git_commit(dir: &Path) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(commit) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(changes) if !changes.is_empty() => format!("{commit}-dirty"),
            _ => commit,
        },
        None => "unknown".to_owned(),
    }
}

/// The runs a previous, interrupted campaign with the same identity already finished.
/// `campaign.json` must be there and match; a torn last line of `results.jsonl` or
/// `shrunk.jsonl` (a write cut off by a kill) is dropped, so its run is made again.
fn finished_runs(
    out: &Path,
    meta: &CampaignMeta,
    scenarios: &[Loaded],
) -> Result<BTreeSet<(usize, u64)>, CampaignError> {
    same_campaign_file(out, meta)?;
    let path = out.join(crate::report::RESULTS_FILE);
    let records: Vec<RunRecord> = read_repairing(&path)?;
    crate::report::refuse_conflicts(&path, &records)
        .map_err(|e| CampaignError::BadInput(format!("--resume: {e}")))?;
    read_repairing::<ShrunkRun>(&out.join(crate::report::SHRUNK_FILE))?;
    let plan = CampaignPlan::of(meta).map_err(CampaignError::BadInput)?;
    let mut done = BTreeSet::new();
    for record in records {
        let position = scenarios
            .iter()
            .position(|l| l.scenario.name() == record.scenario)
            .filter(|_| plan.owns(&record.scenario, record.seed));
        let Some(position) = position else {
            return Err(CampaignError::BadInput(format!(
                "--resume: {} holds a record of {} seed {}, which is not a run of this campaign (seeds {}, shard {}); \
                 the file was edited or comes from another campaign: rerun without --resume",
                path.display(),
                record.scenario,
                record.seed,
                meta.seeds,
                meta.shard.as_deref().unwrap_or("none")
            )));
        };
        done.insert((position, record.seed));
    }
    Ok(done)
}

/// `--resume` needs the `campaign.json` of a campaign with the same identity.
fn same_campaign_file(out: &Path, meta: &CampaignMeta) -> Result<(), CampaignError> {
    let previous = out.join(crate::report::CAMPAIGN_FILE);
    let text = crate::input::read_to_string(&previous, crate::input::RECORDS_LIMIT).map_err(|e| {
        CampaignError::BadInput(format!(
            "--resume: cannot read {} ({e}): without it nothing says whose runs {} holds, so there is \
             no campaign here to resume; rerun without --resume to start afresh",
            previous.display(),
            out.join(crate::report::RESULTS_FILE).display()
        ))
    })?;
    let same = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            let meta_v = v.get("meta")?;
            Some(
                meta_v.get("config_hash")?.as_str()? == meta.config_hash
                    && meta_v.get("cargo_lock_hash")?.as_str()? == meta.cargo_lock_hash
                    && meta_v.get("seeds")?.as_str()? == meta.seeds
                    && meta_v.get("shard")
                        == Some(&serde_json::to_value(&meta.shard).unwrap_or_default()),
            )
        })
        .unwrap_or(false);
    if same {
        return Ok(());
    }
    Err(CampaignError::BadInput(format!(
        "--resume: {} was written by a different campaign (other scenarios, seeds, shard or Cargo.lock); \
         rerun without --resume to start afresh, or pick another --out",
        previous.display()
    )))
}

/// The lines of a JSON-lines file the campaign appends to (absent: none). A torn last line
/// — without its newline, or not parsing — is what a kill during a write leaves: it is cut
/// off the file (said on stderr). Any other line that does not parse is an error.
fn read_repairing<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, CampaignError> {
    let bytes = match crate::input::read_optional(path, crate::input::RECORDS_LIMIT) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => return Err(CampaignError::BadInput(format!("--resume: {e}"))),
    };
    let (items, good_len) = parse_lines(path, &bytes)?;
    if good_len < bytes.len() {
        cut_torn_line(path, &bytes, good_len)?;
    }
    Ok(items)
}

/// Parses `bytes` line by line; returns the items and the length of the good prefix (the
/// whole file, or up to the torn last line).
fn parse_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<(Vec<T>, usize), CampaignError> {
    let mut items = Vec::new();
    let mut at = 0;
    let mut number = 0;
    while at < bytes.len() {
        number += 1;
        let end = bytes[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map(|i| at + i + 1);
        let line = &bytes[at..end.unwrap_or(bytes.len())];
        let is_last = end.is_none_or(|end| bytes[end..].iter().all(u8::is_ascii_whitespace));
        if line.iter().all(u8::is_ascii_whitespace) {
            at = end.unwrap_or(bytes.len());
            continue;
        }
        match (serde_json::from_slice::<T>(line), end) {
            (Ok(item), Some(end)) => {
                items.push(item);
                at = end;
            }
            (_, None) => return Ok((items, at)),
            (Err(_), Some(_)) if is_last => return Ok((items, at)),
            (Err(e), Some(_)) => {
                return Err(CampaignError::BadInput(format!(
                    "--resume: {} line {number}: not a run record ({e}); only a torn last line is \
                     repaired on resume: fix or remove line {number}, or rerun without --resume",
                    path.display()
                )));
            }
        }
    }
    Ok((items, bytes.len()))
}

/// A note per scenario whose swarm profile has kinds its backend cannot take: they are left
/// out of every draw (docs/targets.md#what-a-target-world-refuses).
fn print_left_out_kinds(scenarios: &[Loaded]) {
    for loaded in scenarios {
        let left_out = loaded.scenario.left_out_kinds();
        if !left_out.is_empty() {
            let names: Vec<&str> = left_out.iter().map(|kind| kind.name()).collect();
            eprintln!(
                "note: {} runs on the {} backend, which cannot take {}: its swarm profile draws \
                 none of them (docs/targets.md#what-a-target-world-refuses)",
                loaded.scenario.name(),
                loaded.scenario.world.backend.name(),
                names.join(", ")
            );
        }
    }
}

/// Cuts `path` to its first `good_len` bytes, saying so.
fn cut_torn_line(path: &Path, bytes: &[u8], good_len: usize) -> Result<(), CampaignError> {
    let file = crate::input::open_regular(OpenOptions::new().write(true), path)
        .map_err(|e| cannot_write(e.into_io(), path))?;
    file.set_len(good_len as u64)
        .and_then(|()| file.sync_all())
        .map_err(|e| cannot_write(e, path))?;
    let line = bytes[..good_len].iter().filter(|b| **b == b'\n').count() + 1;
    eprintln!(
        "--resume: {} ended in a torn line (line {line}, {} bytes: a write cut off by an interruption); \
         dropped it, and its run is made again",
        path.display(),
        bytes.len() - good_len
    );
    Ok(())
}

/// The first failure of each (scenario, unexpected check) among every record in
/// `results.jsonl` — this invocation's runs and an interrupted campaign's — that has no
/// shrunk counterexample in `shrunk.jsonl` yet; by scenario, then seed.
fn unshrunk_failures(out: &Path, scenarios: &[Loaded]) -> Result<Vec<Failure>, CampaignError> {
    let mut records: Vec<(RunKey, RunRecord)> =
        read_repairing::<RunRecord>(&out.join(crate::report::RESULTS_FILE))?
            .into_iter()
            .filter_map(|record| {
                let scenario = scenarios
                    .iter()
                    .position(|l| l.scenario.name() == record.scenario)?;
                let key = RunKey {
                    seed: record.seed,
                    scenario,
                };
                Some((key, record))
            })
            .collect();
    records.sort_by_key(|(key, _)| (key.scenario, key.seed));
    let shrunk: Vec<ShrunkRun> = read_repairing(&out.join(crate::report::SHRUNK_FILE))?;
    let mut failures: Vec<Failure> = Vec::new();
    for (key, record) in records {
        let done = |check: &Check| {
            shrunk
                .iter()
                .any(|s| s.scenario == record.scenario && s.check == *check)
        };
        note_failures(&mut failures, key, &record, done);
    }
    Ok(failures)
}

fn clear_results(out: &Path) -> Result<(), CampaignError> {
    crate::input::remove_stale(out, &crate::report::DATA_FILES)
        .and_then(|()| crate::input::remove_stale(out, &crate::report::RENDERED_FILES))
        .map_err(|e| {
            CampaignError::Harness(format!("cannot remove an earlier campaign's file: {e}"))
        })?;
    let shrunk = out.join("shrunk");
    if shrunk.exists() {
        std::fs::remove_dir_all(&shrunk).map_err(|e| {
            CampaignError::Harness(format!("cannot remove {}: {e}", shrunk.display()))
        })?;
    }
    Ok(())
}

fn write_campaign_file(
    out: &Path,
    meta: &CampaignMeta,
    scenarios: &[Loaded],
    wall_ms: Option<u64>,
) -> Result<(), CampaignError> {
    let info: Vec<crate::report::ScenarioInfo> = scenarios
        .iter()
        .map(|l| crate::report::ScenarioInfo {
            name: l.scenario.name(),
            about: l.scenario.about.clone(),
            coverage: l.scenario.expect.coverage.clone(),
            violate: l.scenario.expect.violate.clone(),
            coverage_within_seeds: l.scenario.coverage_within_seeds.clone(),
            left_out: left_out(&l.scenario),
        })
        .collect();
    crate::report::write_campaign_file(out, meta, &info, wall_ms)
        .map_err(|e| CampaignError::Harness(e.to_string()))
}

/// The kinds of `scenario`'s swarm profile its backend cannot take, for the report.
fn left_out(scenario: &Scenario) -> Option<crate::report::LeftOut> {
    let kinds = scenario.left_out_kinds();
    (!kinds.is_empty()).then(|| crate::report::LeftOut {
        backend: scenario.world.backend.name().to_owned(),
        kinds: kinds.iter().map(|kind| kind.name().to_owned()).collect(),
    })
}

/// A failing run worth shrinking.
pub(crate) struct Failure {
    key: RunKey,
    check: Check,
    operations: usize,
}

/// Runs every planned run on `options.jobs` threads, appending each record to
/// `results.jsonl` as it finishes, the record and its newline in one `write`.
fn run_all(
    options: &CampaignOptions,
    scenarios: &[Loaded],
    done: BTreeSet<(usize, u64)>,
    results_path: &Path,
) -> Result<(), CampaignError> {
    let mut results =
        crate::input::open_regular(OpenOptions::new().create(true).append(true), results_path)
            .map_err(|e| CampaignError::Harness(format!("cannot open {e}")))?;
    let queue = Mutex::new(runs(options.seeds, scenarios.len(), options.shard, done));
    let total = options
        .seeds
        .len()
        .map(|seeds| seeds * scenarios.len() as u64 / options.shard.map_or(1, |s| u64::from(s.of)));
    let progress = Progress::new(options.progress, total);
    let clock = Stopwatch::start();
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(RunKey, RunRecord)>();
    let mut write_error = None;
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            let sender = sender.clone();
            let (queue, stop, clock) = (&queue, &stop, &clock);
            // Campaign jobs are harness threads: each run's world still runs on one thread.
            #[allow(clippy::disallowed_methods)]
            scope.spawn(move || job(options, scenarios, queue, stop, clock, sender));
        }
        drop(sender);
        for (_, record) in receiver {
            progress.finished(&record);
            if let Err(e) = results.write_all(&json_line(&record)) {
                write_error = Some(e);
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    progress.done(clock.elapsed());
    if let Some(e) = write_error {
        return Err(CampaignError::Harness(format!(
            "cannot append to {}: {e}",
            results_path.display()
        )));
    }
    Ok(())
}

/// `value` as one JSON line with its newline, to be written in one call: a kill can then
/// leave at most a torn last line, never a record glued to the next.
fn json_line<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut line = serde_json::to_vec(value).expect("our records always serialise");
    line.push(b'\n');
    line
}

/// One campaign job: takes runs from `queue` and sends their records until the queue is
/// empty, the budget is spent, `stop` is set or the receiver is gone.
fn job(
    options: &CampaignOptions,
    scenarios: &[Loaded],
    queue: &Mutex<impl Iterator<Item = RunKey>>,
    stop: &AtomicBool,
    clock: &Stopwatch,
    sender: mpsc::Sender<(RunKey, RunRecord)>,
) {
    loop {
        if stop.load(Ordering::Relaxed)
            || options.seeds.budget().is_some_and(|b| clock.elapsed() >= b)
        {
            return;
        }
        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
        let Some(key) = next else { return };
        let executed = run_one(options, &scenarios[key.scenario], key.seed);
        if sender.send((key, executed.record)).is_err() {
            return;
        }
    }
}

/// Keeps `record` as the failure to shrink for each check it broke unexpectedly that is not
/// `done` and has no failure of its scenario yet: one counterexample per (scenario, check),
/// the first run that broke it (a run that broke EXCL and LIVE gives both).
fn note_failures(
    failures: &mut Vec<Failure>,
    key: RunKey,
    record: &RunRecord,
    done: impl Fn(&Check) -> bool,
) {
    for check in &record.unexpected {
        let noted = failures
            .iter()
            .any(|f| f.key.scenario == key.scenario && f.check == *check);
        if !noted && !done(check) {
            failures.push(Failure {
                key,
                check: *check,
                operations: record.operations,
            });
        }
    }
}

/// The run file of `loaded` with `seed`, carrying the campaign's mutant if it has one and it
/// plants its bug in this scenario's backend (a scenario on another backend runs as written:
/// the mutant could change nothing there).
fn resolve(
    options: &CampaignOptions,
    loaded: &Loaded,
    seed: u64,
) -> Result<RunFile, crate::sim::runfile::RunFileError> {
    let mut run = loaded.scenario.resolve(seed)?;
    if planted(options, loaded) {
        run.mutant.clone_from(&options.mutant);
    }
    Ok(run)
}

/// Refuses a `--mutant` that no scenario's backend runs
/// ([`crate::mutants::check_planted_in`]): planted nowhere, it would change nothing
/// and the campaign would pass on the correct code. A mutant planted in some of the
/// scenarios leaves the others as written.
fn mutant_planted_somewhere(
    options: &CampaignOptions,
    scenarios: &[Loaded],
) -> Result<(), CampaignError> {
    let Some(mutant) = options.mutant.as_deref().and_then(Mutant::from_name) else {
        return Ok(());
    };
    if scenarios.iter().any(|loaded| planted(options, loaded)) {
        return Ok(());
    }
    let backends: BTreeSet<&str> = scenarios
        .iter()
        .map(|loaded| loaded.scenario.world.backend.name())
        .collect();
    let refusal = backends
        .iter()
        .find_map(|backend| crate::mutants::check_planted_in(mutant, backend).err())
        .unwrap_or_default();
    let hint = match mutant.backend() {
        Some("etcd") => "etcd runs only against a real etcd (`leasesim live --backend etcd`, \
                         the tests of tests/etcd)"
            .to_owned(),
        other => format!(
            "give --sims a folder with a {} scenario",
            other.unwrap_or("any")
        ),
    };
    Err(CampaignError::BadInput(format!(
        "--mutant {}: no scenario of {} is on its backend: {refusal}; {hint}",
        mutant.name(),
        options.sims.display(),
    )))
}

/// Refuses a `--run-timeout` shorter than the longest run of some scenario may need
/// ([`crate::sim::wall::timeout`]): such runs would be reported as hangs only for being long.
fn run_timeout_fits(options: &CampaignOptions, scenarios: &[Loaded]) -> Result<(), CampaignError> {
    let Some(given) = options.run_timeout else {
        return Ok(());
    };
    for loaded in scenarios {
        let end_ms = loaded.scenario.longest_run_end_ms();
        let replicas = loaded.scenario.replicas();
        crate::sim::wall::timeout(end_ms, replicas, Some(given), "--run-timeout").map_err(
            |error| {
                CampaignError::BadInput(format!(
                    "{}: {error} (its longest run{})",
                    loaded.path.display(),
                    if loaded.scenario.is_swarm() {
                        ": the latest heal with the longest freeze its swarm profile draws"
                    } else {
                        ""
                    }
                ))
            },
        )?;
    }
    Ok(())
}

/// Whether the campaign's mutant is planted in `loaded`'s runs.
fn planted(options: &CampaignOptions, loaded: &Loaded) -> bool {
    let backend = loaded.scenario.world.backend.name();
    options
        .mutant
        .as_deref()
        .and_then(crate::mutant::Mutant::from_name)
        .is_some_and(|mutant| crate::mutants::applies_to(mutant, backend))
}

fn run_one(options: &CampaignOptions, loaded: &Loaded, seed: u64) -> Executed {
    match resolve(options, loaded, seed) {
        Ok(run) => {
            let replay = scenario_command(&run, &loaded.path, options.backend.as_ref());
            execute(&run, run.wall_timeout(options.run_timeout), replay)
        }
        Err(error) => Executed {
            record: RunRecord::harness_error(
                &loaded.scenario.name(),
                seed,
                &format!("cannot resolve the run: {error}"),
                String::new(),
            ),
            history: None,
            judgement: None,
        },
    }
}

/// Shrinks the first failure of each (scenario, check) and appends it to `shrunk.jsonl`.
fn shrink_failures(
    options: &CampaignOptions,
    scenarios: &[Loaded],
    failures: &[Failure],
) -> Result<(), CampaignError> {
    let dir = options.out.join("shrunk");
    std::fs::create_dir_all(&dir).map_err(|e| cannot_write(e, &dir))?;
    let shrunk_path = options.out.join("shrunk.jsonl");
    let mut lines =
        crate::input::open_regular(OpenOptions::new().create(true).append(true), &shrunk_path)
            .map_err(|e| cannot_write(e.into_io(), &shrunk_path))?;
    for failure in failures {
        let loaded = &scenarios[failure.key.scenario];
        let Some((record, path)) = shrink_failure(options, loaded, failure, &dir)? else {
            continue;
        };
        lines
            .write_all(&json_line(&record))
            .map_err(|e| cannot_write(e, &shrunk_path))?;
        if options.save_regressions {
            save_regression(options, &path)?;
        }
    }
    Ok(())
}

fn cannot_write(e: std::io::Error, path: &Path) -> CampaignError {
    CampaignError::Harness(format!("cannot write {}: {e}", path.display()))
}

/// Shrinks one failure, saves the minimal run file into `dir` and returns its record and
/// path; `None` when the failing run no longer resolves.
fn shrink_failure(
    options: &CampaignOptions,
    loaded: &Loaded,
    failure: &Failure,
    dir: &Path,
) -> Result<Option<(ShrunkRun, PathBuf)>, CampaignError> {
    let Ok(run) = resolve(options, loaded, failure.key.seed) else {
        return Ok(None);
    };
    eprintln!(
        "shrinking {} seed {} ({} violated)…",
        loaded.scenario.name(),
        failure.key.seed,
        failure.check
    );
    let file_name = format!(
        "{}-seed{}-{}.run.json",
        loaded.scenario.name(),
        failure.key.seed,
        failure.check.name().to_lowercase()
    );
    let path = dir.join(&file_name);
    let shrunk = shrink::shrink(&run, failure.check, run.wall_timeout(options.run_timeout));
    shrunk
        .run
        .save(&path)
        .map_err(|e| CampaignError::Harness(e.to_string()))?;
    super::counterexample::keep(
        &options.out,
        &format!("shrunk/{file_name}"),
        &shrunk.run,
        shrunk.history.as_ref(),
        failure.check,
        &shrunk.violations,
        shrunk.run.wall_timeout(options.run_timeout),
    )
    .map_err(CampaignError::Harness)?;
    let record = ShrunkRun {
        scenario: loaded.scenario.name(),
        seed: failure.key.seed,
        check: failure.check,
        run_file: format!("shrunk/{file_name}"),
        replay: shrunk.run.replay_command(&path),
        faults: (run.schedule.faults.len(), shrunk.run.schedule.faults.len()),
        operations: (failure.operations, shrunk.operations),
        attempts: shrunk.attempts,
        violations: shrunk.violations,
        sequence_diagram: shrunk.sequence_diagram,
    };
    eprintln!(
        "  -> {} faults to {}, {} operations to {}, in {} runs: {}",
        record.faults.0,
        record.faults.1,
        record.operations.0,
        record.operations.1,
        record.attempts,
        path.display()
    );
    Ok(Some((record, path)))
}

/// Copies the minimal run file at `path` into `sims/regressions/` (`--save-regressions`).
fn save_regression(options: &CampaignOptions, path: &Path) -> Result<(), CampaignError> {
    let regressions = options.sims.join("regressions");
    std::fs::create_dir_all(&regressions).map_err(|e| cannot_write(e, &regressions))?;
    let target = regressions.join(path.file_name().unwrap_or_default());
    crate::input::read_bytes(path, crate::input::DOCUMENT_LIMIT)
        .and_then(|bytes| crate::input::replace(&target, &bytes))
        .map_err(|e| cannot_write(e.into_io(), &target))?;
    eprintln!("  saved as {}", target.display());
    Ok(())
}

/// Runs the detection table over the campaign's scenarios and writes `mutants.jsonl`, in
/// catalogue order.
///
/// A shard runs only its part of the table ([`super::mutants::owned_mutants`]): shard K/N
/// detects the selected mutants at 0-based positions i (in catalogue order) with
/// `i % N == K - 1`, each over the whole seed range and every scenario, so `report merge`
/// of the N shards holds each row once, as the whole campaign writes it. A shard that owns
/// no mutant writes an empty table.
fn detect_mutants(options: &CampaignOptions, scenarios: &[Loaded]) -> Result<(), CampaignError> {
    let listed: Vec<(&Path, &Scenario)> = scenarios
        .iter()
        .map(|l| (l.path.as_path(), &l.scenario))
        .collect();
    let first_seed = match options.seeds {
        SeedPlan::Range { start, .. } => start,
        SeedPlan::Budget(_) => 0,
    };
    let owned = super::mutants::owned_mutants(&options.detect, options.shard);
    eprintln!(
        "detecting {} mutants{}: seeds {first_seed}..{} × {} scenarios each, until a check breaks",
        owned.len(),
        options.shard.map_or(String::new(), |s| format!(
            " of {} (shard {s}: positions i % {} == {} in catalogue order)",
            super::mutants::owned_mutants(&options.detect, None).len(),
            s.of,
            s.index - 1
        )),
        first_seed + options.mutant_seeds,
        scenarios.len()
    );
    let table = super::mutants::detect(
        &super::mutants::DetectOptions {
            scenarios: &listed,
            backend: options.backend.as_ref(),
            first_seed,
            seeds: options.mutant_seeds,
            jobs: options.jobs,
            run_timeout: options.run_timeout,
            shrink: options.shrink,
            out: &options.out,
        },
        &owned,
    );
    let path = options.out.join(crate::report::MUTANTS_FILE);
    let mut text = String::new();
    for detection in &table {
        text += &serde_json::to_string(detection).expect("a detection always serialises");
        text.push('\n');
    }
    crate::input::replace(&path, text.as_bytes())
        .map_err(|e| CampaignError::Harness(e.to_string()))?;
    let killed = table.iter().filter(|d| d.killed).count();
    eprintln!("mutation score: {killed}/{} mutants killed", table.len());
    Ok(())
}

/// The progress bar (runs/s, violations so far), or a plain line every 10 s when stderr is
/// not a terminal (CI logs).
struct Progress {
    bar: Option<ProgressBar>,
    finished: Mutex<(u64, u64, u64)>,
    clock: Stopwatch,
    last_line: Mutex<u64>,
}

impl Progress {
    fn new(enabled: bool, total: Option<u64>) -> Self {
        let bar = enabled.then(|| {
            let bar = match total {
                Some(total) => {
                    ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
                }
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            };
            let template = if total.is_some() {
                "{elapsed_precise} [{bar:30}] {pos}/{len} runs, {per_sec}, {msg}"
            } else {
                "{elapsed_precise} {spinner} {pos} runs, {per_sec}, {msg}"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .expect("the template is valid")
                    .progress_chars("=> "),
            );
            bar.set_message("0 violations");
            bar
        });
        Progress {
            bar,
            finished: Mutex::new((0, 0, 0)),
            clock: Stopwatch::start(),
            last_line: Mutex::new(0),
        }
    }

    fn finished(&self, record: &RunRecord) {
        let mut counts = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        counts.0 += 1;
        if matches!(record.status, RunStatus::Violation | RunStatus::Liveness) {
            counts.1 += 1;
        }
        if record.status == RunStatus::HarnessError {
            counts.2 += 1;
            eprintln!(
                "harness error: {} {}",
                record.scenario,
                record.error.as_deref().unwrap_or("")
            );
        }
        let message = format!("{} violations, {} harness errors", counts.1, counts.2);
        match &self.bar {
            Some(bar) if !bar.is_hidden() => {
                bar.set_message(message);
                bar.inc(1);
            }
            _ => {
                let mut last = self.last_line.lock().unwrap_or_else(|p| p.into_inner());
                let now = self.clock.elapsed().as_secs();
                if now >= *last + 10 {
                    *last = now;
                    eprintln!("{} runs in {now} s, {message}", counts.0);
                }
            }
        }
    }

    fn done(&self, elapsed: Duration) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let counts = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        let secs = elapsed.as_secs_f64().max(1e-9);
        eprintln!(
            "{} runs in {} ({:.1} runs/s): {} violations, {} harness errors",
            counts.0,
            crate::time::seconds_ms(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
            counts.0 as f64 / secs,
            counts.1,
            counts.2
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seed: u64, unexpected: &[Check]) -> (RunKey, RunRecord) {
        let mut record = RunRecord::harness_error("f6", seed, "unused", String::new());
        record.unexpected = unexpected.to_vec();
        (RunKey { seed, scenario: 0 }, record)
    }

    #[test]
    fn each_unexpected_check_gets_the_first_run_that_broke_it() {
        let mut failures = Vec::new();
        let runs = [
            record(3, &[Check::Excl, Check::Expiry]),
            record(4, &[Check::Excl, Check::LinLease]),
            record(5, &[Check::Expiry, Check::Live]),
        ];
        let done = |check: &Check| *check == Check::Live;
        for (key, record) in &runs {
            note_failures(&mut failures, *key, record, done);
        }
        let noted: Vec<(Check, u64)> = failures.iter().map(|f| (f.check, f.key.seed)).collect();
        assert_eq!(
            noted,
            vec![(Check::Excl, 3), (Check::Expiry, 3), (Check::LinLease, 4)]
        );
    }
}

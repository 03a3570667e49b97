//! `leasesim-report`: renders a campaign's results as Markdown (report.md), HTML with each
//! counterexample's timeline (report.html), JSON (summary.json) and JUnit XML (junit.xml)
//! (docs/campaigns.md). It reads what the campaign wrote and never re-runs anything.
//!
//! # A report folder
//!
//! ```text
//! <out>/
//!   campaign.json   written first by the campaign: {"v":2,"meta":CampaignMeta,"scenarios":[ScenarioInfo…]}
//!   results.jsonl   one RunRecord per line, in completion order (appended as runs finish)
//!   shrunk.jsonl    one ShrunkRun per line (absent or empty: nothing was shrunk)
//!   shrunk/         the minimal run files the ShrunkRun and Detection lines name (`run_file`, relative),
//!                   each `<stem>.run.json` beside its history and timeline ([`Counterexample`]):
//!                   `<stem>.history.jsonl`, `<stem>.timeline.svg`, and for a mutant's
//!                   counterexample its clean twin's (the same run, `mutant: null`):
//!                   `<stem>.clean.history.jsonl`, `<stem>.clean.timeline.svg`
//!   mutants.jsonl   a `--mutants` campaign's detection table: one Detection per line, in catalogue order
//!   report.md       rendered: for a reviewer (GitHub renders its mermaid diagrams and timelines)
//!   report.html     rendered: the same summary and every counterexample's timeline inline, one
//!                   self-contained page (no network fetches)
//!   summary.json    rendered: totals for tooling ([`Summary`], schema [`SUMMARY_VERSION`])
//!   junit.xml       rendered: one testcase per scenario × check, for CI
//! ```
//!
//! Rendering is deterministic: the same data files give byte-identical outputs, whatever
//! order the runs finished in (results are sorted by scenario, then seed).
//!
//! # Exit code of a campaign ([`Summary::exit_code`])
//!
//! 3 if any run was a harness error, else 1 if any run had an unexpected safety violation
//! or a scenario's expected violation was never seen in any of its runs (the expectation is
//! wrong, or the mutant was not caught), else 5 if any run failed LIVE only, else 4 if any
//! run was inconclusive, else 0 (docs/exit-codes.md: [`Exit::worst`]'s order). A check
//! that judged nothing ("not judged") does not change it, nor does an expected coverage event
//! never reached: that is a warning, printed in the verdict line ([`Summary::verdict`],
//! [`Summary::warnings`]; reports/README.md says why).

pub mod checks;
mod counterexamples;
mod html;
#[cfg(test)]
mod html_tests;
mod junit;
mod markdown;
pub mod mermaid;
mod overview;
#[cfg(test)]
mod overview_tests;
mod summary;
#[cfg(test)]
mod tests;
mod text;
pub mod timeline;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use leasesim_core::mutant::Mutant;
use leasesim_history::catalogue::Check;
use leasesim_history::exit::Exit;
use leasesim_results::plan::{CampaignPlan, MAX_MISSING_LISTED};
use leasesim_results::record::{
    CampaignMeta, Detection, READ_VERSIONS, RECORD_VERSION, RunRecord, ShrunkRun,
};
pub use summary::{
    CheckSummary, HarnessErrorSummary, PendingCoverage, SUMMARY_VERSION, ScenarioSummary,
    ShrunkSummary, Summary,
};

/// `campaign.json`: the campaign's identity and its scenarios.
pub const CAMPAIGN_FILE: &str = "campaign.json";
/// `results.jsonl`: one [`RunRecord`] per line.
pub const RESULTS_FILE: &str = "results.jsonl";
/// `shrunk.jsonl`: one [`ShrunkRun`] per line.
pub const SHRUNK_FILE: &str = "shrunk.jsonl";
/// A `--mutants` campaign's detection table, one [`Detection`] per line, in catalogue order.
pub const MUTANTS_FILE: &str = "mutants.jsonl";

/// The data files of a report folder, as the campaign writes them.
pub const DATA_FILES: [&str; 4] = [CAMPAIGN_FILE, RESULTS_FILE, SHRUNK_FILE, MUTANTS_FILE];

/// The files [`render`] writes from the data files: a verdict each. A command that writes
/// a report folder anew removes them first ([`leasesim_results::output::remove_stale`]), so an
/// interrupted one never leaves an earlier verdict beside its own data (N7).
pub const RENDERED_FILES: [&str; 4] = ["report.md", "report.html", "summary.json", "junit.xml"];

/// The files kept beside one shrunk counterexample's run file (`shrunk/<stem>.run.json`),
/// relative to the report folder like the run file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Counterexample {
    /// `shrunk/<stem>.history.jsonl`: the minimal run's history.
    pub history: String,
    /// `shrunk/<stem>.timeline.svg`: its timeline.
    pub timeline: String,
    /// `shrunk/<stem>.clean.history.jsonl`: a mutant's clean twin's history (the same run file
    /// with `mutant: null`).
    pub clean_history: String,
    /// `shrunk/<stem>.clean.timeline.svg`: the clean twin's timeline.
    pub clean_timeline: String,
}

impl Counterexample {
    /// The files beside run file `run_file` (`….run.json`; another name is its own stem).
    pub fn of(run_file: &str) -> Self {
        let stem = run_file.strip_suffix(".run.json").unwrap_or(run_file);
        Counterexample {
            history: format!("{stem}.history.jsonl"),
            timeline: format!("{stem}.timeline.svg"),
            clean_history: format!("{stem}.clean.history.jsonl"),
            clean_timeline: format!("{stem}.clean.timeline.svg"),
        }
    }

    /// Every file, in a fixed order.
    pub fn files(&self) -> [&str; 4] {
        [
            &self.history,
            &self.timeline,
            &self.clean_history,
            &self.clean_timeline,
        ]
    }
}

/// What a report shows of one scenario (from its file): written by the campaign into
/// `campaign.json`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioInfo {
    /// The scenario's name (its file stem).
    pub name: String,
    /// One line saying what it is about.
    pub about: String,
    /// Coverage events a campaign of it is expected to reach (names of
    /// [`leasesim_results::CoverageEvent`]).
    #[serde(default)]
    pub coverage: Vec<String>,
    /// Checks its runs are expected to violate (a mutant's scenario), by check name.
    #[serde(default)]
    pub violate: Vec<Check>,
    /// Expected coverage events that a campaign of fewer seeds may miss, with the seeds within
    /// which they must be reached (`expect.coverage_within_seeds`); absent for the others,
    /// which any campaign must reach ([`ScenarioInfo::within_seeds`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub coverage_within_seeds: BTreeMap<String, u64>,
    /// The fault kinds of its swarm profile that its backend cannot take, so none of its runs
    /// drew them (docs/targets.md#what-a-target-world-refuses); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
}

/// Fault kinds a scenario's swarm profile names and its backend cannot take.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct LeftOut {
    /// The backend (`target:kube-lease-manager`).
    pub backend: String,
    /// The kinds, as the profile names them (`pause`, `clock_drift`).
    pub kinds: Vec<String>,
}

impl ScenarioInfo {
    /// The seeds within which a campaign must reach expected coverage event `event`: the
    /// scenario's own number, or [`leasesim_results::coverage::DEFAULT_WITHIN_SEEDS`].
    pub fn within_seeds(&self, event: &str) -> u64 {
        self.coverage_within_seeds
            .get(event)
            .copied()
            .unwrap_or(leasesim_results::coverage::DEFAULT_WITHIN_SEEDS)
    }
}

/// `campaign.json`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFile {
    /// Schema version ([`RECORD_VERSION`]).
    pub v: u32,
    /// What identifies the campaign.
    pub meta: CampaignMeta,
    /// Its scenarios, in campaign order.
    pub scenarios: Vec<ScenarioInfo>,
    /// Wall-clock time of the campaign from its start to its report (runs, shrinking,
    /// mutants), ms, written when it ends (for a resumed campaign: its last invocation; for a
    /// merge: the longest shard's). Absent while it runs, or when nothing measured it. Not
    /// deterministic; in no hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
}

/// Why a report could not be rendered or merged. Bad input (exit 2), never a panic.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A data file is malformed.
    #[error("{}:{line}: {message}", file.display())]
    Malformed {
        /// The file.
        file: PathBuf,
        /// The 1-based line (of a JSON-lines file, or of the JSON error).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Shards of different campaigns.
    #[error(
        "cannot merge {} and {}: their {what} differs ({left} vs {right}); these are not shards of one campaign (pass --force to merge anyway)",
        first.display(), other.display()
    )]
    Mismatch {
        /// The first folder.
        first: PathBuf,
        /// The folder that differs.
        other: PathBuf,
        /// `git commit`, `config hash` or `Cargo.lock hash`.
        what: &'static str,
        /// The first folder's value.
        left: String,
        /// The other's.
        right: String,
    },
    /// Records of runs the campaign never planned (another seed range, scenario or shard).
    #[error(
        "{}: {count} records are not runs of this campaign ({plan}): {listed}; they belong to another campaign or the file was edited: remove them, or render the folder they came from",
        file.display()
    )]
    Stray {
        /// The results file.
        file: PathBuf,
        /// How many records.
        count: usize,
        /// The campaign's plan, as `campaign.json` says (seeds, scenarios, shard).
        plan: String,
        /// The first few, `scenario seed N`.
        listed: String,
    },
    /// Folders that cannot be the shards of one campaign (different seeds or scenarios, a
    /// shard given twice, shards of different N, a mutant in two detection tables).
    #[error("cannot merge {}: {message}", dir.display())]
    NotShards {
        /// The folder at fault.
        dir: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Nothing to merge.
    #[error("report merge: no report folders given")]
    NoInput,
    /// A file of the folder is not a regular file or is over its size cap, or the output
    /// folder is locked or is one of the inputs ([`leasesim_history::input`]).
    #[error(transparent)]
    Input(leasesim_history::input::InputError),
    /// Two different records of one run in one results file: a run has one record, so one
    /// of them is not what the campaign wrote, and neither can be trusted (N5).
    #[error(
        "{}: {scenario} seed {seed} has two different records (records {first} and {second} \
         of the file, statuses `{first_status}` and `{second_status}`); a run has one record, \
         so the file was edited or written by two campaigns: remove the wrong record, or \
         rerun the campaign",
        file.display()
    )]
    Conflict {
        /// The results file.
        file: PathBuf,
        /// The run's scenario.
        scenario: String,
        /// The run's seed.
        seed: u64,
        /// The 1-based position of the first record among the file's records.
        first: usize,
        /// The 1-based position of the other.
        second: usize,
        /// The first record's status.
        first_status: String,
        /// The other's.
        second_status: String,
    },
}

impl From<leasesim_history::input::InputError> for ReportError {
    /// An unreadable file stays [`ReportError::Io`] (a campaign's harness error); a file of
    /// the wrong kind or size, a locked folder or an input as output is
    /// [`ReportError::Input`] (bad input).
    fn from(error: leasesim_history::input::InputError) -> Self {
        match error {
            leasesim_history::input::InputError::Read(leasesim_history::input::FileError::Io {
                path,
                source,
            })
            | leasesim_history::input::InputError::Write { path, source } => {
                ReportError::Io { path, source }
            }
            other => ReportError::Input(other),
        }
    }
}

impl ReportError {
    /// Whether writing or reading failed (a harness error for a campaign) rather than the
    /// data being wrong (bad input).
    pub fn is_io(&self) -> bool {
        matches!(self, ReportError::Io { .. })
    }
}

/// How a folder's records cover its campaign's plan ([`CampaignPlan`]).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Completeness {
    /// Runs planned (`None` for a budget campaign, whose seeds are not known in advance).
    pub planned: Option<u64>,
    /// Planned runs without a record.
    pub missing_runs: u64,
    /// What is missing, for the report: `shard 3/3`, `f1-pause seed 4`, `… and 12 more`.
    pub missing: Vec<String>,
}

impl Completeness {
    /// Judges `results` (deduplicated) against the plan of `campaign`.
    ///
    /// # Errors
    /// [`ReportError::Malformed`] when `campaign.json`'s seeds or shard cannot be a
    /// campaign's; [`ReportError::Stray`] for records outside the plan.
    fn judge(
        dir: &Path,
        campaign: &CampaignFile,
        results: &[RunRecord],
    ) -> Result<Self, ReportError> {
        let plan = CampaignPlan::of(&campaign.meta).map_err(|message| ReportError::Malformed {
            file: dir.join(CAMPAIGN_FILE),
            line: 1,
            message,
        })?;
        let strays: Vec<&RunRecord> = results
            .iter()
            .filter(|r| !plan.owns(&r.scenario, r.seed))
            .collect();
        if !strays.is_empty() {
            return Err(stray_error(dir, &campaign.meta, &strays));
        }
        let Some(planned) = plan.planned() else {
            return Ok(Completeness::default());
        };
        let planned = u64::try_from(planned).unwrap_or(u64::MAX);
        let missing_runs = planned.saturating_sub(results.len() as u64);
        let mut missing: Vec<String> = plan
            .missing_shards()
            .iter()
            .map(|s| format!("shard {s} (not merged)"))
            .collect();
        if missing_runs > 0 {
            let present = results
                .iter()
                .map(|r| (r.scenario.clone(), r.seed))
                .collect();
            let listed = plan.missing(&present);
            let more = missing_runs.saturating_sub(listed.len() as u64);
            missing.extend(listed.iter().map(|(s, seed)| format!("{s} seed {seed}")));
            if more > 0 {
                missing.push(format!("{} runs", summary::and_more(more)));
            }
        }
        debug_assert!(missing_runs > 0 || missing.is_empty());
        Ok(Completeness {
            planned: Some(planned),
            missing_runs,
            missing,
        })
    }
}

fn stray_error(dir: &Path, meta: &CampaignMeta, strays: &[&RunRecord]) -> ReportError {
    let named: Vec<String> = strays
        .iter()
        .map(|r| format!("{} seed {}", r.scenario, r.seed))
        .collect();
    ReportError::Stray {
        file: dir.join(RESULTS_FILE),
        count: strays.len(),
        plan: format!(
            "seeds {}, scenarios {}, shard {}",
            meta.seeds,
            meta.scenarios.join(", "),
            meta.shard.as_deref().unwrap_or("none")
        ),
        listed: summary::first_of(&named, MAX_MISSING_LISTED, ", "),
    }
}

/// Why a file of schema version `v` is not read, and which versions are.
fn unread_version(v: u32) -> String {
    format!(
        "schema version {v} is not one this leasesim reads ({} to {}): it was written by another \
         leasesim; render it with that one",
        READ_VERSIONS.start(),
        READ_VERSIONS.end()
    )
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `campaign.json` into `out`.
///
/// # Errors
/// [`ReportError::Io`].
pub fn write_campaign_file(
    out: &Path,
    meta: &CampaignMeta,
    scenarios: &[ScenarioInfo],
    wall_ms: Option<u64>,
) -> Result<(), ReportError> {
    let file = CampaignFile {
        v: RECORD_VERSION,
        meta: meta.clone(),
        scenarios: scenarios.to_vec(),
        wall_ms,
    };
    write(&out.join(CAMPAIGN_FILE), &pretty(&file))
}

/// A report folder's data, as read.
#[derive(Clone, PartialEq, Debug)]
pub struct ReportData {
    /// `campaign.json`.
    pub campaign: CampaignFile,
    /// `results.jsonl`, sorted by (scenario, seed), one record per (scenario, seed).
    pub results: Vec<RunRecord>,
    /// `shrunk.jsonl`, sorted by (scenario, seed, check).
    pub shrunk: Vec<ShrunkRun>,
    /// `mutants.jsonl` (a `--mutants` campaign's detection table), in catalogue order.
    pub mutants: Vec<Detection>,
    /// How the results cover the campaign's plan: judged by [`ReportData::read`] (`None`
    /// for data built in memory).
    pub completeness: Option<Completeness>,
    /// The counterexamples' timelines found beside their run files ([`Counterexample`]):
    /// relative path → SVG text, read by [`ReportData::read`] (empty for data built in
    /// memory). The reports show those present.
    pub timelines: BTreeMap<String, String>,
}

impl ReportData {
    /// The mutants whose shrunk counterexample has a timeline beside it, with its run file
    /// (relative path), in catalogue order: what report.md and report.html show side by side
    /// with the clean twin.
    pub(crate) fn mutant_counterexamples(&self) -> Vec<(&Detection, &str)> {
        self.mutants
            .iter()
            .filter_map(|d| d.run_file.as_deref().map(|file| (d, file)))
            .filter(|(_, file)| {
                self.timelines
                    .contains_key(&Counterexample::of(file).timeline)
            })
            .collect()
    }

    /// Reads the data files of report folder `dir`.
    ///
    /// # Errors
    /// [`ReportError::Io`] when `campaign.json` or `results.jsonl` is missing or unreadable
    /// (`shrunk.jsonl` may be absent); [`ReportError::Malformed`] naming the file and line;
    /// [`ReportError::Stray`] for records of runs the campaign did not plan.
    pub fn read(dir: &Path) -> Result<Self, ReportError> {
        let path = dir.join(CAMPAIGN_FILE);
        let text =
            leasesim_history::input::read_to_string(&path, leasesim_history::input::RECORDS_LIMIT)?;
        let campaign: CampaignFile =
            serde_json::from_str(&text).map_err(|e| ReportError::Malformed {
                file: path.clone(),
                line: e.line(),
                message: e.to_string(),
            })?;
        let unread = [campaign.v, campaign.meta.v]
            .into_iter()
            .find(|v| !READ_VERSIONS.contains(v));
        if let Some(v) = unread {
            return Err(ReportError::Malformed {
                file: path,
                line: 1,
                message: unread_version(v),
            });
        }
        let results_path = dir.join(RESULTS_FILE);
        let results: Vec<RunRecord> = read_lines(&results_path, false)?;
        refuse_conflicts(&results_path, &results)?;
        let unread = (1..)
            .zip(&results)
            .find(|(_, r)| !READ_VERSIONS.contains(&r.v));
        if let Some((line, record)) = unread {
            return Err(ReportError::Malformed {
                file: results_path,
                line,
                message: unread_version(record.v),
            });
        }
        let shrunk_path = dir.join(SHRUNK_FILE);
        let shrunk: Vec<ShrunkRun> = read_lines(&shrunk_path, true)?;
        for (line, run) in (1..).zip(&shrunk) {
            if !is_relative_inside(&run.run_file) {
                return Err(ReportError::Malformed {
                    file: shrunk_path,
                    line,
                    message: format!(
                        "run_file `{}` is not a path inside the report folder",
                        run.run_file
                    ),
                });
            }
        }
        let mutants_path = dir.join(MUTANTS_FILE);
        let mut mutants: Vec<Detection> = read_lines(&mutants_path, true)?;
        let outside = (1..).zip(&mutants).find_map(|(line, d)| {
            d.run_file
                .as_ref()
                .filter(|file| !is_relative_inside(file))
                .map(|file| (line, file.clone()))
        });
        if let Some((line, file)) = outside {
            return Err(ReportError::Malformed {
                file: mutants_path,
                line,
                message: format!("run_file `{file}` is not a path inside the report folder"),
            });
        }
        catalogue_order(&mut mutants);
        let mut data = ReportData::new(campaign, results, shrunk);
        data.mutants = mutants;
        data.completeness = Some(Completeness::judge(dir, &data.campaign, &data.results)?);
        data.read_timelines(dir)?;
        Ok(data)
    }

    /// The data in canonical order: results sorted by (scenario, seed) and deduplicated
    /// (the first of equal keys after sorting by their JSON, so input order never matters),
    /// shrunk runs likewise by (scenario, seed, check).
    pub fn new(campaign: CampaignFile, results: Vec<RunRecord>, shrunk: Vec<ShrunkRun>) -> Self {
        ReportData {
            campaign,
            results: canonical(results, |r| (r.scenario.clone(), r.seed, String::new())),
            shrunk: canonical(shrunk, |s| {
                (s.scenario.clone(), s.seed, s.check.name().to_owned())
            }),
            mutants: Vec::new(),
            completeness: None,
            timelines: BTreeMap::new(),
        }
    }

    /// Every counterexample's run file (shrunk runs, then the detection table's), each once.
    pub fn run_files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = self.shrunk.iter().map(|s| s.run_file.as_str()).collect();
        files.extend(self.mutants.iter().filter_map(|d| d.run_file.as_deref()));
        let mut seen = BTreeSet::new();
        files.retain(|f| seen.insert(*f));
        files
    }

    /// Reads the timelines beside the run files from `dir` into [`ReportData::timelines`].
    ///
    /// # Errors
    /// [`ReportError::Io`] when one is there but cannot be read.
    fn read_timelines(&mut self, dir: &Path) -> Result<(), ReportError> {
        let mut timelines = BTreeMap::new();
        for run_file in self.run_files() {
            let files = Counterexample::of(run_file);
            for relative in [files.timeline, files.clean_timeline] {
                let path = dir.join(&relative);
                if let Some(bytes) = leasesim_history::input::read_optional(
                    &path,
                    leasesim_history::input::RECORDS_LIMIT,
                )? {
                    let text = String::from_utf8(bytes).map_err(|e| ReportError::Io {
                        path: path.clone(),
                        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                    })?;
                    timelines.insert(relative, text);
                }
            }
        }
        self.timelines = timelines;
        Ok(())
    }

    /// The totals, verdicts and exit code.
    pub fn summary(&self) -> Summary {
        Summary::of(self)
    }
}

/// Sorts a detection table into catalogue order ([`Mutant::position`]); a name this build
/// does not know goes last, by name. Stable: rows of one mutant keep their order.
fn catalogue_order(mutants: &mut [Detection]) {
    mutants.sort_by_cached_key(|d| {
        let position = Mutant::from_name(&d.mutant).map_or(usize::MAX, Mutant::position);
        (position, d.mutant.clone())
    });
}

/// Sorts by key then JSON text, keeps the first of each key.
fn canonical<T: Serialize>(items: Vec<T>, key: impl Fn(&T) -> (String, u64, String)) -> Vec<T> {
    let mut keyed: Vec<((String, u64, String), String, T)> = items
        .into_iter()
        .map(|item| {
            let json = serde_json::to_string(&item).unwrap_or_default();
            (key(&item), json, item)
        })
        .collect();
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    keyed.dedup_by(|later, first| later.0 == first.0);
    keyed.into_iter().map(|(_, _, item)| item).collect()
}

/// Reads a JSON-lines file; blank lines are skipped. `optional`: a missing file is empty.
fn read_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    optional: bool,
) -> Result<Vec<T>, ReportError> {
    let text =
        match leasesim_history::input::read_to_string(path, leasesim_history::input::RECORDS_LIMIT)
        {
            Ok(text) => text,
            Err(e) if optional && e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
    let mut items = Vec::new();
    for (number, line) in (1..).zip(text.lines()) {
        if line.trim().is_empty() {
            continue;
        }
        let item = serde_json::from_str(line).map_err(|e| ReportError::Malformed {
            file: path.to_path_buf(),
            line: number,
            message: e.to_string(),
        })?;
        items.push(item);
    }
    Ok(items)
}

/// Refuses two different records of one (scenario, seed) in `records`, read from `file`
/// ([`ReportError::Conflict`], `docs/files.md#reading`); equal copies are one record.
///
/// # Errors
/// [`ReportError::Conflict`] naming the run and where its two records are.
pub fn refuse_conflicts(file: &Path, records: &[RunRecord]) -> Result<(), ReportError> {
    let mut first_of: BTreeMap<(&str, u64), (usize, String)> = BTreeMap::new();
    for (position, record) in (1..).zip(records) {
        let json = serde_json::to_string(record).unwrap_or_default();
        let key = (record.scenario.as_str(), record.seed);
        match first_of.get(&key) {
            None => {
                first_of.insert(key, (position, json));
            }
            Some((_, seen)) if *seen == json => {}
            Some((first, _)) => {
                let status = |r: &RunRecord| {
                    serde_json::to_value(r.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                };
                return Err(ReportError::Conflict {
                    file: file.to_path_buf(),
                    scenario: record.scenario.clone(),
                    seed: record.seed,
                    first: *first,
                    second: position,
                    first_status: status(&records[*first - 1]),
                    second_status: status(record),
                });
            }
        }
    }
    Ok(())
}

/// A relative path with no `..`, root or prefix: it stays inside the folder it is joined to.
fn is_relative_inside(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

fn pretty<T: Serialize>(value: &T) -> String {
    // Our types serialise without fail: string keys, no fallible `Serialize`.
    let mut text = serde_json::to_string_pretty(value).expect("report data always serialises");
    text.push('\n');
    text
}

/// Writes `text` as the whole of `path` ([`leasesim_results::output::replace`]).
fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    Ok(leasesim_results::output::replace(path, text.as_bytes())?)
}

/// Renders `report.md`, `report.html`, `summary.json` and `junit.xml` into report folder
/// `dir` from its data files; returns the campaign's exit code ([`Summary::exit_code`]).
///
/// # Errors
/// [`ReportError`] for missing or malformed data files, or outputs that cannot be written.
pub fn render(dir: &Path) -> Result<Exit, ReportError> {
    render_summary(dir).map(|summary| summary.exit())
}

/// As [`render`], returning the whole [`Summary`] (its verdict line included).
///
/// # Errors
/// As [`render`].
pub fn render_summary(dir: &Path) -> Result<Summary, ReportError> {
    let data = ReportData::read(dir)?;
    let summary = data.summary();
    write(&dir.join("report.md"), &markdown::render(&data, &summary))?;
    write(&dir.join("report.html"), &html::render(&data, &summary))?;
    write(&dir.join("summary.json"), &pretty(&summary))?;
    write(&dir.join("junit.xml"), &junit::render(&data, &summary))?;
    Ok(summary)
}

/// The three outputs as text, without writing them: `(report.md, summary.json, junit.xml)`.
pub fn render_text(data: &ReportData) -> (String, String, String) {
    let summary = data.summary();
    (
        markdown::render(data, &summary),
        pretty(&summary),
        junit::render(data, &summary),
    )
}

/// `leasesim report merge DIR... --out OUT`: merges the report folders of shards of one
/// campaign into `out` (results deduplicated by (scenario, seed), shrunk runs by (scenario,
/// seed, check), the detection tables of `--mutants` unioned in catalogue order, their run
/// files copied, and a shrunk run's replay command naming its copy in `out`) and renders
/// it; returns the exit code.
///
/// Shards must share git commit, config hash and Cargo.lock hash, and each mutant must be
/// in one shard's detection table only (shard K/N detects the mutants at positions
/// `i % N == K - 1`, docs/campaigns.md#shards-and-merge); with `force`, folders
/// that differ are merged anyway, the merged meta lists every value (`a+b`), and the first
/// folder given with a run or a mutant keeps it.
///
/// # Errors
/// [`ReportError::Mismatch`] for different campaigns and [`ReportError::NotShards`] for
/// folders that are not distinct shards (a mutant in two of them included), without
/// `force`; [`ReportError`] for bad input or unwritable output.
pub fn merge(dirs: &[PathBuf], out: &Path, force: bool) -> Result<Exit, ReportError> {
    merge_summary(dirs, out, force).map(|summary| summary.exit())
}

/// As [`merge`], returning the merged folder's whole [`Summary`] (its verdict line included).
///
/// # Errors
/// As [`merge`].
pub fn merge_summary(dirs: &[PathBuf], out: &Path, force: bool) -> Result<Summary, ReportError> {
    let Some(first_dir) = dirs.first() else {
        return Err(ReportError::NoInput);
    };
    // Before anything is read or written: `out` is replaced whole, so an input there would
    // be lost (N6).
    leasesim_results::output::refuse_input_as_output(out, dirs)?;
    let mut shards = Vec::new();
    for dir in dirs {
        shards.push((dir, ReportData::read(dir)?));
    }
    if !force {
        same_campaign(first_dir, &shards)?;
        distinct_shards(&shards)?;
    }
    let meta = merged_meta(&shards);
    let scenarios = merged_scenarios(&shards);
    let (results, mut shrunk, mut copies) = merged_records(&shards);
    for run in &mut shrunk {
        // The run file is copied into `out`: replay it from there, as a whole campaign
        // writing into `out` would say, not from the shard's folder.
        let binary = run
            .replay
            .split(' ')
            .next()
            .unwrap_or("leasesim")
            .to_owned();
        run.replay = format!("{binary} replay {}", out.join(&run.run_file).display());
    }
    let (mutants, mutant_copies) = merged_mutants(&shards, force)?;
    for (relative, source) in mutant_copies {
        copies.entry(relative).or_insert(source);
    }
    let wall_ms = shards.iter().filter_map(|(_, d)| d.campaign.wall_ms).max();

    fs::create_dir_all(out).map_err(io_error(out))?;
    copy_run_files(&copies, out)?;
    let data = ReportData::new(
        CampaignFile {
            v: RECORD_VERSION,
            meta,
            scenarios,
            wall_ms,
        },
        results,
        shrunk,
    );
    write(&out.join(CAMPAIGN_FILE), &pretty(&data.campaign))?;
    write_lines(&out.join(RESULTS_FILE), &data.results)?;
    write_lines(&out.join(SHRUNK_FILE), &data.shrunk)?;
    let mutants_path = out.join(MUTANTS_FILE);
    if !mutants.is_empty() {
        write_lines(&mutants_path, &mutants)?;
    } else if mutants_path.exists() {
        // A stale table from an earlier merge into `out` would be rendered as this one's.
        fs::remove_file(&mutants_path).map_err(io_error(&mutants_path))?;
    }
    render_summary(out)
}

/// Report folders as read, with the folder each came from.
type Shards<'a> = [(&'a PathBuf, ReportData)];

/// Every shard shares the first one's git commit, config hash and Cargo.lock hash.
fn same_campaign(first_dir: &Path, shards: &Shards<'_>) -> Result<(), ReportError> {
    let first = &shards[0].1.campaign.meta;
    for (dir, data) in &shards[1..] {
        let meta = &data.campaign.meta;
        for (what, left, right) in [
            ("git commit", &first.git_commit, &meta.git_commit),
            ("config hash", &first.config_hash, &meta.config_hash),
            (
                "Cargo.lock hash",
                &first.cargo_lock_hash,
                &meta.cargo_lock_hash,
            ),
        ] {
            if left != right {
                return Err(ReportError::Mismatch {
                    first: first_dir.to_path_buf(),
                    other: (*dir).clone(),
                    what,
                    left: left.clone(),
                    right: right.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Every folder holds the same seeds and scenarios, and different shards of one N (an
/// unsharded folder merges only alone); shards not given make the merge incomplete, not an
/// error.
fn distinct_shards(shards: &Shards<'_>) -> Result<(), ReportError> {
    let first = &shards[0].1.campaign.meta;
    let mut seen: Vec<(leasesim_results::plan::Shard, &PathBuf)> = Vec::new();
    for (dir, data) in shards {
        let meta = &data.campaign.meta;
        let not_shards = |message: String| ReportError::NotShards {
            dir: (*dir).clone(),
            message,
        };
        if meta.seeds != first.seeds || meta.scenarios != first.scenarios {
            return Err(not_shards(format!(
                "its seeds or scenarios ({}; {}) are not the first folder's ({}; {})",
                meta.seeds,
                meta.scenarios.join(", "),
                first.seeds,
                first.scenarios.join(", ")
            )));
        }
        let plan = CampaignPlan::of(meta).map_err(not_shards)?;
        if plan.shards.is_empty() && shards.len() > 1 {
            return Err(not_shards(
                "it is a whole campaign (run without --shard), not a shard: nothing to merge it with"
                    .into(),
            ));
        }
        for shard in plan.shards {
            if let Some((other, other_dir)) =
                seen.iter().find(|(s, _)| s.of != shard.of || *s == shard)
            {
                return Err(not_shards(if other.of == shard.of {
                    format!("shard {shard} is also in {}", other_dir.display())
                } else {
                    format!(
                        "shard {shard} and shard {other} ({}) are not shards of one campaign",
                        other_dir.display()
                    )
                }));
            }
            seen.push((shard, dir));
        }
    }
    Ok(())
}

/// The merged meta: each field's distinct values in shard order, joined by `+`.
fn merged_meta(shards: &Shards<'_>) -> CampaignMeta {
    let metas: Vec<&CampaignMeta> = shards.iter().map(|(_, d)| &d.campaign.meta).collect();
    let joined = |field: fn(&CampaignMeta) -> Option<String>| -> Option<String> {
        let mut values: Vec<String> = Vec::new();
        for meta in &metas {
            if let Some(value) = field(meta)
                && !values.contains(&value)
            {
                values.push(value);
            }
        }
        (!values.is_empty()).then(|| values.join("+"))
    };
    let mut names: Vec<String> = Vec::new();
    for name in metas.iter().flat_map(|m| &m.scenarios) {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    CampaignMeta {
        v: RECORD_VERSION,
        seeds: joined(|m| Some(m.seeds.clone())).unwrap_or_default(),
        sims: joined(|m| Some(m.sims.clone())).unwrap_or_default(),
        scenarios: names,
        shard: joined(|m| m.shard.clone()),
        merged: true,
        mutant: joined(|m| m.mutant.clone()),
        backend: joined(|m| m.backend.clone()),
        binary: joined(|m| Some(m.binary.clone())).unwrap_or_default(),
        git_commit: joined(|m| Some(m.git_commit.clone())).unwrap_or_default(),
        config_hash: joined(|m| Some(m.config_hash.clone())).unwrap_or_default(),
        cargo_lock_hash: joined(|m| Some(m.cargo_lock_hash.clone())).unwrap_or_default(),
    }
}

/// Every shard's scenarios, the first of each name.
fn merged_scenarios(shards: &Shards<'_>) -> Vec<ScenarioInfo> {
    let mut scenarios: Vec<ScenarioInfo> = Vec::new();
    for info in shards.iter().flat_map(|(_, d)| &d.campaign.scenarios) {
        if !scenarios.iter().any(|s| s.name == info.name) {
            scenarios.push(info.clone());
        }
    }
    scenarios
}

/// Results and shrunk runs: the first shard (in the order given) with a (scenario, seed) —
/// or (scenario, seed, check) — wins; and the run files to copy (relative path → source).
fn merged_records(
    shards: &Shards<'_>,
) -> (Vec<RunRecord>, Vec<ShrunkRun>, BTreeMap<String, PathBuf>) {
    let mut seen: BTreeSet<(String, u64)> = BTreeSet::new();
    let mut results = Vec::new();
    let mut seen_shrunk: BTreeSet<(String, u64, Check)> = BTreeSet::new();
    let mut shrunk = Vec::new();
    let mut copies: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (dir, data) in shards {
        for record in &data.results {
            if seen.insert((record.scenario.clone(), record.seed)) {
                results.push(record.clone());
            }
        }
        for run in &data.shrunk {
            if seen_shrunk.insert((run.scenario.clone(), run.seed, run.check)) {
                copies
                    .entry(run.run_file.clone())
                    .or_insert_with(|| dir.join(&run.run_file));
                shrunk.push(run.clone());
            }
        }
    }
    (results, shrunk, copies)
}

/// The detection tables' rows in catalogue order, each mutant once, and the run files they
/// name (relative path → source). A mutant in two folders' tables is an error naming both,
/// unless `force`: then the first folder's row is kept.
fn merged_mutants(
    shards: &Shards<'_>,
    force: bool,
) -> Result<(Vec<Detection>, BTreeMap<String, PathBuf>), ReportError> {
    let mut rows: Vec<(Detection, &PathBuf)> = Vec::new();
    let mut copies: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (dir, data) in shards {
        for detection in &data.mutants {
            if let Some((_, other)) = rows.iter().find(|(d, _)| d.mutant == detection.mutant) {
                if force {
                    continue;
                }
                return Err(ReportError::NotShards {
                    dir: (*dir).clone(),
                    message: format!(
                        "mutant `{}` is in its detection table and in {}'s; shard K/N detects only the mutants at \
                         positions i % N == K-1 (catalogue order), so each is in one shard (shards made before \
                         detection was sharded each hold the whole table: pass --force to keep the first folder's row)",
                        detection.mutant,
                        other.display()
                    ),
                });
            }
            if let Some(file) = &detection.run_file {
                copies.entry(file.clone()).or_insert_with(|| dir.join(file));
            }
            rows.push((detection.clone(), dir));
        }
    }
    let mut mutants: Vec<Detection> = rows.into_iter().map(|(d, _)| d).collect();
    catalogue_order(&mut mutants);
    Ok((mutants, copies))
}

/// Copies each run file (relative path → source) into `out`, unless it is already there.
fn copy_run_files(copies: &BTreeMap<String, PathBuf>, out: &Path) -> Result<(), ReportError> {
    for (relative, source) in copies {
        let target = out.join(relative);
        if same_file(source, &target) {
            continue;
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        copy_file(source, &target, false)?;
        // The counterexample's history and timelines go with it, where they were kept.
        let from = Counterexample::of(&source.to_string_lossy());
        let to = Counterexample::of(&target.to_string_lossy());
        for (from, to) in from.files().into_iter().zip(to.files()) {
            copy_file(Path::new(from), Path::new(to), true)?;
        }
    }
    Ok(())
}

/// Copies regular file `from` (within [`leasesim_history::input::RECORDS_LIMIT`]) over `to`, whole;
/// with `optional`, a missing `from` is skipped.
fn copy_file(from: &Path, to: &Path, optional: bool) -> Result<(), ReportError> {
    match leasesim_history::input::read_bytes(from, leasesim_history::input::RECORDS_LIMIT) {
        Ok(bytes) => Ok(leasesim_results::output::replace(to, &bytes)?),
        Err(e) if optional && e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn write_lines<T: Serialize>(path: &Path, items: &[T]) -> Result<(), ReportError> {
    let mut text = Vec::new();
    for item in items {
        // Our record types always serialise.
        serde_json::to_writer(&mut text, item).expect("records always serialise");
        let _ = text.write_all(b"\n");
    }
    Ok(leasesim_results::output::replace(path, &text)?)
}

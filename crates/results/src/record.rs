//! What a campaign keeps of each run: one [`RunRecord`] per (scenario, seed), appended to
//! `results.jsonl` as it finishes so that an interrupted campaign resumes where it stopped,
//! and the [`CampaignMeta`] every report carries (docs/campaigns.md).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use leasesim_check::CheckVerdict;
use leasesim_check::invariants::{Evidence, Violation};
use leasesim_check::linearizability::LinEvidence;
use leasesim_history::catalogue::Check;
use leasesim_history::exit::Exit;

/// Schema version of `results.jsonl` lines and `summary.json`: 2 since a violation's
/// evidence is data ([`EvidenceRecord`], [`ViolationRecord::linearization`]).
pub const RECORD_VERSION: u32 = 2;

/// The schema versions a report reads: version 1 kept each piece of evidence as a line of
/// prose ([`EvidenceRecord::Written`]).
pub const READ_VERSIONS: std::ops::RangeInclusive<u32> = 1..=RECORD_VERSION;

/// How one run ended, judged against its scenario's expectations.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every check passed (or only violations the scenario expects).
    Clean,
    /// A safety invariant or a linearizability check the scenario expects to hold failed.
    Violation,
    /// LIVE failed and nothing else did.
    Liveness,
    /// A search ran out of budget; nothing was violated.
    Inconclusive,
    /// The run hung, panicked or could not run (the error says which, with the seed).
    HarnessError,
}

impl RunStatus {
    /// Every status, in report order.
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Clean,
        RunStatus::Violation,
        RunStatus::Liveness,
        RunStatus::Inconclusive,
        RunStatus::HarnessError,
    ];

    /// The exit code of docs/exit-codes.md, that this status stands for.
    pub fn exit_code(self) -> Exit {
        match self {
            RunStatus::Clean => Exit::Clean,
            RunStatus::Violation => Exit::SafetyViolation,
            RunStatus::Liveness => Exit::LivenessViolation,
            RunStatus::Inconclusive => Exit::Inconclusive,
            RunStatus::HarnessError => Exit::HarnessError,
        }
    }
}

/// One violation as a report shows it: data, the sentences rendered from it
/// (docs/campaigns.md#evidence-is-data).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ViolationRecord {
    /// What is wrong, in plain terms.
    pub message: String,
    /// The history lines that prove it (an op, a ledger record, a decision…).
    pub evidence: Vec<EvidenceRecord>,
    /// A linearizability check's explanation, with the op ids it names (absent in JSON for
    /// an invariant's violation, and in files of version 1, which kept it as evidence lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearization: Option<Box<LinEvidence>>,
}

impl ViolationRecord {
    /// The violation's evidence as lines of prose, as junit.xml lists them: a linearizability
    /// explanation's lines, then each piece of evidence.
    pub fn evidence_lines(&self) -> Vec<String> {
        let mut lines = self
            .linearization
            .as_ref()
            .map_or_else(Vec::new, |lin| lin.lines());
        lines.extend(self.evidence.iter().map(ToString::to_string));
        lines
    }

    /// The pieces of evidence a checker found (not the prose of a version 1 file).
    pub fn found(&self) -> impl Iterator<Item = &Evidence> {
        self.evidence.iter().filter_map(|e| match e {
            EvidenceRecord::Found(evidence) => Some(evidence),
            EvidenceRecord::Written(_) => None,
        })
    }
}

impl From<&Violation> for ViolationRecord {
    /// An invariant's violation: its message and evidence.
    fn from(violation: &Violation) -> Self {
        ViolationRecord {
            message: violation.message.clone(),
            evidence: violation.evidence.iter().cloned().map(Into::into).collect(),
            linearization: None,
        }
    }
}

/// One piece of a violation's evidence in `results.jsonl`, `shrunk.jsonl` and
/// `mutants.jsonl`: the tagged data a checker found (`{"op":12}`), or, read from a file of
/// version 1, the line of prose it kept (`"op 12"`), shown as written and highlighting
/// nothing on a timeline.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EvidenceRecord {
    /// Found by a checker: its `Display` is the sentence.
    Found(Evidence),
    /// A line of prose from a file of version 1.
    Written(String),
}

impl From<Evidence> for EvidenceRecord {
    fn from(evidence: Evidence) -> Self {
        EvidenceRecord::Found(evidence)
    }
}

impl fmt::Display for EvidenceRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvidenceRecord::Found(evidence) => evidence.fmt(f),
            EvidenceRecord::Written(line) => f.write_str(line),
        }
    }
}

/// One check (an invariant or a linearizability check) over one run.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CheckRecord {
    /// The check (`TOKEN` … `LIVE`, `LIN-LEASE`, `LIN-LEDGER` in JSON).
    pub name: Check,
    /// Individual checks made (decisions, records, validity lines…; operations for a
    /// linearizability check).
    pub checks: u64,
    /// Whether the scenario expects this check to be violated (a mutant's scenario).
    pub expected_violation: bool,
    /// `pass`, `fail`, `not-judged` (nothing in the history for it to judge) or `unknown`.
    pub verdict: CheckVerdict,
    /// Why it judged nothing (`no decision lines`), when `verdict` is `not-judged`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
    /// The violations found (empty when it passed).
    pub violations: Vec<ViolationRecord>,
    /// What the check saw and classed as expected, not violated (SIGNAL's unfenced
    /// overlaps, docs/checks.md#signal); left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<ViolationRecord>,
}

/// One finished run: a line of `results.jsonl`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    /// Schema version ([`RECORD_VERSION`]).
    pub v: u32,
    /// The scenario's name (its file stem).
    pub scenario: String,
    /// The run's master seed.
    pub seed: u64,
    /// How the run ended.
    pub status: RunStatus,
    /// The checks violated against the scenario's expectations, in report order.
    pub unexpected: Vec<Check>,
    /// Every check, in report order (empty after a harness error).
    pub checks: Vec<CheckRecord>,
    /// Coverage events reached and how often (event name → count).
    pub coverage: BTreeMap<String, u64>,
    /// The swarm options drawn for this seed (`null` for an explicit schedule).
    pub drawn: serde_json::Value,
    /// Faults in the run's schedule.
    pub faults: usize,
    /// Operations in the history.
    pub operations: usize,
    /// Wall-clock time of the run and its checks, ms (not deterministic; not in any hash).
    pub wall_ms: u64,
    /// The harness error, when `status` is `harness-error`.
    pub error: Option<String>,
    /// The command that reproduces the run.
    pub replay: String,
}

impl RunRecord {
    /// The record of a run that never got a verdict: `harness-error`, nothing judged, `error`
    /// prefixed with the seed (`seed 7: …`).
    pub fn harness_error(scenario: &str, seed: u64, error: &str, replay: String) -> Self {
        RunRecord {
            v: RECORD_VERSION,
            scenario: scenario.to_owned(),
            seed,
            status: RunStatus::HarnessError,
            unexpected: Vec::new(),
            checks: Vec::new(),
            coverage: BTreeMap::new(),
            drawn: serde_json::Value::Null,
            faults: 0,
            operations: 0,
            wall_ms: 0,
            error: Some(format!("seed {seed}: {error}")),
            replay,
        }
    }
}

/// A failing run reduced by the shrinker.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct ShrunkRun {
    /// The scenario.
    pub scenario: String,
    /// The seed of the original failing run.
    pub seed: u64,
    /// The check it still violates (the one the shrinker kept failing).
    pub check: Check,
    /// The minimal run file, relative to the report folder.
    pub run_file: String,
    /// The command that replays the minimal run.
    pub replay: String,
    /// Faults in the original and in the minimal run.
    pub faults: (usize, usize),
    /// Operations in the original and in the minimal run's histories.
    pub operations: (usize, usize),
    /// Runs the shrinker executed.
    pub attempts: u32,
    /// The violations of `check` in the minimal run.
    pub violations: Vec<ViolationRecord>,
    /// A mermaid `sequenceDiagram` of the minimal run's counterexample.
    pub sequence_diagram: String,
}

fn default_binary() -> String {
    "leasesim".to_owned()
}

/// What identifies a campaign's results: printed on every report.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct CampaignMeta {
    /// Schema version ([`RECORD_VERSION`]).
    pub v: u32,
    /// The seeds, as given (`0..200`) or as reached within a budget.
    pub seeds: String,
    /// The scenarios' folder.
    pub sims: String,
    /// The scenarios run, by name, in order.
    pub scenarios: Vec<String>,
    /// `K/N` when this campaign is one shard of N.
    pub shard: Option<String>,
    /// Whether this is a `report merge` of shards: the folder then stands for the whole
    /// campaign, and a shard not merged is missing (absent in JSON when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merged: bool,
    /// The mutant planted, if any.
    pub mutant: Option<String>,
    /// The backend every scenario ran on (`campaign --backend`), when one was given in place
    /// of the scenarios' own (absent in JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The binary that ran the campaign and reruns its runs: `leasesim`, or `leasesim-targets`
    /// for target backends (docs/targets.md#the-targets-binary; `leasesim` in files written
    /// before it was kept).
    #[serde(default = "default_binary")]
    pub binary: String,
    /// `git rev-parse HEAD` of the build's tree (`unknown` outside a git checkout).
    pub git_commit: String,
    /// A hash of every scenario file's bytes and the campaign options (hex).
    pub config_hash: String,
    /// A hash of `Cargo.lock` (hex): turmoil's RNG is only portable within one lock.
    pub cargo_lock_hash: String,
}

impl CampaignMeta {
    /// The command that reruns one run of the campaign, a scenario and a seed left as
    /// placeholders: `BINARY run --scenario SIMS/<scenario>.toml --seed <seed>` with the
    /// campaign's `--backend` and `--mutant`.
    pub fn run_command(&self) -> String {
        let mut command = format!(
            "{} run --scenario {}/<scenario>.toml --seed <seed>",
            self.binary, self.sims
        );
        if let Some(backend) = &self.backend {
            command += &format!(" --backend {backend}");
        }
        if let Some(mutant) = &self.mutant {
            command += &format!(" --mutant {mutant}");
        }
        command
    }
}

/// One mutant's detection by a `--mutants` campaign: a line of `mutants.jsonl`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Detection {
    /// The mutant's name.
    pub mutant: String,
    /// What is wrong, in one line.
    pub about: String,
    /// Whether it was killed.
    pub killed: bool,
    /// What killed it: `EXCL in f6-late-release (seed 1)`, `conformance rule …`; or why it
    /// could not be checked here (a loom suite, which needs its own build), or `survived`.
    pub killed_by: String,
    /// Seeds tried until the first detection (1 = the first seed), for a campaign kill.
    pub seeds_to_detection: Option<u64>,
    /// Runs made until the first detection, for a campaign kill.
    pub runs_to_detection: Option<u64>,
    /// Wall-clock time until the first detection, ms (not deterministic).
    pub wall_ms_to_detection: Option<u64>,
    /// The shrunk counterexample: (faults, operations) of the minimal run, for a campaign kill.
    pub shrunk: Option<(usize, usize)>,
    /// The minimal run file, relative to the report folder, for a campaign kill.
    pub run_file: Option<String>,
    /// The check the minimal run still violates, for a campaign kill (absent in JSON
    /// otherwise, and in rows written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
    /// That check's violations in the minimal run (message and evidence; a linearizability
    /// check's explanation), for a campaign kill that was shrunk (absent in JSON when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ViolationRecord>,
    /// The command that reruns the detecting run with the mutant planted (`leasesim run
    /// --scenario sims/f6-late-release.toml --seed 0 --mutant release-by-session-only`, as a
    /// campaign run's own replay command is formed), for a campaign kill (absent in JSON
    /// otherwise, and in rows written before it was kept). The minimal run file plants the
    /// mutant too: `leasesim replay` of it reproduces the shrunk counterexample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

impl Detection {
    /// The row of a mutant not detected (yet): not killed, `killed_by` empty, nothing
    /// measured, shrunk or replayed.
    pub fn undetected(mutant: &str, about: &str) -> Detection {
        Detection {
            mutant: mutant.to_owned(),
            about: about.to_owned(),
            killed: false,
            killed_by: String::new(),
            seeds_to_detection: None,
            runs_to_detection: None,
            wall_ms_to_detection: None,
            shrunk: None,
            run_file: None,
            check: None,
            violations: Vec::new(),
            replay: None,
        }
    }
}

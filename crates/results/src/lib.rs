//! `leasesim-results`: what a campaign keeps of its runs and what a report renders
//! (docs/campaigns.md). leasesim's campaign writes them; `leasesim-report` reads them and
//! knows nothing of the campaign (docs/architecture.md#dependency-rules).
//!
//! - [`record`] — one run's record (`results.jsonl`), shrunk runs (`shrunk.jsonl`), the
//!   campaign's identity, the mutant detection table (`mutants.jsonl`).
//! - [`plan`] — which runs a campaign plans: seeds × scenarios, shards; whether a set of
//!   records is exactly that plan.
//! - [`coverage`] — the catalogue of coverage events ("sometimes" a campaign must reach).
//! - [`output`] — writing outputs: the output folder's lock, whole-file replacement, stale
//!   outputs removed, an input never taken as an output (docs/files.md).

pub mod coverage;
pub mod output;
pub mod plan;
pub mod record;

pub use coverage::CoverageEvent;

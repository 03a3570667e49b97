//! Results: what a campaign keeps of its runs and what a report renders (docs/campaigns.md).
//! `campaign/` writes them; `report/` reads them and never imports
//! `campaign/` (docs/architecture.md#dependency-rules).
//!
//! - [`record`] — one run's record (`results.jsonl`), shrunk runs (`shrunk.jsonl`), the
//!   campaign's identity, the mutant detection table (`mutants.jsonl`).
//! - [`plan`] — which runs a campaign plans: seeds × scenarios, shards; whether a set of
//!   records is exactly that plan.
//! - [`coverage`] — the catalogue of coverage events ("sometimes" a campaign must reach).

pub mod coverage;
pub mod output;
pub mod plan;
pub mod record;

pub use coverage::CoverageEvent;

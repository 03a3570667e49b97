//! Which runs a campaign makes: seeds × scenarios, shards, resume. The plan lives in
//! [`crate::results::plan`] because reports judge a campaign's completeness against it
//! (and `report/` never imports `campaign/`).

pub use crate::results::plan::{RunKey, SeedPlan, Shard, runs};

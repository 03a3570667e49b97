//! Which runs a campaign makes: seeds (a range or a wall-clock budget) × scenarios, cut into
//! shards, minus the runs an interrupted campaign already finished; and, read back from a
//! `campaign.json` ([`CampaignPlan`]), whether a set of records is exactly that plan.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::record::CampaignMeta;

/// The seeds of a campaign.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SeedPlan {
    /// Seeds `start..end` (end excluded), each run against every scenario.
    Range {
        /// First seed.
        start: u64,
        /// One past the last seed.
        end: u64,
    },
    /// Seeds from 0 upwards, each against every scenario, until this much wall-clock time has
    /// passed (runs already started finish).
    Budget(Duration),
}

impl SeedPlan {
    /// The seed at `index` in the plan, or `None` past a range's end.
    pub fn seed(&self, index: u64) -> Option<u64> {
        match *self {
            SeedPlan::Range { start, end } => start.checked_add(index).filter(|s| *s < end),
            SeedPlan::Budget(_) => Some(index),
        }
    }

    /// The wall-clock budget, if the plan has one.
    pub fn budget(&self) -> Option<Duration> {
        match *self {
            SeedPlan::Range { .. } => None,
            SeedPlan::Budget(budget) => Some(budget),
        }
    }

    /// How many seeds the plan has (`None` for a budget).
    pub fn len(&self) -> Option<u64> {
        match *self {
            SeedPlan::Range { start, end } => Some(end.saturating_sub(start)),
            SeedPlan::Budget(_) => None,
        }
    }

    /// Whether a range plan has no seed.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}

impl fmt::Display for SeedPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeedPlan::Range { start, end } => write!(f, "{start}..{end}"),
            SeedPlan::Budget(budget) => {
                write!(f, "budget {}", humantime::format_duration(*budget))
            }
        }
    }
}

/// Parses `A..B` (seeds A to B−1) or a single seed `N` (`N..N+1`).
impl FromStr for SeedPlan {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = |part: &str| {
            part.trim().parse::<u64>().map_err(|_| {
                format!(
                    "`{text}` is not a seed range: expected A..B with whole numbers, e.g. 0..100"
                )
            })
        };
        let (start, end) = match text.split_once("..") {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let seed = number(text)?;
                (seed, seed.saturating_add(1))
            }
        };
        if end <= start {
            return Err(format!(
                "`{text}` has no seeds: the end of A..B is excluded, so B must be greater than A"
            ));
        }
        Ok(SeedPlan::Range { start, end })
    }
}

/// One shard of a campaign split across machines: `K/N` runs every N-th run starting at the
/// K-th (1-based), so N shards together make exactly the whole campaign.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Shard {
    /// This shard, 1..=of.
    pub index: u32,
    /// How many shards.
    pub of: u32,
}

impl Shard {
    /// Whether the run at `position` (its place in the campaign's run order) is this shard's.
    pub fn owns(&self, position: u64) -> bool {
        position % u64::from(self.of) == u64::from(self.index - 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

/// Parses `K/N` with 1 ≤ K ≤ N.
impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("`{text}` is not a shard: expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let of: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || of == 0 || index > of {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }
}

/// One run of a campaign: a scenario (by its index in the campaign's sorted list) and a seed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct RunKey {
    /// The seed.
    pub seed: u64,
    /// Index into the campaign's scenarios.
    pub scenario: usize,
}

/// The runs of a campaign in order (seed-major: every scenario for seed 0, then seed 1…),
/// keeping this shard's and skipping those already `done` (by scenario index and seed).
///
/// A budget plan yields seeds without end; the caller stops taking when time is up.
pub fn runs(
    plan: SeedPlan,
    scenarios: usize,
    shard: Option<Shard>,
    done: BTreeSet<(usize, u64)>,
) -> impl Iterator<Item = RunKey> {
    (0u64..)
        .map_while(move |index| plan.seed(index).filter(|_| scenarios > 0))
        .flat_map(move |seed| (0..scenarios).map(move |scenario| RunKey { seed, scenario }))
        .enumerate()
        .filter(move |(position, _)| shard.is_none_or(|s| s.owns(*position as u64)))
        .map(|(_, key)| key)
        .filter(move |key| !done.contains(&(key.scenario, key.seed)))
}

/// The number of runs at positions `0..total` that `shard` owns.
pub fn owned_by(total: u128, shard: Shard) -> u128 {
    let first = u128::from(shard.index - 1);
    if total <= first {
        0
    } else {
        (total - first).div_ceil(u128::from(shard.of))
    }
}

/// The seeds of a campaign as its `campaign.json` records them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PlannedSeeds {
    /// `start..end`: the runs are known in advance.
    Range(u64, u64),
    /// A wall-clock budget: seeds 0, 1, 2… until time ran out, so no run count is planned.
    Budget,
    /// Seeds no plan can be read from (a `--force` merge of different seeds, `a+b`).
    Unknown(String),
}

/// A campaign's plan read back from its [`CampaignMeta`]: which (scenario, seed) runs it is
/// made of, so that a report can say whether its records are exactly those.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CampaignPlan {
    /// The seeds.
    pub seeds: PlannedSeeds,
    /// The scenarios, in campaign order.
    pub scenarios: Vec<String>,
    /// The shards the folder holds (empty: an unsharded campaign).
    pub shards: Vec<Shard>,
    /// Whether the folder stands for the whole campaign (a merge of its shards), whatever
    /// shards it holds.
    pub whole: bool,
}

/// Missing runs listed at most by [`CampaignPlan::missing`].
pub const MAX_MISSING_LISTED: usize = 20;

/// Planned runs above which [`CampaignPlan::missing`] only counts (never lists) them.
const MAX_PLANNED_LISTED: u128 = 10_000_000;

impl CampaignPlan {
    /// The plan of `meta`: its seeds, scenarios and shard (`K/N`, or `K1/N+K2/N…` for a
    /// merge).
    ///
    /// # Errors
    /// A message naming the field when the seeds or the shard cannot be a campaign's (a
    /// shard `7/3`, shards of different N, a shard listed twice).
    pub fn of(meta: &CampaignMeta) -> Result<Self, String> {
        let seeds = if meta.seeds.starts_with("budget ") {
            PlannedSeeds::Budget
        } else if meta.seeds.contains('+') {
            PlannedSeeds::Unknown(meta.seeds.clone())
        } else {
            match meta.seeds.parse::<SeedPlan>() {
                Ok(SeedPlan::Range { start, end }) => PlannedSeeds::Range(start, end),
                Ok(SeedPlan::Budget(_)) => PlannedSeeds::Budget,
                Err(e) => return Err(format!("seeds: {e}")),
            }
        };
        let shards = match &meta.shard {
            None => Vec::new(),
            Some(text) => parse_shards(text)?,
        };
        Ok(CampaignPlan {
            seeds,
            scenarios: meta.scenarios.clone(),
            whole: meta.merged || shards.len() > 1,
            shards,
        })
    }

    /// The run's position in the campaign's run order (seed-major), if the campaign has
    /// that scenario and that seed.
    fn position(&self, scenario: &str, seed: u64) -> Option<u128> {
        let index = self.scenarios.iter().position(|s| s == scenario)?;
        let offset = match self.seeds {
            PlannedSeeds::Range(start, end) => {
                (start..end).contains(&seed).then(|| seed - start)?
            }
            PlannedSeeds::Budget | PlannedSeeds::Unknown(_) => seed,
        };
        Some(u128::from(offset) * self.scenarios.len() as u128 + index as u128)
    }

    /// Whether (scenario, seed) is one of the plan's runs (in its seeds, its scenarios and,
    /// unless the folder is the whole campaign, its shards).
    pub fn owns(&self, scenario: &str, seed: u64) -> bool {
        let Some(position) = self.position(scenario, seed) else {
            return false;
        };
        self.whole
            || self.shards.is_empty()
            || self
                .shards
                .iter()
                .any(|s| position % u128::from(s.of) == u128::from(s.index - 1))
    }

    /// How many runs the plan has (`None` without a seed range).
    pub fn planned(&self) -> Option<u128> {
        let PlannedSeeds::Range(start, end) = self.seeds else {
            return None;
        };
        let total = u128::from(end - start) * self.scenarios.len() as u128;
        if self.whole || self.shards.is_empty() {
            return Some(total);
        }
        Some(self.shards.iter().map(|s| owned_by(total, *s)).sum())
    }

    /// The shards of N a whole-campaign folder does not hold.
    pub fn missing_shards(&self) -> Vec<Shard> {
        let Some(of) = self.shards.first().map(|s| s.of) else {
            return Vec::new();
        };
        if !self.whole {
            return Vec::new();
        }
        (1..=of)
            .map(|index| Shard { index, of })
            .filter(|s| !self.shards.contains(s))
            .collect()
    }

    /// The first [`MAX_MISSING_LISTED`] planned runs (scenario, seed) that `present` lacks,
    /// in run order; empty when the plan is too large to list (count them instead).
    pub fn missing(&self, present: &BTreeSet<(String, u64)>) -> Vec<(String, u64)> {
        let (PlannedSeeds::Range(start, end), Some(planned)) = (&self.seeds, self.planned()) else {
            return Vec::new();
        };
        if planned > MAX_PLANNED_LISTED {
            return Vec::new();
        }
        let plan = SeedPlan::Range {
            start: *start,
            end: *end,
        };
        let mut missing = Vec::new();
        for key in runs(plan, self.scenarios.len(), None, BTreeSet::new()) {
            let name = &self.scenarios[key.scenario];
            if self.owns(name, key.seed) && !present.contains(&(name.clone(), key.seed)) {
                missing.push((name.clone(), key.seed));
                if missing.len() == MAX_MISSING_LISTED {
                    break;
                }
            }
        }
        missing
    }
}

/// `K/N` or `K1/N+K2/N…`: distinct shards of one N.
fn parse_shards(text: &str) -> Result<Vec<Shard>, String> {
    let mut shards: Vec<Shard> = Vec::new();
    for part in text.split('+') {
        let shard: Shard = part.parse().map_err(|e| format!("shard: {e}"))?;
        if let Some(first) = shards.first()
            && first.of != shard.of
        {
            return Err(format!(
                "shard `{text}`: shards {first} and {shard} are not shards of one campaign"
            ));
        }
        if shards.contains(&shard) {
            return Err(format!("shard `{text}`: shard {shard} is listed twice"));
        }
        shards.push(shard);
    }
    Ok(shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_ranges_parse_with_the_end_excluded() {
        assert_eq!(
            "3..7".parse::<SeedPlan>(),
            Ok(SeedPlan::Range { start: 3, end: 7 })
        );
        assert_eq!(
            "9".parse::<SeedPlan>(),
            Ok(SeedPlan::Range { start: 9, end: 10 })
        );
        assert!("7..7".parse::<SeedPlan>().unwrap_err().contains("no seeds"));
        assert!("a..b".parse::<SeedPlan>().unwrap_err().contains("0..100"));
    }

    #[test]
    fn shards_parse_one_based() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, of: 4 }));
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
        assert!("4".parse::<Shard>().is_err());
    }

    #[test]
    fn runs_are_seed_major() {
        let plan = SeedPlan::Range { start: 10, end: 12 };
        let keys: Vec<(u64, usize)> = runs(plan, 2, None, BTreeSet::new())
            .map(|k| (k.seed, k.scenario))
            .collect();
        assert_eq!(keys, vec![(10, 0), (10, 1), (11, 0), (11, 1)]);
    }

    #[test]
    fn shards_partition_the_campaign_exactly() {
        let plan = SeedPlan::Range { start: 0, end: 7 };
        let all: Vec<RunKey> = runs(plan, 3, None, BTreeSet::new()).collect();
        let mut union: Vec<RunKey> = (1..=4)
            .flat_map(|index| {
                runs(plan, 3, Some(Shard { index, of: 4 }), BTreeSet::new()).collect::<Vec<_>>()
            })
            .collect();
        union.sort();
        let mut expected = all.clone();
        expected.sort();
        assert_eq!(union, expected);
        assert_eq!(all.len(), 21);
    }

    #[test]
    fn finished_runs_are_skipped_on_resume() {
        let plan = SeedPlan::Range { start: 0, end: 2 };
        let done = BTreeSet::from([(0, 0), (1, 1)]);
        let keys: Vec<(u64, usize)> = runs(plan, 2, None, done)
            .map(|k| (k.seed, k.scenario))
            .collect();
        assert_eq!(keys, vec![(0, 1), (1, 0)]);
    }

    #[test]
    fn a_budget_plan_never_runs_out_of_seeds() {
        let keys: Vec<RunKey> = runs(
            SeedPlan::Budget(Duration::from_secs(1)),
            1,
            None,
            BTreeSet::new(),
        )
        .take(1000)
        .collect();
        assert_eq!(keys.len(), 1000);
        assert_eq!(keys[999].seed, 999);
    }

    fn meta(seeds: &str, shard: Option<&str>, merged: bool) -> CampaignMeta {
        CampaignMeta {
            v: 1,
            seeds: seeds.into(),
            sims: "sims".into(),
            scenarios: vec!["a".into(), "b".into()],
            shard: shard.map(str::to_owned),
            merged,
            mutant: None,
            backend: None,
            binary: "leasesim".into(),
            git_commit: "c".into(),
            config_hash: "h".into(),
            cargo_lock_hash: "l".into(),
        }
    }

    #[test]
    fn a_plan_read_back_knows_its_runs_and_shards() {
        let plan = CampaignPlan::of(&meta("0..3", Some("2/4"), false)).unwrap();
        // Positions 1 and 5 of 6: (b, 0) and (b, 2).
        assert_eq!(plan.planned(), Some(2));
        assert!(plan.owns("b", 0) && plan.owns("b", 2));
        assert!(!plan.owns("a", 0) && !plan.owns("b", 3) && !plan.owns("c", 0));
        let present = BTreeSet::from([("b".to_owned(), 0)]);
        assert_eq!(plan.missing(&present), vec![("b".to_owned(), 2)]);

        let merged = CampaignPlan::of(&meta("0..3", Some("1/3+3/3"), false)).unwrap();
        assert_eq!(merged.planned(), Some(6));
        assert_eq!(merged.missing_shards(), vec![Shard { index: 2, of: 3 }]);
        let one = CampaignPlan::of(&meta("0..3", Some("1/3"), true)).unwrap();
        assert_eq!(one.missing_shards().len(), 2);

        for (shard, error) in [
            ("7/3", "not a shard"),
            ("1/3+1/2", "not shards of one campaign"),
            ("1/3+1/3", "listed twice"),
        ] {
            let message = CampaignPlan::of(&meta("0..3", Some(shard), false)).unwrap_err();
            assert!(message.contains(error), "{shard}: {message}");
        }
        let budget = CampaignPlan::of(&meta("budget 50s", None, false)).unwrap();
        assert_eq!(budget.planned(), None);
        assert!(budget.owns("a", 1_000));
    }

    #[test]
    fn shards_own_their_share_of_any_total() {
        for total in 0..20u128 {
            for of in 1..6 {
                let sum: u128 = (1..=of)
                    .map(|index| owned_by(total, Shard { index, of }))
                    .sum();
                assert_eq!(sum, total);
            }
        }
        assert_eq!(owned_by(20, Shard { index: 30, of: 30 }), 0);
    }

    #[test]
    fn no_scenarios_means_no_runs() {
        let plan = SeedPlan::Budget(Duration::from_secs(1));
        assert_eq!(runs(plan, 0, None, BTreeSet::new()).count(), 0);
    }
}

//! Which runs a campaign makes: seeds (a range or a wall-clock budget) × scenarios, cut into
//! shards, minus the runs an interrupted campaign already finished.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

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

    #[test]
    fn no_scenarios_means_no_runs() {
        let plan = SeedPlan::Budget(Duration::from_secs(1));
        assert_eq!(runs(plan, 0, None, BTreeSet::new()).count(), 0);
    }
}

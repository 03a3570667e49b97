//! STOP — at each validity check, a replica never decides its lease is valid after it observed
//! loss or after `valid_until`. Every decision to use the lease writes a check: before an
//! append, before each try at a journal's fence (a journal open), before a clean-up append;
//! each is judged alike, so a holder that opens its journal past its own deadline is a
//! violation even when the ledger's fence refuses what it sends.
//!
//! `valid_until` is recomputed from the op lines, never taken from the validity line:
//! `invoke_local_us` of the replica's last successful `lease_acquire` / `lease_renew` for that
//! session granting that epoch (token), completed by the check (true time), + the `ttl_us` in
//! its `granted` result − the skew margin of that TTL ([`Margin`]: the fraction the config's
//! `skew_margin_us` is of its `ttl_us`). The check is valid only while its local reading is
//! below that (`now >= valid_until` is lost, as in the client).
//!
//! Observed loss, for that epoch: a renew of it answered `held`, an acknowledged release of
//! it, or a journal call of a journal opened under it answered `lease_lost`. Such a loss
//! counts from its completion (a check in the same µs is given the benefit of the doubt)
//! until a successful acquire or renew granting the epoch again is invoked at or after it.

use leasesim_history::time::seconds_us;
use std::collections::BTreeMap;

use super::{Check, Evidence, InvariantReport, who};
use leasesim_history::{
    ConfigLine, HistRecord, HistWriterId, History, Op, OpLine, OpResult, Outcome, ValidityLine,
};

/// Checks STOP over `history`: collect each replica's grants and observed losses from the op
/// lines, then judge every validity check against them.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Stop);
    let margin = match history.config() {
        Ok(config) => Margin::new(config),
        Err(error) => {
            if history.validity_checks().next().is_some() {
                report.violation(format!("cannot recompute valid_until: {error}"), Vec::new());
            }
            return report;
        }
    };
    let journal_epoch = journal_epochs(history);
    let leases = Leases::collect(history, &journal_epoch);
    for check in history.validity_checks() {
        report.checks += 1;
        judge(&mut report, &leases, check, margin);
    }
    report
}

/// Each journal's epoch, from its opening and, failing that, from its fence in the final
/// ledger (the first in session order): a journal call answered `lease_lost` observed the
/// loss of that epoch.
fn journal_epochs(history: &History) -> BTreeMap<HistWriterId, u64> {
    let mut journal_epoch: BTreeMap<HistWriterId, u64> = BTreeMap::new();
    for op in history.ops() {
        if let (Op::JournalOpen { epoch }, Some(OpResult::Opened { writer_id, .. })) =
            (&op.op, &op.result)
        {
            journal_epoch.insert(writer_id.clone(), *epoch);
        }
    }
    for records in history.final_ledger().into_values() {
        for (_, record) in records {
            if let HistRecord::Fence {
                epoch, writer_id, ..
            } = record
            {
                journal_epoch.entry(writer_id).or_insert(epoch);
            }
        }
    }
    journal_epoch
}

/// The grants and the observed losses of each (process, session, epoch), in history order.
struct Leases<'h> {
    /// Completed successful acquires and renews, with the TTL each granted, µs.
    grants: Vec<(&'h OpLine, u64)>,
    /// Calls that observed the loss of a lease, with its epoch.
    losses: Vec<(&'h OpLine, u64)>,
}

impl<'h> Leases<'h> {
    fn collect(history: &'h History, journal_epoch: &BTreeMap<HistWriterId, u64>) -> Self {
        let mut leases = Leases {
            grants: Vec::new(),
            losses: Vec::new(),
        };
        for op in history.ops() {
            match (&op.op, op.outcome, &op.result) {
                (
                    Op::LeaseAcquire { .. } | Op::LeaseRenew { .. },
                    Outcome::Ok,
                    Some(OpResult::Granted { ttl_us, .. }),
                ) if op.complete_us.is_some() => leases.grants.push((op, *ttl_us)),
                (Op::LeaseRenew { token, .. }, Outcome::Fail, Some(OpResult::Held { .. }))
                | (Op::LeaseRelease { token, .. }, Outcome::Ok, _) => {
                    leases.losses.push((op, *token))
                }
                (Op::JournalOpen { epoch }, _, Some(OpResult::LeaseLost { .. })) => {
                    leases.losses.push((op, *epoch))
                }
                (Op::JournalAppend { writer_id, .. }, _, Some(OpResult::LeaseLost { .. })) => {
                    if let Some(epoch) = journal_epoch.get(writer_id) {
                        leases.losses.push((op, *epoch));
                    }
                }
                _ => {}
            }
        }
        debug_assert!(
            leases.grants.iter().all(|(op, _)| op.complete_us.is_some()),
            "only completed grants set a deadline"
        );
        leases
    }

    /// The grant a check relies on: the checking process's last successful acquire or renew
    /// of that session granting the checked epoch (by local send time), completed by the
    /// check.
    fn last_grant(&self, check: &ValidityLine) -> Option<(&'h OpLine, u64)> {
        self.grants
            .iter()
            .filter(|(op, _)| {
                same_lease(op, check)
                    && grants_epoch(op, check.epoch)
                    && op.complete_us.is_some_and(|c| c <= check.at_us)
            })
            .max_by_key(|(op, _)| (op.invoke_local_us, op.id))
            .copied()
    }

    /// The latest loss of the checked epoch the process observed before the check and did not
    /// win back (by a grant of the epoch invoked at or after the loss, completed by the check).
    fn observed_loss(&self, check: &ValidityLine) -> Option<&'h OpLine> {
        self.losses
            .iter()
            .filter(|(op, epoch)| {
                same_lease(op, check)
                    && *epoch == check.epoch
                    && op.complete_us.is_some_and(|c| c < check.at_us)
            })
            .filter(|(loss, _)| !self.won_back(loss, check))
            .max_by_key(|(op, _)| op.complete_us)
            .map(|(op, _)| *op)
    }

    /// Whether a grant of the checked epoch was invoked at or after `loss` completed and
    /// completed by the check.
    fn won_back(&self, loss: &OpLine, check: &ValidityLine) -> bool {
        let lost_at = loss.complete_us.unwrap_or(u64::MAX);
        self.grants.iter().any(|(op, _)| {
            same_lease(op, check)
                && grants_epoch(op, check.epoch)
                && op.invoke_us >= lost_at
                && op.complete_us.is_some_and(|c| c <= check.at_us)
        })
    }
}

/// Whether `op` is by the checking process on the checked session.
fn same_lease(op: &OpLine, check: &ValidityLine) -> bool {
    op.process == check.process && op.session == check.session
}

/// Whether `op` was granted token `epoch`.
fn grants_epoch(op: &OpLine, epoch: u64) -> bool {
    matches!(op.result, Some(OpResult::Granted { token, .. }) if token == epoch)
}

/// The skew margin a holder subtracts from a grant (docs/contracts.md#client-side-validity):
/// the same fraction of the **granted** TTL as the config line's `skew_margin_us` is of its
/// `ttl_us`. The world and live mode always give their clients `SkewMargin::Percent`, a
/// fraction of whatever TTL a grant names, so a grant shorter than the configured TTL (a target
/// adapter's, granting what is left of a claim) has a proportionally shorter margin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Margin {
    /// The config line's margin, µs.
    skew_margin_us: u64,
    /// The config line's TTL it is a margin of, µs (0: the margin is taken as fixed).
    ttl_us: u64,
}

impl Margin {
    /// No margin at all: for a history without a config line.
    pub const NONE: Margin = Margin {
        skew_margin_us: 0,
        ttl_us: 0,
    };

    /// The margin rule of a run with `config`.
    pub fn new(config: &ConfigLine) -> Self {
        Margin {
            skew_margin_us: config.skew_margin_us,
            ttl_us: config.ttl_us,
        }
    }

    /// The margin of a grant of `granted_ttl_us`, µs, rounded down (a checker never holds a
    /// holder to a deadline earlier than its own); the config's fixed margin when its TTL is 0.
    pub fn of(self, granted_ttl_us: u64) -> u64 {
        if self.ttl_us == 0 {
            return self.skew_margin_us;
        }
        let scaled =
            u128::from(granted_ttl_us) * u128::from(self.skew_margin_us) / u128::from(self.ttl_us);
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }

    /// The client-side `valid_until` a successful acquire or renew `grant` of `ttl_us` gives
    /// its caller, on the caller's own clock: the local send time plus the granted TTL minus
    /// the margin of that TTL, µs. EXCL on the holders ([`super::holders`]) places the same
    /// deadline in true time; the timeline draws it.
    pub fn valid_until_local_us(self, grant: &OpLine, ttl_us: u64) -> u64 {
        grant
            .invoke_local_us
            .saturating_add(ttl_us)
            .saturating_sub(self.of(ttl_us))
    }
}

/// Judges one validity check: it needs a grant of its epoch, must come before that grant's
/// `valid_until`, and must not follow an observed loss.
fn judge(report: &mut InvariantReport, leases: &Leases, check: &ValidityLine, margin: Margin) {
    let checked = Evidence::Validity {
        process: check.process.clone(),
        session: check.session.clone(),
        at_local_us: check.at_local_us,
        at_us: check.at_us,
    };
    let Some((grant, ttl_us)) = leases.last_grant(check) else {
        report.violation(
            format!(
                "{}: {} judged its lease of epoch {} valid {} without a successful acquire or renew granting it",
                check.session,
                who(&check.process),
                check.epoch,
                check.purpose.describe()
            ),
            vec![checked],
        );
        return;
    };
    debug_assert!(
        grant.complete_us.is_some_and(|c| c <= check.at_us),
        "the grant a check relies on completed before it"
    );
    let valid_until = margin.valid_until_local_us(grant, ttl_us);
    if check.at_local_us >= valid_until {
        report.violation(
            format!(
                "{} on its clock ({} true time), at or after valid_until {}: its {} (op {}) was sent at {} on its clock, + TTL {} - skew margin {} (of that TTL)",
                judged_at(check, check.at_local_us),
                seconds_us(check.at_us),
                seconds_us(valid_until),
                grant.op.name().trim_start_matches("lease_"),
                grant.id,
                seconds_us(grant.invoke_local_us),
                seconds_us(ttl_us),
                seconds_us(margin.of(ttl_us))
            ),
            vec![Evidence::Op(grant.id), checked.clone()],
        );
    }
    if let Some(loss) = leases.observed_loss(check) {
        report.violation(
            format!(
                "{} after it observed its loss: its {} (op {}) completed at {}",
                judged_at(check, check.at_us),
                loss.op.name().trim_start_matches("lease_"),
                loss.id,
                seconds_us(loss.complete_us.unwrap_or_default())
            ),
            vec![Evidence::Op(loss.id), checked],
        );
    }
}

/// The start of both STOP messages ("s1: replica-1 judged its lease of epoch 2 valid to
/// append at 12.000 s"): `at_us` on whichever clock the rest of the message names.
fn judged_at(check: &ValidityLine, at_us: u64) -> String {
    format!(
        "{}: {} judged its lease of epoch {} valid {} at {}",
        check.session,
        who(&check.process),
        check.epoch,
        check.purpose.describe(),
        seconds_us(at_us)
    )
}

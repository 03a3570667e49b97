//! STOP — at each validity check, a replica never decides its lease is valid after it observed
//! loss or after `valid_until`.
//!
//! `valid_until` is recomputed from the op lines, never taken from the validity line:
//! `invoke_local_us` of the replica's last successful `lease_acquire` / `lease_renew` for that
//! session granting that epoch (token), completed by the check (true time), + the `ttl_us` in
//! its `granted` result − the config's `skew_margin_us`. The check is valid only while its
//! local reading is below that (`now >= valid_until` is lost, as in the client).
//!
//! Observed loss, for that epoch: a renew of it answered `held`, an acknowledged release of
//! it, or a journal call of a journal opened under it answered `lease_lost`. Such a loss
//! counts from its completion (a check in the same µs is given the benefit of the doubt)
//! until a successful acquire or renew granting the epoch again is invoked at or after it.

use std::collections::BTreeMap;

use super::{Check, Evidence, InvariantReport, who};
use crate::history::{HistRecord, HistWriterId, History, Op, OpLine, OpResult, Outcome};

/// Checks STOP over `history`.
pub fn check(history: &History) -> InvariantReport {
    let mut report = InvariantReport::new(Check::Stop);
    let skew_margin_us = match history.config() {
        Ok(config) => config.skew_margin_us,
        Err(error) => {
            if history.validity_checks().next().is_some() {
                report.violation(format!("cannot recompute valid_until: {error}"), Vec::new());
            }
            return report;
        }
    };
    // Each journal's epoch, from its opening and from its fence.
    let mut journal_epoch: BTreeMap<&HistWriterId, u64> = BTreeMap::new();
    for op in history.ops() {
        if let (Op::JournalOpen { epoch }, Some(OpResult::Opened { writer_id, .. })) =
            (&op.op, &op.result)
        {
            journal_epoch.insert(writer_id, *epoch);
        }
    }
    let ledger = history.final_ledger();
    for records in ledger.values() {
        for (_, record) in records {
            if let HistRecord::Fence {
                epoch, writer_id, ..
            } = record
            {
                journal_epoch.entry(writer_id).or_insert(*epoch);
            }
        }
    }
    // The grants and the losses of each (process, session, epoch).
    let mut grants: Vec<(&OpLine, u64)> = Vec::new(); // (op, ttl_us)
    let mut losses: Vec<(&OpLine, u64)> = Vec::new(); // (op, epoch)
    for op in history.ops() {
        match (&op.op, op.outcome, &op.result) {
            (
                Op::LeaseAcquire { .. } | Op::LeaseRenew { .. },
                Outcome::Ok,
                Some(OpResult::Granted { ttl_us, .. }),
            ) if op.complete_us.is_some() => grants.push((op, *ttl_us)),
            (Op::LeaseRenew { token, .. }, Outcome::Fail, Some(OpResult::Held { .. }))
            | (Op::LeaseRelease { token, .. }, Outcome::Ok, _) => losses.push((op, *token)),
            (Op::JournalOpen { epoch }, _, Some(OpResult::LeaseLost { .. })) => {
                losses.push((op, *epoch))
            }
            (Op::JournalAppend { writer_id, .. }, _, Some(OpResult::LeaseLost { .. })) => {
                if let Some(epoch) = journal_epoch.get(writer_id) {
                    losses.push((op, *epoch));
                }
            }
            _ => {}
        }
    }
    for check in history.validity_checks() {
        report.checks += 1;
        let same = |op: &OpLine| op.process == check.process && op.session == check.session;
        let granted_epoch = |op: &OpLine| matches!(op.result, Some(OpResult::Granted { token, .. }) if token == check.epoch);
        let checked = Evidence::Validity {
            process: check.process.clone(),
            session: check.session.clone(),
            at_local_us: check.at_local_us,
            at_us: check.at_us,
        };
        let last = grants
            .iter()
            .filter(|(op, _)| {
                same(op) && granted_epoch(op) && op.complete_us.is_some_and(|c| c <= check.at_us)
            })
            .max_by_key(|(op, _)| (op.invoke_local_us, op.id));
        let Some(&(grant, ttl_us)) = last else {
            report.violation(
                format!(
                    "{}: {} judged its lease of epoch {} valid without a successful acquire or renew granting it",
                    check.session,
                    who(&check.process),
                    check.epoch
                ),
                vec![checked],
            );
            continue;
        };
        let valid_until = (grant.invoke_local_us + ttl_us).saturating_sub(skew_margin_us);
        if check.at_local_us >= valid_until {
            report.violation(
                format!(
                    "{}: {} judged its lease of epoch {} valid at local {}us, at or after valid_until {}us (op {} invoked at local {}us + ttl {}us - skew margin {}us)",
                    check.session,
                    who(&check.process),
                    check.epoch,
                    check.at_local_us,
                    valid_until,
                    grant.id,
                    grant.invoke_local_us,
                    ttl_us,
                    skew_margin_us
                ),
                vec![Evidence::Op(grant.id), checked.clone()],
            );
        }
        let observed = losses
            .iter()
            .filter(|(op, epoch)| {
                same(op) && *epoch == check.epoch && op.complete_us.is_some_and(|c| c < check.at_us)
            })
            .filter(|(loss, _)| {
                let lost_at = loss.complete_us.unwrap_or(u64::MAX);
                !grants.iter().any(|(op, _)| {
                    same(op)
                        && granted_epoch(op)
                        && op.invoke_us >= lost_at
                        && op.complete_us.is_some_and(|c| c <= check.at_us)
                })
            })
            .max_by_key(|(op, _)| op.complete_us);
        if let Some((loss, _)) = observed {
            report.violation(
                format!(
                    "{}: {} judged its lease of epoch {} valid at {}us after it observed its loss (op {} {}, completed at {}us)",
                    check.session,
                    who(&check.process),
                    check.epoch,
                    check.at_us,
                    loss.id,
                    loss.op.name(),
                    loss.complete_us.unwrap_or_default()
                ),
                vec![Evidence::Op(loss.id), checked],
            );
        }
    }
    report
}

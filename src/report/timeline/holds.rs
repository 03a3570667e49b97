//! Lease holds and the holders' validity windows, from the `op` lines: each granted acquire
//! or renew (or, for KubeLease, each write that made the caller the holder) extends the hold
//! of its (process, session, token).
//!
//! - The **hold** runs from the first grant's completion to the authority's expiry of the
//!   last grant (`expiry_authority_us`, mapped to true time through the authority's clock
//!   segments; without an authority clock, completion + TTL), or to the holder's release if
//!   that comes first.
//! - The **validity window** is the holder's own view (DESIGN.md, "Client-side validity"):
//!   send time of the last acquire or renew on its own clock + TTL − skew margin, mapped to
//!   true time through its clock segments in its boot (its incarnation), cut at its release.

use std::collections::BTreeMap;

use svg::node::element::{Group, Rectangle, Text, Title};

use super::{CHAR_W, Scale, px};
use crate::history::{ClockMap, History, Op, OpResult, Outcome, Process};

/// Fill of a hold bar.
pub(super) const HOLD_FILL: &str = "#90caf9";
/// Outline of a validity window.
pub(super) const VALIDITY_STROKE: &str = "#0d47a1";

/// One lease held by one process.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) struct Hold {
    /// The lane: the holder's host.
    pub host: String,
    pub process: Process,
    pub session: String,
    pub token: u64,
    /// True time of the first grant's completion, µs.
    pub from_us: u64,
    /// True time the authority's hold ends, µs.
    pub until_us: u64,
    /// True time the holder's validity window ends, µs (`None`: its clock never reaches it).
    pub valid_until_us: Option<u64>,
}

/// Every hold of `history`, by (process, session, token).
pub(super) fn holds(history: &History) -> Vec<Hold> {
    let maps = history.clock_maps().unwrap_or_default();
    let authority = history.authority_host().and_then(|h| maps.get(h));
    let (ttl_us, skew_us) = history
        .config()
        .map_or((0, 0), |c| (c.ttl_us, c.skew_margin_us));
    let mut holds: BTreeMap<(Process, String, u64), Hold> = BTreeMap::new();
    for op in history.ops() {
        let Some((token, until_us)) = grant(op, authority, ttl_us) else {
            continue;
        };
        let own = maps.get(&op.process.replica);
        let valid_until_us = validity_end(op, own, ttl_us.saturating_sub(skew_us));
        let start = op.complete_us.unwrap_or(op.invoke_us);
        let key = (op.process.clone(), op.session.clone(), token);
        let hold = holds.entry(key).or_insert_with(|| Hold {
            host: op.process.replica.clone(),
            process: op.process.clone(),
            session: op.session.clone(),
            token,
            from_us: start,
            until_us,
            valid_until_us,
        });
        hold.from_us = hold.from_us.min(start);
        hold.until_us = hold.until_us.max(until_us);
        hold.valid_until_us = hold.valid_until_us.max(valid_until_us);
    }
    // A release by the holder ends both where it comes first.
    for op in history.ops() {
        let Op::LeaseRelease { token, .. } = &op.op else {
            continue;
        };
        if op.outcome != Outcome::Ok {
            continue;
        }
        let key = (op.process.clone(), op.session.clone(), *token);
        if let Some(hold) = holds.get_mut(&key)
            && op.invoke_us >= hold.from_us
        {
            let at = op.complete_us.unwrap_or(op.invoke_us);
            hold.until_us = hold.until_us.min(at);
            hold.valid_until_us = hold.valid_until_us.map(|v| v.min(op.invoke_us));
        }
    }
    holds.into_values().collect()
}

/// `op`'s token and the true time its grant expires, if it made the caller a holder.
fn grant(
    op: &crate::history::OpLine,
    authority: Option<&ClockMap>,
    ttl_us: u64,
) -> Option<(u64, u64)> {
    let done = op.complete_us.unwrap_or(op.invoke_us);
    match (&op.op, &op.result) {
        (
            Op::LeaseAcquire { .. } | Op::LeaseRenew { .. },
            Some(OpResult::Granted {
                token,
                expiry_authority_us,
                ttl_us,
            }),
        ) if op.outcome == Outcome::Ok => {
            let until = authority
                .and_then(|map| map.true_at(*expiry_authority_us))
                .unwrap_or(done + ttl_us);
            Some((*token, until))
        }
        (
            Op::KubeCreate { .. } | Op::KubeUpdate { .. },
            Some(OpResult::KubeObject {
                holder_identity,
                transitions,
                ..
            }),
        ) if op.outcome == Outcome::Ok && *holder_identity == op.process.to_string() => {
            Some((*transitions, done + ttl_us))
        }
        _ => None,
    }
}

/// True time the caller's validity from `op` ends: its send time on its own clock + `span`.
fn validity_end(op: &crate::history::OpLine, own: Option<&ClockMap>, span: u64) -> Option<u64> {
    let deadline = op.invoke_local_us.saturating_add(span);
    match own {
        Some(map) => map.true_at_in_boot(op.process.incarnation, deadline),
        None => Some(op.invoke_us.saturating_add(span)),
    }
}

/// A hold's bar (upper part of the lane) and its validity window (an outline below it).
pub(super) fn draw(hold: &Hold, top: f64, scale: &Scale) -> Group {
    let (x0, x1) = (
        scale.x(hold.from_us),
        scale.x(hold.until_us.max(hold.from_us)),
    );
    let valid_end = hold
        .valid_until_us
        .unwrap_or(scale.end_us)
        .max(hold.from_us);
    let xv = scale.x(valid_end);
    let label = format!("{} t{}", hold.session, hold.token);
    let valid_text = hold.valid_until_us.map_or_else(
        || "never (its clock stopped)".to_owned(),
        crate::time::seconds_us,
    );
    let mut group = Group::new()
        .set("class", "hold")
        .set("data-session", hold.session.as_str())
        .set("data-token", hold.token)
        .add(Title::new(format!(
            "{} holds {} token {} from {} until {} (authority); valid on its own clock until {}",
            hold.process,
            hold.session,
            hold.token,
            crate::time::seconds_us(hold.from_us),
            crate::time::seconds_us(hold.until_us),
            valid_text
        )))
        .add(
            Rectangle::new()
                .set("x", px(x0))
                .set("y", px(top + 4.0))
                .set("width", px((x1 - x0).max(1.0)))
                .set("height", 12)
                .set("fill", HOLD_FILL),
        )
        .add(
            Rectangle::new()
                .set("class", "validity")
                .set("x", px(x0))
                .set("y", px(top + 18.0))
                .set("width", px((xv - x0).max(1.0)))
                .set("height", 5)
                .set("fill", "none")
                .set("stroke", VALIDITY_STROKE)
                .set("stroke-width", 1),
        );
    if x1 - x0 >= CHAR_W * label.len() as f64 + 4.0 {
        group = group.add(
            Text::new(label)
                .set("x", px(x0 + 2.0))
                .set("y", px(top + 14.0))
                .set("font-size", 10),
        );
    }
    group
}

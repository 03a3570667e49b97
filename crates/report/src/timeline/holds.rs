//! Lease holds and the holders' validity windows.
//!
//! - The **hold**, for a backend with an authority clock: from the `op` lines, each granted
//!   acquire or renew extends the hold of its (process, session, token), from the first
//!   grant's completion to the authority's expiry of the last grant (`expiry_authority_us`,
//!   mapped to true time through the authority's clock segments), or to the holder's release
//!   if that comes first.
//! - For KubeLease (no authority clock; the API server's accepted `write` lines): a hold is
//!   one **reign** of a holder over a session's Lease object, exact from the writes: from
//!   the write that made it the holder (`holderIdentity`, `leaseTransitions` as the token)
//!   to the write that ended it (another holder's, a release leaving `holderIdentity`
//!   empty, a delete) or, when none came, its last renewing write + TTL (when a candidate
//!   may take over). A holder that was deleted and re-created with the same token reigns
//!   twice, two bars. A history with no `write` lines falls back to the `op` lines (each
//!   granted acquire or renew: completion + TTL).
//! - The **validity window** is the holder's own view (docs/contracts.md#client-side-validity):
//!   send time of the last acquire or renew on its own clock + the TTL it granted − the skew
//!   margin of that TTL (the deadline STOP and EXCL recompute, [`Margin`]), mapped to true time
//!   through its clock segments in its boot (its incarnation), cut at its release.

use std::collections::BTreeMap;

use svg::node::element::{Group, Rectangle, Text, Title};

use super::{CHAR_W, Scale, px};
use leasesim_check::invariants::holders::parse_holder;
use leasesim_check::invariants::stop::Margin;
use leasesim_history::{ClockMap, History, Op, OpResult, Outcome, Process, WriteLine, WriteVerb};

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
    /// Whose record the hold's end is: `authority`, or for KubeLease `API server`.
    pub by: &'static str,
}

/// Every hold of `history`: by (process, session, token), or for KubeLease by reign in the
/// API server's writes, each session's in write order.
pub(super) fn holds(history: &History) -> Vec<Hold> {
    let mut holds = if history.authority_host().is_none() && history.writes().next().is_some() {
        reigns(history)
    } else {
        granted(history)
    };
    cut_at_releases(history, &mut holds);
    holds
}

/// The holds of a backend with an authority clock (or without writes), from the granted
/// acquires and renews.
fn granted(history: &History) -> Vec<Hold> {
    let maps = history.clock_maps().unwrap_or_default();
    let authority = history.authority_host().and_then(|h| maps.get(h));
    let (ttl_us, margin) = config_ttl_and_margin(history);
    let mut holds: BTreeMap<(Process, String, u64), Hold> = BTreeMap::new();
    for op in history.ops() {
        let Some((token, until_us, granted_ttl_us)) = grant(op, authority, ttl_us) else {
            continue;
        };
        let own = maps.get(&op.process.replica);
        let valid_until_us = validity_end(op, own, margin, granted_ttl_us);
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
            by: "authority",
        });
        hold.from_us = hold.from_us.min(start);
        hold.until_us = hold.until_us.max(until_us);
        hold.valid_until_us = hold.valid_until_us.max(valid_until_us);
    }
    holds.into_values().collect()
}

/// The reigns of a backend without an authority clock (KubeLease), from the API server's
/// accepted writes (see the module page); each reign's validity window is the holder's, from
/// its granted acquires and renews of that token during the reign (none: the window is
/// empty, the holder never learnt of it).
fn reigns(history: &History) -> Vec<Hold> {
    let maps = history.clock_maps().unwrap_or_default();
    let (ttl_us, margin) = config_ttl_and_margin(history);
    let mut by_session: BTreeMap<&str, Vec<&WriteLine>> = BTreeMap::new();
    for write in history.writes() {
        by_session.entry(&write.session).or_default().push(write);
    }
    let mut holds = Vec::new();
    for (session, writes) in by_session {
        // The reign going on: holder, token, first and last write.
        let mut reign: Option<(Process, u64, u64, u64)> = None;
        let mut end = |reign: Option<(Process, u64, u64, u64)>, until_us: u64| {
            if let Some((process, token, from_us, _)) = reign {
                holds.push(Hold {
                    host: process.replica.clone(),
                    process,
                    session: session.to_owned(),
                    token,
                    from_us,
                    until_us,
                    valid_until_us: None,
                    by: "API server",
                });
            }
        };
        for write in writes {
            let holder = match write.verb {
                WriteVerb::Delete => None,
                _ => parse_holder(&write.holder_identity),
            };
            match (&mut reign, holder) {
                (Some((process, token, _, last)), Some(holder))
                    if *process == holder && *token == write.transitions =>
                {
                    *last = write.at_us;
                }
                (current, holder) => {
                    let until = current
                        .as_ref()
                        .map_or(write.at_us, |(.., last)| (last + ttl_us).min(write.at_us));
                    end(current.take(), until);
                    reign = holder.map(|p| (p, write.transitions, write.at_us, write.at_us));
                }
            }
        }
        if let Some((.., last)) = &reign {
            let until = last + ttl_us;
            end(reign, until);
        }
    }
    for hold in &mut holds {
        let own = maps.get(&hold.host);
        hold.valid_until_us = history
            .ops()
            .filter(|op| op.process == hold.process && op.session == hold.session)
            .filter(|op| {
                let done = op.complete_us.unwrap_or(op.invoke_us);
                op.invoke_us <= hold.until_us && done >= hold.from_us
            })
            .filter(|op| matches!(op.op, Op::LeaseAcquire { .. } | Op::LeaseRenew { .. }))
            .filter_map(|op| match grant(op, None, ttl_us) {
                Some((token, _, granted_ttl_us)) if token == hold.token => {
                    validity_end(op, own, margin, granted_ttl_us)
                }
                _ => None,
            })
            .max()
            .or(Some(hold.from_us));
    }
    holds
}

/// A release by the holder ends its hold and its validity window where it comes first.
fn cut_at_releases(history: &History, holds: &mut [Hold]) {
    for op in history.ops() {
        let Op::LeaseRelease { token, .. } = &op.op else {
            continue;
        };
        if op.outcome != Outcome::Ok {
            continue;
        }
        // The holder's latest hold of that token begun by then (a KubeLease holder may
        // reign twice with one token).
        let Some(hold) = holds
            .iter_mut()
            .filter(|hold| {
                hold.process == op.process
                    && hold.session == op.session
                    && hold.token == *token
                    && op.invoke_us >= hold.from_us
            })
            .max_by_key(|hold| hold.from_us)
        else {
            continue;
        };
        let at = op.complete_us.unwrap_or(op.invoke_us);
        hold.until_us = hold.until_us.min(at);
        hold.valid_until_us = hold.valid_until_us.map(|v| v.min(op.invoke_us));
    }
}

/// The config's TTL, µs, and its margin rule (0 and none without a config line).
fn config_ttl_and_margin(history: &History) -> (u64, Margin) {
    history
        .config()
        .map_or((0, Margin::NONE), |c| (c.ttl_us, Margin::new(c)))
}

/// `op`'s token, the true time its grant expires and the TTL it granted, µs, if it made the
/// caller a holder (a Lease API write that did: the config's `ttl_us`).
fn grant(
    op: &leasesim_history::OpLine,
    authority: Option<&ClockMap>,
    ttl_us: u64,
) -> Option<(u64, u64, u64)> {
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
            Some((*token, until, *ttl_us))
        }
        (
            Op::KubeCreate { .. } | Op::KubeUpdate { .. },
            Some(OpResult::KubeObject {
                holder_identity,
                transitions,
                ..
            }),
        ) if op.outcome == Outcome::Ok
            && parse_holder(holder_identity).as_ref() == Some(&op.process) =>
        {
            Some((*transitions, done + ttl_us, ttl_us))
        }
        _ => None,
    }
}

/// True time the caller's validity from `op`, a grant of `ttl_us`, ends: its deadline on its
/// own clock ([`Margin::valid_until_local_us`]) in its boot; without clock segments, as long
/// after its true send time.
fn validity_end(
    op: &leasesim_history::OpLine,
    own: Option<&ClockMap>,
    margin: Margin,
    ttl_us: u64,
) -> Option<u64> {
    let deadline = margin.valid_until_local_us(op, ttl_us);
    let span = deadline.saturating_sub(op.invoke_local_us);
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
        leasesim_history::time::seconds_us,
    );
    let mut group = Group::new()
        .set("class", "hold")
        .set("data-session", hold.session.as_str())
        .set("data-token", hold.token)
        .add(Title::new(format!(
            "{} holds {} token {} from {} until {} ({}); valid on its own clock until {}",
            hold.process,
            hold.session,
            hold.token,
            leasesim_history::time::seconds_us(hold.from_us),
            leasesim_history::time::seconds_us(hold.until_us),
            hold.by,
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

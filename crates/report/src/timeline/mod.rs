//! A timeline picture of one run (SVG), drawn from its history alone (it never runs a world).
//!
//! - **Lanes**: one per host, replicas first (`replica-1`, `replica-2`, …), then `lease`,
//!   `apiserver`, `ledger` — every host the history names (config, clock segments, callers,
//!   nemesis actions).
//! - **x axis**: true simulated time from 0 to the run's end (`run_ended`, else the latest
//!   time in the history), labelled in seconds.
//! - **Holds** ([`holds`]): on a replica's lane, one bar per lease it held (session and
//!   token), from its first grant until the authority's expiry of its last one (mapped from the
//!   authority's clock to true time through the clock segments) or its release; below it, the
//!   replica's **validity window** for that lease: until send time of its last acquire/renew +
//!   TTL − skew margin *on its own clock*, mapped to true time — a slow or suspended clock's
//!   window visibly overruns the hold.
//! - **Marks**: a journal open (the fence) is a diamond, a journal append (or the ledger
//!   append of a process that uses no journal) a circle, a lease call (acquire, renew,
//!   release) a small square, at the operation's completion, with its interval as a thin
//!   line; the class says what became of it ([`MarkClass`]: landed, fenced, refused,
//!   unknown), so a refused acquire or renew shows. A landed record also ticks the `ledger`
//!   lane. Authority decisions tick the authority's lane.
//! - **Faults** ([`bands`]): every `nemesis` line as a shaded band (or, for an instant fault,
//!   a thin one) on each host it hits, named.
//! - **The violation** ([`Highlight`]): the operations its evidence names are ringed, the
//!   linearizability check's stuck operation and longest valid prefix marked, and a dashed
//!   line at the last of them says what was violated.
//!
//! - **Folding**: past [`REPLICA_LANES_MAX`] replicas (a world of hundreds), only the
//!   replicas the violation names, then those a fault struck, then the first by number get a
//!   lane, up to that many; one lane, `+N replicas`, stands for the rest (their marks are not
//!   drawn).
//!
//! Text stays sparse so a 300-operation run is still readable: a bar or band is labelled
//! only where its label fits; every element carries a `<title>` (the browser's tooltip) with
//! its particulars. Elements carry `class` and `data-*` attributes (`data-host`, `data-op`)
//! that tests and the browser check assert on.
//!
//! The output is deterministic: the same history and highlight give the same bytes (the `svg`
//! crate sorts attributes; coordinates are printed to 0.1 px).

mod bands;
mod holds;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use svg::Document;
use svg::node::element::{Circle, Group, Line as SvgLine, Polygon, Rectangle, Text, Title};

use leasesim_check::CheckVerdict;
use leasesim_check::invariants::Evidence;
use leasesim_history::hosts;
use leasesim_history::{History, Op, OpLine, OpResult, Outcome, Phase};
use leasesim_results::record::{CheckRecord, ViolationRecord};

/// Width of the whole picture, px.
const WIDTH: f64 = 1200.0;
/// Where the plot starts (after the lane names), px.
const PLOT_X: f64 = 110.0;
/// Width of the plot, px.
const PLOT_W: f64 = WIDTH - PLOT_X - 20.0;
/// Height of one lane, px.
const LANE_H: f64 = 52.0;
/// Space above the first lane (the title and the violation's label), px.
const TOP: f64 = 40.0;
/// Roughly how wide one character of the 11 px labels is, px (labels that do not fit are
/// left out).
const CHAR_W: f64 = 6.2;

/// What became of an append, a fence (a journal open) or a lease call, as a mark's class.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum MarkClass {
    /// `ok`: the record committed (a lease call: granted, renewed, released).
    Landed,
    /// `fail` because the ledger's fence or tip refused it (`fenced`, `stale_epoch`,
    /// `conflict`, `fence_contention`): the fence worked.
    Fenced,
    /// `fail` before or without reaching the ledger (`lease_lost`, `poisoned`, `unavailable`,
    /// `invalid`): the writer stopped itself.
    Refused,
    /// `info`: it may or may not have committed.
    Unknown,
}

impl MarkClass {
    /// Every class, in legend order.
    pub const ALL: [MarkClass; 4] = [
        MarkClass::Landed,
        MarkClass::Fenced,
        MarkClass::Refused,
        MarkClass::Unknown,
    ];

    /// The class name (`landed`, …), as in the SVG's `class` attributes.
    pub fn name(self) -> &'static str {
        match self {
            MarkClass::Landed => "landed",
            MarkClass::Fenced => "fenced",
            MarkClass::Refused => "refused",
            MarkClass::Unknown => "unknown",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            MarkClass::Landed => "#2e7d32",
            MarkClass::Fenced => "#ef6c00",
            MarkClass::Refused => "#757575",
            MarkClass::Unknown => "#6a1b9a",
        }
    }

    /// A mark's inside: its colour, or white when unknown (drawn hollow: it may not have
    /// happened).
    fn fill(self) -> &'static str {
        if self == MarkClass::Unknown {
            "#ffffff"
        } else {
            self.colour()
        }
    }

    /// The class of `op`'s outcome and result.
    pub fn of(op: &OpLine) -> MarkClass {
        match (op.outcome, &op.result) {
            (Outcome::Ok, _) => MarkClass::Landed,
            (Outcome::Info, _) => MarkClass::Unknown,
            (
                Outcome::Fail,
                Some(
                    OpResult::Fenced { .. }
                    | OpResult::StaleEpoch { .. }
                    | OpResult::Conflict { .. }
                    | OpResult::FenceContention { .. },
                ),
            ) => MarkClass::Fenced,
            (Outcome::Fail, _) => MarkClass::Refused,
        }
    }
}

/// What of a violation to highlight, read from its evidence's data
/// (docs/campaigns.md#evidence-is-data).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Highlight {
    /// What was violated (`EXCL`, `LIN-LEASE`), for the label; empty: nothing.
    pub check: String,
    /// The operations the evidence names (op ids).
    pub ops: BTreeSet<u64>,
    /// The operation a linearizability check could not place.
    pub stuck: Option<u64>,
    /// The longest valid prefix the linearizability search found.
    pub prefix: BTreeSet<u64>,
    /// Moments the evidence names on a host's lane, `(host, true time µs)`: a validity
    /// check on its replica's, an authority decision on the authority's.
    pub instants: BTreeSet<(String, u64)>,
}

impl Highlight {
    /// The highlight of `check`'s `violations` in `history`: every operation their evidence
    /// names (an op, a holder's window by the op it starts at, a ledger record by the
    /// operation that committed it), every validity check and decision as a moment on its
    /// host's lane, and a linearizability explanation's stuck operation (also an evidence
    /// operation) and longest valid prefix. Prose read from a file of version 1 highlights
    /// nothing.
    pub fn of_violations(check: &str, violations: &[ViolationRecord], history: &History) -> Self {
        let mut highlight = Highlight {
            check: check.to_owned(),
            ..Highlight::default()
        };
        for violation in violations {
            if let Some(lin) = &violation.linearization {
                if let Some(id) = lin.stuck_op {
                    highlight.stuck = Some(id);
                    highlight.ops.insert(id);
                }
                highlight.prefix.extend(&lin.prefix_ops);
            }
            for evidence in violation.found() {
                highlight.add(evidence, history);
            }
        }
        highlight
    }

    /// Adds what `evidence` names in `history`.
    fn add(&mut self, evidence: &Evidence, history: &History) {
        match evidence {
            Evidence::Op(id) | Evidence::Window { op: id, .. } => {
                self.ops.insert(*id);
            }
            Evidence::LedgerSeq { session, seq } => {
                self.ops.extend(ledger_record_op(session, *seq, history));
            }
            Evidence::Decision { at_us, .. } => {
                let authority = history.authority_host();
                self.instants
                    .extend(authority.map(|host| (host.to_owned(), *at_us)));
            }
            Evidence::Validity { process, at_us, .. } => {
                self.instants.insert((process.replica.clone(), *at_us));
            }
            // A write line is drawn on no lane of its own.
            Evidence::Write { .. } => {}
        }
    }
}

/// The highlight of a judged run: the first failing check that was not expected to fail
/// (else the first failing one) with its violations; nothing for a clean run.
pub fn highlight_of_records(records: &[CheckRecord], history: &History) -> Highlight {
    let failing = |expected: bool| {
        records
            .iter()
            .find(|r| r.verdict == CheckVerdict::Fail && r.expected_violation == expected)
    };
    failing(false)
        .or_else(|| failing(true))
        .map_or_else(Highlight::default, |record| {
            Highlight::of_violations(record.name.name(), &record.violations, history)
        })
}

/// The operation that committed record `seq` of ledger `session` (a journal's own op, else
/// the ledger append).
fn ledger_record_op(session: &str, seq: u64, history: &History) -> Option<u64> {
    let committed = |op: &&OpLine| {
        op.session == session
            && match &op.result {
                Some(OpResult::Appended { seq: s }) => *s == seq,
                Some(OpResult::Opened { fence_seq, .. }) => *fence_seq == seq,
                _ => false,
            }
    };
    let mut ops: Vec<&OpLine> = history.ops().filter(committed).collect();
    ops.sort_by_key(|op| !matches!(op.op, Op::JournalAppend { .. } | Op::JournalOpen { .. }));
    ops.first().map(|op| op.id)
}

/// The timeline of `history`, titled `title`, with `highlight` drawn over it: an SVG
/// document (UTF-8 text, no trailing newline).
pub fn render(history: &History, title: &str, highlight: &Highlight) -> String {
    let scale = Scale::of(history);
    let lanes = Lanes::of(history, highlight);
    let height = TOP + LANE_H * lanes.len() as f64 + 62.0;
    let mut groups: BTreeMap<usize, Group> = BTreeMap::new();
    for (index, host) in lanes.hosts.iter().enumerate() {
        groups.insert(index, lane_group(host, index));
    }
    let mut add = |lane: usize, node: Box<dyn svg::Node>| {
        if let Some(group) = groups.remove(&lane) {
            groups.insert(lane, group.add(node));
        }
    };
    faults(history, &lanes, &scale, &mut add);
    decisions(history, &lanes, &scale, &mut add);
    op_marks(history, &lanes, &scale, &mut add);
    let mut document = frame(title, height);
    for (_, group) in groups {
        document = document.add(group);
    }
    document = document.add(highlights(history, highlight, &lanes, &scale));
    document = document.add(axis(&scale, TOP + LANE_H * lanes.len() as f64));
    document = document.add(legend(TOP + LANE_H * lanes.len() as f64 + 40.0));
    document.to_string()
}

/// The fault bands and the held links, on the lanes of the hosts they hit.
fn faults(
    history: &History,
    lanes: &Lanes,
    scale: &Scale,
    add: &mut impl FnMut(usize, Box<dyn svg::Node>),
) {
    for band in bands::bands(history, scale.end_us) {
        for host in &band.hosts {
            if let Some(lane) = lanes.index(host) {
                add(
                    lane,
                    Box::new(bands::draw(&band, host, lane_top(lane), scale)),
                );
            }
        }
    }
    for hold in holds::holds(history) {
        if let Some(lane) = lanes.index(&hold.host) {
            add(lane, Box::new(holds::draw(&hold, lane_top(lane), scale)));
        }
    }
}

/// Each operation's mark on its replica's lane, and a landed record's tick on the ledger's.
fn op_marks(
    history: &History,
    lanes: &Lanes,
    scale: &Scale,
    add: &mut impl FnMut(usize, Box<dyn svg::Node>),
) {
    // A process's journal calls stand for the ledger calls they made.
    let journal_users: BTreeSet<&leasesim_history::Process> = history
        .ops()
        .filter(|op| matches!(op.op, Op::JournalOpen { .. } | Op::JournalAppend { .. }))
        .map(|op| &op.process)
        .collect();
    for op in history.ops() {
        let Some(kind) = mark_kind(&op.op) else {
            continue;
        };
        if matches!(op.op, Op::LedgerAppend { .. }) && journal_users.contains(&op.process) {
            continue;
        }
        let class = MarkClass::of(op);
        if let Some(lane) = lanes.index(&op.process.replica) {
            add(lane, Box::new(mark(op, kind, class, lane_top(lane), scale)));
        }
        if class == MarkClass::Landed
            && kind != MarkKind::Call
            && let Some(lane) = lanes.index(hosts::LEDGER)
        {
            add(lane, Box::new(record_tick(op, kind, lane_top(lane), scale)));
        }
    }
}

/// The SVG document `height` px high: white, titled `title`.
fn frame(title: &str, height: f64) -> Document {
    Document::new()
        .set("class", "timeline")
        .set("viewBox", format!("0 0 {WIDTH} {}", px(height)))
        .set("width", WIDTH)
        .set("height", px(height))
        .set("font-family", "sans-serif")
        .set("font-size", 11)
        .add(
            Rectangle::new()
                .set("width", "100%")
                .set("height", "100%")
                .set("fill", "#ffffff"),
        )
        .add(
            Text::new(title)
                .set("class", "title")
                .set("x", 8)
                .set("y", 16)
                .set("font-size", 13)
                .set("font-weight", "bold"),
        )
}

/// A coordinate or length to 0.1 px.
fn px(value: f64) -> String {
    let text = format!("{value:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
}

fn lane_top(lane: usize) -> f64 {
    TOP + LANE_H * lane as f64
}

/// True time → x.
struct Scale {
    end_us: u64,
}

impl Scale {
    fn of(history: &History) -> Self {
        let latest = history
            .lines()
            .iter()
            .filter_map(|line| match line {
                leasesim_history::Line::Op(op) => Some(op.complete_us.unwrap_or(op.invoke_us)),
                leasesim_history::Line::Decision(d) => Some(d.at_us),
                leasesim_history::Line::Validity(v) => Some(v.at_us),
                leasesim_history::Line::Phase(p) => Some(p.at_us),
                leasesim_history::Line::Nemesis(n) => Some(n.at_us),
                leasesim_history::Line::Event(e) => Some(e.at_us),
                leasesim_history::Line::Work(w) => Some(w.at_us),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let end_us = history.phase_at_us(Phase::RunEnded).unwrap_or(latest);
        Scale {
            end_us: end_us.max(1),
        }
    }

    /// x of true time `us` (clipped to the plot).
    fn x(&self, us: u64) -> f64 {
        PLOT_X + PLOT_W * (us.min(self.end_us) as f64 / self.end_us as f64)
    }
}

/// Most replica lanes a picture draws: past it the quiet replicas fold into one lane
/// (docs/world.md#worlds-of-any-size), so a 1,000-replica run's picture stays a page.
pub const REPLICA_LANES_MAX: usize = 32;

/// The hosts drawn, in lane order.
struct Lanes {
    hosts: Vec<String>,
}

impl Lanes {
    /// Every host `history` names, replicas first; past [`REPLICA_LANES_MAX`] replicas, only
    /// those [`Lanes::kept`] says, then one folded lane naming how many are left out.
    fn of(history: &History, highlight: &Highlight) -> Self {
        let mut names: BTreeSet<String> = BTreeSet::new();
        if let Ok(config) = history.config() {
            names.extend((1..=config.replicas).map(hosts::replica));
            names.extend(config.authority.clone());
        }
        names.extend(history.clock_segments().map(|c| c.host.clone()));
        names.extend(history.ops().map(|op| op.process.replica.clone()));
        for action in history.nemesis_actions() {
            names.insert(action.host.clone());
            names.extend(action.peer.clone());
        }
        names.remove(bands::ALL);
        let (replicas, others): (Vec<String>, Vec<String>) =
            names.into_iter().partition(|h| hosts::is_replica(h));
        let mut hosts = if replicas.len() > REPLICA_LANES_MAX {
            let kept = Self::kept(history, highlight, &replicas);
            let folded = replicas.len() - kept.len();
            let mut hosts: Vec<String> = kept.into_iter().collect();
            hosts.push(folded_lane(folded));
            hosts
        } else {
            replicas
        };
        hosts.extend(others);
        hosts.sort_by_key(|h| lane_rank(h));
        Lanes { hosts }
    }

    /// The replicas of a folded picture: every replica the highlight names (never folded),
    /// then those a fault struck, then the lowest-numbered, up to [`REPLICA_LANES_MAX`].
    fn kept(history: &History, highlight: &Highlight, replicas: &[String]) -> BTreeSet<String> {
        let named: BTreeSet<u64> = highlight
            .ops
            .iter()
            .chain(&highlight.prefix)
            .chain(&highlight.stuck)
            .copied()
            .collect();
        let mut kept: BTreeSet<String> = history
            .ops()
            .filter(|op| named.contains(&op.id))
            .map(|op| op.process.replica.clone())
            .chain(highlight.instants.iter().map(|(host, _)| host.clone()))
            .filter(|host| hosts::is_replica(host))
            .collect();
        let struck = history
            .nemesis_actions()
            .flat_map(|a| [Some(a.host.clone()), a.peer.clone()])
            .flatten()
            .filter(|host| hosts::is_replica(host));
        let mut ordered: Vec<String> = replicas.to_vec();
        ordered.sort_by_key(|h| lane_rank(h));
        for host in struck.chain(ordered) {
            if kept.len() >= REPLICA_LANES_MAX {
                break;
            }
            kept.insert(host);
        }
        kept
    }

    fn len(&self) -> usize {
        self.hosts.len()
    }

    fn index(&self, host: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h == host)
    }
}

/// The name of the lane that stands for `count` replicas not drawn: `+968 replicas`.
fn folded_lane(count: usize) -> String {
    format!("{FOLDED_PREFIX}{count} replicas")
}

/// How a folded lane's name starts.
const FOLDED_PREFIX: &str = "+";

/// Replicas in natural order, the folded lane after them, then the services, then anything
/// else by name.
fn lane_rank(host: &str) -> (u8, u64, String) {
    if let Some(n) = host.strip_prefix(hosts::REPLICA_PREFIX)
        && let Ok(n) = n.parse()
    {
        return (0, n, host.to_owned());
    }
    if host.starts_with(FOLDED_PREFIX) {
        return (0, u64::MAX, host.to_owned());
    }
    let rank = match host {
        hosts::LEASE => 1,
        hosts::APISERVER => 2,
        hosts::LEDGER => 3,
        _ => 4,
    };
    (rank, 0, host.to_owned())
}

/// A lane's group: its background and its name.
fn lane_group(host: &str, index: usize) -> Group {
    let top = lane_top(index);
    let folded = host.starts_with(FOLDED_PREFIX);
    let group = Group::new()
        .set("class", if folded { "lane folded" } else { "lane" })
        .set("data-host", host);
    let group = if folded {
        group.add(Title::new(format!(
            "{host} not drawn: past {REPLICA_LANES_MAX} replicas a picture keeps the \
             replicas the violation names, then those a fault struck, then the first by number"
        )))
    } else {
        group
    };
    group
        .add(
            Rectangle::new()
                .set("x", PLOT_X)
                .set("y", px(top))
                .set("width", px(PLOT_W))
                .set("height", px(LANE_H))
                .set(
                    "fill",
                    if index.is_multiple_of(2) {
                        "#f7f7f7"
                    } else {
                        "#eeeeee"
                    },
                ),
        )
        .add(
            Text::new(host)
                .set("class", "lane-name")
                .set("x", 8)
                .set("y", px(top + LANE_H / 2.0 + 4.0)),
        )
}

/// The kinds of mark.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum MarkKind {
    /// A journal open: the fence.
    Fence,
    /// A journal append, or a bare ledger append.
    Append,
    /// A lease call: acquire, renew or release.
    Call,
}

impl MarkKind {
    fn name(self) -> &'static str {
        match self {
            MarkKind::Fence => "fence",
            MarkKind::Append => "append",
            MarkKind::Call => "call",
        }
    }
}

fn mark_kind(op: &Op) -> Option<MarkKind> {
    match op {
        Op::JournalOpen { .. } => Some(MarkKind::Fence),
        Op::JournalAppend { .. } | Op::LedgerAppend { .. } => Some(MarkKind::Append),
        Op::LeaseAcquire { .. } | Op::LeaseRenew { .. } | Op::LeaseRelease { .. } => {
            Some(MarkKind::Call)
        }
        _ => None,
    }
}

/// y of the marks in a lane whose top is `top`.
fn mark_y(top: f64) -> f64 {
    top + LANE_H - 10.0
}

/// What `op` was and got, for its tooltip.
fn op_title(op: &OpLine) -> String {
    let reply = op.result.as_ref().map_or_else(
        || "pending".to_owned(),
        |result| super::mermaid::reply(op.outcome, result, op.id),
    );
    format!(
        "op {} {}: {} at {} → {}",
        op.id,
        op.process,
        super::mermaid::request(op),
        leasesim_history::time::seconds_us(op.invoke_us),
        reply
    )
}

/// A mark: the interval as a line, the completion as a circle (append), a diamond (fence)
/// or a small square (lease call). Classes: `mark append landed`, `mark fence fenced`, …; a
/// lease call's `call acquire refused`, `call renew landed`, … (`call` apart, so what counts
/// journal marks counts no lease call).
fn mark(op: &OpLine, kind: MarkKind, class: MarkClass, top: f64, scale: &Scale) -> Group {
    let y = mark_y(top);
    let end = op.complete_us.unwrap_or(scale.end_us);
    let (x0, x1) = (scale.x(op.invoke_us), scale.x(end));
    let colour = class.colour();
    let shape: Box<dyn svg::Node> = match kind {
        MarkKind::Append => Box::new(
            Circle::new()
                .set("cx", px(x1))
                .set("cy", px(y))
                .set("r", 4)
                .set("fill", class.fill())
                .set("stroke", colour)
                .set("stroke-width", 1.5),
        ),
        MarkKind::Fence => Box::new(
            Polygon::new()
                .set("points", diamond_points(x1, y))
                .set("fill", class.fill())
                .set("stroke", colour)
                .set("stroke-width", 1.5),
        ),
        MarkKind::Call => Box::new(call_square(x1, y, class)),
    };
    let classes = match kind {
        MarkKind::Call => format!("call {} {}", op_kind(&op.op), class.name()),
        _ => format!("mark {} {}", kind.name(), class.name()),
    };
    Group::new()
        .set("class", classes)
        .set("data-op", op.id)
        .add(Title::new(op_title(op)))
        .add(
            SvgLine::new()
                .set("x1", px(x0))
                .set("x2", px(x1))
                .set("y1", px(y))
                .set("y2", px(y))
                .set("stroke", colour)
                .set("stroke-width", 1),
        )
        .add(shape)
}

/// A lease call's square, 6 px, centred on (`x`, `y`): filled in its class's colour, white
/// inside when unknown.
fn call_square(x: f64, y: f64, class: MarkClass) -> Rectangle {
    let colour = class.colour();
    Rectangle::new()
        .set("x", px(x - 3.0))
        .set("y", px(y - 3.0))
        .set("width", 6)
        .set("height", 6)
        .set("fill", class.fill())
        .set("stroke", colour)
        .set("stroke-width", 1)
}

/// A landed record's tick on the ledger lane.
fn record_tick(op: &OpLine, kind: MarkKind, top: f64, scale: &Scale) -> Group {
    let x = scale.x(op.complete_us.unwrap_or(op.invoke_us));
    let seq = match &op.result {
        Some(OpResult::Appended { seq }) => *seq,
        Some(OpResult::Opened { fence_seq, .. }) => *fence_seq,
        _ => 0,
    };
    Group::new()
        .set("class", format!("record {}", kind.name()))
        .set("data-op", op.id)
        .add(Title::new(format!(
            "ledger {} seq {seq}: {} by {} (op {})",
            op.session,
            kind.name(),
            op.process,
            op.id
        )))
        .add(
            SvgLine::new()
                .set("x1", px(x))
                .set("x2", px(x))
                .set("y1", px(top + 12.0))
                .set("y2", px(top + LANE_H - 12.0))
                .set("stroke", MarkClass::Landed.colour())
                .set("stroke-width", if kind == MarkKind::Fence { 3 } else { 1 }),
        )
}

/// Authority decisions as ticks on its lane: grants and renews dark, refusals light.
fn decisions(
    history: &History,
    lanes: &Lanes,
    scale: &Scale,
    add: &mut impl FnMut(usize, Box<dyn svg::Node>),
) {
    let Some(lane) = history.authority_host().and_then(|h| lanes.index(h)) else {
        return;
    };
    let top = lane_top(lane);
    for decision in history.decisions() {
        let (kind, colour) = match &decision.decision {
            leasesim_history::Decision::Grant { .. } => ("grant", "#1565c0"),
            leasesim_history::Decision::Renew { .. } => ("renew", "#64b5f6"),
            leasesim_history::Decision::Release { .. } => ("release", "#424242"),
            leasesim_history::Decision::Refuse { .. } => ("refuse", "#bdbdbd"),
        };
        let x = scale.x(decision.at_us);
        let detail = serde_json::to_string(&decision.decision).unwrap_or_default();
        add(
            lane,
            Box::new(
                Group::new()
                    .set("class", format!("decision {kind}"))
                    .add(Title::new(format!(
                        "{kind} {} for {} at {}: {detail}",
                        decision.session,
                        decision.owner,
                        leasesim_history::time::seconds_us(decision.at_us)
                    )))
                    .add(
                        SvgLine::new()
                            .set("x1", px(x))
                            .set("x2", px(x))
                            .set("y1", px(top + LANE_H - 18.0))
                            .set("y2", px(top + LANE_H - 4.0))
                            .set("stroke", colour)
                            .set("stroke-width", 1.5),
                    ),
            ),
        );
    }
}

/// The violation drawn over the lanes: a ring around each evidence operation's interval
/// (`evidence`), the stuck operation (`stuck`), the longest valid prefix (`prefix`), and a
/// dashed line at the last of them with what was violated.
fn highlights(history: &History, highlight: &Highlight, lanes: &Lanes, scale: &Scale) -> Group {
    let mut group = Group::new().set("class", "highlights");
    if highlight == &Highlight::default() {
        return group;
    }
    let mut last: Option<u64> = None;
    let mut labels = LabelRows::default();
    for op in history.ops() {
        let classes: Vec<&str> = [
            (highlight.prefix.contains(&op.id), "prefix"),
            (highlight.ops.contains(&op.id), "evidence"),
            (highlight.stuck == Some(op.id), "stuck"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let Some(&strongest) = classes.last() else {
            continue;
        };
        let Some(lane) = lanes.index(&op.process.replica) else {
            continue;
        };
        if strongest != "prefix" {
            last = last.max(Some(op.complete_us.unwrap_or(scale.end_us)));
        }
        group = group.add(op_ring(op, &classes, lane, scale, &mut labels));
    }
    for (host, at) in &highlight.instants {
        let Some(lane) = lanes.index(host) else {
            continue;
        };
        last = last.max(Some(*at));
        group = group.add(instant_ring(host, *at, lane, scale));
    }
    if let Some(at) = last {
        let (line, label) = violation_line(at, &highlight.check, lanes, scale);
        group = group.add(line).add(label);
    }
    group
}

/// The ring around `op`'s interval on `lane`, drawn as the strongest of its highlight
/// `classes` (the last); an evidence or stuck op has its call written beside it.
fn op_ring(
    op: &OpLine,
    classes: &[&str],
    lane: usize,
    scale: &Scale,
    labels: &mut LabelRows,
) -> Group {
    let strongest = classes.last().copied().unwrap_or("prefix");
    let end = op.complete_us.unwrap_or(scale.end_us);
    let (x0, x1) = (scale.x(op.invoke_us), scale.x(end));
    let (colour, width, dash) = match strongest {
        "stuck" => ("#d50000", 3.0, "none"),
        "evidence" => ("#d50000", 2.0, "none"),
        _ => ("#1565c0", 1.5, "3 2"),
    };
    let y = mark_y(lane_top(lane));
    let mut ring = Group::new()
        .set("class", classes.join(" "))
        .set("data-op", op.id)
        .add(Title::new(format!(
            "{}: {}",
            classes.join(", "),
            op_title(op)
        )));
    if strongest != "prefix" {
        // The few operations a violation names get their call written beside them, a
        // row higher where an earlier label on the lane would overprint it.
        let text = format!("op {} {}", op.id, op_kind(&op.op));
        let row = labels.place(lane, x1 + 8.0, text.len());
        ring = ring.add(
            Text::new(text)
                .set("x", px(x1 + 8.0))
                .set("y", px(y - 8.0 - 10.0 * row as f64))
                .set("font-size", 10)
                .set("fill", colour),
        );
    }
    ring.add(
        Rectangle::new()
            .set("x", px(x0 - 7.0))
            .set("y", px(y - 9.0))
            .set("width", px(x1 - x0 + 14.0))
            .set("height", 18)
            .set("rx", 6)
            .set("fill", "none")
            .set("stroke", colour)
            .set("stroke-width", width)
            .set("stroke-dasharray", dash),
    )
}

/// The ring around an evidence instant: `host`'s lane at `at`.
fn instant_ring(host: &str, at: u64, lane: usize, scale: &Scale) -> Group {
    let (x, y) = (scale.x(at), mark_y(lane_top(lane)));
    Group::new()
        .set("class", "evidence instant")
        .set("data-host", host)
        .add(Title::new(format!(
            "evidence: {host} at {}",
            leasesim_history::time::seconds_us(at)
        )))
        .add(
            Rectangle::new()
                .set("x", px(x - 7.0))
                .set("y", px(y - 9.0))
                .set("width", 14)
                .set("height", 18)
                .set("rx", 6)
                .set("fill", "none")
                .set("stroke", "#d50000")
                .set("stroke-width", 2),
        )
}

/// The dashed line down the lanes at `at`, the last evidence, and its label: what `check`
/// (empty: unnamed) found violated.
fn violation_line(at: u64, check: &str, lanes: &Lanes, scale: &Scale) -> (SvgLine, Text) {
    let x = scale.x(at);
    let bottom = TOP + LANE_H * lanes.len() as f64;
    let label = if check.is_empty() {
        "violation".to_owned()
    } else {
        format!("{check} violated")
    };
    let anchor = if x > WIDTH - 160.0 { "end" } else { "start" };
    let line = SvgLine::new()
        .set("class", "violation")
        .set("x1", px(x))
        .set("x2", px(x))
        .set("y1", px(TOP - 12.0))
        .set("y2", px(bottom))
        .set("stroke", "#d50000")
        .set("stroke-width", 1.5)
        .set("stroke-dasharray", "5 3");
    let text = Text::new(label)
        .set("class", "violation-label")
        .set("x", px(if anchor == "end" { x - 4.0 } else { x + 4.0 }))
        .set("y", px(TOP - 14.0))
        .set("text-anchor", anchor)
        .set("fill", "#d50000")
        .set("font-weight", "bold");
    (line, text)
}

/// An operation's call in one word (`acquire`, `append`, `open`…): the verb that ends its
/// JSON name (`lease_acquire`, `ledger_append`, `journal_open`).
fn op_kind(op: &Op) -> &'static str {
    let name = op.name();
    name.rsplit_once('_').map_or(name, |(_, verb)| verb)
}

/// Ticks every round number of seconds that keeps at most about 12 labels.
fn axis(scale: &Scale, y: f64) -> Group {
    const STEPS_MS: [u64; 16] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000, 300_000,
    ];
    let end_ms = scale.end_us.div_ceil(1_000);
    let step = STEPS_MS
        .into_iter()
        .find(|step| end_ms / step <= 12)
        .unwrap_or(600_000);
    let mut group = Group::new().set("class", "axis").add(
        SvgLine::new()
            .set("x1", PLOT_X)
            .set("x2", px(PLOT_X + PLOT_W))
            .set("y1", px(y))
            .set("y2", px(y))
            .set("stroke", "#000000"),
    );
    let mut t = 0;
    while t * 1_000 <= scale.end_us {
        let x = scale.x(t * 1_000);
        group = group
            .add(
                SvgLine::new()
                    .set("x1", px(x))
                    .set("x2", px(x))
                    .set("y1", px(y))
                    .set("y2", px(y + 5.0))
                    .set("stroke", "#000000"),
            )
            .add(
                Text::new(seconds_label(t))
                    .set("x", px(x))
                    .set("y", px(y + 17.0))
                    .set("text-anchor", "middle"),
            );
        t += step;
    }
    group.add(
        Text::new("true simulated time (s)")
            .set("x", px(PLOT_X + PLOT_W))
            .set("y", px(y + 31.0))
            .set("text-anchor", "end"),
    )
}

/// `ms` as a tick label: `12 s`, `1.5 s`, `0.25 s`.
fn seconds_label(ms: u64) -> String {
    let whole = ms / 1_000;
    let fraction = format!("{:03}", ms % 1_000);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{whole} s")
    } else {
        format!("{whole}.{fraction} s")
    }
}

/// A legend swatch: how the timeline draws each thing it shows.
#[derive(Clone, Copy)]
enum Swatch {
    /// A box filled with the first colour, stroked with the second.
    Box(&'static str, &'static str),
    /// An operation's mark of this class.
    Dot(MarkClass),
    /// A fence's diamond.
    Diamond,
    /// A lease call's square.
    CallSquare,
    /// The evidence ring.
    Ring,
}

/// The legend's items, left to right: swatch, label, width in px.
const LEGEND: [(Swatch, &str, f64); 10] = [
    (
        Swatch::Box(holds::HOLD_FILL, "none"),
        "lease hold (token)",
        125.0,
    ),
    (
        Swatch::Box("none", holds::VALIDITY_STROKE),
        "validity (own clock)",
        130.0,
    ),
    (Swatch::Dot(MarkClass::Landed), "append landed", 105.0),
    (Swatch::Dot(MarkClass::Fenced), "fenced", 65.0),
    (Swatch::Dot(MarkClass::Refused), "refused", 70.0),
    (Swatch::Dot(MarkClass::Unknown), "unknown (info)", 105.0),
    (Swatch::Diamond, "fence (journal open)", 135.0),
    (Swatch::CallSquare, "lease call", 85.0),
    (Swatch::Box(bands::FILL, "none"), "fault", 55.0),
    (Swatch::Ring, "violation evidence", 130.0),
];

impl Swatch {
    /// The swatch at `x` on the legend's row at `y`.
    fn draw(self, x: f64, y: f64) -> Box<dyn svg::Node> {
        match self {
            Swatch::Box(fill, stroke) => Box::new(
                Rectangle::new()
                    .set("x", px(x))
                    .set("y", px(y - 5.0))
                    .set("width", 12)
                    .set("height", 10)
                    .set("fill", fill)
                    .set("stroke", stroke),
            ),
            Swatch::Dot(class) => Box::new(
                Circle::new()
                    .set("cx", px(x + 6.0))
                    .set("cy", px(y))
                    .set("r", 4)
                    .set("fill", class.fill())
                    .set("stroke", class.colour()),
            ),
            Swatch::Diamond => Box::new(
                Polygon::new()
                    .set("points", diamond_points(x + 6.0, y))
                    .set("fill", "#9e9e9e"),
            ),
            Swatch::CallSquare => Box::new(call_square(x + 6.0, y, MarkClass::Refused)),
            Swatch::Ring => Box::new(
                Rectangle::new()
                    .set("x", px(x))
                    .set("y", px(y - 6.0))
                    .set("width", 12)
                    .set("height", 12)
                    .set("rx", 4)
                    .set("fill", "none")
                    .set("stroke", "#d50000")
                    .set("stroke-width", 2),
            ),
        }
    }
}

/// The legend: holds, validity windows, the mark classes, fences, faults and the evidence.
fn legend(y: f64) -> Group {
    let mut group = Group::new().set("class", "legend");
    let mut x = PLOT_X;
    for (swatch, label, width) in LEGEND {
        group = group.add(swatch.draw(x, y)).add(
            Text::new(label)
                .set("x", px(x + 16.0))
                .set("y", px(y + 4.0)),
        );
        x += width;
    }
    group
}

/// Where the evidence labels already written on each lane end, per row (row 0 beside the
/// marks, each next row 10 px higher; at most [`LabelRows::ROWS`], the last taken when all
/// overlap).
#[derive(Default)]
struct LabelRows {
    /// `(lane, row)` → x where its last label ends, px.
    ends: BTreeMap<(usize, usize), f64>,
}

impl LabelRows {
    const ROWS: usize = 3;

    /// The row for a label of `chars` characters from `x` on `lane`, taken.
    fn place(&mut self, lane: usize, x: f64, chars: usize) -> usize {
        let free = |row: &usize| self.ends.get(&(lane, *row)).is_none_or(|end| *end <= x);
        let row = (0..Self::ROWS).find(free).unwrap_or(Self::ROWS - 1);
        self.ends
            .insert((lane, row), x + CHAR_W * 10.0 / 11.0 * chars as f64 + 4.0);
        row
    }
}

/// A diamond of half-width 5 and half-height 6 centred on (`x`, `y`).
fn diamond_points(x: f64, y: f64) -> String {
    format!(
        "{},{} {},{} {},{} {},{}",
        px(x),
        px(y - 6.0),
        px(x + 5.0),
        px(y),
        px(x),
        px(y + 6.0),
        px(x - 5.0),
        px(y)
    )
}

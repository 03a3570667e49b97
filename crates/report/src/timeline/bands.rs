//! Fault bands from the `nemesis` lines: an action that starts a fault opens a band on the
//! hosts it hits (the host, and a link action's peer), and the action that ends it closes it
//! (the vocabulary of `crates/sim/src/fault_lines.rs` and of live mode's nemesis):
//!
//! | opens | closed by |
//! |---|---|
//! | `pause`, `suspend`, `stall`, `sigstop` | `resume` / `sigcont` on the host, or `heal` |
//! | `crash`, `sigkill` | `restart` / `start` on the host, or `heal` |
//! | `partition`, `partition_one_way`, `isolate`, `latency`, `link_flaps` | `heal` |
//! | `hold` | `release` of the same link, or `heal` |
//! | `delay_replies` | `deliver` of the same link, or `heal` |
//! | `hold_replies` | `release_replies` of the same link, or `heal` |
//! | `authority_errors` | `serve` |
//!
//! A band still open at the run's end ends there. Anything else (`clock_drift`,
//! `wall_jump`, `wall_offset`, `clock`, `delete_lease_record`, `worker_panic`, a `restart`
//! with nothing to close, `reset`, `dropped`) is an instant fault: a thin band. Every match
//! on [`NemesisAction`] here is exhaustive, so a new action is drawn on purpose.

use svg::node::element::{Group, Rectangle, Text, Title};

use super::{CHAR_W, LANE_H, Scale, px};
use leasesim_history::{History, NemesisAction, NemesisLine};

/// The host of an action on every host (a heal).
pub(super) const ALL: &str = "all";
/// Fill of a fault band.
pub(super) const FILL: &str = "#ef9a9a";

/// One fault, as drawn.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) struct Band {
    /// The action that started it (`pause`, `partition`…).
    pub name: String,
    /// The hosts it hits.
    pub hosts: Vec<String>,
    /// True time it started, µs.
    pub from_us: u64,
    /// True time it ended, µs; `None` for an instant fault.
    pub until_us: Option<u64>,
    /// What the lines said: particulars, the link's ends.
    pub detail: String,
}

/// How a fault ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Extent {
    Freeze,
    Down,
    Link,
    Errors,
    Instant,
}

/// How the fault `action` starts ends; `None` for an action that only ends faults (an end
/// with nothing left to end, a heal came first, is no fault of its own; a restart that ends
/// no crash is one: a crash and a start at once).
fn extent(action: NemesisAction) -> Option<Extent> {
    use NemesisAction as A;
    Some(match action {
        A::Pause | A::Suspend | A::Stall | A::Sigstop => Extent::Freeze,
        A::Crash | A::Sigkill => Extent::Down,
        A::Partition
        | A::PartitionOneWay
        | A::Isolate
        | A::Hold
        | A::Latency
        | A::LinkFlaps
        | A::DelayReplies
        | A::HoldReplies => Extent::Link,
        A::AuthorityErrors => Extent::Errors,
        A::WorkerPanic
        | A::Restart
        | A::ClockDrift
        | A::WallJump
        | A::WallOffset
        | A::Clock
        | A::DeleteLeaseRecord
        | A::Reset
        | A::AimAtHolder
        | A::Fork
        | A::Dropped => Extent::Instant,
        A::Resume
        | A::Sigcont
        | A::Start
        | A::Release
        | A::Deliver
        | A::ReleaseReplies
        | A::Serve
        | A::Heal => return None,
    })
}

/// The bands of `history`'s nemesis lines (in time order, then line order), those still
/// open ending at `end_us`.
pub(super) fn bands(history: &History, end_us: u64) -> Vec<Band> {
    let mut lines: Vec<&NemesisLine> = history.nemesis_actions().collect();
    lines.sort_by_key(|n| n.at_us);
    let mut bands = Bands::default();
    for line in lines {
        if bands.close_by(line) {
            continue;
        }
        let Some(extent) = extent(line.action) else {
            continue;
        };
        let band = opened_by(line);
        match extent {
            Extent::Instant => bands.done.push(band),
            extent => bands.open.push((band, extent, line)),
        }
    }
    bands.finish(end_us)
}

/// The band `line` starts, on its host and its peer.
fn opened_by(line: &NemesisLine) -> Band {
    let mut hosts = vec![line.host.clone()];
    hosts.extend(line.peer.clone());
    let detail = [
        line.peer.as_ref().map(|p| format!("{} ↔ {p}", line.host)),
        line.detail.clone(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    Band {
        name: line.action.to_string(),
        hosts,
        from_us: line.at_us,
        until_us: None,
        detail,
    }
}

/// An open fault with how it ends and the line that opened it.
type Open<'h> = (Band, Extent, &'h NemesisLine);

/// The bands still open and those done, as the nemesis lines are read.
#[derive(Default)]
struct Bands<'h> {
    open: Vec<Open<'h>>,
    done: Vec<Band>,
}

impl Bands<'_> {
    /// Closes the open bands the end action `line` ends (the table in the module
    /// documentation); whether it is one that closes something (a heal always is).
    fn close_by(&mut self, line: &NemesisLine) -> bool {
        let same_link = |n: &NemesisLine| {
            (n.host == line.host && n.peer == line.peer)
                || (Some(&n.host) == line.peer.as_ref() && n.peer.as_ref() == Some(&line.host))
        };
        let at = line.at_us;
        use NemesisAction as A;
        let same_link_as = |action: NemesisAction| {
            move |_: Extent, n: &NemesisLine| n.action == action && same_link(n)
        };
        match line.action {
            A::Resume | A::Sigcont => {
                self.close(at, &|e, n| e == Extent::Freeze && n.host == line.host, true)
            }
            A::Restart | A::Start => {
                self.close(at, &|e, n| e == Extent::Down && n.host == line.host, true)
            }
            A::Release => self.close(at, &same_link_as(A::Hold), false),
            A::Deliver => self.close(at, &same_link_as(A::DelayReplies), false),
            A::ReleaseReplies => self.close(at, &same_link_as(A::HoldReplies), false),
            A::Serve => self.close(at, &|e, _| e == Extent::Errors, true),
            A::Heal => {
                self.close(
                    at,
                    &|e, _| matches!(e, Extent::Freeze | Extent::Down | Extent::Link),
                    true,
                );
                true
            }
            A::Pause
            | A::AimAtHolder
            | A::Suspend
            | A::Stall
            | A::WorkerPanic
            | A::Crash
            | A::Isolate
            | A::DelayReplies
            | A::HoldReplies
            | A::ClockDrift
            | A::WallJump
            | A::WallOffset
            | A::DeleteLeaseRecord
            | A::AuthorityErrors
            | A::Partition
            | A::PartitionOneWay
            | A::Hold
            | A::Latency
            | A::LinkFlaps
            | A::Sigstop
            | A::Sigkill
            | A::Reset
            | A::Clock
            | A::Fork
            | A::Dropped => false,
        }
    }

    /// Closes the open bands that `matches` (every one when `all`, else the first) at `at`;
    /// whether any was.
    fn close(
        &mut self,
        at: u64,
        matches: &dyn Fn(Extent, &NemesisLine) -> bool,
        all: bool,
    ) -> bool {
        let mut closed = false;
        let mut index = 0;
        while index < self.open.len() {
            if (all || !closed) && matches(self.open[index].1, self.open[index].2) {
                let (mut band, _, _) = self.open.remove(index);
                band.until_us = Some(at.max(band.from_us));
                self.done.push(band);
                closed = true;
            } else {
                index += 1;
            }
        }
        closed
    }

    /// Every band, those still open ending at `end_us`, by start, name and hosts.
    fn finish(self, end_us: u64) -> Vec<Band> {
        let mut done = self.done;
        for (mut band, _, _) in self.open {
            band.until_us = Some(end_us.max(band.from_us));
            done.push(band);
        }
        done.sort_by(|a, b| (a.from_us, &a.name, &a.hosts).cmp(&(b.from_us, &b.name, &b.hosts)));
        done
    }
}

/// `band` on the lane of `host` whose top is `top`: shaded across the lane, named where the
/// name fits.
pub(super) fn draw(band: &Band, host: &str, top: f64, scale: &Scale) -> Group {
    let x0 = scale.x(band.from_us);
    let width = band
        .until_us
        .map_or(2.0, |until| (scale.x(until) - x0).max(2.0));
    let span = match band.until_us {
        Some(until) => format!(
            "from {} to {}",
            leasesim_history::time::seconds_us(band.from_us),
            leasesim_history::time::seconds_us(until)
        ),
        None => format!("at {}", leasesim_history::time::seconds_us(band.from_us)),
    };
    let title = if band.detail.is_empty() {
        format!("{} on {host} {span}", band.name)
    } else {
        format!("{} on {host} {span} ({})", band.name, band.detail)
    };
    let mut group = Group::new()
        .set("class", format!("fault {}", band.name))
        .set("data-fault", band.name.as_str())
        .add(Title::new(title))
        .add(
            Rectangle::new()
                .set("x", px(x0))
                .set("y", px(top))
                .set("width", px(width))
                .set("height", px(LANE_H))
                .set("fill", FILL)
                .set(
                    "fill-opacity",
                    if band.until_us.is_some() { 0.45 } else { 0.9 },
                ),
        );
    if width >= CHAR_W * band.name.len() as f64 + 4.0 {
        group = group.add(
            Text::new(band.name.as_str())
                .set("x", px(x0 + 2.0))
                .set("y", px(top + 33.0))
                .set("font-size", 10)
                .set("fill", "#b71c1c"),
        );
    }
    group
}

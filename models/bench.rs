//! The benchmark: interleavings explored and wall time per suite, at preemption bounds 2, 3
//! and unbounded. Not a timed test — it asserts nothing about time, it prints a table:
//!
//! ```sh
//! cargo test --release --features loom --test models -- --ignored --nocapture benchmark
//! ```
//!
//! An unbounded check that is still running after `UNBOUNDED_CAP` is stopped and reported
//! as incomplete (loom checks the cap every 20 000 interleavings).

use std::time::Duration;

use crate::support::{Explored, explore};
use crate::{gate, journal, lease, ledger};

const UNBOUNDED_CAP: Duration = Duration::from_secs(300);

type Model = Box<dyn Fn() + Send + Sync>;

/// A suite's name and a maker of fresh copies of its model.
type Suite = (&'static str, fn() -> Model);

fn suites() -> Vec<Suite> {
    vec![
        ("lease: 2 owners + clock", || {
            Box::new(lease::racing_owners(2).model())
        }),
        ("lease: 2 owners + clock in 2 steps", || {
            let steps = lease::HALF_TTL_STEPS;
            Box::new(lease::racing_owners(2).with_clock_steps(steps).model())
        }),
        ("lease: 3 owners + clock", || {
            Box::new(lease::racing_owners(3).model())
        }),
        ("lease: 1 owner, 2 tasks + clock", || {
            Box::new(lease::one_owner_two_tasks().model())
        }),
        ("lease: 1 owner, 2 tasks + rival + clock in 2 steps", || {
            Box::new(lease::one_owner_two_tasks_and_a_rival().model())
        }),
        ("ledger: 2 writers x 2 appends", || {
            Box::new(ledger::racing_appends(2, 2, None))
        }),
        ("ledger: 3 writers x 1 append", || {
            Box::new(ledger::racing_appends(3, 1, None))
        }),
        ("journal: stale vs new writer + clock", || {
            let reached = journal::Reached::default();
            Box::new(journal::stale_writer_against_new_writer(
                None, None, reached,
            ))
        }),
        ("gate: 2 runs", || {
            Box::new(gate::runs_of_one_session(2, false, None))
        }),
        ("gate: 3 runs", || {
            Box::new(gate::runs_of_one_session(3, false, None))
        }),
        ("gate: 3 runs, 1 gives up", || {
            Box::new(gate::runs_of_one_session(3, true, None))
        }),
        ("registry: shutdown vs 2 runs", || {
            Box::new(gate::shutdown_racing_two_runs(gate::Shutdown::Service))
        }),
    ]
}

fn row(suite: &str, bound: &str, explored: Explored, complete: bool) {
    let note = if complete {
        ""
    } else {
        " (stopped at the cap: incomplete)"
    };
    println!(
        "| {suite} | {bound} | {} | {:.2} s{note} |",
        explored.interleavings,
        explored.wall.as_secs_f64()
    );
}

#[test]
#[ignore = "a benchmark: run it on purpose, in release, with --nocapture"]
fn benchmark_interleavings_and_wall_time_per_suite() {
    println!("| suite | preemption bound | interleavings | wall time |");
    println!("|---|---|---|---|");
    for (suite, model) in suites() {
        for bound in [2, 3] {
            let explored = explore(Some(bound), None, model());
            row(suite, &bound.to_string(), explored, true);
        }
        let explored = explore(None, Some(UNBOUNDED_CAP), model());
        row(suite, "unbounded", explored, explored.wall < UNBOUNDED_CAP);
    }
}

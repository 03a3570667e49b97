//! What the engine's crash, fault and reboot tests share: two hosts on a network, a fault
//! scheduled on one link, and the trace read in whole milliseconds of true time.

// Each test binary that includes this file uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use leasesim_engine::{Engine, Event, HostId, NetConfig, NetFault};

/// The trace's lines as `<true ms> <host> <text>`, the time in whole milliseconds (rounded
/// down).
pub fn trace_ms(engine: &Engine) -> Vec<String> {
    let trace = String::from_utf8(engine.trace()).expect("the trace is UTF-8");
    trace
        .lines()
        .map(|line| {
            let (ns, rest) = line.trim_start().split_once(' ').expect("<ns> <text>");
            let ns: u128 = ns.parse().expect("true ns");
            format!("{} {rest}", ns / 1_000_000)
        })
        .collect()
}

/// [`trace_ms`] without the network's own fault lines (`net link …`).
pub fn hosts_ms(engine: &Engine) -> Vec<String> {
    let mut lines = trace_ms(engine);
    lines.retain(|line| !line.contains(" net link "));
    lines
}

/// An engine seeded `seed` with a network of `config` and two hosts, named `names` and added
/// in that order.
pub fn two_hosts(seed: u64, config: NetConfig, names: [&str; 2]) -> (Engine, HostId, HostId) {
    let mut engine = Engine::with_network(seed, config).expect("a valid config");
    let first = engine.add_host(names[0]).expect("a host");
    let second = engine.add_host(names[1]).expect("a host");
    (engine, first, second)
}

/// Schedules `fault` on the link from `from` to `to` (that way only) at true time `at`.
pub fn fault_at(engine: &mut Engine, at: Duration, from: HostId, to: HostId, fault: NetFault) {
    engine.schedule(at, Event::Net { from, to, fault });
}

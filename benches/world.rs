//! The world beside bare turmoil 0.7.2, and the main job's runs per second
//! (docs/benchmarks.md#the-world-beside-bare-turmoil; issue 44's goals are stated against
//! bare turmoil, kept here only as this bench's reference).
//!
//! - **world**: `World::builder()` with `replicas` replicas, their sessions drawn by the rule
//!   (docs/world.md#worlds-of-any-size), `seconds` of simulated time, a generated workload of the
//!   correct implementation and no faults; `run()`, then the history judged by every checker
//!   (`judge`: every invariant and both linearizability searches, as `leasesim run` does). The
//!   run must be judged clean (exit 1 otherwise). Its lease and ledger calls per replica per
//!   simulated second are counted from the history: that is the rate the bare side is given.
//! - **bare**: the same shape written directly on turmoil: one server host echoing every
//!   request, `replicas` client hosts each sending a 64-byte request at the world's measured
//!   per-replica rate (a fixed gap on turmoil's clock, client `i` starting `i/replicas` of a
//!   gap late) and reading the echo; turmoil set up as the world sets it up (seeded, 1 ms tick,
//!   1–5 ms latency, socket queues that hold every SYN). Every request must be answered.
//! - **campaign**: `leasesim campaign` (this build's binary) over the main job's scenarios
//!   (`sims/`) and a fixed seed range, no shrinking: runs per wall second.
//!
//! Times are wall time of the whole of one run, set-up included (building the world or the
//! `Sim`, running it, and for the world judging it); the best of the repeats is reported.
//!
//! `cargo bench --bench world`: a quick set (3 and 16 replicas × 10 s, campaign seeds 0..1).
//! Settings (environment; a bad value ends the bench with exit 2):
//! - `LEASESIM_WORLD_SIZES`: `replicas:seconds` pairs, comma-separated (default `3:10,16:10`;
//!   issue 44's set is `3:60,16:60,64:60,200:1,500:1`);
//! - `LEASESIM_WORLD_REPEAT`: runs per size and side, the best reported (default 1);
//! - `LEASESIM_WORLD_SIDES`: any of `world`, `bare`, `campaign` (default all three);
//! - `LEASESIM_WORLD_SEED`: the seed of every world and bare run (default 1);
//! - `LEASESIM_WORLD_JUDGE`: `0` to leave the checkers out of the world's time (default on);
//! - `LEASESIM_WORLD_ENGINE`: the world's engine, `turmoil` (default) or `engine` (leasesim's
//!   own, docs/world.md#the-world-on-the-engine);
//! - `LEASESIM_WORLD_RATE`: requests per replica per simulated second for the bare side when
//!   the world side is not run (default 1.0);
//! - `LEASESIM_WORLD_CAMPAIGN_SEEDS`: `A..B` (default `0..1`);
//! - `LEASESIM_WORLD_CAMPAIGN_JOBS`: the campaign's `--jobs` (default 1: one core).
//!
//! Instructions per simulated second: callgrind on one side, one size, two durations
//! (docs/benchmarks.md#instructions-per-simulated-second).
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a benchmark reads real time; the bare hosts' tasks sleep on turmoil's clock"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use leasesim::check::judge::judge;
use leasesim::check::linearizability::Budget;
use leasesim::exit::Exit;
use leasesim::sim::config::WorldEngine;
use leasesim::sim::world::{World, WorldBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "common/settings.rs"]
mod settings;
use settings::{list, one, seed_range};

/// The port the bare server listens on.
const PORT: u16 = 7070;
/// Bytes per bare request and per reply.
const SIZE: usize = 64;

/// One size: replicas and simulated seconds.
#[derive(Clone, Copy)]
struct Size {
    replicas: u32,
    seconds: u64,
}

/// What the bench runs.
struct Settings {
    sizes: Vec<Size>,
    repeat: u32,
    sides: Vec<String>,
    seed: u64,
    judge: bool,
    engine: WorldEngine,
    rate: f64,
    campaign_seeds: (u64, u64),
    campaign_jobs: u32,
}

impl Settings {
    fn from_env() -> Self {
        Settings {
            sizes: list("LEASESIM_WORLD_SIZES", "3:10,16:10", size),
            repeat: one("LEASESIM_WORLD_REPEAT", "1", positive),
            sides: list("LEASESIM_WORLD_SIDES", "world,bare,campaign", side),
            seed: one("LEASESIM_WORLD_SEED", "1", |t| {
                t.parse().map_err(|_| "a seed")
            }),
            judge: one("LEASESIM_WORLD_JUDGE", "1", switch),
            engine: one("LEASESIM_WORLD_ENGINE", "turmoil", engine),
            rate: one("LEASESIM_WORLD_RATE", "1.0", rate),
            campaign_seeds: one("LEASESIM_WORLD_CAMPAIGN_SEEDS", "0..1", seed_range),
            campaign_jobs: one("LEASESIM_WORLD_CAMPAIGN_JOBS", "1", positive),
        }
    }

    fn runs(&self, side: &str) -> bool {
        self.sides.iter().any(|s| s == side)
    }
}

fn positive(text: &str) -> Result<u32, &'static str> {
    match text.parse() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("a whole number of at least 1"),
    }
}

fn size(text: &str) -> Result<Size, &'static str> {
    const WANT: &str = "`replicas:seconds`, replicas 1..=1000, seconds 1..=86400";
    let (replicas, seconds) = text.split_once(':').ok_or(WANT)?;
    let replicas: u32 = replicas.trim().parse().map_err(|_| WANT)?;
    let seconds: u64 = seconds.trim().parse().map_err(|_| WANT)?;
    if !(1..=leasesim::history::limits::REPLICAS_MAX).contains(&replicas)
        || !(1..=leasesim::history::limits::DURATION_S_MAX).contains(&seconds)
    {
        return Err(WANT);
    }
    Ok(Size { replicas, seconds })
}

fn side(text: &str) -> Result<String, &'static str> {
    match text {
        "world" | "bare" | "campaign" => Ok(text.to_owned()),
        _ => Err("one of `world`, `bare`, `campaign`"),
    }
}

fn switch(text: &str) -> Result<bool, &'static str> {
    match text {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err("`0` or `1`"),
    }
}

fn engine(text: &str) -> Result<WorldEngine, &'static str> {
    WorldEngine::from_name(text).ok_or("`turmoil` or `engine`")
}

fn rate(text: &str) -> Result<f64, &'static str> {
    match text.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1_000.0 => Ok(r),
        _ => Err("requests per replica per simulated second, more than 0 and at most 1000"),
    }
}

/// Reports `message` and exits 1: a run did not do what the bench measures.
fn fail(message: &str) -> ! {
    eprintln!("world bench: {message}");
    std::process::exit(1);
}

/// What one world run did.
struct WorldRun {
    wall: Duration,
    judge: Duration,
    calls: u64,
}

/// The world of `size` on `engine`: the one place the bench builds it.
fn world_builder(size: Size, seed: u64, engine: WorldEngine) -> WorldBuilder {
    World::builder()
        .seed(seed)
        .replicas(size.replicas)
        .duration(Duration::from_secs(size.seconds))
        .engine(engine)
}

/// One world run of `size`, judged when `with_checks`; its lease and ledger calls counted.
fn run_world(settings: &Settings, size: Size) -> WorldRun {
    let started = Instant::now();
    let world = world_builder(size, settings.seed, settings.engine)
        .build()
        .unwrap_or_else(|e| fail(&format!("{} replicas: {e}", size.replicas)));
    let output = world
        .run()
        .unwrap_or_else(|e| fail(&format!("{} replicas: {e}", size.replicas)));
    let ran = started.elapsed();
    if settings.judge {
        let judgement = judge(&output.history, Budget::default());
        if judgement.exit_code() != Exit::Clean {
            fail(&format!(
                "{} replicas, seed {}: the correct implementation was not judged clean:\n{judgement}",
                size.replicas, settings.seed
            ));
        }
    }
    let calls = output
        .history
        .ops()
        .filter(|op| {
            let name = op.op.name();
            name.starts_with("lease_") || name.starts_with("ledger_")
        })
        .count() as u64;
    WorldRun {
        wall: started.elapsed(),
        judge: started.elapsed() - ran,
        calls,
    }
}

/// turmoil set up as the world sets it up (crates/sim/src/world.rs, `build_sim`): seeded,
/// its 1 ms tick, 1–5 ms latency, socket queues that hold every client's SYN.
fn bare_sim(seed: u64, size: Size) -> turmoil::Sim<'static> {
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(seed)
        .epoch(std::time::UNIX_EPOCH)
        .simulation_duration(Duration::from_secs(size.seconds + 10))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .tcp_capacity(64.max(4 * size.replicas as usize));
    builder.build()
}

/// One bare run of `size` at `rate` requests per client per simulated second: the wall time
/// and the requests answered (each checked to have been replied to).
fn run_bare(seed: u64, size: Size, rate: f64) -> (Duration, u64) {
    let started = Instant::now();
    let answered = Arc::new(AtomicU64::new(0));
    let replies = Arc::new(AtomicU64::new(0));
    let mut sim = bare_sim(seed, size);
    let counter = answered.clone();
    sim.host("server", move || server(counter.clone()));
    let gap = Duration::from_secs_f64(1.0 / rate);
    let end = Duration::from_secs(size.seconds);
    for i in 0..size.replicas {
        let offset = gap * i / size.replicas;
        let replies = replies.clone();
        sim.client(
            format!("replica-{}", i + 1),
            client(offset, gap, end, replies),
        );
    }
    if let Err(e) = sim.run() {
        fail(&format!("bare turmoil, {} clients: {e}", size.replicas));
    }
    let (answered, replies) = (
        answered.load(Ordering::Relaxed),
        replies.load(Ordering::Relaxed),
    );
    if answered != replies || replies == 0 {
        fail(&format!(
            "bare turmoil, {} clients: {answered} requests answered, {replies} replies read",
            size.replicas
        ));
    }
    (started.elapsed(), replies)
}

/// The bare server: echoes every request on every connection, counting them.
async fn server(answered: Arc<AtomicU64>) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (mut stream, _) = listener.accept().await?;
        let answered = answered.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; SIZE];
            while stream.read_exact(&mut buf).await.is_ok() {
                if stream.write_all(&buf).await.is_err() {
                    return;
                }
                answered.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// One bare client: a request at `offset`, `offset + gap`, … before `end` on turmoil's clock,
/// each reply read before the next; then it sleeps until `end`.
async fn client(
    offset: Duration,
    gap: Duration,
    end: Duration,
    replies: Arc<AtomicU64>,
) -> turmoil::Result {
    let start = tokio::time::Instant::now();
    let mut stream = turmoil::net::TcpStream::connect(("server", PORT)).await?;
    let mut buf = [7u8; SIZE];
    let mut at = offset;
    while at < end {
        tokio::time::sleep_until(start + at).await;
        stream.write_all(&buf).await?;
        stream.read_exact(&mut buf).await?;
        replies.fetch_add(1, Ordering::Relaxed);
        at += gap;
    }
    tokio::time::sleep_until(start + end).await;
    Ok(())
}

/// The best (shortest) of `repeat` runs by `wall`.
fn best<T>(repeat: u32, run: impl Fn() -> T, wall: fn(&T) -> Duration) -> T {
    let mut best = run();
    for _ in 1..repeat {
        let next = run();
        if wall(&next) < wall(&best) {
            best = next;
        }
    }
    best
}

/// Wall milliseconds per simulated second.
fn per_s(wall: Duration, size: Size) -> f64 {
    wall.as_secs_f64() * 1e3 / size.seconds as f64
}

/// One size: the world (its rate measured), then bare turmoil at that rate.
fn row(settings: &Settings, size: Size) {
    let world = settings
        .runs("world")
        .then(|| best(settings.repeat, || run_world(settings, size), |r| r.wall));
    let rate = world.as_ref().map_or(settings.rate, |w| {
        w.calls as f64 / f64::from(size.replicas) / size.seconds as f64
    });
    let bare = settings.runs("bare").then(|| {
        best(
            settings.repeat,
            || run_bare(settings.seed, size, rate),
            |r| r.0,
        )
    });
    let show = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
    let world_ms = world.as_ref().map(|w| per_s(w.wall, size));
    let judge_ms = world.as_ref().map(|w| per_s(w.judge, size));
    let bare_ms = bare.as_ref().map(|b| per_s(b.0, size));
    let ratio = match (world_ms, bare_ms) {
        (Some(w), Some(b)) => format!("{:.2}x", b / w),
        _ => "-".to_owned(),
    };
    println!(
        "{:>8} {:>4} {:>9} {:>9} {:>11} {:>9} {:>9} {:>11} {ratio:>9}",
        size.replicas,
        size.seconds,
        world.as_ref().map_or(0, |w| w.calls),
        format!("{rate:.3}"),
        show(world_ms),
        show(judge_ms),
        bare.as_ref().map_or(0, |b| b.1),
        show(bare_ms),
    );
}

/// `leasesim campaign` over `sims/` and the seed range: runs per wall second.
fn campaign(settings: &Settings) {
    let out = tempfile::tempdir().unwrap_or_else(|e| fail(&format!("a temporary folder: {e}")));
    let (a, b) = settings.campaign_seeds;
    let started = Instant::now();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["campaign", "--sims", "sims", "--no-shrink", "--no-progress"])
        .args(["--seeds", &format!("{a}..{b}")])
        .args(["--jobs", &settings.campaign_jobs.to_string()])
        .arg("--out")
        .arg(out.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| fail(&format!("leasesim campaign: {e}")));
    let wall = started.elapsed();
    let summary = std::fs::read_to_string(out.path().join("summary.json"))
        .unwrap_or_else(|e| fail(&format!("the campaign's summary.json: {e}")));
    let summary: serde_json::Value = serde_json::from_str(&summary)
        .unwrap_or_else(|e| fail(&format!("the campaign's summary.json: {e}")));
    let runs = summary["runs"].as_u64().unwrap_or(0);
    if !status.success() || runs == 0 {
        fail(&format!(
            "the campaign over seeds {a}..{b} was not clean ({status}, {runs} runs)"
        ));
    }
    println!(
        "campaign: sims/, seeds {a}..{b}, --jobs {}: {runs} runs in {:.1} s = {:.2} runs/s",
        settings.campaign_jobs,
        wall.as_secs_f64(),
        runs as f64 / wall.as_secs_f64()
    );
}

fn main() {
    let settings = Settings::from_env();
    let checks = if settings.judge {
        "judged"
    } else {
        "not judged"
    };
    println!(
        "seed {}, best of {}; world: fault-free generated workload, {checks}; \
         ms = wall ms per simulated s (lower is faster); rate = lease and ledger calls per \
         replica per simulated s; speed = the world's speed as a multiple of bare turmoil's",
        settings.seed, settings.repeat
    );
    if settings.runs("world") || settings.runs("bare") {
        println!(
            "{:>8} {:>4} {:>9} {:>9} {:>11} {:>9} {:>9} {:>11} {:>9}",
            "replicas",
            "s",
            "calls",
            "rate",
            "world ms",
            "judge ms",
            "bare reqs",
            "bare ms",
            "speed"
        );
        for &size in &settings.sizes {
            row(&settings, size);
        }
    }
    if settings.runs("campaign") {
        campaign(&settings);
    }
}

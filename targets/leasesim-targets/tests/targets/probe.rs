//! With the interposer's source installed as the targets binary installs it, a host's
//! `SystemTime::now()` inside a world is that host's wall clock: a wall offset on one replica
//! shows there and not on the other. A probe backend defined here, through the library API.

use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use leasesim::lease::SessionLease;
use leasesim::sim::backend::{
    AuthorityHost, Backend, BackendView, Grpc, HostResult, ReplicaEnv, WorldBackend,
};
use leasesim::sim::config::WorldEngine;
use leasesim::sim::hosted::{self, ClockKind};
use leasesim::sim::schedule::{Fault, FaultSchedule};
use leasesim::sim::true_time::true_now;
use leasesim::sim::world::World;

/// One reading on a replica: true time, what `SystemTime::now()` said, the host's wall clock.
type Reading = (String, Duration, Duration, i128);

/// The gRPC backend, with a probe on each replica reading `SystemTime::now()` once a second.
#[derive(Debug, Default, Clone)]
struct Probe(Arc<Mutex<Vec<Reading>>>);

impl WorldBackend for Probe {
    fn name(&self) -> &str {
        "system-time-probe"
    }

    fn view(&self) -> BackendView {
        Grpc.view()
    }

    fn serve(&self, host: AuthorityHost) -> std::pin::Pin<Box<dyn Future<Output = HostResult>>> {
        Grpc.serve(host)
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let (host, clock, readings) = (replica.name().to_owned(), replica.clock(), self.0.clone());
        tokio::spawn(async move {
            loop {
                // What unmodified code reads: the point of this test.
                #[allow(clippy::disallowed_types)]
                let system = std::time::SystemTime::now().duration_since(UNIX_EPOCH);
                let true_at = true_now();
                readings.lock().unwrap().push((
                    host.clone(),
                    true_at,
                    system.expect("after the epoch"),
                    clock.wall().unix_ns,
                ));
                clock.sleep(Duration::from_secs(1)).await;
            }
        });
        Grpc.client(replica)
    }
}

fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        leasesim_interposer::install(leasesim_interposer::Source {
            now: |kind| {
                hosted::clock_now(match kind {
                    leasesim_interposer::ClockKind::Wall => ClockKind::Wall,
                    leasesim_interposer::ClockKind::Monotonic => ClockKind::Monotonic,
                })
            },
            fill_random: hosted::fill_random,
        })
        .expect("installed once");
    });
}

#[test]
fn a_hosts_system_time_now_is_that_hosts_wall_clock() {
    install();
    for engine in [WorldEngine::Turmoil, WorldEngine::Engine] {
        system_time_now_is_the_hosts_wall_clock_on(engine);
    }
    // Off the world's thread, the real clock answers again (not the world's 2026 epoch).
    #[allow(clippy::disallowed_types)]
    let real = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap();
    assert_ne!(
        real.as_nanos() as i128,
        leasesim::sim::config::WALL_EPOCH.unix_ns
    );
}

/// The readings fall on whole seconds, one on the offset's instant (10 s): the nemesis acts
/// before any host's work there, so that reading shows the offset.
fn system_time_now_is_the_hosts_wall_clock_on(engine: WorldEngine) {
    let probe = Probe::default();
    let schedule = FaultSchedule::new().at(
        10_000,
        Fault::WallOffset {
            host: "replica-1".into(),
            offset_ms: -3_600_000,
        },
    );
    World::builder()
        .engine(engine)
        .seed(7)
        .replicas(2)
        .duration(Duration::from_secs(30))
        .backend(Backend::new(probe.clone()))
        .schedule(schedule)
        .build()
        .unwrap()
        .run()
        .unwrap();
    let readings = probe.0.lock().unwrap();
    assert!(
        readings.len() >= 50,
        "{engine:?}: {} readings",
        readings.len()
    );
    let epoch_ns = leasesim::sim::config::WALL_EPOCH.unix_ns;
    for (host, true_at, system, host_wall_ns) in readings.iter() {
        assert_eq!(
            system.as_nanos() as i128,
            *host_wall_ns,
            "{host} at {true_at:?}"
        );
        let offset_ns = *host_wall_ns - epoch_ns - true_at.as_nanos() as i128;
        let expected = if host == "replica-1" && *true_at >= Duration::from_secs(10) {
            -3_600_000_000_000
        } else {
            0
        };
        assert_eq!(offset_ns, expected, "{engine:?}: {host} at {true_at:?}");
    }
    let at_the_offset =
        |(host, true_at, ..): &&Reading| host == "replica-1" && *true_at == Duration::from_secs(10);
    assert!(
        readings.iter().any(|r| at_the_offset(&r)),
        "{engine:?}: a reading at the offset's instant"
    );
}

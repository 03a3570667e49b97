//! A fault schedule drawn from the seed: a few faults of every kind the world supports, spread
//! over the first two thirds of the run, healed at two thirds so the rest of the run shows
//! recovery. Swarm profiles (which kinds, how often, how hard) come with the campaign runner.

use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;

use super::schedule::{Fault, FaultSchedule};
use super::seed::{Subsystem, between, rng};
use super::world::{WorldConfig, replica_name};
use crate::hooks::PausePoint;

/// Draws a schedule for `config` from its seed (the `Faults` stream, so the workload is the
/// same with and without faults).
pub fn random_schedule(config: &WorldConfig) -> FaultSchedule {
    let mut rng = rng(config.seed, Subsystem::Faults);
    let span_ms = config.duration.as_millis() as u64 * 2 / 3;
    let ttl_ms = config.ttl.as_millis() as u64;
    let count = between(&mut rng, 2, 6);
    let mut schedule = FaultSchedule::new().heal_at(span_ms);
    for _ in 0..count {
        let at_ms = between(&mut rng, 0, span_ms.saturating_sub(1));
        let fault = draw(&mut rng, config, ttl_ms);
        schedule = schedule.at(at_ms, fault);
    }
    schedule.faults.sort_by_key(|f| f.at_ms);
    schedule
}

fn replica(rng: &mut ChaCha20Rng, config: &WorldConfig) -> String {
    replica_name(between(rng, 1, u64::from(config.replicas)) as u32)
}

fn service(rng: &mut ChaCha20Rng) -> String {
    if rng.next_u32().is_multiple_of(2) {
        "lease"
    } else {
        "ledger"
    }
    .to_owned()
}

/// The pause points a replica reaches (a service host reaches only the handler start).
const REPLICA_POINTS: [PausePoint; 3] = [
    PausePoint::BeforeAppendSend,
    PausePoint::BeforeRenewSend,
    PausePoint::AfterGrantReceived,
];

fn draw(rng: &mut ChaCha20Rng, config: &WorldConfig, ttl_ms: u64) -> Fault {
    let point = REPLICA_POINTS[between(rng, 0, 2) as usize];
    match between(rng, 0, 11) {
        0 => Fault::Partition {
            a: replica(rng, config),
            b: service(rng),
        },
        1 => Fault::Isolate {
            host: replica(rng, config),
        },
        2 => Fault::Pause {
            host: replica(rng, config),
            duration_ms: between(rng, ttl_ms / 2, ttl_ms * 2),
            at_point: (rng.next_u32().is_multiple_of(2)).then_some(point),
        },
        3 => Fault::Suspend {
            host: replica(rng, config),
            duration_ms: between(rng, ttl_ms / 2, ttl_ms * 2),
            at_point: None,
        },
        4 => Fault::Stall {
            host: replica(rng, config),
            point,
            duration_ms: between(rng, 100, ttl_ms),
        },
        5 => Fault::ClockDrift {
            host: replica(rng, config),
            ppm: between(rng, 0, 800_000) as i64 - 400_000,
        },
        6 => Fault::WallJump {
            host: replica(rng, config),
            delta_ms: between(rng, 0, 2 * 3_600_000) as i64 - 3_600_000,
        },
        7 => Fault::Crash {
            host: replica(rng, config),
        },
        8 => Fault::LeaseServiceRestarts {
            every_ms: between(rng, 1_000, ttl_ms),
            count: between(rng, 1, 3) as u32,
        },
        9 => Fault::Latency {
            a: replica(rng, config),
            b: service(rng),
            latency_ms: between(rng, 1, 200),
            jitter_ms: between(rng, 0, 200),
        },
        10 => Fault::LinkFlaps {
            a: replica(rng, config),
            b: service(rng),
            fail_ppm: between(rng, 1, 2_000) as u32,
        },
        _ => Fault::DelayReplies {
            from: "lease".into(),
            to: replica(rng, config),
            delay_ms: between(rng, ttl_ms, ttl_ms * 2),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_valid_schedule() {
        let mut config = WorldConfig {
            seed: 42,
            ..WorldConfig::default()
        };
        let schedule = random_schedule(&config);
        assert_eq!(schedule, random_schedule(&config));
        assert_eq!(schedule.validate(&config.hosts()), Ok(()));
        for seed in 0..200 {
            config.seed = seed;
            let drawn = random_schedule(&config);
            assert_eq!(drawn.validate(&config.hosts()), Ok(()), "seed {seed}");
        }
        config.seed = 42;
        assert!((2..=6).contains(&schedule.faults.len()));
        assert_eq!(schedule.heal_at_ms, Some(40_000));
        config.seed = 43;
        assert_ne!(schedule, random_schedule(&config));
    }
}

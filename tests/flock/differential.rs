//! The flock model against real flock (issue 43): one scripted sequence of acquires, renews,
//! releases, forks (`exit`, `linger`), kills and restarts runs on real processes
//! (`leasesim flock`) and on `FlockLease` over the world's model of one host
//! (`leasesim::lease::flock::model`); the holder sequence — every reply, with its token —
//! must be the same, under the correct code and under `unlock-from-any-process`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::ManualClock;
use leasesim::lease::flock::driver::{Failure, Reply, Verb};
use leasesim::lease::flock::model::{Host, Process};
use leasesim::lease::{
    FlockLease, FlockLeaseConfig, Lease, LeaseError, Owner, SessionId, SessionLease,
};
use leasesim::mutant::Mutant;

use crate::support::{Bound, Holder};

/// One step: who does what. Actors are named by owner (`A`, `B`); `Restart` starts the
/// actor again as a new process with the next incarnation.
#[derive(Clone, Copy, Debug)]
enum Step {
    Acquire(&'static str, &'static str),
    Renew(&'static str, &'static str),
    Release(&'static str, &'static str),
    ForkExit(&'static str, &'static str),
    ForkLinger(&'static str),
    Kill(&'static str),
    Restart(&'static str),
}

use Step::*;

/// The sequence: a child's release keeps the parent's hold; a lingering child does not keep
/// a released hold; a killed holder is taken over at once unless a lingering child still has
/// its generation lock open. The TTL (30 s) never runs out during it.
const SEQUENCE: &[Step] = &[
    Acquire("A", "s1"),
    ForkExit("A", "s1"),
    Acquire("B", "s1"),
    Renew("A", "s1"),
    ForkLinger("A"),
    Release("A", "s1"),
    Acquire("B", "s1"),
    ForkLinger("B"),
    Kill("B"),
    Acquire("A", "s1"),
    Acquire("A", "s2"),
    Kill("A"),
    Restart("B"),
    Acquire("B", "s2"),
    Acquire("B", "s1"),
];

/// What the correct code answers, step by step (`-` for steps without a reply).
const CORRECT: &[&str] = &[
    "ok t1", "ok", "held t1", "ok t1", "ok", "ok", "ok t2", "ok", "-", "held t2", "ok t1", "-",
    "-", "ok t2", "held t2",
];

const TTL: &str = "30s";

/// A reply of the real driver, spelled as the comparison reads it.
fn spell_reply(reply: &Reply) -> String {
    match (reply.ok, reply.token, reply.error) {
        (true, Some(token), _) => format!("ok t{token}"),
        (true, None, _) => "ok".into(),
        (false, _, Some(Failure::Held)) => spell_held(reply.holder_token),
        (false, _, error) => format!("{error:?}"),
    }
}

fn spell_held(token: Option<u64>) -> String {
    token.map_or("held none".into(), |t| format!("held t{t}"))
}

/// The real side: a `leasesim flock` process per actor over one temporary directory.
fn on_real_flock(mutant: Option<Mutant>) -> Result<Vec<String>, String> {
    let bound = Bound::new(Duration::from_secs(30));
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut actors: BTreeMap<&str, (Holder, u64)> = BTreeMap::new();
    let mut dead: Vec<Holder> = Vec::new();
    let mut seen = Vec::new();
    let start = |name: &str, incarnation: u64| {
        let n = incarnation.to_string();
        let args = ["--ttl", TTL, "--incarnation", n.as_str()];
        Holder::start(dir.path(), name, mutant, &args, &bound)
    };
    for &step in SEQUENCE {
        let name = actor(step);
        if !actors.contains_key(name) {
            actors.insert(name, (start(name, 0)?, 0));
        }
        let (holder, incarnation) = actors.get_mut(name).ok_or("started above")?;
        let (command, verb) = match step {
            Acquire(_, s) => (format!("acquire {s}"), Verb::Acquire),
            Renew(_, s) => (format!("renew {s}"), Verb::Renew),
            Release(_, s) => (format!("release {s}"), Verb::Release),
            ForkExit(_, s) => (format!("fork exit {s}"), Verb::ForkExit),
            ForkLinger(_) => ("fork linger".into(), Verb::ForkLinger),
            Kill(_) => {
                holder.kill()?;
                seen.push("-".into());
                continue;
            }
            Restart(_) => {
                let next = *incarnation + 1;
                let old = std::mem::replace(holder, start(name, next)?);
                *incarnation = next;
                dead.push(old);
                seen.push("-".into());
                continue;
            }
        };
        let reply = holder.call(&command, verb, &bound)?;
        if let Some(child) = reply.child_pid.filter(|_| verb == Verb::ForkLinger) {
            holder.adopt(child);
        }
        seen.push(spell_reply(&reply));
    }
    Ok(seen)
}

fn actor(step: Step) -> &'static str {
    match step {
        Acquire(a, _) | Renew(a, _) | Release(a, _) | ForkExit(a, _) => a,
        ForkLinger(a) | Kill(a) | Restart(a) => a,
    }
}

/// One process of the model and what its driver would keep: the last lease per session.
struct ModelActor {
    process: Arc<Process>,
    lease: FlockLease,
    owner: Owner,
    leases: BTreeMap<String, Lease>,
}

impl ModelActor {
    fn start(host: &Host, name: &str, incarnation: u64, mutant: Option<Mutant>) -> Self {
        let process = host.spawn();
        let config = FlockLeaseConfig {
            mutant,
            ..FlockLeaseConfig::new("/leases", Duration::from_secs(30))
        };
        let lease = FlockLease::on(process.clone(), config).expect("a TTL of 30 s");
        ModelActor {
            process,
            lease,
            owner: Owner::new(name, incarnation),
            leases: BTreeMap::new(),
        }
    }
}

fn spell_grant(result: Result<Lease, LeaseError>) -> (String, Option<Lease>) {
    match result {
        Ok(lease) => (format!("ok t{}", lease.token()), Some(lease)),
        Err(LeaseError::Held { holder_token }) => (spell_held(holder_token), None),
        Err(other) => (format!("{other:?}"), None),
    }
}

/// The model side: the same steps on `FlockLease` over one modelled host.
async fn on_the_model(mutant: Option<Mutant>) -> Vec<String> {
    let host = Host::new(Arc::new(ManualClock::new()));
    let mut actors: BTreeMap<&str, ModelActor> = BTreeMap::new();
    let mut lingering: Vec<FlockLease> = Vec::new();
    let mut seen = Vec::new();
    for &step in SEQUENCE {
        let name = actor(step);
        let me = actors
            .entry(name)
            .or_insert_with(|| ModelActor::start(&host, name, 0, mutant));
        let spelled = match step {
            Acquire(_, s) => {
                let session = SessionId::new(s).expect("a valid id");
                let (spelled, lease) = spell_grant(me.lease.acquire(&session, &me.owner).await);
                me.leases.extend(lease.map(|l| (s.to_owned(), l)));
                spelled
            }
            Renew(_, s) => {
                let (spelled, lease) = spell_grant(me.lease.renew(&me.leases[s]).await);
                me.leases.extend(lease.map(|l| (s.to_owned(), l)));
                spelled
            }
            Release(_, s) => match me.lease.release(&me.leases[s]).await {
                Ok(()) => "ok".into(),
                Err(e) => format!("{e:?}"),
            },
            ForkExit(_, s) => {
                let child = me.process.fork();
                let forked = me.lease.forked(child.clone()).expect("a model fork");
                // The child's release is not a reply: the driver logs it, answers `ok`.
                let _ = forked.release(&me.leases[s]).await;
                drop(forked);
                child.exit();
                "ok".into()
            }
            ForkLinger(_) => {
                let child = me.process.fork();
                lingering.push(me.lease.forked(child).expect("a model fork"));
                "ok".into()
            }
            Kill(_) => {
                host.kill(me.process.id());
                "-".into()
            }
            Restart(_) => {
                let next = me.owner.incarnation + 1;
                *me = ModelActor::start(&host, name, next, mutant);
                "-".into()
            }
        };
        seen.push(spelled);
    }
    seen
}

fn model(mutant: Option<Mutant>) -> Vec<String> {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(on_the_model(mutant))
}

#[test]
fn the_model_gives_real_flocks_holder_sequence() {
    let real = on_real_flock(None).unwrap();
    assert_eq!(real, CORRECT, "real flock, correct code");
    assert_eq!(model(None), real, "the model, correct code");
}

#[test]
fn the_model_gives_real_flocks_holder_sequence_under_unlock_from_any_process() {
    let mutant = Some(Mutant::UnlockFromAnyProcess);
    let real = on_real_flock(mutant).unwrap();
    assert_eq!(
        real[2], "ok t2",
        "the child's release freed A's hold: {real:?}"
    );
    assert_eq!(model(mutant), real, "the model, unlock-from-any-process");
}

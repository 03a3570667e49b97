//! The conformance suite against a **real** Kubernetes cluster (the `kube-cluster` feature),
//! in real time: not run in CI (docs/backends.md#kubelease).
//!
//! ```text
//! LEASESIM_KUBE_NAMESPACE=leasesim-test \
//!   cargo test --features kube-cluster --test core kube_cluster -- --ignored
//! ```
//!
//! Every rule runs at once, each in its own namespace of session ids, under a prefix of its
//! own per run (`LEASESIM_KUBE_PREFIX`, default `run-<unix seconds>-`): Lease objects are never
//! deleted, so a second run must not meet the first one's objects.

use std::sync::Arc;
use std::time::Duration;

use leasesim::clock::{Clock, RealClock};
use leasesim::conformance::{RULES, Subject};
use leasesim::lease::{KubeLease, KubeLeaseConfig};

/// Small enough for a quick run, large enough for a cluster's round trips (whole seconds).
const TTL: Duration = Duration::from_secs(3);

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

async fn cluster_subject(namespace: &str, prefix: &str) -> Subject {
    let config = KubeLeaseConfig {
        namespace: namespace.to_owned(),
        ttl: TTL,
        clock: Arc::new(RealClock::new()),
        mutant: None,
        calls: None,
        hooks: Default::default(),
    };
    let lease = KubeLease::from_cluster(config)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Subject::with_real_time(Arc::new(lease), TTL)
        .with_session_prefix(prefix)
        .unwrap_or_else(|e| panic!("LEASESIM_KUBE_PREFIX: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real cluster (kubeconfig, a namespace, RBAC get/create/update on leases): see docs/backends.md#kubelease"]
async fn conformance_suite_against_a_real_cluster() {
    let namespace = env("LEASESIM_KUBE_NAMESPACE")
        .expect("set LEASESIM_KUBE_NAMESPACE to the namespace the Lease objects go in");
    let unix_s = RealClock::new().wall().unix_ns / 1_000_000_000;
    let prefix = env("LEASESIM_KUBE_PREFIX").unwrap_or_else(|| format!("run-{unix_s}-"));
    eprintln!("Lease objects of this run: namespace {namespace}, session prefix {prefix}");
    let mut runs = Vec::new();
    for rule in RULES {
        let subject = cluster_subject(&namespace, &prefix).await;
        runs.push((rule.name, tokio::spawn((rule.run)(subject))));
    }
    let mut broken = Vec::new();
    for (name, run) in runs {
        match run.await {
            Ok(Ok(())) => {}
            Ok(Err(violation)) => broken.push(violation.to_string()),
            Err(panic) => broken.push(format!("{name} panicked: {panic}")),
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

//! The Kubernetes Lease backend in the world (docs/backends.md#kubelease): the
//! simulated [`ApiServer`] on host `apiserver`, and on each replica a [`KubeLease`] over a
//! `kube::Client` built inside the replica's runtime on turmoil TCP, on the replica's clock.
//!
//! What the history gets: every write the API server accepts is a `write` line (through
//! [`AuthorityHost::write_sink`]); every API call a `KubeLease` makes is a `kube_*` operation
//! line of the owner's process ([`RecordedKubeCalls`]); the lease calls themselves are
//! `lease_*` operation lines as for every backend (the world wraps the client). No
//! `decision` lines: the API server orders writes but judges no expiry, so the config line's
//! `authority` is `null` and EXCL is judged on the holders.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{AuthorityHost, AuthorityKind, BackendView, HostResult, ReplicaEnv, WorldBackend};
use crate::apiserver::{ApiServer, ApiServerConfig};
use crate::record::{Invocation, Recorder};
use crate::to_history::ToHistory;
use leasesim_core::clock::Clock;
use leasesim_core::lease::{Owner, SessionId, SessionLease};
use leasesim_history::{Op, OpResult, Outcome, hosts};
use leasesim_kube::{KubeCall, KubeCalls, KubeLease, KubeLeaseConfig, KubeReply, client_over};

/// Port of the API server on its host (plain HTTP).
pub const APISERVER_PORT: u16 = 8080;

/// The namespace of the world's Lease objects.
pub const NAMESPACE: &str = "leasesim";

/// The Kubernetes Lease backend: [`ApiServer`] on host `apiserver` (it restarts, on its
/// durable disk; no record deletion: deleting Lease objects is outside KubeLease's contract),
/// reached by [`KubeLease`]. Its TTL must be whole seconds (`leaseDurationSeconds`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Kube;

impl WorldBackend for Kube {
    fn name(&self) -> &str {
        "kube"
    }

    fn view(&self) -> BackendView {
        BackendView {
            host: hosts::APISERVER.to_owned(),
            authority: AuthorityKind::Holders,
            record_deletion: false,
            restarts: true,
            error_windows: true,
            drift: true,
            freezes: true,
            own_thread: false,
            forks: false,
        }
    }

    fn check_ttl(&self, ttl: Duration) -> Result<(), String> {
        check_whole_seconds(ttl)
    }

    fn serve(&self, host: AuthorityHost) -> Pin<Box<dyn Future<Output = HostResult>>> {
        Box::pin(async move {
            let config = ApiServerConfig::default()
                .with_write_sink(host.write_sink())
                .with_faults(host.error_windows())
                .with_hooks(host.hooks());
            let server = Arc::new(ApiServer::open(host.disk(), config).await?);
            let incoming = host.listen(APISERVER_PORT).await?;
            server.serve(incoming).await?;
            Ok(())
        })
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        let client = client_over(
            replica.dialer(),
            &replica.authority_addr(APISERVER_PORT),
            NAMESPACE,
            replica.client_config().call_timeout,
        );
        let calls = RecordedKubeCalls::new(replica.recorder.clone(), replica.clock());
        let config = KubeLeaseConfig {
            namespace: NAMESPACE.to_owned(),
            ttl: replica.ttl,
            clock: replica.clock(),
            mutant: replica.mutant(),
            calls: Some(Arc::new(calls)),
            hooks: replica.hooks(),
        };
        Ok(Arc::new(KubeLease::new(client, config)?))
    }
}

/// Refuses a TTL that is not a whole, non-zero number of seconds (`leaseDurationSeconds`).
///
/// # Errors
/// A message naming the TTL and what to use instead.
pub fn check_whole_seconds(ttl: Duration) -> Result<(), String> {
    if ttl.is_zero() || ttl.subsec_nanos() != 0 {
        return Err(format!(
            "the kube backend needs a TTL of whole seconds (a Lease's leaseDurationSeconds is an \
             integer), got {} ms; use e.g. ttl_ms = {}",
            ttl.as_millis(),
            ttl.as_secs().max(1) * 1_000
        ));
    }
    Ok(())
}

/// Records each Lease API call of a replica's [`KubeLease`] as a `kube_*` operation of the
/// calling owner's process, on the replica's clock; or, made with
/// [`RecordedKubeCalls::for_target`], a target adapter's own reads as `target_get` and its
/// crate's signal as `target_signal` (docs/targets.md#kube-lease-manager).
#[derive(Debug)]
pub struct RecordedKubeCalls {
    recorder: Recorder,
    clock: Arc<dyn Clock>,
    open: Mutex<Open>,
    /// Whether gets are a target adapter's own reads (`target_get`).
    target: bool,
}

#[derive(Debug, Default)]
struct Open {
    next: u64,
    /// Calls invoked and not completed yet, with whether each is a get.
    calls: BTreeMap<u64, (Invocation, bool)>,
}

impl RecordedKubeCalls {
    /// Records into `recorder`, timed on `clock`.
    pub fn new(recorder: Recorder, clock: Arc<dyn Clock>) -> Self {
        RecordedKubeCalls {
            recorder,
            clock,
            open: Mutex::new(Open::default()),
            target: false,
        }
    }

    /// Records a target adapter's calls into `recorder`, timed on `clock`: its gets as
    /// `target_get` (the crate's own API calls go unrecorded, so a `kube_get` would have
    /// LIN-LEASE judge reads of writes it never saw), and [`RecordedKubeCalls::signal`].
    pub fn for_target(recorder: Recorder, clock: Arc<dyn Clock>) -> Self {
        RecordedKubeCalls {
            target: true,
            ..Self::new(recorder, clock)
        }
    }

    /// Records that `owner`'s crate changed its "I lead" signal for `session` to `leads`: a
    /// `target_signal` operation, invoked and completed now.
    pub fn signal(&self, owner: &Owner, session: &SessionId, leads: bool) {
        let op = Op::TargetSignal {};
        let invocation = self
            .recorder
            .invoke(owner.to_history(), session, op, &self.clock);
        self.recorder
            .complete(invocation, Outcome::Ok, OpResult::Signal { leads });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl KubeCalls for RecordedKubeCalls {
    fn invoke(&self, owner: &Owner, session: &SessionId, call: &KubeCall) -> u64 {
        let is_get = matches!(call, KubeCall::Get);
        let op = match call {
            KubeCall::Get if self.target => Op::TargetGet {},
            call => kube_op(call),
        };
        let invocation = self
            .recorder
            .invoke(owner.to_history(), session, op, &self.clock);
        let mut open = self.lock();
        open.next += 1;
        let id = open.next;
        open.calls.insert(id, (invocation, is_get));
        id
    }

    fn complete(&self, call_id: u64, reply: &KubeReply) {
        let Some((invocation, is_get)) = self.lock().calls.remove(&call_id) else {
            return;
        };
        let (outcome, result) = kube_result(reply, is_get);
        self.recorder.complete(invocation, outcome, result);
    }
}

/// The history's operation for `call`.
fn kube_op(call: &KubeCall) -> Op {
    match call.clone() {
        KubeCall::Get => Op::KubeGet {},
        KubeCall::Create {
            holder_identity,
            transitions,
        } => Op::KubeCreate {
            holder_identity,
            transitions,
        },
        KubeCall::Update {
            expected_rv,
            holder_identity,
            transitions,
        } => Op::KubeUpdate {
            expected_rv,
            holder_identity,
            transitions,
        },
        KubeCall::Delete { expected_rv } => Op::KubeDelete { expected_rv },
    }
}

/// The outcome and result of `reply` as docs/history.md documents them and the table of
/// docs/checks.md#definite classes them: a 404 is `ok` for a get and `fail` otherwise; a 409
/// `fail`; a 5xx `info` (it may have been applied), any other 4xx `fail` (refused before
/// storage); no answer (a timeout, a broken connection) `info`.
fn kube_result(reply: &KubeReply, is_get: bool) -> (Outcome, OpResult) {
    match reply.clone() {
        KubeReply::Object {
            resource_version,
            holder_identity,
            transitions,
        } => (
            Outcome::Ok,
            OpResult::KubeObject {
                resource_version,
                holder_identity,
                transitions,
            },
        ),
        KubeReply::NotFound if is_get => (Outcome::Ok, OpResult::KubeNotFound {}),
        KubeReply::NotFound => (Outcome::Fail, OpResult::KubeNotFound {}),
        KubeReply::Conflict => (Outcome::Fail, OpResult::KubeConflict {}),
        KubeReply::Status { code, reason } => {
            let outcome = if code >= 500 {
                Outcome::Info
            } else {
                Outcome::Fail
            };
            (outcome, OpResult::KubeStatus { code, reason })
        }
        KubeReply::Transport { reason } => (Outcome::Info, OpResult::Unavailable { reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outcome of a write answered `reply`.
    fn outcome(reply: KubeReply) -> Outcome {
        kube_result(&reply, false).0
    }

    fn status(code: u16) -> KubeReply {
        KubeReply::Status {
            code,
            reason: "x".into(),
        }
    }

    #[test]
    fn not_found_is_ok_only_for_a_get() {
        let get = kube_result(&KubeReply::NotFound, true).0;
        assert_eq!(get, Outcome::Ok);
        assert_eq!(outcome(KubeReply::NotFound), Outcome::Fail);
    }

    /// docs/checks.md#definite: authorization and admission run before storage, so their
    /// refusals are definite; a server error or no answer may follow a write that was stored.
    #[test]
    fn statuses_follow_the_definite_table() {
        assert_eq!(outcome(KubeReply::Conflict), Outcome::Fail, "409");
        for code in [401, 403, 422] {
            assert_eq!(outcome(status(code)), Outcome::Fail, "{code}");
        }
        for code in [500, 503, 504] {
            assert_eq!(outcome(status(code)), Outcome::Info, "{code}");
        }
        let timeout = KubeReply::Transport {
            reason: "operation timed out".into(),
        };
        assert_eq!(outcome(timeout), Outcome::Info, "timeout");
    }

    #[test]
    fn ttls_must_be_whole_seconds() {
        assert!(check_whole_seconds(Duration::from_secs(10)).is_ok());
        let error = check_whole_seconds(Duration::from_millis(2_500)).unwrap_err();
        assert!(
            error.contains("2500 ms") && error.contains("ttl_ms = 2000"),
            "{error}"
        );
        assert!(check_whole_seconds(Duration::ZERO).is_err());
    }
}

//! Bring your own backend: a lease backend defined here, in the test, plugs into the world
//! without touching `src/` — an in-process `MemLease` behind a tiny JSON-lines server of its
//! own on simulated TCP, and a client that speaks it with the replica's clock for deadlines.
//! Its decisions are judged (non-zero counts), and a bug planted in it is caught.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use leasesim::check::Check;
use leasesim::check::judge::{Judgement, judge};
use leasesim::check::linearizability::{Budget, Verdict};
use leasesim::clock::{Clock, Instant};
use leasesim::exit::Exit;
use leasesim::lease::{Lease, LeaseError, MemLease, Owner, SessionId, SessionLease};
use leasesim::sim::backend::{
    AuthorityHost, AuthorityKind, Backend, BackendView, HostResult, RecordableAuthority,
    ReplicaEnv, WorldBackend,
};
use leasesim::sim::world::World;

/// The test backend's port on its host.
const PORT: u16 = 9000;

/// A `MemLease` served over JSON lines, one request per connection. With `steal`, a planted
/// bug: an acquire of a held session takes it from its live holder. With `unrecorded`, its
/// decisions are not recorded and it says so (as a backend without an authority clock does).
#[derive(Debug, Clone, Copy, Default)]
struct JsonLease {
    steal: bool,
    unrecorded: bool,
}

impl JsonLease {
    /// With the planted bug: an acquire of a held session takes it from its live holder.
    const STEALING: JsonLease = JsonLease {
        steal: true,
        unrecorded: false,
    };

    /// Its decisions not recorded.
    const UNRECORDED: JsonLease = JsonLease {
        steal: false,
        unrecorded: true,
    };
}

impl WorldBackend for JsonLease {
    fn name(&self) -> &str {
        if self.steal { "json-steal" } else { "json" }
    }

    fn view(&self) -> BackendView {
        BackendView {
            host: "authority".into(),
            authority: if self.unrecorded {
                AuthorityKind::Holders
            } else {
                AuthorityKind::Decides
            },
            record_deletion: false,
            restarts: false,
            error_windows: false,
            drift: true,
            freezes: true,
            own_thread: false,
            forks: false,
        }
    }

    fn serve(&self, host: AuthorityHost) -> std::pin::Pin<Box<dyn Future<Output = HostResult>>> {
        let JsonLease { steal, unrecorded } = *self;
        Box::pin(async move {
            let mem = Arc::new(MemLease::new(host.clock(), host.ttl()));
            let authority: Arc<dyn SessionLease> = if unrecorded {
                Arc::new(Authority { mem, steal })
            } else {
                host.record(Arc::new(Authority { mem, steal }))
            };
            let mut incoming = host.listen(PORT).await?;
            while let Some(conn) = incoming.next().await {
                let authority = authority.clone();
                tokio::spawn(async move {
                    let (read, mut write) = tokio::io::split(conn?);
                    let mut line = String::new();
                    BufReader::new(read).read_line(&mut line).await?;
                    let reply = answer(authority.as_ref(), &line).await;
                    let json = serde_json::to_string(&reply).expect("replies serialise") + "\n";
                    write.write_all(json.as_bytes()).await
                });
            }
            Ok(())
        })
    }

    fn client(
        &self,
        replica: &ReplicaEnv,
    ) -> Result<Arc<dyn SessionLease>, Box<dyn std::error::Error>> {
        Ok(Arc::new(Client {
            addr: replica.authority_addr(PORT),
            dialer: replica.dialer(),
            clock: replica.clock(),
            timeout: replica.client_config().call_timeout,
        }))
    }
}

/// The server's authority: `MemLease`, or with `steal` a buggy one.
#[derive(Debug)]
struct Authority {
    mem: Arc<MemLease>,
    steal: bool,
}

#[async_trait]
impl SessionLease for Authority {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        match self.mem.acquire(session, owner).await {
            Err(LeaseError::Held { .. }) if self.steal => {
                // The planted bug: free the live holder's record, then grant.
                if let Some((holder, token)) = self.mem.holder(session) {
                    let stolen = Lease::new(
                        session.clone(),
                        holder,
                        token,
                        Instant::ZERO,
                        Duration::ZERO,
                    );
                    self.mem.release(&stolen).await?;
                }
                self.mem.acquire(session, owner).await
            }
            result => result,
        }
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        self.mem.renew(lease).await
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        self.mem.release(lease).await
    }
}

impl RecordableAuthority for Authority {
    fn holder(&self, session: &SessionId) -> Option<(Owner, u64)> {
        self.mem.holder(session)
    }
}

/// One request of the wire protocol.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Request {
    Acquire { session: String, owner: WireOwner },
    Renew(WireLease),
    Release(WireLease),
}

/// One reply.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Lease(WireLease),
    Released,
    Held(Option<u64>),
    Unavailable(String),
}

#[derive(Serialize, Deserialize)]
struct WireOwner {
    replica: String,
    incarnation: u64,
}

#[derive(Serialize, Deserialize)]
struct WireLease {
    session: String,
    owner: WireOwner,
    token: u64,
    expiry_us: u64,
    ttl_us: u64,
}

impl From<&Lease> for WireLease {
    fn from(lease: &Lease) -> Self {
        WireLease {
            session: lease.session().as_str().to_owned(),
            owner: WireOwner {
                replica: lease.owner().replica.clone(),
                incarnation: lease.owner().incarnation,
            },
            token: lease.token(),
            expiry_us: lease.expiry().since_origin().as_micros() as u64,
            ttl_us: lease.ttl().as_micros() as u64,
        }
    }
}

impl WireLease {
    fn lease(&self) -> Result<Lease, LeaseError> {
        Ok(Lease::new(
            SessionId::new(self.session.clone())?,
            Owner::new(self.owner.replica.clone(), self.owner.incarnation),
            self.token,
            Instant::from_origin(Duration::from_micros(self.expiry_us)),
            Duration::from_micros(self.ttl_us),
        ))
    }
}

async fn answer(authority: &dyn SessionLease, line: &str) -> Reply {
    let outcome = match serde_json::from_str::<Request>(line) {
        Err(e) => return Reply::Unavailable(format!("bad request: {e}")),
        Ok(Request::Acquire { session, owner }) => match SessionId::new(session) {
            Ok(session) => authority
                .acquire(&session, &Owner::new(owner.replica, owner.incarnation))
                .await
                .map(|lease| Reply::Lease(WireLease::from(&lease))),
            Err(e) => Err(e),
        },
        Ok(Request::Renew(lease)) => match lease.lease() {
            Ok(lease) => authority
                .renew(&lease)
                .await
                .map(|lease| Reply::Lease(WireLease::from(&lease))),
            Err(e) => Err(e),
        },
        Ok(Request::Release(lease)) => match lease.lease() {
            Ok(lease) => authority.release(&lease).await.map(|()| Reply::Released),
            Err(e) => Err(e),
        },
    };
    outcome.unwrap_or_else(|error| match error {
        LeaseError::Held { holder_token } => Reply::Held(holder_token),
        other => Reply::Unavailable(other.to_string()),
    })
}

/// The replicas' client: one connection per call, bounded by the call deadline on the
/// replica's own clock.
struct Client {
    addr: String,
    dialer: leasesim::net::Dialer,
    clock: Arc<dyn Clock>,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({})", self.addr)
    }
}

impl Client {
    async fn call(&self, request: Request) -> Result<Reply, LeaseError> {
        let unavailable = |reason: String| LeaseError::Unavailable { reason };
        let exchange = async {
            let conn = (self.dialer)(self.addr.clone()).await?;
            let (read, mut write) = tokio::io::split(conn);
            let json = serde_json::to_string(&request).expect("requests serialise") + "\n";
            write.write_all(json.as_bytes()).await?;
            let mut line = String::new();
            BufReader::new(read).read_line(&mut line).await?;
            Ok::<String, std::io::Error>(line)
        };
        let line = tokio::select! {
            line = exchange => line.map_err(|e| unavailable(e.to_string()))?,
            () = self.clock.sleep(self.timeout) => return Err(unavailable("deadline".into())),
        };
        serde_json::from_str(&line).map_err(|e| unavailable(format!("bad reply: {e}")))
    }

    fn lease(reply: Reply) -> Result<Lease, LeaseError> {
        match reply {
            Reply::Lease(lease) => lease.lease(),
            other => Err(Self::error(other)),
        }
    }

    fn error(reply: Reply) -> LeaseError {
        match reply {
            Reply::Held(holder_token) => LeaseError::Held { holder_token },
            Reply::Unavailable(reason) => LeaseError::Unavailable { reason },
            Reply::Lease(_) | Reply::Released => LeaseError::Unavailable {
                reason: "unexpected reply".into(),
            },
        }
    }
}

#[async_trait]
impl SessionLease for Client {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let owner = WireOwner {
            replica: owner.replica.clone(),
            incarnation: owner.incarnation,
        };
        let request = Request::Acquire {
            session: session.as_str().to_owned(),
            owner,
        };
        Self::lease(self.call(request).await?)
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        Self::lease(self.call(Request::Renew(lease.into())).await?)
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        match self.call(Request::Release(lease.into())).await? {
            Reply::Released => Ok(()),
            other => Err(Self::error(other)),
        }
    }
}

/// Runs the generated workload for 60 s on `backend`, with a pause of a replica for longer
/// than the TTL, and judges the history.
fn judged(backend: JsonLease, seed: u64) -> Judgement {
    use leasesim::sim::schedule::{Fault, FaultSchedule};
    let schedule = FaultSchedule::new()
        .at(
            8_000,
            Fault::Pause {
                host: "replica-1".into(),
                duration_ms: 15_000,
                at_point: None,
            },
        )
        .heal_at(30_000);
    let history = World::builder()
        .seed(seed)
        .backend(Backend::new(backend))
        .schedule(schedule)
        .build()
        .expect("the test backend's world is valid")
        .run()
        .expect("the world runs")
        .history;
    let authority = (!backend.unrecorded).then_some("authority");
    assert_eq!(
        history.authority_host(),
        authority,
        "the history names the host whose decisions it records"
    );
    judge(&history, Budget::default())
}

#[test]
fn a_backend_defined_in_a_test_plugs_in_and_its_decisions_are_judged() {
    let judgement = judged(JsonLease::default(), 1);
    assert_eq!(judgement.exit_code(), Exit::Clean, "{judgement}");
    // Everything but SIGNAL, which judges only a target crate's own signal.
    assert_eq!(judgement.not_judged(), [Check::Signal], "{judgement}");
    for invariant in [Check::Token, Check::Excl, Check::Expiry] {
        let report = judgement.invariants.get(invariant).unwrap();
        assert!(
            report.checks > 0,
            "{invariant:?} judged nothing:\n{judgement}"
        );
    }
    let lin_lease = &judgement.linearizability[0];
    assert!(
        matches!(
            lin_lease.1,
            leasesim::check::judge::LinearizabilityOutcome::Checked(Verdict::Linearizable)
        ),
        "{judgement}"
    );
}

#[test]
fn a_bug_planted_in_the_test_backend_is_caught() {
    let judgement = judged(JsonLease::STEALING, 1);
    assert!(
        judgement.violated().contains(&Check::Excl),
        "the stealing backend passed EXCL:\n{judgement}"
    );
}

#[test]
fn faults_the_backend_does_not_support_are_refused() {
    use leasesim::sim::schedule::{Fault, FaultSchedule};
    let schedule = FaultSchedule::new().at(
        1_000,
        Fault::DeleteLeaseRecord {
            session: "s1".into(),
        },
    );
    let error = World::builder()
        .backend(Backend::new(JsonLease::default()))
        .schedule(schedule)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "bad fault schedule: the json backend does not support delete_lease_record (fault at \
         1000 ms)"
    );
}

/// A backend whose decisions are not in the history is not passed on them: EXPIRY, which
/// judges decisions (or an API server's writes), says "not judged"; EXCL is judged on the
/// holders' validity windows (docs/checks.md: a backend that records no authority
/// decisions is judged on its holders), and the ledger checks judge as for any backend.
#[test]
fn a_backend_without_recorded_decisions_is_not_judged_on_them() {
    let judgement = judged(JsonLease::UNRECORDED, 1);
    let not_judged = judgement.not_judged();
    assert!(
        not_judged.contains(&Check::Expiry),
        "EXPIRY passed on nothing:\n{judgement}"
    );
    for check in [Check::Excl, Check::Fence, Check::Ledger, Check::Stop] {
        assert!(
            !not_judged.contains(&check),
            "{check} judged nothing:\n{judgement}"
        );
    }
    assert_eq!(judgement.exit_code(), Exit::Clean, "{judgement}");
}

/// Faults drawn from the seed fit the backend: aimed at its host, never a kind it does not
/// support, so every seed's world builds (the gRPC default's draws are unchanged).
#[test]
fn random_faults_fit_a_backend_of_your_own() {
    for seed in 0..40 {
        let world = World::builder()
            .seed(seed)
            .backend(Backend::new(JsonLease::default()))
            .random_faults()
            .build()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let _ = world;
    }
    let history = World::builder()
        .seed(3)
        .backend(Backend::new(JsonLease::default()))
        .random_faults()
        .build()
        .unwrap()
        .run()
        .unwrap()
        .history;
    let judgement = judge(&history, Budget::default());
    assert_eq!(judgement.exit_code(), Exit::Clean, "{judgement}");
}

/// The history of a flock world (TTL 10 s) where replica-1 acquires s1 at 0 s and renews it,
/// is crashed at 2 s (its script would release at 15 s) and replica-2 acquires s1 at 3 s.
fn flock_holder_crashed_at_2s() -> leasesim::history::History {
    use leasesim::sim::backend::Flock;
    use leasesim::sim::config::Workload;
    use leasesim::sim::schedule::FaultSchedule;
    use leasesim::sim::script::Script;

    let script = Script::from_json(
        r#"{"v":1,"calls":[
            {"at_ms":0,"replica":"replica-1","call":"acquire","session":"s1"},
            {"at_ms":0,"replica":"replica-1","call":"start_renewer","lease":"s1"},
            {"at_ms":15000,"replica":"replica-1","call":"release","lease":"s1"},
            {"at_ms":3000,"replica":"replica-2","call":"acquire","session":"s1"}]}"#,
    )
    .expect("a script");
    let schedule = FaultSchedule::from_json(
        r#"{"v":1,"faults":[{"at_ms":2000,"fault":"crash","host":"replica-1"}]}"#,
    )
    .expect("a schedule");
    World::builder()
        .seed(1)
        .backend(Backend::new(Flock))
        .replicas(2)
        .sessions(["s1"])
        .ttl(Duration::from_secs(10))
        .duration(Duration::from_secs(20))
        .schedule(schedule)
        .workload(Workload::Scripted(script))
        .build()
        .expect("the flock world takes a replica crash")
        .run()
        .expect("the world runs")
        .history
}

/// A flock replica's crash ends its holds with its process (docs/world.md#flock-in-the-world):
/// the flock world takes a crash of the holder, the next acquire takes over at once (token 2 at
/// 3 s, long before the 10 s TTL runs out), the history records the dead holder's `release`
/// at the instant of that grant, and every check judges the run clean, LIN-LEASE included.
#[test]
fn a_flock_holders_crash_ends_its_hold_and_the_next_acquire_takes_over_clean() {
    use leasesim::check::judge::LinearizabilityOutcome;
    use leasesim::history::{Decision, OpResult, Outcome};

    let history = flock_holder_crashed_at_2s();
    let takeover = history
        .ops()
        .find(|op| op.process.replica == "replica-2" && op.op.name() == "lease_acquire")
        .expect("replica-2 acquires");
    assert_eq!(takeover.outcome, Outcome::Ok);
    assert!(
        matches!(takeover.result, Some(OpResult::Granted { token: 2, .. })),
        "{takeover:?}"
    );
    assert!(takeover.complete_us.is_some_and(|at| at < 4_000_000));
    let decided: Vec<(String, Decision, u64)> = history
        .decisions()
        .filter(|d| d.at_us >= 3_000_000)
        .map(|d| (d.owner.to_string(), d.decision.clone(), d.at_us))
        .collect();
    let (released, granted) = (&decided[0], &decided[1]);
    assert_eq!(released.0, "replica-1");
    assert_eq!(
        released.1,
        Decision::Release {
            token: 1,
            ended: true
        }
    );
    assert_eq!(granted.0, "replica-2");
    assert!(matches!(granted.1, Decision::Grant { token: 2, .. }));
    assert_eq!(
        released.2, granted.2,
        "the hold ends at the takeover's instant"
    );
    let judgement = judge(&history, Budget::default());
    assert_eq!(judgement.exit_code(), Exit::Clean, "{judgement}");
    assert!(
        matches!(
            judgement.linearizability[0].1,
            LinearizabilityOutcome::Checked(Verdict::Linearizable)
        ),
        "{judgement}"
    );
}

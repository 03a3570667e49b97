//! The simulated Kubernetes API server alone, spoken to by the real kube client
//! (`kube::Api::<Lease>`) over loopback TCP: create, get, replace with a stale or missing
//! `resourceVersion`, merge patch, delete with preconditions, 404s, the fault window, and the
//! objects and counter surviving a crash and restart on the same storage.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::ObjectMeta;

use leasesim::history::WriteVerb;
use leasesim::net::{Conn, Dialer, tcp_dialer, tcp_incoming};
use leasesim::sim::apiserver::{AcceptedWrite, ApiServer, ApiServerConfig, SESSION_ANNOTATION};
use leasesim::sim::errors::ErrorWindows;
use leasesim::sim::schedule::ErrorStatus;
use leasesim::storage::MemStorage;

const NS: &str = "default";

/// A running server: its address, the serve task, and what it recorded.
struct Running {
    addr: String,
    task: tokio::task::JoinHandle<()>,
    writes: Arc<Mutex<Vec<AcceptedWrite>>>,
    faults: ErrorWindows,
}

async fn start(disk: &MemStorage) -> Running {
    let writes = Arc::new(Mutex::new(Vec::new()));
    let sink = writes.clone();
    let faults = ErrorWindows::default();
    let config = ApiServerConfig::default()
        .with_write_sink(Arc::new(move |w| sink.lock().unwrap().push(w)))
        .with_faults(faults.clone());
    let server = Arc::new(
        ApiServer::open(Arc::new(disk.clone()), config)
            .await
            .unwrap(),
    );
    let (addr, incoming) = tcp_incoming("127.0.0.1:0").await.unwrap();
    let task = tokio::spawn(async move {
        server.serve(incoming).await.unwrap();
    });
    Running {
        addr: addr.to_string(),
        task,
        writes,
        faults,
    }
}

/// The kube client over `dialer` to `addr`, with the absolute URI hyper needs.
fn client(addr: &str, dialer: Dialer) -> kube::Client {
    let connector = tower::service_fn(move |uri: hyper::Uri| {
        let dialer = dialer.clone();
        Box::pin(async move {
            let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
            dialer(authority).await.map(TokioIo::new)
        }) as Pin<Box<dyn Future<Output = std::io::Result<TokioIo<Conn>>> + Send>>
    });
    let http = HttpClient::builder(TokioExecutor::new()).build(connector);
    let base = format!("http://{addr}");
    let service = tower::service_fn(move |mut request: hyper::Request<kube::client::Body>| {
        let path = request
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        *request.uri_mut() = format!("{base}{path}").parse().unwrap();
        http.request(request)
    });
    kube::Client::new(service, NS)
}

fn lease(name: &str, holder: &str, transitions: i32) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(BTreeMap::from([(SESSION_ANNOTATION.into(), "s1".into())])),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(10),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }),
    }
}

fn api(running: &Running) -> Api<Lease> {
    Api::namespaced(client(&running.addr, tcp_dialer()), NS)
}

fn rv(lease: &Lease) -> u64 {
    lease
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

fn holder(lease: &Lease) -> &str {
    lease
        .spec
        .as_ref()
        .unwrap()
        .holder_identity
        .as_deref()
        .unwrap()
}

/// The `Status` code and reason of a refused call.
fn refusal(error: kube::Error) -> (u16, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.reason.clone()),
        other => panic!("expected a Status refusal, got {other}"),
    }
}

#[tokio::test]
async fn create_get_and_a_second_create_is_already_exists() {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    let created = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-1#0", 1))
        .await
        .unwrap();
    assert_eq!(rv(&created), 1);
    assert_eq!(created.metadata.namespace.as_deref(), Some(NS));
    let got = leases.get("s1-a").await.unwrap();
    assert_eq!(got, created);
    let again = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-2#0", 1))
        .await
        .unwrap_err();
    assert_eq!(refusal(again), (409, "AlreadyExists".into()));
    assert_eq!(holder(&leases.get("s1-a").await.unwrap()), "replica-1#0");
}

#[tokio::test]
async fn replace_with_a_stale_resource_version_is_conflict_and_changes_nothing() {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    let created = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-1#0", 1))
        .await
        .unwrap();
    // Two candidates decide from the same read: the first replace wins, the second is stale.
    let mut first = created.clone();
    first.spec.as_mut().unwrap().holder_identity = Some("replica-2#0".into());
    first.spec.as_mut().unwrap().lease_transitions = Some(2);
    let won = leases
        .replace("s1-a", &PostParams::default(), &first)
        .await
        .unwrap();
    assert_eq!(rv(&won), 2);
    let mut second = created.clone();
    second.spec.as_mut().unwrap().holder_identity = Some("replica-3#0".into());
    let lost = leases
        .replace("s1-a", &PostParams::default(), &second)
        .await
        .unwrap_err();
    assert_eq!(refusal(lost), (409, "Conflict".into()));
    let now = leases.get("s1-a").await.unwrap();
    assert_eq!((holder(&now), rv(&now)), ("replica-2#0", 2));
    let verbs: Vec<_> = running
        .writes
        .lock()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w.verb,
                w.holder_identity.clone(),
                w.transitions,
                w.resource_version,
            )
        })
        .collect();
    assert_eq!(
        verbs,
        [
            (WriteVerb::Create, "replica-1#0".into(), 1, 1),
            (WriteVerb::Update, "replica-2#0".into(), 2, 2),
        ]
    );
}

#[tokio::test]
async fn replace_without_resource_version_is_invalid_but_creates_a_missing_object() {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    // The Lease strategy allows create on update...
    let created = leases
        .replace(
            "s1-a",
            &PostParams::default(),
            &lease("s1-a", "replica-1#0", 1),
        )
        .await
        .unwrap();
    assert_eq!(rv(&created), 1);
    // ...but not an unconditional update.
    let refused = leases
        .replace(
            "s1-a",
            &PostParams::default(),
            &lease("s1-a", "replica-2#0", 2),
        )
        .await
        .unwrap_err();
    assert_eq!(refusal(refused), (422, "Invalid".into()));
    // A replace of a missing object with a resourceVersion is 404.
    let mut ghost = lease("s1-b", "replica-1#0", 1);
    ghost.metadata.resource_version = Some("1".into());
    let missing = leases
        .replace("s1-b", &PostParams::default(), &ghost)
        .await
        .unwrap_err();
    assert_eq!(refusal(missing), (404, "NotFound".into()));
}

#[tokio::test]
async fn merge_patch_without_resource_version_is_unconditional() {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    leases
        .create(&PostParams::default(), &lease("s1-a", "replica-1#0", 1))
        .await
        .unwrap();
    let patch = serde_json::json!({"spec": {"holderIdentity": "replica-2#0"}});
    let patched = leases
        .patch("s1-a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!((holder(&patched), rv(&patched)), ("replica-2#0", 2));
    assert_eq!(patched.spec.unwrap().lease_transitions, Some(1));
    let stale =
        serde_json::json!({"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "x"}});
    let refused = leases
        .patch("s1-a", &PatchParams::default(), &Patch::Merge(&stale))
        .await
        .unwrap_err();
    assert_eq!(refusal(refused), (409, "Conflict".into()));
}

#[tokio::test]
async fn delete_checks_preconditions_and_then_everything_is_not_found() {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    let created = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-1#0", 3))
        .await
        .unwrap();
    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: Some("7".into()),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    let refused = leases.delete("s1-a", &stale).await.unwrap_err();
    assert_eq!(refusal(refused), (409, "Conflict".into()));
    let exact = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: created.metadata.resource_version.clone(),
            uid: created.metadata.uid.clone(),
        }),
        ..DeleteParams::default()
    };
    let deleted = leases.delete("s1-a", &exact).await.unwrap();
    assert!(deleted.is_right(), "a delete answers with a Status");
    for error in [
        leases.get("s1-a").await.unwrap_err(),
        leases
            .delete("s1-a", &DeleteParams::default())
            .await
            .unwrap_err(),
    ] {
        assert_eq!(refusal(error), (404, "NotFound".into()));
    }
    let last = running.writes.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        (
            last.verb,
            last.holder_identity.as_str(),
            last.transitions,
            last.resource_version
        ),
        (WriteVerb::Delete, "", 3, 1)
    );
    // The delete consumed a resourceVersion: the next create gets 3, and transitions start over.
    let recreated = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-2#0", 1))
        .await
        .unwrap();
    assert_eq!(rv(&recreated), 3);
}

#[tokio::test]
async fn a_fault_window_answers_5xx_and_applies_nothing() {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    running.faults.open(None, ErrorStatus::Unavailable);
    let refused = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-1#0", 1))
        .await
        .unwrap_err();
    assert_eq!(refusal(refused), (503, "ServiceUnavailable".into()));
    running.faults.heal();
    assert_eq!(refusal(leases.get("s1-a").await.unwrap_err()).0, 404);
    assert!(running.writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn objects_and_the_counter_survive_a_crash_and_restart() {
    let disk = MemStorage::new();
    let first = start(&disk).await;
    let leases = api(&first);
    let created = leases
        .create(&PostParams::default(), &lease("s1-a", "replica-1#0", 1))
        .await
        .unwrap();
    let mut renewed = created.clone();
    renewed.spec.as_mut().unwrap().lease_transitions = Some(2);
    let renewed = leases
        .replace("s1-a", &PostParams::default(), &renewed)
        .await
        .unwrap();
    first.task.abort();
    disk.crash();

    let second = start(&disk).await;
    let leases = api(&second);
    assert_eq!(leases.get("s1-a").await.unwrap(), renewed);
    let listed = leases.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items, std::slice::from_ref(&renewed));
    // A stale write from before the crash is still refused, and the counter goes on.
    let stale = leases
        .replace("s1-a", &PostParams::default(), &created)
        .await
        .unwrap_err();
    assert_eq!(refusal(stale), (409, "Conflict".into()));
    let next = leases
        .create(&PostParams::default(), &lease("s1-b", "replica-2#0", 1))
        .await
        .unwrap();
    assert_eq!(rv(&next), 3);
}

#[tokio::test]
async fn a_damaged_state_file_is_a_clear_error() {
    use leasesim::sim::apiserver::store::STATE_FILE;
    use leasesim::storage::log;
    let disk = MemStorage::new();
    start(&disk).await.task.abort();
    // An intact frame that is no write: the log's checksums hold, the content does not.
    let end = log::read_log(&disk, STATE_FILE).await.unwrap().end();
    log::append_frames(&disk, STATE_FILE, end, &[b"not a write"])
        .await
        .unwrap();
    let error = ApiServer::open(Arc::new(disk.clone()), ApiServerConfig::default())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("apiserver-state.log") && text.contains("not a write"),
        "{text}"
    );
}

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

/// A server on fresh storage, and the kube client's Lease API on it.
async fn fresh() -> (Running, Api<Lease>) {
    let running = start(&MemStorage::new()).await;
    let leases = api(&running);
    (running, leases)
}

/// Creates [`lease`]`(name, holder, transitions)` through `leases`: the object created.
async fn create(leases: &Api<Lease>, name: &str, holder: &str, transitions: i32) -> Lease {
    leases
        .create(&PostParams::default(), &lease(name, holder, transitions))
        .await
        .unwrap()
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
    let (_running, leases) = fresh().await;
    let created = create(&leases, "s1-a", "replica-1#0", 1).await;
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
    let (running, leases) = fresh().await;
    let created = create(&leases, "s1-a", "replica-1#0", 1).await;
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
    let (_running, leases) = fresh().await;
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
    let (_running, leases) = fresh().await;
    create(&leases, "s1-a", "replica-1#0", 1).await;
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
    let (running, leases) = fresh().await;
    let created = create(&leases, "s1-a", "replica-1#0", 3).await;
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
    let recreated = create(&leases, "s1-a", "replica-2#0", 1).await;
    assert_eq!(rv(&recreated), 3);
}

#[tokio::test]
async fn a_fault_window_answers_5xx_and_applies_nothing() {
    let (running, leases) = fresh().await;
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
    let created = create(&leases, "s1-a", "replica-1#0", 1).await;
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
    let next = create(&leases, "s1-b", "replica-2#0", 1).await;
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

// Server-side apply (docs/apiserver.md#server-side-apply), and what the server does not serve
// (docs/apiserver.md#not-served).

/// The refusal's full `Status` (code, reason, message, causes).
fn refused_status(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected a Status refusal, got {other}"),
    }
}

/// `(field, message)` of each `FieldManagerConflict` cause.
fn conflict_causes(status: &kube::core::Status) -> Vec<(String, String)> {
    let causes = &status.details.as_ref().expect("details").causes;
    assert!(causes.iter().all(|c| c.reason == "FieldManagerConflict"));
    causes
        .iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

/// The apply configuration of s1-a the tests' first manager applies: holder `a` for 10 s.
fn a_for_ten_seconds() -> serde_json::Value {
    config(
        "s1-a",
        serde_json::json!({"holderIdentity": "a", "leaseDurationSeconds": 10}),
    )
}

/// A server on fresh storage where mgr-a applied [`a_for_ten_seconds`], creating s1-a: the
/// server, the Lease API on it, and that configuration.
async fn applied_by_mgr_a() -> (Running, Api<Lease>, serde_json::Value) {
    let (running, leases) = fresh().await;
    let mine = a_for_ten_seconds();
    apply(&leases, "mgr-a", false, &mine).await.unwrap();
    (running, leases, mine)
}

/// `manager`'s non-forced apply of `body` to s1-a, refused: the refusal's `Status`.
async fn apply_refused(
    leases: &Api<Lease>,
    manager: &str,
    body: &serde_json::Value,
) -> kube::core::Status {
    refused_status(apply(leases, manager, false, body).await.unwrap_err())
}

/// Asserts that `manager`'s non-forced apply of `body` to s1-a is refused with one conflict:
/// on `field`, its cause's message `message`.
async fn assert_one_conflict(
    leases: &Api<Lease>,
    manager: &str,
    body: &serde_json::Value,
    field: &str,
    message: &str,
) {
    let status = apply_refused(leases, manager, body).await;
    assert_eq!(conflict_causes(&status), [conflict_with(field, message)]);
}

/// A `managedFields` entry as [`owners`] lists it: `manager`'s `operation` (`Apply`,
/// `Update`) owning the spec's `fields` (`holderIdentity`, …).
fn owned(manager: &str, operation: &str, fields: &[&str]) -> (String, String, serde_json::Value) {
    let spec: serde_json::Map<_, _> = fields
        .iter()
        .map(|field| (format!("f:{field}"), serde_json::json!({})))
        .collect();
    let fields = serde_json::json!({ "f:spec": spec });
    (manager.into(), operation.into(), fields)
}

/// A conflict cause as [`conflict_causes`] lists it: the field and whom it conflicts with.
fn conflict_with(field: &str, message: &str) -> (String, String) {
    (field.into(), message.into())
}

/// An apply configuration of Lease `name` with `spec`.
fn config(name: &str, spec: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": spec,
    })
}

async fn apply(
    leases: &Api<Lease>,
    manager: &str,
    force: bool,
    body: &serde_json::Value,
) -> Result<Lease, kube::Error> {
    let params = PatchParams::apply(manager);
    let params = if force { params.force() } else { params };
    leases.patch("s1-a", &params, &Patch::Apply(body)).await
}

/// Each `managedFields` entry as (manager, operation, fieldsV1).
fn owners(lease: &Lease) -> Vec<(String, String, serde_json::Value)> {
    lease
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|entry| {
            assert_eq!(entry.api_version.as_deref(), Some("coordination.k8s.io/v1"));
            assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
            assert_eq!(entry.time, None, "the server reads no clock");
            (
                entry.manager.clone().unwrap_or_default(),
                entry.operation.clone().unwrap_or_default(),
                entry.fields_v1.clone().map(|f| f.0).unwrap_or_default(),
            )
        })
        .collect()
}

/// A request kube's typed API would refuse to send, through the same client.
async fn raw(
    running: &Running,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Result<Lease, kube::Error> {
    let request = hyper::Request::builder()
        .method(method)
        .uri(format!(
            "/apis/coordination.k8s.io/v1/namespaces/{NS}/leases{path}"
        ))
        .header("content-type", content_type)
        .header("user-agent", "leader-tool/1.2 (linux)")
        .body(body.as_bytes().to_vec())
        .unwrap();
    client(&running.addr, tcp_dialer()).request(request).await
}

#[tokio::test]
async fn an_apply_creates_a_missing_lease_owned_by_the_applier() {
    let (running, leases) = fresh().await;
    let body = a_for_ten_seconds();
    let created = apply(&leases, "mgr-a", false, &body).await.unwrap();
    assert_eq!((holder(&created), rv(&created)), ("a", 1));
    assert_eq!(
        owners(&created),
        [owned(
            "mgr-a",
            "Apply",
            &["holderIdentity", "leaseDurationSeconds"]
        )]
    );
    assert_eq!(leases.get("s1-a").await.unwrap(), created);
    let verbs: Vec<_> = running
        .writes
        .lock()
        .unwrap()
        .iter()
        .map(|w| w.verb)
        .collect();
    assert_eq!(verbs, [WriteVerb::Create]);
}

#[tokio::test]
async fn an_apply_that_creates_must_name_the_object() {
    let (_running, leases) = fresh().await;
    let mut body = config("s1-a", serde_json::json!({"holderIdentity": "a"}));
    body["metadata"] = serde_json::json!({});
    let status = apply_refused(&leases, "mgr-a", &body).await;
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert!(
        status
            .message
            .contains("does not match the name on the URL (s1-a)"),
        "{}",
        status.message
    );
    assert_eq!(refusal(leases.get("s1-a").await.unwrap_err()).0, 404);
}

#[tokio::test]
async fn an_apply_without_a_field_manager_is_invalid() {
    let running = start(&MemStorage::new()).await;
    let body = config("s1-a", serde_json::json!({"holderIdentity": "a"})).to_string();
    let error = raw(
        &running,
        "PATCH",
        "/s1-a",
        "application/apply-patch+yaml",
        &body,
    )
    .await;
    let status = refused_status(error.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for \
         apply patch"
    );
    assert!(running.writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_non_forced_apply_of_a_field_another_manager_owns_is_a_409_naming_the_field_and_the_manager()
 {
    let (_running, leases, _) = applied_by_mgr_a().await;
    let theirs = config(
        "s1-a",
        serde_json::json!({"holderIdentity": "b", "leaseDurationSeconds": 20}),
    );
    let status = apply_refused(&leases, "mgr-b", &theirs).await;
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        conflict_causes(&status),
        [
            conflict_with(".spec.holderIdentity", "conflict with \"mgr-a\""),
            conflict_with(".spec.leaseDurationSeconds", "conflict with \"mgr-a\""),
        ]
    );
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"mgr-a\":\n- .spec.holderIdentity\n- \
         .spec.leaseDurationSeconds"
    );
    let now = leases.get("s1-a").await.unwrap();
    assert_eq!((holder(&now), rv(&now)), ("a", 1));
}

#[tokio::test]
async fn a_conflict_with_an_updater_names_it_with_the_api_version() {
    let (_running, leases) = fresh().await;
    let params = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    leases
        .create(&params, &lease("s1-a", "a", 1))
        .await
        .unwrap();
    let body = config("s1-a", serde_json::json!({"holderIdentity": "b"}));
    let status = apply_refused(&leases, "mgr-b", &body).await;
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"creator\" using coordination.k8s.io/v1: \
         .spec.holderIdentity"
    );
    assert_eq!(
        conflict_causes(&status),
        [conflict_with(
            ".spec.holderIdentity",
            "conflict with \"creator\" using coordination.k8s.io/v1"
        )]
    );
}

#[tokio::test]
async fn a_non_forced_apply_of_the_same_value_shares_the_field() {
    let (_running, leases) = fresh().await;
    let same = config("s1-a", serde_json::json!({"holderIdentity": "a"}));
    apply(&leases, "mgr-a", false, &same).await.unwrap();
    let shared = apply(&leases, "mgr-b", false, &same).await.unwrap();
    assert_eq!(
        owners(&shared),
        [
            owned("mgr-a", "Apply", &["holderIdentity"]),
            owned("mgr-b", "Apply", &["holderIdentity"]),
        ]
    );
    // Shared: a change by either owner now conflicts with the other.
    let change = config("s1-a", serde_json::json!({"holderIdentity": "c"}));
    assert_one_conflict(
        &leases,
        "mgr-a",
        &change,
        ".spec.holderIdentity",
        "conflict with \"mgr-b\"",
    )
    .await;
}

#[tokio::test]
async fn a_forced_apply_takes_the_field_over() {
    let (_running, leases, mine) = applied_by_mgr_a().await;
    let theirs = config("s1-a", serde_json::json!({"holderIdentity": "b"}));
    let taken = apply(&leases, "mgr-b", true, &theirs).await.unwrap();
    assert_eq!((holder(&taken), rv(&taken)), ("b", 2));
    assert_eq!(
        owners(&taken),
        [
            owned("mgr-a", "Apply", &["leaseDurationSeconds"]),
            owned("mgr-b", "Apply", &["holderIdentity"]),
        ]
    );
    // mgr-a no longer owns the holder: its own unchanged apply now conflicts with mgr-b.
    assert_one_conflict(
        &leases,
        "mgr-a",
        &mine,
        ".spec.holderIdentity",
        "conflict with \"mgr-b\"",
    )
    .await;
}

#[tokio::test]
async fn fields_an_applier_leaves_out_are_removed_unless_another_manager_owns_them() {
    let (_running, leases) = fresh().await;
    let all = serde_json::json!({
        "holderIdentity": "a", "leaseDurationSeconds": 10, "leaseTransitions": 3,
    });
    apply(&leases, "mgr-a", false, &config("s1-a", all))
        .await
        .unwrap();
    // mgr-b co-owns the duration (same value)...
    let co = config("s1-a", serde_json::json!({"leaseDurationSeconds": 10}));
    apply(&leases, "mgr-b", false, &co).await.unwrap();
    // ...so when mgr-a leaves out the duration and the transitions, only the transitions go.
    let fewer = config("s1-a", serde_json::json!({"holderIdentity": "a"}));
    let after = apply(&leases, "mgr-a", false, &fewer).await.unwrap();
    let spec = after.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(spec.lease_duration_seconds, Some(10));
    assert_eq!(spec.lease_transitions, None);
}

#[tokio::test]
async fn an_update_takes_the_fields_it_changes_from_their_owner() {
    let (_running, leases, mine) = applied_by_mgr_a().await;
    let renew = serde_json::json!({"spec": {"leaseDurationSeconds": 20}});
    let params = PatchParams {
        field_manager: Some("renewer".into()),
        ..PatchParams::default()
    };
    let patched = leases
        .patch("s1-a", &params, &Patch::Strategic(&renew))
        .await
        .unwrap();
    assert_eq!(
        owners(&patched),
        [
            owned("mgr-a", "Apply", &["holderIdentity"]),
            owned("renewer", "Update", &["leaseDurationSeconds"]),
        ]
    );
    // mgr-a's apply of its old duration would undo the renewer's change: a conflict.
    assert_one_conflict(
        &leases,
        "mgr-a",
        &mine,
        ".spec.leaseDurationSeconds",
        "conflict with \"renewer\" using coordination.k8s.io/v1",
    )
    .await;
}

#[tokio::test]
async fn an_update_without_a_field_manager_is_owned_by_the_user_agent_prefix() {
    let running = start(&MemStorage::new()).await;
    let body = serde_json::to_string(&lease("s1-a", "a", 1)).unwrap();
    let created = raw(&running, "POST", "", "application/json", &body)
        .await
        .unwrap();
    let entries = owners(&created);
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].0.as_str(), entries[0].1.as_str()),
        ("leader-tool", "Update")
    );
    assert_eq!(
        entries[0].2["f:spec"],
        serde_json::json!({"f:holderIdentity": {}, "f:leaseDurationSeconds": {}, "f:leaseTransitions": {}})
    );
}

#[tokio::test]
async fn an_apply_with_a_stale_resource_version_is_a_409() {
    let (_running, leases) = fresh().await;
    create(&leases, "s1-a", "a", 1).await;
    let mut claim = config(
        "s1-a",
        serde_json::json!({"holderIdentity": "b", "leaseTransitions": 2}),
    );
    claim["metadata"]["resourceVersion"] = "7".into();
    let status = refused_status(apply(&leases, "kubert", true, &claim).await.unwrap_err());
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );
    assert_eq!(holder(&leases.get("s1-a").await.unwrap()), "a");
    claim["metadata"]["resourceVersion"] = "1".into();
    let taken = apply(&leases, "kubert", true, &claim).await.unwrap();
    assert_eq!((holder(&taken), rv(&taken)), ("b", 2));
}

#[tokio::test]
async fn a_json_patch_is_a_415_naming_the_docs_page() {
    let (running, leases) = fresh().await;
    create(&leases, "s1-a", "a", 1).await;
    let ops = r#"[{"op": "replace", "path": "/spec/holderIdentity", "value": "b"}]"#;
    let error = raw(
        &running,
        "PATCH",
        "/s1-a",
        "application/json-patch+json",
        ops,
    )
    .await;
    let status = refused_status(error.unwrap_err());
    assert_eq!(
        (status.code, status.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
    assert!(
        status.message.contains("application/json-patch+json")
            && status
                .message
                .contains("docs/apiserver.md#adding-a-patch-type"),
        "{}",
        status.message
    );
    // An apply body in YAML that is not JSON is not served either.
    let yaml = "apiVersion: coordination.k8s.io/v1\nkind: Lease\n";
    let error = raw(
        &running,
        "PATCH",
        "/s1-a?fieldManager=m",
        "application/apply-patch+yaml",
        yaml,
    );
    assert_eq!(
        refusal(error.await.unwrap_err()),
        (415, "UnsupportedMediaType".into())
    );
    assert_eq!(holder(&leases.get("s1-a").await.unwrap()), "a");
}

#[tokio::test]
async fn a_method_a_path_does_not_take_and_a_watch_are_405_naming_the_docs_page() {
    let running = start(&MemStorage::new()).await;
    for (method, path) in [("POST", "/s1-a"), ("DELETE", ""), ("GET", "?watch=true")] {
        let error = raw(&running, method, path, "application/json", "{}").await;
        let status = refused_status(error.unwrap_err());
        assert_eq!(
            (status.code, status.reason.as_str()),
            (405, "MethodNotAllowed")
        );
        assert!(
            status
                .message
                .contains("docs/apiserver.md#adding-a-request"),
            "{method} {path}: {}",
            status.message
        );
    }
}

#[tokio::test]
async fn each_error_window_answers_its_documented_status_and_applies_nothing() {
    let (running, leases) = fresh().await;
    create(&leases, "s1-a", "a", 1).await;
    let expected = [
        (ErrorStatus::Internal, 500, "InternalError"),
        (ErrorStatus::Unavailable, 503, "ServiceUnavailable"),
        (ErrorStatus::PermissionDenied, 403, "Forbidden"),
        (ErrorStatus::Conflict, 409, "Conflict"),
        (ErrorStatus::Invalid, 422, "Invalid"),
        (ErrorStatus::TooManyRequests, 429, "TooManyRequests"),
        (ErrorStatus::Timeout, 504, "Timeout"),
    ];
    assert_eq!(expected.map(|(s, ..)| s), ErrorStatus::ALL);
    let renew = serde_json::json!({"spec": {"leaseDurationSeconds": 20}});
    for (status, code, reason) in expected {
        running.faults.open(None, status);
        let refused = leases
            .patch("s1-a", &PatchParams::default(), &Patch::Merge(&renew))
            .await
            .unwrap_err();
        let body = refused_status(refused);
        assert_eq!(
            (body.code, body.reason.as_str()),
            (code, reason),
            "{status:?}"
        );
        let retry = body.details.as_ref().map_or(0, |d| d.retry_after_seconds);
        assert_eq!(
            retry,
            u32::from(status == ErrorStatus::TooManyRequests),
            "{status:?}"
        );
        // A real server answers 409 and 422 only to writes: a read passes those windows.
        let read = leases.get("s1-a").await;
        assert_eq!(read.is_ok(), !status.answers_reads(), "{status:?}");
        if status == ErrorStatus::Conflict {
            assert!(
                body.message
                    .contains("\"s1-a\": the object has been modified")
            );
        }
        running.faults.heal();
    }
    let now = leases.get("s1-a").await.unwrap();
    assert_eq!(
        (rv(&now), now.spec.unwrap().lease_duration_seconds),
        (1, Some(10))
    );
    assert_eq!(running.writes.lock().unwrap().len(), 1, "only the create");
}

#[tokio::test]
async fn a_too_many_requests_window_sends_retry_after() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let running = start(&MemStorage::new()).await;
    running.faults.open(None, ErrorStatus::TooManyRequests);
    let mut stream = tokio::net::TcpStream::connect(&running.addr).await.unwrap();
    let request = format!(
        "GET /apis/coordination.k8s.io/v1/namespaces/{NS}/leases/s1-a HTTP/1.1\r\nhost: \
         apiserver\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let head = response.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 429"), "{response}");
    assert!(head.contains("\r\nretry-after: 1\r\n"), "{response}");
    assert!(response.contains("\"retryAfterSeconds\":1"), "{response}");
}

#[tokio::test]
async fn a_field_an_update_removes_belongs_to_nobody_so_the_next_apply_takes_it_unforced() {
    // kube-lease-manager's cycle: create `spec: {}`, take the orphaned Lease by a non-forced
    // apply without `metadata.name`, release by a strategic patch of nulls.
    let (_running, leases) = fresh().await;
    let empty = Lease {
        metadata: ObjectMeta {
            name: Some("s1-a".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec::default()),
    };
    leases.create(&PostParams::default(), &empty).await.unwrap();
    let take = |who: &str| {
        let mut body = config("s1-a", serde_json::json!({"holderIdentity": who}));
        body["metadata"] = serde_json::json!({});
        body
    };
    apply(&leases, "klm-a", false, &take("a")).await.unwrap();
    let release = serde_json::json!({"spec": {"holderIdentity": null}});
    let params = PatchParams {
        field_manager: Some("klm-a".into()),
        ..PatchParams::default()
    };
    let released = leases
        .patch("s1-a", &params, &Patch::Strategic(&release))
        .await
        .unwrap();
    assert_eq!(released.spec.as_ref().unwrap().holder_identity, None);
    let owned = owners(&released);
    assert!(
        owned
            .iter()
            .all(|(.., fields)| fields.pointer("/f:spec/f:holderIdentity").is_none()),
        "a removed field leaves every entry: {owned:?}"
    );
    let taken = apply(&leases, "klm-b", false, &take("b")).await.unwrap();
    assert_eq!(holder(&taken), "b");
    assert_one_conflict(
        &leases,
        "klm-c",
        &take("c"),
        ".spec.holderIdentity",
        "conflict with \"klm-b\"",
    )
    .await;
}

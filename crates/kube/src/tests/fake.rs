//! A small stand-in for the Kubernetes API server's Lease endpoints, over tokio TCP on
//! 127.0.0.1, for KubeLease's unit tests: exact resourceVersion semantics (a global counter,
//! 409 Conflict on a stale precondition, 422 for a PUT without one as the real Lease API,
//! an unconditional merge PATCH, 409 AlreadyExists, 404 NotFound `Status` naming the object),
//! plus injected failures. The world's API server (crates/sim/src/apiserver)
//! is the full one; this one only needs what the unit tests exercise.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hyper::body::{Body, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;

use futures_util::StreamExt;

const PREFIX: &str = "/apis/coordination.k8s.io/v1/namespaces/";

/// An answer to inject: status code, Kubernetes reason (`None`: a plain-text body, as from a
/// proxy or an API group that is not served).
#[derive(Clone, Debug)]
pub struct Injected {
    pub code: u16,
    pub reason: Option<&'static str>,
}

#[derive(Debug, Default)]
pub struct State {
    pub last_rv: u64,
    /// (namespace, name) → object.
    pub objects: BTreeMap<(String, String), LeaseObject>,
    /// Answers for the next requests, in order, before anything is applied.
    pub inject: VecDeque<Injected>,
    /// Before the next PUT or PATCH is applied, bump the stored object's resourceVersion (a write by
    /// someone else between the candidate's read and its write).
    pub bump_before_next_put: bool,
    /// Answer the next this many PUTs 409 Conflict without applying them.
    pub conflict_puts: usize,
    /// Accept connections but never answer.
    pub hang: bool,
    /// Every request served: method and path.
    pub requests: Vec<String>,
}

/// A running fake API server.
#[derive(Clone, Debug)]
pub struct FakeApi {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
}

impl FakeApi {
    /// Starts one on a free port of 127.0.0.1 (inside a tokio runtime).
    pub async fn start() -> FakeApi {
        let (addr, mut incoming) = leasesim_net::tcp_incoming("127.0.0.1:0").await.unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Some(Ok(conn)) = incoming.next().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, std::convert::Infallible>(serve(&state, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .auto_date_header(false)
                        .serve_connection(TokioIo::new(conn), service)
                        .await;
                });
            }
        });
        FakeApi { addr, state }
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// The stored object `name` in namespace `ns`.
    pub fn object(&self, ns: &str, name: &str) -> Option<LeaseObject> {
        self.state()
            .objects
            .get(&(ns.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Stores `object` as if written by someone else (a new resourceVersion).
    pub fn put(&self, ns: &str, mut object: LeaseObject) {
        let mut state = self.state();
        state.last_rv += 1;
        object.metadata.resource_version = Some(state.last_rv.to_string());
        let name = object.metadata.name.clone().unwrap();
        state.objects.insert((ns.to_owned(), name), object);
    }
}

async fn serve(state: &Mutex<State>, req: Request<Incoming>) -> Response<String> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let body = read_body(req.into_body()).await;
    let answer = answer(&mut state.lock().unwrap(), method, &path, &body);
    match answer {
        Some(response) => response,
        None => std::future::pending().await,
    }
}

/// The response, or `None` to hang.
fn answer(state: &mut State, method: Method, path: &str, body: &[u8]) -> Option<Response<String>> {
    state.requests.push(format!("{method} {path}"));
    if state.hang {
        return None;
    }
    Some(respond(state, method, path, body))
}

fn respond(state: &mut State, method: Method, path: &str, body: &[u8]) -> Response<String> {
    if method == Method::PUT && state.conflict_puts > 0 {
        state.conflict_puts -= 1;
        return status(409, "Conflict");
    }
    if let Some(injected) = state.inject.pop_front() {
        return match injected.reason {
            Some(reason) => status(injected.code, reason),
            None => plain(injected.code, "404 page not found"),
        };
    }
    let Some((ns, name)) = parse_path(path) else {
        return plain(404, "404 page not found");
    };
    match (method, name) {
        (Method::GET, Some(name)) => get(state, ns, name),
        (Method::POST, None) => create(state, ns, body),
        (Method::PUT, Some(name)) => replace(state, ns, name, body),
        (Method::PATCH, Some(name)) => patch(state, ns, name, body),
        (Method::DELETE, Some(name)) => delete(state, ns, name, body),
        _ => status(405, "MethodNotAllowed"),
    }
}

async fn read_body(mut body: Incoming) -> Vec<u8> {
    let mut bytes = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        if let Ok(data) = frame.unwrap().into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    bytes
}

/// `…/namespaces/{ns}/leases[/{name}]` → (ns, name).
fn parse_path(path: &str) -> Option<(String, Option<String>)> {
    let rest = path.strip_prefix(PREFIX)?;
    let mut parts = rest.split('/');
    let ns = parts.next()?.to_owned();
    (parts.next()? == "leases").then_some(())?;
    let name = parts.next().map(str::to_owned);
    Some((ns, name))
}

fn get(state: &State, ns: String, name: String) -> Response<String> {
    match state.objects.get(&(ns, name.clone())) {
        Some(object) => json(200, object),
        None => not_found(&name),
    }
}

fn create(state: &mut State, ns: String, body: &[u8]) -> Response<String> {
    let mut object: LeaseObject = serde_json::from_slice(body).unwrap();
    let name = object.metadata.name.clone().unwrap();
    if state.objects.contains_key(&(ns.clone(), name.clone())) {
        return status(409, "AlreadyExists");
    }
    state.last_rv += 1;
    object.metadata.resource_version = Some(state.last_rv.to_string());
    object.metadata.namespace = Some(ns.clone());
    state.objects.insert((ns, name), object.clone());
    json(201, &object)
}

fn replace(state: &mut State, ns: String, name: String, body: &[u8]) -> Response<String> {
    let mut object: LeaseObject = serde_json::from_slice(body).unwrap();
    let key = (ns, name);
    bump(state, &key);
    let Some(stored) = state.objects.get(&key) else {
        return not_found(&key.1);
    };
    let Some(expected) = &object.metadata.resource_version else {
        return status(422, "Invalid");
    };
    if stored.metadata.resource_version.as_ref() != Some(expected) {
        return status(409, "Conflict");
    }
    state.last_rv += 1;
    object.metadata.resource_version = Some(state.last_rv.to_string());
    state.objects.insert(key, object.clone());
    json(200, &object)
}

/// A write by someone else just before this one, when asked for.
fn bump(state: &mut State, key: &(String, String)) {
    if std::mem::take(&mut state.bump_before_next_put) {
        state.last_rv += 1;
        let rv = state.last_rv.to_string();
        if let Some(stored) = state.objects.get_mut(key) {
            stored.metadata.resource_version = Some(rv);
        }
    }
}

/// A merge patch of the whole object (what KubeLease sends): applied unconditionally.
fn patch(state: &mut State, ns: String, name: String, body: &[u8]) -> Response<String> {
    let mut object: LeaseObject = serde_json::from_slice(body).unwrap();
    let key = (ns, name);
    bump(state, &key);
    if !state.objects.contains_key(&key) {
        return not_found(&key.1);
    }
    state.last_rv += 1;
    object.metadata.resource_version = Some(state.last_rv.to_string());
    state.objects.insert(key, object.clone());
    json(200, &object)
}

fn delete(state: &mut State, ns: String, name: String, body: &[u8]) -> Response<String> {
    let key = (ns, name);
    let Some(stored) = state.objects.get(&key) else {
        return not_found(&key.1);
    };
    let params: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let expected = params["preconditions"]["resourceVersion"].as_str();
    if expected.is_some_and(|rv| stored.metadata.resource_version.as_deref() != Some(rv)) {
        return status(409, "Conflict");
    }
    let object = state.objects.remove(&key).unwrap();
    json(200, &object)
}

fn json(code: u16, value: &impl serde::Serialize) -> Response<String> {
    let mut response = Response::new(serde_json::to_string(value).unwrap());
    *response.status_mut() = StatusCode::from_u16(code).unwrap();
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    response
}

fn status(code: u16, reason: &str) -> Response<String> {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": format!("{reason} (fake API server)"), "reason": reason, "code": code,
    });
    json(code, &body)
}

/// A real server's 404 for a missing Lease: details name it.
fn not_found(name: &str) -> Response<String> {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": format!("leases.coordination.k8s.io \"{name}\" not found"),
        "reason": "NotFound", "code": 404,
        "details": {"name": name, "group": "coordination.k8s.io", "kind": "leases"},
    });
    json(404, &body)
}

fn plain(code: u16, text: &str) -> Response<String> {
    let mut response = Response::new(text.to_owned());
    *response.status_mut() = StatusCode::from_u16(code).unwrap();
    response
}

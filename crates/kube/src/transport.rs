//! A `kube::Client` over any [`Dialer`]: turmoil TCP in the world, tokio TCP elsewhere.
//!
//! What kube-rs needs to run deterministically under turmoil (docs/pitfalls.md#kube-rs):
//! the client is built inside the host's runtime (tower's `Buffer` spawns its worker there);
//! a base-URI layer turns kube's relative request paths into absolute URIs; hyper-util's
//! `timer` and `pool_timer` are `TokioTimer`, so idle connections expire in the runtime's
//! (simulated) time rather than by reading the real clock. No kubeconfig, environment, TLS,
//! token refresh or retries with random jitter: nothing here reads the real world.

use std::time::Duration;

use hyper::Uri;
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use kube::client::middleware::BaseUriLayer;
use tower::{BoxError, ServiceBuilder, ServiceExt};

use leasesim_net::{Conn, Dialer};

/// A kube::Client over any leasesim_net::Dialer (turmoil TCP in the world, tokio TCP
/// elsewhere), with a base-URI layer and hyper/hyper-util timer+pool_timer = TokioTimer
/// (docs/pitfalls.md#kube-rs); build it inside the host's runtime.
///
/// `authority` is the API server's `host:port` (plain HTTP); `namespace_default` is the
/// client's default namespace; a call whose connection and response head take longer than
/// `call_timeout` on the runtime's clock fails as a transport error (the connection it was
/// on is dropped, so a later call starts on a fresh one). An `authority` that
/// is not a valid URI authority gives a client whose every call fails with an error naming it.
///
/// # Panics
/// Outside a tokio runtime (kube's request buffer spawns a task on the current one).
pub fn client_over(
    dialer: Dialer,
    authority: &str,
    namespace_default: &str,
    call_timeout: Duration,
) -> kube::Client {
    match api_base(authority) {
        Ok(base) => {
            let http = ServiceBuilder::new()
                .layer(BaseUriLayer::new(base))
                .service(http_over(dialer, call_timeout));
            kube::Client::new(http, namespace_default)
        }
        Err(reason) => {
            let refuse = tower::service_fn(move |_: hyper::Request<kube::client::Body>| {
                let reason = reason.clone();
                async move { Err::<hyper::Response<kube::client::Body>, BoxError>(reason.into()) }
            });
            kube::Client::new(refuse, namespace_default)
        }
    }
}

/// The base URI of a plain-HTTP API server at `authority` (`host:port`): `http://{authority}/`.
///
/// # Errors
/// `authority` is not a valid URI authority: a message naming it.
pub fn api_base(authority: &str) -> Result<Uri, String> {
    match format!("http://{authority}/").parse::<Uri>() {
        Ok(base) if base.authority().is_some() => Ok(base),
        _ => Err(format!(
            "bad API server address `{authority}` (want host:port)"
        )),
    }
}

/// The HTTP side of [`client_over`] for any request body `B`, so that a client of another
/// kube-rs version (a target crate's, docs/targets.md#kubert) runs on the same transport:
/// hyper-util's pooled HTTP/1 client over `dialer`, with `timer` and `pool_timer` =
/// `TokioTimer`, each call failing as a transport error once `call_timeout` passes on the
/// runtime's clock. Requests must carry absolute URIs (put the client's base-URI layer in
/// front, with [`api_base`]).
pub fn http_over<B>(
    dialer: Dialer,
    call_timeout: Duration,
) -> impl tower::Service<
    hyper::Request<B>,
    Response = hyper::Response<hyper::body::Incoming>,
    Error = BoxError,
    Future = impl Send + 'static,
> + Send
+ 'static
where
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let connector = tower::service_fn(move |uri: Uri| {
        let dialer = dialer.clone();
        Box::pin(async move { dial(&dialer, &uri).await })
            as leasesim_core::BoxFuture<std::io::Result<TokioIo<Conn>>>
    });
    let http: HttpClient<_, B> = HttpClient::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .build(connector);
    http.map_err(BoxError::from)
        .map_future(move |call| with_deadline(call, call_timeout))
}

async fn dial(dialer: &Dialer, uri: &Uri) -> std::io::Result<TokioIo<Conn>> {
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().unwrap_or(80);
    dialer(format!("{host}:{port}")).await.map(TokioIo::new)
}

/// `call`, failing with a timeout error once `deadline` passes on the runtime's clock.
async fn with_deadline<T>(
    call: impl std::future::Future<Output = Result<T, BoxError>>,
    deadline: Duration,
) -> Result<T, BoxError> {
    // RPC deadlines may use the transport's own timers (docs/contracts.md#time): under turmoil the
    // runtime's time is simulated time, as for tonic's deadlines.
    #[allow(clippy::disallowed_methods)]
    let timed = tokio::time::timeout(deadline, call).await;
    timed.unwrap_or_else(|_| Err(format!("call timed out after {deadline:?}").into()))
}

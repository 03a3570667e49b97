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

use crate::net::{Conn, Dialer};

/// A kube::Client over any crate::net::Dialer (turmoil TCP in the world, tokio TCP
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
    match format!("http://{authority}/").parse::<Uri>() {
        Ok(base) if base.authority().is_some() => {
            kube::Client::new(http_stack(dialer, base, call_timeout), namespace_default)
        }
        _ => {
            let reason = format!("bad API server address `{authority}` (want host:port)");
            let refuse = tower::service_fn(move |_: hyper::Request<kube::client::Body>| {
                let reason = reason.clone();
                async move { Err::<hyper::Response<kube::client::Body>, BoxError>(reason.into()) }
            });
            kube::Client::new(refuse, namespace_default)
        }
    }
}

/// Base URI → call deadline → hyper-util's pooled HTTP/1 client over `dialer`.
fn http_stack(
    dialer: Dialer,
    base: Uri,
    call_timeout: Duration,
) -> impl tower::Service<
    hyper::Request<kube::client::Body>,
    Response = hyper::Response<hyper::body::Incoming>,
    Error = BoxError,
    Future = impl Send + 'static,
> + Send
+ 'static {
    let connector = tower::service_fn(move |uri: Uri| {
        let dialer = dialer.clone();
        Box::pin(async move { dial(&dialer, &uri).await })
            as crate::BoxFuture<std::io::Result<TokioIo<Conn>>>
    });
    let http: HttpClient<_, kube::client::Body> = HttpClient::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .build(connector);
    let http = http
        .map_err(BoxError::from)
        .map_future(move |call| with_deadline(call, call_timeout));
    ServiceBuilder::new()
        .layer(BaseUriLayer::new(base))
        .service(http)
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

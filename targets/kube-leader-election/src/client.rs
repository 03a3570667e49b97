//! kube-leader-election's kube 4 `Client` over the world's transport, built as leasesim builds
//! kube 5's (`leasesim::lease::client_over`): the same HTTP stack (`http_over`) behind kube 4's
//! own base-URI layer, so every request the crate makes crosses the world's TCP
//! (docs/targets.md#kube-leader-election).

use std::time::Duration;

use kube4::client::middleware::BaseUriLayer;
use leasesim::lease::kube::{api_base, http_over};
use leasesim::net::Dialer;
use tower::Layer;

/// A kube 4 client to the API server at `authority` (`host:port`, plain HTTP) over `dialer`,
/// with default namespace `namespace`; each call fails as a transport error once
/// `call_timeout` passes on the runtime's clock. Build it inside the host's runtime (the
/// client's request buffer spawns its worker there).
///
/// # Errors
/// `authority` is not a valid URI authority.
pub fn client_over(
    dialer: Dialer,
    authority: &str,
    namespace: &str,
    call_timeout: Duration,
) -> Result<kube4::Client, String> {
    let base = api_base(authority)?;
    let http = BaseUriLayer::new(base).layer(http_over(dialer, call_timeout));
    Ok(kube4::Client::new(http, namespace))
}

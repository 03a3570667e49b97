//! The lease service over gRPC: [`LeaseServer`] fronts any [`SessionLease`] authority, and
//! [`RemoteLease`] is the driver that implements [`SessionLease`] by calling it.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use tonic::{Request, Response, Status};

use crate::proto::lease_service_client::LeaseServiceClient;
use crate::proto::lease_service_server::{LeaseService, LeaseServiceServer};
use crate::proto::{AcquireRequest, LeaseReply, LeaseRequest, ReleaseReply};
use crate::{MESSAGE_MAX_BYTES, RemoteChannel, status, wire};
use leasesim_core::hooks::HookSlot;
use leasesim_core::lease::{Lease, LeaseError, Owner, SessionId, SessionLease};
use leasesim_net::Incoming;

/// The gRPC lease service in front of `authority`.
#[derive(Debug)]
pub struct LeaseServer {
    authority: Arc<dyn SessionLease>,
    hooks: HookSlot,
}

impl LeaseServer {
    /// A service answering from `authority`.
    pub fn new(authority: Arc<dyn SessionLease>) -> Self {
        LeaseServer {
            authority,
            hooks: HookSlot::default(),
        }
    }

    /// The same service calling `hooks` at the start of each handler
    /// ([`PausePoint::ServiceHandlerStart`](leasesim_core::hooks::PausePoint::ServiceHandlerStart)).
    pub fn with_hooks(mut self, hooks: HookSlot) -> Self {
        self.hooks = hooks;
        self
    }

    /// The service, to serve on a server of one's own (with layers of one's own).
    pub fn service(self) -> LeaseServiceServer<LeaseServer> {
        LeaseServiceServer::new(self)
            .max_decoding_message_size(MESSAGE_MAX_BYTES)
            .max_encoding_message_size(MESSAGE_MAX_BYTES)
    }

    /// Serves on `incoming` until `shutdown` completes.
    ///
    /// # Errors
    /// Transport failures of the server itself.
    pub async fn serve(
        self,
        incoming: Incoming,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), tonic::transport::Error> {
        let service = self.service();
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await
    }
}

fn reply(lease: Result<Lease, LeaseError>) -> Result<Response<LeaseReply>, Status> {
    let lease = lease.map_err(status::from_lease_error)?;
    Ok(Response::new(LeaseReply {
        lease: Some(wire::lease_to_wire(&lease)),
    }))
}

#[tonic::async_trait]
impl LeaseService for LeaseServer {
    async fn acquire(
        &self,
        request: Request<AcquireRequest>,
    ) -> Result<Response<LeaseReply>, Status> {
        self.hooks.service_handler_start().await;
        let request = request.into_inner();
        let session = wire::session(request.session).map_err(status::invalid)?;
        let owner = wire::owner(request.owner).map_err(status::invalid)?;
        reply(self.authority.acquire(&session, &owner).await)
    }

    async fn renew(&self, request: Request<LeaseRequest>) -> Result<Response<LeaseReply>, Status> {
        self.hooks.service_handler_start().await;
        let lease = wire::lease(request.into_inner().lease).map_err(status::invalid)?;
        reply(self.authority.renew(&lease).await)
    }

    async fn release(
        &self,
        request: Request<LeaseRequest>,
    ) -> Result<Response<ReleaseReply>, Status> {
        self.hooks.service_handler_start().await;
        let lease = wire::lease(request.into_inner().lease).map_err(status::invalid)?;
        self.authority
            .release(&lease)
            .await
            .map_err(status::from_lease_error)?;
        Ok(Response::new(ReleaseReply {}))
    }
}

/// The lease driver: [`SessionLease`] over gRPC. Every call carries the configured
/// deadline; a call that times out or breaks is [`LeaseError::Unavailable`] (its outcome is
/// unknown) and the next call starts on a fresh connection.
#[derive(Debug)]
pub struct RemoteLease {
    channel: RemoteChannel,
}

impl RemoteLease {
    /// A driver for the lease service `channel` connects to
    /// ([`RemoteChannel::new`]: its address, transport, clock and deadlines).
    pub fn new(channel: RemoteChannel) -> Self {
        RemoteLease { channel }
    }

    fn client(&self) -> LeaseServiceClient<tonic::transport::Channel> {
        LeaseServiceClient::new(self.channel.get()).max_decoding_message_size(MESSAGE_MAX_BYTES)
    }

    fn failed(&self, status: Status) -> LeaseError {
        self.channel.failed(&status);
        status::to_lease_error(&status)
    }

    fn granted(&self, reply: Result<Response<LeaseReply>, Status>) -> Result<Lease, LeaseError> {
        let reply = reply.map_err(|status| self.failed(status))?;
        wire::lease(reply.into_inner().lease).map_err(|e| LeaseError::Unavailable {
            reason: format!("malformed reply from the lease service: {e}"),
        })
    }
}

#[async_trait]
impl SessionLease for RemoteLease {
    async fn acquire(&self, session: &SessionId, owner: &Owner) -> Result<Lease, LeaseError> {
        let request = AcquireRequest {
            session: session.as_str().to_owned(),
            owner: Some(wire::owner_to_wire(owner)),
        };
        self.granted(self.client().acquire(request).await)
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, LeaseError> {
        let request = LeaseRequest {
            lease: Some(wire::lease_to_wire(lease)),
        };
        self.granted(self.client().renew(request).await)
    }

    async fn release(&self, lease: &Lease) -> Result<(), LeaseError> {
        let request = LeaseRequest {
            lease: Some(wire::lease_to_wire(lease)),
        };
        match self.client().release(request).await {
            Ok(_) => Ok(()),
            Err(status) => Err(self.failed(status)),
        }
    }
}

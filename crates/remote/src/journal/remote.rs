//! The ledger service over gRPC: [`LedgerServer`] fronts any [`Ledger`], and
//! [`RemoteLedger`] is the client that implements [`Ledger`] by calling it.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use prost::Message;
use tonic::{Request, Response, Status};

use crate::proto::ledger_service_client::LedgerServiceClient;
use crate::proto::ledger_service_server::{LedgerService, LedgerServiceServer};
use crate::proto::{AppendReply, AppendRequest, ReadReply, ReadRequest, TipReply, TipRequest};
use crate::{MESSAGE_MAX_BYTES, RemoteChannel, status, wire};
use leasesim_core::hooks::HookSlot;
use leasesim_core::journal::{Entry, Ledger, LedgerError, LedgerResult, Record, Seq};
use leasesim_core::lease::SessionId;
use leasesim_net::Incoming;

/// Most entries one read reply carries; the client reads on from where it stopped.
pub const READ_PAGE_ENTRIES: usize = 1024;

/// Encoded bytes one read reply aims to stay under (1 MiB); a page always holds at least
/// one entry.
pub const READ_PAGE_BYTES: usize = 1 << 20;

/// The gRPC ledger service in front of `ledger`.
#[derive(Debug)]
pub struct LedgerServer {
    ledger: Arc<dyn Ledger>,
    hooks: HookSlot,
}

impl LedgerServer {
    /// A service answering from `ledger`.
    pub fn new(ledger: Arc<dyn Ledger>) -> Self {
        LedgerServer {
            ledger,
            hooks: HookSlot::default(),
        }
    }

    /// The same service calling `hooks` at the start of each handler
    /// ([`PausePoint::ServiceHandlerStart`](leasesim_core::hooks::PausePoint::ServiceHandlerStart)).
    pub fn with_hooks(mut self, hooks: HookSlot) -> Self {
        self.hooks = hooks;
        self
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
        let service = LedgerServiceServer::new(self)
            .max_decoding_message_size(MESSAGE_MAX_BYTES)
            .max_encoding_message_size(MESSAGE_MAX_BYTES);
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await
    }
}

/// The first page of `entries`: at most [`READ_PAGE_ENTRIES`] entries and about
/// [`READ_PAGE_BYTES`], and whether more follow.
fn page(entries: &[Entry]) -> ReadReply {
    let mut reply = ReadReply::default();
    let mut bytes = 0;
    for entry in entries.iter().take(READ_PAGE_ENTRIES) {
        let wire = wire::entry_to_wire(entry);
        bytes += wire.encoded_len();
        if bytes > READ_PAGE_BYTES && !reply.entries.is_empty() {
            break;
        }
        reply.entries.push(wire);
    }
    reply.more = reply.entries.len() < entries.len();
    reply
}

#[tonic::async_trait]
impl LedgerService for LedgerServer {
    async fn tip(&self, request: Request<TipRequest>) -> Result<Response<TipReply>, Status> {
        self.hooks.service_handler_start().await;
        let session = wire::session(request.into_inner().session).map_err(status::invalid)?;
        let tip = self
            .ledger
            .tip(&session)
            .await
            .map_err(status::from_ledger_error)?;
        Ok(Response::new(TipReply { tip }))
    }

    async fn append(
        &self,
        request: Request<AppendRequest>,
    ) -> Result<Response<AppendReply>, Status> {
        self.hooks.service_handler_start().await;
        let request = request.into_inner();
        let session = wire::session(request.session).map_err(status::invalid)?;
        let record = wire::record(request.record).map_err(status::invalid)?;
        let tip = self
            .ledger
            .append(&session, request.expected, record)
            .await
            .map_err(status::from_ledger_error)?;
        Ok(Response::new(AppendReply { tip }))
    }

    async fn read(&self, request: Request<ReadRequest>) -> Result<Response<ReadReply>, Status> {
        self.hooks.service_handler_start().await;
        let request = request.into_inner();
        let session = wire::session(request.session).map_err(status::invalid)?;
        let entries = self
            .ledger
            .read(&session, request.from)
            .await
            .map_err(status::from_ledger_error)?;
        Ok(Response::new(page(&entries)))
    }
}

/// The ledger client: [`Ledger`] over gRPC. Every call carries the configured deadline; a
/// call that times out or breaks is [`LedgerError::Unknown`] (an append may have committed)
/// and the next call starts on a fresh connection.
#[derive(Debug)]
pub struct RemoteLedger {
    channel: RemoteChannel,
}

impl RemoteLedger {
    /// A client of the ledger service `channel` connects to
    /// ([`RemoteChannel::new`]: its address, transport, clock and deadlines).
    pub fn new(channel: RemoteChannel) -> Self {
        RemoteLedger { channel }
    }

    fn client(&self) -> LedgerServiceClient<tonic::transport::Channel> {
        LedgerServiceClient::new(self.channel.get()).max_decoding_message_size(MESSAGE_MAX_BYTES)
    }

    fn failed(&self, status: Status) -> LedgerError {
        self.channel.failed(&status);
        status::to_ledger_error(&status)
    }
}

fn malformed(error: wire::WireError) -> LedgerError {
    LedgerError::Unknown {
        reason: format!("malformed reply from the ledger service: {error}"),
    }
}

#[async_trait]
impl Ledger for RemoteLedger {
    async fn tip(&self, name: &SessionId) -> LedgerResult<Seq> {
        let request = TipRequest {
            session: name.as_str().to_owned(),
        };
        match self.client().tip(request).await {
            Ok(reply) => Ok(reply.into_inner().tip),
            Err(status) => Err(self.failed(status)),
        }
    }

    async fn append(&self, name: &SessionId, expected: Seq, record: Record) -> LedgerResult<Seq> {
        if let Record::Event { payload, .. } = &record
            && payload.len() > wire::PAYLOAD_MAX_BYTES
        {
            return Err(LedgerError::Invalid {
                reason: format!(
                    "event payload is {} bytes; the limit is {}",
                    payload.len(),
                    wire::PAYLOAD_MAX_BYTES
                ),
            });
        }
        let request = AppendRequest {
            session: name.as_str().to_owned(),
            expected,
            record: Some(wire::record_to_wire(&record)),
        };
        match self.client().append(request).await {
            Ok(reply) => Ok(reply.into_inner().tip),
            Err(status) => Err(self.failed(status)),
        }
    }

    async fn read(&self, name: &SessionId, from: Seq) -> LedgerResult<Vec<Entry>> {
        let mut entries = Vec::new();
        let mut next = from.max(1);
        loop {
            let request = ReadRequest {
                session: name.as_str().to_owned(),
                from: next,
            };
            let reply = match self.client().read(request).await {
                Ok(reply) => reply.into_inner(),
                Err(status) => return Err(self.failed(status)),
            };
            let reply_was_empty = reply.entries.is_empty();
            for entry in reply.entries {
                let entry = wire::entry(entry).map_err(malformed)?;
                if entry.seq != next {
                    return Err(malformed(wire::WireError(format!(
                        "expected entry {next}, got {}",
                        entry.seq
                    ))));
                }
                next += 1;
                entries.push(entry);
            }
            if !reply.more {
                return Ok(entries);
            }
            if reply_was_empty {
                let why = "a read page said more entries follow but held none";
                return Err(malformed(wire::WireError(why.into())));
            }
        }
    }
}

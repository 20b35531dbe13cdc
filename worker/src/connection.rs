//! Opening a connection to a coordinator, the same way for every client (the worker loop and
//! `keima status`): the address (`https://` with TLS, verified against an optional CA), the
//! run's token on every call, and the wire contract's message size limit.

use keima_proto::MAX_MESSAGE_BYTES;
use keima_proto::v1::coordinator_client::CoordinatorClient;
use std::path::PathBuf;
use std::time::Duration;
use tonic::Status;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

/// Where the coordinator is and what proves this client belongs to the run.
#[derive(Clone, Debug)]
pub struct Connection {
    /// e.g. `http://10.0.0.5:7470`, or `https://...` with TLS.
    pub coordinator: String,
    /// The run's shared token.
    pub token: String,
    /// PEM CA certificate for `https://` coordinators (default: the system's roots).
    pub tls_ca: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("--coordinator {url}: {source}")]
    Address { url: String, source: tonic::transport::Error },
    #[error("--tls-ca {}: {source}", path.display())]
    CaFile { path: PathBuf, source: std::io::Error },
    #[error("TLS: {0}")]
    Tls(tonic::transport::Error),
    #[error("the token must be printable ASCII")]
    Token,
}

/// Puts the run's token on every call.
#[derive(Clone)]
pub struct Auth(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        req.metadata_mut().insert(keima_proto::AUTH_HEADER, self.0.clone());
        Ok(req)
    }
}

pub type Client = CoordinatorClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>;

/// A client for `c` (inside a tokio runtime). The channel connects lazily: an absent
/// coordinator shows up as a failed call (which the caller may retry), not here.
pub fn connect(c: &Connection) -> Result<Client, ConnectError> {
    let mut ep = Endpoint::from_shared(c.coordinator.clone())
        .map_err(|source| ConnectError::Address { url: c.coordinator.clone(), source })?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    if c.coordinator.starts_with("https://") {
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = &c.tls_ca {
            let pem =
                std::fs::read(ca).map_err(|source| ConnectError::CaFile { path: ca.clone(), source })?;
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        ep = ep.tls_config(tls).map_err(ConnectError::Tls)?;
    }
    let channel = ep.connect_lazy();
    let token = format!("Bearer {}", c.token).parse().map_err(|_| ConnectError::Token)?;
    Ok(CoordinatorClient::with_interceptor(channel, Auth(token))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}

//! `keima status`'s client: one `Status` call to a running coordinator, for its counters.

use crate::connection::{ConnectError, Connection, connect};
use keima_proto::PROTOCOL_VERSION;
use keima_proto::v1;
use tonic::Code;

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("{0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("{coordinator}: {message}")]
    Call { coordinator: String, code: Code, message: String },
}

/// The coordinator's counters.
pub fn fetch_status(c: &Connection) -> Result<v1::StatusReply, StatusError> {
    let rt =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(StatusError::Runtime)?;
    rt.block_on(async move {
        let mut client = connect(c)?;
        client.status(v1::StatusRequest { protocol: PROTOCOL_VERSION }).await.map(|r| r.into_inner()).map_err(
            |s| StatusError::Call {
                coordinator: c.coordinator.clone(),
                code: s.code(),
                message: s.message().into(),
            },
        )
    })
}

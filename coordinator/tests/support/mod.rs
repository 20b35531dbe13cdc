//! What the in-process coordinator tests share: a scratch directory, a runtime, the
//! pushes a correct worker makes, and a log capture.

#![allow(dead_code)]

use keima_coordinator::core::Core;
use keima_coordinator::service::Service;
use keima_proto::seal::push_checksum;
use keima_proto::sparse::{self, Fnv64};
use keima_proto::v1::{self, push_chunk::Part};
use tonic::Status;

/// A fresh directory under the target's temporary directory, removed when dropped.
pub fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("keima-coordinator-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// What a test pushes for a shard.
pub struct Work {
    pub gradient: Vec<(u32, [f32; 2])>,
    pub records: Vec<u8>,
    pub stats: v1::ShardStats,
    /// A match shard's result (training shards: `None`).
    pub result: Option<v1::MatchResult>,
}

/// The chunks a correct worker sends for `w`.
pub fn chunks(core: &Core, worker: &str, lease: &v1::Lease, version: u64, w: &Work) -> Vec<v1::PushChunk> {
    let header = v1::PushHeader {
        protocol: keima_proto::PROTOCOL_VERSION,
        worker_id: worker.into(),
        shard_id: lease.shard_id,
        attempt: lease.attempt,
        weights_version: version,
        layout: Some(core.layout()),
        gradient_entries: w.gradient.len() as u64,
        teacher_records: (w.records.len() / 40) as u64,
    };
    let raw = sparse::encode_gradient(&w.gradient);
    let mut payload = Fnv64::default();
    payload.update(&raw);
    let mut out = vec![v1::PushChunk { part: Some(Part::Header(header.clone())) }];
    out.push(v1::PushChunk { part: Some(Part::Gradient(sparse::compress(&raw))) });
    if !w.records.is_empty() {
        payload.update(&w.records);
        out.push(v1::PushChunk { part: Some(Part::Records(sparse::compress(&w.records))) });
    }
    let checksum = push_checksum(payload, &header, &w.stats, w.result.as_ref());
    let trailer = v1::PushTrailer { stats: Some(w.stats), checksum, match_result: w.result.clone() };
    out.push(v1::PushChunk { part: Some(Part::Trailer(trailer)) });
    out
}

pub async fn push(svc: &Service, chunks: Vec<v1::PushChunk>) -> Result<v1::PushReply, Status> {
    svc.push(tokio_stream::iter(chunks.into_iter().map(Ok))).await.map_err(Status::from)
}

pub fn lease(core: &Core, worker: &str) -> v1::Lease {
    let r = core.lease(worker);
    assert_eq!(r.state, v1::lease_reply::State::Leased as i32, "{r:?}");
    r.lease.unwrap()
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
pub struct Captured(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

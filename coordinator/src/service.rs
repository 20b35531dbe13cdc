//! The gRPC service: checks every request (token, protocol version, worker id, field
//! lengths, layout, sizes, counts, finite values, checksum) and hands the work to `Core`.
//! Strings from workers are logged escaped (`escape_debug`), so they cannot forge log lines.

use crate::core::{Core, MAX_SHARD_CPU_SECONDS, MAX_SHARD_POSITIONS, ReceivedPush, WeightsSync, now_ms};
use crate::error::PushError;
use engine_core::teacher::PackedSfenValue;
use keima_proto::sparse::{self, Fnv64};
use keima_proto::v1::coordinator_server::{Coordinator, CoordinatorServer};
use keima_proto::v1::{self, push_chunk::Part};
use keima_proto::{MAX_MESSAGE_BYTES, checks, seal, usi_engine_name};
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

/// Longest accepted `RegisterRequest.worker_name`, bytes.
pub const MAX_WORKER_NAME_BYTES: usize = 128;
/// Longest accepted `RegisterRequest.version`, bytes.
pub const MAX_VERSION_BYTES: usize = 64;
/// Longest part of `CompleteRequest.error` kept, bytes (the rest is cut).
pub const MAX_ERROR_BYTES: usize = 4096;
/// Bytes of one teacher record (a PackedSfenValue) in a push.
const RECORD_BYTES: usize = PackedSfenValue::SIZE;

pub struct Service {
    pub core: Arc<Core>,
}

/// Compares the `authorization` metadata with the shared token in constant time.
#[derive(Clone)]
pub struct TokenCheck {
    pub expected: Arc<Vec<u8>>,
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let got = req.metadata().get(keima_proto::AUTH_HEADER).map(|v| v.as_bytes()).unwrap_or(b"");
        let got = got.strip_prefix(b"Bearer ").unwrap_or(b"");
        let want = self.expected.as_slice();
        let mut diff = (got.len() != want.len()) as u8;
        for (i, &b) in want.iter().enumerate() {
            diff |= b ^ got.get(i).copied().unwrap_or(0);
        }
        if diff == 0 && !want.is_empty() {
            Ok(req)
        } else {
            Err(Status::unauthenticated(
                "missing or wrong token: give the run's token (keima worker --token-file FILE or KEIMA_TOKEN)",
            ))
        }
    }
}

pub type Server = tonic::service::interceptor::InterceptedService<CoordinatorServer<Service>, TokenCheck>;

pub fn server(core: Arc<Core>, token: &str) -> Server {
    let svc = CoordinatorServer::new(Service { core })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    tonic::service::interceptor::InterceptedService::new(
        svc,
        TokenCheck { expected: Arc::new(token.as_bytes().to_vec()) },
    )
}

fn bad(msg: impl Into<String>) -> Status {
    Status::invalid_argument(msg.into())
}

/// `s` cut to at most `max` bytes at a character boundary.
fn truncated(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Service {
    fn check(&self, protocol: u32, worker_id: &str) -> Result<(), Status> {
        checks::protocol(protocol).map_err(Status::failed_precondition)?;
        if !self.core.touch(worker_id) {
            return Err(Status::not_found(format!(
                "worker id {worker_id:?} is not registered with this run (the coordinator restarted?): register again"
            )));
        }
        Ok(())
    }

    /// Receives, checks and merges one push; counts and logs what went wrong. The gRPC
    /// method is this plus the status mapping (`PushError` → `Status`).
    pub async fn push<S>(&self, stream: S) -> Result<v1::PushReply, PushError>
    where
        S: Stream<Item = Result<v1::PushChunk, Status>> + Unpin,
    {
        let result = match self.receive_push(stream).await {
            Ok(push) => {
                let core = self.core.clone();
                tokio::task::spawn_blocking(move || core.merge_push(push))
                    .await
                    .unwrap_or_else(|e| Err(PushError::Internal(format!("merge task: {e}"))))
            }
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            self.core.count_failed_push(e);
            if e.is_server_fault() {
                tracing::error!("push not merged, coordinator fault (the worker retries): {e}");
            } else {
                tracing::warn!("push rejected: {}", e.to_string().escape_debug());
            }
        }
        result
    }

    async fn receive_push<S>(&self, mut stream: S) -> Result<ReceivedPush, PushError>
    where
        S: Stream<Item = Result<v1::PushChunk, Status>> + Unpin,
    {
        let core = &self.core;
        let layout = core.layout();
        let features = layout.features;
        let limit_mib = core.config().coordinator.max_push_mib;
        let max_bytes = limit_mib << 20;
        let invalid = |m: String| PushError::Invalid(m);
        let first = stream
            .next()
            .await
            .transpose()
            .map_err(PushError::Transport)?
            .ok_or_else(|| invalid("empty push: the first chunk must be the header".into()))?;
        let Some(Part::Header(h)) = first.part else {
            return Err(invalid("the first chunk of a push must be the header".into()));
        };
        checks::protocol(h.protocol).map_err(PushError::Incompatible)?;
        if !core.touch(&h.worker_id) {
            return Err(PushError::UnknownWorker(h.worker_id));
        }
        checks::layout(h.layout.as_ref(), &layout).map_err(PushError::Incompatible)?;
        if h.gradient_entries > features {
            return Err(invalid(format!("{} gradient entries for {features} features", h.gradient_entries)));
        }
        if h.teacher_records > (max_bytes / RECORD_BYTES as u64).max(1) {
            return Err(invalid(format!("{} teacher records exceed the push limit", h.teacher_records)));
        }
        let mut gradient = Vec::with_capacity(h.gradient_entries.min(1 << 24) as usize);
        let mut records = Vec::new();
        let mut payload = Fnv64::default();
        let mut wire = 0u64;
        let trailer = loop {
            let chunk = stream
                .next()
                .await
                .transpose()
                .map_err(PushError::Transport)?
                .ok_or_else(|| invalid("push ended without its trailer".into()))?;
            match chunk.part {
                Some(Part::Gradient(blob)) => {
                    wire += blob.len() as u64;
                    if wire > max_bytes {
                        return Err(PushError::TooLarge { limit_mib });
                    }
                    let raw = sparse::decompress(&blob, sparse::MAX_BLOB_BYTES)
                        .map_err(|e| invalid(e.to_string()))?;
                    payload.update(&raw);
                    let last = gradient.last().map(|g: &(u32, [f32; 2])| g.0);
                    sparse::decode_gradient(&raw, features, last, &mut gradient)
                        .map_err(|e| invalid(e.to_string()))?;
                    if gradient.len() as u64 > h.gradient_entries {
                        return Err(invalid("more gradient entries than the header announced".into()));
                    }
                }
                Some(Part::Records(blob)) => {
                    wire += blob.len() as u64;
                    if wire > max_bytes {
                        return Err(PushError::TooLarge { limit_mib });
                    }
                    let raw = sparse::decompress(&blob, sparse::MAX_BLOB_BYTES)
                        .map_err(|e| invalid(e.to_string()))?;
                    if raw.len() % RECORD_BYTES != 0 {
                        return Err(invalid(format!(
                            "teacher record chunk is not a whole number of {RECORD_BYTES}-byte records"
                        )));
                    }
                    payload.update(&raw);
                    records.extend_from_slice(&raw);
                    if (records.len() / RECORD_BYTES) as u64 > h.teacher_records {
                        return Err(invalid("more teacher records than the header announced".into()));
                    }
                }
                Some(Part::Trailer(t)) => break t,
                Some(Part::Header(_)) => return Err(invalid("a second header in one push".into())),
                None => return Err(invalid("a push chunk without content".into())),
            }
        };
        let record_count = records.len() / RECORD_BYTES;
        if gradient.len() as u64 != h.gradient_entries || record_count as u64 != h.teacher_records {
            return Err(invalid(format!(
                "push holds {} entries and {record_count} records, the header announced {} and {}",
                gradient.len(),
                h.gradient_entries,
                h.teacher_records
            )));
        }
        let stats = trailer.stats.ok_or_else(|| invalid("push trailer without statistics".into()))?;
        if trailer.checksum != seal::push_checksum(payload, &h, &stats, trailer.match_result.as_ref()) {
            return Err(PushError::BadChecksum);
        }
        // A batch holds up to `batch_pool_draws` records per position the shard made.
        let max_used = stats.positions.saturating_mul(core.config().coordinator.batch_pool_draws as u64);
        if !stats.loss_sum.is_finite() || stats.loss_sum < 0.0 || stats.used > max_used {
            return Err(invalid(format!(
                "push statistics are inconsistent (loss not finite, or used {} > positions {} × \
                 batch_pool_draws)",
                stats.used, stats.positions
            )));
        }
        if !stats.cpu_seconds.is_finite() || !(0.0..=MAX_SHARD_CPU_SECONDS).contains(&stats.cpu_seconds) {
            return Err(invalid(format!(
                "push statistics: cpu_seconds = {} is not a CPU time a shard can take (finite, 0 to \
                 {MAX_SHARD_CPU_SECONDS})",
                stats.cpu_seconds
            )));
        }
        if stats.positions > MAX_SHARD_POSITIONS {
            return Err(invalid(format!(
                "push claims {} positions, more than any shard holds ({MAX_SHARD_POSITIONS})",
                stats.positions
            )));
        }
        Ok(ReceivedPush {
            worker_id: h.worker_id,
            shard_id: h.shard_id,
            attempt: h.attempt,
            computed_on: h.weights_version,
            gradient,
            records,
            stats,
            result: trailer.match_result,
            wire_bytes: wire,
            received_ms: now_ms(),
        })
    }
}

type ChunkStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<v1::WeightsChunk, Status>> + Send>>;

#[tonic::async_trait]
impl Coordinator for Service {
    async fn register(
        &self,
        req: Request<v1::RegisterRequest>,
    ) -> Result<Response<v1::RegisterReply>, Status> {
        let r = req.into_inner();
        checks::protocol(r.protocol).map_err(Status::failed_precondition)?;
        if r.threads == 0 || r.threads > 4096 {
            return Err(bad(format!("threads = {} is not a plausible thread count", r.threads)));
        }
        for (field, value, max) in [
            ("worker_name", &r.worker_name, MAX_WORKER_NAME_BYTES),
            ("version", &r.version, MAX_VERSION_BYTES),
        ] {
            if value.len() > max {
                return Err(bad(format!(
                    "register: {field} is {} bytes, at most {max} are accepted: give a shorter --name",
                    value.len()
                )));
            }
        }
        if r.usi_engines.len() > usi_engine_name::MAX_ENGINES {
            return Err(bad(format!(
                "register: {} USI engines, at most {} are accepted",
                r.usi_engines.len(),
                usi_engine_name::MAX_ENGINES
            )));
        }
        for name in &r.usi_engines {
            usi_engine_name::check(name).map_err(|e| bad(format!("register: {e}")))?;
        }
        let id = self.core.register_with_engines(&r.worker_name, r.threads, r.usi_engines.clone());
        tracing::info!(
            worker = %id,
            name = %r.worker_name.escape_debug(),
            threads = r.threads,
            version = %r.version.escape_debug(),
            usi_engines = ?r.usi_engines,
            "worker registered"
        );
        Ok(Response::new(v1::RegisterReply {
            worker_id: id,
            layout: Some(self.core.layout()),
            heartbeat_ms: self.core.config().coordinator.heartbeat_ms,
            max_push_bytes: self.core.config().coordinator.max_push_mib << 20,
            pattern_file: self.core.pattern_file().to_vec(),
            run_id: self.core.run_id().to_string(),
        }))
    }

    async fn lease(&self, req: Request<v1::LeaseRequest>) -> Result<Response<v1::LeaseReply>, Status> {
        let r = req.into_inner();
        self.check(r.protocol, &r.worker_id)?;
        Ok(Response::new(self.core.lease(&r.worker_id)))
    }

    async fn heartbeat(
        &self,
        req: Request<v1::HeartbeatRequest>,
    ) -> Result<Response<v1::HeartbeatReply>, Status> {
        let r = req.into_inner();
        self.check(r.protocol, &r.worker_id)?;
        Ok(Response::new(self.core.heartbeat(&r.worker_id, r.shard_id, r.attempt)))
    }

    type PullWeightsStream = ChunkStream;

    async fn pull_weights(
        &self,
        req: Request<v1::PullWeightsRequest>,
    ) -> Result<Response<Self::PullWeightsStream>, Status> {
        let r = req.into_inner();
        self.check(r.protocol, &r.worker_id)?;
        let core = self.core.clone();
        let chunks = tokio::task::spawn_blocking(move || {
            let WeightsSync { version, full, chunks } = core.weights_sync(r.have_version, r.full);
            let layout = core.layout();
            let count = chunks.len() as u32;
            chunks
                .iter()
                .enumerate()
                .map(|(i, chunk)| v1::WeightsChunk {
                    version,
                    full,
                    chunk_index: i as u32,
                    chunk_count: count,
                    entries: chunk.entries,
                    blob: chunk.blob.clone(),
                    layout: Some(layout),
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
        let bytes: u64 = chunks.iter().map(|c| c.blob.len() as u64).sum();
        self.core.count_bytes_out(bytes);
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks.into_iter().map(Ok)))))
    }

    async fn push_gradient(
        &self,
        req: Request<Streaming<v1::PushChunk>>,
    ) -> Result<Response<v1::PushReply>, Status> {
        Ok(Response::new(self.push(req.into_inner()).await?))
    }

    async fn complete(
        &self,
        req: Request<v1::CompleteRequest>,
    ) -> Result<Response<v1::CompleteReply>, Status> {
        let r = req.into_inner();
        self.check(r.protocol, &r.worker_id)?;
        let failed = r.reason == v1::complete_request::Reason::Failed as i32;
        let error = truncated(&r.error, MAX_ERROR_BYTES);
        let accepted = self.core.give_back(&r.worker_id, r.shard_id, r.attempt, failed, error).is_ok();
        Ok(Response::new(v1::CompleteReply { accepted }))
    }

    async fn status(&self, req: Request<v1::StatusRequest>) -> Result<Response<v1::StatusReply>, Status> {
        checks::protocol(req.into_inner().protocol).map_err(Status::failed_precondition)?;
        Ok(Response::new(status_of(&self.core)))
    }
}

/// The run's counters as the wire's status message (also rendered for Prometheus).
pub fn status_of(core: &Core) -> v1::StatusReply {
    let c = core.shard_counts();
    let t = core.totals();
    let elapsed = core.uptime().as_secs_f64();
    v1::StatusReply {
        run_id: core.run_id().to_string(),
        shards_total: c.total,
        shards_pending: c.pending,
        shards_leased: c.leased,
        shards_done: c.done,
        weights_version: core.weights_version(),
        positions_merged: t.positions_merged,
        gradient_entries_merged: t.gradient_entries_merged,
        workers_alive: core.workers_alive(),
        train_loss: if t.positions_used > 0 { t.loss_sum / t.positions_used as f64 } else { 0.0 },
        merges_per_s: t.merges as f64 / elapsed.max(1e-9),
        bytes_in: t.bytes_in,
        bytes_out: t.bytes_out,
        rejected_pushes: t.rejected_pushes,
        duplicate_pushes: t.duplicate_pushes,
        stale_pushes: t.stale_pushes,
        mean_staleness: if t.merges > 0 { t.staleness_sum as f64 / t.merges as f64 } else { 0.0 },
        finished: core.finished(),
        shards_failed: c.failed,
        elapsed_s: elapsed,
        server_faults: t.server_faults,
        teacher_records_kept: t.teacher_records_kept,
        cpu_seconds: t.training_cpu_seconds(),
        usi_engines_missing: core.usi_engines_missing(),
    }
}

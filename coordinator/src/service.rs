//! The gRPC service: checks every request (token, protocol version, worker id, layout,
//! sizes, counts, finite values, checksum) and hands the work to `Core`.

use crate::core::{Core, ReceivedPush};
use keima_proto::sparse::{self, Fnv64};
use keima_proto::v1::coordinator_server::{Coordinator, CoordinatorServer};
use keima_proto::v1::{self, push_chunk::Part};
use keima_proto::{MAX_MESSAGE_BYTES, checks};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tonic::{Request, Response, Status, Streaming};

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

    fn add_out(&self, bytes: u64) {
        self.core.totals.lock().unwrap().bytes_out += bytes;
    }

    fn rejected(&self) {
        self.core.totals.lock().unwrap().rejected_pushes += 1;
    }

    async fn receive_push(&self, mut stream: Streaming<v1::PushChunk>) -> Result<ReceivedPush, Status> {
        let core = &self.core;
        let features = core.layout.features;
        let max_bytes = core.cfg.coordinator.max_push_mib << 20;
        let first =
            stream.message().await?.ok_or_else(|| bad("empty push: the first chunk must be the header"))?;
        let Some(Part::Header(h)) = first.part else {
            return Err(bad("the first chunk of a push must be the header"));
        };
        self.check(h.protocol, &h.worker_id)?;
        checks::layout(h.layout.as_ref(), &core.layout).map_err(Status::failed_precondition)?;
        if h.gradient_entries > features {
            return Err(bad(format!("{} gradient entries for {features} features", h.gradient_entries)));
        }
        if h.teacher_records > (max_bytes / 40).max(1) {
            return Err(bad(format!("{} teacher records exceed the push limit", h.teacher_records)));
        }
        let mut gradient = Vec::with_capacity(h.gradient_entries.min(1 << 24) as usize);
        let mut records = Vec::new();
        let mut sum = Fnv64::default();
        let mut wire = 0u64;
        let trailer = loop {
            let chunk = stream.message().await?.ok_or_else(|| bad("push ended without its trailer"))?;
            match chunk.part {
                Some(Part::Gradient(blob)) => {
                    wire += blob.len() as u64;
                    if wire > max_bytes {
                        return Err(Status::resource_exhausted(format!(
                            "push larger than max_push_mib = {} MiB",
                            core.cfg.coordinator.max_push_mib
                        )));
                    }
                    let raw =
                        sparse::decompress(&blob, sparse::MAX_BLOB_BYTES).map_err(|e| bad(e.to_string()))?;
                    sum.update(&raw);
                    let last = gradient.last().map(|g: &(u32, [f32; 2])| g.0);
                    sparse::decode_gradient(&raw, features, last, &mut gradient)
                        .map_err(|e| bad(e.to_string()))?;
                    if gradient.len() as u64 > h.gradient_entries {
                        return Err(bad("more gradient entries than the header announced"));
                    }
                }
                Some(Part::Records(blob)) => {
                    wire += blob.len() as u64;
                    if wire > max_bytes {
                        return Err(Status::resource_exhausted("push larger than max_push_mib"));
                    }
                    let raw =
                        sparse::decompress(&blob, sparse::MAX_BLOB_BYTES).map_err(|e| bad(e.to_string()))?;
                    if raw.len() % 40 != 0 {
                        return Err(bad("teacher record chunk is not a whole number of 40-byte records"));
                    }
                    sum.update(&raw);
                    records.extend_from_slice(&raw);
                    if records.len() as u64 / 40 > h.teacher_records {
                        return Err(bad("more teacher records than the header announced"));
                    }
                }
                Some(Part::Trailer(t)) => break t,
                Some(Part::Header(_)) => return Err(bad("a second header in one push")),
                None => return Err(bad("a push chunk without content")),
            }
        };
        if gradient.len() as u64 != h.gradient_entries || records.len() as u64 / 40 != h.teacher_records {
            return Err(bad(format!(
                "push holds {} entries and {} records, the header announced {} and {}",
                gradient.len(),
                records.len() / 40,
                h.gradient_entries,
                h.teacher_records
            )));
        }
        if trailer.checksum != sum.0 {
            return Err(bad("push checksum mismatch: the upload was corrupted"));
        }
        let stats = trailer.stats.ok_or_else(|| bad("push trailer without statistics"))?;
        if !stats.loss_sum.is_finite() || stats.loss_sum < 0.0 || stats.used > stats.positions {
            return Err(bad("push statistics are inconsistent (loss not finite, or used > positions)"));
        }
        Ok(ReceivedPush {
            worker_id: h.worker_id,
            shard_id: h.shard_id,
            attempt: h.attempt,
            computed_on: h.weights_version,
            gradient,
            records,
            stats,
            wire_bytes: wire,
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
        let id = self.core.register(&r.worker_name, r.threads);
        tracing::info!(worker = %id, threads = r.threads, version = %r.version, "worker registered");
        Ok(Response::new(v1::RegisterReply {
            worker_id: id,
            layout: Some(self.core.layout),
            heartbeat_ms: self.core.cfg.coordinator.heartbeat_ms,
            max_push_bytes: self.core.cfg.coordinator.max_push_mib << 20,
            pattern_file: self.core.pattern_file.clone(),
            run_id: self.core.run_id.clone(),
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
        Ok(Response::new(self.core.heartbeat(r.shard_id, r.attempt)))
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
            let w = core.weights.lock().unwrap();
            let version = w.version();
            let delta = if r.full { None } else { w.delta_entries(r.have_version) };
            let full = delta.is_none();
            let entries = delta.unwrap_or_else(|| w.full_entries());
            drop(w);
            let parts: Vec<&[(u32, [i32; 2])]> = if entries.is_empty() {
                vec![&[]]
            } else {
                entries.chunks(sparse::ENTRIES_PER_CHUNK).collect()
            };
            let count = parts.len() as u32;
            parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| v1::WeightsChunk {
                    version,
                    full,
                    chunk_index: i as u32,
                    chunk_count: count,
                    entries: part.len() as u64,
                    blob: sparse::compress(&sparse::encode_weights(part)),
                    layout: Some(core.layout),
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
        let bytes: u64 = chunks.iter().map(|c| c.blob.len() as u64).sum();
        self.add_out(bytes);
        Ok(Response::new(Box::pin(tokio_stream::iter(chunks.into_iter().map(Ok)))))
    }

    async fn push_gradient(
        &self,
        req: Request<Streaming<v1::PushChunk>>,
    ) -> Result<Response<v1::PushReply>, Status> {
        let push = match self.receive_push(req.into_inner()).await {
            Ok(p) => p,
            Err(e) => {
                self.rejected();
                tracing::warn!("push rejected: {}", e.message());
                return Err(e);
            }
        };
        let core = self.core.clone();
        let reply = tokio::task::spawn_blocking(move || core.merge_push(push))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        match reply {
            Ok(r) => Ok(Response::new(r)),
            Err(e) => {
                self.rejected();
                tracing::warn!("push rejected: {e}");
                Err(Status::failed_precondition(e))
            }
        }
    }

    async fn complete(
        &self,
        req: Request<v1::CompleteRequest>,
    ) -> Result<Response<v1::CompleteReply>, Status> {
        let r = req.into_inner();
        self.check(r.protocol, &r.worker_id)?;
        let failed = r.reason == v1::complete_request::Reason::Failed as i32;
        let accepted = self.core.give_back(r.shard_id, r.attempt, failed, &r.error);
        Ok(Response::new(v1::CompleteReply { accepted }))
    }

    async fn status(&self, req: Request<v1::StatusRequest>) -> Result<Response<v1::StatusReply>, Status> {
        checks::protocol(req.into_inner().protocol).map_err(Status::failed_precondition)?;
        Ok(Response::new(status_of(&self.core)))
    }
}

/// The run's counters as the wire's status message (also rendered for Prometheus).
pub fn status_of(core: &Core) -> v1::StatusReply {
    let c = core.queue.lock().unwrap().counts();
    let t = core.totals.lock().unwrap().clone();
    let elapsed = core.started.elapsed().as_secs_f64();
    v1::StatusReply {
        run_id: core.run_id.clone(),
        shards_total: c.total,
        shards_pending: c.pending,
        shards_leased: c.leased,
        shards_done: c.done,
        weights_version: core.version.load(Ordering::SeqCst),
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
        finished: c.pending == 0 && c.leased == 0,
        shards_failed: c.failed,
        elapsed_s: elapsed,
    }
}

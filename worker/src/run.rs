//! The worker loop: register, lease, sync weights, run the shard (heartbeating), push,
//! repeat. Every call to the coordinator goes through one retry loop (`retry.rs`): retries
//! with backoff while the coordinator is away; registers again when the coordinator no
//! longer knows it; drops a result whose lease it no longer holds; stops on what no retry
//! can fix. On SIGTERM/SIGINT it gives its lease back and exits.

use crate::connection::{Client, Connection, connect};
use crate::cpu_ledger::CpuLedger;
use crate::error::Call;
use crate::error::WorkerError;
use crate::local_weights::LocalWeights;
use crate::retry::{Backoff, Setback, retrying};
use crate::shard_job::{self, ShardOutput};
use crate::usi::engines::UsiEngine;
use engine_core::cpu_time::process_cpu_seconds;
use engine_core::learn::batch_pool::BatchPool;
use engine_core::teacher::PackedSfenValue;
use keima_proto::PROTOCOL_VERSION;
use keima_proto::seal::push_checksum;
use keima_proto::sparse::{self, Fnv64};
use keima_proto::v1::{self, push_chunk::Part};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::Status;

pub struct WorkerOptions {
    pub connection: Connection,
    pub threads: usize,
    pub name: String,
    /// Stop after this many shards (0 = until the run finishes).
    pub max_shards: u64,
    /// Give up after the coordinator has been unreachable this long.
    pub give_up_after: Duration,
    /// External USI engines this worker may run for match shards (registered by name).
    pub usi_engines: Vec<UsiEngine>,
}

#[derive(Clone, Debug, Default)]
pub struct WorkerSummary {
    pub shards: u64,
    pub merged: u64,
    pub duplicates: u64,
    pub stale: u64,
    /// Results dropped because the lease was gone when they were pushed (expired, taken
    /// over, or the coordinator restarted).
    pub dropped: u64,
    pub positions: u64,
    pub bytes_pushed: u64,
    pub bytes_pulled: u64,
    pub seconds: f64,
    pub interrupted: bool,
}

/// Teacher records per pushed chunk (800 KB raw).
const RECORDS_PER_CHUNK: usize = 20_000;

/// What the coordinator gave this worker at registration.
struct Session {
    id: String,
    weights: LocalWeights,
    heartbeat_ms: u64,
}

async fn register(c: &mut Client, o: &WorkerOptions, backoff: &mut Backoff) -> Result<Session, WorkerError> {
    let req = v1::RegisterRequest {
        protocol: PROTOCOL_VERSION,
        worker_name: o.name.clone(),
        threads: o.threads as u32,
        version: env!("CARGO_PKG_VERSION").into(),
        usi_engines: o.usi_engines.iter().map(|e| e.name.clone()).collect(),
    };
    let r = loop {
        match retrying(Call::Register, backoff, async || c.register(req.clone()).await).await? {
            Ok(r) => break r.into_inner(),
            // Neither is an answer to a registration (`on_error` retries those codes), and
            // registering again is what this loop does anyway.
            Err(Setback::Unregistered | Setback::LeaseGone { .. }) => continue,
        }
    };
    let layout = r.layout.ok_or(WorkerError::BadReply("the coordinator sent no layout"))?;
    let weights = LocalWeights::new(layout, &r.pattern_file).map_err(WorkerError::Incompatible)?;
    tracing::info!(worker = %r.worker_id, run = %r.run_id, "registered");
    Ok(Session { id: r.worker_id, weights, heartbeat_ms: r.heartbeat_ms.max(100) as u64 })
}

/// The coordinator as a registered worker talks to it.
struct Link<'a> {
    client: Client,
    options: &'a WorkerOptions,
    backoff: Backoff,
    session: Session,
}

impl<'a> Link<'a> {
    async fn open(options: &'a WorkerOptions) -> Result<Link<'a>, WorkerError> {
        let mut client = connect(&options.connection)?;
        let mut backoff = Backoff::new(options.give_up_after);
        let session = register(&mut client, options, &mut backoff).await?;
        Ok(Link { client, options, backoff, session })
    }

    /// `attempt` as this worker, retried (`retrying`), registering again whenever the
    /// coordinator no longer knows the worker (it restarted). `None`: the lease is gone.
    async fn call<T>(
        &mut self,
        call: Call,
        mut attempt: impl AsyncFnMut(&mut Client, &mut Session) -> Result<T, Status>,
    ) -> Result<Option<T>, WorkerError> {
        loop {
            let (client, session) = (&mut self.client, &mut self.session);
            match retrying(call, &mut self.backoff, async || attempt(client, session).await).await? {
                Ok(reply) => return Ok(Some(reply)),
                Err(Setback::Unregistered) => {
                    // A fresh session holds no weights; a result computed before stays
                    // valid for the version it was computed with.
                    self.session = register(&mut self.client, self.options, &mut self.backoff).await?;
                }
                Err(Setback::LeaseGone { message }) => {
                    tracing::info!("{call}: result dropped: {message}");
                    return Ok(None);
                }
            }
        }
    }
}

async fn pull(c: &mut Client, s: &mut Session) -> Result<u64, Status> {
    let req = v1::PullWeightsRequest {
        protocol: PROTOCOL_VERSION,
        worker_id: s.id.clone(),
        have_version: s.weights.version.unwrap_or(0),
        full: s.weights.version.is_none(),
    };
    let mut stream = c.pull_weights(req).await?.into_inner();
    let mut chunks = Vec::new();
    let mut bytes = 0u64;
    while let Some(ch) = stream.message().await? {
        bytes += ch.blob.len() as u64;
        chunks.push(ch);
        if chunks.len() > 1 << 20 {
            return Err(Status::invalid_argument("too many weight chunks"));
        }
    }
    s.weights.apply(&chunks).map_err(Status::data_loss)?;
    Ok(bytes)
}

fn push_chunks(s: &Session, lease: &v1::Lease, out: &ShardOutput, version: u64) -> Vec<v1::PushChunk> {
    let header = v1::PushHeader {
        protocol: PROTOCOL_VERSION,
        worker_id: s.id.clone(),
        shard_id: lease.shard_id,
        attempt: lease.attempt,
        weights_version: version,
        layout: Some(s.weights.layout),
        gradient_entries: out.gradient.len() as u64,
        teacher_records: (out.records.len() / PackedSfenValue::SIZE) as u64,
    };
    let mut payload = Fnv64::default();
    let mut chunks = vec![v1::PushChunk { part: Some(Part::Header(header.clone())) }];
    for part in out.gradient.chunks(sparse::ENTRIES_PER_CHUNK) {
        let raw = sparse::encode_gradient(part);
        payload.update(&raw);
        chunks.push(v1::PushChunk { part: Some(Part::Gradient(sparse::compress(&raw))) });
    }
    for part in out.records.chunks(PackedSfenValue::SIZE * RECORDS_PER_CHUNK) {
        payload.update(part);
        chunks.push(v1::PushChunk { part: Some(Part::Records(sparse::compress(part))) });
    }
    let checksum = push_checksum(payload, &header, &out.stats, out.result.as_ref());
    let trailer = v1::PushTrailer { stats: Some(out.stats), checksum, match_result: out.result.clone() };
    chunks.push(v1::PushChunk { part: Some(Part::Trailer(trailer)) });
    chunks
}

fn chunk_bytes(chunks: &[v1::PushChunk]) -> u64 {
    chunks
        .iter()
        .map(|c| match &c.part {
            Some(Part::Gradient(b)) | Some(Part::Records(b)) => b.len() as u64,
            _ => 0,
        })
        .sum()
}

/// A future that completes on SIGINT or SIGTERM; the handlers are installed now.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, WorkerError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())
        .map_err(|source| WorkerError::Setup { what: "SIGTERM handler", source })?;
    let mut int = signal(SignalKind::interrupt())
        .map_err(|source| WorkerError::Setup { what: "SIGINT handler", source })?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

fn complete(
    s: &Session,
    lease: &v1::Lease,
    reason: v1::complete_request::Reason,
    error: String,
) -> v1::CompleteRequest {
    v1::CompleteRequest {
        protocol: PROTOCOL_VERSION,
        worker_id: s.id.clone(),
        shard_id: lease.shard_id,
        attempt: lease.attempt,
        reason: reason as i32,
        error,
    }
}

/// Runs the worker until the run finishes, `max_shards` are done, or a signal arrives.
pub fn run(o: WorkerOptions) -> Result<WorkerSummary, WorkerError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|source| WorkerError::Setup { what: "tokio runtime", source })?;
    let result = rt.block_on(async {
        let started = Instant::now();
        let mut sum = WorkerSummary::default();
        // Signal handlers first, so a stop during registration is not lost.
        let stop = stop_signal()?;
        tokio::pin!(stop);
        let mut link = tokio::select! {
            l = Link::open(&o) => l?,
            _ = &mut stop => return Ok(WorkerSummary { interrupted: true, ..sum }),
        };
        // Records of this worker's recent shards, for leases that draw their batch from them.
        let batch_pool = Arc::new(std::sync::Mutex::new(BatchPool::default()));
        let mut ledger = CpuLedger::new(process_cpu_seconds());
        'work: loop {
            if o.max_shards > 0 && sum.shards >= o.max_shards {
                break;
            }
            let lease = link.call(Call::Lease, async |c, s| {
                c.lease(v1::LeaseRequest { protocol: PROTOCOL_VERSION, worker_id: s.id.clone() }).await
            });
            let reply = tokio::select! {
                _ = &mut stop => { sum.interrupted = true; break 'work; }
                r = lease => r?,
            };
            // A lost lease is not an answer to a lease request (`on_error`): ask again.
            let Some(reply) = reply.map(|r| r.into_inner()) else { continue };
            let lease = match v1::lease_reply::State::try_from(reply.state) {
                Ok(v1::lease_reply::State::Leased) => {
                    reply.lease.ok_or(WorkerError::BadReply("a LEASED reply without a lease"))?
                }
                Ok(v1::lease_reply::State::Finished) => break,
                _ => {
                    tokio::time::sleep(Duration::from_millis(reply.retry_ms.clamp(50, 10_000) as u64)).await;
                    continue;
                }
            };
            // Weights at least as new as the lease asks.
            while link.session.weights.version.is_none_or(|v| v < lease.weights_version) {
                match link.call(Call::PullWeights, async |c, s| pull(c, s).await).await? {
                    Some(bytes) => sum.bytes_pulled += bytes,
                    // Not an answer to a pull either (`on_error`); were it one, the shard is lost.
                    None => continue 'work,
                }
            }
            let version = link.session.weights.version.expect("pulled");
            // Run the shard on a blocking thread, heartbeating meanwhile.
            let progress = Arc::new(AtomicU64::new(0));
            ledger.job_starts(process_cpu_seconds());
            let job = {
                let (lease, ev, p, threads) =
                    (lease.clone(), link.session.weights.evaluator.clone(), progress.clone(), o.threads);
                let engines = o.usi_engines.clone();
                let pool = batch_pool.clone();
                tokio::task::spawn_blocking(move || shard_job::run(&lease, &ev, &engines, threads, &p, &pool))
            };
            tokio::pin!(job);
            let mut tick = tokio::time::interval(Duration::from_millis(link.session.heartbeat_ms));
            let output = loop {
                tokio::select! {
                    r = &mut job => break r?,
                    _ = &mut stop => {
                        let returned = complete(&link.session, &lease, v1::complete_request::Reason::Returned, "worker stopping (signal)".into());
                        let _ = link.client.complete(returned).await;
                        sum.interrupted = true;
                        tracing::info!(shard = lease.shard_id, "stopping: lease returned");
                        break 'work;
                    }
                    _ = tick.tick() => {
                        let hb = v1::HeartbeatRequest {
                            protocol: PROTOCOL_VERSION, worker_id: link.session.id.clone(), shard_id: lease.shard_id,
                            attempt: lease.attempt, positions_done: progress.load(Ordering::Relaxed),
                        };
                        match link.client.heartbeat(hb).await {
                            Ok(r) if !r.get_ref().lease_valid => {
                                tracing::debug!(shard = lease.shard_id, "lease no longer valid; finishing anyway");
                            }
                            Ok(_) => {}
                            Err(s) => tracing::debug!("heartbeat: {}", s.message()),
                        }
                    }
                }
            };
            let output = match output {
                Ok(mut out) => {
                    // Weight syncs, leases and pushes are training's cost too (`cpu_ledger`).
                    out.stats.cpu_seconds += ledger.job_ends(process_cpu_seconds(), out.result.is_none());
                    out
                }
                Err(e) => {
                    // The ledger's mark stays put: the failed job's CPU is charged as overhead.
                    tracing::warn!(shard = lease.shard_id, "shard failed: {e}");
                    let failed = complete(&link.session, &lease, v1::complete_request::Reason::Failed, e);
                    let _ = link.client.complete(failed).await;
                    continue;
                }
            };
            // Push (idempotent on the coordinator, so a retry after a broken upload is safe;
            // after a restart it answers DUPLICATE if the merge was journaled before it went
            // down, else the lease is gone).
            let pushed = link
                .call(Call::Push { shard: lease.shard_id }, async |c, s| {
                    let chunks = push_chunks(s, &lease, &output, version);
                    let bytes = chunk_bytes(&chunks);
                    c.push_gradient(tokio_stream::iter(chunks)).await.map(|r| (r.into_inner(), bytes))
                })
                .await?;
            let Some((reply, bytes)) = pushed else {
                sum.dropped += 1;
                continue;
            };
            sum.bytes_pushed += bytes;
            sum.shards += 1;
            sum.positions += output.stats.positions;
            let outcome = v1::push_reply::Outcome::try_from(reply.outcome).unwrap_or(v1::push_reply::Outcome::Unspecified);
            match outcome {
                v1::push_reply::Outcome::Merged => sum.merged += 1,
                v1::push_reply::Outcome::Duplicate => sum.duplicates += 1,
                v1::push_reply::Outcome::Stale => sum.stale += 1,
                _ => {}
            }
            tracing::info!(
                shard = lease.shard_id,
                attempt = lease.attempt,
                positions = output.stats.positions,
                entries = output.gradient.len(),
                seconds = format!("{:.1}", output.stats.seconds),
                "{outcome:?} (version {})",
                reply.weights_version
            );
        }
        sum.seconds = started.elapsed().as_secs_f64();
        Ok(sum)
    });
    // Do not wait for a shard job still running after a stop: its lease was returned.
    rt.shutdown_background();
    result
}

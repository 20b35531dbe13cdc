//! The worker loop: register, lease, sync weights, run the shard (heartbeating), push,
//! repeat. Retries with backoff while the coordinator is away; registers again when the
//! coordinator no longer knows it; drops a result whose lease it no longer holds; on
//! SIGTERM/SIGINT gives its lease back and exits. What it does about an error is decided by
//! the status code alone (`on_error`), never by the message.

use crate::local_weights::LocalWeights;
use crate::shard_job::{self, ShardOutput};
use keima_proto::seal::push_checksum;
use keima_proto::sparse::{self, Fnv64};
use keima_proto::v1::coordinator_client::CoordinatorClient;
use keima_proto::v1::{self, push_chunk::Part};
use keima_proto::{MAX_MESSAGE_BYTES, PROTOCOL_VERSION};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

pub struct WorkerOptions {
    pub coordinator: String,
    pub token: String,
    pub threads: usize,
    pub name: String,
    /// PEM CA certificate for `https://` coordinators.
    pub tls_ca: Option<PathBuf>,
    /// Stop after this many shards (0 = until the run finishes).
    pub max_shards: u64,
    /// Give up after the coordinator has been unreachable this long.
    pub give_up_after: Duration,
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

#[derive(Clone)]
struct Auth(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        req.metadata_mut().insert(keima_proto::AUTH_HEADER, self.0.clone());
        Ok(req)
    }
}

type Client = CoordinatorClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>;

async fn connect(o: &WorkerOptions) -> Result<Client, String> {
    let mut ep = Endpoint::from_shared(o.coordinator.clone())
        .map_err(|e| format!("--coordinator {}: {e}", o.coordinator))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true);
    if o.coordinator.starts_with("https://") {
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = &o.tls_ca {
            let pem = std::fs::read(ca).map_err(|e| format!("--tls-ca {}: {e}", ca.display()))?;
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        ep = ep.tls_config(tls).map_err(|e| format!("TLS: {e}"))?;
    }
    let channel = ep.connect_lazy();
    let token =
        format!("Bearer {}", o.token).parse().map_err(|_| "the token must be printable ASCII".to_string())?;
    Ok(CoordinatorClient::with_interceptor(channel, Auth(token))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}

/// What to do about a failed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnError {
    /// No retry can fix it (token, protocol, layout, a request refused as malformed): stop
    /// with the coordinator's message.
    Stop,
    /// The coordinator does not know this worker (it restarted): register again.
    Register,
    /// The lease is no longer this worker's: drop the shard's result and lease again.
    DropShard,
    /// The coordinator is away or had a fault of its own: retry with backoff.
    Retry,
}

/// The decision for a status code (the coordinator's codes are listed in `keima.proto`).
fn on_error(code: Code) -> OnError {
    match code {
        Code::Unauthenticated
        | Code::PermissionDenied
        | Code::FailedPrecondition
        | Code::InvalidArgument
        | Code::ResourceExhausted
        | Code::OutOfRange
        | Code::Unimplemented => OnError::Stop,
        Code::NotFound => OnError::Register,
        Code::Aborted => OnError::DropShard,
        _ => OnError::Retry,
    }
}

struct Session {
    id: String,
    weights: LocalWeights,
    heartbeat_ms: u64,
}

struct Backoff {
    delay: Duration,
    since: Option<Instant>,
    limit: Duration,
}

impl Backoff {
    fn new(limit: Duration) -> Backoff {
        Backoff { delay: Duration::from_millis(200), since: None, limit }
    }

    async fn wait(&mut self, what: &str, s: &Status) -> Result<(), String> {
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() > self.limit {
            return Err(format!(
                "{what}: the coordinator has been unreachable for {:?}: {}",
                self.limit,
                s.message()
            ));
        }
        tracing::warn!("{what}: {} (retrying in {:?})", s.message(), self.delay);
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Duration::from_secs(10));
        Ok(())
    }

    fn reset(&mut self) {
        self.delay = Duration::from_millis(200);
        self.since = None;
    }
}

async fn register(c: &mut Client, o: &WorkerOptions, backoff: &mut Backoff) -> Result<Session, String> {
    loop {
        let req = v1::RegisterRequest {
            protocol: PROTOCOL_VERSION,
            worker_name: o.name.clone(),
            threads: o.threads as u32,
            version: env!("CARGO_PKG_VERSION").into(),
        };
        match c.register(req).await {
            Ok(r) => {
                backoff.reset();
                let r = r.into_inner();
                let layout = r.layout.ok_or("the coordinator sent no layout")?;
                let weights = LocalWeights::new(layout, &r.pattern_file)?;
                tracing::info!(worker = %r.worker_id, run = %r.run_id, "registered");
                return Ok(Session {
                    id: r.worker_id,
                    weights,
                    heartbeat_ms: r.heartbeat_ms.max(100) as u64,
                });
            }
            Err(s) if on_error(s.code()) == OnError::Stop => {
                return Err(format!("register: {}", s.message()));
            }
            Err(s) => backoff.wait("register", &s).await?,
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
        teacher_records: (out.records.len() / 40) as u64,
    };
    let mut payload = Fnv64::default();
    let mut chunks = vec![v1::PushChunk { part: Some(Part::Header(header.clone())) }];
    for part in out.gradient.chunks(sparse::ENTRIES_PER_CHUNK) {
        let raw = sparse::encode_gradient(part);
        payload.update(&raw);
        chunks.push(v1::PushChunk { part: Some(Part::Gradient(sparse::compress(&raw))) });
    }
    for part in out.records.chunks(40 * 20_000) {
        payload.update(part);
        chunks.push(v1::PushChunk { part: Some(Part::Records(sparse::compress(part))) });
    }
    let checksum = push_checksum(payload, &header, &out.stats);
    chunks.push(v1::PushChunk {
        part: Some(Part::Trailer(v1::PushTrailer { stats: Some(out.stats), checksum })),
    });
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
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}

/// Runs the worker until the run finishes, `max_shards` are done, or a signal arrives.
pub fn run(o: WorkerOptions) -> Result<WorkerSummary, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let result = rt.block_on(async move {
        let started = Instant::now();
        let mut sum = WorkerSummary::default();
        // Signal handlers first, so a stop during registration is not lost.
        let stop = stop_signal()?;
        tokio::pin!(stop);
        let mut client = connect(&o).await?;
        let mut backoff = Backoff::new(o.give_up_after);
        let mut session = tokio::select! {
            s = register(&mut client, &o, &mut backoff) => s?,
            _ = &mut stop => return Ok(WorkerSummary { interrupted: true, ..sum }),
        };
        'work: loop {
            if o.max_shards > 0 && sum.shards >= o.max_shards {
                break;
            }
            // Lease.
            let lease = tokio::select! {
                _ = &mut stop => { sum.interrupted = true; break 'work; }
                r = client.lease(v1::LeaseRequest { protocol: PROTOCOL_VERSION, worker_id: session.id.clone() }) => r,
            };
            let reply = match lease {
                Ok(r) => {
                    backoff.reset();
                    r.into_inner()
                }
                Err(s) => match on_error(s.code()) {
                    OnError::Stop => return Err(format!("lease: {}", s.message())),
                    OnError::Register => {
                        session = register(&mut client, &o, &mut backoff).await?;
                        continue;
                    }
                    OnError::DropShard | OnError::Retry => {
                        backoff.wait("lease", &s).await?;
                        continue;
                    }
                },
            };
            let lease = match v1::lease_reply::State::try_from(reply.state) {
                Ok(v1::lease_reply::State::Leased) => reply.lease.ok_or("a LEASED reply without a lease")?,
                Ok(v1::lease_reply::State::Finished) => break,
                _ => {
                    tokio::time::sleep(Duration::from_millis(reply.retry_ms.clamp(50, 10_000) as u64)).await;
                    continue;
                }
            };
            // Weights at least as new as the lease asks.
            while session.weights.version.is_none_or(|v| v < lease.weights_version) {
                match pull(&mut client, &mut session).await {
                    Ok(b) => sum.bytes_pulled += b,
                    Err(s) => match on_error(s.code()) {
                        OnError::Stop => return Err(format!("pull weights: {}", s.message())),
                        OnError::Register => session = register(&mut client, &o, &mut backoff).await?,
                        OnError::DropShard | OnError::Retry => backoff.wait("pull weights", &s).await?,
                    },
                }
            }
            let version = session.weights.version.expect("pulled");
            // Run the shard on a blocking thread, heartbeating meanwhile.
            let progress = Arc::new(AtomicU64::new(0));
            let job = {
                let (lease, ev, p, threads) = (lease.clone(), session.weights.evaluator.clone(), progress.clone(), o.threads);
                tokio::task::spawn_blocking(move || shard_job::run(&lease, &ev, threads, &p))
            };
            tokio::pin!(job);
            let mut tick = tokio::time::interval(Duration::from_millis(session.heartbeat_ms));
            let output = loop {
                tokio::select! {
                    r = &mut job => break r.map_err(|e| e.to_string())?,
                    _ = &mut stop => {
                        let _ = client.complete(v1::CompleteRequest {
                            protocol: PROTOCOL_VERSION, worker_id: session.id.clone(), shard_id: lease.shard_id,
                            attempt: lease.attempt, reason: v1::complete_request::Reason::Returned as i32,
                            error: "worker stopping (signal)".into(),
                        }).await;
                        sum.interrupted = true;
                        tracing::info!(shard = lease.shard_id, "stopping: lease returned");
                        break 'work;
                    }
                    _ = tick.tick() => {
                        let hb = v1::HeartbeatRequest {
                            protocol: PROTOCOL_VERSION, worker_id: session.id.clone(), shard_id: lease.shard_id,
                            attempt: lease.attempt, positions_done: progress.load(Ordering::Relaxed),
                        };
                        match client.heartbeat(hb).await {
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
                Ok(out) => out,
                Err(e) => {
                    tracing::warn!(shard = lease.shard_id, "shard failed: {e}");
                    let _ = client
                        .complete(v1::CompleteRequest {
                            protocol: PROTOCOL_VERSION,
                            worker_id: session.id.clone(),
                            shard_id: lease.shard_id,
                            attempt: lease.attempt,
                            reason: v1::complete_request::Reason::Failed as i32,
                            error: e,
                        })
                        .await;
                    continue;
                }
            };
            // Push (idempotent on the coordinator, so a retry after a broken upload is safe).
            let reply = loop {
                let chunks = push_chunks(&session, &lease, &output, version);
                let bytes = chunk_bytes(&chunks);
                match client.push_gradient(tokio_stream::iter(chunks)).await {
                    Ok(r) => {
                        backoff.reset();
                        sum.bytes_pushed += bytes;
                        break Some(r.into_inner());
                    }
                    Err(s) => match on_error(s.code()) {
                        OnError::Stop => {
                            return Err(format!("push of shard {}: {}", lease.shard_id, s.message()));
                        }
                        OnError::Register => {
                            // A restarted coordinator: it answers DUPLICATE if the merge
                            // was journaled before it went down, else the lease is gone.
                            session = register(&mut client, &o, &mut backoff).await?;
                            // The new session holds no weights; the gradient stays valid
                            // for the version it was computed with.
                            session.weights.version = None;
                        }
                        OnError::DropShard => {
                            tracing::info!(shard = lease.shard_id, attempt = lease.attempt, "result dropped: {}", s.message());
                            break None;
                        }
                        OnError::Retry => backoff.wait("push", &s).await?,
                    },
                }
            };
            let Some(reply) = reply else {
                sum.dropped += 1;
                continue;
            };
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

/// The coordinator's counters (`keima status`).
pub fn fetch_status(
    coordinator: &str,
    token: &str,
    tls_ca: Option<PathBuf>,
) -> Result<v1::StatusReply, String> {
    let o = WorkerOptions {
        coordinator: coordinator.to_string(),
        token: token.to_string(),
        threads: 1,
        name: "status".into(),
        tls_ca,
        max_shards: 0,
        give_up_after: Duration::from_secs(5),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let mut c = connect(&o).await?;
        c.status(v1::StatusRequest { protocol: PROTOCOL_VERSION })
            .await
            .map(|r| r.into_inner())
            .map_err(|s| format!("{coordinator}: {}", s.message()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_code_alone_decides() {
        let cases = [
            (Code::Unauthenticated, OnError::Stop),
            (Code::FailedPrecondition, OnError::Stop),
            (Code::InvalidArgument, OnError::Stop),
            (Code::ResourceExhausted, OnError::Stop),
            (Code::OutOfRange, OnError::Stop),
            (Code::NotFound, OnError::Register),
            (Code::Aborted, OnError::DropShard),
            (Code::Unavailable, OnError::Retry),
            (Code::Internal, OnError::Retry),
            (Code::DeadlineExceeded, OnError::Retry),
            (Code::Unknown, OnError::Retry),
        ];
        for (code, decision) in cases {
            assert_eq!(on_error(code), decision, "{code:?}");
        }
    }
}

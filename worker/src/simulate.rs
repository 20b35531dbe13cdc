//! Simulated workers for load tests: many concurrent clients that lease shards and push a
//! recorded gradient for each, as fast as the coordinator lets them. The push bytes are
//! prepared once, so the figures measure the coordinator, not the client.

use keima_proto::seal::push_checksum;
use keima_proto::sparse::{self, Fnv64, GradEntry};
use keima_proto::v1::coordinator_client::CoordinatorClient;
use keima_proto::v1::{self, push_chunk::Part};
use keima_proto::{MAX_MESSAGE_BYTES, PROTOCOL_VERSION};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::{Channel, Endpoint};

#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    pub pushes: u64,
    pub merged: u64,
    pub duplicates: u64,
    pub stale: u64,
    pub seconds: f64,
    /// Push latencies (first chunk sent → reply), milliseconds, sorted.
    pub latencies_ms: Vec<f64>,
    pub bytes_per_push: u64,
    pub entries_per_push: u64,
    /// A full weight copy at the end, and a delta over the last `delta_versions` versions.
    pub full_sync_bytes: u64,
    pub full_sync_entries: u64,
    pub delta_sync_bytes: u64,
    pub delta_versions: u64,
}

impl LoadReport {
    pub fn percentile(&self, p: f64) -> f64 {
        if self.latencies_ms.is_empty() {
            return 0.0;
        }
        let i = ((self.latencies_ms.len() - 1) as f64 * p).round() as usize;
        self.latencies_ms[i]
    }
}

fn request<T>(msg: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut()
        .insert(keima_proto::AUTH_HEADER, format!("Bearer {token}").parse().expect("ASCII token"));
    r
}

async fn client(url: &str) -> Result<CoordinatorClient<Channel>, String> {
    let ep = Endpoint::from_shared(url.to_string()).map_err(|e| e.to_string())?;
    // Many clients connect at once: retry a refused connection a few times.
    let mut tries = 0;
    let ch = loop {
        match ep.connect().await {
            Ok(ch) => break ch,
            Err(e) if tries >= 20 => return Err(format!("{url}: {e}")),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50 * tries)).await;
            }
        }
    };
    Ok(CoordinatorClient::new(ch)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}

/// Runs `workers` simulated workers until the coordinator says the run is finished.
pub fn run_load(
    url: &str,
    token: &str,
    workers: usize,
    gradient: &[GradEntry],
    positions: u64,
) -> Result<LoadReport, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // The payload is hashed once; each push seals it with its own header (cheap).
    let mut payload = Fnv64::default();
    let mut blobs = Vec::new();
    for part in gradient.chunks(sparse::ENTRIES_PER_CHUNK) {
        let raw = sparse::encode_gradient(part);
        payload.update(&raw);
        blobs.push(sparse::compress(&raw));
    }
    let blobs = Arc::new(blobs);
    let bytes_per_push = blobs.iter().map(|b| b.len() as u64).sum();
    let entries = gradient.len() as u64;
    rt.block_on(async move {
        let started = Instant::now();
        let mut tasks = Vec::new();
        for w in 0..workers {
            let (url, token, blobs) = (url.to_string(), token.to_string(), blobs.clone());
            tasks.push(tokio::spawn(async move {
                let mut c = client(&url).await?;
                let reg = v1::RegisterRequest {
                    protocol: PROTOCOL_VERSION,
                    worker_name: format!("sim{w}"),
                    threads: 1,
                    version: "sim".into(),
                    usi_engines: Vec::new(),
                };
                let r =
                    c.register(request(reg, &token)).await.map_err(|e| e.message().to_string())?.into_inner();
                let layout = r.layout.ok_or("no layout")?;
                let id = r.worker_id;
                let mut out = (Vec::new(), 0u64, 0u64, 0u64);
                loop {
                    let reply = c
                        .lease(request(
                            v1::LeaseRequest { protocol: PROTOCOL_VERSION, worker_id: id.clone() },
                            &token,
                        ))
                        .await
                        .map_err(|e| e.message().to_string())?
                        .into_inner();
                    let lease = match v1::lease_reply::State::try_from(reply.state) {
                        Ok(v1::lease_reply::State::Leased) => reply.lease.ok_or("no lease")?,
                        Ok(v1::lease_reply::State::Finished) => break,
                        _ => {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            continue;
                        }
                    };
                    let header = v1::PushHeader {
                        protocol: PROTOCOL_VERSION,
                        worker_id: id.clone(),
                        shard_id: lease.shard_id,
                        attempt: lease.attempt,
                        weights_version: lease.weights_version,
                        layout: Some(layout),
                        gradient_entries: entries,
                        teacher_records: 0,
                    };
                    // The coordinator checks the claim against the shard: a teacher
                    // shard of N records yields at most N positions.
                    let claimed = match &lease.kind {
                        Some(v1::lease::Kind::Teacher(t)) => positions.min(t.count),
                        _ => positions,
                    };
                    let stats = v1::ShardStats {
                        positions: claimed,
                        used: claimed,
                        loss_sum: 0.69 * claimed as f64,
                        ..Default::default()
                    };
                    let checksum = push_checksum(payload, &header, &stats, None);
                    let mut chunks = vec![v1::PushChunk { part: Some(Part::Header(header)) }];
                    chunks.extend(
                        blobs.iter().map(|b| v1::PushChunk { part: Some(Part::Gradient(b.clone())) }),
                    );
                    chunks.push(v1::PushChunk {
                        part: Some(Part::Trailer(v1::PushTrailer {
                            stats: Some(stats),
                            checksum,
                            match_result: None,
                        })),
                    });
                    let t = Instant::now();
                    let r = c
                        .push_gradient(request(tokio_stream::iter(chunks), &token))
                        .await
                        .map_err(|e| e.message().to_string())?
                        .into_inner();
                    out.0.push(t.elapsed().as_secs_f64() * 1000.0);
                    match v1::push_reply::Outcome::try_from(r.outcome) {
                        Ok(v1::push_reply::Outcome::Merged) => out.1 += 1,
                        Ok(v1::push_reply::Outcome::Duplicate) => out.2 += 1,
                        _ => out.3 += 1,
                    }
                }
                Ok::<_, String>(out)
            }));
        }
        let mut rep = LoadReport { bytes_per_push, entries_per_push: entries, ..LoadReport::default() };
        for t in tasks {
            let (lat, m, d, s) = t.await.map_err(|e| e.to_string())??;
            rep.latencies_ms.extend(lat);
            rep.merged += m;
            rep.duplicates += d;
            rep.stale += s;
        }
        rep.seconds = started.elapsed().as_secs_f64();
        rep.pushes = rep.latencies_ms.len() as u64;
        rep.latencies_ms.sort_by(f64::total_cmp);
        // Weight sync sizes: a full copy, and a delta over the last few versions.
        let mut c = client(url).await?;
        let reg = v1::RegisterRequest {
            protocol: PROTOCOL_VERSION,
            worker_name: "sync".into(),
            threads: 1,
            version: "sim".into(),
            usi_engines: Vec::new(),
        };
        let id = c
            .register(request(reg, token))
            .await
            .map_err(|e| e.message().to_string())?
            .into_inner()
            .worker_id;
        let pull = |full: bool, have: u64| {
            let mut c = c.clone();
            let (id, token) = (id.clone(), token.to_string());
            async move {
                let mut s = c
                    .pull_weights(request(
                        v1::PullWeightsRequest {
                            protocol: PROTOCOL_VERSION,
                            worker_id: id,
                            have_version: have,
                            full,
                        },
                        &token,
                    ))
                    .await
                    .map_err(|e| e.message().to_string())?
                    .into_inner();
                let (mut bytes, mut n, mut version) = (0u64, 0u64, 0u64);
                while let Some(ch) = s.message().await.map_err(|e| e.message().to_string())? {
                    bytes += ch.blob.len() as u64;
                    n += ch.entries;
                    version = ch.version;
                }
                Ok::<_, String>((bytes, n, version))
            }
        };
        let (fb, fe, version) = pull(true, 0).await?;
        rep.full_sync_bytes = fb;
        rep.full_sync_entries = fe;
        rep.delta_versions = version.min(4);
        rep.delta_sync_bytes = pull(false, version - rep.delta_versions).await?.0;
        Ok(rep)
    })
}

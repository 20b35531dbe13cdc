//! Bad pushes over gRPC are rejected or ignored and the run goes on.

use super::*;
use keima_proto::sparse;
use keima_proto::v1::coordinator_client::CoordinatorClient;
use keima_proto::v1::{self, push_chunk::Part};

type Client = CoordinatorClient<tonic::transport::Channel>;

fn request<T>(msg: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    r
}

fn push_of(
    worker_id: &str,
    layout: v1::Layout,
    shard: u64,
    version: u64,
    gradient_blob: Vec<u8>,
    entries: u64,
    raw_for_sum: &[u8],
) -> Vec<v1::PushChunk> {
    let mut payload = sparse::Fnv64::default();
    payload.update(raw_for_sum);
    let header = v1::PushHeader {
        protocol: keima_proto::PROTOCOL_VERSION,
        worker_id: worker_id.into(),
        shard_id: shard,
        attempt: 1,
        weights_version: version,
        layout: Some(layout),
        gradient_entries: entries,
        teacher_records: 0,
    };
    let stats = v1::ShardStats { positions: 3, used: 3, loss_sum: 2.0, ..Default::default() };
    let checksum = keima_proto::seal::push_checksum(payload, &header, &stats, None);
    vec![
        v1::PushChunk { part: Some(Part::Header(header)) },
        v1::PushChunk { part: Some(Part::Gradient(gradient_blob)) },
        v1::PushChunk {
            part: Some(Part::Trailer(v1::PushTrailer { stats: Some(stats), checksum, match_result: None })),
        },
    ]
}

#[test]
fn bad_pushes_are_rejected_and_the_run_goes_on() {
    let tmp = tmp("bad");
    let d = tmp.path();
    let data = teacher_data(d, "2");
    let run = d.join("run");
    let cfg = d.join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\n[teacher]\npaths = [{data:?}]\nrecords_per_shard = 40\n[coordinator]\n\
             listen = \"127.0.0.1:0\"\nmetrics_listen = \"127.0.0.1:0\"\nexport = false\n[local_workers]\ncount = 0\n"
        ),
    )
    .unwrap();
    let coordinator = spawn(&["train", "--config", s(&cfg), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let url = std::fs::read_to_string(run.join("coordinator.url")).unwrap();
    let token = std::fs::read_to_string(run.join("token")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut c: Client = Client::connect(url.clone()).await.unwrap();
        let reg = v1::RegisterRequest {
            protocol: keima_proto::PROTOCOL_VERSION,
            worker_name: "probe".into(),
            threads: 1,
            version: "test".into(),
            usi_engines: Vec::new(),
        };
        let e = c.register(request(reg.clone(), "wrong-token")).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
        assert!(c.register(tonic::Request::new(reg.clone())).await.is_err(), "no token at all");
        let r = c.register(request(reg, &token)).await.unwrap().into_inner();
        let layout = r.layout.unwrap();
        let id = r.worker_id;
        let lease = c
            .lease(request(
                v1::LeaseRequest { protocol: keima_proto::PROTOCOL_VERSION, worker_id: id.clone() },
                &token,
            ))
            .await
            .unwrap()
            .into_inner()
            .lease
            .unwrap();
        let shard = lease.shard_id;
        let good: Vec<(u32, [f32; 2])> = vec![(5, [0.5, -0.25]), (100_000, [-1.0, 0.0])];
        let raw = sparse::encode_gradient(&good);
        let push = |chunks: Vec<v1::PushChunk>| {
            let mut c = c.clone();
            let token = token.clone();
            async move { c.push_gradient(request(tokio_stream::iter(chunks), &token)).await }
        };
        // NaN value.
        let mut nan = raw.clone();
        nan[1..5].copy_from_slice(&f32::NAN.to_le_bytes());
        let e = push(push_of(&id, layout, shard, 0, sparse::compress(&nan), 2, &nan)).await.unwrap_err();
        assert!(e.message().contains("NaN"), "{e:?}");
        // Wrong dimensions.
        let wrong = v1::Layout { features: layout.features - 1, ..layout };
        let e = push(push_of(&id, wrong, shard, 0, sparse::compress(&raw), 2, &raw)).await.unwrap_err();
        assert!(e.message().contains("feature count"), "{e:?}");
        // Index past the layout.
        let far = sparse::encode_gradient(&[(layout.features as u32, [1.0, 1.0])]);
        let e = push(push_of(&id, layout, shard, 0, sparse::compress(&far), 1, &far)).await.unwrap_err();
        assert!(e.message().contains("outside"), "{e:?}");
        // Oversized message (past the 8 MiB gRPC limit).
        let huge: Vec<u8> = (0..(9u32 << 20)).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let e = push(push_of(&id, layout, shard, 0, huge, 2, &raw)).await.unwrap_err();
        assert!(matches!(e.code(), tonic::Code::OutOfRange | tonic::Code::ResourceExhausted), "{e:?}");
        // Corrupted upload (checksum).
        let e = push(push_of(&id, layout, shard, 0, sparse::compress(&raw), 2, b"other")).await.unwrap_err();
        assert!(e.message().contains("checksum"), "{e:?}");
        // A good push merges; the same push again is a duplicate.
        let ok =
            push(push_of(&id, layout, shard, 0, sparse::compress(&raw), 2, &raw)).await.unwrap().into_inner();
        assert_eq!(ok.outcome, v1::push_reply::Outcome::Merged as i32);
        assert_eq!(ok.weights_version, 1);
        let dup =
            push(push_of(&id, layout, shard, 0, sparse::compress(&raw), 2, &raw)).await.unwrap().into_inner();
        assert_eq!(dup.outcome, v1::push_reply::Outcome::Duplicate as i32);
        assert_eq!(dup.weights_version, 1);
    });
    let st = status(&run);
    assert_eq!(st["rejected_pushes"].as_u64().unwrap(), 5, "{st}");
    assert_eq!(st["duplicate_pushes"].as_u64().unwrap(), 1);
    assert_eq!(st["weights_version"].as_u64().unwrap(), 1);
    // The metrics endpoint says the same.
    let murl = std::fs::read_to_string(run.join("metrics.url")).unwrap();
    let addr = murl.trim_start_matches("http://").trim_end_matches("/metrics");
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    use std::io::{Read, Write};
    sock.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    sock.read_to_string(&mut body).unwrap();
    assert!(body.contains("keima_pushes_rejected_total 5"), "{body}");
    assert!(body.contains("keima_pushes_duplicate_total 1"), "{body}");
    // A real worker finishes the rest of the run.
    let _w = worker(&run, "real");
    let (out, state) = finish(coordinator, &run);
    assert!(out.starts_with("done:"), "{out}");
    let shards = state["queue"]["shards"].as_array().unwrap().len() as u64;
    assert_eq!(state["weights_version"].as_u64().unwrap(), shards);
}

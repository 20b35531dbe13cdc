//! Prometheus metrics over plain HTTP (`GET /metrics`), rendered from the same status the
//! gRPC `Status` call returns. A tiny HTTP/1.0 responder: one request per connection,
//! request head bounded to 8 KiB, read with a timeout.

use crate::core::Core;
use crate::service::status_of;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The Prometheus text exposition of the run's counters.
pub fn render(core: &Core) -> String {
    let s = status_of(core);
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        out.push_str(&format!(
            "# HELP keima_{name} {help}\n# TYPE keima_{name} {kind}\nkeima_{name} {value}\n"
        ));
    };
    metric("shards_total", "gauge", "Shards in the run.", s.shards_total.to_string());
    metric("shards_pending", "gauge", "Shards waiting for a worker.", s.shards_pending.to_string());
    metric("shards_leased", "gauge", "Shards leased to a worker.", s.shards_leased.to_string());
    metric("shards_done", "gauge", "Shards merged.", s.shards_done.to_string());
    metric("shards_failed", "gauge", "Shards given up after repeated failures.", s.shards_failed.to_string());
    metric("weights_version", "counter", "Merges applied to the weights.", s.weights_version.to_string());
    metric("positions_merged_total", "counter", "Teacher positions merged.", s.positions_merged.to_string());
    metric(
        "gradient_entries_merged_total",
        "counter",
        "Sparse gradient entries merged.",
        s.gradient_entries_merged.to_string(),
    );
    metric("train_loss", "gauge", "Mean cross-entropy of the merged positions.", format!("{}", s.train_loss));
    metric("merges_per_second", "gauge", "Merges per second since start.", format!("{}", s.merges_per_s));
    metric("workers_alive", "gauge", "Workers seen within the lease time.", s.workers_alive.to_string());
    metric("bytes_in_total", "counter", "Compressed payload bytes received.", s.bytes_in.to_string());
    metric("bytes_out_total", "counter", "Compressed payload bytes sent.", s.bytes_out.to_string());
    metric("pushes_rejected_total", "counter", "Pushes rejected as invalid.", s.rejected_pushes.to_string());
    metric(
        "pushes_duplicate_total",
        "counter",
        "Pushes for shards merged before.",
        s.duplicate_pushes.to_string(),
    );
    metric("pushes_stale_total", "counter", "Pushes rejected as stale.", s.stale_pushes.to_string());
    metric(
        "server_faults_total",
        "counter",
        "Coordinator-side failures (disk, internal) on pushes and checkpoints.",
        s.server_faults.to_string(),
    );
    metric(
        "teacher_records_kept_total",
        "counter",
        "Teacher records stored under <run_dir>/teacher.",
        s.teacher_records_kept.to_string(),
    );
    metric(
        "cpu_seconds_total",
        "counter",
        "CPU seconds of training: workers on training shards (merged or stale) and the coordinator.",
        format!("{}", s.cpu_seconds),
    );
    let t = core.totals();
    metric(
        "match_cpu_seconds_total",
        "counter",
        "CPU seconds of match shards ([elo]), not counted in training.",
        format!("{}", t.match_cpu_seconds),
    );
    if let Some(p) = core.elo_points().last() {
        let value = |v: Option<f64>| v.map_or("NaN".to_string(), |v| format!("{v}"));
        let help =
            "of the newest matched checkpoint against its baseline (95% interval bounds: lower, upper).";
        metric(
            "elo_version",
            "gauge",
            "Weights version of the newest matched checkpoint.",
            p.version.to_string(),
        );
        metric("elo", "gauge", &format!("Elo {help}"), value(p.elo));
        metric("elo_lower", "gauge", &format!("Lower Elo bound {help}"), value(p.elo_lower));
        metric("elo_upper", "gauge", &format!("Upper Elo bound {help}"), value(p.elo_upper));
        metric("elo_games", "gauge", "Games of the newest matched checkpoint.", p.games.to_string());
        metric(
            "elo_time_losses",
            "gauge",
            "Games of the newest matched checkpoint that it lost on time.",
            p.time_losses.to_string(),
        );
        metric(
            "elo_baseline_time_losses",
            "gauge",
            "Games of the newest matched checkpoint that its baseline lost on time.",
            p.baseline_time_losses.to_string(),
        );
    }
    let generation = core.generation();
    metric("generation", "gauge", "The generation being trained (0-based).", generation.to_string());
    metric(
        "eta",
        "gauge",
        "AdaGrad eta of the current generation's merges.",
        format!("{}", core.step_sizes(generation).eta),
    );
    metric(
        "staleness_mean",
        "gauge",
        "Mean versions between compute and merge.",
        format!("{}", s.mean_staleness),
    );
    out
}

/// Serves `/metrics` until the task is dropped.
pub async fn serve(listener: TcpListener, core: Arc<Core>) {
    loop {
        let Ok((mut sock, _)) = listener.accept().await else { continue };
        let core = core.clone();
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(1024);
            let mut tmp = [0u8; 1024];
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 8192 {
                    match sock.read(&mut tmp).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    }
                }
            })
            .await;
            if read.is_err() {
                return;
            }
            let head = String::from_utf8_lossy(&buf);
            let path = head.split_whitespace().nth(1).unwrap_or("");
            let (status, body) = if path == "/metrics" || path == "/" {
                ("200 OK", render(&core))
            } else {
                ("404 Not Found", "not found: try /metrics\n".to_string())
            };
            let resp = format!(
                "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}

//! Running a coordinator process: token, gRPC server (optionally TLS), metrics endpoint,
//! local worker processes, the wait for the run to finish (or a signal), the final
//! checkpoint and export.

use crate::core::Core;
use crate::service::{server, status_of};
use keima_proto::v1::StatusReply;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct RunOptions {
    /// The `keima` binary, to start local workers (`keima worker ...`).
    pub worker_exe: PathBuf,
    pub local_workers: u32,
    pub worker_threads: u32,
    /// Called about four times a second with the run's counters.
    pub progress: Box<dyn FnMut(&StatusReply) + Send>,
}

#[derive(Clone, Debug)]
pub struct RunSummary {
    pub status: StatusReply,
    pub interrupted: bool,
    /// Training ended at the CPU budget (`cpu_hours`), not because its shards were done.
    pub budget_reached: bool,
    pub export_dir: Option<PathBuf>,
    pub clamped: u64,
    pub checkpoint: PathBuf,
    pub address: String,
    pub seconds: f64,
}

/// The run's token: from the config, the token file, `<run_dir>/token`, or a new random
/// one written there (mode 0600).
pub fn resolve_token(core: &Core) -> Result<String, String> {
    let c = &core.config().coordinator;
    if !c.token.is_empty() {
        return Ok(c.token.clone());
    }
    let read = |p: &Path| -> Result<String, String> {
        let t = std::fs::read_to_string(p).map_err(|e| format!("token file {}: {e}", p.display()))?;
        let t = t.trim().to_string();
        if t.is_empty() {
            return Err(format!("token file {} is empty", p.display()));
        }
        Ok(t)
    };
    if let Some(p) = &c.token_file {
        return read(p);
    }
    let path = core.run_dir().join("token");
    if path.is_file() {
        return read(&path);
    }
    let mut bytes = [0u8; 16];
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    crate::fsutil::write_atomic(&path, token.as_bytes()).map_err(|e| e.to_string())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(token)
}

fn spawn_local_worker(
    opts: &RunOptions,
    url: &str,
    token: &str,
    ca: Option<&Path>,
    i: u32,
    usi_engine_args: &[String],
) -> Result<Child, String> {
    let mut cmd = Command::new(&opts.worker_exe);
    cmd.args(["worker", "--coordinator", url, "--threads", &opts.worker_threads.to_string()]);
    cmd.args(usi_engine_args);
    if let Some(ca) = ca {
        cmd.arg("--tls-ca").arg(ca);
    }
    cmd.args(["--name", &format!("local{i}"), "--quiet"])
        .env("KEIMA_TOKEN", token)
        // Local workers log warnings only, unless the user asked for more.
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting local worker {}: {e}", opts.worker_exe.display()))
}

/// Serves until every shard is merged (or a signal arrives), then checkpoints and exports.
pub fn run(core: Core, mut opts: RunOptions) -> Result<RunSummary, String> {
    let core = Arc::new(core);
    let token = resolve_token(&core)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    rt.block_on(async move {
        let c = &core.config().coordinator;
        let listener = tokio::net::TcpListener::bind(&c.listen)
            .await
            .map_err(|e| format!("listen {}: {e} (set [coordinator] listen or --listen)", c.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let tls = c.tls_cert.is_some();
        let scheme = if tls { "https" } else { "http" };
        let host = if addr.ip().is_unspecified() { "127.0.0.1".to_string() } else { addr.ip().to_string() };
        let url = format!("{scheme}://{host}:{}", addr.port());
        crate::fsutil::write_atomic(&core.run_dir().join("coordinator.url"), url.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut builder = tonic::transport::Server::builder();
        if let (Some(cert), Some(key)) = (&c.tls_cert, &c.tls_key) {
            let cert = std::fs::read(cert).map_err(|e| format!("tls_cert {}: {e}", cert.display()))?;
            let key = std::fs::read(key).map_err(|e| format!("tls_key {}: {e}", key.display()))?;
            builder = builder
                .tls_config(
                    tonic::transport::ServerTlsConfig::new()
                        .identity(tonic::transport::Identity::from_pem(cert, key)),
                )
                .map_err(|e| format!("TLS configuration: {e}"))?;
        }
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let router = builder.add_service(server(core.clone(), &token));
        let server_task = tokio::spawn(async move {
            router
                .serve_with_incoming_shutdown(incoming, async {
                    stop_rx.await.ok();
                })
                .await
        });
        let metrics_task = if c.metrics_listen.is_empty() {
            None
        } else {
            let l = tokio::net::TcpListener::bind(&c.metrics_listen)
                .await
                .map_err(|e| format!("metrics_listen {}: {e}", c.metrics_listen))?;
            let maddr = l.local_addr().map_err(|e| e.to_string())?;
            crate::fsutil::write_atomic(
                &core.run_dir().join("metrics.url"),
                format!("http://{maddr}/metrics").as_bytes(),
            )
            .map_err(|e| e.to_string())?;
            tracing::info!("metrics on http://{maddr}/metrics");
            Some(tokio::spawn(crate::metrics::serve(l, core.clone())))
        };
        tracing::info!(run = %core.run_id(), "coordinator listening on {url}");
        if let Some(w) = core.config().elo.as_ref().and_then(|e| e.sparse_points_warning(c.checkpoint_every))
        {
            tracing::warn!("{w}");
        }
        if let Some(w) = core.eta_factors_warning() {
            tracing::warn!("{w}");
        }
        let mut children = Vec::new();
        let usi_engine_args =
            crate::usi_engines_config::worker_args(&core.config().local_workers.usi_engines);
        for i in 0..opts.local_workers {
            let ca = c.tls_ca.as_deref().or(c.tls_cert.as_deref()).filter(|_| tls);
            children.push(spawn_local_worker(&opts, &url, &token, ca, i, &usi_engine_args)?);
        }
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| e.to_string())?;
        let mut interrupted = false;
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = tokio::signal::ctrl_c() => { interrupted = true; }
                _ = sigterm.recv() => { interrupted = true; }
            }
            core.stop_training_if_budget_spent();
            (opts.progress)(&status_of(&core));
            if !interrupted && core.generation_end_waiting() {
                // Normally done by the merge that completes a generation; this retries one
                // that failed (e.g. its checkpoint could not be written).
                let c = core.clone();
                let ended = tokio::task::spawn_blocking(move || c.end_generation_if_due()).await;
                if let Ok(Err(e)) = ended {
                    tracing::error!("ending the generation failed (tried again shortly): {e}");
                }
            }
            if !interrupted && core.end_of_training_checkpoint_due() {
                // The final checkpoint may be one `[elo]` matches: write it now, so its
                // match shards are queued and played before the run finishes.
                let c = core.clone();
                if let Ok(Err(e)) = tokio::task::spawn_blocking(move || c.checkpoint_end_of_training()).await
                {
                    tracing::error!("checkpoint at the end of training failed (tried again shortly): {e}");
                }
            }
            if interrupted || core.finished() {
                break;
            }
        }
        if interrupted {
            core.stop();
        }
        let fin = core.clone();
        let (checkpoint, export) = tokio::task::spawn_blocking(move || -> Result<_, String> {
            if !interrupted {
                fin.write_due_elo_lines()?;
                fin.metrics_line()?;
            }
            let ck = fin.checkpoint().map_err(|e| e.to_string())?;
            let ex = if !interrupted && fin.config().coordinator.export { Some(fin.export()?) } else { None };
            fin.flush()?;
            Ok((ck, ex))
        })
        .await
        .map_err(|e| e.to_string())??;
        // Local workers see FINISHED on their next lease and exit; give them a moment.
        let deadline = Instant::now() + Duration::from_secs(if interrupted { 0 } else { 10 });
        for child in &mut children {
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        let _ = stop_tx.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), server_task).await;
        if let Some(m) = metrics_task {
            m.abort();
        }
        let status = status_of(&core);
        Ok(RunSummary {
            status,
            interrupted,
            budget_reached: !interrupted && core.stopped_at_budget(),
            clamped: export.as_ref().map_or(0, |e| e.1),
            export_dir: export.map(|e| e.0),
            checkpoint,
            address: url,
            seconds: started.elapsed().as_secs_f64(),
        })
    })
}

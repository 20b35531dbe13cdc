//! A TLS run with local workers, and `keima status` against it.

use super::*;

/// A CA and a server certificate for 127.0.0.1, made with the openssl command line.
fn certificates(d: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !openssl(&["version"]) {
        eprintln!("openssl is not installed: TLS test skipped");
        return None;
    }
    std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=keima test CA",
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    ];
    for s in steps {
        assert!(openssl(s), "openssl {s:?} failed");
    }
    Some((d.join("ca.pem"), d.join("server.pem"), d.join("server.key")))
}

#[test]
fn tls_run_with_local_workers_and_status() {
    let tmp = tmp("tls");
    let d = tmp.path();
    let Some((ca, cert, key)) = certificates(d) else { return };
    let data = teacher_data(d, "2");
    let run = d.join("run");
    let cfg = d.join("train.toml");
    std::fs::write(
        &cfg,
        format!(
            "run_dir = {run:?}\n[teacher]\npaths = [{data:?}]\nrecords_per_shard = 60\n[coordinator]\n\
             listen = \"127.0.0.1:0\"\nmetrics_listen = \"\"\nexport = false\ntls_cert = {cert:?}\ntls_key = {key:?}\n\
             tls_ca = {ca:?}\n[local_workers]\ncount = 0\n"
        ),
    )
    .unwrap();
    let coordinator = spawn(&["train", "--config", s(&cfg), "--quiet"]);
    wait_for("coordinator", Duration::from_secs(60), || run.join("coordinator.url").exists());
    let url = std::fs::read_to_string(run.join("coordinator.url")).unwrap();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let token = run.join("token");
    // Without the CA the certificate is not trusted; with it, status and a worker work.
    let out = Command::new(KEIMA).args(["status", &url, "--token-file", s(&token)]).output().unwrap();
    assert!(!out.status.success(), "an untrusted certificate was accepted");
    let st = run_ok(&["status", &url, "--token-file", s(&token), "--tls-ca", s(&ca), "--json"]);
    assert!(st.contains("\"shards_total\""), "{st}");
    let _w = spawn(&[
        "worker",
        "--coordinator",
        &url,
        "--token-file",
        s(&token),
        "--tls-ca",
        s(&ca),
        "--give-up-after",
        "30",
    ]);
    let (out, state) = finish(coordinator, &run);
    assert!(out.starts_with("done:"), "{out}");
    let shards = state["queue"]["shards"].as_array().unwrap().len() as u64;
    assert_eq!(state["weights_version"].as_u64().unwrap(), shards);
}

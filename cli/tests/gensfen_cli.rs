//! `keima gensfen` end to end: the shard, its manifest and the JSON summary agree.

use engine_core::teacher::{ShardManifest, ShardReader, manifest_path};
use std::path::Path;
use std::process::Command;

fn keima(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_keima")).args(args).output().expect("run keima");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory, removed when the returned guard drops.
fn tmp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("keima-gensfen-cli-{name}-"))
        .tempdir_in(std::env::temp_dir())
        .unwrap()
}

fn check_shard(shard: &Path, summary: &serde_json::Value) -> ShardManifest {
    let manifest: ShardManifest =
        serde_json::from_slice(&std::fs::read(manifest_path(shard)).unwrap()).expect("manifest JSON");
    let (records, rejects) = ShardReader::read_all(shard).unwrap();
    assert_eq!(rejects.total(), 0, "{rejects}");
    assert_eq!(manifest.records, records.len() as u64);
    assert_eq!(summary["records"], manifest.records);
    assert_eq!(summary["positions_written"], manifest.records);
    assert!(manifest.records > 0);
    manifest
}

#[test]
fn selfplay_end_to_end() {
    let tmp = tmp_dir("selfplay");
    let dir = tmp.path();
    let shard = dir.join("sub/t.psv.zst");
    let s = shard.to_str().unwrap();
    let args = [
        "gensfen",
        "--out",
        s,
        "--random-moves",
        "6",
        "--random-max-ply",
        "16",
        "--games",
        "3",
        "--depth",
        "1",
        "--max-ply",
        "60",
        "--write-minply",
        "10",
        "--seed",
        "5",
        "--threads",
        "2",
        "--json",
    ];
    let (code, out, err) = keima(&args);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON summary");
    assert_eq!(summary["games"], 3);
    let manifest = check_shard(&shard, &summary);
    assert_eq!(manifest.eval_id, "material");
    assert_eq!(manifest.settings["mode"], "selfplay");
    assert_eq!(manifest.settings["config"]["limit"]["depth"], 1);
    assert_eq!(manifest.settings["config"]["seed"], 5);
    // Same seed with one thread: the same bytes.
    let shard1 = dir.join("one.psv.zst");
    let mut args1 = args;
    args1[2] = shard1.to_str().unwrap();
    let threads = args.iter().position(|&a| a == "--threads").unwrap();
    args1[threads + 1] = "1";
    let (code, _, err) = keima(&args1);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&shard).unwrap(), std::fs::read(&shard1).unwrap());
}

#[test]
fn records_end_to_end() {
    let tmp = tmp_dir("records");
    let dir = tmp.path();
    let shard = dir.join("r.psv.zst");
    let pro = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/records/pro");
    let (code, out, err) = keima(&[
        "gensfen",
        "--out",
        shard.to_str().unwrap(),
        "--records",
        pro.to_str().unwrap(),
        "--games",
        "2",
        "--depth",
        "1",
        "--unknown-result",
        "last-mover-wins",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON summary");
    assert_eq!(summary["games"], 2);
    let manifest = check_shard(&shard, &summary);
    assert_eq!(manifest.settings["mode"], "records");
    assert_eq!(manifest.settings["config"]["unknown_result"], "last_mover_wins");
}

#[test]
fn clear_errors() {
    let tmp = tmp_dir("errors");
    let dir = tmp.path();
    let shard = dir.join("e.psv.zst");
    let s = shard.to_str().unwrap();
    let (code, _, err) = keima(&["gensfen", "--out", s, "--games", "2", "--random-moves", "4"]);
    assert_ne!(code, 0);
    assert!(err.contains("--depth") && err.contains("--nodes"), "{err}");
    let (code, _, err) = keima(&["gensfen", "--out", s, "--games", "2", "--depth", "1"]);
    assert_ne!(code, 0);
    assert!(err.contains("--openings") && err.contains("--random-moves"), "{err}");
    let (code, _, err) = keima(&["gensfen", "--out", s, "--depth", "1", "--random-moves", "4"]);
    assert_ne!(code, 0);
    assert!(err.contains("--games"), "{err}");
    // Random plies that every opening has already played would never be played.
    let openings = dir.join("o.sfen");
    std::fs::write(&openings, "startpos moves 7g7f 3c3d 2g2f 8c8d\n").unwrap();
    let o = openings.to_str().unwrap();
    let void =
        ["--games", "2", "--depth", "1", "--openings", o, "--random-moves", "2", "--random-max-ply", "4"];
    let (code, _, err) = keima(&[&["gensfen", "--out", s][..], &void[..]].concat());
    assert_ne!(code, 0);
    assert!(err.contains("--random-moves") && err.contains("random_min_ply = 5"), "{err}");
    let (code, _, err) = keima(&[
        "gensfen",
        "--out",
        s,
        "--games",
        "2",
        "--depth",
        "1",
        "--random-moves",
        "1",
        "--random-max-ply",
        "4000000000",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--random-max-ply 4000000000"), "{err}");
    assert!(!shard.exists());
}

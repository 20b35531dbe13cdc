//! `keima weights init`, `keima learn` (config and resume), `keima export`, `keima plot`,
//! and the exported files in `keima eval`.

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

fn ok(args: &[&str]) -> String {
    let (code, out, err) = keima(args);
    assert_eq!(code, 0, "keima {args:?}: {out}\n{err}");
    out
}

/// A fresh directory, removed when the returned guard drops.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("learn_cli_{name}_"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn learn_resume_export_plot_eval() {
    let tmp = tmp("e2e");
    let d = tmp.path();
    let train = d.join("train.psv.zst");
    let val = d.join("val.psv.zst");
    for (out, games, seed) in [(&train, "12", "1"), (&val, "3", "2")] {
        ok(&[
            "gensfen",
            "--out",
            s(out),
            "--games",
            games,
            "--nodes",
            "500",
            "--random-moves",
            "6",
            "--seed",
            seed,
        ]);
    }
    let run = d.join("run");
    let cfg = d.join("cfg.toml");
    std::fs::write(
        &cfg,
        format!(
            "shards = [{:?}]\nout_dir = {:?}\nbatch_size = 64\nepochs = 20\neval_every = 2\n\
             checkpoint_every = 3\nkeep_checkpoints = 2\nmax_updates = 6\n[validation]\nshard = {:?}\nmax_records = 50\n",
            d.join("train.psv.*").to_str().unwrap().replace(".psv.*", ".psv.zs?"),
            s(&run),
            s(&val)
        ),
    )
    .unwrap();
    let out = ok(&["learn", "--config", s(&cfg), "--quiet"]);
    assert!(out.contains("6 updates"), "{out}");
    // A fresh run refuses an existing run directory.
    let (code, _, err) = keima(&["learn", "--config", s(&cfg), "--quiet"]);
    assert_eq!(code, 2);
    assert!(err.contains("--resume"), "{err}");
    // Resume the run directory (newest checkpoint, update 6) for 2 more updates.
    let out = ok(&["learn", "--resume", s(&run), "--max-updates", "8", "--quiet"]);
    assert!(out.contains("8 updates"), "{out}");
    let metrics = run.join("metrics.jsonl");
    let svg = d.join("curves.svg");
    ok(&["plot", s(&metrics), "--out", s(&svg)]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("polyline") && text.trim_end().ends_with("</svg>"));
    // Export and evaluate with the exported files.
    let eval_dir = d.join("eval");
    let out =
        ok(&["export", "--weights", s(&run.join("weights.kw")), "--format", "kppt", "--out", s(&eval_dir)]);
    assert!(out.contains("clamped 0 weights"), "{out}");
    let out = ok(&["eval", "--eval", s(&eval_dir), "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v["eval"].is_i64());
    // Bad inputs.
    let bad = d.join("bad.kw");
    std::fs::write(&bad, b"not a weight file").unwrap();
    let (code, _, err) = keima(&["export", "--weights", s(&bad), "--out", s(&d.join("x"))]);
    assert_eq!(code, 2);
    assert!(err.contains("truncated") || err.contains("magic"), "{err}");
    let (code, _, err) =
        keima(&["export", "--weights", s(&run.join("weights.kw")), "--format", "nnue", "--out", "x"]);
    assert_eq!(code, 2);
    assert!(err.contains("kppt"), "{err}");
}

#[test]
fn weights_init_material_then_export_is_material_only() {
    let tmp = tmp("init");
    let d = tmp.path();
    let w = d.join("w.kw");
    let out = ok(&["weights", "init", "--material", "--out", s(&w)]);
    assert!(out.contains("material only"), "{out}");
    let eval_dir = d.join("eval");
    ok(&["export", "--weights", s(&w), "--out", s(&eval_dir)]);
    let sfen = "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2";
    let with = ok(&["eval", "--eval", s(&eval_dir), "--sfen", sfen, "--json"]);
    let without = ok(&["eval", "--sfen", sfen, "--json"]);
    assert_eq!(with, without);
    // From KPPT files.
    let w2 = d.join("w2.kw");
    ok(&["weights", "init", "--from-kppt", s(&eval_dir), "--out", s(&w2)]);
}

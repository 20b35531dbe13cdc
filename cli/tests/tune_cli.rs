//! `keima tune`: a few SPSA pairs of keima against itself, the state it writes, resuming
//! it, and the errors a user can make.

use std::path::Path;
use std::process::{Command, Output};

fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("keima-{name}-")).tempdir_in(std::env::temp_dir()).unwrap()
}

fn tune(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keima")).arg("tune").args(args).arg("--out").arg(out).output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn state(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("spsa.json")).unwrap()).unwrap()
}

#[test]
fn tune_runs_saves_and_resumes() {
    let tmp = temp_dir("tune");
    let out = tmp.path().join("t");
    let args = ["--pairs", "3", "--nodes", "200", "--params", "rfp_margin,lmr_scale", "--concurrency", "2"];
    let o = tune(&args, &out);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("tune: 3 of 3 pairs"), "{stdout}");
    let v = state(&out);
    assert_eq!((v["done"].as_u64(), v["iterations"].as_u64()), (Some(3), Some(3)), "{v}");
    let outcomes: u64 = v["outcomes"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum();
    assert_eq!(outcomes, 3, "{v}");
    let names: Vec<&str> =
        v["params"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["rfp_margin", "lmr_scale"]);
    // The printed set is the state's, rounded, in the form SearchParams takes.
    let round = |i: usize| v["params"][i]["value"].as_f64().unwrap().round() as i64;
    assert!(
        stdout.contains(&format!("SearchParams=rfp_margin={},lmr_scale={}", round(0), round(1))),
        "{stdout}"
    );

    // --status reads the state and plays nothing: each parameter's move from its start in
    // steps, and over the last tenth (here the last pair: nothing since the last point).
    let o = tune(&["--status"], &out);
    assert!(o.status.success(), "{:?}", text(&o));
    let (status, _) = text(&o);
    assert!(status.contains("3 of 3 pairs (100%)"), "{status}");
    let p0 = &v["params"][0];
    let start = f64::from(engine_core::search::SearchParams::default().rfp_margin);
    let moved = (p0["value"].as_f64().unwrap() - start) / p0["c_end"].as_f64().unwrap();
    let row = status.lines().find(|l| l.starts_with("rfp_margin")).unwrap_or_else(|| panic!("{status}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[4..], [format!("{moved:+.2}"), "+0.00".to_string()], "{row}");
    let set = |text: &str| text.lines().find(|l| l.starts_with("SearchParams=")).map(str::to_string);
    assert_eq!(set(&status), set(&stdout), "--status prints the set the tune printed at its end");
    assert_eq!(stdout.matches("SearchParams=").count(), 2, "once alone, once in the check line: {stdout}");
    assert_eq!(v["trace"].as_array().map(|t| t.len()), Some(3), "a point a pair in a 3-pair tune: {v}");
    assert_eq!(state(&out), v, "--status writes nothing");
    let o = tune(&["--status"], &tmp.path().join("none"));
    assert!(!o.status.success());
    assert!(text(&o).1.contains("none/spsa.json"), "{:?}", text(&o));

    // The same --out again is refused unless resumed; resumed, a finished tune stays as it is.
    let o = tune(&args, &out);
    assert!(!o.status.success());
    assert!(text(&o).1.contains("--resume"), "{}", text(&o).1);
    let o = tune(&["--resume", "--nodes", "200"], &out);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(text(&o).0.contains("tune: 3 of 3 pairs"));
    assert_eq!(state(&out)["done"], v["done"]);
    assert_eq!(state(&out)["params"], v["params"]);

    // The games' settings are the tune's: stored, taken back without being given again,
    // and refused by name when given differently.
    assert_eq!(v["games"]["nodes"].as_u64(), Some(200), "{v}");
    let o = tune(&["--resume"], &out);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(text(&o).0.contains("--nodes 200 "), "{:?}", text(&o));
    let o = tune(&["--resume", "--nodes", "300"], &out);
    assert!(!o.status.success());
    let err = text(&o).1;
    assert!(err.contains("--nodes 300 differs from the tune's 200"), "{err}");
    let o = tune(&["--resume", "--max-plies", "100"], &out);
    assert!(!o.status.success());
    assert!(text(&o).1.contains("--max-plies 100 differs from the tune's 256"), "{:?}", text(&o));
    assert_eq!(state(&out), v, "a refused resume leaves the state as it was");

    // A pair that was running when a tune stopped is played again on resume.
    let mut stopped = v.clone();
    stopped["iterations"] = 4.into();
    stopped["started"] = 4.into();
    std::fs::write(out.join("spsa.json"), serde_json::to_string(&stopped).unwrap()).unwrap();
    let o = tune(&["--resume"], &out);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(text(&o).0.contains("tune: 4 of 4 pairs"), "{:?}", text(&o));
    assert_eq!(state(&out)["started"].as_u64(), Some(4));
}

#[test]
fn tune_refuses_bad_input_by_name() {
    let tmp = temp_dir("tune-bad");
    let dir = tmp.path();
    let o = tune(&["--params", "rfp_margin,no_such_thing", "--pairs", "2"], &dir.join("a"));
    assert!(!o.status.success());
    assert!(text(&o).1.contains("unknown parameter \"no_such_thing\""), "{:?}", text(&o));
    assert!(!dir.join("a").exists(), "nothing written for a refused tune");

    // A damaged state names the file and the field, and is left as it was.
    let b = dir.join("b");
    std::fs::create_dir_all(&b).unwrap();
    let damaged = r#"{"version":1,"iterations":10,"started":2,"done":2,"seed":1,"outcomes":[0,0,2,0,0],
        "params":[{"name":"rfp_margin","value":1000.0,"start":170.0,"min":60.0,"max":400.0,"c_end":15.0,"r_end":0.002}]}"#;
    std::fs::write(b.join("spsa.json"), damaged).unwrap();
    let o = tune(&["--resume"], &b);
    assert!(!o.status.success());
    let err = text(&o).1;
    assert!(err.contains("spsa.json") && err.contains("rfp_margin") && err.contains("outside"), "{err}");
    assert_eq!(std::fs::read_to_string(b.join("spsa.json")).unwrap(), damaged);

    // An engine without the option cannot be tuned: said before any pair counts.
    let fake = dir.join("fake-engine.sh");
    std::fs::write(
        &fake,
        "#!/bin/sh\nwhile read l; do case \"$l\" in usi) echo 'id name fake'; echo usiok;; \
         isready) echo readyok;; quit) exit 0;; esac; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let o = tune(&["--engine", fake.to_str().unwrap(), "--pairs", "2"], &dir.join("c"));
    assert!(!o.status.success());
    let err = text(&o).1;
    assert!(err.contains("has no SearchParams option"), "{err}");
    assert_eq!(state(&dir.join("c"))["done"].as_u64(), Some(0));

    let o = Command::new(env!("CARGO_BIN_EXE_keima")).args(["tune", "--list"]).output().unwrap();
    assert!(o.status.success());
    let (list, _) = text(&o);
    let default = engine_core::search::SearchParams::default().rfp_margin.to_string();
    assert!(list.lines().any(|l| l.starts_with("rfp_margin") && l.contains(&default)), "{list}");
}

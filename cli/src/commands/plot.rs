//! `keima plot METRICS --out FILE.svg`: learning curves from a metrics JSONL file, drawn as
//! a hand-written SVG (one panel per metric, x = updates).

use super::CommandResult;
use clap::Args;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct PlotArgs {
    /// metrics.jsonl written by `keima learn`.
    metrics: PathBuf,
    /// Output SVG file.
    #[arg(long)]
    out: PathBuf,
}

const PANELS: &[(&str, &[(&str, &str)])] = &[
    ("cross-entropy", &[("train_loss", "#1f77b4"), ("test_loss", "#d62728")]),
    ("move agreement", &[("move_agreement", "#2ca02c")]),
    ("mean |eval - teacher|", &[("mean_abs_eval_diff", "#9467bd")]),
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The SVG text for the metric lines.
pub fn render(lines: &[serde_json::Value]) -> String {
    let (w, ph, left, top) = (720.0, 200.0, 70.0, 30.0);
    let h = top + PANELS.len() as f64 * (ph + 50.0);
    let xs: Vec<f64> = lines.iter().filter_map(|l| l["updates"].as_f64()).collect();
    let (xmin, xmax) =
        (xs.iter().cloned().fold(f64::INFINITY, f64::min), xs.iter().cloned().fold(0.0, f64::max));
    let xspan = if xmax > xmin { xmax - xmin } else { 1.0 };
    let pw = w - left - 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (pi, (title, series)) in PANELS.iter().enumerate() {
        let y0 = top + pi as f64 * (ph + 50.0);
        let vals: Vec<f64> = series
            .iter()
            .flat_map(|(k, _)| lines.iter().filter_map(move |l| l[*k].as_f64()))
            .filter(|v| v.is_finite())
            .collect();
        let (mut lo, mut hi) = (
            vals.iter().cloned().fold(f64::INFINITY, f64::min),
            vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        );
        if vals.is_empty() {
            (lo, hi) = (0.0, 1.0);
        }
        if hi <= lo {
            hi = lo + 1e-9_f64.max(lo.abs() * 0.01);
        }
        let _ = writeln!(s, r#"<text x="{left}" y="{}" font-weight="bold">{}</text>"#, y0 - 8.0, esc(title));
        let _ = writeln!(
            s,
            r##"<rect x="{left}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{hi:.4}</text>"#, left - 4.0, y0 + 10.0);
        let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{lo:.4}</text>"#, left - 4.0, y0 + ph);
        let _ = writeln!(s, r#"<text x="{left}" y="{}">{xmin}</text>"#, y0 + ph + 15.0);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{xmax} updates</text>"#,
            left + pw,
            y0 + ph + 15.0
        );
        for (si, (key, color)) in series.iter().enumerate() {
            let pts: Vec<String> = lines
                .iter()
                .filter_map(|l| Some((l["updates"].as_f64()?, l[*key].as_f64()?)))
                .filter(|(_, v)| v.is_finite())
                .map(|(x, v)| {
                    format!(
                        "{:.1},{:.1}",
                        left + (x - xmin) / xspan * pw,
                        y0 + ph - (v - lo) / (hi - lo) * ph
                    )
                })
                .collect();
            if !pts.is_empty() {
                let _ = writeln!(
                    s,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                    pts.join(" ")
                );
            }
            let lx = left + pw - 150.0;
            let ly = y0 + 15.0 + si as f64 * 15.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="2"/><text x="{}" y="{ly}">{key}</text>"#,
                ly - 4.0,
                lx + 20.0,
                ly - 4.0,
                lx + 25.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

pub fn run(a: PlotArgs) -> CommandResult {
    let text = std::fs::read_to_string(&a.metrics).map_err(|e| format!("{}: {e}", a.metrics.display()))?;
    let mut lines = Vec::new();
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        lines.push(
            serde_json::from_str::<serde_json::Value>(l)
                .map_err(|e| format!("{} line {}: {e}", a.metrics.display(), i + 1))?,
        );
    }
    if lines.is_empty() {
        return Err(format!("{}: no metrics lines", a.metrics.display()));
    }
    std::fs::write(&a.out, render(&lines)).map_err(|e| format!("{}: {e}", a.out.display()))?;
    println!("{}: {} points", a.out.display(), lines.len());
    Ok(ExitCode::SUCCESS)
}

//! `keima plot METRICS --out FILE.svg`: learning curves from a metrics JSONL file, drawn as
//! a hand-written SVG. One panel per metric; x = CPU-hours when the lines carry them
//! (`keima train`), else updates. Elo lines (`keima train` with `[elo]`, those with an
//! `elo` key) are drawn in their own panel as points with their 95% interval bars, at the
//! training CPU-hours (or version) of the checkpoint they measured.

use super::CommandResult;
use clap::Args;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct PlotArgs {
    /// metrics.jsonl written by `keima learn` or `keima train`.
    metrics: PathBuf,
    /// Output SVG file.
    #[arg(long)]
    out: PathBuf,
}

const PANELS: &[(&str, &[(&str, &str)])] = &[
    ("cross-entropy: train and held-out", &[("train_loss", "#1f77b4"), ("test_loss", "#d62728")]),
    ("move agreement", &[("move_agreement", "#2ca02c")]),
    ("mean |eval - teacher|", &[("mean_abs_eval_diff", "#9467bd")]),
];

/// Layout: width, panel height, left margin, top margin, gap between panels.
const WIDTH: f64 = 720.0;
const PANEL_HEIGHT: f64 = 200.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 30.0;
const GAP: f64 = 50.0;
const PANEL_WIDTH: f64 = WIDTH - LEFT - 30.0;
const ELO_COLOR: &str = "#ff7f0e";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An Elo line: `elo` present (null when infinite).
fn is_elo(l: &serde_json::Value) -> bool {
    l.get("elo").is_some()
}

/// The x axis: its key in training lines, its key in Elo lines, and its label.
fn x_axis(lines: &[serde_json::Value]) -> (&'static str, &'static str, &'static str) {
    if lines.iter().any(|l| l["cpu_hours"].is_number()) {
        ("cpu_hours", "cpu_hours", "CPU-hours")
    } else {
        ("updates", "version", "updates")
    }
}

/// A value range with room: `[lo, hi]` of `vals`, widened when flat, `[0, 1]` when empty.
fn range(vals: &[f64]) -> (f64, f64) {
    let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
    let mut hi = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if vals.is_empty() {
        return (0.0, 1.0);
    }
    if hi <= lo {
        hi = lo + 1e-9_f64.max(lo.abs() * 0.01);
    }
    (lo, hi)
}

/// Maps data coordinates to a panel's pixels.
struct Frame {
    y0: f64,
    x: (f64, f64),
    y: (f64, f64),
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.x.0) / (self.x.1 - self.x.0) * PANEL_WIDTH
    }

    fn py(&self, v: f64) -> f64 {
        self.y0 + PANEL_HEIGHT - (v - self.y.0) / (self.y.1 - self.y.0) * PANEL_HEIGHT
    }

    /// The box, title and axis labels.
    fn draw(&self, s: &mut String, title: &str, x_label: &str) {
        let (y0, ph, pw) = (self.y0, PANEL_HEIGHT, PANEL_WIDTH);
        let _ = writeln!(s, r#"<text x="{LEFT}" y="{}" font-weight="bold">{}</text>"#, y0 - 8.0, esc(title));
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        let (lo, hi) = self.y;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LEFT - 4.0,
            y0 + 10.0,
            tick(hi)
        );
        let _ =
            writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, LEFT - 4.0, y0 + ph, tick(lo));
        let _ = writeln!(s, r#"<text x="{LEFT}" y="{}">{}</text>"#, y0 + ph + 15.0, tick(self.x.0));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{} {x_label}</text>"#,
            LEFT + pw,
            y0 + ph + 15.0,
            tick(self.x.1)
        );
    }
}

/// An axis label: whole numbers as they are, others to four significant digits at most
/// (losses differ in the third decimal, CPU-hours and Elo need no more).
fn tick(v: f64) -> String {
    if v == v.round() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

fn legend(s: &mut String, y0: f64, i: usize, key: &str, color: &str) {
    let lx = LEFT + PANEL_WIDTH - 150.0;
    let ly = y0 + 15.0 + i as f64 * 15.0;
    let _ = writeln!(
        s,
        r#"<line x1="{lx}" y1="{}" x2="{}" y2="{}" stroke="{color}" stroke-width="2"/><text x="{}" y="{ly}">{key}</text>"#,
        ly - 4.0,
        lx + 20.0,
        ly - 4.0,
        lx + 25.0
    );
}

/// The SVG text for the metric lines.
pub fn render(lines: &[serde_json::Value]) -> String {
    let (x_key, elo_x_key, x_label) = x_axis(lines);
    let (train, elo): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) =
        lines.iter().partition(|l| !is_elo(l));
    let xs: Vec<f64> = train
        .iter()
        .filter_map(|l| l[x_key].as_f64())
        .chain(elo.iter().filter_map(|l| l[elo_x_key].as_f64()))
        .collect();
    let (xmin, xmax) =
        (xs.iter().cloned().fold(f64::INFINITY, f64::min), xs.iter().cloned().fold(0.0, f64::max));
    let x = (xmin.min(xmax), if xmax > xmin { xmax } else { xmin.min(xmax) + 1.0 });
    let panels = PANELS.len() + usize::from(!elo.is_empty());
    let h = TOP + panels as f64 * (PANEL_HEIGHT + GAP);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (pi, (title, series)) in PANELS.iter().enumerate() {
        let y0 = TOP + pi as f64 * (PANEL_HEIGHT + GAP);
        let vals: Vec<f64> = series
            .iter()
            .flat_map(|(k, _)| train.iter().filter_map(move |l| l[*k].as_f64()))
            .filter(|v| v.is_finite())
            .collect();
        let f = Frame { y0, x, y: range(&vals) };
        f.draw(&mut s, title, x_label);
        for (si, (key, color)) in series.iter().enumerate() {
            let pts: Vec<String> = train
                .iter()
                .filter_map(|l| Some((l[x_key].as_f64()?, l[*key].as_f64()?)))
                .filter(|(_, v)| v.is_finite())
                .map(|(xv, v)| format!("{:.1},{:.1}", f.px(xv), f.py(v)))
                .collect();
            if !pts.is_empty() {
                let _ = writeln!(
                    s,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                    pts.join(" ")
                );
            }
            legend(&mut s, y0, si, key, color);
        }
    }
    if !elo.is_empty() {
        draw_elo(&mut s, &elo, TOP + PANELS.len() as f64 * (PANEL_HEIGHT + GAP), x, elo_x_key, x_label);
    }
    s.push_str("</svg>\n");
    s
}

/// The Elo panel: a point per matched checkpoint with its 95% interval as a vertical bar
/// (an infinite bound, written as null, runs to the panel's edge).
fn draw_elo(s: &mut String, elo: &[&serde_json::Value], y0: f64, x: (f64, f64), x_key: &str, x_label: &str) {
    let vals: Vec<f64> = elo
        .iter()
        .flat_map(|l| ["elo", "elo_lower", "elo_upper"].map(|k| l[k].as_f64()))
        .flatten()
        .filter(|v| v.is_finite())
        .collect();
    let f = Frame { y0, x, y: range(&vals) };
    let baseline = elo.last().and_then(|l| l["baseline"].as_str()).unwrap_or("baseline");
    f.draw(s, &format!("Elo against {baseline} (95% interval)"), x_label);
    for l in elo {
        let Some(xv) = l[x_key].as_f64() else { continue };
        let cx = f.px(xv);
        let version = l["version"].as_u64().unwrap_or(0);
        let lower = l["elo_lower"].as_f64().map_or(y0 + PANEL_HEIGHT, |v| f.py(v));
        let upper = l["elo_upper"].as_f64().map_or(y0, |v| f.py(v));
        let _ = writeln!(
            s,
            r#"<line class="elo-interval" data-version="{version}" x1="{cx:.1}" y1="{lower:.1}" x2="{cx:.1}" y2="{upper:.1}" stroke="{ELO_COLOR}" stroke-width="1.5"/>"#
        );
        if let Some(e) = l["elo"].as_f64() {
            let _ = writeln!(
                s,
                r#"<circle class="elo" data-version="{version}" data-elo="{e:.1}" cx="{cx:.1}" cy="{:.1}" r="3.5" fill="{ELO_COLOR}"/>"#,
                f.py(e)
            );
        }
    }
    legend(s, y0, 0, "elo", ELO_COLOR);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The elements named `name` of an SVG text, each as its attributes (a parser for the
    /// flat SVG `render` writes: no nesting, attribute values in double quotes).
    fn elements(svg: &str, name: &str) -> Vec<HashMap<String, String>> {
        svg.split('<')
            .filter_map(|tag| tag.strip_prefix(name)?.strip_prefix(' '))
            .map(|rest| {
                let mut attrs = HashMap::new();
                let mut it = rest.split('"');
                while let (Some(key), Some(value)) = (it.next(), it.next()) {
                    attrs.insert(key.trim().trim_end_matches('=').to_string(), value.to_string());
                }
                attrs
            })
            .collect()
    }

    /// Text contents of the `<text>` elements.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text")?.0.to_string()))
            .collect()
    }

    fn num(a: &HashMap<String, String>, k: &str) -> f64 {
        a[k].parse().unwrap()
    }

    /// Equal up to the SVG's rounding to 0.1 pixel.
    fn close(got: (f64, f64), want: (f64, f64)) -> bool {
        (got.0 - want.0).abs() <= 0.05 + 1e-9 && (got.1 - want.1).abs() <= 0.05 + 1e-9
    }

    #[test]
    fn train_metrics_plot_against_cpu_hours_with_elo_points_and_intervals() {
        let metrics = r#"{"updates":0,"train_loss":null,"test_loss":0.70,"cpu_hours":0.0}
{"updates":10,"train_loss":0.65,"test_loss":0.60,"cpu_hours":0.5}
{"version":10,"baseline":"material","games":4,"elo":0.0,"elo_lower":-100.0,"elo_upper":100.0,"cpu_hours":0.5}
{"updates":20,"train_loss":0.55,"test_loss":0.50,"cpu_hours":1.0}
{"version":20,"baseline":"material","games":4,"elo":200.0,"elo_lower":100.0,"elo_upper":null,"cpu_hours":1.0}
"#;
        let lines: Vec<serde_json::Value> =
            metrics.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let svg = render(&lines);
        let t = texts(&svg);
        assert!(t.iter().any(|s| s == "1 CPU-hours"), "x axis in CPU-hours: {t:?}");
        assert!(t.iter().any(|s| s == "Elo against material (95% interval)"), "{t:?}");
        assert!(t.iter().any(|s| s == "cross-entropy: train and held-out"), "{t:?}");
        // Four panels: the three of the training lines and the Elo panel.
        assert_eq!(elements(&svg, "rect").len(), 1 + 4);
        let held_out = elements(&svg, "polyline")
            .into_iter()
            .find(|p| p["stroke"] == "#d62728")
            .expect("the held-out loss line");
        let pts: Vec<(f64, f64)> = held_out["points"]
            .split(' ')
            .map(|p| p.split_once(',').map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap())).unwrap())
            .collect();
        // At x = 0, 0.5, 1 CPU-hours, falling from the panel's top to its bottom.
        assert_eq!(
            pts.iter().map(|p| p.0).collect::<Vec<_>>(),
            [LEFT, LEFT + PANEL_WIDTH / 2.0, LEFT + PANEL_WIDTH]
        );
        assert!(close((pts[0].1, pts[2].1), (TOP, TOP + PANEL_HEIGHT)), "{pts:?}");
        let points = elements(&svg, "circle");
        assert_eq!(points.len(), 2);
        let y0 = TOP + 3.0 * (PANEL_HEIGHT + GAP);
        // Elo from -100 (bottom) to 200 (top): 0 is a third of the way up.
        let (p10, p20) = (&points[0], &points[1]);
        assert_eq!((p10["data-version"].as_str(), p20["data-version"].as_str()), ("10", "20"));
        assert!(close((num(p10, "cx"), num(p20, "cx")), (LEFT + PANEL_WIDTH / 2.0, LEFT + PANEL_WIDTH)));
        assert!(close((num(p10, "cy"), num(p20, "cy")), (y0 + PANEL_HEIGHT * 2.0 / 3.0, y0)), "{points:?}");
        let bars = elements(&svg, "line")
            .into_iter()
            .filter(|l| l.get("class").is_some_and(|c| c == "elo-interval"))
            .collect::<Vec<_>>();
        assert_eq!(bars.len(), 2);
        assert!(close(
            (num(&bars[0], "y1"), num(&bars[0], "y2")),
            (y0 + PANEL_HEIGHT, y0 + PANEL_HEIGHT / 3.0)
        ));
        // An infinite upper bound runs to the panel's top.
        assert!(close((num(&bars[1], "y1"), num(&bars[1], "y2")), (y0 + PANEL_HEIGHT / 3.0, y0)), "{bars:?}");
    }

    #[test]
    fn axis_labels_keep_four_significant_digits() {
        let cases = [
            (0.0601812661111111, "0.06018"),
            (0.8415747563888895, "0.8416"),
            (3.0, "3"),
            (104.2713, "104.3"),
            (-34.5067, "-34.51"),
            (0.6210, "0.621"),
            (12000.0, "12000"),
            (2.5, "2.5"),
        ];
        for (v, want) in cases {
            assert_eq!(tick(v), want, "{v}");
        }
    }

    #[test]
    fn learner_metrics_without_cpu_hours_plot_against_updates() {
        let lines: Vec<serde_json::Value> =
            [r#"{"updates":0,"test_loss":0.7}"#, r#"{"updates":5,"test_loss":0.6}"#]
                .iter()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        let svg = render(&lines);
        assert!(texts(&svg).iter().any(|s| s == "5 updates"));
        assert!(elements(&svg, "circle").is_empty());
        assert_eq!(elements(&svg, "rect").len(), 1 + 3);
    }
}

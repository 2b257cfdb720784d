//! clayout-plot: draws the net speedups measured by `scripts/run-samples.sh`.
//!
//!   clayout-plot RESULTS.json... [--out-dir DIR] [--metric net|total|kernel] [--size S]
//!                [--device SUBSTRING] [--font FILE.ttf] [--no-text]
//!
//! For every sample in the results, one PNG `DIR/NAME-speedup.png` (DIR defaults to docs/img):
//! the speedup of each variant over the plain AoS program, against the number of iterations
//! (log scale). Speedup = AoS time / variant time. The time is by default `net`: the iteration
//! loop (`kernel_ms`, which for clayout runs holds the conversions to ASTA before the first
//! launch) plus the device time of the conversions back to the host layout, which run at the
//! read after the loop (their share of `marshal_device_ns`, by count). `total` is `total_ms`
//! (writes, loop and reads: every conversion is in it, but so are PCIe transfers of the whole
//! data set, whose noise can exceed the loop itself on a fast GPU); `kernel` the loop alone. Several records of one (sample, variant,
//! iterations) are reduced to their median. The same figures go to standard output as Markdown
//! tables, ready for docs/results.md.
//!
//! Text is drawn with a TrueType font loaded at run time (plotters' `ab_glyph` backend, no
//! system font library): `--font`, else `$CLAYOUT_PLOT_FONT`, else DejaVu Sans or Liberation
//! Sans from the usual places. Without one (or with `--no-text`) the plot has no text at all and
//! the Markdown output carries the labels; the colours are listed there too.

use plotters::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::exit;

const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/LiberationSans-Regular.ttf",
];

/// The variants other than the baseline, in legend order, with their label and colour.
const SERIES: &[(&str, &str, RGBColor)] = &[
    ("asta", "clayout + hand-written ASTA kernel", RGBColor(214, 39, 40)),
    ("asta-soa", "clayout + ASTA kernel, SoA host layout", RGBColor(255, 127, 14)),
    ("transparent", "clayout transparent (AoS kernel rewritten)", RGBColor(44, 160, 44)),
    ("transparent-soa", "clayout transparent, SoA host layout", RGBColor(23, 190, 207)),
    ("soa", "hand-written SoA (reference)", RGBColor(31, 119, 180)),
];

struct Options {
    inputs: Vec<PathBuf>,
    out_dir: PathBuf,
    metric: String,
    size: Option<String>,
    device: Option<String>,
    font: Option<PathBuf>,
    no_text: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: clayout-plot RESULTS.json... [--out-dir DIR] [--metric net|total|kernel] [--size S] \
         [--device SUBSTRING] [--font FILE.ttf] [--no-text]"
    );
    exit(2)
}

fn parse_args() -> Options {
    let mut o = Options {
        inputs: Vec::new(),
        out_dir: PathBuf::from("docs/img"),
        metric: "net".into(),
        size: None,
        device: None,
        font: std::env::var_os("CLAYOUT_PLOT_FONT").map(PathBuf::from),
        no_text: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--out-dir" => o.out_dir = val().into(),
            "--metric" => o.metric = val(),
            "--size" => o.size = Some(val()),
            "--device" => o.device = Some(val()),
            "--font" => o.font = Some(val().into()),
            "--no-text" => o.no_text = true,
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => usage(),
            _ => o.inputs.push(a.into()),
        }
    }
    if o.inputs.is_empty() || !["net", "total", "kernel"].contains(&o.metric.as_str()) {
        usage();
    }
    o
}

/// Registers a font as "sans-serif"; false when none could be loaded.
fn load_font(o: &Options) -> bool {
    if o.no_text {
        return false;
    }
    let candidates: Vec<PathBuf> = match &o.font {
        Some(f) => vec![f.clone()],
        None => FONT_CANDIDATES.iter().map(PathBuf::from).collect(),
    };
    for c in candidates {
        if let Ok(bytes) = std::fs::read(&c) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
            eprintln!("clayout-plot: {} is not a usable font", c.display());
        }
    }
    eprintln!("clayout-plot: no TrueType font found (--font FILE.ttf): the plots have no text");
    false
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Device time of a clayout run's conversions back to the host layout, in ms: the share of
/// `marshal_device_ns` they take by count (both directions move the same bytes at about the
/// same speed). Zero for runs without clayout.
fn to_host_ms(r: &Value) -> f64 {
    let n = |k: &str| r.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
    let (to_dev, to_host, ns) = (n("to_device_layout"), n("to_host_layout"), n("marshal_device_ns"));
    if to_dev + to_host == 0.0 {
        0.0
    } else {
        ns * to_host / (to_dev + to_host) / 1e6
    }
}

/// sample -> variant -> iterations -> times (ms)
type Table = BTreeMap<String, BTreeMap<String, BTreeMap<u64, Vec<f64>>>>;

fn read_records(o: &Options) -> (Table, BTreeMap<String, String>) {
    let mut table = Table::new();
    let mut info: BTreeMap<String, String> = BTreeMap::new();
    let key = if o.metric == "total" { "total_ms" } else { "kernel_ms" };
    for input in &o.inputs {
        let text = std::fs::read_to_string(input).unwrap_or_else(|e| {
            eprintln!("clayout-plot: cannot read {}: {e}", input.display());
            exit(1)
        });
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            eprintln!("clayout-plot: {} is not JSON: {e}", input.display());
            exit(1)
        });
        for r in v.as_array().map(|a| a.as_slice()).unwrap_or(&[]) {
            let s = |k: &str| r.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            if s("status") != "ok" {
                continue;
            }
            if let Some(want) = &o.size {
                if &s("size") != want {
                    continue;
                }
            }
            if let Some(want) = &o.device {
                if !s("device").contains(want.as_str()) {
                    continue;
                }
            }
            let (Some(iters), Some(mut ms)) =
                (r.get("iters").and_then(|x| x.as_u64()), r.get(key).and_then(|x| x.as_f64()))
            else {
                continue;
            };
            if o.metric == "net" {
                ms += to_host_ms(r);
            }
            let sample = s("sample");
            let tag = format!("{} on {}", s("size"), s("device"));
            let prev = info.entry(sample.clone()).or_insert_with(|| tag.clone());
            if *prev != tag && !prev.contains(" + ") {
                eprintln!(
                    "clayout-plot: {sample}: records of several sizes or devices ({prev}; {tag}): \
                     pick one with --size / --device"
                );
                *prev = format!("{prev} + {tag}");
            }
            table
                .entry(sample)
                .or_default()
                .entry(s("variant"))
                .or_default()
                .entry(iters)
                .or_default()
                .push(ms.max(1e-6));
        }
    }
    (table, info)
}

/// variant -> [(iterations, speedup)] against the AoS baseline at the same iteration count.
fn speedups(
    variants: &BTreeMap<String, BTreeMap<u64, Vec<f64>>>,
) -> Vec<(&'static str, &'static str, RGBColor, Vec<(u64, f64)>)> {
    let Some(base) = variants.get("aos") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &(name, label, color) in SERIES {
        let Some(v) = variants.get(name) else { continue };
        let pts: Vec<(u64, f64)> = v
            .iter()
            .filter_map(|(it, times)| {
                let b = base.get(it)?;
                Some((*it, median(b.clone()) / median(times.clone())))
            })
            .collect();
        if !pts.is_empty() {
            out.push((name, label, color, pts));
        }
    }
    out
}

fn draw(
    path: &Path,
    sample: &str,
    info: &str,
    metric: &str,
    series: &[(&str, &str, RGBColor, Vec<(u64, f64)>)],
    text: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let xs = series.iter().flat_map(|s| s.3.iter().map(|p| p.0 as f64));
    let (xmin, xmax) = xs.fold((f64::MAX, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    let (xmin, xmax) = (xmin.max(1.0) / 1.3, xmax.max(xmin.max(1.0) * 2.0) * 1.3);
    let ymax = series.iter().flat_map(|s| s.3.iter().map(|p| p.1)).fold(1.0f64, f64::max) * 1.15;
    let mut b = ChartBuilder::on(&root);
    b.margin(20);
    if text {
        b.caption(format!("{sample}: net speedup over plain AoS ({metric} time; {info})"), ("sans-serif", 20))
            .x_label_area_size(50)
            .y_label_area_size(60);
    } else {
        b.x_label_area_size(2).y_label_area_size(2);
    }
    let mut chart = b.build_cartesian_2d((xmin..xmax).log_scale(), 0f64..ymax)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("iterations")
            .y_desc(format!("AoS {metric} time / variant {metric} time"))
            .x_label_formatter(&|v| format!("{}", v.round()))
            .y_label_formatter(&|v| format!("{v:.1}"))
            .label_style(("sans-serif", 15))
            .light_line_style(BLACK.mix(0.04))
            .draw()?;
    } else {
        // No font: a grid drawn by hand (plotters' mesh would draw labels), a line at every
        // whole speedup and at every iteration count that was measured.
        let grid = BLACK.mix(0.15).stroke_width(1);
        let mut y = 0.5;
        while y < ymax {
            chart.draw_series(LineSeries::new(vec![(xmin, y), (xmax, y)], grid))?;
            y += 0.5;
        }
        for x in series.iter().flat_map(|s| s.3.iter().map(|p| p.0 as f64)) {
            chart.draw_series(LineSeries::new(vec![(x, 0.0), (x, ymax)], grid))?;
        }
        chart.plotting_area().draw(&Rectangle::new([(xmin, 0.0), (xmax, ymax)], BLACK.stroke_width(1)))?;
    }
    // The break-even line: below it the variant is slower than the plain program.
    chart.draw_series(LineSeries::new(vec![(xmin, 1.0), (xmax, 1.0)], BLACK.mix(0.6).stroke_width(1)))?;
    for (_, label, color, pts) in series {
        let color = *color;
        let line: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x as f64, y)).collect();
        let s = chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(3)))?;
        if text {
            s.label(*label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3)));
        }
        chart.draw_series(line.iter().map(|&p| Circle::new(p, 5, color.filled())))?;
    }
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .label_font(("sans-serif", 15))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

fn main() {
    let o = parse_args();
    let text = load_font(&o);
    let (table, info) = read_records(&o);
    if table.is_empty() {
        eprintln!("clayout-plot: no successful records in the input");
        exit(1);
    }
    std::fs::create_dir_all(&o.out_dir).unwrap_or_else(|e| {
        eprintln!("clayout-plot: cannot create {}: {e}", o.out_dir.display());
        exit(1)
    });
    let mut failed = false;
    for (sample, variants) in &table {
        let series = speedups(variants);
        let tag = info.get(sample).cloned().unwrap_or_default();
        println!("### {sample} ({tag}; {} time)\n", o.metric);
        if series.is_empty() {
            println!("(no AoS baseline or no other variant: nothing to compare)\n");
            continue;
        }
        let path = o.out_dir.join(format!("{sample}-speedup.png"));
        match draw(&path, sample, &tag, &o.metric, &series, text) {
            Ok(()) => eprintln!("clayout-plot: wrote {}", path.display()),
            Err(e) => {
                eprintln!("clayout-plot: cannot draw {}: {e}", path.display());
                failed = true;
            }
        }
        // Markdown: AoS time, then each variant's time and speedup, per iteration count.
        let base = &variants["aos"];
        let mut head = format!("| iterations | AoS {} ms |", o.metric);
        let mut rule = String::from("| ---: | ---: |");
        for (name, label, color, _) in &series {
            head += &format!(" {label} ({name}, #{:02x}{:02x}{:02x}) ms | speedup |", color.0, color.1, color.2);
            rule += " ---: | ---: |";
        }
        println!("{head}\n{rule}");
        for (it, times) in base {
            let b = median(times.clone());
            let mut row = format!("| {it} | {b:.2} |");
            for (name, _, _, _) in &series {
                match variants.get(*name).and_then(|v| v.get(it)) {
                    Some(t) => {
                        let t = median(t.clone());
                        row += &format!(" {t:.2} | {:.2}x |", b / t);
                    }
                    None => row += " – | – |",
                }
            }
            println!("{row}");
        }
        println!("\n![{sample} speedup](img/{sample}-speedup.png)\n");
    }
    if failed {
        exit(1);
    }
}

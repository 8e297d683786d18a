//! roofline.svg: log-log roofline with the memory roof, the FP32 and FP16 compute roofs and
//! their ridge points, one circle per measured kernel sized by its share of time, each with a
//! `<title>` naming it; the largest ones numbered with their rank in kernels.md, a legend, and
//! GFLOP/s on the axis as in kernels.md's roofline table. Hand-written and deterministic: same
//! data, same bytes.

use std::fmt::Write;

use crate::findings::document::{Decided, Peaks};

const W: f64 = 760.0;
const H: f64 = 500.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

struct Axes {
    x: (f64, f64),
    y: (f64, f64),
}

impl Axes {
    fn px(&self, ai: f64) -> f64 {
        LEFT + (ai.log10() - self.x.0) / (self.x.1 - self.x.0) * (W - LEFT - RIGHT)
    }
    fn py(&self, flops: f64) -> f64 {
        H - BOTTOM - (flops.log10() - self.y.0) / (self.y.1 - self.y.0) * (H - TOP - BOTTOM)
    }
    /// A circle's centre, kept inside the plot with its whole radius.
    fn inside(&self, ai: f64, flops: f64, r: f64) -> (f64, f64) {
        (
            self.px(ai).clamp(LEFT + r, W - RIGHT - r),
            self.py(flops).clamp(TOP + r, H - BOTTOM - r),
        )
    }
}

/// A power of ten as a reader writes it: 0.01, 1, 1,000; 1e-4 and 1e7 beyond that.
fn tick(e: i32) -> String {
    match e {
        -3..=-1 => format!("{:.*}", (-e) as usize, 10f64.powi(e)),
        0..=6 => thousands(10f64.powi(e)),
        _ => format!("1e{e}"),
    }
}

/// Kernels numbered on the chart (the largest shares; the rest have their `<title>` only).
const NUMBERED: usize = 10;

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn roofline_svg(a: &Decided, peaks: &Peaks) -> String {
    // (rank, name, intensity, flop/s, share of time in %)
    let mut pts: Vec<(usize, String, f64, f64, f64)> = Vec::new();
    let mut undrawn = 0;
    for r in a
        .tables
        .kernels
        .iter()
        .chain(a.tables.ncu_kernels)
        .filter(|r| r.ncu_instances > 0)
    {
        match a.point(r) {
            Some(p) if p.flops() > 0.0 && p.dram_bytes_per_s > 0.0 => pts.push((
                r.rank,
                a.kernel_label(&r.name),
                p.intensity().unwrap_or(0.0),
                p.flops(),
                r.gpu_time_pct.unwrap_or(0.0),
            )),
            _ => undrawn += 1,
        }
    }
    let top = peaks
        .fp16_flops
        .max(peaks.fp32_flops)
        .max(peaks.tensor_flops.unwrap_or(0.0));
    let ridge16 = top / peaks.dram_bytes_per_s;
    let lo_ai = pts.iter().map(|p| p.2).fold(ridge16 / 1e4, f64::min);
    let hi_ai = pts.iter().map(|p| p.2).fold(ridge16 * 20.0, f64::max);
    let lo_f = pts.iter().map(|p| p.3).fold(top / 1e6, f64::min);
    let axes = Axes {
        x: (lo_ai.log10().floor(), hi_ai.log10().ceil()),
        y: (lo_f.log10().floor(), (top * 2.0).log10().ceil()),
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">Roofline, run {}</text>"#,
        W / 2.0,
        xml(a.facts.run_id)
    );
    grid(&mut s, &axes);
    // The memory roof up to the highest compute roof, then each compute roof from its ridge.
    let mem_start = 10f64
        .powf(axes.x.0)
        .max(10f64.powf(axes.y.0) / peaks.dram_bytes_per_s);
    line(
        &mut s,
        &axes,
        (mem_start, mem_start * peaks.dram_bytes_per_s),
        (ridge16, top),
        "#444",
        "",
    );
    // Labels: FP32 under its roof, FP16 above, so the two never overlap.
    for (label, peak, dash, dy) in [
        ("FP32", peaks.fp32_flops, "", 15.0),
        ("FP16 (non-tensor)", peaks.fp16_flops, "6,4", -5.0),
        (
            "BF16 tensor",
            peaks.tensor_flops.unwrap_or(0.0),
            "2,3",
            -5.0,
        ),
    ] {
        if peak <= 0.0 {
            continue;
        }
        let ridge = peak / peaks.dram_bytes_per_s;
        let x_end = 10f64.powf(axes.x.1);
        line(&mut s, &axes, (ridge, peak), (x_end, peak), "#444", dash);
        halo_text(
            &mut s,
            (axes.px(x_end) - 4.0, axes.py(peak) + dy),
            "end",
            12,
            &format!(
                "{label} {} GFLOP/s (ridge {ridge:.1} FLOP/byte)",
                thousands(peak / 1e9)
            ),
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" transform="rotate(-38 {:.1} {:.1})">DRAM {:.2} TB/s</text>"#,
        axes.px(mem_start * 3.0),
        axes.py(mem_start * 3.0 * peaks.dram_bytes_per_s) - 6.0,
        axes.px(mem_start * 3.0),
        axes.py(mem_start * 3.0 * peaks.dram_bytes_per_s) - 6.0,
        peaks.dram_bytes_per_s / 1e12
    );
    let mut by_share: Vec<usize> = (0..pts.len()).collect();
    by_share.sort_by(|&i, &j| pts[j].4.total_cmp(&pts[i].4).then(pts[i].0.cmp(&pts[j].0)));
    let numbered: Vec<usize> = by_share.into_iter().take(NUMBERED).collect();
    // Number labels placed so far (x, y), to move a label down past one it would cover.
    let mut placed: Vec<(f64, f64)> = Vec::new();
    for (i, (rank, name, ai, flops, share)) in pts.iter().enumerate() {
        let r = 3.0 + 14.0 * (share / 100.0).sqrt();
        let (cx, cy) = axes.inside(*ai, *flops, r);
        let _ = writeln!(
            s,
            r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="#1f77b4" fill-opacity="0.55" stroke="#0b3c5d"><title>#{rank} {}: {:.3} FLOP/byte, {:.2} GFLOP/s, {:.1}% of kernel time</title></circle>"##,
            xml(name),
            ai,
            flops / 1e9,
            share
        );
        if numbered.contains(&i) {
            // Right of the circle, or left of it near the right edge; a white halo keeps the
            // number readable over the roofs.
            let (x, anchor) = if cx + r + 24.0 < W - RIGHT {
                (cx + r + 2.0, "start")
            } else {
                (cx - r - 2.0, "end")
            };
            let mut y = cy + 4.0;
            while placed
                .iter()
                .any(|(px, py)| (px - x).abs() < 18.0 && (py - y).abs() < 11.0)
            {
                y += 11.0;
            }
            placed.push((x, y));
            halo_text(&mut s, (x, y), anchor, 11, &rank.to_string());
        }
    }
    legend(&mut s, numbered.len(), pts.len());
    if undrawn > 0 {
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="{:.1}" fill="#666">{undrawn} measured kernels with no floating-point work or no DRAM traffic are not drawn.</text>"##,
            H - 8.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Text over a white outline of itself, so it stays readable where it crosses a line (drawn as
/// two elements: not every renderer knows `paint-order`).
fn halo_text(s: &mut String, (x, y): (f64, f64), anchor: &str, size: u32, text: &str) {
    for paint in [r#"stroke="white" stroke-width="3" fill="white""#, ""] {
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" {paint}>{}</text>"#,
            xml(text)
        );
    }
}

fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What the marks mean, in the plot's bottom-right corner (high intensity at low FLOP/s: a
/// region kernels rarely reach, and away from the roofs' labels).
fn legend(s: &mut String, numbered: usize, drawn: usize) {
    let lines = [
        "circle: a kernel ncu measured, area ~ its share of time".to_string(),
        format!("number: its rank in kernels.md ({numbered} largest of {drawn})"),
        "solid: DRAM and FP32 roofs; dashed: FP16; dotted: BF16 tensor".to_string(),
    ];
    let height = 8.0 + 15.0 * lines.len() as f64;
    let (x, y) = (W - RIGHT - 398.0, H - BOTTOM - 8.0 - height);
    let _ = writeln!(
        s,
        r##"<rect x="{x}" y="{y}" width="390" height="{height}" fill="white" fill-opacity="0.85" stroke="#999"/>"##
    );
    for (i, l) in lines.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            x + 6.0,
            y + 16.0 + 15.0 * i as f64,
            xml(l)
        );
    }
}

fn grid(s: &mut String, axes: &Axes) {
    let (x0, x1, y0, y1) = (LEFT, W - RIGHT, TOP, H - BOTTOM);
    let _ = writeln!(
        s,
        r##"<rect x="{x0}" y="{y0}" width="{:.1}" height="{:.1}" fill="none" stroke="#000"/>"##,
        x1 - x0,
        y1 - y0
    );
    for e in axes.x.0 as i32..=axes.x.1 as i32 {
        let x = axes.px(10f64.powi(e));
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ddd"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            y1 + 16.0,
            tick(e)
        );
    }
    for e in axes.y.0 as i32..=axes.y.1 as i32 {
        let y = axes.py(10f64.powi(e));
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/>"##
        );
        // FLOP/s on the scale, GFLOP/s on the label (as kernels.md's table).
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            y + 4.0,
            tick(e - 9)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">arithmetic intensity (FLOP per DRAM byte)</text>"#,
        (x0 + x1) / 2.0,
        H - 22.0
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">achieved GFLOP/s</text>"#,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0
    );
}

fn line(s: &mut String, axes: &Axes, from: (f64, f64), to: (f64, f64), color: &str, dash: &str) {
    let dash = if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    };
    let _ = writeln!(
        s,
        r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"{dash}/>"#,
        axes.px(from.0),
        axes.py(from.1),
        axes.px(to.0),
        axes.py(to.1)
    );
}

/// `roofline.svg`.
pub(crate) struct RooflineSvg;

impl super::Output for RooflineSvg {
    fn file(&self) -> &'static str {
        "roofline.svg"
    }
    fn render(&self, a: &Decided) -> Option<String> {
        a.tables.peaks.map(|p| roofline_svg(a, p))
    }
}

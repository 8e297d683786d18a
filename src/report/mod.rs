//! Reports: the analysis of a run directory rendered as kernels.md, stakeholder_summary.md,
//! kernels.csv, ranges.csv, summary.json and roofline.svg. `stage2 report` calls the same code on a finished
//! run, offline.

mod csv;
pub(crate) mod diff;
mod footnotes;
mod json;
mod ledger;
mod markdown;
mod ops;
mod phrase;
mod ranges_csv;
mod sampled;
mod stakeholder;
mod svg;
mod tokens;

use crate::error::Error;
use crate::findings::document::Decided;
use crate::rundir::RunDir;

/// One output file of a run, rendered from the decided document (hyperfine's `export/`
/// shape): each renderer file implements it once.
pub(crate) trait Output {
    /// The file's name in the run directory.
    fn file(&self) -> &'static str;
    /// Its text, or None when the run has nothing for it (no roofline without ncu peaks) or
    /// writes it as it is made ([`Output::stream`]).
    fn render(&self, _d: &Decided) -> Option<String> {
        None
    }
    /// A file too large to hold whole (summary.json): its text written as it is made; false
    /// when there is none.
    fn stream(&self, _d: &Decided, _w: &mut dyn std::io::Write) -> std::io::Result<bool> {
        Ok(false)
    }
}

/// Every output, in the order they are written.
const OUTPUTS: &[&dyn Output] = &[
    &markdown::KernelsMd,
    &stakeholder::StakeholderMd,
    &csv::KernelsCsv,
    &ranges_csv::RangesCsv,
    &svg::RooflineSvg,
    &json::SummaryJson,
];

/// The file names of every report, in the order they are written.
pub(crate) fn file_names() -> impl Iterator<Item = &'static str> {
    OUTPUTS.iter().map(|o| o.file())
}

/// Write every report of a decided document into the run directory.
pub(crate) fn write_all(run: &RunDir, d: &Decided) -> Result<(), Error> {
    for out in OUTPUTS {
        let path = run.file(out.file());
        let written = match out.render(d) {
            Some(text) => crate::rundir::status::write_atomic(&path, text.as_bytes()),
            None => crate::rundir::status::write_atomic_with(&path, |w| out.stream(d, w)),
        };
        written.map_err(|e| Error::io("write", path, e))?;
    }
    Ok(())
}

/// Kernel labels for one table of a run: tagged where the run holds another kernel of the same
/// display name (see [`crate::model::labels_in`]), so every table names a kernel alike.
pub(crate) fn run_labels<'a>(
    a: &'a Decided<'a>,
    names: impl Iterator<Item = &'a str> + Clone,
    width: usize,
) -> Vec<String> {
    let universe = a
        .tables
        .kernels
        .iter()
        .chain(a.tables.ncu_kernels)
        .map(|r| r.name.as_str());
    crate::model::labels_in(names, universe, width)
}

/// Formatting shared by the renderers.
pub(crate) mod fmt {
    /// Sums of no floats are -0.0 in Rust; a report never shows "-0.0".
    fn z(x: f64) -> f64 {
        if x == 0.0 {
            0.0
        } else {
            x
        }
    }
    pub(crate) fn us(ns: f64) -> String {
        format!("{:.2}", z(ns / 1e3))
    }
    pub(crate) fn ms(ns: f64) -> String {
        format!("{:.2}", z(ns / 1e6))
    }
    /// A duration in the unit that keeps it short: us under a millisecond, ms from one.
    pub(crate) fn dur(ns: f64) -> String {
        match ns.abs() < 1e6 {
            true => format!("{} us", us(ns)),
            false => format!("{} ms", ms(ns)),
        }
    }
    pub(crate) fn pct(p: f64) -> String {
        format!("{:.1}%", z(p))
    }
    pub(crate) fn opt1(v: Option<f64>) -> String {
        v.map(|x| format!("{x:.1}"))
            .unwrap_or_else(|| "–".to_string())
    }
    /// ncu's class, else the class sampled by nsys marked so with its coverage (and the rank
    /// sampled, under a launcher), else why the samples give none where its launches are too
    /// short for them, else "–".
    pub(crate) fn bound_cell(r: &crate::model::KernelRecord) -> String {
        let sampled = r.sampled.as_ref();
        let short = sampled.and_then(|k| k.all.short);
        match (
            r.bound,
            sampled.and_then(|k| k.all.bound.map(|b| (k, b))),
            short,
        ) {
            (Some(b), _, _) => b.label().to_string(),
            (None, Some((k, b)), _) => {
                let covered = pct(k.all.coverage_pct);
                match k.rank {
                    Some(rank) => {
                        format!("{} (sampled on rank {rank}, {covered} covered)", b.label())
                    }
                    None => format!("{} (sampled, {covered} covered)", b.label()),
                }
            }
            (None, None, Some(x)) => {
                let whose = match sampled.and_then(|k| k.rank) {
                    Some(rank) => format!("sampled on rank {rank}"),
                    None => "sampled".to_string(),
                };
                format!(
                    "not classed ({whose}: {})",
                    super::phrase::short_launches(&x)
                )
            }
            (None, None, None) => "–".to_string(),
        }
    }
    /// Escape a name for a Markdown table cell: `|`, `<`, `>` and the characters that start
    /// emphasis, code or links, and a `(` that would read as a cited source (the summary
    /// footnotes only the sources it put there itself).
    pub(crate) fn md(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        // The `)` of an escaped `(` too, or it would close a group around the name.
        let mut escaped = 0;
        for (i, c) in s.char_indices() {
            match c {
                '(' if super::footnotes::opens_source(&s[i + 1..]) => {
                    escaped += 1;
                    out.push_str("\\(");
                }
                ')' if escaped > 0 => {
                    escaped -= 1;
                    out.push_str("\\)");
                }
                '|' => out.push_str("\\|"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '*' | '`' | '[' | ']' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                '\n' | '\r' => out.push(' '),
                // A name from the workload cannot drive a terminal that shows the file.
                c if c.is_control() => out.extend(c.escape_unicode()),
                _ => out.push(c),
            }
        }
        out
    }
    /// The sentence with its first letter upper-case.
    pub(crate) fn capitalise(s: &str) -> String {
        let mut c = s.chars();
        match c.next() {
            Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
            None => String::new(),
        }
    }
    /// A name cut to `width` characters (on a char boundary), marked when cut.
    pub(crate) fn cut(s: &str, width: usize) -> String {
        if s.chars().count() <= width {
            s.to_string()
        } else {
            let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
            t.push('…');
            t
        }
    }
}

/// The sentence saying the two passes ran at once, on which GPUs (None: one after the
/// other).
pub(crate) fn second_gpu_note(a: &Decided) -> Option<String> {
    let g = a.second_gpu()?;
    Some(format!(
        "the ncu pass ran on GPU {} while the nsys pass ran on GPU {}, both {} (`ncu.second_gpu`; status.json `passes.ncu.ncu.second_gpu`)",
        fmt::md(&g.ncu),
        fmt::md(&g.nsys),
        fmt::md(&g.model)
    ))
}

#[cfg(test)]
mod tests;

/// A run whose profilers were test doubles says so before any figure: every figure is the
/// recorded capture's, whatever the workload did (env.json `tools.*.replay`).
pub(crate) fn replay_note(a: &Decided) -> Option<String> {
    let tools = a.replayed_tools();
    (!tools.is_empty()).then(|| {
        format!(
            "**Replayed capture:** {} in this run {} stage2's test double{}: {} ran the workload, then replayed a recorded capture, so every figure below is that capture's, not this workload's (env.json, `tools.*.replay`).\n",
            tools.join(" and "),
            if tools.len() == 1 { "was" } else { "were" },
            if tools.len() == 1 { "" } else { "s" },
            if tools.len() == 1 { "it" } else { "they" },
        )
    })
}

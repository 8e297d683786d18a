//! The PyTorch operators table (kernels.md and the stakeholder summary's Operators section).

use std::fmt::Write;

use super::fmt::md;
use crate::findings::document::Decided;

/// The `rows` operators with the most GPU time; nothing when the run has no operator ranges.
pub(crate) fn table(a: &Decided, s: &mut String, rows: usize) {
    if a.tables.operators.is_empty() {
        return;
    }
    let gpu: i64 = a.tables.operators.iter().map(|o| o.gpu_ns).sum();
    let _ = writeln!(
        s,
        "PyTorch operators ({} distinct, from their NVTX ranges; {}), over every operator call in the capture ({}): calls, CPU time on their own (nested operators taken out), the GPU time of the kernels launched while each was the innermost operator ({:.2} ms in all), the input shapes of most calls, and the top kernels.\n",
        a.tables.operators.len(),
        a.facts.sqlite_file,
        super::phrase::capture_held(a),
        gpu as f64 / 1e6
    );
    let _ = writeln!(
        s,
        "| operator | calls | CPU self (ms) | GPU (ms) | GPU share | kernels | input shapes (calls) | top kernels |\n|---|--:|--:|--:|--:|--:|---|---|"
    );
    let width = a.layout.name_width;
    for o in a.tables.operators.iter().take(rows) {
        let shapes = o
            .shapes
            .as_ref()
            .map(|(sh, n)| format!("{} ({n})", md(&super::fmt::cut(sh, 60))))
            .unwrap_or_else(|| "–".into());
        let kernels = o
            .top_kernels
            .iter()
            .map(|(k, ns)| {
                format!(
                    "{} {:.3} ms",
                    md(&super::fmt::cut(k, width)),
                    *ns as f64 / 1e6
                )
            })
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {:.3} | {:.1}% | {} | {} | {} |",
            md(&o.op),
            o.calls,
            o.self_cpu_ns as f64 / 1e6,
            o.gpu_ns as f64 / 1e6,
            100.0 * o.gpu_ns as f64 / gpu.max(1) as f64,
            o.kernels,
            shapes,
            if kernels.is_empty() {
                "–".into()
            } else {
                kernels
            }
        );
    }
    if a.tables.operators.len() > rows {
        let _ = writeln!(
            s,
            "\n{} more in summary.json (`operators`).",
            a.tables.operators.len() - rows
        );
    }
    s.push('\n');
}

//! kernels.md's ledger section: where each push/pop range's wall time goes on its CPU thread,
//! per range and, compactly, per instance of the step range.

use std::fmt::Write;

use super::fmt::md;
use crate::findings::document::{Decided, Parts, RangeLedger};

/// Instances listed in the per-step table.
const STEPS_SHOWN: usize = 16;

fn share(ns: i64, wall: i64) -> String {
    if wall > 0 {
        format!("{:.1}%", 100.0 * ns as f64 / wall as f64)
    } else {
        "–".into()
    }
}

/// One row's cells; the compile/load cell only where the run compiled code (`compile`).
fn row(p: &Parts, compile: bool) -> String {
    let c = match compile {
        true => format!(" | {}", share(p.compile_ns, p.wall_ns)),
        false => String::new(),
    };
    format!(
        "{:.2} | {} | {} | {}{c} | {} | {}",
        p.wall_ns as f64 / 1e6,
        share(p.sync_ns, p.wall_ns),
        share(p.launch_ns, p.wall_ns),
        share(p.other_api_ns, p.wall_ns),
        share(p.children_ns, p.wall_ns),
        share(p.rest_ns, p.wall_ns)
    )
}

/// Whether any range compiled or loaded code (the ledger's compile/load column).
fn compiled(a: &Decided) -> bool {
    a.tables.ledger.iter().any(|l| l.total.compile_ns > 0)
}

/// The header cells from `wall` on, and their alignment row.
fn header(compile: bool) -> (&'static str, &'static str) {
    match compile {
        true => (
            "wall (ms) | sync | launch | other CUDA | compile/load | child ranges | rest",
            "--:|--:|--:|--:|--:|--:|--:",
        ),
        false => (
            "wall (ms) | sync | launch | other CUDA | child ranges | rest",
            "--:|--:|--:|--:|--:|--:",
        ),
    }
}

pub(crate) fn section(a: &Decided, s: &mut String) {
    if a.tables.ledger.is_empty() {
        return;
    }
    let compile = compiled(a);
    let _ = writeln!(
        s,
        "\n## Where the wall time goes (CPU thread, `{}`)\n\nPer push/pop range, its wall time on its thread: CUDA calls that wait for the GPU (sync: synchronize, blocking memcpy/memset), kernel launch calls, other CUDA calls,{} nested child ranges, and the rest (the thread's own work outside CUDA calls: Python, the framework). Each call counts once, in the innermost range open when it ran; the parts add up to the wall time. Start/end ranges have no thread and are left out.\n",
        a.facts.sqlite_file,
        if compile {
            " code compiled and loaded for kernels' first use (compile/load: the CPU time since the thread's previous CUDA call that ends in a module or library load, and the load),"
        } else {
            ""
        }
    );
    let (cells, align) = header(compile);
    let _ = writeln!(s, "| range | instances | {cells} | largest part |");
    let _ = writeln!(s, "|---|--:|{align}|---|");
    let (rows, left) = a
        .listed
        .split(a.tables.ledger, |l| &l.name, |l| l.total.wall_ns);
    for l in rows {
        let (what, ns) = l.dominant();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} ({}){} |",
            md(&l.name),
            l.instances,
            row(&l.total, compile),
            md(&what),
            share(ns, l.total.wall_ns),
            if l.conserved {
                ""
            } else {
                "; parts exceed the wall time in some instance (overlapping data)"
            }
        );
    }
    if let Some(l) = left {
        let _ = writeln!(s, "\n{}", super::phrase::ranges_left_out(&l, "wall time"));
    }
    python(a, s);
    steps(a, s);
    gpu(a, s);
}

/// Where each range's own time went in Python, from the hook's stack samples.
fn python(a: &Decided, s: &mut String) {
    let Some(p) = &a.tables.python else { return };
    let hz = a.facts.python_sampling_hz;
    let _ = writeln!(
        s,
        "\nPython samples (`nsys/pysamples.<pid>.txt`, {} samples from {} process(es){}), each counted in the innermost range open on its thread: that range's own time. The innermost function of each sample, and the functions on its stack (each once per sample). A verdict names a function only from {} samples on.\n",
        p.samples,
        p.files,
        if hz > 0.0 { format!(" at {hz} Hz") } else { String::new() },
        crate::rules::PYTHON_MIN_SAMPLES
    );
    if !p.unaligned.is_empty() {
        let _ = writeln!(
            s,
            "Samples of process(es) {:?} could not be placed: no `stage2:clock` mark of theirs is in the capture.\n",
            p.unaligned
        );
    }
    if p.ranges.is_empty() {
        let _ = writeln!(s, "No sample fell inside a captured push/pop range.");
        return;
    }
    let _ = writeln!(
        s,
        "| range | samples | innermost functions | on the stack |\n|---|--:|---|---|"
    );
    let list = |v: &[(String, u64)], n: u64| {
        v.iter()
            .take(4)
            .map(|(f, c)| format!("{} {}", md(f), share(*c as i64, n as i64)))
            .collect::<Vec<_>>()
            .join("<br>")
    };
    for e in &p.ranges {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            md(&e.range),
            e.samples,
            list(&e.leaf, e.samples),
            list(&e.on_stack, e.samples)
        );
    }
}

/// The GPU side of each range: its projection split into kernels running (union), other work
/// only (memcpy/memset with no kernel running), and idle gaps between its work.
fn gpu(a: &Decided, s: &mut String) {
    if a.tables.ranges.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nGPU side, over each range's GPU projection (first start to last end of the work it launched, summed over instances): kernels running (union of kernel intervals), memcpy/memset only, and idle gaps between its work; the three add up to the projection.\n\n| range | projection (ms) | kernels running | memcpy/memset only | idle | idle gaps | largest gap (us) |\n|---|--:|--:|--:|--:|--:|--:|"
    );
    let (rows, left) = a.listed.split(a.tables.ranges, |r| &r.name, |r| r.proj_ns);
    for r in rows {
        let other = (r.proj_ns - r.busy_ns - r.idle_ns).max(0);
        let _ = writeln!(
            s,
            "| {} | {:.2} | {} | {} | {} | {} | {:.1} |",
            md(&r.name),
            r.proj_ns as f64 / 1e6,
            share(r.busy_ns, r.proj_ns),
            share(other, r.proj_ns),
            share(r.idle_ns, r.proj_ns),
            r.idle_gaps,
            r.largest_gap_ns as f64 / 1e3
        );
    }
    if let Some(l) = left {
        let _ = writeln!(
            s,
            "\n{}",
            super::phrase::ranges_left_out(&l, "GPU projection")
        );
    }
}

/// The per-instance view of the step range (report.step_range), or of the captured range.
fn steps(a: &Decided, s: &mut String) {
    let wanted = [Some(a.layout.step_range.as_str()), a.facts.focus.range()];
    let Some(l): Option<&RangeLedger> = wanted
        .iter()
        .flatten()
        .find_map(|n| a.ledger_by_name().get(n).filter(|l| l.instances > 1))
    else {
        return;
    };
    let compile = compiled(a);
    let (cells, align) = header(compile);
    let _ = writeln!(
        s,
        "\nPer instance of {} (first {} of {}):\n\n| # | {cells} |\n|--:|{align}|",
        crate::text::code(&l.name),
        STEPS_SHOWN.min(l.per_instance.len()),
        l.per_instance.len()
    );
    for (i, p) in l.per_instance.iter().take(STEPS_SHOWN).enumerate() {
        let _ = writeln!(s, "| {} | {} |", i + 1, row(p, compile));
    }
}

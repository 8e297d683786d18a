//! Findings about kernels: the kernel table's totals and top kernel, launch calls, ncu's
//! coverage on one basis, launch size (tiny kernels, grids too small for the GPU), and bound
//! classes from ncu's counters, each scoped to the range its counters were measured in.

use super::super::{Claim, Figure, Finding, Findings, Quantity, Scope};
use crate::analysis::scan::{most_time_within, time_within};
use crate::analysis::Artifacts;
use crate::model::{Bound, KernelRecord};
use crate::rules;
use crate::rundir::status::PassState;

/// The scope of the kernel table: the captured range when its rows are that range's launches
/// (from the SQLite export), else everything the capture holds.
pub(crate) fn table_scope(a: &Artifacts) -> Scope {
    match (a.focus.range(), a.kernel_table_in_range()) {
        (Some(r), true) => Scope::range(r),
        _ => Scope::capture(),
    }
}

pub(super) fn totals(a: &Artifacts, out: &mut Findings) {
    let Some(top) = a.records.first() else { return };
    let scope = table_scope(a);
    let (total, launches) = a.kernel_totals();
    let fig = |q, v| Figure::new(q, v, &a.kern_sum_file, &scope);
    out.push(
        Claim::KernelTotals,
        scope.clone(),
        None,
        vec![
            fig(Quantity::KernelTimeNs, total),
            fig(Quantity::KernelLaunches, launches as f64),
            fig(
                Quantity::DistinctKernels,
                a.records
                    .iter()
                    .filter(|r| r.gpu_time_pct.is_some())
                    .count() as f64,
            ),
        ],
    );
    if let Some(share) = top.gpu_time_pct {
        let k = scope.clone().kernel(&top.name);
        out.push(
            Claim::TopKernel {
                name: a.kernel_label(&top.name),
            },
            k.clone(),
            None,
            vec![Figure::new(
                Quantity::KernelSharePct,
                share,
                &a.kern_sum_file,
                &k,
            )],
        );
    }
}

/// Kernel-launch API calls: nsys's cuda_api_sum covers the whole capture, not one range.
pub(super) fn launch_calls(a: &Artifacts, out: &mut Findings) {
    let Some(api) = &a.api else { return };
    let launches: Vec<_> = api
        .iter()
        .filter(|c| c.name.contains("LaunchKernel"))
        .collect();
    if launches.is_empty() {
        return;
    }
    let calls: u64 = launches.iter().map(|c| c.calls).sum();
    let t: f64 = launches.iter().map(|c| c.total_ns).sum();
    let scope = Scope::capture();
    out.push(
        Claim::LaunchCalls,
        scope.clone(),
        None,
        vec![
            Figure::new(
                Quantity::LaunchApiCalls,
                calls as f64,
                &a.api_sum_file,
                &scope,
            ),
            Figure::new(Quantity::LaunchApiNs, t, &a.api_sum_file, &scope),
        ],
    );
}

/// How much work each launch carries: its duration, and its grid against the GPU's SMs. A
/// finding of launch size is added here, in the order the reports read them.
pub(super) fn launch_size(a: &Artifacts, out: &mut Findings) {
    tiny(a, out);
    grids(a, out);
}

fn tiny(a: &Artifacts, out: &mut Findings) {
    let whole = table_scope(a);
    // Graph launches whose kernels the table does not hold: its mean is not the workload's.
    let hidden = match &whole.range {
        Some(r) => a.graph_level(r).is_some(),
        None => a.graphs.values().any(|g| g.graph_level > 0) || a.graph_level("").is_some(),
    };
    // A range whose first instances are a warm-up: the steady instances' kernels and GPU busy,
    // not a mix with a compiling or graph-recording first call.
    let steady = whole
        .range
        .as_deref()
        .and_then(|r| a.steady_group(r))
        .filter(|g| g.launches > 0 && !hidden);
    let (mean, scope, busy, source) = match steady {
        Some(g) => (
            g.kernel_ns as f64 / g.launches as f64,
            whole.clone().group(&g.label).instances(g.instances),
            g.gpu_busy_of_range_pct,
            &a.sqlite_file,
        ),
        None => {
            let (total, launches) = a.kernel_totals();
            if launches == 0 {
                return;
            }
            let busy = whole
                .range
                .as_deref()
                .and_then(|name| a.range_stats.iter().find(|r| r.name == name))
                .map(|r| r.busy_of_range_pct());
            (total / launches as f64, whole, busy, &a.kern_sum_file)
        }
    };
    if mean >= rules::TINY_KERNELS.threshold {
        return;
    }
    if hidden {
        let why = "the kernel table leaves out the kernels of CUDA graphs nsys traced as whole graphs, so its mean kernel is not the workload's".to_string();
        out.0.push(Finding::abstain(
            Claim::TinyKernels {
                gpu: crate::findings::GpuUse::Unknown,
            },
            scope,
            why,
        ));
        return;
    }
    let mut ev = vec![Figure::new(Quantity::MeanKernelNs, mean, source, &scope)];
    // Whether the GPU waits between them decides what their size costs: a GPU that idles
    // gains little from faster kernels, a busy one pays each kernel's fixed start and tail.
    let gpu = match busy {
        Some(b) if b >= rules::RANGE_VERDICT.threshold => crate::findings::GpuUse::Busy,
        Some(_) => crate::findings::GpuUse::Waits,
        None => crate::findings::GpuUse::Unknown,
    };
    if let Some(b) = busy {
        ev.push(Figure::new(
            Quantity::GpuBusyOfRangePct,
            b,
            &a.sqlite_file,
            &scope,
        ));
    }
    out.push(
        Claim::TinyKernels { gpu },
        scope,
        Some(rules::TINY_KERNELS),
        ev,
    );
}

/// Launches too small to fill the GPU: the kernel table's launches of at most half as many
/// thread blocks as the GPU has SMs, where they hold enough of its time. From the export's
/// grids and its GPU's SM count, so every launch of the range counts, measured or not by ncu.
fn grids(a: &Artifacts, out: &mut Findings) {
    let (Some(g), Some(range)) = (a.small_grids(), a.focus.range()) else {
        return;
    };
    // Graph kernels nsys traced as whole graphs are not in the table, nor their grids.
    let Some(share) = g
        .share_pct
        .filter(|s| *s >= rules::SMALL_GRIDS.threshold && a.graph_level(range).is_none())
    else {
        return;
    };
    // Per kernel: its time in small launches, and the block count holding most of it.
    let mut small: Vec<(&str, i64, i64)> = a
        .kernel_blocks
        .iter()
        .filter_map(|(name, by)| {
            let ns = time_within(by, g.blocks);
            let held = most_time_within(by.iter().map(|b| (b.blocks, b.ns)), g.blocks)?;
            Some((name.as_str(), ns, held))
        })
        .collect();
    small.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let scope = table_scope(a);
    let src = &a.sqlite_file;
    let mut ev = vec![
        Figure::new(Quantity::SmallGridSharePct, share, src, &scope),
        Figure::new(Quantity::GpuSms, f64::from(g.sms), src, &scope),
    ];
    for (name, ns, blocks) in small.iter().take(rules::SMALL_GRIDS_NAMED) {
        let k = scope.clone().kernel(name);
        ev.push(Figure::new(Quantity::KernelTimeNs, *ns as f64, src, &k));
        ev.push(Figure::new(Quantity::ThreadBlocks, *blocks as f64, src, &k));
    }
    out.push(Claim::SmallGrids, scope, Some(rules::SMALL_GRIDS), ev);
}

/// Bound classes and tensor-core use of the top kernels, per table: the joined table speaks
/// of the range both tools saw; ncu's own table (another range than nsys captured) of ncu's.
pub(super) fn bounds(a: &Artifacts, out: &mut Findings) {
    let joined: Vec<&KernelRecord> = a.records.iter().take(rules::ADVICE_TOP_KERNELS).collect();
    let ncu_range = a
        .ncu_range()
        .or_else(|| a.ncu_records.first().and_then(|r| r.nvtx_range.clone()));
    // The classes rest on ncu's figures, measured in ncu's range: when the table is the whole
    // capture (several ranks' summaries) and ncu was gated, they speak of that range.
    let joined_scope = match (
        table_scope(a).range.is_none(),
        &ncu_range,
        a.ncu_records.is_empty(),
    ) {
        (true, Some(r), true) => Scope::range(r),
        _ => table_scope(a),
    };
    table_bounds(a, &joined, joined_scope, out);
    if !a.ncu_records.is_empty() {
        let own: Vec<&KernelRecord> = a
            .ncu_records
            .iter()
            .take(rules::ADVICE_TOP_KERNELS)
            .collect();
        table_bounds(a, &own, Scope::of(ncu_range.as_deref()), out);
    }
    // Under a launcher the samples are one rank's launches.
    let sampled = match a.sampled.as_ref().and_then(|s| s.rank) {
        Some(rank) => table_scope(a).rank(rank),
        None => table_scope(a),
    };
    super::sampled::bounds(a, &joined, sampled.clone(), out);
    super::sampled::window(a, sampled.clone(), out);
    super::sampled::disagreements(a, sampled, out);
    replays(a, &joined, table_scope(a), out);
    if let Some(claim) = a.ncu.is_none().then(|| no_ncu(a)).flatten() {
        out.push(claim, Scope::capture(), None, vec![]);
    }
}

/// Why the run has no ncu figures, where no other finding says it: ncu not asked for, or
/// asked and measuring nothing without failing (its reason). A pass that failed says why in
/// its own finding (`pass_incomplete`), and one that ran is not advised to be run.
fn no_ncu(a: &Artifacts) -> Option<Claim> {
    let asked = |why: Option<&String>| Claim::NoNcuMetrics {
        why: Some(
            why.map_or("it measured no kernel", |w| w.lines().next().unwrap_or(w))
                .to_string(),
        ),
    };
    match a.status.as_ref().and_then(|s| s.passes.get("ncu")) {
        None => Some(Claim::NoNcuMetrics { why: None }),
        Some(p) if p.exit_code != 0 => None,
        Some(p) if p.state == PassState::Skipped && !a.config.ncu.enable => {
            Some(Claim::NoNcuMetrics { why: None })
        }
        Some(p) => Some(asked(p.reason.as_ref())),
    }
}

fn table_bounds(a: &Artifacts, top: &[&KernelRecord], scope: Scope, out: &mut Findings) {
    let ncu = scope.clone().ncu();
    let fig =
        |q, v, r: &KernelRecord| Figure::new(q, v, &a.ncu_csv_file, &ncu.clone().kernel(&r.name));
    let with = |b: Bound| top.iter().filter(move |r| r.bound == Some(b));
    let mem: Vec<Figure> = with(Bound::Memory)
        .filter_map(|r| Some(fig(Quantity::DramThroughputPct, r.dram_throughput_pct?, r)))
        .collect();
    if !mem.is_empty() {
        let kernels = with(Bound::Memory)
            .map(|r| a.kernel_label(&r.name))
            .collect();
        // Kernels that issue tensor-core operations multiply matrices: their bytes are mostly
        // weights. The others (element-wise, reductions, copies) move activations.
        let matmul = with(Bound::Memory)
            .filter(|r| a.point(r).is_some_and(|p| p.tensor_flops > 0.0))
            .count();
        let bytes_of = match (matmul, with(Bound::Memory).count() - matmul) {
            (_, 0) => crate::findings::BytesOf::MatrixProducts,
            (0, _) => crate::findings::BytesOf::Elementwise,
            _ => crate::findings::BytesOf::Both,
        };
        out.push(
            Claim::MemoryBound { kernels, bytes_of },
            scope.clone(),
            Some(rules::MEMORY_BOUND),
            mem,
        );
    }
    let ridge = a.peaks.map(|p| p.ridge_fp32());
    let mut comp = Vec::new();
    // Each compute-bound kernel's tensor-pipe use (None: it issues no tensor-core operations,
    // or ncu did not measure the pipe).
    let mut pipes: Vec<Option<f64>> = Vec::new();
    for r in with(Bound::Compute) {
        comp.extend(
            r.sm_throughput_pct
                .map(|v| fig(Quantity::SmThroughputPct, v, r)),
        );
        let point = a.point(r);
        if let Some(i) = point.and_then(|p| p.intensity()) {
            comp.push(fig(Quantity::FlopPerByte, i, r));
        }
        let pipe = point
            .filter(|p| p.tensor_flops > 0.0)
            .and_then(|p| p.tensor_pipe_pct);
        comp.extend(pipe.map(|v| fig(Quantity::TensorPipePct, v, r)));
        pipes.push(pipe);
    }
    let measured =
        with(Bound::Compute).any(|r| a.point(r).is_some_and(|p| p.tensor_pipe_pct.is_some()));
    let busy = pipes
        .iter()
        .all(|p| p.is_some_and(|v| v >= rules::TENSOR_BUSY_PCT));
    let tensor = match (measured, busy) {
        (false, _) => crate::findings::TensorUse::Unmeasured,
        (true, true) => crate::findings::TensorUse::Busy,
        (true, false) => crate::findings::TensorUse::Low,
    };
    if !comp.is_empty() {
        if let Some(ridge) = ridge {
            comp.push(Figure::new(
                Quantity::RidgeFlopPerByte,
                ridge,
                &a.ncu_csv_file,
                &ncu,
            ));
        }
        let kernels = with(Bound::Compute)
            .map(|r| a.kernel_label(&r.name))
            .collect();
        out.push(
            Claim::ComputeBound { kernels, tensor },
            scope.clone(),
            Some(rules::COMPUTE_BOUND),
            comp,
        );
    }
    let pipes: Vec<Figure> = top
        .iter()
        .filter_map(|r| {
            let p = a.point(r).filter(|p| p.tensor_flops > 0.0)?;
            Some(fig(Quantity::TensorPipePct, p.tensor_pipe_pct?, r))
        })
        .collect();
    let max = pipes.iter().map(|f| f.value).reduce(f64::max);
    if max.is_some_and(|m| m < rules::TENSOR_IDLE.threshold) {
        out.push(
            Claim::TensorCoresIdle,
            scope,
            Some(rules::TENSOR_IDLE),
            pipes,
        );
    }
}

/// Each top kernel whose mean duration in ncu's replay differs from its launches' in the range
/// beyond the rule's band, where ncu measured the configurations that hold its time (a kernel
/// measured at one of several configurations has no like-for-like duration).
fn replays(a: &Artifacts, top: &[&KernelRecord], scope: Scope, out: &mut Findings) {
    let Some(ncu) = &a.ncu else { return };
    for r in top {
        let Some(k) = r.in_report(ncu) else { continue };
        let (Some(replay), Some(cover)) = (k.time_ns, k.shape_cover_pct) else {
            continue;
        };
        let ran = r.avg_time_ns;
        if cover < rules::REPLAY_MEASURED_PCT || ran <= 0.0 {
            continue;
        }
        if (100.0 * (replay / ran - 1.0)).abs() <= rules::REPLAY_DIFFERS.threshold {
            continue;
        }
        let at = scope.clone().kernel(&r.name);
        let evidence = vec![
            Figure::new(Quantity::MeanKernelNs, ran, &a.kern_sum_file, &at),
            Figure::new(
                Quantity::MeanKernelNs,
                replay,
                &a.ncu_csv_file,
                &at.clone().ncu(),
            ),
            Figure::new(Quantity::ShapeMeasuredPct, cover, &a.sqlite_file, &at),
        ];
        out.push(
            Claim::ReplayDiffers {
                kernel: a.kernel_label(&r.name),
            },
            at,
            Some(rules::REPLAY_DIFFERS),
            evidence,
        );
    }
}

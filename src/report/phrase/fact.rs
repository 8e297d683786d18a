//! Facts phrased: the figures a run measured, said as they are (kernel totals, coverage, the
//! comparisons with NVIDIA's own summaries).

use super::*;
use crate::findings::{BudgetPlan, BudgetStop};

/// Where ncu was stopped at its time budget: the budget, the largest kernel without ncu's
/// figures, and what a re-run does about the rest.
fn budget_words(b: &crate::findings::BudgetStop, f: &Finding) -> String {
    format!(
        "; ncu was stopped at its time budget of {:.0} s ({}; status.json){}{}",
        b.s,
        md(&b.from),
        match &b.largest_left_out {
            Some(k) => format!(
                ", the largest kernel left without its figures {} ({} of the kernel time)",
                md(k),
                f.text(Q::KernelSharePct)
            ),
            None => String::new(),
        },
        match b.cached {
            true =>
                ": the metrics cache keeps what it measured, so a re-run profiles only the rest",
            false => "",
        }
    )
}

/// Where the budget afforded ncu fewer kernels than were chosen: how many, and why.
fn plan_words(b: &crate::findings::BudgetPlan) -> String {
    format!(
        "; its time budget of {:.0} s ({}; status.json) afforded the {} largest of the chosen kernels the metrics cache lacked at the pace an earlier run of this workload measured, and {} more {} left for a re-run",
        b.s,
        md(&b.from),
        b.given,
        b.deferred,
        are(b.deferred)
    )
}

pub(super) fn kernel_totals(f: &Finding, w: &str) -> String {
    format!(
        "GPU kernel time {w}: {} in {} launches of {} kernels{}",
        f.text(Q::KernelTimeNs),
        f.text(Q::KernelLaunches),
        f.text(Q::DistinctKernels),
        cite(f)
    )
}

pub(super) fn launch_calls(f: &Finding, w: &str) -> String {
    format!(
        "Kernel launch API calls {w} (nsys's cuda_api_sum counts every call it recorded, not one range's, and graph kernels need none): {}, {} of CPU time{}",
        f.text(Q::LaunchApiCalls),
        f.text(Q::LaunchApiNs),
        cite(f)
    )
}

/// "Hardware counters (ncu) measured for 18 kernels in `decode`: 96.0% of the kernel time";
/// where ncu measured in another range than the kernel time's (`measured_in`), both are named:
/// "... measured in `decode` for 18 kernels, which hold 90.1% of the kernel time in the whole
/// capture".
pub(super) fn ncu_coverage(
    f: &Finding,
    w: &str,
    (nccl_left_out, measured_in): (bool, Option<&str>),
    budget_stop: Option<&BudgetStop>,
    budget_plan: Option<&BudgetPlan>,
) -> String {
    let lead = match measured_in {
        None => format!(
            "Hardware counters (ncu) measured for {} kernels {w}: {} of the kernel time",
            f.text(Q::NcuKernelsMeasured),
            f.text(Q::NcuCoveragePct),
        ),
        Some(r) => format!(
            "Hardware counters (ncu) measured in {} for {} kernels, which hold {} of the kernel time {w}",
            super::range_name(r),
            f.text(Q::NcuKernelsMeasured),
            f.text(Q::NcuCoveragePct),
        ),
    };
    format!(
        "{lead}{}, {} left out{}{}{}",
        if nccl_left_out {
            " outside NCCL (ncu leaves NCCL kernels out)"
        } else {
            ""
        },
        f.text(Q::NcuLeftOutPct),
        budget_plan.map(plan_words).unwrap_or_default(),
        budget_stop
            .as_ref()
            .map(|b| budget_words(b, f))
            .unwrap_or_default(),
        cite(f)
    )
}

pub(super) fn measurement_cost(
    f: &Finding,
    w: &str,
    compared: u64,
    timed: u64,
    from_start: bool,
) -> String {
    let added = f.figure(Q::MeasurementAddedPct).map_or(0.0, |e| e.value);
    format!(
            "Measurement cost {w}: under nsys {} per instance; without a profiler (the baseline pass, {}) {}; the measurement added {}{}{}",
            f.text(Q::NsysMsPerInstance),
            match (compared == timed, from_start) {
                (true, _) => format!("{compared} instances"),
                (false, true) => format!("the first {compared} of the {timed} instances it timed, as nsys held"),
                (false, false) => format!("the last {compared} of the {timed} instances it timed, as many as nsys held"),
            },
            f.text(Q::BaselineMsPerInstance),
            if added >= 0.0 { "+" } else { "" },
            f.text(Q::MeasurementAddedPct),
            cite(f)
    )
}

pub(super) fn shape_coverage(f: &Finding, w: &str) -> String {
    let weighed = f.figure(Q::KernelsWeighedByShape).map_or(0.0, |e| e.value);
    format!(
        "Launch configurations {w}: the grids and blocks ncu measured hold {} of the measured kernels' time (nsys, per launch configuration){}{}",
        f.text(Q::ShapeMeasuredPct),
        match weighed > 0.0 {
            true => format!(
                "; {} measured in several {} their figures weighed by each one's time",
                count(f, Q::KernelsWeighedByShape, "kernel"),
                if weighed == 1.0 { "has" } else { "have" }
            ),
            false => String::new(),
        },
        cite(f)
    )
}

pub(super) fn nccl_time(f: &Finding) -> String {
    let mut s = format!(
        "NCCL kernels take {} of the ranks' GPU time",
        f.text(Q::NcclSharePct)
    );
    if let Some(r) = f.figure(Q::NcclWaitNs).and_then(|e| e.scope.rank) {
        s.push_str(&format!(
            "; rank {r}, which waits longest, spends {} of its {} of kernel time in them, {} of it waiting for a late peer, so its transfers take about {} (fastest rank per collective)",
            rank_text(f, r, Q::NcclTimeNs),
            rank_text(f, r, Q::KernelTimeNs),
            rank_text(f, r, Q::NcclWaitNs),
            rank_text(f, r, Q::NcclTransferNs)
        ));
    }
    s + &cite(f)
}

pub(super) fn nvidia_summaries(
    f: &Finding,
    differ: &[crate::findings::Differ],
    self_nested: &[String],
    grids: Option<&crate::findings::Grids>,
) -> String {
    let small = |g: &crate::findings::Grids| {
        format!(
            "the kernel time of {} in launches of at most {} thread blocks",
            range_name(&g.range),
            g.blocks
        )
    };
    let also = match grids.filter(|g| g.compared()) {
        Some(g) => format!(
            "; and {}, in all and per kernel, with each kernel's thread blocks holding most of that time, beside cuda_gpu_kern_gb_sum's rows named by it ({})",
            small(g),
            md(&g.file)
        ),
        None => String::new(),
    };
    let mut s = format!(
        "NVIDIA's `nsys stats` of the same export (nvtx_gpu_proj_sum, nvtx_kern_sum) beside these reports' range figures: {}, {} figures compared (per range its instances, wall time, GPU projection, GPU operations, kernel time and launches{also}), {} differ",
        count(f, Q::NvidiaRanges, "range"),
        f.text(Q::NvidiaFiguresCompared),
        f.text(Q::NvidiaFiguresDiffer)
    );
    s.push_str(&differing(
        differ
            .iter()
            .map(|d| (code(&d.range), d.column, d.ours, d.theirs)),
    ));
    if !self_nested.is_empty() {
        let names: Vec<String> = self_nested.iter().map(|n| code(n)).collect();
        s.push_str(&format!(
            "; the launches of {} are not compared: instances nested in their own name, whose launches these reports count in each instance that holds them and nvtx_kern_sum's Kern Inst once",
            names.join(", ")
        ));
    }
    if let Some(g) = grids.filter(|g| !g.compared()) {
        let why = match g.named_ns {
            0.0 => format!(
                "its rows name none of the launches by {}",
                range_name(&g.range)
            ),
            n => format!(
                "its rows name {:.2} ms of the range's {:.2} ms of kernel time by it (nsys names a launch by its innermost range, so ranges nested inside it hold the rest)",
                n / 1e6,
                g.kernel_ns / 1e6
            ),
        };
        s.push_str(&format!(
            "; {} is not compared with cuda_gpu_kern_gb_sum ({}): {why}",
            small(g),
            md(&g.file)
        ));
    }
    s + &cite(f)
}

pub(super) fn nvidia_ncu_summary(
    f: &Finding,
    w: &str,
    differ: &[crate::findings::NcuDiffer],
    ambiguous: usize,
) -> String {
    let mut s = format!(
        "NVIDIA's `ncu --print-summary per-kernel` of the same report beside these reports' ncu figures {w}: {}, {} values compared (every metric the summary holds of each kernel and launch configuration), {} differ",
        count(f, Q::NvidiaKernels, "kernel"),
        f.text(Q::NvidiaFiguresCompared),
        f.text(Q::NvidiaFiguresDiffer)
    );
    s.push_str(&differing(
        differ
            .iter()
            .map(|d| (md(&d.kernel), d.metric.as_str(), d.ours, d.theirs)),
    ));
    if ambiguous > 0 {
        s.push_str(&format!("; {ambiguous} summary rows not compared: their kernel name, block and grid stand for several kernels of the report"));
    }
    s + &cite(f)
}

pub(super) fn straggler(f: &Finding, w: &str, slowest: u32) -> String {
    format!(
        "Slowest rank {w}: rank {slowest}, {} vs a median of {}; a range that holds collectives ends about together on every rank, so NCCL waiting is what shows who is late{}",
        f.text(Q::SlowestRankWallNs),
        f.text(Q::MedianRankWallNs),
        cite(f)
    )
}

/// ": `what` column 1 here, 2 in NVIDIA's; ..." for the figures that differ from NVIDIA's
/// summary (the first 5, then how many more; summary.json holds them all); empty when none.
fn differing<'a>(figures: impl ExactSizeIterator<Item = (String, &'a str, f64, f64)>) -> String {
    const LISTED: usize = 5;
    let n = figures.len();
    let listed: Vec<String> = figures
        .take(LISTED)
        .map(|(what, column, ours, theirs)| {
            format!("{what} {column} {ours} here, {theirs} in NVIDIA's")
        })
        .collect();
    match (listed.is_empty(), n > LISTED) {
        (true, _) => String::new(),
        (false, false) => format!(": {}", listed.join("; ")),
        (false, true) => format!(": {} and {} more", listed.join("; "), n - LISTED),
    }
}

/// "1 kernel", "3 kernels": the finding's count `q` as printed, with its noun.
fn count(f: &Finding, q: Q, noun: &str) -> String {
    match f.get(q) == Some(1.0) {
        true => format!("{} {noun}", f.text(q)),
        false => format!("{} {noun}s", f.text(q)),
    }
}

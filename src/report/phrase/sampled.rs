//! The findings of nsys's sampled GPU metrics phrased: sampled classes, the kernels too short
//! for the sample window to class, and sampled DRAM figures far from ncu's.

use super::*;

/// Which launches a finding's sampled figures are over: this run's, or an earlier run's whose
/// figures this run reused (their source says so).
fn sampled_over(f: &Finding) -> &'static str {
    match f
        .sources()
        .contains(&crate::findings::document::REUSED_FIGURES)
    {
        true => "over every launch of an earlier run of the same command, reused here",
        false => "over every launch",
    }
}

/// Why a kernel or launch configuration has no sampled class or figures: "launches of 2.58
/// us, shorter than the 20.0 us sample window" (rules::SAMPLED_WINDOW).
pub(crate) fn short_launches(s: &crate::model::ShortLaunches) -> String {
    format!(
        "launches of {}, shorter than the {} sample window",
        Q::MeanKernelNs.text(s.mean_launch_ns),
        Q::SampleWindowNs.text(s.window_ns)
    )
}

pub(super) fn bound(f: &Finding, w: &str, memory: &[String], compute: &[String]) -> String {
    let figs = [
        (Q::SampledDramPct, "DRAM"),
        (Q::SampledComputePct, "SM issue or tensor"),
        (Q::SampledCoveragePct, "coverage"),
    ];
    let class = match (memory.len(), compute.len()) {
        (_, 0) => "memory-bound",
        (0, _) => "compute-bound",
        _ => "memory- or compute-bound",
    };
    format!(
        "{} of the top kernels {w} that ncu did not measure {} {class} by the GPU metrics nsys sampled {} ({}){}.",
        memory.len() + compute.len(),
        are(memory.len() + compute.len()),
        sampled_over(f),
        per_kernel(f, &figs),
        cite(f)
    )
}

/// A configuration's sampled DRAM figure far from ncu's, and why: the sample window where
/// its launches are shorter than it (`short`), else how ncu's replay differs.
pub(super) fn disagrees(f: &Finding, w: &str, kernel: &str, grid: &str, short: bool) -> String {
    let why = match short {
        true => format!(
            "its launches of {} on average are shorter than the {} sample window, so the sampled figure is mostly its neighbours' work in the window, not a fault of ncu's replay, by rule `{}`",
            f.text(Q::MeanKernelNs),
            f.text(Q::SampleWindowNs),
            crate::rules::SAMPLED_WINDOW.id
        ),
        false => "the replayed launch is not how it ran in the workload, or the launches of this configuration differ among themselves".to_string(),
    };
    format!(
        "The two tools disagree on {} with grid {} {w}: DRAM {} sampled {} (coverage {}), {} in ncu's replay of one: {why}{}.",
        code(kernel),
        md(grid),
        f.text(Q::SampledDramPct),
        sampled_over(f),
        f.text(Q::SampledCoveragePct),
        f.text(Q::DramThroughputPct),
        cite(f)
    )
}

/// The kernels given no sampled class for the window, with the largest of them.
pub(super) fn window(f: &Finding, w: &str) -> String {
    format!(
        "Sampled figures and classes are not given for {} of the {} sampled kernels {w}, {} of their time: their launches are shorter on average than the {} sample window, so each window's counters are mostly their neighbours' work; those with the most time: {}{}.",
        f.text(Q::UnclassedKernels),
        f.text(Q::SampledKernels),
        f.text(Q::UnclassedSharePct),
        f.text(Q::SampleWindowNs),
        per_kernel(f, &[(Q::MeanKernelNs, "")]),
        cite(f)
    )
}

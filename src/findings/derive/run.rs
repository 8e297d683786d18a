//! Findings about the run as a whole: ranks (NCCL time and waiting, one value per rank;
//! stragglers; ranks out of step) and passes that did not complete.

use super::super::{Claim, Figure, Findings, Quantity, Scope};
use crate::analysis::ranks::RankData;
use crate::analysis::Artifacts;
use crate::rules;

const RANK_SQLITE: &str = "nsys/run.rank<N>.sqlite";
const RANK_KERN_SUM: &str = "nsys/summary.rank<N>_cuda_gpu_kern_sum.csv";

/// The rank that waits longest in NCCL kernels, with its wait.
fn longest_waiter(ranks: &[RankData]) -> Option<(&RankData, f64)> {
    ranks
        .iter()
        .filter_map(|r| Some((r, r.nccl_wait_ns?)))
        .max_by(|x, y| x.1.total_cmp(&y.1))
}

/// Its NCCL time, waiting and transfers (the rest): the one set of per-rank NCCL figures the
/// reports quote.
fn rank_nccl(r: &RankData, wait: f64) -> Vec<Figure> {
    let s = Scope::capture().rank(r.rank);
    vec![
        Figure::new(Quantity::NcclTimeNs, r.nccl_time_ns, RANK_KERN_SUM, &s),
        Figure::new(Quantity::NcclWaitNs, wait, RANK_SQLITE, &s),
        Figure::new(
            Quantity::NcclTransferNs,
            (r.nccl_time_ns - wait).max(0.0),
            RANK_SQLITE,
            &s,
        ),
        Figure::new(Quantity::KernelTimeNs, r.kernel_time_ns, RANK_KERN_SUM, &s),
    ]
}

pub(super) fn ranks(a: &Artifacts, out: &mut Findings) {
    let ranks = &a.rank_data;
    if ranks.is_empty() {
        return;
    }
    let nccl: f64 = ranks.iter().map(|r| r.nccl_time_ns).sum();
    let total: f64 = ranks.iter().map(|r| r.kernel_time_ns).sum();
    let scope = Scope::capture();
    let mut ev = vec![Figure::new(
        Quantity::NcclSharePct,
        100.0 * nccl / total.max(1.0),
        RANK_KERN_SUM,
        &scope,
    )];
    let waiter = longest_waiter(ranks).filter(|_| nccl > 0.0);
    if let Some((r, wait)) = waiter {
        ev.extend(rank_nccl(r, wait));
    }
    out.push(Claim::NcclTime, scope.clone(), None, ev);
    if let Some(range) = a.focus.range() {
        if let Some((median, rank, slow)) = crate::analysis::ranks::straggler(ranks, range) {
            let s = Scope::range(range);
            let src = "nsys/summary.rank<N>_nvtx_sum.csv";
            let claim = Claim::Straggler { slowest: rank };
            let ev = vec![
                Figure::new(
                    Quantity::SlowestRankWallNs,
                    slow,
                    src,
                    &s.clone().rank(rank),
                ),
                Figure::new(Quantity::MedianRankWallNs, median, src, &s),
            ];
            out.push(claim, s, None, ev);
        }
    }
    out_of_step(ranks, waiter, out);
}

/// Ranks out of step: one waits in NCCL kernels over the rule's share of its kernel time.
fn out_of_step(ranks: &[RankData], waiter: Option<(&RankData, f64)>, out: &mut Findings) {
    let Some((w, wait)) = waiter else { return };
    if wait <= rules::RANKS_OUT_OF_STEP.threshold / 100.0 * w.kernel_time_ns {
        return;
    }
    let Some(late) = ranks
        .iter()
        .filter_map(|r| Some((r, r.nccl_wait_ns?)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
    else {
        return;
    };
    let mut ev = rank_nccl(w, wait);
    let s = Scope::capture().rank(late.0.rank);
    ev.push(Figure::new(Quantity::NcclWaitNs, late.1, RANK_SQLITE, &s));
    let claim = Claim::RanksOutOfStep {
        waiter: w.rank,
        late: late.0.rank,
    };
    out.push(claim, Scope::capture(), Some(rules::RANKS_OUT_OF_STEP), ev);
}

/// A pass that ran and did not complete: its reason, from status.json.
pub(super) fn passes(a: &Artifacts, out: &mut Findings) {
    let Some(st) = &a.status else { return };
    for (name, p) in &st.passes {
        if let Some(reason) = p.reason.as_ref().filter(|_| p.exit_code != 0) {
            let claim = Claim::PassIncomplete {
                pass: name.clone(),
                reason: said(reason),
            };
            out.push(claim, Scope::capture(), None, vec![]);
        }
    }
}

/// A pass's reason as the reports give it: its first line, and where that line ends on the
/// output it quotes ("Its last output:"), the lines it refers to.
fn said(reason: &str) -> String {
    let mut lines = reason.lines();
    let first = lines.next().unwrap_or("");
    match first.trim_end().ends_with("output:") {
        true => std::iter::once(first)
            .chain(lines)
            .collect::<Vec<_>>()
            .join("\n"),
        false => first.to_string(),
    }
}

/// The range figures beside NVIDIA's `nsys stats` of the same export, where the run has them
/// (the nvidia pass, `run.crosscheck`).
pub(super) fn nvidia(a: &Artifacts, out: &mut Findings) {
    let Some(c) = &a.nvidia else { return };
    let scope = Scope::capture();
    let fig = |q, v: usize, file: &str| Figure::new(q, v as f64, file, &scope);
    out.push(
        Claim::NvidiaSummaries {
            differ: c.differ.clone(),
            self_nested: c.self_nested.clone(),
            grids: c.grids.clone(),
        },
        scope.clone(),
        Some(rules::NVIDIA_SUMMARIES),
        vec![
            fig(Quantity::NvidiaRanges, c.ranges, &c.proj_file),
            fig(Quantity::NvidiaFiguresCompared, c.figures, &c.kern_file),
            fig(Quantity::NvidiaFiguresDiffer, c.differ.len(), &c.kern_file),
        ],
    );
}

/// ncu's figures beside NVIDIA's summary of the same report, where the run has it.
pub(super) fn nvidia_ncu(a: &Artifacts, out: &mut Findings) {
    let Some(c) = &a.nvidia_ncu else { return };
    // The report's kernels are those of the range ncu was gated on.
    let range = a
        .ncu_range()
        .or_else(|| a.ncu_records.first().and_then(|r| r.nvtx_range.clone()));
    let scope = Scope::of(range.as_deref()).ncu();
    let fig = |q, v: usize| Figure::new(q, v as f64, &c.file, &scope);
    out.push(
        Claim::NvidiaNcuSummary {
            differ: c.differ.clone(),
            ambiguous: c.ambiguous,
        },
        scope.clone(),
        Some(rules::NVIDIA_NCU_SUMMARY),
        vec![
            fig(Quantity::NvidiaKernels, c.kernels),
            fig(Quantity::NvidiaFiguresCompared, c.figures),
            fig(Quantity::NvidiaFiguresDiffer, c.differ.len()),
        ],
    );
}

//! The FP8-scaling lever (rules::FP8_SCALING): the work around a step's FP8 matrix products
//! (each activation's amax, its scale, the division and the cast, analysis::precision) fused
//! into one kernel or taken from an amax history, sized as that work's kernel time per step.

use super::super::{Figure, LeverKind, Quantity};
use super::sized::{kernel_saving, Sized, Step};
use crate::analysis::precision::fp8_work;
use crate::analysis::Artifacts;
use crate::rules;

/// The lever where the kernel table is the captured range's and the work around its FP8
/// products takes at least the rule's share of their own time; `busy` is the GPU's working
/// share of the step. Where the GPU waits on the host most of the step, the saving is of the
/// GPU's work, which moves the wall time once the host work is off the step.
pub(super) fn lever(a: &Artifacts, step: &Step, busy: Option<f64>) -> Option<Sized> {
    if !a.kernel_table_in_range() {
        return None;
    }
    let busy = busy?;
    let w = fp8_work(&a.records, a.scale_chains.as_ref())?;
    if w.around_of_gemm_pct() < rules::FP8_AROUND.threshold {
        return None;
    }
    let ms = w.around_ns() / step.instances / 1e6;
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
    let mut figures = vec![
        fig(Quantity::SavingMsPerStep, ms),
        fig(Quantity::Fp8AroundOfGemmPct, w.around_of_gemm_pct()),
    ];
    let (after_host, pct, share) = kernel_saving(step, busy, ms, fig);
    figures.extend(share);
    if let Some(c) = a.scale_chains.as_ref().filter(|c| c.in_chains > 0) {
        let one = step.scope.clone().instances(1);
        let n = |q, v: u32| Figure::new(q, f64::from(v), &a.sqlite_file, &one);
        figures.push(n(Quantity::ScaleChainLaunches, c.in_chains));
        figures.push(n(Quantity::StepLaunchesRead, c.launches));
    }
    Some(Sized {
        kind: LeverKind::Fp8Scaling { after_host },
        pct,
        figures,
    })
}

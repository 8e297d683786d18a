//! What the levers are sized against and what each hands back: the types the levers' own
//! subjects (batching, copies, speculation) share with the ranking in levers.rs.

use super::super::{Figure, LeverKind, Quantity, Scope, StepBasis};
use crate::rules;

/// A step's time and what it is.
pub(super) struct Step {
    pub(super) ms: f64,
    pub(super) scope: Scope,
    pub(super) instances: f64,
    pub(super) basis: StepBasis,
}

/// A saving of `ms` of kernel time per step, against what it shortens: the GPU's work where
/// the GPU waits on the host most of the step (`busy` its working share; the wall time moves
/// once the host work is off the step), else the step. Whether it is after the host work, its
/// share, and the figures that give it.
pub(super) fn kernel_saving(
    step: &Step,
    busy: f64,
    ms: f64,
    fig: impl Fn(Quantity, f64) -> Figure,
) -> (bool, f64, Vec<Figure>) {
    let after_host = busy < rules::GPU_IDLE.threshold;
    if after_host {
        let gpu_ms = step.ms * busy / 100.0;
        let pct = (100.0 * ms / gpu_ms).min(100.0);
        let figures = vec![
            fig(Quantity::GpuWorkMsPerStep, gpu_ms),
            fig(Quantity::SavingOfGpuWorkPct, pct),
        ];
        return (true, pct, figures);
    }
    let pct = (100.0 * ms / step.ms).min(100.0);
    (false, pct, vec![fig(Quantity::SavingOfStepPct, pct)])
}

/// A lever sized: its saving's share of what it is counted against (the step, a token, the
/// GPU's work), and its figures beside the step's time.
pub(super) struct Sized {
    pub(super) kind: LeverKind,
    pub(super) pct: f64,
    pub(super) figures: Vec<Figure>,
}

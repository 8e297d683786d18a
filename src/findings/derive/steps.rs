//! Findings about the captured range's steps as a whole: the kinds of work its instances do
//! (a serving loop's mixed and decode-only steps), and a GPU-bound step's tensor-core rate
//! against the tensor peak.

use super::super::{Claim, Figure, Findings, Quantity, Scope, StepBasis};
use crate::analysis::Artifacts;
use crate::rules;

/// The captured range's instances by their work, where they differ (rules::WORK_KINDS): over
/// the steady instances where a warm-up or compiling instances are set apart.
pub(super) fn work_kinds(a: &Artifacts, out: &mut Findings) {
    let Some(name) = a.focus.range() else {
        return;
    };
    let steady = a.steady_group(name);
    let work: Vec<crate::analysis::work::Work> = match steady {
        Some(g) => a
            .step_work
            .iter()
            .filter(|w| g.ranges.contains(&w.range))
            .cloned()
            .collect(),
        None => a.step_work.clone(),
    };
    if work.len() < rules::WORK_KINDS_MIN_INSTANCES {
        return;
    }
    let kinds = crate::analysis::work::kinds(&work, rules::WORK_KINDS.threshold as usize);
    if kinds.len() < 2 {
        return;
    }
    let scope = Scope::range(name).instances(work.len() as u64);
    let ev = kinds
        .iter()
        .map(|k| {
            let s = scope.clone().group(&label(k)).instances(k.instances);
            Figure::new(
                Quantity::GroupMedianWallNs,
                k.median_wall_ns,
                &a.sqlite_file,
                &s,
            )
        })
        .collect();
    out.push(
        Claim::StepWork {
            kinds,
            steady: steady.map(|g| g.label.clone()),
        },
        scope,
        Some(rules::WORK_KINDS),
        ev,
    );
}

/// A kind of work's group label: "the 4 holding `decode` and `prefill`".
fn label(k: &crate::analysis::work::WorkKind) -> String {
    let inside = match k.children.as_slice() {
        [] => "holding no range".to_string(),
        c => {
            let names: Vec<String> = c.iter().map(|n| format!("`{n}`")).collect();
            format!("holding {}", names.join(" and "))
        }
    };
    format!("the {} {inside}", k.instances)
}

/// A GPU-bound captured range's tensor-core rate against the tensor peak (rules::TENSOR_PEAK).
pub(super) fn tensor_peak(a: &Artifacts, out: &mut Findings) {
    let (Some(name), Some(peaks)) = (a.focus.range(), a.peaks.as_ref()) else {
        return;
    };
    let Some(step) = super::levers::step(a, name) else {
        return;
    };
    let Some((busy, busy_scope)) = super::gpu_busy(a) else {
        return;
    };
    // Over its loop the step is not the range's; under a launcher busy counts NCCL waiting.
    if step.basis == StepBasis::Loop
        || busy < rules::TENSOR_PEAK.threshold
        || busy_scope.group != step.scope.group
        || !a.rank_data.is_empty()
    {
        return;
    }
    // The operations per instance are a mean over every instance: the same only where each
    // launches as many kernels.
    let same = a
        .range_stats
        .iter()
        .find(|r| r.name == name)
        .is_some_and(|r| r.launches_spread.min == r.launches_spread.max);
    if !same {
        return;
    }
    let Some(t) = crate::analysis::tensor::rate(
        &a.records,
        |r| a.point(r),
        peaks,
        step.instances as u64,
        step.ms,
    ) else {
        return;
    };
    let scope = step.scope.clone();
    let ncu = |q, v| Figure::new(q, v, &a.ncu_csv_file, &scope.clone().ncu());
    let mut ev = vec![
        ncu(Quantity::TensorPeakPct, t.pct_of_peak),
        ncu(Quantity::TensorTflopPerS, t.tflops),
        ncu(Quantity::TensorPeakTflopPerS, t.peak_tflops),
        Figure::new(Quantity::StepMs, step.ms, &a.sqlite_file, &scope),
        Figure::new(Quantity::GpuBusyOfRangePct, busy, &a.sqlite_file, &scope),
        ncu(Quantity::ComputeBoundSharePct, t.compute_bound_pct),
    ];
    if t.measured_pct < rules::FLOOR_WHOLE_PCT {
        ev.push(ncu(Quantity::NcuCoveragePct, t.measured_pct));
    }
    out.push(
        Claim::TensorPeak {
            compute_bound: t.compute_bound_most,
        },
        scope,
        Some(rules::TENSOR_PEAK),
        ev,
    );
}

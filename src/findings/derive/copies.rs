//! The weight-copy lever (rules::WEIGHT_COPY): kernels that copy weight-sized data by index
//! every step (analysis::copies), sized as their kernel time per step: what a kernel that
//! reads the weights in place (a grouped matrix product for a mixture-of-experts layer) saves.

use super::super::{Figure, LeverKind, Quantity};
use super::sized::{kernel_saving, Sized, Step};
use crate::analysis::copies::weight_copies;
use crate::analysis::Artifacts;
use crate::rules;

/// The lever where the kernel table is the captured range's and ncu measured a copy of at
/// least the rule's share of its largest matrix product's bytes a call; `busy` is the GPU's
/// working share of the step. Where the GPU waits on the host most of the step the copies'
/// time is sized against the GPU's work, which it shortens at once, and the wall time only
/// once the host work is off the step.
pub(super) fn lever(a: &Artifacts, step: &Step, busy: Option<f64>) -> Option<Sized> {
    if !a.kernel_table_in_range() {
        return None;
    }
    let busy = busy?;
    let c = weight_copies(&a.records, |r| a.point(r), rules::WEIGHT_COPY.threshold)?;
    let ms = c.kernels.iter().map(|k| k.time_ns).sum::<f64>() / step.instances / 1e6;
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
    // Bytes are ncu's rate times nsys's durations; calls are nsys's.
    let ncu = |q, v, kernel: Option<&str>| {
        let scope = step.scope.clone().ncu();
        let scope = kernel.map_or(scope.clone(), |k| scope.kernel(k));
        Figure::new(q, v, &a.ncu_csv_file, &scope)
    };
    let calls = |v, kernel: &str| {
        let scope = step.scope.clone().kernel(kernel);
        Figure::new(Quantity::CopyCallsPerStep, v, &a.sqlite_file, &scope)
    };
    let mut figures = vec![fig(Quantity::SavingMsPerStep, ms)];
    let (after_host, pct, share) = kernel_saving(step, busy, ms, fig);
    figures.extend(share);
    let mut per_step = 0.0;
    for k in &c.kernels {
        let n = k.calls as f64 / step.instances;
        per_step += k.bytes_per_call * n;
        let mb = k.bytes_per_call / 1e6;
        figures.push(ncu(Quantity::CopyMbPerCall, mb, Some(&k.name)));
        figures.push(calls(n, &k.name));
    }
    figures.push(ncu(Quantity::CopyMbPerStep, per_step / 1e6, None));
    let matrix = c.matrix_bytes_per_call / 1e6;
    figures.push(ncu(
        Quantity::MatrixMbPerCall,
        matrix,
        Some(&c.matrix_product),
    ));
    Some(Sized {
        kind: LeverKind::WeightCopy { after_host },
        pct,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::super::levers::tests::{kind, levers};
    use crate::findings::{LeverKind, Quantity as Q};

    /// The committed Mixtral decode: 56 gathers of 96.9 MB over 7 steps, 1.66 ms of kernel
    /// time, 0.24 ms a step of the GPU's 0.90 ms (the GPU works 20.6% of a 4.35 ms step):
    /// after the host-work lever, against the GPU's work.
    #[test]
    fn the_moe_gather_is_sized_against_the_gpus_work() {
        let all = levers("examples/sample-run-hf-moe");
        let c = all
            .iter()
            .find(|f| matches!(kind(f), LeverKind::WeightCopy { .. }))
            .unwrap();
        assert_eq!(kind(c), LeverKind::WeightCopy { after_host: true });
        let ms = c.get(Q::SavingMsPerStep).unwrap();
        assert!((ms - 1.658577 / 7.0).abs() < 1e-6, "{ms}");
        assert_eq!(c.text(Q::CopyCallsPerStep), "8");
        assert_eq!(c.text(Q::CopyMbPerCall), "96.9 MB");
        assert_eq!(c.text(Q::CopyMbPerStep), "775.4 MB");
        assert_eq!(c.text(Q::SavingOfGpuWorkPct), "26.4%");
        assert_eq!(c.figure(Q::SavingOfStepPct), None);
    }
}

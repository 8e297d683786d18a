//! What ncu measured of the kernel time: its coverage on one basis (and why a budget left
//! kernels out), and the share of the measured kernels' time in the launch configurations it
//! measured.

use super::super::{Claim, Figure, Findings, Quantity, Scope};
use super::kernels::table_scope;
use crate::analysis::Artifacts;

/// How much of the kernel time ncu measured, and the rest, on one basis (all kernel time, or
/// the time outside NCCL when ncu leaves NCCL out): the two add up to 100%.
pub(super) fn coverage(a: &Artifacts, out: &mut Findings) {
    let Some(cov) = a.ncu_coverage_pct() else {
        return;
    };
    // Of the kernel table's range, or of ncu's own where it profiled another.
    let other = !a.ncu_records.is_empty();
    let scope = match other {
        false => coverage_scope(a),
        true => Scope::of(a.ncu_range().as_deref()),
    };
    // Where ncu measured in a range the kernel time's scope is not, the sentence says both.
    // A range of which the export holds no instance (the capture's typo, ncu told the same)
    // is not named as where anything was measured.
    let measured_in = a
        .ncu_range()
        .filter(|r| scope.range.as_deref() != Some(r.as_str()))
        .filter(|r| a.capture_range_missing() != Some(r.as_str()));
    let rows = if other { &a.ncu_records } else { &a.records };
    let measured = rows.iter().filter(|r| r.ncu_instances > 0).count();
    let fig = |q, v| Figure::new(q, v, &a.ncu_csv_file, &scope.clone().ncu());
    let mut figures = vec![
        fig(Quantity::NcuCoveragePct, cov),
        fig(Quantity::NcuLeftOutPct, (100.0 - cov).max(0.0)),
        fig(Quantity::NcuKernelsMeasured, measured as f64),
    ];
    let mut stop = budget_stop(a);
    // Where the budget stopped ncu, the largest kernel without its figures, on the coverage's
    // basis.
    let nccl_out = a.ncu_skips_nccl();
    // (The kernel table's kernels: ncu's own table holds only kernels it measured.)
    let left_out = a
        .records
        .iter()
        .filter(|_| !other)
        .filter(|r| r.ncu_instances == 0 && !(nccl_out && crate::model::is_nccl(&r.name)))
        .find_map(|r| Some((r, r.gpu_time_pct?)));
    if let (Some(stop), Some((r, share))) = (stop.as_mut(), left_out) {
        stop.largest_left_out = Some(a.kernel_label(&r.name));
        let k = scope.clone().kernel(&r.name);
        figures.push(Figure::new(
            Quantity::KernelSharePct,
            share,
            &a.kern_sum_file,
            &k,
        ));
    }
    out.push(
        Claim::NcuCoverage {
            nccl_left_out: nccl_out,
            measured_in,
            budget_stop: stop,
            budget_plan: budget_plan(a),
        },
        scope.clone(),
        None,
        figures,
    );
}

/// The scope of the kernel table's time that ncu's coverage is a share of: the table's own,
/// except where the table sums the whole capture and the capture is exactly the range ncu
/// measured in (its first instance in each process: nsys stopped when it closed). The whole
/// capture is then that range, and ncu's figures have one scope in the report, as the
/// launch configurations' share (in ncu's range) has.
fn coverage_scope(a: &Artifacts) -> Scope {
    let table = table_scope(a);
    match (table.range.is_none(), a.focus.range(), a.ncu_range()) {
        (true, Some(c), Some(n)) if a.focus.first_only && c == n => Scope::range(&n),
        _ => table,
    }
}

/// The ncu pass's time budget, where it afforded ncu fewer kernels than were chosen
/// (status.json).
fn budget_plan(a: &Artifacts) -> Option<crate::findings::BudgetPlan> {
    let rec = a.status.as_ref()?.passes.get("ncu")?.ncu.as_ref()?;
    let cost = rec.cost.as_ref().filter(|c| c.deferred > 0)?;
    let b = rec.budget.as_ref()?;
    Some(crate::findings::BudgetPlan {
        s: b.s,
        from: b.from.clone(),
        given: cost.kernels,
        deferred: cost.deferred,
    })
}

/// The ncu pass's time budget, where ncu was stopped at it (status.json).
fn budget_stop(a: &Artifacts) -> Option<crate::findings::BudgetStop> {
    let rec = a.status.as_ref()?.passes.get("ncu")?.ncu.as_ref()?;
    let b = rec.budget.as_ref().filter(|b| b.reached)?;
    Some(crate::findings::BudgetStop {
        s: b.s,
        from: b.from.clone(),
        cached: rec.cache.as_ref().is_some_and(|c| c.stored > 0),
        largest_left_out: None,
    })
}

/// Of the measured kernels' time in ncu's range (nsys, per grid and block), the share in the
/// launch configurations ncu measured; the figures of kernels measured in several shapes are
/// weighed by each shape's time (see analysis::shapes).
pub(super) fn shapes(a: &Artifacts, out: &mut Findings) {
    let Some((c, pct)) = a.shape_cover.and_then(|c| Some((c, c.pct()?))) else {
        return;
    };
    let range = a.ncu_range();
    let scope = Scope::of(range.as_deref()).ncu();
    out.push(
        Claim::ShapeCoverage,
        scope.clone(),
        None,
        vec![
            Figure::new(Quantity::ShapeMeasuredPct, pct, &a.sqlite_file, &scope),
            Figure::new(
                Quantity::KernelsWeighedByShape,
                c.multi_shape as f64,
                &a.ncu_csv_file,
                &scope,
            ),
        ],
    );
}

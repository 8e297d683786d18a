//! Findings about what the kernels are for, from their names (analysis::roles): the attention
//! kernel each phase ran, and in a range with FP8 matrix products the work around them.

use super::super::{Claim, Figure, Findings, Named, Quantity, Scope};
use super::kernels::table_scope;
use crate::analysis::roles::Fp8Role;
use crate::analysis::Artifacts;
use crate::rules;

/// Each phase's attention kernels, with their share of its kernel time.
pub(super) fn attention(a: &Artifacts, out: &mut Findings) {
    for p in &a.attention {
        let scope = Scope::range(&p.phase).instances(p.instances);
        let mut ev = vec![Figure::new(
            Quantity::KernelTimeNs,
            p.kernel_ns as f64,
            &a.sqlite_file,
            &scope,
        )];
        for k in &p.kernels {
            let ks = scope.clone().kernel(&k.name);
            let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &ks);
            ev.push(fig(Quantity::KernelSharePct, p.share_pct(k)));
            ev.push(fig(Quantity::KernelTimeNs, k.ns as f64));
            ev.push(fig(Quantity::KernelLaunches, k.launches as f64));
        }
        let kernels = p
            .kernels
            .iter()
            .map(|k| Named {
                name: k.name.clone(),
                kind: k.kind,
            })
            .collect();
        out.push(Claim::AttentionKernels { kernels }, scope, None, ev);
    }
}

/// The FP8 matrix products of the kernel table's range and the casts and abs/max reductions
/// around them: a fact where there are FP8 products, a verdict where the work around them is
/// large beside them (rules::FP8_AROUND).
pub(super) fn fp8(a: &Artifacts, out: &mut Findings) {
    let Some(w) = crate::analysis::precision::fp8_work(&a.records, a.scale_chains.as_ref()) else {
        return;
    };
    let scope = table_scope(a);
    let fig = |q, v| Figure::new(q, v, &a.kern_sum_file, &scope);
    let shares = vec![
        fig(Quantity::Fp8GemmSharePct, w.share_pct(Fp8Role::Gemm)),
        fig(Quantity::Fp8CastSharePct, w.share_pct(Fp8Role::Cast)),
        fig(Quantity::AbsMaxSharePct, w.share_pct(Fp8Role::AbsMax)),
        fig(Quantity::Fp8ScaleSharePct, w.share_pct(Fp8Role::Scale)),
        fig(Quantity::Fp8AroundOfGemmPct, w.around_of_gemm_pct()),
    ];
    let mut shares = shares;
    if let Some(c) = a.scale_chains.as_ref().filter(|c| c.in_chains > 0) {
        let step = scope.clone().instances(1);
        let one = |q, v: u32| Figure::new(q, f64::from(v), &a.sqlite_file, &step);
        shares.push(one(Quantity::ScaleChainLaunches, c.in_chains));
        shares.push(one(Quantity::StepLaunchesRead, c.launches));
    }
    let mut ev = shares.clone();
    for k in &w.kernels {
        ev.push(Figure::new(
            Quantity::KernelSharePct,
            k.share_pct,
            &a.kern_sum_file,
            &scope.clone().kernel(&k.name),
        ));
    }
    let kernels = w
        .kernels
        .iter()
        .map(|k| Named {
            name: k.name.clone(),
            kind: k.role,
        })
        .collect();
    out.push(Claim::Fp8Work { kernels }, scope.clone(), None, ev);
    if w.around_of_gemm_pct() >= rules::FP8_AROUND.threshold {
        out.push(Claim::Fp8Overhead, scope, Some(rules::FP8_AROUND), shares);
    }
}

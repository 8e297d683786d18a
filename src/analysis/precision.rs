//! Low-precision matrix products and the work around them: in the kernel table's range, the
//! time of the FP8 matrix products (by name, or by ncu's tensor counters of an FP8 source
//! type) beside the casts to FP8 and the abs and max reductions an FP8 scale is computed from
//! (analysis::roles), each kernel with its share of the range's kernel time.

use serde::Serialize;

use super::roles::{self, Fp8Role};
use super::roofline::tensor_source;
use crate::model::KernelRecord;

/// One kernel of the FP8 work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Fp8Kernel {
    pub(crate) name: String,
    pub(crate) role: Fp8Role,
    pub(crate) ns: f64,
    /// Its share of the table's kernel time, in %.
    pub(crate) share_pct: f64,
}

/// The FP8 work of a kernel table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Fp8Work {
    /// Most time first.
    pub(crate) kernels: Vec<Fp8Kernel>,
    /// The table's kernel time, every kernel's.
    pub(crate) total_ns: f64,
}

impl Fp8Work {
    /// The time of the kernels of one role.
    pub(crate) fn ns(&self, role: Fp8Role) -> f64 {
        self.kernels
            .iter()
            .filter(|k| k.role == role)
            .map(|k| k.ns)
            .sum()
    }

    /// The share of the table's kernel time in one role, in %.
    pub(crate) fn share_pct(&self, role: Fp8Role) -> f64 {
        100.0 * self.ns(role) / self.total_ns.max(1.0)
    }

    /// The casts and abs/max reductions, in % of the FP8 matrix products' time.
    pub(crate) fn around_of_gemm_pct(&self) -> f64 {
        let around = self.ns(Fp8Role::Cast) + self.ns(Fp8Role::AbsMax);
        100.0 * around / self.ns(Fp8Role::Gemm).max(1.0)
    }
}

/// ncu measured tensor-core operations of an FP8 source type in the kernel.
fn fp8_tensor_ops(r: &KernelRecord) -> bool {
    r.metrics
        .iter()
        .any(|(k, v)| *v > 0.0 && tensor_source(k).is_some_and(|t| t.contains("fp8")))
}

/// The FP8 work of the kernel table's rows (nsys time; rows without it are ncu's alone and
/// left out); None where no row is an FP8 matrix product.
pub(crate) fn fp8_work(records: &[KernelRecord]) -> Option<Fp8Work> {
    let rows: Vec<&KernelRecord> = records
        .iter()
        .filter(|r| r.gpu_time_pct.is_some())
        .collect();
    let total_ns: f64 = rows.iter().map(|r| r.total_time_ns).sum();
    let mut kernels: Vec<Fp8Kernel> = rows
        .iter()
        .filter_map(|r| {
            Some(Fp8Kernel {
                name: r.name.clone(),
                role: roles::fp8_role(&r.name, fp8_tensor_ops(r))?,
                ns: r.total_time_ns,
                share_pct: 100.0 * r.total_time_ns / total_ns.max(1.0),
            })
        })
        .collect();
    if !kernels.iter().any(|k| k.role == Fp8Role::Gemm) || total_ns <= 0.0 {
        return None;
    }
    kernels.sort_by(|a, b| b.ns.total_cmp(&a.ns).then(a.name.cmp(&b.name)));
    Some(Fp8Work { kernels, total_ns })
}

//! Low-precision matrix products and the work around them: in the kernel table's range, the
//! time of the FP8 matrix products (by name, or by ncu's tensor counters of an FP8 source
//! type) beside the casts to FP8 and the abs and max reductions an FP8 scale is computed from
//! (analysis::roles), each kernel with its share of the range's kernel time; and, from one
//! step's launches in order, the work between each amax and its cast (the scaling).

use std::collections::HashMap;

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

    /// The time of the work around the FP8 matrix products: casts, abs/max reductions and
    /// the scaling between them.
    pub(crate) fn around_ns(&self) -> f64 {
        self.ns(Fp8Role::Cast) + self.ns(Fp8Role::AbsMax) + self.ns(Fp8Role::Scale)
    }

    /// That work in % of the FP8 matrix products' time.
    pub(crate) fn around_of_gemm_pct(&self) -> f64 {
        100.0 * self.around_ns() / self.ns(Fp8Role::Gemm).max(1.0)
    }
}

/// ncu measured tensor-core operations of an FP8 source type in the kernel.
fn fp8_tensor_ops(r: &KernelRecord) -> bool {
    r.metrics
        .iter()
        .any(|(k, v)| *v > 0.0 && tensor_source(k).is_some_and(|t| t.contains("fp8")))
}

/// One step's launches read as FP8 scaling chains: from an amax kernel (abs, max reduction) on
/// a stream to the next cast to FP8 on it, every launch between is scaling work; a chain that
/// meets a matrix product or runs past [`CHAIN_MAX`] launches before its cast is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct ScaleChains {
    /// Per demangled name: its launches in chains, and all its launches in the step.
    #[serde(skip)]
    pub(crate) per_kernel: HashMap<String, (u32, u32)>,
    /// The step's launches, and those in chains (amax and cast included).
    pub(crate) launches: u32,
    pub(crate) in_chains: u32,
}

/// The most launches from an amax to its cast: x.abs().amax(), .float(), .clamp(), / max,
/// x / scale, .to(fp8) is six; a chain much longer is another layer's work.
pub(crate) const CHAIN_MAX: usize = 12;

/// The chains of one step's launches (stream, demangled name, ns) in GPU start order.
pub(crate) fn chains(launches: &[(i64, String, i64)]) -> ScaleChains {
    let role = |n: &str| roles::fp8_role(n, false);
    let mut out = ScaleChains {
        launches: launches.len() as u32,
        ..Default::default()
    };
    let mut in_chain = vec![false; launches.len()];
    let mut i = 0;
    while i < launches.len() {
        if role(&launches[i].1) != Some(Fp8Role::AbsMax) {
            i += 1;
            continue;
        }
        let stream = launches[i].0;
        let on: Vec<usize> = (i..launches.len())
            .filter(|&k| launches[k].0 == stream)
            .take(CHAIN_MAX)
            .collect();
        let end = on.iter().position(|&k| {
            let r = role(&launches[k].1);
            r == Some(Fp8Role::Cast) || is_product(&launches[k].1)
        });
        match end.map(|e| (e, role(&launches[on[e]].1))) {
            Some((e, Some(Fp8Role::Cast))) => {
                on[..=e].iter().for_each(|&k| in_chain[k] = true);
                i = on[e] + 1;
            }
            _ => i += 1,
        }
    }
    for (k, (_, name, _)) in launches.iter().enumerate() {
        let e = out.per_kernel.entry(name.clone()).or_default();
        e.1 += 1;
        if in_chain[k] {
            e.0 += 1;
            out.in_chains += 1;
        }
    }
    out
}

/// A matrix product by its name, of any precision: a chain does not run through one.
fn is_product(name: &str) -> bool {
    roles::is_gemm(&crate::model::short_name(name).to_ascii_lowercase())
}

/// The FP8 work of the kernel table's rows (nsys time; rows without it are ncu's alone and
/// left out); None where no row is an FP8 matrix product. `chains`: one step's scaling
/// chains, which give each kernel's share of its time that is scaling.
pub(crate) fn fp8_work(records: &[KernelRecord], chains: Option<&ScaleChains>) -> Option<Fp8Work> {
    let rows: Vec<&KernelRecord> = records
        .iter()
        .filter(|r| r.gpu_time_pct.is_some())
        .collect();
    let total_ns: f64 = rows.iter().map(|r| r.total_time_ns).sum();
    let mut kernels: Vec<Fp8Kernel> = rows
        .iter()
        .filter_map(|r| {
            let (role, ns) = match roles::fp8_role(&r.name, fp8_tensor_ops(r)) {
                Some(role) => (role, r.total_time_ns),
                None => {
                    let (inside, all) = *chains?.per_kernel.get(&r.name)?;
                    let part = f64::from(inside) / f64::from(all.max(1));
                    (Fp8Role::Scale, r.total_time_ns * part)
                }
            };
            (ns > 0.0).then(|| Fp8Kernel {
                name: r.name.clone(),
                role,
                ns,
                share_pct: 100.0 * ns / total_ns.max(1.0),
            })
        })
        .collect();
    if !kernels.iter().any(|k| k.role == Fp8Role::Gemm) || total_ns <= 0.0 {
        return None;
    }
    kernels.sort_by(|a, b| b.ns.total_cmp(&a.ns).then(a.name.cmp(&b.name)));
    Some(Fp8Work { kernels, total_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names as the fp8 loop's H200 capture holds them (PyTorch 2.11).
    const ABS: &str = "void at::native::vectorized_elementwise_kernel<(int)8, at::native::AbsFunctor<c10::BFloat16>, std::array<char *, (unsigned long)2>>(int, T2, T3)";
    const DIV: &str = "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16>>>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)";
    const CAST: &str = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::float8_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda(c10::BFloat16) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)";
    const GEMM: &str = "nvjet_sm90_qqtst_64x8_128x16_1x2_h_bz_algo2_TNT";

    fn l(stream: i64, name: &str) -> (i64, String, i64) {
        (stream, name.to_string(), 1000)
    }

    /// An amax, a division and a cast make a chain; a division after the product is none; on
    /// another stream the chain waits for its own stream's cast.
    #[test]
    fn a_chain_runs_from_an_amax_to_its_cast_on_its_stream() {
        let c = chains(&[
            l(7, ABS),
            l(9, DIV),
            l(7, DIV),
            l(7, CAST),
            l(7, GEMM),
            l(7, DIV),
        ]);
        assert_eq!((c.in_chains, c.launches), (3, 6));
        assert_eq!(c.per_kernel[DIV], (1, 3));
        // No cast before the product: no chain.
        let c = chains(&[l(7, ABS), l(7, DIV), l(7, GEMM), l(7, CAST)]);
        assert_eq!(c.in_chains, 0);
    }

    /// A chain longer than CHAIN_MAX launches is another layer's work.
    #[test]
    fn a_chain_past_its_longest_is_none() {
        let mut steps = vec![l(0, ABS)];
        steps.extend((0..CHAIN_MAX).map(|_| l(0, DIV)));
        steps.push(l(0, CAST));
        assert_eq!(chains(&steps).in_chains, 0);
    }
}

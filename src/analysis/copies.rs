//! Kernels that copy weight-sized data by index every step (rules::WEIGHT_COPY): a mixture-of-
//! experts layer's eager path gathers the chosen experts' weights (transformers'
//! `vectorized_gather_kernel` at about 97 MB a call on the committed Mixtral decode) before its
//! matrix products read them again. Their bytes per call are set against the step's largest
//! matrix product's, so a copy of activations (KB at decode) is not one.

use crate::model::KernelRecord;

use super::roofline::Point;

/// One kernel that copies by index, with its figures in the captured range.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Copy {
    pub(crate) name: String,
    pub(crate) calls: u64,
    pub(crate) time_ns: f64,
    /// ncu's DRAM rate times the launches' mean nsys duration.
    pub(crate) bytes_per_call: f64,
}

/// The copies, with the matrix product they are measured against.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WeightCopies {
    pub(crate) kernels: Vec<Copy>,
    pub(crate) matrix_product: String,
    pub(crate) matrix_bytes_per_call: f64,
}

/// A copy by index, by its name: PyTorch's gather and index kernels (`vectorized_gather_kernel`,
/// `index_elementwise_kernel`, `indexSelectLargeIndex`), and others named alike. Top-k's
/// `gatherTopK` reads scores, not weights, and moves too few bytes to pass the size test.
pub(crate) fn copies_by_index(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("gather") || n.contains("index")
}

/// The kernels of `records` that copy by index at least `share_pct` of the bytes per call of
/// the largest matrix product (a kernel issuing tensor-core operations), each by ncu's DRAM
/// rate times its mean nsys duration; None where none does or no matrix product was measured.
pub(crate) fn weight_copies(
    records: &[KernelRecord],
    point: impl Fn(&KernelRecord) -> Option<Point>,
    share_pct: f64,
) -> Option<WeightCopies> {
    let per_call = |r: &KernelRecord, p: &Point| p.dram_bytes_per_s * r.avg_time_ns / 1e9;
    let (matrix, matrix_bytes) = records
        .iter()
        .filter_map(|r| Some((r, point(r).filter(|p| p.tensor_flops > 0.0)?)))
        .map(|(r, p)| (r, per_call(r, &p)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let kernels: Vec<Copy> = records
        .iter()
        .filter(|r| copies_by_index(&r.name))
        .filter_map(|r| {
            let p = point(r).filter(|p| p.tensor_flops == 0.0)?;
            let bytes = per_call(r, &p);
            (bytes > 0.0 && 100.0 * bytes >= share_pct * matrix_bytes).then(|| Copy {
                name: r.name.clone(),
                calls: r.instances,
                time_ns: r.total_time_ns,
                bytes_per_call: bytes,
            })
        })
        .collect();
    (!kernels.is_empty()).then(|| WeightCopies {
        kernels,
        matrix_product: matrix.name.clone(),
        matrix_bytes_per_call: matrix_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed Mixtral decode (H200, batch 4, 4 layers): the gather kernel copies
    /// 96.9 MB a call, 8 calls a step, beside a largest matrix product of 102.5 MB a call;
    /// top-k's gather moves KB and is no copy of weights. The eager qwen2 decode has none.
    #[test]
    fn the_moe_decode_gathers_weight_sized_copies() {
        let a = crate::testutil::artifacts("examples/sample-run-hf-moe");
        let c = weight_copies(&a.records, |r| a.point(r), 50.0).unwrap();
        assert_eq!(c.kernels.len(), 1, "{c:?}");
        let k = &c.kernels[0];
        assert!(k.name.contains("vectorized_gather_kernel"), "{}", k.name);
        assert_eq!(k.calls, 56);
        assert!((k.bytes_per_call / 1e6 - 96.92).abs() < 0.01, "{k:?}");
        assert!(
            (c.matrix_bytes_per_call / 1e6 - 102.50).abs() < 0.01,
            "{c:?}"
        );
        assert!(c.matrix_product.contains("nvjet_sm90_tst_128x8_64x12"));
        let eager = crate::testutil::artifacts("examples/sample-run-hf-eager");
        assert_eq!(
            weight_copies(&eager.records, |r| eager.point(r), 50.0),
            None
        );
    }
}

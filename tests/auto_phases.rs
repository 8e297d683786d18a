//! Automatic phases (`--auto-nvtx`) against a workload's own hand-written marks, on real
//! captures of the same generate() loop (tests/data/hf/auto-vs-hand): the same ranges, the
//! same kernels launched in them, the same kernel time within noise.

use std::path::PathBuf;

fn data(run: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf/auto-vs-hand")
        .join(run)
}

/// Range -> instances, and kernel name -> (instances, total ns), from a run's nsys stats CSVs.
#[allow(clippy::type_complexity)]
fn figures(
    run: &str,
) -> (
    Vec<(String, u64)>,
    std::collections::BTreeMap<String, (u64, f64)>,
) {
    let ranges = stage2::parse::nsys::read_ranges(&data(run).join("summary_nvtx_sum.csv")).unwrap();
    let kernels =
        stage2::parse::nsys::read_kernels(&data(run).join("summary_cuda_gpu_kern_sum.csv"))
            .unwrap();
    (
        ranges
            .iter()
            .map(|r| (r.name().to_string(), r.instances))
            .collect(),
        kernels
            .into_iter()
            .map(|k| (k.name, (k.instances, k.total_ns)))
            .collect(),
    )
}

#[test]
fn automatic_phases_capture_what_hand_written_marks_capture() {
    for (hand, autos) in [
        ("eager-hand", &["eager-auto", "eager-auto200"][..]),
        ("static-hand", &["static-auto"][..]),
    ] {
        let (h_ranges, h_kernels) = figures(hand);
        assert_eq!(h_ranges, [("decode".to_string(), 15)], "{hand}");
        let h_total: f64 = h_kernels.values().map(|k| k.1).sum();
        for auto in autos {
            let (a_ranges, a_kernels) = figures(auto);
            assert_eq!(a_ranges, h_ranges, "{auto}");
            // The same kernels, launched as often (CUDA graph nodes included).
            let launches = |k: &std::collections::BTreeMap<String, (u64, f64)>| {
                k.iter().map(|(n, v)| (n.clone(), v.0)).collect::<Vec<_>>()
            };
            assert_eq!(launches(&a_kernels), launches(&h_kernels), "{auto}");
            let a_total: f64 = a_kernels.values().map(|k| k.1).sum();
            assert!(
                (a_total - h_total).abs() / h_total < 0.02,
                "{auto}: {a_total} vs {h_total}"
            );
        }
    }
}

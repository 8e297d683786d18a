use super::*;
use crate::parse::{ncu, nsys};
use crate::testutil::data;

#[test]
fn join_key_equates_nsys_and_ncu_spellings() {
    assert_eq!(
        join_key("void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float>>>(int, T3)"),
        join_key("void at::elementwise_kernel<128, 4, void at::gpu_kernel_impl_nocast<at::BinaryFunctor<float>>>(int, T3)")
    );
    assert_eq!(
        join_key("void at::native::<unnamed>::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, (int)2, (int)2, (int)-2>(at::cuda::detail::TensorInfo<T1, T3>)"),
        join_key("void at::<unnamed>::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, (int)-2>(cuda::TensorInfo<T1, T3>)")
    );
}

#[test]
fn short_names_are_the_function() {
    assert_eq!(
        short_name("void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctorOnSelf_add<float>>(int, T2, T3)"),
        "vectorized_elementwise_kernel"
    );
    assert_eq!(
        short_name("void at::native::<unnamed>::CatArrayBatchedCopy<at::native::<unnamed>::OpaqueType<(unsigned int)2>>(T1 *)"),
        "CatArrayBatchedCopy"
    );
    assert_eq!(
        short_name("nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"),
        "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"
    );
    assert_eq!(
        short_name("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_tn_align1>(T1::Params)"),
        "Kernel2"
    );
}

#[test]
fn real_captures_join_every_ncu_kernel() {
    let k = nsys::read_kernels(&data("nsys/summary_cuda_gpu_kern_sum.csv")).unwrap();
    let n = ncu::read_raw(&data("ncu/decode_raw.csv")).unwrap();
    let recs = build(Some(&k), None, Some(&n), Some("decode"));
    let unmatched: Vec<&str> = recs
        .iter()
        .filter(|r| r.time_source == TimeSource::Ncu)
        .map(|r| r.name.as_str())
        .collect();
    assert!(unmatched.is_empty(), "{unmatched:#?}");
    assert_eq!(recs.len(), 26);
    assert_eq!(recs[0].name, "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN");
    assert_eq!(recs[0].instances, 160);
    assert_eq!(recs[0].ncu_instances, 3);
    assert!(recs.iter().all(|r| r.sm_throughput_pct.is_some()));
    let pct: f64 = recs.iter().filter_map(|r| r.gpu_time_pct).sum();
    assert!((pct - 100.0).abs() < 1e-6);
    // The tiny model's kernels are far from any peak.
    assert!(recs.iter().all(|r| r.bound == Some(Bound::Latency)));
}

#[test]
fn ncu_alone_ranks_by_ncu_time() {
    let n = ncu::read_raw(&data("ncu/decode_raw.csv")).unwrap();
    let recs = build(None, None, Some(&n), None);
    assert_eq!(recs.len(), n.kernels.len());
    assert!(recs
        .windows(2)
        .all(|w| w[0].total_time_ns >= w[1].total_time_ns));
    assert!(recs.iter().all(|r| r.gpu_time_pct.is_some()));
}

#[test]
fn bound_rule() {
    assert_eq!(Bound::classify(80.0, 20.0), Bound::Compute);
    assert_eq!(Bound::classify(30.0, 75.0), Bound::Memory);
    assert_eq!(Bound::classify(70.0, 75.0), Bound::Memory);
    assert_eq!(Bound::classify(10.0, 5.0), Bound::Latency);
}

#[test]
fn display_names_say_the_operation() {
    assert_eq!(
        display_name("void at::native::vectorized_elementwise_kernel<(int)4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 2)]>(int, T2, T3)"),
        "vectorized_elementwise_kernel [rsqrt]"
    );
    assert_eq!(
        display_name("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)"),
        "reduce_kernel [MeanOps]"
    );
    assert_eq!(
        display_name("void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char *, (unsigned long)3>>(int, T2, T3)"),
        "vectorized_elementwise_kernel [CUDAFunctor_add]"
    );
    assert_eq!(
        display_name("nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"),
        "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN"
    );
    // PyTorch's generic launcher names no operation; its functor, or a lambda's launcher, does.
    assert_eq!(
        display_name("void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16>>>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)"),
        "elementwise_kernel [DivFunctor]"
    );
    assert_eq!(
        display_name("void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::launch_clamp_scalar(at::TensorIteratorBase &, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)"),
        "vectorized_elementwise_kernel [clamp_scalar]"
    );
}

#[test]
fn real_captures_join_by_mangled_name() {
    let k = nsys::read_kernels(&data("nsys/summary_cuda_gpu_kern_sum.csv")).unwrap();
    let map = crate::parse::sqlite::NsysDb::open(&data("nsys/run.sqlite"))
        .unwrap()
        .mangled_names()
        .unwrap();
    let mut n = ncu::read_raw(&data("ncu/decode_raw.csv")).unwrap();
    ncu::attach_mangled(&mut n, &data("ncu/decode_raw_mangled.csv")).unwrap();
    // Poison the demangled spellings: only the mangled names can join now.
    for kernel in &mut n.kernels {
        kernel.name = format!("renamed {}", kernel.name);
    }
    let recs = build(Some(&k), Some(&map), Some(&n), Some("decode"));
    assert_eq!(recs.len(), 26);
    assert!(
        recs.iter().all(|r| r.ncu_instances > 0),
        "every nsys kernel has ncu metrics"
    );
    assert_eq!(recs.iter().map(|r| r.ncu_instances).sum::<u64>(), 29);
}

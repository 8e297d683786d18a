use super::*;

/// A claim about `prefill` offered a figure ncu measured only in `decode` (the lead command's
/// tensor-core advice): refused, whichever pass measured it.
#[test]
fn a_claim_takes_no_figure_measured_in_another_range() {
    let decode = Scope::range("decode").ncu().kernel("gemm");
    let fig = Figure::new(Quantity::TensorPipePct, 0.8, "ncu/decode_raw.csv", &decode);
    let refused = Finding::new(
        Claim::TensorCoresIdle,
        Scope::range("prefill"),
        Some(rules::TENSOR_IDLE),
        vec![fig.clone()],
    );
    let e = refused.unwrap_err();
    assert_eq!(e.claim.range.as_deref(), Some("prefill"));
    assert_eq!(e.figure.range.as_deref(), Some("decode"));
    // The same figure carries a claim about decode.
    let ok = Finding::new(
        Claim::TensorCoresIdle,
        Scope::range("decode"),
        Some(rules::TENSOR_IDLE),
        vec![fig],
    )
    .unwrap();
    assert_eq!(ok.role, Role::Verdict);
}

/// A whole-capture figure (cuda_api_sum) does not support a claim about one range, nor one
/// rank's figure a claim about another rank.
#[test]
fn whole_capture_and_other_rank_figures_are_refused() {
    let api = Figure::new(
        Quantity::LaunchApiCalls,
        5548.0,
        "nsys/summary_cuda_api_sum.csv",
        &Scope::capture(),
    );
    assert!(Finding::new(Claim::LaunchCalls, Scope::range("prefill"), None, vec![api]).is_err());
    let r1 = Figure::new(Quantity::NcclWaitNs, 1.0, "x", &Scope::capture().rank(1));
    assert!(Finding::new(
        Claim::NcclTime,
        Scope::capture().rank(0),
        None,
        vec![r1.clone()]
    )
    .is_err());
    assert!(Finding::new(Claim::NcclTime, Scope::capture(), None, vec![r1]).is_ok());
}

/// A refused finding is kept as an abstention that says why, never as a claim.
#[test]
fn a_refused_finding_becomes_an_abstention() {
    let mut all = Findings::default();
    let fig = Figure::new(Quantity::WallNs, 1.0, "x", &Scope::range("decode"));
    all.push(Claim::PhaseTime, Scope::range("prefill"), None, vec![fig]);
    assert_eq!(all.made().count(), 0);
    assert!(all.0[0]
        .abstain
        .as_deref()
        .unwrap()
        .contains("cannot support"));
}

#[test]
fn each_quantity_prints_one_way() {
    assert_eq!(Quantity::GpuBusyOfRangePct.text(74.04), "74.0%");
    assert_eq!(Quantity::WallNs.text(6_730_000.0), "6.73 ms");
    assert_eq!(Quantity::KernelLaunches.text(5280.0), "5280");
    assert_eq!(Quantity::FlopPerByte.text(0.031), "0.03 FLOP/byte");
    assert_eq!(Quantity::MsPerToken.text(3.36), "3.360 ms");
}

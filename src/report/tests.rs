use super::*;
use crate::analysis::summary;
use crate::analysis::Artifacts;
use crate::commands::report::render_all;
use crate::config::Config;
use crate::rundir::{KERN_SUM, SQLITE};

fn fixture_run(with_ncu: bool) -> (tempfile::TempDir, RunDir) {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), Some("fixture")).unwrap();
    let data = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for f in [
        "summary_cuda_gpu_kern_sum.csv",
        "summary_nvtx_sum.csv",
        "summary_cuda_api_sum.csv",
        "run.sqlite",
    ] {
        std::fs::copy(data.join("nsys").join(f), run.nsys(f)).unwrap();
    }
    if with_ncu {
        std::fs::copy(data.join("ncu/decode_raw.csv"), run.ncu("decode_raw.csv")).unwrap();
    }
    (tmp, run)
}

fn cfg() -> Config {
    crate::config::resolve(&crate::config::Sources {
        embedded_only: true,
        overrides: vec!["nsys.nvtx_capture=decode".into()],
        ..Default::default()
    })
    .unwrap()
    .config
}

#[test]
fn renders_the_real_captures_with_exact_nsys_figures() {
    let (_tmp, run) = fixture_run(true);
    let s = render_all(&run, cfg()).unwrap();
    assert_eq!(s.kernels[0].name, "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN");
    assert_eq!(
        (s.kernels[0].instances, s.kernels[0].total_time_ns),
        (160, 526214.0)
    );
    assert_eq!(s.totals.kernel_launches, 1464);
    assert_eq!(s.totals.capture_range_wall_ns, Some(715_174_939.0));
    assert!((s.totals.ncu_coverage_pct.unwrap() - 100.0).abs() < 1e-6);
    let md = std::fs::read_to_string(run.file("kernels.md")).unwrap();
    assert!(
        md.contains("| 1 | nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN | 160 | 526.21 |"),
        "{md}"
    );
    let csv = std::fs::read_to_string(run.file("kernels.csv")).unwrap();
    assert!(csv.starts_with("rank,name,short_name,instances,total_time_ns,avg_time_ns,gpu_time_pct,sm_throughput_pct,dram_throughput_pct,"));
    assert_eq!(csv.lines().count(), 27);
    let stake = std::fs::read_to_string(run.file("stakeholder_summary.md")).unwrap();
    // The verdict follows from the wall-time ledger of this capture (no child ranges here).
    assert!(
        stake.contains("the GPU mostly waits on the CPU, and 83.6% of decode is code compiled and loaded for kernels' first use (CPU time ending in a module or library load) (compile-bound)[^"),
        "{stake}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.file("summary.json")).unwrap()).unwrap();
    assert_eq!(json["schema_version"], summary::SCHEMA_VERSION);
}

#[test]
fn snapshots_of_the_rendered_reports() {
    let (_tmp, run) = fixture_run(true);
    render_all(&run, cfg()).unwrap();
    insta::assert_snapshot!(
        "kernels_md",
        std::fs::read_to_string(run.file("kernels.md")).unwrap()
    );
    insta::assert_snapshot!(
        "stakeholder_summary_md",
        std::fs::read_to_string(run.file("stakeholder_summary.md")).unwrap()
    );
}

#[test]
fn nsys_only_and_empty_runs_render() {
    let (_tmp, run) = fixture_run(false);
    let s = render_all(&run, cfg()).unwrap();
    assert_eq!(s.totals.ncu_coverage_pct, None);
    let stake = std::fs::read_to_string(run.file("stakeholder_summary.md")).unwrap();
    assert!(stake.contains("No ncu metrics"));
    let tmp = tempfile::tempdir().unwrap();
    let empty = RunDir::create(tmp.path(), Some("e")).unwrap();
    let s = render_all(&empty, cfg()).unwrap();
    assert!(s.kernels.is_empty());
    assert!(std::fs::read_to_string(empty.file("kernels.md"))
        .unwrap()
        .contains("No kernel data"));
}

#[test]
fn markdown_escapes_table_breakers() {
    assert_eq!(fmt::md("a|b<c>&d"), "a\\|b&lt;c&gt;&amp;d");
    assert_eq!(fmt::cut("abcdef", 4), "abc…");
}

#[test]
fn a_broken_csv_is_a_parse_error_naming_the_file() {
    let (_tmp, run) = fixture_run(false);
    std::fs::write(
        run.file(KERN_SUM),
        "Time (%),Total Time (ns),Instances,Avg (ns),Name\n1.0,abc,3,4,k\n",
    )
    .unwrap();
    let err = render_all(&run, cfg()).err().unwrap();
    assert_eq!(err.exit_code(), crate::exit_codes::PARSE);
    let msg = err.to_string();
    assert!(
        msg.contains("summary_cuda_gpu_kern_sum.csv:2") && msg.contains("Total Time (ns)"),
        "{msg}"
    );
}

#[test]
fn per_range_figures_match_the_sqlite_and_the_run_is_launch_bound() {
    let (_tmp, run) = fixture_run(true);
    let s = render_all(&run, cfg()).unwrap();
    let decode = s.ranges.iter().find(|r| r.name == "decode").unwrap();
    assert_eq!(decode.total_ns, 715_174_939.0);
    let kernel = decode.kernel_ns.unwrap();
    assert!(
        (kernel - 2_798_262.0).abs() / 2_798_262.0 < 0.01,
        "{kernel}"
    );
    assert_eq!(decode.launches, Some(1464));
    assert!(decode.gpu_busy_of_range_pct.unwrap() < 50.0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.file("summary.json")).unwrap()).unwrap();
    let verdict = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "range_verdict" && f["scope"]["range"] == "decode")
        .unwrap();
    assert_eq!(verdict["verdict"], "compile-bound");
    assert_eq!(s.sources["ranges"], SQLITE);
    let stake = std::fs::read_to_string(run.file("stakeholder_summary.md")).unwrap();
    assert!(
        stake.contains("715.17 ms of CPU wall time under nsys, its GPU work spanning ")
            && stake.contains(" the GPU ran 2.80 ms of kernels in 1464 launches, busy "),
        "{stake}"
    );
    assert!(stake.contains("(compile-bound)[^"));
}

#[test]
fn roofline_svg_is_valid_and_names_every_point() {
    let (_tmp, run) = fixture_run(true);
    render_all(&run, cfg()).unwrap();
    let text = std::fs::read_to_string(run.file("roofline.svg")).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("roofline.svg is well-formed XML");
    let circles: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .collect();
    assert!(circles.len() >= 20, "{}", circles.len());
    for c in &circles {
        let title = c
            .children()
            .find(|n| n.has_tag_name("title"))
            .expect("each point has a title");
        assert!(title.text().unwrap_or("").contains("FLOP/byte"));
        // Every point lies inside the plot, radius included.
        let f = |a: &str| c.attribute(a).unwrap().parse::<f64>().unwrap();
        let (x, y, r) = (f("cx"), f("cy"), f("r"));
        assert!(x - r >= 80.0 - 1e-9 && x + r <= 730.0 + 1e-9, "{x} {r}");
        assert!(y - r >= 40.0 - 1e-9 && y + r <= 440.0 + 1e-9, "{y} {r}");
    }
    // The ten largest are numbered (their rank), there is a legend, and the axis is in GFLOP/s
    // as kernels.md's roofline table.
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"1"), "rank 1 numbered");
    assert!(texts
        .iter()
        .any(|t| t.starts_with("number: its rank in kernels.md")));
    assert!(texts.contains(&"achieved GFLOP/s"));
    // Deterministic: rendering again gives the same bytes.
    render_all(&run, cfg()).unwrap();
    assert_eq!(
        std::fs::read_to_string(run.file("roofline.svg")).unwrap(),
        text
    );
    insta::assert_snapshot!("roofline_svg", text);
}

/// The real GPU-metrics capture (tests/data/hf/gpu-metrics) without its ncu figures, as
/// `--quick` leaves it: its top kernels are latency-bound by their samples, so no claim. Then
/// mutated here (named so): the top kernel's samples made memory-bound, then thin.
#[test]
fn a_top_kernel_ncu_did_not_classify_takes_its_sampled_class_or_an_abstention() {
    let tmp = tempfile::tempdir().unwrap();
    let src =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hf/gpu-metrics");
    let dir = tmp.path().join("gm");
    std::fs::create_dir_all(dir.join("nsys")).unwrap();
    for f in ["config.yaml", "status.json"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    for e in std::fs::read_dir(src.join("nsys")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join("nsys").join(e.file_name())).unwrap();
    }
    let run = crate::rundir::RunDir::open(&dir).unwrap();
    let config = crate::config::resolve(&crate::config::Sources {
        embedded_only: true,
        overrides: vec!["nsys.nvtx_capture=decode".into()],
        ..Default::default()
    })
    .unwrap()
    .config;
    let mut a = crate::analysis::Artifacts::load(&run, config).unwrap();
    let sampled = |f: &crate::findings::Findings| {
        f.0.iter()
            .filter(|x| matches!(x.claim, crate::findings::Claim::SampledBound { .. }))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(a.records[0].bound.is_none() && a.records[0].sampled.is_some());
    assert!(
        sampled(&crate::findings::derive(&a)).is_empty(),
        "latency-bound kernels make no claim"
    );
    let s = a.records[0].sampled.as_mut().unwrap();
    s.all.bound = Some(crate::model::Bound::Memory);
    s.all.dram_pct = Some(71.0);
    let made = sampled(&crate::findings::derive(&a));
    assert_eq!(made.len(), 1);
    let f = &made[0];
    // The capture's decode keeps the GPU 20% busy: the class is withheld as advice, its
    // figures kept (rules::KERNEL_ADVICE).
    assert!(f
        .abstain
        .as_deref()
        .is_some_and(|w| w.contains("(rule kernel_advice)")));
    assert_eq!(f.get(crate::findings::Quantity::SampledDramPct), Some(71.0));
    assert_eq!(
        f.get(crate::findings::Quantity::SampledCoveragePct),
        Some(100.0)
    );
    assert_eq!(
        f.figure(crate::findings::Quantity::SampledDramPct)
            .unwrap()
            .source,
        "nsys/run.sqlite"
    );
    let text = phrase::sentence(f);
    assert!(text.starts_with("1 of the top kernels in `decode` that ncu did not measure is memory-bound by the GPU metrics nsys sampled over every launch (elementwise_kernel"), "{text}");
    assert!(
        text.contains("DRAM 71.0%, SM issue or tensor 4.6%, coverage 100.0%"),
        "{text}"
    );
    let s = a.records[0].sampled.as_mut().unwrap();
    s.all.coverage_pct = 40.0;
    s.all.bound = None;
    let thin = sampled(&crate::findings::derive(&a));
    assert_eq!(thin.len(), 1);
    assert!(
        thin[0]
            .abstain
            .as_deref()
            .unwrap()
            .contains("under 80% of the time of elementwise_kernel"),
        "{:?}",
        thin[0].abstain
    );
}

/// The real GPU-metrics capture with ncu (tests/data/hf/gpu-metrics), copied where its
/// report may be written.
fn gpu_metrics_run() -> (tempfile::TempDir, RunDir) {
    let tmp = tempfile::tempdir().unwrap();
    let src =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hf/gpu-metrics");
    let dir = tmp.path().join("gm");
    for sub in ["", "nsys", "ncu"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap() {
            let e = e.unwrap();
            if e.path().is_file() {
                std::fs::copy(e.path(), dir.join(sub).join(e.file_name())).unwrap();
            }
        }
    }
    let run = RunDir::open(&dir).unwrap();
    (tmp, run)
}

/// A pass whose budget afforded ncu only the largest of its kernels, then stopped it (the
/// real capture's status.json mutated here, named so): the coverage line says both, and names
/// the largest kernel left without ncu's figures with its nsys share.
#[test]
fn a_budget_that_narrowed_and_stopped_the_pass_is_said_on_the_coverage_line() {
    let (_tmp, run) = gpu_metrics_run();
    let mut a = Artifacts::load(&run, cfg()).unwrap();
    let ncu = a
        .status
        .as_mut()
        .and_then(|s| s.passes.get_mut("ncu"))
        .and_then(|p| p.ncu.as_mut())
        .unwrap();
    ncu.budget = Some(crate::rundir::status::NcuBudget {
        s: 14.0,
        from: "ncu.budget_s".into(),
        reached: true,
    });
    let cost = ncu.cost.as_mut().unwrap();
    cost.kernels = 4;
    cost.deferred = 5;
    a.records[0].ncu_instances = 0;
    let top = crate::model::display_name(&a.records[0].name);
    let share = a.records[0].gpu_time_pct.unwrap();
    let f = crate::findings::derive(&a);
    let c = f
        .made()
        .find(|x| matches!(x.claim, crate::findings::Claim::NcuCoverage { .. }))
        .unwrap();
    assert_eq!(
        c.get(crate::findings::Quantity::KernelSharePct),
        Some(share)
    );
    let text = phrase::fact(c);
    assert!(text.contains("its time budget of 14 s (ncu.budget_s; status.json) afforded the 4 largest of the chosen kernels the metrics cache lacked at the pace an earlier run of this workload measured, and 5 more are left for a re-run"), "{text}");
    assert!(
        text.contains(&format!(
            "ncu was stopped at its time budget of 14 s (ncu.budget_s; status.json), the largest kernel left without its figures {}",
            crate::report::fmt::md(&top)
        )),
        "{text}"
    );
}

/// The real GPU-metrics capture with ncu: no configuration disagrees beyond the band; one
/// made to (mutated here, named so) becomes a caveat citing both tools' figures.
#[test]
fn a_configuration_the_two_tools_disagree_on_is_a_caveat() {
    let (_tmp, run) = gpu_metrics_run();
    let mut a = Artifacts::load(&run, cfg()).unwrap();
    let apart = |a: &Artifacts| {
        crate::findings::derive(a)
            .made()
            .filter(|x| matches!(x.claim, crate::findings::Claim::SampledDisagrees { .. }))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert!(apart(&a).is_empty());
    let r = a
        .records
        .iter_mut()
        .find(|r| r.name.starts_with("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"))
        .unwrap();
    let c = r
        .sampled
        .as_mut()
        .unwrap()
        .configs
        .iter_mut()
        .find(|c| c.grid == "(4,11,1)")
        .unwrap();
    c.figures.dram_pct = Some(48.0);
    // The comparison is made once at load: made again over the changed record.
    let records = a.records.clone();
    a.sampled.as_mut().unwrap().beside(&records, a.ncu.as_ref());
    let got = apart(&a);
    assert_eq!(got.len(), 1);
    let text = phrase::sentence(&got[0]);
    assert!(text.starts_with("The two tools disagree on `nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT` with grid (4,11,1) in `decode`: DRAM 48.0% sampled over every launch (coverage 100.0%), 26.6% in ncu's replay of one"), "{text}");
    assert_eq!(got[0].role, crate::findings::Role::Caveat);
    // Figures an earlier run sampled say whose launches they are over, and cite their file.
    let mut reused = got[0].clone();
    for e in reused
        .evidence
        .iter_mut()
        .filter(|e| e.source == "nsys/run.sqlite")
    {
        e.source = crate::findings::document::REUSED_FIGURES.to_string();
    }
    let text = phrase::sentence(&reused);
    assert!(text.contains("DRAM 48.0% sampled over every launch of an earlier run of the same command, reused here (coverage 100.0%)"), "{text}");
    assert!(text.contains("nsys/gpu_metrics_reused.json"), "{text}");
}

/// An idle-GPU verdict over two unlike instances (assisted generation's two `decode`
/// forwards, 7.44 and 352.85 ms on an H200) says the slowest decides it.
#[test]
fn an_idle_verdict_over_two_unlike_instances_says_which_decides() {
    use crate::findings::{Claim, Figure, Findings, Quantity as Q, Scope};
    let scope = Scope::range("decode").instances(2);
    let fig = |q, v| Figure::new(q, v, "nsys/run.sqlite", &scope);
    let mut f = Findings::default();
    f.push(
        Claim::GpuIdle {
            verdict: None,
            story: None,
            python_in_model: false,
            python_function: None,
            from_graphs: false,
            compiled_for: Vec::new(),
        },
        scope.clone(),
        None,
        vec![
            fig(Q::GpuBusyOfRangePct, 0.4),
            fig(Q::FastestInstanceMs, 7.44),
            fig(Q::SlowestInstanceMs, 352.85),
        ],
    );
    let text = phrase::sentence(f.made().next().unwrap());
    assert!(
        text.contains("(busy 0.4% of the range time). Its 2 instances took 7.44 ms to 352.85 ms: the slowest decides this verdict, and the instances are too few to group."),
        "{text}"
    );
}

//! `run.crosscheck=true`: after the passes, NVIDIA's own summaries of the run's captures into
//! `nvidia/`, each command line in cmd.txt, the workload not run again. The fakes replay a
//! real H100 capture (tests/data/hf/eager) and NVIDIA's summaries of it.

mod common;

use common::{read, status, Sandbox, DECODE};

fn with_crosscheck(sb: &Sandbox, id: &str, extra: &[&str]) -> assert_cmd::Command {
    let mut args = vec!["run.crosscheck=true"];
    args.extend_from_slice(extra);
    args.extend_from_slice(DECODE);
    let mut c = sb.profile(id, &args);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    c.env("FAKE_NSYS_DIR", root.join("tests/data/hf/eager/nsys"));
    c
}

#[test]
fn nvidia_summaries_of_both_captures_are_written_to_nvidia() {
    let sb = Sandbox::new();
    with_crosscheck(&sb, "x", &[]).assert().success();
    let run = sb.run("x");
    let st = status(&run);
    let pass = &st["passes"]["nvidia"];
    assert_eq!(pass["state"], "ok", "{pass}");
    for f in [
        "run_nvtx_kern_sum.csv",
        "run_nvtx_gpu_proj_sum.csv",
        "run_cuda_gpu_kern_sum.csv",
        "run_nvtx_sum.csv",
        "run_cuda_gpu_kern_gb_sum_nvtx-name.csv",
        "decode_print_summary.csv",
    ] {
        assert!(run.join("nvidia").join(f).is_file(), "{f}: {pass}");
    }
    let cmd = read(run.join("nvidia/cmd.txt"));
    assert!(
        cmd.contains("stats --report nvtx_kern_sum") && cmd.contains("nsys/run.sqlite"),
        "{cmd}"
    );
    assert!(cmd.contains("--print-summary per-kernel"), "{cmd}");
    // The report holds its range figures against NVIDIA's: equal on this capture.
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let f = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "nvidia_summaries")
        .cloned()
        .unwrap_or_default();
    assert_eq!(f["role"], "fact", "{f}");
    // decode's time in launches of at most 66 blocks, beside NVIDIA's per-grid summary.
    assert_eq!(f["grids"]["range"], "decode", "{f}");
    assert_eq!(f["grids"]["named_ns"], f["grids"]["kernel_ns"], "{f}");
    assert!(
        cmd.contains("--report cuda_gpu_kern_gb_sum:nvtx-name"),
        "{cmd}"
    );
    assert!(read(run.join("stakeholder_summary.md")).contains("0 differ"));
    // Not asked for: no pass, no folder.
    with_crosscheck(&sb, "y", &["run.crosscheck=false"])
        .assert()
        .success();
    assert!(status(&sb.run("y"))["passes"].get("nvidia").is_none());
    assert!(!sb.run("y").join("nvidia").exists());
}

/// One summary that fails is a warning naming it and its log; the others are kept.
#[test]
fn a_summary_that_fails_costs_only_itself() {
    let sb = Sandbox::new();
    // The default replayed capture has no NVIDIA per-range reports recorded: the fake's
    // `nsys stats` fails there (a hand-made failure, for this path).
    let mut args = vec!["run.crosscheck=true"];
    args.extend_from_slice(DECODE);
    sb.profile("x", &args).assert().success();
    let run = sb.run("x");
    let pass = &status(&run)["passes"]["nvidia"];
    assert_eq!(pass["state"], "ok", "{pass}");
    let warnings = pass["warnings"].to_string();
    assert!(
        warnings.contains("nsys stats") && warnings.contains("nvidia/run.stats.log"),
        "{warnings}"
    );
    assert!(run.join("nvidia/decode_print_summary.csv").is_file());
}

/// Under a launcher each rank's export and each profiled rank's report get their own summaries,
/// named by rank; the reports compare rank 0's.
#[test]
fn every_rank_gets_its_summaries() {
    let sb = Sandbox::new();
    with_crosscheck(
        &sb,
        "tp",
        &["--launcher", "torchrun", "--nproc-per-node", "2"],
    )
    .assert()
    .success();
    let run = sb.run("tp");
    let pass = &status(&run)["passes"]["nvidia"];
    assert_eq!(pass["state"], "ok", "{pass}");
    for rank in [0, 1] {
        let f = run.join(format!("nvidia/run.rank{rank}_nvtx_kern_sum.csv"));
        assert!(f.is_file(), "{}: {pass}", f.display());
    }
    let cmd = read(run.join("nvidia/cmd.txt"));
    assert!(cmd.contains("nsys/run.rank1.sqlite"), "{cmd}");
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    let kinds: Vec<&str> = summary["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"nvidia_summaries"), "{kinds:?}");
}

/// A dry run writes the summaries' command lines for the files the passes would write: the
/// nsys export and the ncu report their own cmd.txt names.
#[test]
fn a_dry_run_names_the_files_the_passes_would_write() {
    let sb = Sandbox::new();
    with_crosscheck(&sb, "d", &["--dry-run"]).assert().success();
    let run = sb.run("d");
    let cmd = read(run.join("nvidia/cmd.txt"));
    let nsys = read(run.join("nsys/cmd.txt"));
    let ncu = read(run.join("ncu/cmd.txt"));
    let export = run.join("nsys/run.sqlite").display().to_string();
    assert!(
        cmd.contains(&export) && nsys.contains(&export),
        "{cmd}\n{nsys}"
    );
    let base = run.join("ncu/decode").display().to_string();
    assert!(
        cmd.contains(&format!("--import {base}.ncu-rep --print-summary")),
        "{cmd}"
    );
    // The attach that profiles the held workload ends with the report it writes.
    assert!(ncu.contains(&format!("-o {base}\n")), "{ncu}");
    assert!(!run.join("nvidia/run_nvtx_kern_sum.csv").exists());
}

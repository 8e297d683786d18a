//! Multi-rank runs through a launcher, with fake torchrun, nsys and ncu.

mod common;

use common::{read, status, Sandbox};

#[test]
fn torchrun_two_ranks_per_rank_nsys_one_rank_ncu_merged_reports() {
    let sb = Sandbox::new();
    sb.profile(
        "tp",
        &[
            &["--launcher", "torchrun", "--nproc-per-node", "2"],
            common::DECODE,
        ]
        .concat(),
    )
    .assert()
    .success();
    let run = sb.run("tp");
    let nsys_cmd = read(run.join("nsys/cmd.txt"));
    let first = nsys_cmd.lines().next().unwrap();
    assert!(
        first.starts_with("torchrun --nnodes 1 --nproc-per-node 2 --no-python "),
        "{first}"
    );
    assert!(
        first.contains(" profile --trace=") && first.contains("nsys/run.rank%q{RANK}'"),
        "{first}"
    );
    // Each rank wrote its own report; each was exported on its own.
    for r in 0..2 {
        for f in [
            format!("nsys/run.rank{r}.nsys-rep"),
            format!("nsys/run.rank{r}.sqlite"),
            format!("nsys/summary.rank{r}_cuda_gpu_kern_sum.csv"),
            format!("nsys/summary.rank{r}_nvtx_sum.csv"),
        ] {
            assert!(run.join(&f).is_file(), "missing {f}");
        }
    }
    // ncu ran on rank 0 only; rank 1 ran the bare workload.
    let ncu_cmd = read(run.join("ncu/cmd.txt"));
    let ncu_line = ncu_cmd.lines().next().unwrap();
    assert!(ncu_line.contains("__rank-exec RANK 0 3 -- "), "{ncu_cmd}");
    // NCCL without P2P in the ncu pass only (replay would roll back a peer's writes).
    assert!(
        ncu_line.starts_with("env NCCL_P2P_DISABLE=1 torchrun "),
        "{ncu_line}"
    );
    let calls = sb.calls();
    let p2p: Vec<&str> = calls
        .lines()
        .filter(|l| l.starts_with("torchrun-env "))
        .collect();
    assert_eq!(
        p2p,
        [
            "torchrun-env NCCL_P2P_DISABLE=",
            "torchrun-env NCCL_P2P_DISABLE=1"
        ],
        "{calls}"
    );
    assert_eq!(sb.ncu_profiles().len(), 1, "{calls}");
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("nsys profile") && !l.contains("=help"))
            .count(),
        2,
        "{calls}"
    );
    assert!(run.join("ncu/decode.ncu-rep").is_file());
    assert_eq!(status(&run)["state"], "ok");
    // Merged: the kernel table sums the ranks; per-rank columns, stragglers and NCCL share.
    let md = read(run.join("kernels.md"));
    assert!(
        md.contains("| 1 | nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN | 320 | 1052.43 |"),
        "{md}"
    );
    assert!(md.contains("## Per rank (2 ranks"), "{md}");
    assert!(
        md.contains("| kernel | rank 0 (us) | rank 1 (us) | total (us) |"),
        "{md}"
    );
    assert!(
        md.contains("| decode | 715.17 | 715.17 | 715.17 | rank "),
        "{md}"
    );
    assert!(md.contains("NCCL share"), "{md}");
    // The capture ran on past `decode` (nsys.capture_range_end=none), so the kernel time is the
    // whole capture's; ncu measured in `decode`: the sentence names each for what it is.
    assert!(
        md.contains("Hardware counters (ncu) measured in `decode` for 12 kernels, which hold 80.2% of the kernel time in the whole capture, 19.8% left out"),
        "{md}"
    );
    let summary: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    assert_eq!(summary["ranks"].as_array().unwrap().len(), 2);
    assert_eq!(summary["ranks"][1]["launches"], 1464);
    assert!(read(run.join("stakeholder_summary.md"))
        .contains("NCCL kernels take 0.0% of the ranks' GPU time"));
}

#[test]
fn srun_and_mpirun_name_reports_by_their_rank_variables() {
    let sb = Sandbox::new();
    for (launcher, head, var) in [
        (
            "srun",
            "srun --nodes 2 --ntasks-per-node 4 ",
            "%q{SLURM_PROCID}",
        ),
        ("mpirun", "mpirun -np 8 ", "%q{OMPI_COMM_WORLD_RANK}"),
    ] {
        sb.stage2_without_tools()
            .args([
                "profile",
                "--dry-run",
                "--run-root",
                "runs",
                "--run-id",
                launcher,
                "--launcher",
                launcher,
                "--nproc-per-node",
                "4",
                "--nnodes",
                "2",
                "ncu.ranks=[1]",
                "--",
                "python3",
                "w.py",
            ])
            .assert()
            .success();
        let nsys = read(sb.run(launcher).join("nsys/cmd.txt"));
        assert!(
            nsys.starts_with(head) && nsys.contains(&format!("run.rank{var}")),
            "{nsys}"
        );
        let ncu = read(sb.run(launcher).join("ncu/cmd.txt"));
        let rank_var = var.trim_start_matches("%q{").trim_end_matches('}');
        assert!(
            ncu.contains(&format!("__rank-exec {rank_var} 1 2 -- ")),
            "{ncu}"
        );
        // The kernels rank 0's nsys export chooses, and, where it chooses none, every kernel
        // but NCCL's (the dry run's note says so).
        assert!(
            ncu.contains("--kernel-id '::regex:^(<kernels chosen from the nsys export>)$:1'")
                && ncu
                    .contains("--kernel-name-base demangled --kernel-id ::regex:^(?!.*nccl).*:1)"),
            "{ncu}"
        );
        // mpirun hands ranks on other nodes only the variables it is told about.
        let ncu_head = format!("env NCCL_P2P_DISABLE=1 {head}");
        let ncu_head = if launcher == "mpirun" {
            ncu_head.replace("-np 8 ", "-np 8 -x NCCL_P2P_DISABLE ")
        } else {
            ncu_head
        };
        assert!(ncu.starts_with(&ncu_head), "{ncu}");
    }
}

#[test]
fn a_missing_launcher_is_a_tool_error() {
    let sb = Sandbox::new();
    sb.stage2_without_tools()
        .env(
            "PATH",
            format!(
                "{}:/usr/bin:/bin",
                common::root().join("tests/fakes").display()
            ),
        )
        .args([
            "profile",
            "--run-root",
            "runs",
            "--launcher",
            "srun",
            "--no-ncu",
            "--",
            "true",
        ])
        .assert()
        .code(3)
        .stderr(predicates::str::contains("`srun` not found"));
}

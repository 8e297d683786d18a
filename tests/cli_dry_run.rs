//! A dry run writes the command lines a real run of the same command runs: the same programs,
//! flags and files, with what only the nsys pass (or the run's start) decides written as
//! placeholders and a note at the end of cmd.txt for each.

mod common;

use common::{read, Sandbox};

/// cmd.txt's command lines with what differs between two runs of one command masked: the run
/// directory, the chosen kernels, their number, the ports and the metric list (a real run
/// keeps those `ncu --query-metrics` lists). The dry run's notes (`#` lines) left out.
fn masked(text: &str, run: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let words = shlex::split(&l.replace(run, "RUN")).unwrap();
            let mut out = Vec::new();
            let mut it = words.into_iter().peekable();
            while let Some(w) = it.next() {
                let masks_next = matches!(
                    w.as_str(),
                    "--launch-count" | "--port" | "--metrics" | "--kernel-id"
                );
                out.push(w);
                if masks_next && it.next().is_some() {
                    out.push("*".to_string());
                }
            }
            out.join(" ")
        })
        .collect()
}

#[test]
fn a_dry_run_writes_the_lines_a_real_run_runs() {
    let sb = Sandbox::with_gpu();
    sb.profile_decode("real", &[]).assert().success();
    sb.profile_decode("dry", &["--dry-run"]).assert().success();
    for pass in ["nsys", "ncu"] {
        let real = read(sb.run("real").join(pass).join("cmd.txt"));
        let dry = read(sb.run("dry").join(pass).join("cmd.txt"));
        let real_lines = masked(&real, &sb.run("real").display().to_string());
        let dry_lines = masked(&dry, &sb.run("dry").display().to_string());
        assert_eq!(dry_lines, real_lines, "{pass}:\n{dry}\n---\n{real}");
    }
    let ncu = read(sb.run("dry").join("ncu/cmd.txt"));
    // The parts the nsys pass decides are placeholders, and cmd.txt says what fills them.
    assert!(
        ncu.contains("--kernel-id '::regex:^(<kernels chosen from the nsys export>)$:1' --launch-count '<their number>' --kill on"),
        "{ncu}"
    );
    assert!(ncu.contains("--port '<free port>'"), "{ncu}");
    assert!(
        ncu.contains("# dry run: after the nsys pass, a real run puts the mangled names of the kernels it chooses"),
        "{ncu}"
    );
    let nsys = read(sb.run("dry").join("nsys/cmd.txt"));
    assert!(
        nsys.contains("# dry run: a real run first writes nsys/gpu_metrics.config"),
        "{nsys}"
    );
    let st: serde_json::Value =
        serde_json::from_str(&read(sb.run("dry").join("status.json"))).unwrap();
    assert!(st["passes"]["ncu"]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("ncu/cmd.txt says which")));
}

/// The same under a launcher: rank 0's export chooses the kernels, and ncu is launched (no
/// held workload to attach to).
#[test]
fn a_dry_run_under_a_launcher_writes_the_lines_a_real_run_runs() {
    let sb = Sandbox::new();
    let ranks = ["--launcher", "torchrun", "--nproc-per-node", "2"];
    sb.profile_decode("real", &ranks).assert().success();
    sb.profile_decode("dry", &[&ranks[..], &["--dry-run"]].concat())
        .assert()
        .success();
    for pass in ["nsys", "ncu"] {
        let real = read(sb.run("real").join(pass).join("cmd.txt"));
        let dry = read(sb.run("dry").join(pass).join("cmd.txt"));
        let mut real_lines = masked(&real, &sb.run("real").display().to_string());
        let dry_lines = masked(&dry, &sb.run("dry").display().to_string());
        // Each rank's export and stats lines come once its report exists, as the note says.
        if pass == "nsys" {
            real_lines.truncate(1);
            assert!(
                dry.contains("# dry run: a real run adds each rank's `nsys export` and `nsys stats` lines here"),
                "{dry}"
            );
        }
        assert_eq!(dry_lines, real_lines, "{pass}:\n{dry}\n---\n{real}");
    }
}

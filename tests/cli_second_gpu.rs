//! `ncu.second_gpu`: with two GPUs of one model and a kernel list that does not come from the
//! nsys pass, the two passes run at once, each seeing only its own GPU; otherwise they run one
//! after the other and the run says why.

mod common;

use common::{read, status, Sandbox, DECODE};

/// A workload that notes the GPU it sees when it starts and when it ends, with a wall-clock
/// time, so that the test can tell whether the two passes overlapped.
const NOTE_GPU: &str = "import os,time\nlog=open(os.environ['WLOG'],'a')\nlog.write(f\"{os.environ.get('CUDA_VISIBLE_DEVICES','-')} start {time.time()}\\n\"); log.flush()\ntime.sleep(1.5)\nlog.write(f\"{os.environ.get('CUDA_VISIBLE_DEVICES','-')} end {time.time()}\\n\")";

/// `ncu.second_gpu` and `flags`, the workload noting its GPUs in `ID.wlog`, with `gpus` GPUs.
fn second_gpu(sb: &Sandbox, id: &str, gpus: &str, flags: &[&str]) -> assert_cmd::assert::Assert {
    sb.profile_of(
        id,
        &[&["ncu.second_gpu=true"], flags].concat(),
        &["python3", "-c", NOTE_GPU],
    )
    .env("FAKE_SMI_GPUS", gpus)
    .env("WLOG", sb.path().join(format!("{id}.wlog")))
    .env_remove("CUDA_VISIBLE_DEVICES")
    .assert()
}

/// (GPU, start, end) of each workload run, from its log.
fn spans(log: &str) -> Vec<(String, f64, f64)> {
    let mut out: Vec<(String, f64, f64)> = Vec::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let t: f64 = f[2].parse().unwrap();
        match f[1] {
            "start" => out.push((f[0].to_string(), t, f64::NAN)),
            _ => {
                let open = out
                    .iter_mut()
                    .find(|s| s.0 == f[0] && s.2.is_nan())
                    .unwrap();
                open.2 = t;
            }
        }
    }
    out
}

#[test]
fn two_gpus_run_both_passes_at_once_each_on_its_own() {
    let sb = Sandbox::with_gpu();
    second_gpu(
        &sb,
        "both",
        "2",
        &["--nvtx-capture", "prefill", "ncu.nvtx_include=decode"],
    )
    .success();
    let run = sb.run("both");
    let st = status(&run);
    let g = &st["passes"]["ncu"]["ncu"]["second_gpu"];
    assert_eq!(g["nsys"], "0", "{st}");
    assert_eq!(g["ncu"], "1", "{st}");
    assert_eq!(g["model"], "NVIDIA H100 80GB HBM3");
    assert_eq!(st["passes"]["nsys"]["state"], "ok");
    assert_eq!(st["passes"]["ncu"]["state"], "ok");
    // Each pass's pasteable line carries its GPU.
    assert!(read(run.join("nsys/cmd.txt")).starts_with("env CUDA_VISIBLE_DEVICES=0 "));
    assert!(read(run.join("ncu/cmd.txt")).starts_with("env CUDA_VISIBLE_DEVICES=1 "));
    // The workload ran once per pass, on its own GPU, and the two runs overlapped.
    let s = spans(&read(sb.path().join("both.wlog")));
    assert_eq!(s.len(), 2, "{s:?}");
    let (a, b) = (&s[0], &s[1]);
    assert_ne!(a.0, b.0, "{s:?}");
    assert!(a.1 < b.2 && b.1 < a.2, "not at once: {s:?}");
    for f in ["kernels.md", "stakeholder_summary.md"] {
        let text = read(run.join(f));
        assert!(
            text.contains("the ncu pass ran on GPU 1 while the nsys pass ran on GPU 0"),
            "{f}: {text}"
        );
    }
}

#[test]
fn one_gpu_or_a_list_from_nsys_runs_them_one_after_the_other_and_says_why() {
    let sb = Sandbox::with_gpu();
    let out = second_gpu(
        &sb,
        "one",
        "1",
        &["--nvtx-capture", "prefill", "ncu.nvtx_include=decode"],
    )
    .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("one after the other") && err.contains("nvidia-smi lists 1 GPU"),
        "{err}"
    );
    let st = status(&sb.run("one"));
    assert!(st["passes"]["ncu"]["ncu"]["second_gpu"].is_null(), "{st}");
    let s = spans(&read(sb.path().join("one.wlog")));
    assert!(s[0].2 <= s[1].1, "overlapped: {s:?}");
    assert!(!read(sb.run("one").join("kernels.md")).contains("ncu.second_gpu"));

    // ncu's kernels come from the nsys pass of the same range: it has to wait.
    let out = second_gpu(&sb, "same", "2", DECODE).success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("chosen from the nsys pass"), "{err}");
    assert!(status(&sb.run("same"))["passes"]["ncu"]["ncu"]["second_gpu"].is_null());
}

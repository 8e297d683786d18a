//! stage2's Python hook (src/passes/workload/hook/sitecustomize.py) against stand-ins for torch and
//! transformers (tests/data/hook): which forward passes become which NVTX ranges, and the
//! sampler's output.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run drive.py with the hook first on PYTHONPATH; scenario name -> what was emitted.
fn drive(env: &[(&str, &str)], extra: &[&str]) -> (HashMap<String, Value>, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let hook = tmp.path().join("hook");
    std::fs::create_dir(&hook).unwrap();
    std::fs::copy(
        root().join("src/passes/workload/hook/sitecustomize.py"),
        hook.join("sitecustomize.py"),
    )
    .unwrap();
    let data = root().join("tests/data/hook");
    let path = [hook, data.join("fake"), data.join("chained")]
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let out = Command::new("python3")
        .arg(data.join("drive.py"))
        .args(extra)
        .env("PYTHONPATH", path)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        seen.extend(v);
    }
    (seen, tmp)
}

fn events(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn forward_passes_are_marked_by_their_new_tokens_outermost_only() {
    let (seen, _tmp) = drive(&[("STAGE2_AUTO_NVTX", "1")], &[]);
    // The shadowed sitecustomize still runs.
    assert_eq!(events(&seen["startup"]), ["chained sitecustomize ran"]);
    // The inner PreTrainedModel's pass is not a phase of its own.
    assert_eq!(
        events(&seen["prefill"]),
        ["push prefill", "mark stage2:tokens batch=2 new=5", "pop"]
    );
    assert_eq!(
        events(&seen["decode"]),
        ["push decode", "mark stage2:tokens batch=4 new=1", "pop"]
    );
    assert_eq!(
        events(&seen["embeds"]),
        ["push prefill", "mark stage2:tokens batch=1 new=7", "pop"]
    );
    assert_eq!(events(&seen["no_ids"]), ["push forward", "pop"]);
    // An encoder-decoder: the encoder's pass over the prompt is prefill, a decoder pass given
    // the encoder's output counts the decoder's token, and a pass that runs both the prompt's.
    assert_eq!(
        events(&seen["seq2seq_encoder"]),
        ["push prefill", "mark stage2:tokens batch=2 new=6", "pop"]
    );
    assert_eq!(
        events(&seen["seq2seq_decoder"]),
        ["push decode", "mark stage2:tokens batch=2 new=1", "pop"]
    );
    assert_eq!(
        events(&seen["seq2seq_whole"]),
        ["push prefill", "mark stage2:tokens batch=2 new=6", "pop"]
    );
    // An exception in forward still closes the range, and reaches the caller.
    assert_eq!(
        events(&seen["exception"]),
        [
            "push decode",
            "mark stage2:tokens batch=1 new=1",
            "pop",
            "raised boom"
        ]
    );
}

#[test]
fn generate_and_its_compiled_decode_steps_are_marked() {
    let (seen, _tmp) = drive(&[("STAGE2_AUTO_NVTX", "1")], &[]);
    let step = ["push decode", "mark stage2:tokens batch=1 new=1", "pop"];
    let mut want = vec![
        "push generate",
        "push prefill",
        "mark stage2:tokens batch=1 new=4",
        "pop",
    ];
    want.extend(step);
    want.extend(step);
    // The call's own mark: the 3 tokens its output gained.
    want.extend(["mark stage2:tokens batch=1 new=3", "pop"]);
    assert_eq!(events(&seen["generate"]), want);
    // Compiled: the wrapper marks each call once; the trace and the eager run inside it do not.
    assert_eq!(events(&seen["generate_compiled"]), want);
}

/// Speculative decoding: the target's passes after its prompt check candidates (`verify`, no
/// tokens mark on the pass), each followed by a `stage2:spec` mark of the candidates proposed
/// and accepted; the assistant's generate() inside is `draft`, its passes `draft_prefill` /
/// `draft_decode`; each generate() call's own mark counts the tokens its output gained,
/// accepted ones included.
#[test]
fn assisted_generation_is_marked_as_draft_and_verify() {
    let (seen, _tmp) = drive(&[("STAGE2_AUTO_NVTX", "1")], &[]);
    let draft = [
        "push draft",
        "push draft_prefill",
        "mark stage2:tokens batch=1 new=2",
        "pop",
        "push draft_decode",
        "mark stage2:tokens batch=1 new=1",
        "pop",
        "mark stage2:tokens batch=1 new=2",
        "pop",
    ];
    let mut want = vec![
        "push generate",
        "push prefill",
        "mark stage2:tokens batch=1 new=4",
        "pop",
    ];
    // Each verify step's candidates (2) and how many the target kept (1, then 2), after it.
    for accepted in ["1", "2"] {
        want.extend(draft);
        want.extend(["push verify", "pop"]);
        want.push(match accepted {
            "1" => "mark stage2:spec proposed=2 accepted=1",
            _ => "mark stage2:spec proposed=2 accepted=2",
        });
    }
    // The tokens the assisted call's output gained, accepted draft tokens included: its time
    // per generated token.
    want.extend(["mark stage2:tokens batch=1 new=6", "pop"]);
    assert_eq!(events(&seen["assisted"]), want);
    // A plain generate() after it is marked as before.
    assert_eq!(
        events(&seen["generate"])[..2],
        ["push generate", "push prefill"]
    );
}

#[test]
fn without_the_switch_nothing_is_marked() {
    let (seen, _tmp) = drive(&[], &[]);
    assert_eq!(events(&seen["prefill"]), Vec::<String>::new());
    assert_eq!(events(&seen["generate"]), Vec::<String>::new());
}

#[test]
fn the_sampler_writes_stacks_and_marks_its_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let (_, _t) = drive(
        &[
            ("STAGE2_PY_SAMPLE_HZ", "500"),
            ("STAGE2_PY_SAMPLE_DIR", dir.as_str()),
        ],
        &["0.3"],
    );
    let files: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("pysamples.") && name.ends_with(".txt"));
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let samples = text.lines().filter(|l| l.starts_with("S ")).count();
    assert!(samples >= 10, "{samples} samples in 0.3 s at 500 Hz");
    // The main thread was sleeping in drive.py's last line.
    let frames: Vec<&str> = text.lines().filter(|l| l.starts_with("F ")).collect();
    assert!(
        frames
            .iter()
            .any(|f| f.contains("drive.py") && f.ends_with("<module>")),
        "{frames:?}"
    );
    assert!(!Path::new(&dir).join("missing").exists());
}

#[test]
fn the_first_generate_calls_can_be_left_unmarked() {
    let (seen, _tmp) = drive(
        &[("STAGE2_AUTO_NVTX", "1"), ("STAGE2_AUTO_NVTX_SKIP", "1")],
        &[],
    );
    // drive.py's first generate() is skipped whole; the compiled one after it is marked.
    assert_eq!(events(&seen["generate"]), Vec::<String>::new());
    assert_eq!(events(&seen["generate_compiled"])[0], "push generate");
    // Forward passes outside generate() are still marked.
    assert_eq!(events(&seen["decode"])[0], "push decode");
}

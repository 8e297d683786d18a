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

/// The events with the model's census fields left out of the tokens marks (one test below
/// reads them).
fn phases(v: &Value) -> Vec<String> {
    let census = [
        "weights=",
        "kv=",
        "window=",
        "experts=",
        "top_k=",
        "expert_weights=",
    ];
    events(v)
        .into_iter()
        .map(|e| {
            e.split(' ')
                .filter(|w| !census.iter().any(|c| w.starts_with(c)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Each pass's tokens mark says what the pass must read by the model's own numbers: its
/// weights in bytes without the input embedding table (a lookup reads rows of it), KV-cache
/// bytes per token, the expert weights of a mixture-of-experts model; and, inside a plain
/// generate() call, the tokens already in the cache.
#[test]
fn each_pass_carries_the_models_census() {
    let (seen, _tmp) = drive(&[("STAGE2_AUTO_NVTX", "1")], &[]);
    let facts = "weights=4000 kv=256 experts=8 top_k=2 expert_weights=2000";
    assert_eq!(
        events(&seen["decode"])[1],
        format!("mark stage2:tokens batch=4 new=1 {facts}")
    );
    let generate = events(&seen["generate"]);
    assert_eq!(
        generate[2],
        format!("mark stage2:tokens batch=1 new=4 past=0 {facts}")
    );
    assert_eq!(
        generate[5],
        format!("mark stage2:tokens batch=1 new=1 past=4 {facts}")
    );
    assert_eq!(
        generate[8],
        format!("mark stage2:tokens batch=1 new=1 past=5 {facts}")
    );
    // A model whose config tells no attention layout: its weights alone.
    assert_eq!(
        events(&seen["seq2seq_decoder"])[1],
        "mark stage2:tokens batch=2 new=1 weights=0"
    );
}

#[test]
fn forward_passes_are_marked_by_their_new_tokens_outermost_only() {
    let (seen, _tmp) = drive(&[("STAGE2_AUTO_NVTX", "1")], &[]);
    // The shadowed sitecustomize still runs.
    assert_eq!(events(&seen["startup"]), ["chained sitecustomize ran"]);
    // The inner PreTrainedModel's pass is not a phase of its own.
    assert_eq!(
        phases(&seen["prefill"]),
        ["push prefill", "mark stage2:tokens batch=2 new=5", "pop"]
    );
    assert_eq!(
        phases(&seen["decode"]),
        ["push decode", "mark stage2:tokens batch=4 new=1", "pop"]
    );
    assert_eq!(
        phases(&seen["embeds"]),
        ["push prefill", "mark stage2:tokens batch=1 new=7", "pop"]
    );
    assert_eq!(phases(&seen["no_ids"]), ["push forward", "pop"]);
    // An encoder-decoder: the encoder's pass over the prompt is prefill, a decoder pass given
    // the encoder's output counts the decoder's token, and a pass that runs both the prompt's.
    assert_eq!(
        phases(&seen["seq2seq_encoder"]),
        ["push prefill", "mark stage2:tokens batch=2 new=6", "pop"]
    );
    assert_eq!(
        phases(&seen["seq2seq_decoder"]),
        ["push decode", "mark stage2:tokens batch=2 new=1", "pop"]
    );
    assert_eq!(
        phases(&seen["seq2seq_whole"]),
        ["push prefill", "mark stage2:tokens batch=2 new=6", "pop"]
    );
    // An exception in forward still closes the range, and reaches the caller.
    assert_eq!(
        phases(&seen["exception"]),
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
    let mut want = vec![
        "push generate",
        "push prefill",
        "mark stage2:tokens batch=1 new=4 past=0",
        "pop",
    ];
    for past in ["4", "5"] {
        want.push("push decode");
        want.push(match past {
            "4" => "mark stage2:tokens batch=1 new=1 past=4",
            _ => "mark stage2:tokens batch=1 new=1 past=5",
        });
        want.push("pop");
    }
    // The call's own mark: the 3 tokens its output gained.
    want.extend(["mark stage2:tokens batch=1 new=3", "pop"]);
    assert_eq!(phases(&seen["generate"]), want);
    // Compiled: the wrapper marks each call once; the trace and the eager run inside it do not.
    assert_eq!(phases(&seen["generate_compiled"]), want);
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
    assert_eq!(phases(&seen["assisted"]), want);
    // A plain generate() after it is marked as before.
    assert_eq!(
        phases(&seen["generate"])[..2],
        ["push generate", "push prefill"]
    );
}

#[test]
fn without_the_switch_nothing_is_marked() {
    let (seen, _tmp) = drive(&[], &[]);
    assert_eq!(phases(&seen["prefill"]), Vec::<String>::new());
    assert_eq!(phases(&seen["generate"]), Vec::<String>::new());
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
    assert_eq!(phases(&seen["generate"]), Vec::<String>::new());
    assert_eq!(phases(&seen["generate_compiled"])[0], "push generate");
    // Forward passes outside generate() are still marked.
    assert_eq!(phases(&seen["decode"])[0], "push decode");
}

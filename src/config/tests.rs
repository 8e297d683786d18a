use std::io::Write;

use super::*;

fn resolve_with(overrides: &[&str]) -> Result<Resolved, Error> {
    resolve(&Sources {
        config_dir: Some(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/conf"))),
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p
}

#[test]
fn defaults_have_the_documented_keys_and_values() {
    let c = resolve_with(&[]).unwrap().config;
    assert!(c.nsys.enable && c.nsys.gating_nvtx && c.ncu.enable && c.ncu.gating_nvtx);
    assert_eq!(c.nsys.capture_range, CaptureRange::Nvtx);
    assert_eq!(c.nsys.nvtx_capture.as_deref(), Some("prefill"));
    assert_eq!(c.nsys.capture_range_end, Some(CaptureRangeEnd::None));
    assert_eq!(c.nsys.trace, "cuda,nvtx");
    assert_eq!(c.nsys.sample, "none");
    // ncu's range follows the capture unless set (config::NcuTarget).
    assert_eq!(c.ncu.nvtx_include, None);
    assert_eq!(c.ncu.set, "report");
    assert!(c.ncu.stop_when_done && c.ncu.cache.enable && c.ncu.cache.dir.is_none());
    assert_eq!(c.run.root, "tmp/stage2");
    assert_eq!(c.run.representative_max_new_tokens, None);
    let keys = known_keys();
    for k in [
        "nsys.nvtx_domain_include",
        "nsys.nvtx_domain_exclude",
        "ncu.metrics",
        "ncu.top_n",
        "ncu.clock_control",
        "tools.nsys",
        "tools.ncu",
    ] {
        assert!(keys.contains(&k.to_string()), "{k}");
    }
}

#[test]
fn embedded_defaults_equal_the_conf_directory() {
    let embedded = resolve(&Sources {
        embedded_only: true,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(embedded.tree, resolve_with(&[]).unwrap().tree);
}

#[test]
fn merge_order_is_dir_then_files_then_overrides_then_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write(tmp.path(), "a.yaml", "ncu: {top_n: 3, set: full}\n");
    let b = write(tmp.path(), "b.yaml", "ncu: {top_n: 4}\n");
    let r = resolve(&Sources {
        config_dir: None,
        embedded_only: true,
        files: vec![a, b],
        overrides: vec!["ncu.top_n=5".into()],
        flags: vec![("nsys.nvtx_capture".into(), Value::from("decode"))],
    })
    .unwrap();
    assert_eq!(r.config.ncu.top_n, 5);
    assert_eq!(r.config.ncu.set, "full");
    assert_eq!(r.config.nsys.nvtx_capture.as_deref(), Some("decode"));
    let n = r.layers.len();
    assert!(r.layers[n - 3].ends_with("a.yaml") && r.layers[n - 2].ends_with("b.yaml"));
    assert_eq!(r.layers[n - 1], "override ncu.top_n=5");
}

#[test]
fn unknown_key_in_a_file_names_file_key_and_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "bad.yaml", "nsys:\n  trcae: cuda\n");
    let err = resolve(&Sources {
        files: vec![f.clone()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains(&f.display().to_string()), "{err}");
    assert!(
        err.contains("`nsys.trcae`") && err.contains("`nsys.trace`"),
        "{err}"
    );
}

#[test]
fn wrong_type_names_the_key_path() {
    let err = resolve_with(&["ncu.top_n=many"]).unwrap_err();
    assert_eq!(err.exit_code(), crate::exit_codes::USAGE);
    assert!(err.to_string().contains("ncu.top_n"), "{err}");
}

#[test]
fn numbers_are_accepted_where_strings_are_meant() {
    let c = resolve_with(&["run.id=20240101", "workload.argv=[python3, -c, 1]"])
        .unwrap()
        .config;
    assert_eq!(c.run.id.as_deref(), Some("20240101"));
    assert_eq!(c.workload.argv, ["python3", "-c", "1"]);
}

#[test]
fn open_maps_take_new_keys_with_plus() {
    let c = resolve_with(&["+workload.env.HF_HUB_OFFLINE=1"])
        .unwrap()
        .config;
    assert_eq!(c.workload.env["HF_HUB_OFFLINE"], "1");
    let err = resolve_with(&["+nsys.tracee=cuda"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown key `nsys.tracee`"), "{err}");
}

#[test]
fn yaml_errors_name_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text, want) in [
        ("tabs.yaml", "nsys:\n\ttrace: cuda\n", "line 2"),
        ("dup.yaml", "ncu:\n  top_n: 1\n  top_n: 2\n", "duplicate"),
        ("list.yaml", "- a\n- b\n", "top level"),
        ("broken.yaml", "ncu: {top_n: 1\n", "line"),
    ] {
        let f = write(tmp.path(), name, text);
        let err = resolve(&Sources {
            files: vec![f],
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains(name) && err.contains(want), "{name}: {err}");
    }
}

#[test]
fn missing_config_file_is_a_config_error() {
    let err = resolve(&Sources {
        files: vec![PathBuf::from("/nonexistent/x.yaml")],
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err.exit_code(), crate::exit_codes::USAGE);
    assert!(err.to_string().contains("/nonexistent/x.yaml"));
}

#[test]
fn deep_flow_nesting_fails_fast_and_a_byte_order_mark_is_accepted() {
    let deep = format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000));
    let e = super::parse_layer(&deep).unwrap_err();
    assert!(e.contains("line 1") && e.contains("deeper than 64"), "{e}");
    let v = super::parse_layer("\u{feff}run:\n  id: x\nreport:\n  top_kernels: 3\n").unwrap();
    assert_eq!(v["report"]["top_kernels"].as_u64(), Some(3));
}

#[test]
fn a_duplicate_key_is_placed_at_its_second_line_and_deleting_a_required_key_says_so() {
    let e = super::parse_layer("report:\n  top_kernels: 3\n  name_width: 5\n  top_kernels: 4\n")
        .unwrap_err();
    assert!(
        e.starts_with("line 4: duplicate key `top_kernels` (first at line 2)"),
        "{e}"
    );
    let e = resolve(&Sources {
        embedded_only: true,
        overrides: vec!["~ncu.top_n".into()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("`ncu.top_n` is required"), "{e}");
}

#[test]
fn a_type_error_names_the_type_in_words() {
    let e = crate::config::resolve(&Sources {
        embedded_only: true,
        overrides: vec!["ncu.top_n=abc".into()],
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.ends_with("expected a whole number (0 or more)"), "{e}");
    assert!(!e.contains("usize"), "{e}");
}

/// Errors say what is wrong in words: no serde type names, no empty backquotes.
#[test]
fn config_errors_speak_in_words() {
    let err = |ov: &str| {
        resolve(&Sources {
            embedded_only: true,
            overrides: vec![ov.to_string()],
            ..Default::default()
        })
        .unwrap_err()
        .to_string()
    };
    let e = err("nsys.capture_range=[1]");
    assert!(
        e.contains("expected one word") && !e.contains("Tagged"),
        "{e}"
    );
    let e = err("nsys.capture_range=!nvtx x");
    assert!(!e.contains("expected unit"), "{e}");
    // serde's own words and a top-level key's path are said for a user.
    for (ov, want) in [
        (
            "report.top_kernels=null",
            "`report.top_kernels`: got no value (empty or null), expected a whole number",
        ),
        (
            "run.grace_s=[1]",
            "`run.grace_s`: got a list, expected a whole number",
        ),
        (
            "ncu.top_n=-3",
            "`ncu.top_n`: got the number -3, expected a whole number",
        ),
        (
            "report=1",
            "`report`: got the number 1, expected a mapping of its keys",
        ),
        (
            "nsys.capture_range=",
            "`nsys.capture_range`: got an empty value, expected one of",
        ),
        ("~report", "key `report` is required"),
    ] {
        let e = err(ov);
        assert!(e.contains(want), "{ov}: {e}");
        for word in [
            "unit value",
            "invalid type",
            "struct",
            "``",
            "`.",
            "sequence",
        ] {
            assert!(!e.contains(word), "{ov}: {e}");
        }
    }
    for bad in ["ncu.budget_s=abc", "ncu.budget_s=0", "ncu.budget_s=[1]"] {
        let e = err(bad);
        assert!(
            e.contains("`ncu.budget_s`: expected auto, a whole number of seconds above 0, or null"),
            "{e}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    for (text, want) in [
        ("report:\n  \"\": 1\n", "an empty key name under `report`"),
        ("\"\": {report: 1}\n", "an empty key name at the top level"),
    ] {
        let f = tmp.path().join("c.yaml");
        std::fs::write(&f, text).unwrap();
        let e = resolve(&Sources {
            embedded_only: true,
            files: vec![f],
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains(want) && !e.contains("``"), "{e}");
    }
}

#[test]
fn one_capture_decides_both_passes_unless_ncu_names_its_range() {
    use crate::config::{Capture, NcuTarget};
    let target = |o: &[&str]| {
        let c = crate::testutil::config(o);
        let t = NcuTarget::of(&c);
        (t.name.clone(), t.domain.clone(), t.follows_capture)
    };
    let named = |n: &str, d: Option<&str>, f: bool| (n.to_string(), d.map(str::to_string), f);
    assert_eq!(
        target(&["nsys.nvtx_capture=step"]),
        named("step", None, true)
    );
    assert_eq!(
        target(&["nsys.nvtx_capture=null", "nsys.nvtx_capture_raw=decode@*"]),
        named("decode", None, true)
    );
    assert_eq!(
        target(&["nsys.nvtx_capture=null", "nsys.nvtx_capture_raw=step@llm"]),
        named("step", Some("llm"), true)
    );
    // The raw expression is what nsys is given, so it names the capture even beside the
    // default `nsys.nvtx_capture`.
    let c = crate::testutil::config(&["nsys.nvtx_capture_raw=decode@*"]);
    assert_eq!(Capture::of(&c).range(), Some("decode"));
    // Nothing to follow: the whole run, or the profiler-API windows.
    assert_eq!(
        target(&["nsys.gating_nvtx=false"]),
        named("decode", None, false)
    );
    // The profiler-API windows: ncu profiles inside them, gated on no NVTX range.
    let c = crate::testutil::config(&["nsys.capture_range=cudaProfilerApi"]);
    let t = NcuTarget::of(&c);
    assert!(t.follows_capture && !t.gated && t.same_as_capture, "{t:?}");
    let c = crate::testutil::config(&[
        "nsys.capture_range=cudaProfilerApi",
        "ncu.nvtx_include=decode",
    ]);
    assert!(NcuTarget::of(&c).gated);
    // Named by the user: kept, and no longer the capture's range.
    let c = crate::testutil::config(&["nsys.nvtx_capture=step", "ncu.nvtx_include=decode"]);
    let t = NcuTarget::of(&c);
    assert_eq!(
        (t.range().as_deref(), t.same_as_capture),
        (Some("decode"), false)
    );
    // The config itself keeps what the user wrote: nothing derived is written back.
    assert_eq!(c.ncu.nvtx_include.as_deref(), Some("decode"));
    let raw = crate::testutil::config(&["ncu.nvtx_include_raw=regex:dec.*"]);
    let t = NcuTarget::of(&raw);
    assert_eq!((raw.ncu.nvtx_include, t.range()), (None, None));
}

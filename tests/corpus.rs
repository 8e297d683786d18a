//! The bad-input corpus (tests/data/bad, hand-made): each file gives its documented exit code
//! and a message naming the file (and the line or key where there is one); none panics.

mod common;

use std::path::PathBuf;

use common::{root, Sandbox};

fn bad(name: &str) -> PathBuf {
    root().join("tests/data/bad").join(name)
}

/// A run directory holding `file` at `place`, the rest of it real.
fn run_with(sb: &Sandbox, file: &str, place: &str) -> PathBuf {
    let run = sb.path().join(format!("run-{file}"));
    std::fs::create_dir_all(run.join("nsys")).unwrap();
    std::fs::create_dir_all(run.join("ncu")).unwrap();
    let data = root().join("tests/data");
    for f in [
        "summary_cuda_gpu_kern_sum.csv",
        "summary_nvtx_sum.csv",
        "summary_cuda_api_sum.csv",
        "run.sqlite",
    ] {
        std::fs::copy(data.join("nsys").join(f), run.join("nsys").join(f)).unwrap();
    }
    std::fs::copy(
        data.join("ncu/decode_raw.csv"),
        run.join("ncu/decode_raw.csv"),
    )
    .unwrap();
    std::fs::write(run.join(place), expand(&std::fs::read(bad(file)).unwrap())).unwrap();
    run
}

/// A hand-made file's `@@A*N@@` stands for N letters A: a 10 MB field is made here rather
/// than committed.
fn expand(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let Some(at) = text.find("@@A*") else {
        return bytes.to_vec();
    };
    let rest = &text[at + 4..];
    let end = rest.find("@@").expect("a closing @@");
    let n: usize = rest[..end].parse().expect("a count");
    format!("{}{}{}", &text[..at], "A".repeat(n), &rest[end + 2..]).into_bytes()
}

struct Case {
    file: &'static str,
    place: &'static str,
    code: i32,
    says: &'static [&'static str],
}

const KERN: &str = "nsys/summary_cuda_gpu_kern_sum.csv";
const RAW: &str = "ncu/decode_raw.csv";
const DB: &str = "nsys/run.sqlite";

const REPORT_CASES: &[Case] = &[
    Case {
        file: "kern_sum_truncated_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:3", "truncated"],
    },
    Case {
        file: "kern_sum_bom_crlf_hand_made.csv",
        place: KERN,
        code: 0,
        says: &[],
    },
    Case {
        file: "kern_sum_semicolons_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:1", "missing column"],
    },
    Case {
        file: "kern_sum_duplicate_header_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:1", "duplicate column"],
    },
    Case {
        file: "kern_sum_extra_columns_hand_made.csv",
        place: KERN,
        code: 0,
        says: &[],
    },
    Case {
        file: "kern_sum_10mb_field_hand_made.csv",
        place: KERN,
        code: 0,
        says: &[],
    },
    Case {
        file: "kern_sum_nan_hand_made.csv",
        place: KERN,
        code: 6,
        says: &[
            "summary_cuda_gpu_kern_sum.csv:2",
            "`NaN` is not a finite non-negative number",
        ],
    },
    Case {
        file: "kern_sum_inf_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:2", "not a finite"],
    },
    Case {
        file: "kern_sum_1e309_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:2", "`1e309`"],
    },
    Case {
        file: "kern_sum_negative_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:2", "`-526214`"],
    },
    Case {
        file: "binary_garbage_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv"],
    },
    Case {
        file: "empty_hand_made.csv",
        place: KERN,
        code: 6,
        says: &["summary_cuda_gpu_kern_sum.csv:1", "empty file"],
    },
    Case {
        file: "binary_garbage_hand_made.csv",
        place: RAW,
        code: 6,
        says: &["decode_raw.csv"],
    },
    Case {
        file: "empty_hand_made.csv",
        place: RAW,
        code: 6,
        says: &["decode_raw.csv:1", "empty file"],
    },
    Case {
        file: "kern_sum_truncated_hand_made.csv",
        place: RAW,
        code: 6,
        says: &["decode_raw.csv:1", "missing column `Kernel Name`"],
    },
    Case {
        file: "ncu_raw_no_units_hand_made.csv",
        place: RAW,
        code: 6,
        says: &["decode_raw.csv:2", "no units row"],
    },
    Case {
        file: "not_a_database_hand_made.sqlite",
        place: DB,
        code: 6,
        says: &["run.sqlite"],
    },
    Case {
        file: "no_tables_hand_made.sqlite",
        place: DB,
        code: 6,
        says: &["run.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL"],
    },
];

fn check(out: &std::process::Output, code: i32, says: &[&str], what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{what}: panicked\n{stderr}");
    assert_eq!(out.status.code(), Some(code), "{what}: {stderr}");
    for s in says {
        assert!(stderr.contains(s), "{what}: no `{s}` in\n{stderr}");
    }
}

#[test]
fn broken_artifacts_give_exit_6_naming_file_and_line() {
    let sb = Sandbox::new();
    for c in REPORT_CASES {
        let run = run_with(&sb, c.file, c.place);
        let out = sb
            .stage2_without_tools()
            .arg("report")
            .arg(&run)
            .output()
            .unwrap();
        check(&out, c.code, c.says, &format!("{} as {}", c.file, c.place));
        let _ = std::fs::remove_dir_all(&run);
    }
}

#[test]
fn accepted_odd_inputs_render_the_right_numbers() {
    let sb = Sandbox::new();
    let run = run_with(&sb, "kern_sum_bom_crlf_hand_made.csv", KERN);
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .success();
    let md = std::fs::read_to_string(run.join("kernels.md")).unwrap();
    assert!(
        md.contains("| 1 | nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN | 160 | 526.21 |"),
        "{md}"
    );
    let run = run_with(&sb, "kern_sum_10mb_field_hand_made.csv", KERN);
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .success();
    // The huge name is cut in the tables.
    assert!(
        std::fs::metadata(run.join("stakeholder_summary.md"))
            .unwrap()
            .len()
            < 100_000
    );
}

#[test]
fn broken_config_gives_exit_2_naming_file_and_line_or_key() {
    let sb = Sandbox::new();
    for (file, code, says) in [
        (
            "config_tabs_hand_made.yaml",
            2,
            &["config_tabs_hand_made.yaml", "line 2", "tab"][..],
        ),
        (
            "config_duplicate_keys_hand_made.yaml",
            2,
            &["config_duplicate_keys_hand_made.yaml", "duplicate"][..],
        ),
    ] {
        let out = sb
            .stage2()
            .args(["config", "--config"])
            .arg(bad(file))
            .output()
            .unwrap();
        check(&out, code, says, file);
    }
    // 1000 levels of nesting (1 MB), written here rather than kept in the repository.
    let deep = sb.path().join("config_deep_nesting.yaml");
    let mut text: String = (0..1000)
        .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
        .collect();
    text.push_str(&format!("{}leaf: 1\n", "  ".repeat(1000)));
    std::fs::write(&deep, text).unwrap();
    let out = sb
        .stage2()
        .args(["config", "--config"])
        .arg(&deep)
        .output()
        .unwrap();
    check(
        &out,
        2,
        &["config_deep_nesting.yaml"],
        "config_deep_nesting.yaml",
    );
}

#[test]
fn yaml_merge_keys_merge() {
    let sb = Sandbox::new();
    let dir = sb.path().join("cfg");
    std::fs::create_dir_all(&dir).unwrap();
    // The anchor holder `base` is not a config key: use the anchor inside `ncu` only.
    let text = std::fs::read_to_string(bad("config_merge_key_hand_made.yaml")).unwrap();
    let out = sb
        .stage2()
        .args(["config", "--config"])
        .arg(bad("config_merge_key_hand_made.yaml"))
        .output()
        .unwrap();
    // `base` itself is an unknown key: exit 2 naming it, never a panic.
    check(&out, 2, &["unknown key `base"], "merge key file as is");
    let only_ncu = text.replace(
        "base: &base\n  top_n: 3\n  set: full\nncu:\n  <<: *base",
        "ncu:\n  <<: {top_n: 3, set: full}",
    );
    let p = dir.join("merge.yaml");
    std::fs::write(&p, only_ncu).unwrap();
    let out = sb
        .stage2()
        .args(["config", "--config"])
        .arg(&p)
        .output()
        .unwrap();
    check(&out, 0, &[], "merge key inside ncu");
    let yaml = String::from_utf8_lossy(&out.stdout);
    assert!(
        yaml.contains("set: full") && yaml.contains("top_n: 4"),
        "{yaml}"
    );
}

#[test]
fn a_missing_run_directory_or_a_file_where_one_is_expected() {
    let sb = Sandbox::new();
    let out = sb
        .stage2()
        .args(["report", "/nonexistent"])
        .output()
        .unwrap();
    check(&out, 2, &["/nonexistent"], "missing run dir");
    let f = sb.path().join("file");
    std::fs::write(&f, "x").unwrap();
    let out = sb.stage2().arg("report").arg(&f).output().unwrap();
    check(&out, 2, &["not a directory"], "file as run dir");
}

/// A 10 MB number is refused with its start shown, not the whole field.
#[test]
fn a_huge_bad_field_is_cut_in_the_message() {
    let sb = Sandbox::new();
    let run = run_with(&sb, "kern_sum_nan_hand_made.csv", KERN);
    let csv = std::fs::read_to_string(run.join(KERN)).unwrap();
    std::fs::write(
        run.join(KERN),
        csv.replacen("NaN", &"9".repeat(10 << 20), 1),
    )
    .unwrap();
    let out = sb
        .stage2_without_tools()
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 2000, "{} bytes of error", err.len());
    assert!(err.contains("more characters"), "{err}");
}

/// Real exports with one interval poisoned (end before start): exit 6 naming table and row.
#[test]
fn sqlite_rows_whose_end_is_before_their_start_are_named() {
    for table in [
        "NVTX_EVENTS",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
    ] {
        let sb = Sandbox::new();
        let run = run_with(&sb, "kern_sum_bom_crlf_hand_made.csv", KERN);
        let db = rusqlite::Connection::open(run.join(DB)).unwrap();
        db.execute(
            &format!("UPDATE {table} SET end = start - 1000 WHERE rowid = (SELECT MIN(rowid) FROM {table} WHERE end IS NOT NULL)"),
            [],
        )
        .unwrap();
        drop(db);
        let out = sb
            .stage2_without_tools()
            .arg("report")
            .arg(&run)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{table}: {err}");
        assert!(
            err.contains("run.sqlite") && err.contains(&format!("table {table}, rowid")),
            "{err}"
        );
        assert!(
            !run.join("summary.json").exists(),
            "{table}: reports written from bad data"
        );
    }
}

/// An empty ncu export (a failed import) loses the ncu columns only: the nsys reports are
/// written, and the run still exits 6 naming the file.
#[test]
fn a_broken_ncu_export_still_leaves_the_nsys_reports() {
    let sb = Sandbox::new();
    let run = run_with(&sb, "empty_hand_made.csv", RAW);
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .code(6)
        .stderr(predicates::str::contains("decode_raw.csv:1"));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert!(s["totals"]["kernel_time_ns"].as_f64().unwrap() > 0.0);
    assert!(std::fs::read_to_string(run.join("kernels.md"))
        .unwrap()
        .contains("ncu metrics missing"));
}

#[test]
fn report_on_a_directory_without_data_is_no_data_and_writes_nothing() {
    let sb = Sandbox::new();
    let empty = sb.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    sb.stage2_without_tools()
        .arg("report")
        .arg(&empty)
        .assert()
        .code(5)
        .stderr(predicates::str::contains("no profiler data"));
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

/// Links to devices and FIFOs in place of a run's files, and a device as --config: no file is
/// read without end, nothing blocks.
#[test]
fn devices_and_fifos_in_place_of_files_neither_hang_nor_grow() {
    use std::time::Duration;
    let sb = Sandbox::new();
    let run = run_with(&sb, "kern_sum_bom_crlf_hand_made.csv", KERN);
    for f in ["status.json", "config.yaml"] {
        std::os::unix::fs::symlink("/dev/zero", run.join(f)).unwrap();
    }
    nix::unistd::mkfifo(&run.join("env.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::remove_file(run.join(RAW)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", run.join(RAW)).unwrap();
    let out = sb
        .stage2_without_tools()
        .arg("report")
        .arg(&run)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // config.yaml is a device: a config error naming it.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config.yaml") && err.contains("not a regular file"),
        "{err}"
    );
    std::fs::remove_file(run.join("config.yaml")).unwrap();
    let out = sb
        .stage2_without_tools()
        .arg("report")
        .arg(&run)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    // The ncu export is a device: exit 6 naming it, after the reports are made from the nsys
    // data with the ncu part marked missing.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(
        err.contains("decode_raw.csv: cannot open: not a regular file"),
        "{err}"
    );
    let md = std::fs::read_to_string(run.join("kernels.md")).unwrap();
    assert!(md.contains("ncu metrics missing"), "{md}");
    sb.stage2_without_tools()
        .args(["config", "--config", "/dev/zero"])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a regular file"));
}

/// A broken Python samples file (hand-made) costs the samples, not the report.
#[test]
fn a_broken_python_samples_file_is_named_and_left_out() {
    let sb = Sandbox::new();
    let run = run_with(&sb, "pysamples_hand_made.txt", "nsys/pysamples.7.txt");
    sb.stage2_without_tools()
        .arg("report")
        .arg(&run)
        .assert()
        .success()
        .stderr(predicates::prelude::PredicateBooleanExt::and(
            predicates::str::contains("pysamples.7.txt:2"),
            predicates::str::contains("Python samples of one process left out"),
        ));
    assert!(run.join("kernels.md").is_file());
}

//! `stage2 diff` on copies of the real sample run: the report, the gate and its refusals.

mod common;

use std::path::{Path, PathBuf};

use common::{read, root, Sandbox};
use predicates::prelude::*;

fn copy_sample(sb: &Sandbox, name: &str) -> PathBuf {
    let to = sb.path().join(name);
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(root().join("examples/sample-run"))
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success());
    to
}

fn db(run: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap()
}

/// The top kernel of the sample's captured range, by total time.
fn top_kernel(run: &Path) -> String {
    let s: serde_json::Value = serde_json::from_str(&read(run.join("summary.json"))).unwrap();
    s["kernels"][0]["name"].as_str().unwrap().to_string()
}

/// Scale the duration of kernel `name`'s launches in a run's SQLite export by `factor`.
fn scale_kernel(run: &Path, name: &str, factor: f64) {
    db(run)
        .execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + CAST((end - start) * ?2 AS INTEGER) \
             WHERE demangledName IN (SELECT id FROM StringIds WHERE value = ?1)",
            rusqlite::params![name, factor],
        )
        .unwrap();
}

/// Scale every kernel of a run's SQLite export.
fn scale_all(run: &Path, factor: f64) {
    db(run)
        .execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + CAST((end - start) * ?1 AS INTEGER)",
            [factor],
        )
        .unwrap();
}

/// Give kernel `name` a new demangled name (and, with `mangled`, a new mangled one too).
fn rename_kernel(run: &Path, name: &str, mangled: bool) {
    let c = db(run);
    c.execute(
        "INSERT INTO StringIds (id, value) VALUES ((SELECT MAX(id) + 1 FROM StringIds), 'brand_new_kernel(float*)')",
        [],
    )
    .unwrap();
    let col = if mangled {
        "demangledName = (SELECT MAX(id) FROM StringIds), mangledName = (SELECT MAX(id) FROM StringIds)"
    } else {
        "demangledName = (SELECT MAX(id) FROM StringIds)"
    };
    c.execute(
        &format!("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {col} WHERE demangledName IN (SELECT id FROM StringIds WHERE value = ?1)"),
        [name],
    )
    .unwrap();
}

fn diff_json(sb: &Sandbox, a: &Path, b: &Path, extra: &[&str]) -> serde_json::Value {
    let out = sb.path().join("d.json");
    let printed = sb
        .stage2()
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(extra)
        .arg("--json")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    // stdout and the file hold the same object.
    let file: serde_json::Value = serde_json::from_str(&read(&out)).unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&printed.stdout).unwrap(),
        file
    );
    file
}

/// The lines a diff's JSON says before a change is trusted.
fn advice_of(v: &serde_json::Value) -> Vec<&str> {
    v["advice"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default()
}

/// Every file under a directory, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk(&p)
            } else {
                vec![p]
            }
        })
        .collect()
}

#[test]
fn a_run_against_itself_has_zero_deltas_and_writes_nothing_into_it() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let before = listing(&a);
    sb.stage2()
        .args(["diff", "--fail-above", "5"])
        .arg(&a)
        .arg(&a)
        .assert()
        .success()
        .stdout(predicate::str::contains("# Diff: a -> a"))
        .stdout(predicate::str::contains("(+0.0%)"))
        .stderr(predicate::str::contains("total kernel time +0.0%"))
        .stderr(predicate::str::contains("noise unknown"));
    assert_eq!(listing(&a), before, "diff wrote into its input");
    let d = diff_json(&sb, &a, &a, &[]);
    assert_eq!(d["total_delta_pct"], 0.0);
    assert!(d["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k["delta_ns"] == 0.0 && k["presence"] == "both"));
    assert!(d["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn out_writes_the_markdown_to_the_named_file() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let out = sb.path().join("report/diff.md");
    std::fs::create_dir(sb.path().join("report")).unwrap();
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&a)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    assert!(read(&out).contains("## Kernels, by absolute change"));
}

#[test]
fn one_kernel_fifty_percent_slower_is_named_first_and_fails_the_gate() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    let slowed = top_kernel(&b);
    scale_kernel(&b, &slowed, 1.5);
    let d = diff_json(&sb, &a, &b, &[]);
    assert_eq!(d["kernels"][0]["name"], slowed.as_str());
    // Within the rounding of integer nanoseconds.
    assert!((d["kernels"][0]["delta_pct"].as_f64().unwrap() - 50.0).abs() < 0.1);
    assert!(d["total_delta_pct"].as_f64().unwrap() > 5.0);
    sb.stage2()
        .args(["diff", "--fail-above", "5"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(7)
        .stderr(predicate::str::contains("regression above 5%"));
    // Per kernel, the 50% regression trips a 40% gate too; nothing trips a 60% one.
    for (limit, code) in [("40", 7), ("60", 0)] {
        sb.stage2()
            .args(["diff", "--scope", "kernels", "--fail-above", limit])
            .arg(&a)
            .arg(&b)
            .assert()
            .code(code);
    }
}

#[test]
fn a_new_kernel_counts_its_whole_share_in_the_kernels_scope() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    let top = top_kernel(&a);
    // Another kernel (new demangled and mangled name) in B in place of A's top kernel: total
    // time is unchanged, so only the kernels scope can see it.
    rename_kernel(&b, &top, true);
    let d = diff_json(&sb, &a, &b, &[]);
    let new = d["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["presence"] == "new")
        .expect("a new kernel");
    assert_eq!(new["name"], "brand_new_kernel(float*)");
    let share = new["change_pct"].as_f64().unwrap();
    assert!(share > 15.0, "{new}");
    sb.stage2()
        .args(["diff", "--fail-above", "5"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success();
    sb.stage2()
        .args(["diff", "--scope", "kernels", "--fail-above", "5"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(7)
        .stderr(predicate::str::contains("new kernel brand_new_kernel"))
        .stderr(predicate::str::contains("1 new and 1 removed kernels"));
}

#[test]
fn a_renamed_kernel_with_the_same_mangled_name_pairs_up() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    rename_kernel(&b, &top_kernel(&a), false);
    let d = diff_json(&sb, &a, &b, &[]);
    let ks = d["kernels"].as_array().unwrap();
    assert!(ks.iter().all(|k| k["presence"] == "both"), "{d}");
    assert!(ks.iter().all(|k| k["delta_ns"] == 0.0));
}

#[test]
fn kernels_sharing_a_short_name_get_distinct_labels_and_full_names() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let d = diff_json(&sb, &a, &a, &[]);
    let labels: Vec<&str> = d["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["label"].as_str().unwrap())
        .collect();
    let mut unique = labels.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "{labels:?}");
    let suffixed: Vec<&&str> = labels.iter().filter(|l| l.contains(" ~")).collect();
    assert!(
        !suffixed.is_empty(),
        "the sample has repeated short names: {labels:?}"
    );
    let out = sb.stage2().arg("diff").arg(&a).arg(&a).output().unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("Full names of kernels that share a short name"),
        "{md}"
    );
}

#[test]
fn runs_with_different_settings_warn_and_list_values_as_typed() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    let cfg = read(b.join("config.yaml")).replace("set: roofline", "set: full");
    std::fs::write(b.join("config.yaml"), cfg).unwrap();
    let cfg = read(a.join("config.yaml"));
    let argv_line = cfg.lines().position(|l| l.trim() == "argv:").unwrap();
    let mut lines: Vec<&str> = cfg.lines().collect();
    lines.insert(argv_line + 1, "  - --extra flag");
    std::fs::write(a.join("config.yaml"), lines.join("\n")).unwrap();
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "ncu.set differs: roofline vs full",
        ))
        .stderr(predicate::str::contains("'--extra flag'"))
        .stderr(predicate::str::contains("- python3").not());
}

/// Two runs whose packages pass recorded different Python stacks (hand-made versions files,
/// as the pass writes them): each version that differs, and a package one side lacks, are said
/// beside the comparison; a run without the file (an older run) says nothing of them.
#[test]
fn runs_on_different_python_stacks_say_which_versions_differ() {
    let sb = Sandbox::new();
    let (a, b, c) = (
        copy_sample(&sb, "a"),
        copy_sample(&sb, "b"),
        copy_sample(&sb, "c"),
    );
    let stack = |run: &Path, torch: &str, extra: &str| {
        std::fs::create_dir_all(run.join("packages")).unwrap();
        std::fs::write(
            run.join("packages/versions.json"),
            format!(r#"{{"python": "3.12.3", "executable": "/venv/bin/python3", "packages": {{"torch": "{torch}", "transformers": "5.17.0"{extra}}}}}"#),
        )
        .unwrap();
    };
    stack(&a, "2.10.0", "");
    stack(&b, "2.11.0", r#", "triton": "3.6.0""#);
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stderr(predicate::str::contains("torch differs: 2.10.0 vs 2.11.0"))
        .stderr(predicate::str::contains(
            "triton differs: (not installed) vs 3.6.0",
        ))
        .stderr(predicate::str::contains("transformers differs").not());
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&c)
        .assert()
        .success()
        .stderr(predicate::str::contains("differs").not());
}

#[test]
fn incomplete_or_empty_runs_are_refused_naming_the_side() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let empty = sb.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    sb.stage2()
        .args(["diff", "--fail-above", "5"])
        .arg(&a)
        .arg(&empty)
        .assert()
        .code(9)
        .stderr(predicate::str::contains("RUN_B"))
        .stderr(predicate::str::contains("no kernel data"));
    assert!(listing(&empty).is_empty(), "diff wrote into an input");
    sb.stage2()
        .arg("diff")
        .arg(&empty)
        .arg(&a)
        .assert()
        .code(9)
        .stderr(predicate::str::contains("RUN_A"));
    let failed = copy_sample(&sb, "failed");
    let st =
        read(failed.join("status.json")).replacen("\"state\": \"ok\"", "\"state\": \"failed\"", 2);
    std::fs::write(failed.join("status.json"), st).unwrap();
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&failed)
        .assert()
        .code(9)
        .stderr(predicate::str::contains("not complete"));
    // --force compares anyway, the refusal kept as a warning.
    sb.stage2()
        .args(["diff", "--force"])
        .arg(&a)
        .arg(&failed)
        .assert()
        .success()
        .stdout(predicate::str::contains("compared with --force"));
}

#[test]
fn another_captured_range_is_refused() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    let cfg = read(b.join("config.yaml")).replace("nvtx_capture: decode", "nvtx_capture: prefill");
    std::fs::write(b.join("config.yaml"), cfg).unwrap();
    let st = read(b.join("status.json"));
    assert!(
        !st.contains("\"range\""),
        "the sample records no capture: config is read"
    );
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .assert()
        .code(9)
        .stderr(predicate::str::contains(
            "captured range differs: decode vs prefill",
        ));
}

#[test]
fn bad_thresholds_are_usage_errors() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    for t in ["NaN", "-1", "inf", "five"] {
        sb.stage2()
            .args(["diff", "--fail-above", t])
            .arg(&a)
            .arg(&a)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("finite percentage"));
    }
}

#[test]
fn negative_kernel_times_are_bad_input_naming_the_file() {
    let sb = Sandbox::new();
    let a = copy_sample(&sb, "a");
    let b = copy_sample(&sb, "b");
    scale_kernel(&b, &top_kernel(&b), -1.0);
    sb.stage2()
        .arg("diff")
        .arg(&a)
        .arg(&b)
        .assert()
        .code(6)
        .stderr(predicate::str::contains("run.sqlite"));
}

/// A run with `passes` timed nsys passes: the sample's export as pass 1 and copies, each
/// kernel scaled by the pass's factor, as repeats/<i>.
fn with_repeats(sb: &Sandbox, name: &str, factors: &[f64]) -> PathBuf {
    let run = copy_sample(sb, name);
    let original = run.join("nsys/run.sqlite");
    let pristine = sb.path().join(format!("{name}.pristine.sqlite"));
    std::fs::copy(&original, &pristine).unwrap();
    for (i, f) in factors.iter().enumerate() {
        let dir = if i == 0 {
            run.clone()
        } else {
            let d = run.join(format!("repeats/{}", i + 1));
            std::fs::create_dir_all(d.join("nsys")).unwrap();
            std::fs::copy(&pristine, d.join("nsys/run.sqlite")).unwrap();
            d
        };
        scale_all(&dir, *f);
    }
    run
}

#[test]
fn repeated_runs_gate_on_the_noise() {
    let sb = Sandbox::new();
    let a = with_repeats(&sb, "a", &[1.0, 1.02, 0.98]);
    let same = with_repeats(&sb, "same", &[0.99, 1.01, 1.0]);
    let slower = with_repeats(&sb, "slower", &[1.20, 1.22, 1.18]);
    let noisy = with_repeats(&sb, "noisy", &[0.9, 1.6, 1.0]);
    let d = diff_json(&sb, &a, &slower, &[]);
    assert_eq!(
        (d["passes_a"].as_u64(), d["passes_b"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(d["total_test"]["significant"], true);
    let gate = |b: &Path, code: i32, says: &str| {
        sb.stage2()
            .args(["diff", "--fail-above", "5"])
            .arg(&a)
            .arg(b)
            .assert()
            .code(code)
            .stderr(predicate::str::contains(says));
    };
    gate(&same, 0, "total kernel time");
    gate(&slower, 7, "regression above 5%");
    gate(&noisy, 10, "within the noise");
    let s: serde_json::Value = serde_json::from_str(
        &String::from_utf8(
            sb.stage2()
                .arg("report")
                .arg(&slower)
                .output()
                .unwrap()
                .stderr,
        )
        .map(|_| read(slower.join("summary.json")))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(s["timed_passes"], 3);
    assert_eq!(
        s["kernels"][0]["runs"]["values"].as_array().unwrap().len(),
        3
    );
    let csv = read(slower.join("kernels.csv"));
    assert!(csv.lines().next().unwrap().contains("total_stddev_ns"));
}

/// The pairs measured on the GPU (examples/diff): same workload twice passes every scope; the
/// run with extra decode work trips total and kernels, naming the kernels.
#[test]
fn the_gpu_pairs_gate_as_measured() {
    let sb = Sandbox::new();
    let ex = root().join("examples/diff");
    let gate = |b: &str, scope: &str| {
        sb.stage2()
            .arg("diff")
            .arg(ex.join("base"))
            .arg(ex.join(b))
            .args(["--scope", scope, "--fail-above", "5"])
            .output()
            .unwrap()
    };
    for scope in ["total", "kernels", "ranges"] {
        let out = gate("same", scope);
        assert_eq!(out.status.code(), Some(0), "same/{scope}: {out:?}");
    }
    assert_eq!(gate("slow", "total").status.code(), Some(7));
    let out = gate("slow", "kernels");
    assert_eq!(out.status.code(), Some(7));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("new kernel nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT"),
        "{err}"
    );
    assert!(
        err.contains("nvjet_sm90_tst_8x64_64x16_2x1_v_bz_TNN +12.1%"),
        "{err}"
    );
    assert_eq!(gate("slow", "ranges").status.code(), Some(0));
    for f in ["base-vs-same.md", "base-vs-slow.md"] {
        let b = if f.contains("same") { "same" } else { "slow" };
        let out = sb
            .stage2()
            .arg("diff")
            .arg(ex.join("base"))
            .arg(ex.join(b))
            .output()
            .unwrap();
        // The committed comparison is what diff prints today (its run paths aside).
        let now = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(now, read(ex.join(f)), "{f}");
        // A mean over 3 passes and a first pass's figure are each said to be what they are.
        assert!(
            now.contains("Total kernel time (mean over the timed passes)")
                && now.contains("kernel time: the first timed pass of each run"),
            "{now}"
        );
    }
}

/// examples/diff/README.md's table quotes what stage2 prints: each row's gate is run and its
/// exit code and last stderr line (noise warnings aside) compared with the table.
#[test]
fn the_examples_readme_quotes_what_stage2_prints() {
    let readme = read(root().join("examples/diff/README.md"));
    let rows: Vec<Vec<String>> = readme
        .lines()
        .filter(|l| l.starts_with("| same |") || l.starts_with("| slow |"))
        .map(|l| {
            l.split(" | ")
                .map(|c| c.trim_matches(['|', ' ', '`']).to_string())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 6);
    let sb = Sandbox::new();
    for r in rows {
        let out = sb
            .stage2()
            .args(["diff", "--fail-above", "5", "--scope", &r[1]])
            .arg(root().join("examples/diff/base"))
            .arg(root().join("examples/diff").join(&r[0]))
            .output()
            .unwrap();
        assert_eq!(out.status.code().unwrap().to_string(), r[2], "{r:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rfind(|l| !l.contains("warning: noise") && !l.contains("warning: runs may"))
            .unwrap_or("");
        assert_eq!(last, r[3], "{r:?}");
    }
}

/// A compared range that opens with a warm-up instance is said before the change is trusted
/// (as hyperfine says so of a slow first run): on stderr, in the Markdown and in the JSON.
#[test]
fn a_range_that_opens_with_a_warm_up_is_said_beside_the_comparison() {
    let sb = Sandbox::new();
    let run = root().join("examples/sample-run");
    let out = sb
        .stage2()
        .arg("diff")
        .arg(&run)
        .arg(&run)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let md = String::from_utf8_lossy(&out.stdout);
    let said = "RUN_A's `mlp` opens with a warm-up: its first instance took 4.01 ms against a median of 0.27 ms for the other 31, 32% of the range's wall time compared here";
    assert!(err.contains(said), "{err}");
    assert!(md.contains("**Before trusting a change:**"), "{md}");
    let v = diff_json(&sb, &run, &run, &[]);
    assert_eq!(v["schema_version"], 3);
    let advice = advice_of(&v);
    assert!(advice.iter().any(|a| a.starts_with(said)), "{advice:?}");
    // The runs without one say nothing of the kind.
    let base = root().join("examples/diff/base");
    let v = diff_json(&sb, &base, &root().join("examples/diff/same"), &[]);
    assert!(v.get("advice").is_none(), "{v}");
}

/// A phase whose instances change time over the run (instance_trend) in one run, compared with
/// a run of another number of its instances: its time per instance then differs with the
/// length alone, and the diff says so before the change is trusted. Two real captures of
/// `decode` (an H200's 7 instances, an H100's 15 whose first steps were slow), compared with
/// --force across their GPUs; with as many instances on both sides nothing is said.
#[test]
fn a_phase_that_changes_time_over_runs_of_other_lengths_is_said() {
    let sb = Sandbox::new();
    let seven = root().join("examples/sample-run-hf-large");
    let trend = root().join("tests/data/hf/gpu-metrics");
    let v = diff_json(&sb, &seven, &trend, &["--force"]);
    let advice = advice_of(&v);
    let said = "RUN_B's `decode` changes time over the run: a median of 23.44 ms over #1-#5 and 12.73 ms over #11-#15 (instance_trend); RUN_A has 7 instances of it and RUN_B 15, so a change in its time per instance can be the runs' lengths";
    assert!(advice.iter().any(|a| a.starts_with(said)), "{advice:?}");
    // Fifteen instances on both sides: no such line.
    let fifteen = root().join("tests/data/hf/mistral-jitter");
    let v = diff_json(&sb, &fifteen, &trend, &["--force"]);
    let text = v["advice"].to_string();
    assert!(!text.contains("changes time over the run"), "{text}");
}

//! What stage2 says when the input is odd: range names that look like Markdown or like a
//! cited source, lists of thousands of names, hints that must follow the facts, and an export
//! whose CUDA trace holds no kernels.

mod common;

use common::{read, Sandbox};

/// A real capture whose `decode` range is renamed (here: hand-made) to `name`, in the export,
/// the config and the run record alike.
fn renamed(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let run = sb.copy_of("tests/data/hf/gpu-metrics", "renamed");
    let db = rusqlite::Connection::open(run.join("nsys/run.sqlite")).unwrap();
    db.execute(
        "UPDATE NVTX_EVENTS SET text = ?1 WHERE text = 'decode'",
        [name],
    )
    .unwrap();
    drop(db);
    let mut st = common::status(&run);
    st["passes"]["nsys"]["nsys"]["range"] = name.into();
    std::fs::write(run.join("status.json"), st.to_string()).unwrap();
    let config = read(run.join("config.yaml")).replace(
        "nvtx_capture: decode",
        &format!("nvtx_capture: {}", serde_json::Value::from(name)),
    );
    std::fs::write(run.join("config.yaml"), config).unwrap();
    run
}

/// Item 11: a range name is one opaque unit of the summary. Its "(nsys/run.sqlite)" is no
/// footnote, its backtick does not stop the footnoting of its line, and inside its code span
/// nothing is backslash-escaped.
#[test]
fn a_range_name_is_opaque_in_the_stakeholder_summary() {
    let sb = Sandbox::new();
    let name = "de`c (nsys/run.sqlite) *x* [a] <b>";
    let run = renamed(&sb, name);
    sb.stage2()
        .args(["report", "--color", "never"])
        .arg(&run)
        .assert()
        .success();
    let md = read(run.join("stakeholder_summary.md"));
    let span = format!("``{name}``");
    let line = md
        .lines()
        .find(|l| l.starts_with("- GPU kernel time in "))
        .unwrap();
    assert_eq!(
        line,
        format!("- GPU kernel time in {span}: 12.75 ms in 5280 launches of 31 kernels[^2]")
    );
    // Every line naming the range has its own sources footnoted past the name (the name in
    // prose outside a code span is escaped), and every code span holds the name whole.
    let mut lines = 0;
    for l in md.lines().filter(|l| l.contains(&span)) {
        let rest = l.replace(&span, "").replace("\\(nsys/run.sqlite)", "");
        assert!(!rest.contains("nsys/run.sqlite)"), "{l}");
        lines += 1;
    }
    assert!(lines >= 5, "{md}");
    assert_eq!(
        md.matches("``de").count(),
        md.matches(&span).count(),
        "{md}"
    );
}

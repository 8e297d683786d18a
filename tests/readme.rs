//! The README's figures are the committed runs' own (its quoted headline is the sample's), and
//! the committed reports read as the README says they do.

mod common;

use common::{read, root};

/// The headline the README quotes is the start of the eager sample's headline, as rendered.
#[test]
fn the_quoted_headline_is_the_samples() {
    let readme = read(root().join("README.md"));
    let start = readme.find("> **Headline:**").expect("a quoted headline");
    let quoted: Vec<&str> = readme[start..]
        .lines()
        .take_while(|l| l.starts_with("> "))
        .map(|l| &l[2..])
        .collect();
    let quoted = quoted.join(" ");
    let summary = read(root().join("examples/sample-run-hf-eager/stakeholder_summary.md"));
    let headline = summary
        .lines()
        .find(|l| l.starts_with("**Headline:**"))
        .unwrap();
    assert!(
        headline.starts_with(&quoted),
        "README:\n{quoted}\nsample:\n{headline}"
    );
}

/// The manager summary of every committed run: no raw ncu metric names, and the headline states
/// the captured range's kernel time once.
#[test]
fn the_manager_summaries_speak_plainly_and_say_each_fact_once() {
    for e in std::fs::read_dir(root().join("examples"))
        .unwrap()
        .flatten()
    {
        let path = e.path().join("stakeholder_summary.md");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for metric in [
            "sm__",
            "dram__",
            "gpu__",
            "smsp__",
            "launch__",
            "FP32 ridge",
        ] {
            assert!(!text.contains(metric), "{}: {metric}", path.display());
        }
        // Files are cited as footnotes, not in sentences: outside tables and the Sources
        // list, no line names a file the figures come from.
        let body = text.split("\n## Sources\n").next().unwrap();
        for line in body.lines().filter(|l| !l.starts_with('|')) {
            for file in [
                "nsys/",
                "ncu/",
                ".sqlite",
                ".csv",
                "status.json",
                "env.json",
            ] {
                assert!(!line.contains(file), "{}: {file} in {line}", path.display());
            }
        }
        if text.contains("[^1]") {
            assert!(
                text.contains("\n## Sources\n\n[^1]: "),
                "{}",
                path.display()
            );
        }
        let headline = text
            .lines()
            .find(|l| l.starts_with("**Headline:**"))
            .unwrap();
        // "the GPU ran X of kernels": once per GPU view (the whole capture, a rank's range).
        let ran = headline.matches(" of kernels in ").count();
        let ranks = headline.contains("summed over");
        assert!(
            ran == 1 || (ranks && ran == 2),
            "{}: {headline}",
            path.display()
        );
    }
}

/// kernels.md's per-phase heading promises what is under it: "Per token" only where a phase's
/// row has a time per token, "Per instance" where none does.
#[test]
fn the_per_phase_heading_matches_its_figures() {
    let mut seen = 0;
    for dir in ["examples", "examples/diff"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap().flatten() {
            let Ok(md) = std::fs::read_to_string(e.path().join("kernels.md")) else {
                continue;
            };
            let Some(start) = md
                .find("\n## Per token\n")
                .or_else(|| md.find("\n## Per instance\n"))
            else {
                continue;
            };
            let section = &md[start + 1..];
            let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
            // The table's sixth column is ms per token.
            let per_token = section
                .lines()
                .filter(|l| l.starts_with("| ") && !l.starts_with("| phase"))
                .any(|l| l.split('|').nth(6).is_some_and(|c| c.trim() != "–"));
            assert_eq!(
                section.starts_with("## Per token"),
                per_token,
                "{}: {}",
                e.path().display(),
                &section[..200.min(section.len())]
            );
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen}");
}

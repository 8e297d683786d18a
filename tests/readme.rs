//! The README's figures are the committed runs' own: its quoted headline is the sample's, and
//! its performance table is the measured table of docs/measured.md, cell for cell.

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

/// Each row of the README's performance table has its bare time and first / warm / quick
/// ratios in the measured table of docs/measured.md for the same day.
#[test]
fn the_performance_table_is_the_measured_one() {
    let readme = read(root().join("README.md"));
    let measured = read(root().join("docs/measured.md"));
    let section = &measured[measured
        .find("### 2026-11-")
        .expect("the measured tables of 2026-11")..];
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let rows: Vec<Vec<String>> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| workload | bare"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect();
    assert!(rows.len() >= 6, "{rows:?}");
    for row in rows {
        // bare, first, warm, quick of each run the README row gives (`A / B`), found together
        // in one measured row.
        let runs = |c: &String| -> Vec<String> { c.split(" / ").map(str::to_string).collect() };
        let (bare, first, warm, quick) =
            (runs(&row[1]), runs(&row[2]), runs(&row[3]), runs(&row[4]));
        for k in 0..bare.len() {
            let found = section.lines().filter(|l| l.starts_with('|')).any(|l| {
                let c = cells(l);
                c.get(1) == Some(&bare[k])
                    && c.iter().any(|x| *x == first[k])
                    && c.iter().any(|x| x.starts_with(warm[k].as_str()))
                    && c.iter().any(|x| *x == quick[k])
            });
            assert!(
                found,
                "README row (run {k}) not in docs/measured.md: {row:?}"
            );
        }
    }
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

/// Every figure with a unit in the README's "Measured performance" section (seconds, MB,
/// ratios, %, points) is one that docs/measured.md records: no figure is quoted from nowhere.
#[test]
fn the_performance_prose_quotes_only_measured_figures() {
    let readme = read(root().join("README.md"));
    let measured = read(root().join("docs/measured.md"));
    let start = readme.find("## Measured performance").unwrap();
    let end = readme[start..].find("## Where to go next").unwrap() + start;
    let section = &readme[start..end];
    let numbers_of = |text: &str| -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric()) {
                let mut j = i;
                while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                    j += 1;
                }
                let n: String = chars[i..j].iter().collect();
                let rest: String = chars[j..chars.len().min(j + 7)].iter().collect();
                let unit = ["x", " s", " MB", "%", " points"]
                    .iter()
                    .any(|u| rest.starts_with(u));
                if unit {
                    out.insert(n.trim_end_matches('.').to_string());
                }
                i = j;
            } else {
                i += 1;
            }
        }
        out
    };
    let known: std::collections::BTreeSet<String> = {
        let mut all = std::collections::BTreeSet::new();
        for token in measured.split(|c: char| !(c.is_ascii_digit() || c == '.')) {
            all.insert(token.trim_end_matches('.').to_string());
        }
        all
    };
    let quoted = numbers_of(section);
    assert!(quoted.len() >= 30, "{quoted:?}");
    let missing: Vec<&String> = quoted.iter().filter(|n| !known.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "README figures not in docs/measured.md: {missing:?}"
    );
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

//! What the committed samples (real runs) say of each figure's scope and source: a kernel keeps
//! its tag in every list, ncu's figures have one scope, per-token figures name their batch, the
//! operators table names what it covers. The samples re-render byte for byte (sample_run.rs),
//! so these hold for what stage2 writes today.

mod common;

use common::{read, root};

/// Every committed sample run.
const SAMPLES: &[&str] = &[
    "sample-run",
    "sample-run-2gpu",
    "sample-run-2gpu-tp",
    "sample-run-hf-eager",
    "sample-run-hf-static",
    "sample-run-hf-large",
    "sample-run-hf-moe",
    "sample-run-hf-auto",
    "sample-run-hf-window",
    "sample-run-hf-prefill",
    "sample-run-hf-second-gpu",
    "diff/base",
    "diff/same",
    "diff/slow",
];

fn report(name: &str, file: &str) -> String {
    read(root().join("examples").join(name).join(file))
}

/// The lines of one `## ` section of a Markdown report (heading excluded).
fn section<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    md.lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect()
}

/// Two kernels of one display name (`unrolled_elementwise_kernel [direct_copy]` twice in the
/// MoE run) keep the tags that tell them apart in the "Left out" list, as in the kernel table.
#[test]
fn kernels_keep_their_tags_in_the_left_out_list() {
    for name in SAMPLES {
        let md = report(name, "kernels.md");
        let labels: Vec<&str> = section(&md, "## Left out of the ncu pass")
            .into_iter()
            .filter_map(|l| l.strip_prefix("- #"))
            .map(|l| {
                let label = l.split_once(' ').map_or(l, |(_, rest)| rest);
                label.rsplit_once(" (").map_or(label, |(label, _)| label)
            })
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for l in &labels {
            assert!(seen.insert(*l), "{name}: {l} listed twice: {labels:?}");
        }
    }
    let moe = report("sample-run-hf-moe", "kernels.md");
    let copies: Vec<&str> = section(&moe, "## Left out of the ncu pass")
        .into_iter()
        .filter(|l| l.contains("unrolled_elementwise_kernel \\[direct_copy\\] ~"))
        .collect();
    assert_eq!(copies.len(), 2, "{copies:?}");
}

/// ncu measured one range: its coverage and its launch configurations' share name the same
/// scope (the two-GPU runs captured `decode`'s first instance on each rank, so their whole
/// capture is `decode`, the range ncu measured in).
#[test]
fn ncu_figures_have_one_scope() {
    for name in SAMPLES {
        for file in ["kernels.md", "stakeholder_summary.md"] {
            let md = report(name, file);
            let scopes: Vec<&str> = md
                .lines()
                .filter_map(|l| {
                    let l = l.trim_start_matches("- ");
                    match l.strip_prefix("Hardware counters (ncu) measured ") {
                        // "measured in `decode` for 12 kernels, which hold ..."
                        Some(rest) if rest.starts_with("in ") => rest.split(" for ").next(),
                        // "measured for 18 kernels in `decode`: ..."
                        Some(rest) => {
                            let at = rest.find(" in ")?;
                            rest[at + 1..].split(':').next()
                        }
                        None => l.strip_prefix("Launch configurations ")?.split(':').next(),
                    }
                })
                .collect();
            assert!(!scopes.is_empty(), "{name}/{file}");
            assert!(
                scopes.iter().all(|s| *s == scopes[0]),
                "{name}/{file}: {scopes:?}"
            );
            assert!(!scopes[0].contains("whole capture"), "{name}/{file}");
        }
    }
}

/// A time per token divides an instance by every sequence's tokens: where the batch holds
/// several sequences, each per-token figure says so (the prefill sample's `decode`: 26.88 ms a
/// step of 8 sequences, 3.360 ms per token over them).
#[test]
fn per_token_figures_name_their_batch() {
    let stake = report("sample-run-hf-prefill", "stakeholder_summary.md");
    assert!(
        stake.contains("`decode` takes 26.88 ms per instance on average, 3.360 ms per token, over a batch of 8 (298 tokens/s)"),
        "{stake}"
    );
    for name in SAMPLES {
        let s: serde_json::Value = serde_json::from_str(&report(name, "summary.json")).unwrap();
        let batched = s["per_token"].as_array().is_some_and(|p| {
            p.iter().any(|x| {
                x["batch"].as_u64().is_some_and(|b| b > 1) && x["ms_per_token"].is_number()
            })
        });
        let stake = report(name, "stakeholder_summary.md");
        let md = report(name, "kernels.md");
        // Every phase with token marks in the samples has a batch of several sequences.
        assert_eq!(
            stake.matches(" ms per token").count(),
            stake.matches(" ms per token, over a batch of ").count(),
            "{name}"
        );
        assert_eq!(
            md.contains("| ms per token, over the batch |"),
            batched,
            "{name}"
        );
    }
}

/// The operators table names the calls its rows cover: every call in the capture, said as the
/// run facts say the capture (the `--operators` sample: `decode`, 15 instances captured).
#[test]
fn the_operators_table_names_its_scope() {
    let mut seen = 0;
    for name in SAMPLES {
        let stake = report(name, "stakeholder_summary.md");
        let Some(capture) = stake
            .lines()
            .find_map(|l| l.strip_prefix("| Capture | nsys: "))
            .and_then(|l| l.split("; ncu: ").next())
        else {
            continue;
        };
        for text in [&stake, &report(name, "kernels.md")] {
            if let Some(line) = text.lines().find(|l| l.starts_with("PyTorch operators (")) {
                let scope = format!("over every operator call in the capture ({capture}): ");
                assert!(line.contains(&scope), "{name}: {line}");
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 2, "the hf-auto sample's two reports");
    assert!(report("sample-run-hf-auto", "kernels.md").contains(
        "over every operator call in the capture (NVTX range `decode`, 15 instances captured)"
    ));
}

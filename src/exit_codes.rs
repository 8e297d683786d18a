//! The public exit-code table, in one place. The README's table mirrors this file.

/// The run did what was asked.
pub(crate) const OK: i32 = 0;
/// Usage or configuration error: nothing was run.
pub(crate) const USAGE: i32 = 2;
/// A required tool (nsys, ncu, the workload's interpreter) is missing or unusable.
pub(crate) const TOOL: i32 = 3;
/// The workload itself failed.
pub(crate) const WORKLOAD: i32 = 4;
/// A profiler pass produced no data (nothing matched the capture or the filter, or an nsys
/// export holds CUDA launch calls and no kernel: its CUDA trace lost the GPU's side).
pub(crate) const NO_DATA: i32 = 5;
/// An artifact (CSV, SQLite, YAML) could not be parsed.
pub(crate) const PARSE: i32 = 6;
/// `stage2 diff --fail-above`: the chosen scope regressed by more than the threshold.
pub(crate) const REGRESSION: i32 = 7;
/// The run directory (or an output file) could not be created or written: disk full,
/// permissions. What was written before stays.
pub(crate) const RUN_DIR: i32 = 8;
/// `stage2 diff`: an input is not a complete run, or the two measure different things.
pub(crate) const NOT_COMPARABLE: i32 = 9;
/// `stage2 diff --fail-above`: a change above the threshold that the runs' noise could explain.
pub(crate) const INCONCLUSIVE: i32 = 10;
/// The nsys pass's findings stand (the reports were written from it); the ncu pass after it
/// failed or produced no data (status.json's `passes.ncu` says why).
pub(crate) const PARTIAL: i32 = 11;
/// Interrupted by Ctrl-C or SIGTERM.
pub(crate) const INTERRUPTED: i32 = 130;

/// Every code with a one-line meaning, for `--help` and the README test.
pub(crate) const TABLE: &[(i32, &str)] = &[
    (OK, "ok"),
    (USAGE, "usage or config error"),
    (TOOL, "a required tool is missing or unusable"),
    (WORKLOAD, "the workload failed"),
    (NO_DATA, "a pass produced no data"),
    (PARSE, "an artifact could not be parsed"),
    (REGRESSION, "stage2 diff: a regression above --fail-above"),
    (
        RUN_DIR,
        "the run directory or an output could not be written",
    ),
    (NOT_COMPARABLE, "stage2 diff: the runs cannot be compared"),
    (
        INCONCLUSIVE,
        "stage2 diff: a change above --fail-above within the noise",
    ),
    (
        PARTIAL,
        "partial: the nsys findings stand, the ncu pass failed",
    ),
    (INTERRUPTED, "interrupted"),
];

/// The `--help` text of the table: "Exit codes: 0 ok, 2 ..., 130 interrupted."
pub(crate) fn help() -> String {
    let codes: Vec<String> = TABLE.iter().map(|(c, m)| format!("{c} {m}")).collect();
    format!("Exit codes: {}.", codes.join(", "))
}

/// Of several outcomes, the one the run ends with: the most severe, where an interrupt beats
/// everything and "no data" is milder than a failure.
pub(crate) fn worst(codes: impl IntoIterator<Item = i32>) -> i32 {
    codes.into_iter().max_by_key(|c| severity(*c)).unwrap_or(OK)
}

fn severity(code: i32) -> u8 {
    match code {
        OK => 0,
        NO_DATA => 1,
        PARSE => 2,
        REGRESSION | NOT_COMPARABLE | INCONCLUSIVE => 2,
        RUN_DIR => 4,
        WORKLOAD => 3,
        TOOL => 4,
        USAGE => 5,
        INTERRUPTED => 6,
        _ => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_code_of_the_table() {
        let h = help();
        for (code, meaning) in TABLE {
            assert!(h.contains(&format!("{code} {meaning}")), "{h}");
        }
    }

    #[test]
    fn worst_prefers_failures_over_no_data_and_interrupts_over_all() {
        assert_eq!(worst([OK, NO_DATA]), NO_DATA);
        assert_eq!(worst([NO_DATA, WORKLOAD, OK]), WORKLOAD);
        assert_eq!(worst([WORKLOAD, INTERRUPTED]), INTERRUPTED);
        assert_eq!(worst([]), OK);
    }
}

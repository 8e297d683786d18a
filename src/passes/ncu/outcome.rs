//! What an ncu profile step's outcome means: its exit, its report and its own lines, read
//! into the pass's state and the words that say why.

use super::NO_KERNELS;
use crate::passes::process::Outcome;
use crate::passes::stopped;
use crate::rundir::status::{Cause, PassState, PassStatus};

/// The code in ncu's "The application returned an error code (N)".
pub(super) fn app_error_code(tail: &str) -> Option<i32> {
    let at = tail.rfind("The application returned an error code (")?;
    let rest = &tail[at + "The application returned an error code (".len()..];
    rest.split(')').next()?.trim().parse().ok()
}

/// The workload's own last lines, ncu's `==PROF==`/`==ERROR==`/`==WARNING==` lines left out.
fn own_lines(tail: &str, n: usize) -> String {
    let own: Vec<&str> = tail
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("=="))
        .collect();
    match own.is_empty() {
        true => "(none)".to_string(),
        false => own[own.len().saturating_sub(n)..].join("\n"),
    }
}

/// What the profile step's outcome means.
pub(crate) fn classify(out: &Outcome, report: bool, filtered: bool) -> PassStatus {
    if let Some(st) = stopped(out, "ncu") {
        return st;
    }
    let error_lines: Vec<&str> = out
        .tail
        .lines()
        .filter(|l| l.contains("==ERROR=="))
        .collect();
    // "==ERROR== The application returned an error code (N)" with no report: the workload
    // failed before ncu profiled anything (a signal reads as its number, as ncu gives it).
    if let Some(code) = app_error_code(&out.tail).filter(|_| !report) {
        return PassStatus::failed(
            Cause::Workload,
            Some(format!(
                "the workload exited with status {code} under ncu before any kernel was profiled: ncu wrote no report. Its last output:\n{}",
                own_lines(&out.tail, 10)
            )),
        );
    }
    if out.tail.contains(NO_KERNELS) && !report {
        let warning = out
            .tail
            .lines()
            .find(|l| l.contains(NO_KERNELS))
            .unwrap_or(NO_KERNELS)
            .trim();
        return PassStatus::new(PassState::NoData, Some(format!(
                "ncu profiled nothing{}: \"{warning}\". Check ncu.nvtx_include against the ranges in nsys/summary_nvtx_sum.csv (push/pop ranges match only as NAME/)",
                if filtered { " (even without the kernel filter)" } else { "" }
            )),
        );
    }
    match (report, out.code) {
        (true, Some(0)) => PassStatus::new(PassState::Ok, None),
        (true, _) => PassStatus::failed(Cause::Workload, Some(format!(
                "the workload under ncu ended with {}; the report was kept and imported. Last output:\n{}",
                out.describe(),
                out.tail_lines(8)
            )),
        ),
        (false, _) if !error_lines.is_empty() => PassStatus::failed(
            if error_lines.iter().any(|l| l.contains("ERR_NVGPUCTRPERM")) {
                Cause::Tool
            } else {
                Cause::Workload
            },
            Some(format!("ncu failed ({}): {}", out.describe(), crate::text::listed(&error_lines, " | "))),
        ),
        (false, Some(0)) => PassStatus::new(PassState::NoData, Some("ncu exited 0 but wrote no report; see ncu/ncu.log".to_string()),
        ),
        (false, _) => PassStatus::failed(Cause::Workload, Some(format!(
                "ncu or the workload failed ({}) and no report was written. Last output:\n{}",
                out.describe(),
                out.tail_lines(10)
            )),
        ),
    }
}

//! What an `nsys profile` step's outcome means (a report, a workload that failed, sampling
//! refused, nsys's own failure), and the reports a pass left.

use std::path::{Path, PathBuf};

use crate::config::{Capture, CaptureRangeEnd, Nsys};
use crate::passes::process::{self, Outcome};
use crate::passes::stopped;
use crate::rundir::status::{Cause, PassState, PassStatus};

pub(crate) const NO_REPORTS: &str = "No reports were generated";

/// nsys's own lines saying it cannot sample GPU metrics (another sampler holds the GPU, no
/// counter access, an unknown metric set or device), when the profile wrote no report.
pub(crate) fn sampling_refused(out: &Outcome, report: bool) -> Option<String> {
    if report || out.code == Some(0) {
        return None;
    }
    let lines: Vec<&str> = out
        .tail
        .lines()
        .map(str::trim)
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("gpu-metrics")
                || l.contains("gpu metrics")
                || l.contains("metric config")
                || l.contains("already under profiling")
                || l.contains("nvgpuctrperm")
                || l.contains("performance counters")
        })
        .collect();
    (!lines.is_empty()).then(|| crate::text::listed(&lines, " "))
}

/// What the profile step's outcome means. Pure, so each case is unit-tested.
pub(crate) fn classify(
    out: &Outcome,
    report: Option<&Path>,
    qdstrm: bool,
    (cfg, capture): (&Nsys, &Capture),
) -> PassStatus {
    let mut st = classify_exit(out, report, qdstrm, (cfg, capture));
    let opened = out.tail.contains("Capture range started");
    if opened && !out.tail.contains("Capture range ended") && st.state == PassState::Ok {
        st.warnings.push(format!(
            "the capture range `{}` opened but never closed: nsys captured until the application exited (is the range's end/pop reached?)",
            capture.nvtx_name()
        ));
    }
    st
}

/// "exited with status 3", or "was killed by signal 11 (SIGSEGV; exit status 139)" for the
/// 128 + N a shell and
/// nsys give a workload a signal ended.
pub(crate) fn workload_exit(code: i32) -> String {
    match code {
        129..=192 => {
            let n = code - 128;
            let name = nix::sys::signal::Signal::try_from(n)
                .map(|s| format!("{}; ", s.as_str()))
                .unwrap_or_default();
            format!("was killed by signal {n} ({name}exit status {code})")
        }
        c => format!("exited with status {c}"),
    }
}

/// The workload's own last lines: nsys's closing lines ("Processing events...", "Generated:",
/// "No reports were generated") left out.
fn workload_lines(tail: &str, n: usize) -> String {
    let own: Vec<&str> = tail
        .lines()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty()
                && !t.starts_with("Processing events")
                && t != "Generated:"
                && !t.contains(NO_REPORTS)
        })
        .collect();
    match own.is_empty() {
        true => "(none)".to_string(),
        false => own[own.len().saturating_sub(n)..].join("\n"),
    }
}

fn classify_exit(
    out: &Outcome,
    report: Option<&Path>,
    qdstrm: bool,
    (cfg, capture): (&Nsys, &Capture),
) -> PassStatus {
    if let Some(st) = stopped(out, "nsys") {
        return st;
    }
    let expr = crate::analysis::nvtx::nsys_capture(capture.nvtx_name(), capture.domain());
    // nsys passes the workload's exit status on (128 + N for a signal), report or not: a
    // range that never opened because the workload failed first is the workload's failure,
    // not a naming problem, and nothing is run again to diagnose it.
    if out.tail.contains(NO_REPORTS) && out.code.is_some_and(|c| c != 0) {
        let opened = match capture {
            Capture::ProfilerApi { .. } => "cudaProfilerStart was called".to_string(),
            c => format!("{} opened", c.describe()),
        };
        return PassStatus::failed(
            Cause::Workload,
            Some(format!(
                "the workload {} before {opened}: nsys wrote no report. Its last output:\n{}",
                workload_exit(out.code.unwrap_or(0)),
                workload_lines(&out.tail, 10)
            )),
        );
    }
    if out.tail.contains(NO_REPORTS) && matches!(capture, Capture::ProfilerApi { .. }) {
        return PassStatus::new(PassState::NoData, Some(format!(
            "nsys: \"{NO_REPORTS}\": the capture (nsys.capture_range=cudaProfilerApi) never started: the workload never called cudaProfilerStart (torch.cuda.profiler.start()). Call it around the part to profile, or set nsys.capture_range=nvtx with a range name"
        )));
    }
    if out.tail.contains(NO_REPORTS) {
        // Which domain nsys looked in is part of what to check: one named may be the wrong one.
        let domain = match capture.domain() {
            Some(d) => {
                format!("the range in another domain than `{d}`, or in the default one: no @DOMAIN")
            }
            None => "the range in a domain: NAME@DOMAIN".to_string(),
        };
        return PassStatus::new(PassState::NoData, Some(format!(
                "nsys: \"{NO_REPORTS}\": the capture range `--nvtx-capture={expr}` never opened. Check the NVTX range names the workload emits (a typo, or {domain}), or run with nsys.gating_nvtx=false to capture everything"
            )),
        );
    }
    match (report, out.code) {
        (Some(_), Some(0)) => PassStatus::new(PassState::Ok, None),
        (Some(_), Some(143))
            if matches!(
                cfg.capture_range_end,
                None | Some(CaptureRangeEnd::StopShutdown)
            ) =>
        {
            let mut st = PassStatus::new(PassState::Ok, None);
            st.warnings.push(format!(
                "nsys ended the application when the capture range `{expr}` closed (nsys's default --capture-range-end=stop-shutdown; exit 143). Set nsys.capture_range_end=none to capture every instance and let it run to its end"
            ));
            st
        }
        (Some(_), _) => PassStatus::failed(Cause::Workload, Some(format!(
                "the workload under nsys ended with {}; its report was kept and processed. Last output:\n{}",
                out.describe(),
                out.tail_lines(10)
            )),
        ),
        (None, _) if qdstrm => PassStatus::failed(Cause::Tool, Some("nsys wrote only a .qdstrm and no .nsys-rep: its importer (QdstrmImporter) is missing or cannot load a library. Run `stage2 doctor`, or use a complete Nsight Systems install (tools.nsys)".to_string()),
        ),
        (None, Some(0)) => PassStatus::new(PassState::NoData, Some("nsys exited 0 but wrote no report; see nsys/nsys.log".to_string()),
        ),
        (None, _) => PassStatus::failed(Cause::Workload, Some(format!(
                "nsys or the workload failed ({}) and no report was written. Last output:\n{}",
                out.describe(),
                out.tail_lines(10)
            )),
        ),
    }
}

/// The reports one pass left: `run.nsys-rep`, or one `run.rank<N>.nsys-rep` per rank under a
/// launcher, with the rank (None for a single process).
pub(crate) fn reports(dir: &Path) -> Vec<(Option<u32>, PathBuf)> {
    let mut found: Vec<(Option<u32>, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| process::nonempty(p))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            let stem = name
                .strip_suffix(".nsys-rep")
                .or_else(|| name.strip_suffix(".qdrep"))?;
            match stem {
                "run" => Some((None, p)),
                _ => Some((Some(stem.strip_prefix("run.rank")?.parse().ok()?), p)),
            }
        })
        .collect();
    found.sort();
    found
}

//! status.json: the state of each pass, rewritten after every change so that an interrupted
//! or crashed run still says how far it got.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::exit_codes;

pub(crate) use super::record::NsysRecord;
pub(crate) use super::write::{
    remove_stale_temps, write_atomic, write_atomic_raw, write_atomic_with,
};

pub(crate) const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PassState {
    Pending,
    Running,
    /// --dry-run: written, not run.
    Planned,
    Skipped,
    Ok,
    NoData,
    Failed,
    Interrupted,
    TimedOut,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PassStatus {
    pub(crate) state: PassState,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) duration_s: Option<f64>,
    /// The exit code this pass alone would give the run.
    pub(crate) exit_code: i32,
    /// Warnings worth a look even when the pass succeeded.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub(crate) warnings: Vec<String>,
    /// What the ncu pass profiled and where it wrote it, so the reports read it back instead
    /// of recomputing it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) ncu: Option<NcuRecord>,
    /// What the nsys pass captured, so the reports label it by what happened.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) nsys: Option<NsysRecord>,
}

/// The ncu pass's NVTX scope as its plan decided it: the include expression (None: not
/// gated), the range it names and whether nsys captured that range, and its files' base name
/// (`ncu/<base>.ncu-rep`, `ncu/<base>_raw.csv`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NcuRecord {
    pub(crate) include: Option<String>,
    /// The range `include` names, as the export names it (None: not gated, or an expression
    /// that names no one range). Runs made before the plan recorded it: read from `include`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) range: Option<String>,
    /// nsys captured ncu's range (or either side is ungated): the kernel table joins them.
    /// Runs made before the plan recorded it: see [`super::record::RunRecord::read`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) same_as_capture: Option<bool>,
    pub(crate) base: String,
    /// What ncu collected: `--set` (None: none) and how many metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) set: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) metrics: usize,
    /// The ncu pass ended the workload once every chosen kernel was profiled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stopped_early: bool,
    /// Measuring every launch configuration, the pass was stopped at its bound: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bounded: Option<String>,
    /// The pass's time budget (`ncu.budget_s`, `ncu.shapes_budget_s`) and whether ncu was
    /// stopped at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<NcuBudget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cost: Option<NcuCostPlan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) actual: Option<NcuCostActual>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache: Option<NcuCacheUse>,
    /// The pass ran on a second GPU while the nsys pass ran (`ncu.second_gpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) second_gpu: Option<SecondGpu>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shapes: Option<NcuShapePlan>,
    /// One instance of the range measured whole where it launches CUDA graphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) graph_step: Option<GraphStepRecord>,
    /// The workload was started beside the nsys pass and held (`ncu.early_start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) early_start: Option<EarlyStart>,
    /// The run whose kernels the metrics cache was expected to answer: the last run of this
    /// workload said so, and the workload was not started early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) warm_expected: Option<String>,
}

/// The ncu pass's time budget (see [`NcuRecord::budget`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NcuBudget {
    pub(crate) s: f64,
    /// Where it comes from: the key, and for `auto` the nsys pass it follows.
    pub(crate) from: String,
    pub(crate) reached: bool,
}

/// The ncu pass's workload started beside the nsys pass, held by ncu at its first CUDA call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EarlyStart {
    /// Seconds from its start until its processes last used the CPU before the attach: when
    /// ncu held it at its first CUDA call (None: not known).
    pub(crate) held_after_s: Option<f64>,
    /// The pass attached to it (false: it started the workload again as usual).
    pub(crate) attached: bool,
}

/// One instance of ncu's range measured whole (`ncu.graph_step`, `ncu --graph-profiling
/// graph`): which one, what ncu had to skip and count to reach it, and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GraphStepRecord {
    /// The range, as the nsys export names it.
    pub(crate) range: String,
    /// Its position among the range's instances in the nsys export, from 1.
    pub(crate) instance: usize,
    /// Workloads (graph launches and kernels outside graphs) before it in the range.
    pub(crate) skip: u64,
    pub(crate) graphs: u64,
    pub(crate) kernels: u64,
    /// The nsys export's GPU time of its kernels, in ns.
    pub(crate) kernel_ns: i64,
    /// `ncu/<file>`: the raw import of the measured step.
    pub(crate) csv: String,
    /// measured, cached, or not measured.
    pub(crate) state: GraphStepState,
    /// Why not measured, or the run whose measurement the metrics cache served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    /// Seconds its ncu run and import took (part of the pass's duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) duration_s: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GraphStepState {
    Measured,
    Cached,
    NotMeasured,
}

/// The GPUs of two passes run at once (`CUDA_VISIBLE_DEVICES` values) and their one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SecondGpu {
    pub(crate) nsys: String,
    pub(crate) ncu: String,
    pub(crate) model: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The metrics cache in one run: its folder, the kernels served from it, those stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NcuCacheUse {
    pub(crate) dir: String,
    pub(crate) hits: usize,
    /// Entries found but measured beside another nsys duration: profiled again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) stale: usize,
    pub(crate) stored: usize,
}

/// The shapes decision of one pass (`ncu.shapes`), as status.json keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NcuShapePlan {
    /// One launch of each configuration, not only each kernel's first.
    pub(crate) every_shape: bool,
    /// The chosen kernels' launch configurations in the range, and the share of their time
    /// in the configurations of their first launches, in %.
    pub(crate) launch_configs: usize,
    pub(crate) first_shapes_pct: f64,
    pub(crate) kernels: usize,
}

/// The plan printed before the pass and kept in status.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NcuCostPlan {
    /// Kernels ncu will profile, and kernels whose figures come from the cache instead.
    pub(crate) kernels: usize,
    pub(crate) cached: usize,
    pub(crate) passes_per_kernel: u32,
    pub(crate) predicted_s: f64,
    /// Where the figures come from: a named earlier run, or the built-in defaults.
    pub(crate) basis: String,
    /// Chosen kernels the cache lacked that ncu was not given: its time budget affords only
    /// the `kernels` largest at the pace an earlier run of the workload measured.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) deferred: usize,
}

/// What the pass cost, measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NcuCostActual {
    pub(crate) kernels: usize,
    pub(crate) passes_per_kernel: Option<u32>,
    pub(crate) s: f64,
    pub(crate) s_per_kernel: Option<f64>,
    /// Until the first kernel was being profiled, and after the last one was.
    pub(crate) before_first_s: Option<f64>,
    pub(crate) after_last_s: Option<f64>,
    /// (predicted - actual) / actual, in %.
    pub(crate) prediction_error_pct: Option<f64>,
}

/// Why a pass failed; its exit code follows from it (see [`exit_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// nsys/ncu missing, unusable, or one of their post steps failed.
    Tool,
    /// The workload (under the profiler) failed.
    Workload,
    /// A setting was refused before the pass ran.
    Config,
    Parse,
    RunDir,
}

impl Cause {
    /// The cause an error stands for.
    pub(crate) fn of(e: &crate::error::Error) -> Cause {
        match e.exit_code() {
            exit_codes::TOOL => Cause::Tool,
            exit_codes::WORKLOAD => Cause::Workload,
            exit_codes::PARSE => Cause::Parse,
            exit_codes::RUN_DIR => Cause::RunDir,
            _ => Cause::Config,
        }
    }
}

/// The one mapping from a pass's outcome to the exit code it gives the run.
pub(crate) fn exit_code(state: PassState, cause: Option<Cause>) -> i32 {
    match (state, cause) {
        (PassState::NoData, _) => exit_codes::NO_DATA,
        (PassState::Interrupted, _) => exit_codes::INTERRUPTED,
        (PassState::TimedOut, _) => exit_codes::WORKLOAD,
        (PassState::Failed, Some(Cause::Tool)) => exit_codes::TOOL,
        (PassState::Failed, Some(Cause::Config)) => exit_codes::USAGE,
        (PassState::Failed, Some(Cause::Parse)) => exit_codes::PARSE,
        (PassState::Failed, Some(Cause::RunDir)) => exit_codes::RUN_DIR,
        (PassState::Failed, _) => exit_codes::WORKLOAD,
        _ => exit_codes::OK,
    }
}

impl PassStatus {
    /// A pass in `state` (a failure's cause: see [`PassStatus::failed`]).
    pub(crate) fn new(state: PassState, reason: Option<String>) -> Self {
        Self::with(state, None, reason)
    }
    pub(crate) fn failed(cause: Cause, reason: Option<String>) -> Self {
        Self::with(PassState::Failed, Some(cause), reason)
    }
    fn with(state: PassState, cause: Option<Cause>, reason: Option<String>) -> Self {
        PassStatus {
            state,
            reason,
            duration_s: None,
            exit_code: exit_code(state, cause),
            warnings: Vec::new(),
            ncu: None,
            nsys: None,
        }
    }
    pub(crate) fn skipped(reason: &str) -> Self {
        Self::new(PassState::Skipped, Some(reason.to_string()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Status {
    pub(crate) schema_version: u32,
    pub(crate) run_id: String,
    /// running, ok, no-data, partial, failed, interrupted, planned.
    pub(crate) state: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) exit_code: Option<i32>,
    pub(crate) started: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) finished: Option<String>,
    pub(crate) passes: BTreeMap<String, PassStatus>,
}

impl Status {
    pub(crate) fn new(run_id: &str) -> Self {
        Status {
            schema_version: SCHEMA_VERSION,
            run_id: run_id.to_string(),
            state: "running".to_string(),
            exit_code: None,
            started: now(),
            finished: None,
            passes: BTreeMap::new(),
        }
    }

    pub(crate) fn set(&mut self, pass: &str, st: PassStatus) {
        self.passes.insert(pass.to_string(), st);
    }

    /// The run's exit code: the worst pass.
    pub(crate) fn worst_exit(&self) -> i32 {
        exit_codes::worst(self.passes.values().map(|p| p.exit_code))
    }

    pub(crate) fn finish(&mut self, dry_run: bool) -> i32 {
        let code = match self.partial() {
            true => exit_codes::PARTIAL,
            false => self.worst_exit(),
        };
        self.exit_code = Some(code);
        self.finished = Some(now());
        self.state = match code {
            _ if dry_run && code == exit_codes::OK => "planned",
            exit_codes::OK => "ok",
            exit_codes::NO_DATA => "no-data",
            exit_codes::PARTIAL => "partial",
            exit_codes::INTERRUPTED => "interrupted",
            _ => "failed",
        }
        .to_string();
        code
    }

    /// The nsys pass stands and the ncu pass, alone of all, failed or found nothing (not
    /// interrupted): the reports hold the nsys findings, and the run says that part stands.
    fn partial(&self) -> bool {
        let bad = |p: &PassStatus| p.exit_code != exit_codes::OK;
        let nsys = self
            .passes
            .get("nsys")
            .is_some_and(|p| p.state == PassState::Ok);
        let ncu = self.passes.get("ncu");
        nsys && ncu.is_some_and(|p| bad(p) && p.state != PassState::Interrupted)
            && self.passes.iter().all(|(name, p)| name == "ncu" || !bad(p))
    }

    /// Write atomically (temp file + rename): a reader never sees half a file. The text is
    /// padded with spaces to whole 4 KiB blocks, so that on a full disk (no block for a temp
    /// file) the final state can still be written over the old one in place: a run never
    /// stays `running` for want of a block.
    pub(crate) fn write(&self, dir: &Path) -> std::io::Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        text.push('\n');
        let path = dir.join("status.json");
        match write_atomic(&path, padded(&text).as_bytes()) {
            Err(e)
                if e.kind() == std::io::ErrorKind::StorageFull
                    || e.raw_os_error() == Some(nix::errno::Errno::ENOSPC as i32) =>
            {
                write_in_place(&path, &text).map_err(|_| e)
            }
            r => r,
        }
    }

    pub(crate) fn read(dir: &Path) -> Option<Status> {
        let text =
            crate::files::read_capped(&dir.join("status.json"), crate::files::RUN_FILE_CAP).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// `text` and spaces up to the next multiple of 4096 bytes.
fn padded(text: &str) -> String {
    let len = text.len().div_ceil(4096) * 4096;
    format!("{text}{}", " ".repeat(len - text.len()))
}

/// Overwrite `path` with `text` in place, padded with spaces to the file's present length:
/// needs no new block. Refused when `text` is longer than the file.
pub(crate) fn write_in_place(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let len = std::fs::metadata(path)?.len() as usize;
    if text.len() > len {
        return Err(std::io::Error::other(
            "the new text is longer than the file",
        ));
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    let text = crate::secrets::scrub(text);
    f.write_all(text.as_bytes())?;
    f.write_all(" ".repeat(len.saturating_sub(text.len())).as_bytes())?;
    f.sync_data()
}

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a full disk the final state goes over the padded file in place, and stays JSON.
    #[test]
    fn status_json_can_be_rewritten_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let mut st = Status::new("r");
        st.set("nsys", PassStatus::new(PassState::Running, None));
        st.write(tmp.path()).unwrap();
        let path = tmp.path().join("status.json");
        assert_eq!(std::fs::metadata(&path).unwrap().len() % 4096, 0);
        st.set("nsys", PassStatus::new(PassState::Ok, None));
        st.finish(false);
        let text = serde_json::to_string_pretty(&st).unwrap();
        write_in_place(&path, &text).unwrap();
        let back = Status::read(tmp.path()).unwrap();
        assert_eq!(back.state, "ok");
        assert!(write_in_place(&path, &"x".repeat(5000)).is_err());
    }

    #[test]
    fn each_outcome_maps_to_its_documented_exit_code() {
        let failed = |c| PassStatus::failed(c, None).exit_code;
        assert_eq!(failed(Cause::Tool), exit_codes::TOOL);
        assert_eq!(failed(Cause::Workload), exit_codes::WORKLOAD);
        assert_eq!(failed(Cause::Config), exit_codes::USAGE);
        assert_eq!(failed(Cause::Parse), exit_codes::PARSE);
        assert_eq!(failed(Cause::RunDir), exit_codes::RUN_DIR);
        let plain = |s| PassStatus::new(s, None).exit_code;
        assert_eq!(plain(PassState::NoData), exit_codes::NO_DATA);
        assert_eq!(plain(PassState::Interrupted), exit_codes::INTERRUPTED);
        assert_eq!(plain(PassState::TimedOut), exit_codes::WORKLOAD);
        assert_eq!(plain(PassState::Skipped), exit_codes::OK);
    }

    /// A good nsys pass whose ncu pass failed or found nothing: the run says the nsys part
    /// stands; any other failure beside it, or an interrupt, says what it says.
    #[test]
    fn a_run_whose_ncu_pass_alone_failed_after_a_good_nsys_pass_is_partial() {
        let run = |ncu: PassStatus, other: Option<PassStatus>| {
            let mut s = Status::new("r");
            s.set("nsys", PassStatus::new(PassState::Ok, None));
            s.set("ncu", ncu);
            s.set("report", PassStatus::new(PassState::Ok, None));
            if let Some(o) = other {
                s.set("baseline", o);
            }
            let code = s.finish(false);
            (code, s.state)
        };
        let partial = (exit_codes::PARTIAL, "partial".to_string());
        assert_eq!(
            run(PassStatus::failed(Cause::Workload, None), None),
            partial
        );
        assert_eq!(run(PassStatus::new(PassState::NoData, None), None), partial);
        assert_eq!(
            run(PassStatus::new(PassState::TimedOut, None), None),
            partial
        );
        let stopped = run(PassStatus::new(PassState::Interrupted, None), None);
        assert_eq!(stopped.0, exit_codes::INTERRUPTED);
        let both = run(
            PassStatus::new(PassState::NoData, None),
            Some(PassStatus::failed(Cause::Workload, None)),
        );
        assert_eq!(both, (exit_codes::WORKLOAD, "failed".to_string()));
        assert_eq!(run(PassStatus::skipped("off"), None).1, "ok");
    }

    #[test]
    fn run_state_follows_the_worst_pass() {
        let mut s = Status::new("r");
        s.set("nsys", PassStatus::new(PassState::NoData, None));
        s.set("ncu", PassStatus::new(PassState::Ok, None));
        assert_eq!(s.finish(false), exit_codes::NO_DATA);
        assert_eq!(s.state, "no-data");
        let tmp = tempfile::tempdir().unwrap();
        s.write(tmp.path()).unwrap();
        assert_eq!(Status::read(tmp.path()).unwrap().passes.len(), 2);
    }
}

//! The run record: what each pass asked for and got, decided when the pass is planned and
//! written into status.json (the nsys capture and its sampling, ncu's scope). The analysis,
//! the findings and `stage2 diff` read it back from there; nothing re-derives it from the
//! config or parses it out of a command line.

use serde::{Deserialize, Serialize};

use super::status::{NcuRecord, Status};
use crate::config::{Capture, Config, NcuTarget, PROFILER_WINDOW};

/// What the nsys pass captured and sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "NsysWire")]
pub(crate) struct NsysRecord {
    pub(crate) capture: Capture,
    /// GPU-metrics sampling asked of the pass (None: not asked; see `sampling_off`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sampling: Option<SamplingRecord>,
    /// Why the pass was not asked to sample where the config turned sampling on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sampling_off: Option<String>,
    /// What nsys traced (`--trace`) and how it traced CUDA graphs (`--cuda-graph-trace`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<TraceRecord>,
    /// When the capture began and ended, in seconds from the launch of `nsys profile` (the
    /// export's ANALYSIS_DETAILS), and how long the export and stats took after the profile
    /// step: where the pass's time went, and the basis of the ncu pass's first prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timing: Option<NsysTiming>,
    /// The ncu pass's copy of the workload, started beside this pass (`ncu.early_start`):
    /// how long its start-up used the CPU, and how much of the capture that was. Runs made
    /// before the record held it: see [`RunRecord::read`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) held_beside: Option<HeldBeside>,
}

/// The ncu pass's copy of the workload, started as the nsys pass began and held by ncu at its
/// first CUDA call (`ncu.early_start`): until then it ran its imports and CPU set-up beside
/// the nsys pass, on the same machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeldBeside {
    /// Seconds from the copy's start until it last used the CPU before it was held.
    pub(crate) busy_s: f64,
    /// Seconds of the nsys capture it still used the CPU (0: held before the capture began),
    /// and the capture's length; None where the pass did not time the capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) in_capture_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capture_s: Option<f64>,
}

impl HeldBeside {
    /// The copy busy for `busy_s` from its start, against the capture's window in `timing`
    /// (seconds from the launch of `nsys profile`). The copy starts just before the nsys pass,
    /// so its busy time read on the capture's clock ends a little late: an overlap, if
    /// anything, overstated.
    pub(crate) fn of(busy_s: f64, timing: Option<&NsysTiming>) -> HeldBeside {
        let window = timing.and_then(|t| Some((t.capture_start_s?, t.capture_end_s?)));
        HeldBeside {
            busy_s,
            in_capture_s: window.map(|(began, ended)| (busy_s.min(ended) - began).max(0.0)),
            capture_s: window.map(|(began, ended)| ended - began),
        }
    }
}

/// status.json's form of [`NsysRecord`]; runs made before the record held the typed capture
/// kept its range name and whether the capture ended with the first instance.
#[derive(Deserialize)]
struct NsysWire {
    #[serde(default)]
    capture: Option<Capture>,
    #[serde(default)]
    range: Option<String>,
    #[serde(default)]
    first_instance_only: bool,
    #[serde(default)]
    sampling: Option<SamplingRecord>,
    #[serde(default)]
    sampling_off: Option<String>,
    #[serde(default)]
    trace: Option<TraceRecord>,
    #[serde(default)]
    timing: Option<NsysTiming>,
    #[serde(default)]
    held_beside: Option<HeldBeside>,
}

impl From<NsysWire> for NsysRecord {
    fn from(w: NsysWire) -> Self {
        let first = w.first_instance_only;
        let capture = w.capture.unwrap_or(match w.range {
            None => Capture::WholeRun,
            Some(r) if r == PROFILER_WINDOW => Capture::ProfilerApi {
                first_window_only: first,
            },
            Some(name) => Capture::NvtxRange {
                name,
                domain: None,
                first_instance_only: first,
            },
        });
        NsysRecord {
            capture,
            sampling: w.sampling,
            sampling_off: w.sampling_off,
            trace: w.trace,
            timing: w.timing,
            held_beside: w.held_beside,
        }
    }
}

/// Where the nsys pass's time went (see [`NsysRecord::timing`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NsysTiming {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capture_start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capture_end_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) post_steps_s: Option<f64>,
}

/// What the nsys pass asked of GPU-metrics sampling, and whether the GPU refused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SamplingRecord {
    pub(crate) frequency_hz: u32,
    /// `--gpu-metrics-devices`.
    pub(crate) devices: String,
    /// nsys's own words when it refused to sample (the pass then ran without sampling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refused: Option<String>,
    /// The run whose sampled figures this run reused: its nsys pass did not sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reused_from: Option<String>,
    /// The metric set sampled, when not nsys's default: the configured one, or the run's own
    /// file cut from nsys's set for the GPU and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) set: Option<String>,
    /// The metrics that set asks for, as the export names them, where it is the run's own
    /// file (empty: nsys's own set, whose list is nsys's): nsys leaves out a counter the GPU
    /// cannot sample without a word, so the export is checked for each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) asked: Vec<String>,
}

/// What the nsys pass traced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TraceRecord {
    /// `--trace`.
    pub(crate) apis: String,
    /// `--cuda-graph-trace`: `node` (each kernel of a graph) or `graph` (the launch whole).
    pub(crate) cuda_graphs: String,
    /// How CUDA was asked to be traced (`--trace`'s `cuda`, `cuda-sw` or `cuda-hw`); runs made
    /// before the record held it read as None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cuda: Option<CudaTrace>,
    /// How the export says CUDA was traced (None: it does not say, or it was not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cuda_seen: Option<CudaTrace>,
}

/// How nsys traces CUDA. Newer nsys traces it in hardware by default on newer GPUs and falls
/// back in silence where it cannot; an export with launch calls and no kernels is refused
/// (`analysis::load::untraced_kernels`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CudaTrace {
    /// `--trace=cuda`: nsys chooses (hardware where it can, else software).
    Nsys,
    /// `--trace=cuda-sw`, or the export's diagnostics name no hardware tracing.
    Software,
    /// `--trace=cuda-hw`, or the export's diagnostics say "Hardware tracing used".
    Hardware,
    /// No CUDA in `--trace`.
    Off,
}

impl CudaTrace {
    /// What `--trace` (`cuda,nvtx`, `cuda-sw,nvtx`, ...) asks of CUDA.
    pub(crate) fn asked(trace: &str) -> CudaTrace {
        let words: Vec<&str> = trace.split(',').map(str::trim).collect();
        match () {
            _ if words.contains(&"cuda-sw") => CudaTrace::Software,
            _ if words.contains(&"cuda-hw") => CudaTrace::Hardware,
            _ if words.contains(&"cuda") => CudaTrace::Nsys,
            _ => CudaTrace::Off,
        }
    }

    /// How an export says it was traced (None: it does not say).
    pub(crate) fn seen(s: &crate::parse::sqlite::CudaTraceSeen) -> Option<CudaTrace> {
        s.hardware.map(|hw| match hw {
            true => CudaTrace::Hardware,
            false => CudaTrace::Software,
        })
    }
}

impl SamplingRecord {
    /// The GPUs the pass's last profile sampled (None: nsys refused, or the run reused an
    /// earlier run's figures).
    pub(crate) fn sampled_devices(&self) -> Option<&str> {
        (self.refused.is_none() && self.reused_from.is_none()).then_some(self.devices.as_str())
    }
}

/// What a run decided at plan time, read back from its status.json.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRecord {
    pub(crate) nsys: NsysRecord,
    /// ncu's scope (None: the run has no ncu record).
    pub(crate) ncu: Option<NcuScope>,
}

/// ncu's NVTX scope as the ncu pass's plan recorded it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NcuScope {
    /// The `--nvtx-include` expression (None: not gated).
    pub(crate) include: Option<String>,
    /// The range it names, as the export names it (None: no one range).
    pub(crate) range: Option<String>,
    /// nsys captured that range (or either side is ungated).
    pub(crate) same_as_capture: bool,
}

impl NcuScope {
    /// The scope of a run whose record lacks it (made by hand, or older than the record):
    /// its include expression as the config gave it then, read once here.
    pub(crate) fn of_expression(include: Option<String>, target: &NcuTarget) -> Self {
        NcuScope {
            range: include.as_deref().and_then(crate::config::range_of),
            same_as_capture: include.is_none() || target.same_as_capture,
            include,
        }
    }
}

impl RunRecord {
    /// The record of a run, from its status. A run whose status.json holds no nsys record (made
    /// by hand, imported, or older than the record) gets what its config asked: for those the
    /// config is what the passes used.
    pub(crate) fn read(status: Option<&Status>, config: &Config) -> RunRecord {
        let pass = |name: &str| status.and_then(|s| s.passes.get(name));
        let off = || {
            let gm = config.nsys.gpu_metrics.enable;
            config.sampling_off().filter(|_| gm).map(str::to_string)
        };
        let mut nsys = pass("nsys")
            .and_then(|p| p.nsys.clone())
            .unwrap_or_else(|| NsysRecord {
                capture: Capture::of(config),
                sampling: None,
                sampling_off: None,
                trace: None,
                timing: None,
                held_beside: None,
            });
        // A record without the trace is older than the sampling decision in it.
        if nsys.trace.is_none() && nsys.sampling.is_none() {
            nsys.sampling_off = off();
        }
        // Runs made before the nsys record held the copy beside it: from the copy's busy time
        // as the ncu pass recorded it, against the capture's window as the nsys pass did.
        let early = pass("ncu").and_then(|p| p.ncu.as_ref()?.early_start.as_ref());
        if let (None, Some(busy)) = (nsys.held_beside, early.and_then(|e| e.held_after_s)) {
            nsys.held_beside = Some(HeldBeside::of(busy, nsys.timing.as_ref()));
        }
        let ncu = pass("ncu")
            .and_then(|p| p.ncu.as_ref())
            .map(|r| scope_of(r, &NcuTarget::beside(config, &nsys.capture)));
        RunRecord { nsys, ncu }
    }

    /// Whether nsys captured the range ncu profiled (no ncu pass, or either side ungated:
    /// the same).
    pub(crate) fn same_range(&self) -> bool {
        self.ncu.as_ref().is_none_or(|n| n.same_as_capture)
    }
}

fn scope_of(r: &NcuRecord, target: &NcuTarget) -> NcuScope {
    let old = NcuScope::of_expression(r.include.clone(), target);
    NcuScope {
        include: r.include.clone(),
        range: r.range.clone().or(old.range),
        same_as_capture: r.same_as_capture.unwrap_or(old.same_as_capture),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy's busy time against the capture's window: the part inside it, none where it
    /// was held first, and unknown where the pass did not time the capture.
    #[test]
    fn a_copy_beside_the_pass_overlaps_the_capture_by_the_part_inside_it() {
        let timing = NsysTiming {
            capture_start_s: Some(4.5),
            capture_end_s: Some(6.5),
            post_steps_s: None,
        };
        let b = HeldBeside::of(5.5, Some(&timing));
        assert_eq!((b.in_capture_s, b.capture_s), (Some(1.0), Some(2.0)));
        assert_eq!(HeldBeside::of(9.0, Some(&timing)).in_capture_s, Some(2.0));
        assert_eq!(HeldBeside::of(3.0, Some(&timing)).in_capture_s, Some(0.0));
        let untimed = HeldBeside::of(3.0, None);
        assert_eq!((untimed.busy_s, untimed.in_capture_s), (3.0, None));
    }

    /// A run older than the nsys record's `held_beside` (tests/data/batching-loop) gets it
    /// from the ncu record's busy time and the nsys record's capture window.
    #[test]
    fn an_older_run_reads_the_copy_beside_from_both_passes_records() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/batching-loop");
        let status = Status::read(&dir).unwrap();
        let config = crate::testutil::config(&[]);
        let b = RunRecord::read(Some(&status), &config)
            .nsys
            .held_beside
            .unwrap();
        assert_eq!(b.busy_s, 5.62750894);
        assert!((b.in_capture_s.unwrap() - (5.62750894 - 4.557393311)).abs() < 1e-9);
        assert!((b.capture_s.unwrap() - (6.576359308 - 4.557393311)).abs() < 1e-9);
    }

    #[test]
    fn the_cuda_trace_asked_is_read_from_the_trace_words() {
        assert_eq!(CudaTrace::asked("cuda,nvtx"), CudaTrace::Nsys);
        assert_eq!(CudaTrace::asked("nvtx, cuda-sw"), CudaTrace::Software);
        assert_eq!(CudaTrace::asked("cuda-hw,nvtx"), CudaTrace::Hardware);
        assert_eq!(CudaTrace::asked("nvtx,osrt"), CudaTrace::Off);
    }
}

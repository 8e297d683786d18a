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
            });
        // A record without the trace is older than the sampling decision in it.
        if nsys.trace.is_none() && nsys.sampling.is_none() {
            nsys.sampling_off = off();
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

    #[test]
    fn the_cuda_trace_asked_is_read_from_the_trace_words() {
        assert_eq!(CudaTrace::asked("cuda,nvtx"), CudaTrace::Nsys);
        assert_eq!(CudaTrace::asked("nvtx, cuda-sw"), CudaTrace::Software);
        assert_eq!(CudaTrace::asked("cuda-hw,nvtx"), CudaTrace::Hardware);
        assert_eq!(CudaTrace::asked("nvtx,osrt"), CudaTrace::Off);
    }
}

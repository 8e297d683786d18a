//! The typed configuration. Field names are the public config keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub workload: Workload,
    pub nvtx: Nvtx,
    pub inputs: Inputs,
    pub tools: Tools,
    pub run: Run,
    pub report: Report,
    pub nsys: Nsys,
    pub ncu: Ncu,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    #[serde(deserialize_with = "strings")]
    pub argv: Vec<String>,
    #[serde(deserialize_with = "opt_string")]
    pub module: Option<String>,
    #[serde(deserialize_with = "strings")]
    pub overrides: Vec<String>,
    #[serde(deserialize_with = "string")]
    pub python: String,
    #[serde(deserialize_with = "opt_string")]
    pub device: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    pub cwd: Option<String>,
    pub launcher: super::Launcher,
    pub nproc_per_node: u32,
    pub nnodes: u32,
    #[serde(deserialize_with = "strings")]
    pub launcher_args: Vec<String>,
    #[serde(deserialize_with = "string_map")]
    pub env: BTreeMap<String, String>,
    /// Mark transformers' forward passes `prefill`/`decode` (and `generate`) through stage2's
    /// Python hook; the workload's code is not changed.
    #[serde(default)]
    pub auto_nvtx: bool,
    /// With `auto_nvtx`: the first N generate() calls (warm-up) are left unmarked.
    #[serde(default)]
    pub auto_nvtx_skip: u32,
    /// Sample the workload's Python stacks this many times a second during the nsys pass (0:
    /// off); the ledger names the functions behind a range's CPU time.
    #[serde(default)]
    pub python_sampling_hz: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nvtx {
    pub style: NvtxStyle,
    #[serde(deserialize_with = "opt_string")]
    pub domain: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NvtxStyle {
    Auto,
    Pushpop,
    Startend,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    #[serde(deserialize_with = "opt_string")]
    pub manifest: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tools {
    #[serde(deserialize_with = "opt_string")]
    pub nsys: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    pub ncu: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    #[serde(deserialize_with = "string")]
    pub root: String,
    #[serde(deserialize_with = "opt_string")]
    pub id: Option<String>,
    pub representative_max_new_tokens: Option<u64>,
    pub grace_s: u64,
    pub min_free_gb: f64,
    /// The longest a start-up probe may run; runs made before the setting existed read 60.
    #[serde(default = "sixty")]
    pub probe_timeout_s: u64,
    /// Timed nsys passes (the first one and `repeat - 1` more); one ncu pass. Runs made
    /// before the setting existed read as 1.
    #[serde(default = "one")]
    pub repeat: u32,
    /// A pass with no profiler, timing the NVTX ranges (runs made before it read false).
    #[serde(default)]
    pub baseline: bool,
    /// NVIDIA's own summaries of the run's captures, beside stage2's (runs before it read
    /// false).
    #[serde(default)]
    pub crosscheck: bool,
    /// Run directories 0700 and their files 0600 (false: 0755/0644 when the run ends).
    #[serde(default = "yes")]
    pub private: bool,
}

fn one() -> u32 {
    1
}

fn sixty() -> u64 {
    60
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub top_kernels: usize,
    pub name_width: usize,
    #[serde(deserialize_with = "string")]
    pub step_range: String,
    /// auto | all | skip=N (see analysis::instances); runs made before it read `auto`.
    #[serde(default = "auto")]
    pub instances: String,
    /// Ranges kernels.md's range tables list, the longest first (0: all); runs made before it
    /// read 200.
    #[serde(default = "max_ranges")]
    pub max_ranges: usize,
}

fn auto() -> String {
    "auto".to_string()
}

fn max_ranges() -> usize {
    200
}

/// `nsys.capture_range`: what starts the nsys capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CaptureRange {
    /// The NVTX range `nsys.nvtx_capture` opens.
    #[serde(rename = "nvtx")]
    Nvtx,
    /// `cudaProfilerStart()` (vLLM's and TensorRT-LLM's profiler switches call it).
    #[serde(rename = "cudaProfilerApi")]
    CudaProfilerApi,
    /// No capture range: the whole run.
    #[serde(rename = "none")]
    None,
}

impl CaptureRange {
    /// The value nsys's `--capture-range` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureRange::Nvtx => "nvtx",
            CaptureRange::CudaProfilerApi => "cudaProfilerApi",
            CaptureRange::None => "none",
        }
    }
}

/// `nsys.capture_range_end`: what nsys does when the capture range closes (null: the flag is
/// not passed, nsys's default `stop-shutdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaptureRangeEnd {
    /// Keep capturing to the end of the application: every later instance of a repeated range
    /// (each decode step, each request's prefill) is in the one report.
    None,
    /// Stop capturing, keep the application running: only the first instance is captured.
    Stop,
    /// Stop capturing and end the application (nsys's default).
    StopShutdown,
}

impl CaptureRangeEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureRangeEnd::None => "none",
            CaptureRangeEnd::Stop => "stop",
            CaptureRangeEnd::StopShutdown => "stop-shutdown",
        }
    }

    /// Whether the capture ends with the first instance of the range.
    pub fn first_only(end: Option<Self>) -> bool {
        end != Some(CaptureRangeEnd::None)
    }
}

/// `nsys.cuda_graph_trace`: how nsys traces CUDA graphs. `node` records every kernel a graph
/// launches (the reports need them); `graph` records each graph launch as one item, so the
/// kernels inside graphs are invisible to the reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaGraphTrace {
    Node,
    Graph,
}

impl CudaGraphTrace {
    pub fn as_str(self) -> &'static str {
        match self {
            CudaGraphTrace::Node => "node",
            CudaGraphTrace::Graph => "graph",
        }
    }
}

/// `nsys.pytorch`: nsys's `--pytorch` (NVTX ranges around each PyTorch operator call, the
/// operators table's source); null: not passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pytorch {
    AutogradNvtx,
    AutogradShapesNvtx,
}

impl Pytorch {
    pub fn as_str(self) -> &'static str {
        match self {
            Pytorch::AutogradNvtx => "autograd-nvtx",
            Pytorch::AutogradShapesNvtx => "autograd-shapes-nvtx",
        }
    }
}

/// `ncu.shapes`: which launch configurations of each chosen kernel ncu measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shapes {
    /// Each configuration when the first launches' hold less than `ncu.shape_coverage`.
    Auto,
    /// The first launch in the range only.
    First,
    /// One launch of each configuration (ncu --filter-mode per-launch-config).
    All,
}

/// `ncu.budget_s`: how long the ncu pass profiles before it is stopped as by a Ctrl-C, what it
/// measured kept. `auto`: a share of the nsys pass of the same run (`passes::ncu::watch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Auto,
    Seconds(u64),
}

impl Serialize for Budget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Budget::Auto => s.serialize_str("auto"),
            Budget::Seconds(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_yaml::Value as V;
        match V::deserialize(d)? {
            V::String(s) if s == "auto" => Ok(Budget::Auto),
            V::Number(n) if n.as_u64().is_some_and(|n| n > 0) => {
                Ok(Budget::Seconds(n.as_u64().unwrap_or(1)))
            }
            other => Err(serde::de::Error::custom(format!(
                "expected auto, a whole number of seconds above 0, or null; found {}",
                super::tree::key_text(&other)
            ))),
        }
    }
}

/// `ncu.graph_step`: whether a range that launches CUDA graphs gets one step measured whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphStep {
    /// When the nsys export shows graph launches in ncu's range.
    Auto,
    Off,
}

/// `ncu.clock_control`: ncu's `--clock-control` (null: not passed, ncu locks to base clocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockControl {
    Base,
    None,
}

impl ClockControl {
    pub fn as_str(self) -> &'static str {
        match self {
            ClockControl::Base => "base",
            ClockControl::None => "none",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nsys {
    pub enable: bool,
    pub gating_nvtx: bool,
    pub capture_range: CaptureRange,
    #[serde(deserialize_with = "opt_string")]
    pub nvtx_capture: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    pub nvtx_capture_raw: Option<String>,
    pub diagnose: bool,
    pub capture_range_end: Option<CaptureRangeEnd>,
    pub cuda_graph_trace: CudaGraphTrace,
    /// Operator ranges for the operators table; runs made before the setting read as null.
    #[serde(default)]
    pub pytorch: Option<Pytorch>,
    #[serde(deserialize_with = "string")]
    pub trace: String,
    #[serde(deserialize_with = "string")]
    pub sample: String,
    #[serde(deserialize_with = "opt_string")]
    pub nvtx_domain_include: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    pub nvtx_domain_exclude: Option<String>,
    #[serde(deserialize_with = "strings")]
    pub extra_args: Vec<String>,
    pub timeout_s: Option<u64>,
    /// GPU-metrics sampling during the nsys pass; runs made before the setting read as off.
    #[serde(default)]
    pub gpu_metrics: GpuMetrics,
}

/// nsys `--gpu-metrics-*`: the GPU's own counters (DRAM bandwidth, SM issue, tensor activity)
/// sampled at a fixed rate while the workload runs, for the kernels of the whole range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuMetrics {
    pub enable: bool,
    pub frequency_hz: u32,
    /// nsys `--gpu-metrics-devices`; null: `cuda-visible` (the GPUs the workload can see).
    #[serde(deserialize_with = "opt_string", default)]
    pub devices: Option<String>,
    /// nsys `--gpu-metrics-set`; null: nsys's default set for the GPU.
    #[serde(deserialize_with = "opt_string", default)]
    pub set: Option<String>,
    /// Take the figures of the last sampled run of the same command instead of sampling
    /// (see `passes::nsys::reuse`); runs made before the setting read as on.
    #[serde(default = "yes")]
    pub reuse: bool,
}

const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

/// Whether a `--gpu-metrics-devices` value is GPU numbers ("0", "0,1"), not one of nsys's words.
pub(crate) fn gpu_numbers(devices: &str) -> bool {
    devices.split(',').all(|x| x.trim().parse::<u32>().is_ok())
}

impl Config {
    /// The workload's `CUDA_VISIBLE_DEVICES` as the config sets it: `workload.device`, else
    /// the workload's own env.
    pub(crate) fn visible_devices(&self) -> Option<String> {
        self.workload
            .device
            .clone()
            .or_else(|| self.workload.env.get(VISIBLE).cloned())
    }

    /// Whether the workload sees a chosen list of GPUs (the config's, or
    /// `CUDA_VISIBLE_DEVICES` in stage2's env), not every GPU of the machine.
    pub(crate) fn gpus_chosen(&self) -> bool {
        self.visible_devices().is_some() || std::env::var_os(VISIBLE).is_some()
    }

    /// Why the nsys pass leaves GPU-metrics sampling off though it is enabled, or None. Under
    /// a launcher rank 0 alone can sample (nsys refuses a second sampler of a GPU), and a
    /// range-gated capture starts its sampling at the range: rank 0 alone is held back there
    /// and the others wait it out inside the range.
    pub(crate) fn sampling_off(&self) -> Option<&'static str> {
        let gated = self.nsys.gating_nvtx && self.nsys.capture_range != super::CaptureRange::None;
        (self.nsys.gpu_metrics.enable && self.workload.launcher != super::Launcher::None && gated)
            .then_some(
                "under a launcher only rank 0 can sample, and sampling that starts with a range-gated capture holds rank 0 back at the range's start, which the other ranks then wait out in their first collective inside the range; with nsys.gating_nvtx=false the whole run is captured and rank 0 samples from its start",
            )
    }
}

impl Default for GpuMetrics {
    fn default() -> Self {
        GpuMetrics {
            enable: true,
            frequency_hz: 50_000,
            devices: None,
            set: None,
            reuse: true,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ncu {
    pub enable: bool,
    pub gating_nvtx: bool,
    #[serde(deserialize_with = "opt_string")]
    pub nvtx_include: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    pub nvtx_include_raw: Option<String>,
    #[serde(deserialize_with = "string")]
    pub set: String,
    #[serde(deserialize_with = "strings")]
    pub metrics: Vec<String>,
    pub top_n: usize,
    pub coverage: f64,
    pub max_kernels: usize,
    pub launch_skip: u32,
    pub instances_per_kernel: u32,
    pub shapes: Shapes,
    pub shape_coverage: f64,
    /// With every configuration measured: at most this many launches, and this many seconds
    /// (None: no time bound), after which ncu is stopped and what it measured is kept.
    pub shapes_max_launches: usize,
    pub shapes_budget_s: Option<u64>,
    /// Outside a pass over every configuration: how long ncu profiles (None: no bound).
    pub budget_s: Option<Budget>,
    pub graph_step: GraphStep,
    pub ranks: Vec<u32>,
    pub include_nccl: bool,
    pub nccl_p2p_disable: bool,
    pub clock_control: Option<ClockControl>,
    #[serde(deserialize_with = "strings")]
    pub extra_args: Vec<String>,
    pub timeout_s: Option<u64>,
    pub stop_when_done: bool,
    pub early_start: bool,
    pub second_gpu: bool,
    pub cache: NcuCache,
}

/// The persistent ncu metrics cache (see `passes::ncu::cache`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuCache {
    pub enable: bool,
    #[serde(deserialize_with = "opt_string")]
    pub dir: Option<String>,
    pub max_mb: u64,
    pub duration_tolerance: f64,
}

impl Config {
    pub fn nsys_timeout(&self) -> Option<std::time::Duration> {
        self.nsys.timeout_s.map(std::time::Duration::from_secs)
    }
    pub fn ncu_timeout(&self) -> Option<std::time::Duration> {
        self.ncu.timeout_s.map(std::time::Duration::from_secs)
    }
}

/// A scalar as text: `run.id=20240101` or `nvtx_capture=1` are meant as strings, not numbers.
fn scalar_text(v: serde_yaml::Value) -> Result<Option<String>, String> {
    use serde_yaml::Value as V;
    match v {
        V::Null => Ok(None),
        V::String(s) => Ok(Some(s)),
        V::Bool(b) => Ok(Some(b.to_string())),
        V::Number(n) => Ok(Some(n.to_string())),
        V::Sequence(_) => Err("expected a string, found a list".into()),
        V::Mapping(_) => Err("expected a string, found a mapping".into()),
        V::Tagged(_) => Err("expected a string, found a tagged value".into()),
    }
}

fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = serde_yaml::Value::deserialize(d)?;
    scalar_text(v).map_err(serde::de::Error::custom)
}

fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    opt_string(d)?.ok_or_else(|| serde::de::Error::custom("expected a string, found null"))
}

/// A list of strings; a single string is taken as a one-item list.
fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    use serde_yaml::Value as V;
    match V::deserialize(d)? {
        V::Null => Ok(Vec::new()),
        V::Sequence(items) => items
            .into_iter()
            .map(|v| {
                scalar_text(v)
                    .and_then(|s| s.ok_or_else(|| "null in a list of strings".to_string()))
            })
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom),
        other => scalar_text(other)
            .map(|s| s.into_iter().collect())
            .map_err(serde::de::Error::custom),
    }
}

fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    use serde_yaml::Value as V;
    match V::deserialize(d)? {
        V::Null => Ok(BTreeMap::new()),
        V::Mapping(m) => m
            .into_iter()
            .map(|(k, v)| {
                let key = super::tree::key_text(&k);
                let val = scalar_text(v)
                    .map_err(|e| format!("{key}: {e}"))?
                    .unwrap_or_default();
                Ok((key, val))
            })
            .collect::<Result<_, String>>()
            .map_err(serde::de::Error::custom),
        _ => Err(serde::de::Error::custom(
            "expected a mapping of NAME: value",
        )),
    }
}

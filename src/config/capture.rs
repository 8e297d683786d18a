//! What the nsys pass captures, typed once from the config: the console, the reports' Capture
//! row, summary.json and the headline all read this one value, so one capture has one name.

use serde::Serialize;

use super::{CaptureRange, CaptureRangeEnd, Nsys};

/// The name the SQLite reader gives cudaProfilerStart/Stop windows (they are no NVTX range).
pub const PROFILER_WINDOW: &str = "cudaProfilerApi window";

/// What started and ended the nsys capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Capture {
    /// No capture range: everything from the workload's start to its end.
    WholeRun,
    /// The NVTX range `name` (in `domain`, when one is named) opened the capture.
    NvtxRange {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        domain: Option<String>,
        /// The capture ended when the first instance closed.
        first_instance_only: bool,
    },
    /// cudaProfilerStart/cudaProfilerStop windows.
    ProfilerApi { first_window_only: bool },
}

impl Capture {
    pub fn of(cfg: &Nsys) -> Capture {
        let first = CaptureRangeEnd::first_only(cfg.capture_range_end);
        if !cfg.gating_nvtx {
            return Capture::WholeRun;
        }
        match cfg.capture_range {
            CaptureRange::None => Capture::WholeRun,
            CaptureRange::CudaProfilerApi => Capture::ProfilerApi {
                first_window_only: first,
            },
            CaptureRange::Nvtx => {
                // The raw expression, when set, is what nsys is given (passes::nsys::capture_expr).
                let expr = cfg
                    .nvtx_capture_raw
                    .as_deref()
                    .filter(|r| !r.trim().is_empty())
                    .or(cfg.nvtx_capture.as_deref());
                match expr {
                    Some(e) if !e.is_empty() => {
                        let mut it = e.splitn(2, '@');
                        let name = it.next().unwrap_or(e).to_string();
                        Capture::NvtxRange {
                            name,
                            domain: it.next().map(str::to_string),
                            first_instance_only: first,
                        }
                    }
                    _ => Capture::WholeRun,
                }
            }
        }
    }

    /// The expression's range name (no domain), for messages: "" for no NVTX capture.
    pub fn name(cfg: &Nsys) -> String {
        match Capture::of(cfg) {
            Capture::NvtxRange { name, .. } => name,
            _ => String::new(),
        }
    }

    /// The NVTX domain the capture's range lives in, when one was named.
    pub fn domain(&self) -> Option<&str> {
        match self {
            Capture::NvtxRange { domain, .. } => domain.as_deref(),
            _ => None,
        }
    }

    /// The range whose instances the capture holds, as the SQLite export names it (None: the
    /// whole run).
    pub fn range(&self) -> Option<&str> {
        match self {
            Capture::WholeRun => None,
            Capture::NvtxRange { name, .. } => Some(name),
            Capture::ProfilerApi { .. } => Some(PROFILER_WINDOW),
        }
    }

    /// Whether the capture stopped with its first instance (or window).
    pub fn first_only(&self) -> bool {
        match self {
            Capture::WholeRun => false,
            Capture::NvtxRange {
                first_instance_only,
                ..
            } => *first_instance_only,
            Capture::ProfilerApi { first_window_only } => *first_window_only,
        }
    }

    /// How a report names it: "the whole run", "NVTX range `decode`" (with its domain),
    /// "the cudaProfilerStart/Stop windows".
    pub fn describe(&self) -> String {
        match self {
            Capture::WholeRun => "the whole run".to_string(),
            Capture::NvtxRange {
                name, domain: None, ..
            } => format!("NVTX range `{name}`"),
            Capture::NvtxRange {
                name,
                domain: Some(d),
                ..
            } => format!("NVTX range `{name}` (domain `{d}`)"),
            Capture::ProfilerApi { .. } => "the cudaProfilerStart/Stop windows".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(over: &[&str]) -> Nsys {
        crate::testutil::config(over).nsys
    }

    #[test]
    fn each_capture_kind_has_one_name() {
        let c = Capture::of(&cfg(&["nsys.nvtx_capture=prefill"]));
        assert_eq!(c.range(), Some("prefill"));
        assert_eq!(c.describe(), "NVTX range `prefill`");
        let w = Capture::of(&cfg(&[
            "nsys.capture_range=cudaProfilerApi",
            "nsys.nvtx_capture=prefill",
        ]));
        assert_eq!(w.range(), Some(PROFILER_WINDOW));
        assert_eq!(w.describe(), "the cudaProfilerStart/Stop windows");
        let all = Capture::of(&cfg(&["nsys.gating_nvtx=false"]));
        assert_eq!(
            (all.range(), all.describe()),
            (None, "the whole run".into())
        );
        let d = Capture::of(&cfg(&["nsys.nvtx_capture=decode@llm"]));
        assert_eq!(d.range(), Some("decode"));
        assert_eq!(d.describe(), "NVTX range `decode` (domain `llm`)");
    }
}

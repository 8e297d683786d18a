//! What each pass is scoped to, typed once from the config: the nsys capture and ncu's NVTX
//! range. The passes decide them at plan time and write them into the run record
//! (status.json), which the analysis and `stage2 diff` read back.

use serde::{Deserialize, Serialize};

use super::{CaptureRange, CaptureRangeEnd, Config};
use crate::text::code;

/// The name the SQLite reader gives cudaProfilerStart/Stop windows (they are no NVTX range).
pub const PROFILER_WINDOW: &str = "cudaProfilerApi window";

/// What started and ended the nsys capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Capture {
    /// No capture range: everything from the workload's start to its end.
    WholeRun,
    /// The NVTX range `name` (in `domain`, when one is named) opened the capture.
    NvtxRange {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        domain: Option<String>,
        /// The capture ended when the first instance closed.
        first_instance_only: bool,
    },
    /// cudaProfilerStart/cudaProfilerStop windows.
    ProfilerApi { first_window_only: bool },
}

impl Capture {
    /// The capture the config asks of nsys (`nsys.nvtx_capture[_raw]`, `nvtx.domain`).
    pub fn of(cfg: &Config) -> Capture {
        let n = &cfg.nsys;
        let first = CaptureRangeEnd::first_only(n.capture_range_end);
        if !n.gating_nvtx {
            return Capture::WholeRun;
        }
        match n.capture_range {
            CaptureRange::None => Capture::WholeRun,
            CaptureRange::CudaProfilerApi => Capture::ProfilerApi {
                first_window_only: first,
            },
            CaptureRange::Nvtx => {
                let raw = n
                    .nvtx_capture_raw
                    .as_deref()
                    .filter(|r| !r.trim().is_empty());
                let named = n.nvtx_capture.as_deref().map(str::trim);
                let (expr, domain) = match (raw, named) {
                    (Some(r), _) => (r, None),
                    (None, Some(e)) if !e.is_empty() => (e, cfg.nvtx.domain.as_deref()),
                    _ => return Capture::WholeRun,
                };
                let mut it = expr.splitn(2, '@');
                let name = it.next().unwrap_or(expr).to_string();
                let domain = it.next().or(domain).filter(|d| !d.is_empty());
                Capture::NvtxRange {
                    name,
                    domain: domain.map(str::to_string),
                    first_instance_only: first,
                }
            }
        }
    }

    /// The capture's range name (no domain), for messages: "" for no NVTX capture.
    pub fn nvtx_name(&self) -> &str {
        match self {
            Capture::NvtxRange { name, .. } => name,
            _ => "",
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
        // A name read from the export (a folder of exports has no config) is the workload's:
        // its control characters are written out, never sent to a terminal or a report.
        let shown = crate::term::visible;
        match self {
            Capture::WholeRun => "the whole run".to_string(),
            Capture::NvtxRange {
                name, domain: None, ..
            } => format!("NVTX range {}", code(&shown(name))),
            Capture::NvtxRange {
                name,
                domain: Some(d),
                ..
            } => format!(
                "NVTX range {} (domain {})",
                code(&shown(name)),
                code(&shown(d))
            ),
            Capture::ProfilerApi { .. } => "the cudaProfilerStart/Stop windows".to_string(),
        }
    }
}

/// What ncu's NVTX scope is made from, decided once from the config and the capture: the
/// user's range (`ncu.nvtx_include`), else the range the nsys capture starts on (its domain
/// too), else the cudaProfilerStart/Stop windows nsys captured (ncu then profiles inside them,
/// `--profile-from-start off`, with no NVTX gate: such a workload need emit no NVTX at all),
/// else `decode` (the capture is the whole run, or nsys does not run); or an expression
/// passed unchanged (`ncu.nvtx_include_raw`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcuTarget {
    /// Whether ncu is gated on an NVTX range at all (`ncu.gating_nvtx`).
    pub gated: bool,
    /// `ncu.nvtx_include_raw`, passed to ncu unchanged.
    pub raw: Option<String>,
    /// The user's name or expression, or the capture's range name.
    pub name: String,
    /// The NVTX domain `name` lives in.
    pub domain: Option<String>,
    /// `name` came from the nsys capture (the config named no range for ncu).
    pub follows_capture: bool,
    /// Whether nsys captured the range ncu profiles (an ungated side counts as the same).
    pub same_as_capture: bool,
    /// The range nsys's capture holds, as the export names it (None: the whole run): ncu's
    /// kernels are chosen from its launches there.
    pub nsys_range: Option<String>,
    /// What nsys captured, as a message names it.
    pub nsys_captured: String,
    /// nsys captures the cudaProfilerStart/Stop windows: ncu profiles inside them too.
    pub in_windows: bool,
}

impl NcuTarget {
    /// ncu's scope for a run of `cfg`, beside the capture that config asks of nsys.
    pub fn of(cfg: &Config) -> NcuTarget {
        NcuTarget::beside(cfg, &Capture::of(cfg))
    }

    /// ncu's scope beside the capture a run recorded.
    pub fn beside(cfg: &Config, capture: &Capture) -> NcuTarget {
        let n = &cfg.ncu;
        let raw = n
            .nvtx_include_raw
            .as_deref()
            .filter(|r| !r.trim().is_empty());
        let named = n
            .nvtx_include
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let followed = match capture {
            Capture::NvtxRange { name, domain, .. } if cfg.nsys.enable => Some((
                name.clone(),
                // nsys's `@*` (any domain) is ncu's default: the name alone.
                domain.clone().filter(|d| d != "*"),
            )),
            _ => None,
        };
        let windows = cfg.nsys.enable && matches!(capture, Capture::ProfilerApi { .. });
        let unnamed = named.is_none() && raw.is_none();
        let follows_capture = unnamed && (followed.is_some() || windows);
        let gated = n.gating_nvtx && !(unnamed && windows);
        let (name, domain) = match (named, followed) {
            (Some(s), _) => (s.to_string(), cfg.nvtx.domain.clone()),
            (None, Some(f)) if raw.is_none() => f,
            _ => ("decode".to_string(), cfg.nvtx.domain.clone()),
        };
        let ncu_side = (gated && (raw.is_none() || named.is_some())).then_some(&name);
        let same_as_capture = match (capture.range(), ncu_side) {
            (Some(a), Some(b)) => {
                let a = range_of(a);
                a.is_some() && a == range_of(b)
            }
            _ => true,
        };
        NcuTarget {
            gated,
            raw: raw.map(str::to_string),
            name,
            domain: domain.filter(|d| !d.is_empty()),
            follows_capture,
            same_as_capture,
            nsys_range: capture.range().map(str::to_string),
            nsys_captured: capture.describe(),
            in_windows: matches!(capture, Capture::ProfilerApi { .. }),
        }
    }

    /// ncu's range by name where it is gated on one by name (None: not gated, a raw
    /// expression, or an expression that names no single range).
    pub fn range(&self) -> Option<String> {
        (self.gated && self.raw.is_none())
            .then(|| range_of(&self.name))
            .flatten()
    }
}

/// The range an NVTX expression names, as the export names it: its innermost push/pop
/// range (`decode/` -> `decode`, `prefill/*/attn/` -> `attn`, `dom@prefill/attn/` -> `attn`,
/// `[step/` -> `step`) or its start/end range. None for a regular expression or a wildcard
/// name, which name no one range.
pub fn range_of(expr: &str) -> Option<String> {
    let e = expr.trim();
    if e.starts_with("regex:") {
        return None;
    }
    let e = e.rsplit_once('@').map_or(e, |(_, r)| r);
    let last = e
        .split('/')
        .map(|p| p.trim_matches(|c| c == '[' || c == ']').trim())
        .rfind(|p| !p.is_empty())?;
    (!last.contains('*')).then(|| last.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(over: &[&str]) -> Config {
        crate::testutil::config(over)
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

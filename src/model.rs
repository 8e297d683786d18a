//! Typed kernel records: nsys time totals joined with ncu counters, per kernel.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::parse::ncu::{NcuKernel, NcuReport};
use crate::parse::nsys::KernelSum;

/// Where a kernel's time figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TimeSource {
    /// nsys totals over every launch in the captured range.
    Nsys,
    /// Only ncu's profiled launches (no nsys data for this kernel).
    Ncu,
}

/// How a kernel spends its time, from SM and DRAM throughput (% of peak).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Bound {
    Compute,
    Memory,
    /// Neither unit is busy: too little work per launch, or stalls.
    Latency,
    /// The SM is busy but not with arithmetic: FLOP/byte below the FP32 ridge (loads,
    /// stores, address math, copies). Set from the roofline point, see analysis.
    Instruction,
}

impl Bound {
    /// The rule, stated in the reports (see `crate::rules`).
    pub(crate) const RULE: &'static str = crate::rules::BOUND.text;

    /// The sampled rule, stated in the reports beside sampled classes.
    pub(crate) const SAMPLED_RULE: &'static str = crate::rules::SAMPLED_BOUND.text;

    /// The busier unit at >= `rules::BOUND_PCT` of its peak decides; below it on both the
    /// kernel is latency/launch-bound.
    pub(crate) fn classify(sm_pct: f64, dram_pct: f64) -> Bound {
        let at = crate::rules::BOUND_PCT;
        if sm_pct >= at && sm_pct >= dram_pct {
            Bound::Compute
        } else if dram_pct >= at {
            Bound::Memory
        } else {
            Bound::Latency
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
            Bound::Latency => "latency",
            Bound::Instruction => "instruction",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct KernelRecord {
    pub(crate) rank: usize,
    /// The full name as the time source prints it.
    pub(crate) name: String,
    /// ncu's spelling of the name, when ncu measured this kernel.
    pub(crate) ncu_name: Option<String>,
    pub(crate) nvtx_range: Option<String>,
    pub(crate) instances: u64,
    pub(crate) total_time_ns: f64,
    pub(crate) avg_time_ns: f64,
    /// Share of all kernel time in the capture, in %. None for ncu-only kernels of a run
    /// that has nsys totals (their time is not part of that total).
    pub(crate) gpu_time_pct: Option<f64>,
    pub(crate) time_source: TimeSource,
    pub(crate) sm_throughput_pct: Option<f64>,
    pub(crate) dram_throughput_pct: Option<f64>,
    pub(crate) bound: Option<Bound>,
    pub(crate) grid: Option<String>,
    pub(crate) block: Option<String>,
    /// Launches ncu profiled for this kernel.
    pub(crate) ncu_instances: u64,
    /// The run that measured its ncu figures, when they came from the metrics cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ncu_cached_from: Option<String>,
    /// The mangled name, when the nsys export maps the demangled one to exactly one.
    pub(crate) mangled: Option<String>,
    /// nsys's spread of one launch's duration (its Med/Min/Max/StdDev columns).
    pub(crate) per_launch: Option<LaunchSpread>,
    /// Every other numeric ncu metric, mean over the profiled launches.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub(crate) metrics: BTreeMap<String, f64>,
    /// nsys's sampled GPU metrics over every launch of the kernel in the range (None: the
    /// run sampled none).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) sampled: Option<SampledKernel>,
}

/// Sampled GPU metrics of a set of launches (nsys `--gpu-metrics-*`): each sample's value over
/// its window's GR Active share (the rate while the GPU was working), weighed by the time each
/// launch ran in the window. A sampled figure, not a counter: see `coverage_pct`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct SampledFigures {
    pub(crate) launches: u64,
    pub(crate) time_ns: f64,
    /// Share of `time_ns` inside a sample window that saw the GPU working, in %.
    pub(crate) coverage_pct: f64,
    /// Sample windows the launches ran in (a window counted once per launch in it).
    pub(crate) samples: u64,
    /// DRAM read + write bandwidth, SM issue and tensor activity, % of peak.
    pub(crate) dram_pct: Option<f64>,
    pub(crate) sm_issue_pct: Option<f64>,
    pub(crate) tensor_pct: Option<f64>,
    /// The bound class by the sampled rule; None where coverage is too low to say, or where
    /// the launches are shorter than the sample window (`short`).
    pub(crate) bound: Option<Bound>,
    /// A kernel's or launch configuration's launches, shorter on average than the sample
    /// window their figures average (rules::SAMPLED_WINDOW): no class, and the figures are
    /// not the kernel's own. None for a range's figures, which the rule does not concern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) short: Option<ShortLaunches>,
}

/// Launches shorter on average than the sample window (rules::SAMPLED_WINDOW): the reports
/// give them no sampled class and say why with these two figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ShortLaunches {
    /// Their mean duration (ns).
    pub(crate) mean_launch_ns: f64,
    /// The sample window: the median spacing of the samples they were read in (ns).
    pub(crate) window_ns: f64,
}

impl SampledFigures {
    /// Each figure in its range: time 0 to 1e18 ns, coverage and the shares of peak 0-100%.
    pub(crate) fn check(&self) -> Result<(), String> {
        let time = self.time_ns;
        if !(time.is_finite() && (0.0..=1e18).contains(&time)) {
            return Err(format!(
                "time_ns = {}: a time is 0 to 1e18 ns",
                crate::parse::number(time)
            ));
        }
        let shares = [
            ("coverage_pct", Some(self.coverage_pct)),
            ("dram_pct", self.dram_pct),
            ("sm_issue_pct", self.sm_issue_pct),
            ("tensor_pct", self.tensor_pct),
        ];
        for (name, v) in shares {
            if let Some(v) = v.filter(|v| !(v.is_finite() && (0.0..=100.0).contains(v))) {
                return Err(format!(
                    "{name} = {}: a share is 0% to 100%",
                    crate::parse::number(v)
                ));
            }
        }
        Ok(())
    }

    /// The compute side the sampled rule weighs against DRAM: the larger of SM issue and
    /// tensor activity.
    pub(crate) fn compute_pct(&self) -> Option<f64> {
        self.sm_issue_pct
            .into_iter()
            .chain(self.tensor_pct)
            .reduce(f64::max)
    }
}

/// A kernel's sampled figures, and those of each of its launch configurations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SampledKernel {
    #[serde(flatten)]
    pub(crate) all: SampledFigures,
    pub(crate) configs: Vec<SampledConfig>,
    /// Under a launcher: the one rank whose launches were sampled (the record sums them all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rank: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SampledConfig {
    pub(crate) grid: String,
    pub(crate) block: String,
    #[serde(flatten)]
    pub(crate) figures: SampledFigures,
}

impl KernelRecord {
    pub(crate) fn short_name(&self) -> String {
        short_name(&self.name)
    }

    /// Its kernel in an ncu report: by mangled name where both have one, else by the name the
    /// join matched it to.
    pub(crate) fn in_report<'a>(&self, ncu: &'a NcuReport) -> Option<&'a NcuKernel> {
        ncu.kernels.iter().find(|k| {
            (k.mangled.is_some() && k.mangled == self.mangled)
                || self.ncu_name.as_deref() == Some(k.name.as_str())
        })
    }
}

/// One launch's duration over a kernel's launches, in ns, as `nsys stats` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct LaunchSpread {
    pub(crate) median_ns: f64,
    pub(crate) min_ns: f64,
    pub(crate) max_ns: f64,
    /// Sample standard deviation (n - 1).
    pub(crate) stddev_ns: f64,
}

impl LaunchSpread {
    fn of(k: &KernelSum) -> Option<Self> {
        Some(LaunchSpread {
            median_ns: k.med_ns?,
            min_ns: k.min_ns?,
            max_ns: k.max_ns?,
            stddev_ns: k.stddev_ns?,
        })
    }
}

/// nsys's demangled kernel name -> its mangled names (from the nsys SQLite export).
pub(crate) type MangledNames = std::collections::HashMap<String, Vec<String>>;

impl KernelRecord {
    fn timed(
        name: &str,
        range: Option<String>,
        source: TimeSource,
        instances: u64,
        total: f64,
        avg: f64,
    ) -> Self {
        KernelRecord {
            rank: 0,
            name: name.to_string(),
            ncu_name: None,
            nvtx_range: range,
            instances,
            total_time_ns: total,
            avg_time_ns: avg,
            gpu_time_pct: None,
            time_source: source,
            sm_throughput_pct: None,
            dram_throughput_pct: None,
            bound: None,
            grid: None,
            block: None,
            ncu_instances: 0,
            ncu_cached_from: None,
            mangled: None,
            per_launch: None,
            metrics: BTreeMap::new(),
            sampled: None,
        }
    }
}

/// Join nsys totals and ncu metrics: by mangled name (the one spelling both tools share) where
/// both sides know it, else by a spelling-independent key of the demangled name. nsys decides
/// the ranking (it saw every launch); ncu-only kernels follow, ranked by their ncu time, so
/// nothing is dropped.
pub(crate) fn build(
    nsys: Option<&[KernelSum]>,
    mangled: Option<&MangledNames>,
    ncu: Option<&NcuReport>,
    range: Option<&str>,
) -> Vec<KernelRecord> {
    let ncu_kernels: &[NcuKernel] = ncu.map(|r| r.kernels.as_slice()).unwrap_or(&[]);
    let mut used = vec![false; ncu_kernels.len()];
    let mut by_mangled: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, k) in ncu_kernels.iter().enumerate() {
        if let Some(m) = &k.mangled {
            by_mangled.entry(m.as_str()).or_default().push(i);
        }
        by_key.entry(join_key(&k.name)).or_default().push(i);
    }
    let range = range.map(str::to_string);
    let mut records: Vec<KernelRecord> = Vec::new();
    for k in nsys.unwrap_or(&[]) {
        let mut rec = KernelRecord::timed(
            &k.name,
            range.clone(),
            TimeSource::Nsys,
            k.instances,
            k.total_ns,
            k.avg_ns,
        );
        rec.per_launch = LaunchSpread::of(k);
        rec.mangled = mangled
            .and_then(|m| m.get(&k.name))
            .filter(|v| v.len() == 1)
            .map(|v| v[0].clone());
        let via_mangled: Vec<usize> = mangled
            .and_then(|m| m.get(&k.name))
            .into_iter()
            .flatten()
            .flat_map(|m| by_mangled.get(m.as_str()).cloned().unwrap_or_default())
            .filter(|i| !used[*i])
            .collect();
        let idx = if via_mangled.is_empty() {
            by_key
                .get(&join_key(&k.name))
                .map(|v| v.iter().copied().filter(|i| !used[*i]).collect())
                .unwrap_or_default()
        } else {
            via_mangled
        };
        if !idx.is_empty() {
            idx.iter().for_each(|i| used[*i] = true);
            let matched: Vec<&NcuKernel> = idx.iter().map(|i| &ncu_kernels[*i]).collect();
            attach(&mut rec, &matched);
        }
        records.push(rec);
    }
    let mut extra: Vec<KernelRecord> = ncu_kernels
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(k, _)| {
            let avg = k.time_ns.unwrap_or(0.0);
            let mut rec = KernelRecord::timed(
                &k.name,
                k.nvtx_range.clone().or(range.clone()),
                TimeSource::Ncu,
                k.instances,
                avg * k.instances as f64,
                avg,
            );
            attach(&mut rec, &[k]);
            rec
        })
        .collect();
    extra.sort_by(|a, b| b.total_time_ns.total_cmp(&a.total_time_ns));
    records.extend(extra);
    // Shares are of the time source that ranks: nsys when present, else ncu.
    let basis = if nsys.is_some() {
        TimeSource::Nsys
    } else {
        TimeSource::Ncu
    };
    let total: f64 = records
        .iter()
        .filter(|r| r.time_source == basis)
        .map(|r| r.total_time_ns)
        .sum();
    for (i, r) in records.iter_mut().enumerate() {
        r.rank = i + 1;
        if r.time_source == basis && total > 0.0 {
            r.gpu_time_pct = Some(100.0 * r.total_time_ns / total);
        }
    }
    records
}

/// Put the ncu measurements of one kernel (possibly several ncu names) on a record, weighting
/// each by its profiled launches.
fn attach(rec: &mut KernelRecord, matched: &[&NcuKernel]) {
    let n: u64 = matched.iter().map(|k| k.instances).sum();
    if n == 0 {
        return;
    }
    let mut metrics: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for k in matched {
        let w = k.instances as f64;
        for (name, v) in &k.metrics {
            let e = metrics.entry(name.clone()).or_default();
            e.0 += v * w;
            e.1 += w;
        }
    }
    rec.metrics = metrics.into_iter().map(|(k, (s, w))| (k, s / w)).collect();
    rec.ncu_name = Some(matched[0].name.clone());
    rec.ncu_instances = n;
    rec.ncu_cached_from = matched[0].cached_from.clone();
    rec.grid = matched[0].grid.clone();
    rec.block = matched[0].block.clone();
    (rec.sm_throughput_pct, rec.dram_throughput_pct) = crate::parse::ncu::sm_dram_pct(&rec.metrics);
    rec.bound = rec
        .sm_throughput_pct
        .zip(rec.dram_throughput_pct)
        .map(|(s, d)| Bound::classify(s, d));
}

/// A spelling-independent key for a kernel name. nsys and ncu spell the same kernel
/// differently (`void at::native::elementwise_kernel<(int)128, ...>` vs
/// `void at::elementwise_kernel<128, ...>`): drop namespaces, casts and spaces.
pub(crate) fn join_key(name: &str) -> String {
    let cleaned = strip_anonymous(name);
    let n = cleaned.trim();
    let n = n.strip_prefix("void ").unwrap_or(n);
    let mut out = String::with_capacity(n.len());
    let mut rest = n;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("::") {
            // Drop the qualifier just written: an identifier or `<unnamed>`.
            if out.ends_with("<unnamed>") {
                out.truncate(out.len() - "<unnamed>".len());
            } else if out.ends_with("(anonymousnamespace)") {
                out.truncate(out.len() - "(anonymousnamespace)".len());
            } else {
                let keep = out
                    .trim_end_matches(|ch: char| ch.is_ascii_alphanumeric() || ch == '_')
                    .len();
                out.truncate(keep);
            }
            rest = r;
            continue;
        }
        if c == '(' {
            if let Some(r) = CASTS.iter().find_map(|cast| rest.strip_prefix(cast)) {
                rest = r;
                continue;
            }
        }
        if !c.is_whitespace() {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Anonymous namespaces, in the spellings the tools use. ncu 2025.3's simplified names even
/// drop the `<`: `void unnamed>::CatArrayBatchedCopy<unnamed>::OpaqueType<2>, ...>`.
fn strip_anonymous(name: &str) -> String {
    name.replace("(anonymous namespace)::", "")
        .replace("<unnamed>::", "")
        .replace("unnamed>::", "")
}

const CASTS: &[&str] = &[
    "(int)",
    "(unsigned int)",
    "(long)",
    "(unsigned long)",
    "(long long)",
    "(unsigned long long)",
    "(short)",
    "(unsigned short)",
    "(char)",
    "(unsigned char)",
    "(signed char)",
    "(bool)",
];

/// A readable name: the function without return type, namespaces, template arguments or
/// parameters: `void at::native::vectorized_elementwise_kernel<(int)4, ...>(int, T2, T3)` ->
/// `vectorized_elementwise_kernel`.
pub(crate) fn short_name(name: &str) -> String {
    let cleaned = strip_anonymous(name);
    let n = cleaned.trim();
    let n = n.strip_prefix("void ").unwrap_or(n);
    // Cut at the first `<` or `(` at nesting depth 0, then take the last `::` component.
    let mut end = n.len();
    for (i, c) in n.char_indices() {
        if c == '<' && !n[..i].ends_with("::") && !n[i..].starts_with("<unnamed>") {
            end = i;
            break;
        }
        if c == '(' && !n[i..].starts_with("(anonymous namespace)") {
            end = i;
            break;
        }
    }
    let head = &n[..end];
    let last = head.rsplit("::").next().unwrap_or(head).trim();
    if last.is_empty() {
        n.to_string()
    } else {
        last.to_string()
    }
}

/// "1 CUDA graph launch", "2 CUDA graph launches".
pub(crate) fn graph_launches(n: u64) -> String {
    counted(n, "CUDA graph launch", "CUDA graph launches")
}

/// "1 kernel outside graphs", "3 kernels outside graphs".
pub(crate) fn kernels_outside(n: u64) -> String {
    counted(n, "kernel outside graphs", "kernels outside graphs")
}

/// "1 CUDA graph launch", "2 CUDA graph launches": a count with its noun's number.
pub(crate) fn counted(n: u64, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

#[cfg(test)]
mod tests;

/// An NCCL kernel (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL`, ...): its time includes
/// waiting for the other ranks, and ncu cannot replay it alone.
pub(crate) fn is_nccl(name: &str) -> bool {
    name.to_ascii_lowercase().contains("nccl")
}

/// A readable label: the function name plus the operation it was instantiated for, when the
/// template arguments say (`vectorized_elementwise_kernel [rsqrt]`, `reduce_kernel [MeanOps]`).
/// Display names cut to `width` characters, each with a short stable tag of its full name
/// (`~3fa2c1`) where two of the cut names would read the same, so two rows never do.
pub(crate) fn labels<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    width: usize,
) -> Vec<String> {
    labels_in(names, std::iter::empty(), width)
}

/// [`labels`], where a name also gets its tag when its display name is shared by another
/// kernel anywhere in `universe` (the run's kernels): one kernel reads the same in every table
/// of a report, tagged in all or in none.
pub(crate) fn labels_in<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    universe: impl Iterator<Item = &'a str>,
    width: usize,
) -> Vec<String> {
    let mut full: BTreeMap<String, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for n in universe.chain(names.clone()) {
        full.entry(display_name(n)).or_default().insert(n);
    }
    let cut = |s: String, w: usize| -> String {
        if s.chars().count() <= w {
            return s;
        }
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('…');
        t
    };
    // Distinct full names per cut label: the same kernel listed twice is not two kernels.
    let mut count: BTreeMap<String, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for n in names.clone() {
        count
            .entry(cut(display_name(n), width))
            .or_default()
            .insert(n);
    }
    names
        .map(|n| {
            let short = cut(display_name(n), width);
            let shared = full.get(&display_name(n)).is_some_and(|k| k.len() > 1);
            match count[&short].len() > 1 || shared {
                true => tagged(n, width),
                false => short,
            }
        })
        .collect()
}

/// A kernel's display name cut to `width` with its tag (`~3fa2c1`): the label every table
/// gives it where another kernel shares its display name.
pub(crate) fn tagged(name: &str, width: usize) -> String {
    let room = width.saturating_sub(8).max(8);
    let display = display_name(name);
    let cut = match display.chars().count() <= room {
        true => display,
        false => {
            let mut t: String = display.chars().take(room.saturating_sub(1)).collect();
            t.push('…');
            t
        }
    };
    format!("{cut} ~{:06x}", fnv(name) & 0xff_ffff)
}

/// Whether another kernel of `universe` (the run's kernels) has `name`'s display name: then
/// every list of a report tags it, as the kernel table does.
pub(crate) fn shares_display_name<'a>(name: &str, universe: impl Iterator<Item = &'a str>) -> bool {
    let display = display_name(name);
    universe
        .filter(|n| *n != name)
        .any(|n| display_name(n) == display)
}

/// A kernel's label in a sentence or list (uncut): its display name, tagged where another
/// kernel of `universe` shares it (see [`labels_in`]).
pub(crate) fn label_in<'a>(name: &str, universe: impl Iterator<Item = &'a str>) -> String {
    match shares_display_name(name, universe) {
        true => tagged(name, usize::MAX),
        false => display_name(name),
    }
}

/// FNV-1a: a short, stable tag of a full name (the same in every run and build).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

pub(crate) fn display_name(name: &str) -> String {
    let short = short_name(name);
    let Some(open) = name.find('<') else {
        return short;
    };
    let idents: Vec<&str> = name[open..]
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|s| s.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
        .collect();
    let op = idents
        .iter()
        .find_map(|i| {
            ["_kernel_cuda", "_kernel_impl", "_kernel"]
                .iter()
                .find_map(|suf| i.strip_suffix(suf))
                // PyTorch's generic launcher (`gpu_kernel_impl<...DivFunctor...>`) names
                // no operation: its functor does.
                .filter(|s| !s.is_empty() && *i != short && *s != "gpu")
                .map(str::to_string)
        })
        .or_else(|| {
            idents
                .iter()
                .rev()
                .find(|i| i.contains("Functor") || i.ends_with("Ops"))
                .map(|i| i.to_string())
        })
        // A lambda's launcher names its operation: `launch_clamp_scalar`.
        .or_else(|| {
            idents
                .iter()
                .find_map(|i| i.strip_prefix("launch_"))
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        });
    match op {
        Some(op) => format!("{short} [{op}]"),
        None => short,
    }
}

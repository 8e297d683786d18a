//! Where a range's wall time goes on its CPU thread: CUDA calls that wait for the GPU (sync),
//! launch calls, other CUDA calls, code compiled and loaded for a kernel's first use, nested
//! child ranges, and the rest (the thread's own work: Python, the framework).
//!
//! Compilation shows in the trace as CPU time with no CUDA call that ends in a module or
//! library load: cuDNN builds an attention kernel for a new shape (NVRTC, 35-65 ms a shape in
//! a captured tensor-parallel decode loop), then loads it with `cuLibraryLoadData`; Triton and
//! torch.compile load theirs with `cuModuleLoadData`. The gap on the thread since its previous
//! CUDA call (within the range, outside its child ranges) and the load call itself are counted
//! as compilation, not as the thread's own work. For push/pop ranges only: they belong to one thread, so the calls
//! made inside them are on that thread; a start/end range has no thread, and the ledger
//! abstains for it.
//!
//! Each call is counted once, in the innermost range open on its thread when it ran, and only
//! the outermost of nested calls (a runtime call's own driver calls are inside it). The parts
//! of an instance add up to its wall time by construction; an instance whose calls and children
//! would exceed its wall time (overlapping data) is marked not conserved.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::nesting::Nesting;
use crate::parse::sqlite::{ApiCall, ApiKind, NvtxRange, Sink};

/// Instances whose parts are kept one by one (the per-step view); the totals cover them all.
pub(crate) const PER_INSTANCE_KEPT: usize = 4096;

/// One instance's (or a sum of instances') split of wall time, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct Parts {
    pub(crate) wall_ns: i64,
    pub(crate) sync_ns: i64,
    pub(crate) launch_ns: i64,
    pub(crate) other_api_ns: i64,
    pub(crate) children_ns: i64,
    /// Code compiled and loaded: the CPU gap that ends in a module or library load, and the
    /// load call.
    #[serde(skip_serializing_if = "is_zero_ns")]
    pub(crate) compile_ns: i64,
    /// Compile/load time inside the range, its child ranges' included: what fixing the
    /// compilation could save of its wall time.
    #[serde(skip_serializing_if = "is_zero_ns")]
    pub(crate) compile_within_ns: i64,
    pub(crate) rest_ns: i64,
    /// Of the other CUDA calls: CUDA graphs instantiated (graphs recorded) and modules of GPU
    /// code loaded (for their kernels' first use), counted, the child ranges' calls included.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) graphs_instantiated: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) modules_loaded: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_ns(n: &i64) -> bool {
    *n == 0
}

impl Parts {
    fn add(&mut self, o: &Parts) {
        self.wall_ns += o.wall_ns;
        self.sync_ns += o.sync_ns;
        self.launch_ns += o.launch_ns;
        self.other_api_ns += o.other_api_ns;
        self.children_ns += o.children_ns;
        self.compile_ns += o.compile_ns;
        self.compile_within_ns += o.compile_within_ns;
        self.rest_ns += o.rest_ns;
        self.graphs_instantiated += o.graphs_instantiated;
        self.modules_loaded += o.modules_loaded;
    }
}

/// A range name's ledger over its instances.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RangeLedger {
    pub(crate) name: String,
    pub(crate) instances: u64,
    pub(crate) total: Parts,
    /// Each instance in start order (the per-step view of a decode loop), the first
    /// [`PER_INSTANCE_KEPT`] of them.
    pub(crate) per_instance: Vec<Parts>,
    /// Wall time of the direct child ranges, by name.
    pub(crate) children: BTreeMap<String, i64>,
    /// Every instance's parts add up to its wall time.
    pub(crate) conserved: bool,
    /// The kernels whose launch first followed a load of GPU code on the range's thread (the
    /// code compiled and loaded for them), by short name, with how many loads each followed;
    /// most first. Filled from the export after the ledger is built.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) compiled_for: Vec<(String, u32)>,
    /// The correlation ids of those launches, until they are named.
    #[serde(skip)]
    pub(crate) loads_then: Vec<i64>,
    /// Per kept instance, the ordinal of the instance that encloses it among its own name's
    /// instances ([`NO_PARENT`]: none): a sub-ledger over some instances follows them into
    /// their own child ranges' instances.
    #[serde(skip)]
    pub(crate) parents: Vec<u32>,
}

/// No enclosing instance (see [`RangeLedger::parents`]).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// Loads whose next launch is looked up per range name: enough to name what compiles.
const LOADS_NAMED: usize = 64;

impl RangeLedger {
    /// The largest part, named: "child range attn", "the thread's own work ...", ...
    pub(crate) fn dominant(&self) -> (String, i64) {
        let t = &self.total;
        let mut parts = vec![
            (
                "CUDA calls waiting for the GPU (sync)".to_string(),
                t.sync_ns,
            ),
            ("kernel launch calls".to_string(), t.launch_ns),
            ("other CUDA calls".to_string(), t.other_api_ns),
            (COMPILE.to_string(), t.compile_ns),
            (
                "the thread's own work outside CUDA calls (Python, framework)".to_string(),
                t.rest_ns,
            ),
        ];
        parts.extend(
            self.children
                .iter()
                .map(|(n, ns)| (format!("child range {n}"), *ns)),
        );
        parts
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .unwrap_or_default()
    }
}

impl RangeLedger {
    /// The same ledger over some of its instances (0-based ordinals), without its child
    /// ranges' shares; None when the per-instance parts do not cover every instance, or when
    /// nested child ranges hold the most of them (see [`over_members`] for those).
    pub(crate) fn of_members(&self, members: &[usize]) -> Option<RangeLedger> {
        let l = self.members_only(members)?;
        let t = &l.total;
        let own = t
            .sync_ns
            .max(t.launch_ns)
            .max(t.other_api_ns)
            .max(t.rest_ns);
        (t.children_ns <= own).then_some(l)
    }

    fn members_only(&self, members: &[usize]) -> Option<RangeLedger> {
        if self.per_instance.len() as u64 != self.instances || members.is_empty() {
            return None;
        }
        let mut total = Parts::default();
        let mut per_instance = Vec::with_capacity(members.len());
        for &i in members {
            let p = self.per_instance.get(i)?;
            total.add(p);
            per_instance.push(*p);
        }
        Some(RangeLedger {
            name: self.name.clone(),
            instances: members.len() as u64,
            total,
            per_instance,
            children: BTreeMap::new(),
            conserved: self.conserved,
            // Named over every instance: which of them each load preceded is not kept.
            compiled_for: self.compiled_for.clone(),
            loads_then: Vec::new(),
            parents: Vec::new(),
        })
    }
}

/// `name`'s ledger over some of its instances (0-based ordinals) and, `depth` levels down,
/// its child ranges' over the instances those enclose: a serving loop's steady steps spend
/// their time in their phases, and the phases' steady instances are the ones inside them.
/// Empty where some level's per-instance parts do not cover every instance.
pub(crate) fn over_members(
    by: &ByName,
    name: &str,
    members: &[usize],
    depth: usize,
) -> Vec<RangeLedger> {
    let Some(mut l) = by.get(name).and_then(|l| l.members_only(members)) else {
        return Vec::new();
    };
    let mut chosen = vec![false; members.iter().max().map_or(0, |m| m + 1)];
    members.iter().for_each(|&m| chosen[m] = true);
    let mut out = Vec::new();
    let whole = by
        .get(name)
        .map(|l| l.children.keys().cloned().collect::<Vec<_>>());
    for child in whole.unwrap_or_default() {
        let Some(c) = by.get(&child) else { continue };
        if c.per_instance.len() as u64 != c.instances || c.parents.len() != c.per_instance.len() {
            return Vec::new();
        }
        // Instances of the child name inside the chosen ones (a name may nest elsewhere too).
        let inside: Vec<usize> = (0..c.parents.len())
            .filter(|&i| chosen.get(c.parents[i] as usize) == Some(&true))
            .collect();
        let wall: i64 = inside.iter().map(|&i| c.per_instance[i].wall_ns).sum();
        if inside.is_empty() {
            continue;
        }
        l.children.insert(child.clone(), wall);
        if depth > 0 {
            let deeper = over_members(by, &child, &inside, depth - 1);
            if deeper.is_empty() {
                return Vec::new();
            }
            out.extend(deeper);
        }
    }
    out.insert(0, l);
    out
}

/// What an instance did that a steady one does not (see [`Builder::first_use`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FirstUse {
    pub(crate) compiles: bool,
    pub(crate) records_graphs: bool,
}

impl FirstUse {
    pub(crate) fn any(self) -> bool {
        self.compiles || self.records_graphs
    }
}

/// The compile/load part, as [`RangeLedger::dominant`] names it.
pub(crate) const COMPILE: &str =
    "code compiled and loaded for kernels' first use (CPU time ending in a module or library load)";

/// The ledgers by range name: a report looks one up per range, and a capture can hold tens of
/// thousands of names.
pub(crate) struct ByName<'a>(rustc_hash::FxHashMap<&'a str, &'a RangeLedger>);

impl<'a> ByName<'a> {
    pub(crate) fn new(ledger: &'a [RangeLedger]) -> ByName<'a> {
        ByName(ledger.iter().map(|l| (l.name.as_str(), l)).collect())
    }
    /// `l` in place of the ledger of its name (the same range over some of its instances).
    pub(crate) fn with(mut self, l: &'a RangeLedger) -> ByName<'a> {
        self.0.insert(l.name.as_str(), l);
        self
    }
    pub(crate) fn get(&self, name: &str) -> Option<&'a RangeLedger> {
        self.0.get(name).copied()
    }
}

/// How a range that leaves the GPU mostly idle spends its wall time, followed into the child
/// range that holds most of it (up to three levels): a label (`CPU-bound`, `launch-bound`,
/// `sync-bound`, `CUDA-call-bound`) and the sentence behind it, e.g. "81.4% of step is
/// inside attn, 96.4% of which is the thread's own work outside CUDA calls". None when the
/// range has no ledger (start/end ranges, no API table).
pub(crate) fn cpu_story(
    ledger: &ByName,
    name: &str,
    python: Option<&super::pysamples::PyReport>,
) -> Option<(CpuVerdict, String)> {
    cpu_story_with(ledger, name, python).map(|s| (s.label, s.story))
}

/// How the CPU thread spends a range that leaves the GPU idle (the wall-time ledger).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub(crate) enum CpuVerdict {
    #[serde(rename = "sync-bound")]
    Sync,
    #[serde(rename = "launch-bound")]
    Launch,
    #[serde(rename = "CUDA-call-bound")]
    CudaCall,
    /// Most of the time compiles and loads GPU code (a new kernel per shape, say).
    #[serde(rename = "compile-bound")]
    Compile,
    #[serde(rename = "CPU-bound")]
    Cpu,
}

impl CpuVerdict {
    pub(crate) fn label(self) -> &'static str {
        match self {
            CpuVerdict::Sync => "sync-bound",
            CpuVerdict::Launch => "launch-bound",
            CpuVerdict::CudaCall => "CUDA-call-bound",
            CpuVerdict::Compile => "compile-bound",
            CpuVerdict::Cpu => "CPU-bound",
        }
    }
}

/// What [`cpu_story`] found, with the Python function behind the thread's own work when the
/// samples name one.
pub(crate) struct CpuStory {
    pub(crate) label: CpuVerdict,
    pub(crate) story: String,
    /// The range the samples were counted in, the function, its share of them, and how many.
    pub(crate) python: Option<(String, String, f64, u64)>,
    /// Compile-bound: the kernels the loads were for (see [`RangeLedger::compiled_for`]).
    pub(crate) compiled_for: Vec<(String, u32)>,
}

pub(crate) fn cpu_story_with(
    ledger: &ByName,
    name: &str,
    python: Option<&super::pysamples::PyReport>,
) -> Option<CpuStory> {
    let mut parts = Vec::new();
    let mut current = ledger.get(name)?;
    let depth = crate::rules::RANGE_VERDICT_DEPTH;
    for _ in 0..=depth {
        let (what, ns) = current.dominant();
        let share = 100.0 * ns as f64 / current.total.wall_ns.max(1) as f64;
        let t = &current.total;
        match what.strip_prefix("child range ") {
            Some(child) if parts.len() < depth => {
                parts.push(format!("{share:.1}% of {} is inside {child}", current.name));
                match ledger.get(child) {
                    Some(next) => current = next,
                    None => break,
                }
            }
            _ => {
                let label = if ns == t.sync_ns {
                    CpuVerdict::Sync
                } else if ns == t.launch_ns {
                    CpuVerdict::Launch
                } else if ns == t.other_api_ns {
                    CpuVerdict::CudaCall
                } else if ns == t.compile_ns {
                    CpuVerdict::Compile
                } else {
                    CpuVerdict::Cpu
                };
                let lead = if parts.is_empty() {
                    format!("{share:.1}% of {} is {what}", current.name)
                } else {
                    format!("{share:.1}% of which is {what}")
                };
                parts.push(lead);
                let mut story = parts.join(", ");
                // The samples name the function behind the thread's own work, where there are some.
                let top = python
                    .filter(|_| label == CpuVerdict::Cpu)
                    .and_then(|p| p.top_of(&current.name));
                if let Some((f, share, n)) = top {
                    story.push_str(&format!(
                        "; {share:.0}% of the {n} Python samples in {} are in {f}",
                        current.name
                    ));
                }
                let compiled_for = match label {
                    CpuVerdict::Compile => current.compiled_for.clone(),
                    _ => Vec::new(),
                };
                return Some(CpuStory {
                    label,
                    story,
                    compiled_for,
                    python: top
                        .map(|(f, share, n)| (current.name.clone(), f.to_string(), share, n)),
                });
            }
        }
    }
    None
}

/// One push/pop range instance while the ledger is built: what its calls and children add
/// (its wall time is its range's, the rest follows). 64 bytes: kept per range instance.
struct Node {
    range: u32,
    /// The enclosing node, [`NO_NODE`] for none.
    parent: u32,
    sync_ns: i64,
    launch_ns: i64,
    other_api_ns: i64,
    children_ns: i64,
    compile_ns: i64,
    /// `compile_ns` with the child nodes' (carried up when the ledger is finished).
    compile_within_ns: i64,
    graphs_instantiated: u32,
    modules_loaded: u32,
}

const NO_NODE: u32 = u32::MAX;

impl Node {
    fn range(&self) -> usize {
        self.range as usize
    }
    /// Its parts, the rest being what the calls and children leave of the wall time.
    fn parts(&self, ranges: &[NvtxRange]) -> Parts {
        let r = &ranges[self.range()];
        let wall_ns = (r.end - r.start).max(0);
        Parts {
            wall_ns,
            sync_ns: self.sync_ns,
            launch_ns: self.launch_ns,
            other_api_ns: self.other_api_ns,
            children_ns: self.children_ns,
            compile_ns: self.compile_ns,
            compile_within_ns: self.compile_within_ns,
            rest_ns: wall_ns
                - self.sync_ns
                - self.launch_ns
                - self.other_api_ns
                - self.children_ns
                - self.compile_ns,
            graphs_instantiated: self.graphs_instantiated,
            modules_loaded: self.modules_loaded,
        }
    }
    fn parent(&self) -> Option<usize> {
        (self.parent != NO_NODE).then_some(self.parent as usize)
    }
}

/// Builds the ledger from API calls streamed in start order (see
/// [`crate::parse::sqlite::NsysDb::for_each_api_call`]): memory grows with ranges and
/// threads, not with calls.
pub(crate) struct Builder<'a> {
    ranges: &'a [NvtxRange],
    nest: &'a Nesting,
    /// Node of each push/pop range, by range index.
    node_of: Vec<u32>,
    nodes: Vec<Node>,
    /// Per thread: where the last outermost call ended (calls inside it are its own).
    last_end: rustc_hash::FxHashMap<i64, i64>,
    /// Every child node's span by its parent node, sorted: what a compile gap leaves out.
    child_spans: Vec<(u32, i64, i64)>,
    /// Per thread: the node of a load of GPU code not yet followed by a launch.
    loaded: rustc_hash::FxHashMap<i64, u32>,
    /// (node, correlation id) of each launch that followed a load.
    launched_after_load: Vec<(u32, i64)>,
    /// The counts are carried up to the enclosing nodes (see [`Builder::carry_up`]).
    carried: bool,
    cursor: crate::analysis::nesting::Cursor,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(ranges: &'a [NvtxRange], nest: &'a Nesting) -> Builder<'a> {
        // Operator ranges (nsys --pytorch) are framework work of their range, not ranges.
        let own = |r: &NvtxRange| r.push_pop && !crate::analysis::ops::is_op(&r.name);
        let mut node_of = vec![NO_NODE; ranges.len()];
        let mut nodes = Vec::with_capacity(ranges.iter().filter(|r| own(r)).count());
        for (i, _) in ranges.iter().enumerate().filter(|(_, r)| own(r)) {
            node_of[i] = nodes.len() as u32;
            nodes.push(Node {
                range: i as u32,
                parent: NO_NODE,
                sync_ns: 0,
                launch_ns: 0,
                other_api_ns: 0,
                children_ns: 0,
                compile_ns: 0,
                compile_within_ns: 0,
                graphs_instantiated: 0,
                modules_loaded: 0,
            });
        }
        for n in 0..nodes.len() {
            let i = nodes[n].range();
            // The nearest enclosing range that has a node (operator ranges have none).
            let mut up = nest.parent(i);
            while let Some(p) = up.filter(|&p| node_of[p] == NO_NODE) {
                up = nest.parent(p);
            }
            let parent = up.map_or(NO_NODE, |p| node_of[p]);
            nodes[n].parent = parent;
            if parent != NO_NODE {
                let r = &ranges[i];
                nodes[parent as usize].children_ns += (r.end - r.start).max(0);
            }
        }
        let mut child_spans: Vec<(u32, i64, i64)> = nodes
            .iter()
            .filter(|n| n.parent != NO_NODE)
            .map(|n| (n.parent, ranges[n.range()].start, ranges[n.range()].end))
            .collect();
        child_spans.sort_unstable();
        Builder {
            ranges,
            nest,
            node_of,
            nodes,
            child_spans,
            loaded: Default::default(),
            launched_after_load: Vec::new(),
            carried: false,
            last_end: Default::default(),
            cursor: Default::default(),
        }
    }

    /// The ledger of every push/pop range name, in order of first appearance.
    pub(crate) fn finish(mut self) -> Vec<RangeLedger> {
        self.carry_up();
        let mut out = aggregate(self.ranges, &self.nodes);
        let index: rustc_hash::FxHashMap<&str, usize> = out
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.as_str(), i))
            .collect();
        let mut then: Vec<(usize, i64)> = Vec::new();
        for &(n, corr) in &self.launched_after_load {
            let name = &*self.ranges[self.nodes[n as usize].range()].name;
            if let Some(&k) = index.get(name) {
                then.push((k, corr));
            }
        }
        for (k, corr) in then {
            if out[k].loads_then.len() < LOADS_NAMED {
                out[k].loads_then.push(corr);
            }
        }
        out
    }
}

impl Sink<ApiCall> for Builder<'_> {
    fn take(&mut self, call: &ApiCall) {
        let last = self.last_end.entry(call.tid).or_insert(i64::MIN);
        if call.start < *last {
            return;
        }
        let previous = *last;
        *last = call.end;
        let node_of = &self.node_of;
        let Some(i) = self
            .nest
            .open_at_from(&mut self.cursor, self.ranges, call.tid, call.start, false)
            .find(|&i| node_of[i] != NO_NODE)
        else {
            return;
        };
        let n = node_of[i] as usize;
        let r = &self.ranges[i];
        let ns = (call.end.min(r.end) - call.start.max(r.start)).max(0);
        if call.kind == ApiKind::Launch {
            if let Some(at) = self.loaded.remove(&call.tid) {
                self.launched_after_load.push((at, call.corr));
            }
        }
        let p = &mut self.nodes[n];
        match call.kind {
            ApiKind::Sync => p.sync_ns += ns,
            ApiKind::Launch => p.launch_ns += ns,
            ApiKind::Other => p.other_api_ns += ns,
            ApiKind::Instantiate => {
                p.other_api_ns += ns;
                p.graphs_instantiated += 1;
            }
            ApiKind::Load => {
                p.modules_loaded += 1;
                self.loaded.insert(call.tid, n as u32);
                let from = previous.max(r.start);
                let gap =
                    (call.start - from).max(0) - self.inside_children(n as u32, from, call.start);
                self.nodes[n].compile_ns += ns + gap;
            }
        }
    }

    fn reset(&mut self) {
        self.last_end.clear();
        self.loaded.clear();
        self.launched_after_load.clear();
        self.carried = false;
        for n in &mut self.nodes {
            (n.sync_ns, n.launch_ns, n.other_api_ns, n.compile_ns) = (0, 0, 0, 0);
            n.compile_within_ns = 0;
            // The counts come from the calls too: read again, they would count twice.
            (n.graphs_instantiated, n.modules_loaded) = (0, 0);
        }
    }
}

impl Builder<'_> {
    /// Per range index: what sets that push/pop range's instance apart from steady ones
    /// (rules::COMPILING), its child ranges' calls included: it spent over half its wall time
    /// compiling and loading GPU code, or it recorded (instantiated) a CUDA graph. Valid once
    /// every call is in; one backward pass, as [`Builder::finish`] carries counts up.
    pub(crate) fn first_use(&mut self) -> Vec<FirstUse> {
        self.carry_up();
        let share = crate::rules::COMPILING.threshold / 100.0;
        let mut out = vec![FirstUse::default(); self.ranges.len()];
        for node in &self.nodes {
            let r = &self.ranges[node.range()];
            out[node.range()] = FirstUse {
                compiles: node.compile_within_ns as f64 > share * (r.end - r.start).max(1) as f64,
                records_graphs: node.graphs_instantiated > 0,
            };
        }
        out
    }

    /// Counts include the child ranges' (a step that records its graphs inside an inner range
    /// still records them): children come after their parent, so one backward pass carries
    /// each count up the whole chain. Once, when every call is in.
    fn carry_up(&mut self) {
        if std::mem::replace(&mut self.carried, true) {
            return;
        }
        for n in (0..self.nodes.len()).rev() {
            self.nodes[n].compile_within_ns += self.nodes[n].compile_ns;
            let (g, m, c) = (
                self.nodes[n].graphs_instantiated,
                self.nodes[n].modules_loaded,
                self.nodes[n].compile_within_ns,
            );
            if let Some(p) = self.nodes[n].parent().filter(|&p| p < n) {
                self.nodes[p].graphs_instantiated += g;
                self.nodes[p].modules_loaded += m;
                self.nodes[p].compile_within_ns += c;
            }
        }
    }

    /// The time node `n`'s child ranges take of `[from, to)`.
    fn inside_children(&self, n: u32, from: i64, to: i64) -> i64 {
        let first = self.child_spans.partition_point(|c| c.0 < n);
        self.child_spans[first..]
            .iter()
            .take_while(|c| c.0 == n && c.1 < to)
            .map(|c| (c.2.min(to) - c.1.max(from)).max(0))
            .sum()
    }
}

/// The ledger from calls in memory (any order).
#[cfg(test)]
pub(crate) fn ledger(ranges: &[NvtxRange], calls: &[ApiCall]) -> Vec<RangeLedger> {
    let nest = Nesting::new(ranges);
    let mut b = Builder::new(ranges, &nest);
    let mut sorted: Vec<&ApiCall> = calls.iter().collect();
    sorted.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
    sorted.into_iter().for_each(|c| b.take(c));
    b.finish()
}

fn aggregate(ranges: &[NvtxRange], nodes: &[Node]) -> Vec<RangeLedger> {
    // Nodes are made in range order, which is start order for an export's ranges.
    let mut order: Vec<u32> = (0..nodes.len() as u32).collect();
    let start = |n: u32| (ranges[nodes[n as usize].range()].start, n);
    if !order.is_sorted_by_key(|&n| start(n)) {
        order.sort_by_key(|&n| start(n));
    }
    let mut out: Vec<RangeLedger> = Vec::new();
    let mut index: rustc_hash::FxHashMap<&str, usize> = Default::default();
    let mut ordinal = vec![NO_PARENT; nodes.len()];
    for n in order {
        let node = &nodes[n as usize];
        let name = &*ranges[node.range()].name;
        let k = *index.entry(name).or_insert_with(|| {
            out.push(RangeLedger {
                name: name.to_string(),
                instances: 0,
                total: Parts::default(),
                // One instance's room: most of a run's many names have one (a first push
                // would take room for four).
                per_instance: Vec::with_capacity(1),
                children: BTreeMap::new(),
                conserved: true,
                compiled_for: Vec::new(),
                loads_then: Vec::new(),
                parents: Vec::new(),
            });
            out.len() - 1
        });
        ordinal[n as usize] = out[k].instances as u32;
        let mut parts = node.parts(ranges);
        let e = &mut out[k];
        if parts.rest_ns < 0 {
            e.conserved = false;
            parts.rest_ns = 0;
        }
        e.instances += 1;
        e.total.add(&parts);
        if e.per_instance.len() < PER_INSTANCE_KEPT {
            e.per_instance.push(parts);
            // Nodes start after their parent: its ordinal is set.
            e.parents
                .push(node.parent().map_or(NO_PARENT, |p| ordinal[p]));
        }
    }
    for node in nodes {
        if let Some(p) = node.parent() {
            let parent = &*ranges[nodes[p].range()].name;
            let child = &ranges[node.range()];
            let e = &mut out[index[parent]];
            *e.children.entry(child.name.to_string()).or_default() +=
                (child.end - child.start).max(0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::push_pop as r;

    fn call(start: i64, end: i64, kind: ApiKind) -> ApiCall {
        ApiCall {
            start,
            end,
            tid: 1,
            kind,
            corr: start,
        }
    }

    #[test]
    fn graphs_instantiated_and_code_loaded_are_counted_per_instance_with_their_children() {
        // Two `step`s; the first records a graph inside its child `capture` and loads code.
        let ranges = [r("step", 0, 100), r("capture", 10, 50), r("step", 200, 250)];
        let calls = [
            call(20, 30, ApiKind::Instantiate),
            call(60, 70, ApiKind::Load),
            call(210, 220, ApiKind::Launch),
        ];
        let l = ledger(&ranges, &calls);
        let step = l.iter().find(|x| x.name == "step").unwrap();
        let first = &step.per_instance[0];
        assert_eq!((first.graphs_instantiated, first.modules_loaded), (1, 1));
        // The instantiation is its child's other CUDA work; the load, and the CPU time before
        // it since the thread's last CUDA call (30) less the child range's part (30-50), is
        // code compiled and loaded.
        assert_eq!((first.other_api_ns, first.compile_ns), (0, 20));
        assert_eq!(first.rest_ns, 100 - 40 - 20);
        let second = &step.per_instance[1];
        assert_eq!((second.graphs_instantiated, second.modules_loaded), (0, 0));
        let capture = l.iter().find(|x| x.name == "capture").unwrap();
        assert_eq!(capture.total.graphs_instantiated, 1);
        // The launch after the load is the one its code was loaded for (its correlation id
        // here: its start).
        assert_eq!(step.loads_then, [210]);
        for (name, kind) in [
            ("cudaGraphInstantiate_v12000", ApiKind::Instantiate),
            ("cudaGraphInstantiateWithFlags_v11040", ApiKind::Instantiate),
            ("cuModuleLoadData", ApiKind::Load),
            ("cuLibraryLoadData", ApiKind::Load),
            ("cudaStreamBeginCapture_v10000", ApiKind::Other),
            ("cudaGraphLaunch_v10000", ApiKind::Launch),
        ] {
            assert_eq!(ApiKind::of(name), kind, "{name}");
        }
    }

    #[test]
    fn calls_go_to_the_innermost_range_and_the_parts_add_up() {
        let ranges = [r("step", 0, 100), r("attn", 10, 60), r("mlp", 70, 90)];
        let calls = [
            call(5, 8, ApiKind::Launch),
            call(20, 30, ApiKind::Launch),
            // A driver call inside the runtime call: counted once, in the outer.
            call(21, 25, ApiKind::Other),
            call(40, 55, ApiKind::Sync),
            call(92, 95, ApiKind::Other),
            call(200, 210, ApiKind::Sync),
        ];
        let l = ledger(&ranges, &calls);
        let step = &l[0];
        assert_eq!(step.name, "step");
        assert_eq!(
            step.total,
            Parts {
                wall_ns: 100,
                sync_ns: 0,
                launch_ns: 3,
                other_api_ns: 3,
                children_ns: 70,
                rest_ns: 24,
                ..Parts::default()
            }
        );
        assert_eq!(step.children["attn"], 50);
        let attn = &l[1];
        assert_eq!(
            (attn.total.launch_ns, attn.total.sync_ns, attn.total.rest_ns),
            (10, 15, 25)
        );
        assert!(l.iter().all(|x| x.conserved));
        assert_eq!(step.dominant().0, "child range attn");
        let (label, story) = cpu_story(&ByName::new(&l), "step", None).unwrap();
        assert_eq!(label, CpuVerdict::Cpu);
        assert!(
            story.starts_with(
                "50.0% of step is inside attn, 50.0% of which is the thread's own work"
            ),
            "{story}"
        );
    }

    /// Calls read again after a reset (the runtime table out of start order) count once.
    #[test]
    fn a_reset_forgets_every_count() {
        let ranges = [r("step", 0, 100)];
        let calls = [
            call(10, 20, ApiKind::Instantiate),
            call(60, 70, ApiKind::Load),
        ];
        let nest = Nesting::new(&ranges);
        let mut b = Builder::new(&ranges, &nest);
        calls.iter().for_each(|c| b.take(c));
        b.reset();
        calls.iter().for_each(|c| b.take(c));
        let p = b.finish()[0].total;
        assert_eq!((p.graphs_instantiated, p.modules_loaded), (1, 1));
        assert_eq!(p.compile_ns, 50);
    }

    #[test]
    fn a_ledger_node_stays_small() {
        assert_eq!(std::mem::size_of::<Node>(), 64);
    }
}

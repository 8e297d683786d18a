//! PyTorch operators from their NVTX ranges (nsys `--pytorch=autograd-nvtx` or
//! `autograd-shapes-nvtx`, or torch's own `emit_nvtx`): each call is a push/pop range named
//! `aten::mm, op_id = 12, sizes = [[4, 1024], [1024, 1024]], ...`. Every call has its own
//! name, so these ranges are grouped by operator here and kept out of the per-range views.
//! Per operator: calls, CPU time on its own (wall minus its nested operators), the kernels
//! launched while it was the innermost operator (their GPU time), its commonest input shapes.

use std::collections::HashMap;

use serde::Serialize;

use crate::parse::sqlite::{Launch, NvtxRange};

/// Operators listed; kernels listed per operator.
const TOP_KERNELS: usize = 3;

/// Whether a range is one operator call.
pub(crate) fn is_op(name: &str) -> bool {
    name.starts_with("aten::") || name.contains(", op_id = ") || name.contains(", seq = ")
}

/// `aten::mm` of `aten::mm, op_id = 12, sizes = ...`.
fn op_name(name: &str) -> &str {
    name.split(", ").next().unwrap_or(name)
}

/// `[[4, 1024], [1024, 1024]]` of `..., sizes = [[4, 1024], [1024, 1024]], input_op_ids = ...`.
fn shapes(name: &str) -> Option<&str> {
    let rest = name.split_once("sizes = ")?.1;
    Some(rest.split(", input_op_ids").next().unwrap_or(rest))
}

#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct OpRow {
    pub(crate) op: String,
    pub(crate) calls: u64,
    /// Wall time of its calls minus that of operators nested in them.
    pub(crate) self_cpu_ns: i64,
    /// Kernel time launched while it was the innermost operator open on its thread.
    pub(crate) gpu_ns: i64,
    pub(crate) kernels: u64,
    /// The input shapes of most of its calls, and how many calls had them.
    pub(crate) shapes: Option<(String, u64)>,
    /// Its kernels by GPU time (StringIds id resolved), most first.
    pub(crate) top_kernels: Vec<(String, i64)>,
}

#[derive(Default)]
struct Acc {
    row: OpRow,
    shapes: HashMap<String, u64>,
    kernels: HashMap<i64, i64>,
}

/// The operators' GPU side, gathered while the launches stream by (see analysis::scan): per
/// operator name, its kernels' time and count, and time per kernel name id.
#[derive(Default)]
pub(crate) struct OpsGpu {
    per: HashMap<String, (i64, u64, HashMap<i64, i64>)>,
}

impl OpsGpu {
    /// A kernel launched while `range` (an operator call) was the innermost operator open.
    pub(crate) fn add(&mut self, range: &str, l: &Launch) {
        let e = self.per.entry(op_name(range).to_string()).or_default();
        e.0 += l.end - l.start;
        e.1 += 1;
        *e.2.entry(l.name).or_default() += l.end - l.start;
    }
}

/// The operator table, largest GPU time first (then CPU time), from the op ranges and what
/// the scan gathered of their kernels.
pub(crate) fn table(
    ranges: &[NvtxRange],
    gpu: &OpsGpu,
    names: &HashMap<i64, String>,
) -> Vec<OpRow> {
    let mut by_tid: HashMap<i64, Vec<&NvtxRange>> = HashMap::new();
    for r in ranges.iter().filter(|r| r.push_pop && is_op(&r.name)) {
        by_tid.entry(r.tid).or_default().push(r);
    }
    let mut acc: HashMap<&str, Acc> = HashMap::new();
    for (_, mut ops) in by_tid {
        ops.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        self_times(&ops, &mut acc);
    }
    for (op, (ns, n, kernels)) in &gpu.per {
        let a = acc.entry(op.as_str()).or_default();
        a.row.gpu_ns += ns;
        a.row.kernels += n;
        for (k, t) in kernels {
            *a.kernels.entry(*k).or_default() += t;
        }
    }
    let mut rows: Vec<OpRow> = acc
        .into_iter()
        .map(|(op, mut a)| {
            a.row.op = op.to_string();
            a.row.shapes = a
                .shapes
                .into_iter()
                .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)));
            let mut k: Vec<(String, i64)> = a
                .kernels
                .into_iter()
                .map(|(id, ns)| {
                    (
                        names.get(&id).cloned().unwrap_or_else(|| format!("#{id}")),
                        ns,
                    )
                })
                .collect();
            k.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            k.truncate(TOP_KERNELS);
            a.row.top_kernels = k;
            a.row
        })
        .collect();
    rows.sort_by(|a, b| {
        b.gpu_ns
            .cmp(&a.gpu_ns)
            .then(b.self_cpu_ns.cmp(&a.self_cpu_ns))
            .then(a.op.cmp(&b.op))
    });
    rows
}

/// Calls, shapes and self CPU time of one thread's op ranges (sorted, properly nested).
fn self_times<'a>(ops: &[&'a NvtxRange], acc: &mut HashMap<&'a str, Acc>) {
    let mut stack: Vec<usize> = Vec::new();
    let mut child_ns = vec![0i64; ops.len()];
    for (i, r) in ops.iter().enumerate() {
        while stack.last().is_some_and(|&p| ops[p].end <= r.start) {
            stack.pop();
        }
        if let Some(&p) = stack.last() {
            child_ns[p] += r.end - r.start;
        }
        stack.push(i);
    }
    for (r, child) in ops.iter().zip(child_ns) {
        let a = acc.entry(op_name(&r.name)).or_default();
        a.row.calls += 1;
        a.row.self_cpu_ns += (r.end - r.start - child).max(0);
        if let Some(s) = shapes(&r.name) {
            *a.shapes.entry(s.to_string()).or_default() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::push_pop as r;

    fn k(api_start: i64, ns: i64, name: i64) -> Launch {
        Launch {
            api_start,
            tid: 1,
            start: api_start + 5,
            end: api_start + 5 + ns,
            kernel: true,
            graph: false,
            name,
            mangled: -1,
            config: [0; 7],
        }
    }

    #[test]
    fn operators_group_calls_and_take_kernels_of_the_innermost() {
        let ranges = [
            r("decode", 0, 1000),
            r(
                "aten::linear, op_id = 1, sizes = [[4, 8], [8, 8]], input_op_ids = [(0,0)]",
                10,
                110,
            ),
            r("aten::mm, op_id = 2, sizes = [[4, 8], [8, 8]]", 20, 60),
            r(
                "aten::linear, op_id = 3, sizes = [[4, 8], [8, 8]], input_op_ids = [(2,0)]",
                200,
                260,
            ),
            r("aten::mm, op_id = 4, sizes = [[4, 8], [8, 8]]", 210, 250),
        ];
        let launches = [k(30, 7, 9), k(80, 2, 8), k(220, 7, 9), k(500, 100, 9)];
        let names = HashMap::from([(9, "gemm".to_string()), (8, "add".to_string())]);
        let scan = crate::analysis::scan::Scan::over(&ranges, None, &launches);
        let t = table(&ranges, &scan.ops, &names);
        let ops: Vec<_> = t
            .iter()
            .map(|o| (o.op.as_str(), o.calls, o.self_cpu_ns, o.gpu_ns, o.kernels))
            .collect();
        assert_eq!(
            ops,
            [("aten::mm", 2, 80, 14, 2), ("aten::linear", 2, 80, 2, 1)]
        );
        assert_eq!(t[0].shapes, Some(("[[4, 8], [8, 8]]".to_string(), 2)));
        assert_eq!(t[0].top_kernels, [("gemm".to_string(), 14)]);
        assert!(!is_op("decode") && is_op("aten::mm"));
    }
}

//! What a folder of exports without `config.yaml` was captured with, read from the data: the
//! NVTX range the nsys capture was gated on (the range that opens first in the export: a gated
//! capture starts when it opens) and the range ncu profiled (the NVTX context of its kernels).

use crate::parse::sqlite::NsysDb;
use crate::rundir::RunDir;

/// The range the nsys capture most likely began with: the earliest-opening range, the longer
/// one when two open together (the outer of nested ranges).
pub(crate) fn nsys_range(run: &RunDir) -> Option<String> {
    let sqlite = Some(run.single_or_rank0_sqlite()).filter(|p| p.is_file())?;
    let ranges = NsysDb::open(&sqlite).ok()?.ranges().ok()?;
    ranges
        .iter()
        .min_by_key(|r| (r.start, std::cmp::Reverse(r.end - r.start)))
        .map(|r| r.name.to_string())
}

/// The range ncu profiled: `nsys` (the range nsys captured) when every profiled kernel ran
/// inside it, else the innermost range all of them ran in.
pub(crate) fn ncu_range(run: &RunDir, nsys: Option<&str>) -> Option<String> {
    let csv = run.find_ncu_raw()?;
    let report = crate::parse::ncu::read_raw(&csv).ok()?;
    let mut stacks = report.kernels.iter().map(|k| k.nvtx_stack.as_slice());
    let first = stacks.next()?;
    let common = stacks.fold(first.len(), |n, s| {
        first[..n].iter().zip(s).take_while(|(a, b)| a == b).count()
    });
    let common = &first[..common];
    match nsys {
        Some(r) if common.iter().any(|c| c == r) => Some(r.to_string()),
        _ => common.last().cloned(),
    }
}

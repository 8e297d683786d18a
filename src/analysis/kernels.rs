//! The kernel table's rows. With an NVTX-gated capture they are the kernels launched inside
//! the captured range, over every instance of it, from the SQLite export (as nsys's
//! `nvtx_kern_sum` lists a range's kernels): a capture that runs on past the range (every
//! decode step, `capture_range_end=none`) holds other ranges' kernels too, which
//! `cuda_gpu_kern_sum` would mix in. Without a range or a SQLite export, `cuda_gpu_kern_sum`.

use std::collections::HashMap;

use crate::error::Error;
use crate::parse::nsys::{read_kernels, KernelSum};
use crate::parse::sqlite::{Launch, NsysDb, NvtxRange};
use crate::rundir::{RunDir, KERN_SUM};

/// The kernels launched in the instances of range `name`, largest total first.
pub fn in_range(
    name: &str,
    ranges: &[NvtxRange],
    launches: &[Launch],
    strings: &HashMap<i64, String>,
) -> Vec<KernelSum> {
    crate::analysis::scan::Scan::over(ranges, Some(name), launches).kernel_rows(strings)
}

/// The rows of a single-process run and the source they come from: the captured range's
/// kernels when `range` is named and the SQLite export holds it, else `cuda_gpu_kern_sum`.
pub(crate) fn load(
    run: &RunDir,
    range: Option<&str>,
) -> Result<Option<(Vec<KernelSum>, String)>, Error> {
    let sqlite = run.nsys_sqlite(None);
    if let (Some(name), true) = (range, sqlite.is_file()) {
        let db = NsysDb::open(&sqlite)?;
        let rows = from_db(&db, name)?;
        if !rows.is_empty() {
            return Ok(Some((rows, source(run))));
        }
    }
    let csv = run.kern_sum(None);
    if !csv.is_file() {
        return Ok(None);
    }
    Ok(Some((read_kernels(&csv)?, KERN_SUM.to_string())))
}

/// The captured range's kernels from an open export (empty: the range is not in it),
/// streaming its launches.
pub fn from_db(db: &NsysDb, name: &str) -> Result<Vec<KernelSum>, Error> {
    let ranges = db.ranges()?;
    let mut scan = crate::analysis::scan::Scan::new(&ranges, Some(name));
    db.for_each_launch(&mut scan)?;
    Ok(scan.kernel_rows(&db.strings()?))
}

/// How the reports name the rows' source.
pub(crate) fn source(run: &RunDir) -> String {
    run.relative(&run.nsys_sqlite(None))
}

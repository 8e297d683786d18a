//! The kernel table's rows. With an NVTX-gated capture they are the kernels launched inside
//! the captured range, over every instance of it, from the SQLite export (as nsys's
//! `nvtx_kern_sum` lists a range's kernels): a capture that runs on past the range (every
//! decode step, `capture_range_end=none`) holds other ranges' kernels too, which
//! `cuda_gpu_kern_sum` would mix in. Without a range or a SQLite export, `cuda_gpu_kern_sum`.

use std::collections::HashMap;

use crate::error::Error;
use crate::parse::nsys::{read_kernels, KernelSum};
use crate::parse::sqlite::{CudaTraceSeen, Launch, NsysDb, NvtxRange};
use crate::rundir::RunDir;

/// Refuses an export whose CUDA trace recorded kernel launch calls and not one kernel: nsys
/// lost the GPU's side of the trace (newer nsys traces CUDA in hardware by default on newer
/// GPUs and falls back in silence; users saw exports of API rows alone), which is no run
/// without kernels. The fix is nsys's software CUDA trace.
pub(crate) fn untraced(seen: &CudaTraceSeen, path: &std::path::Path) -> Result<(), Error> {
    if seen.kernels || seen.launch_calls == 0 {
        return Ok(());
    }
    let said = match seen.hardware {
        Some(true) => " (its diagnostics say \"Hardware tracing used for CUDA tracing\")",
        _ => "",
    };
    Err(Error::NoData(format!(
        "{}: nsys recorded {} kernel launch calls and no kernel{said}: its CUDA trace lost the GPU's side, as nsys's hardware CUDA trace (the default of newer nsys on newer GPUs) does where it cannot trace and falls back in silence. Profile again with nsys's software CUDA trace: nsys.trace=cuda-sw,nvtx (by hand: `nsys profile --trace=cuda-sw,nvtx`)",
        path.display(),
        seen.launch_calls
    )))
}

/// The kernels launched in the instances of range `name`, largest total first.
pub fn in_range(
    name: &str,
    ranges: &[NvtxRange],
    launches: &[Launch],
    strings: &HashMap<i64, String>,
) -> Vec<KernelSum> {
    crate::analysis::scan::Scan::over(ranges, Some(name), launches).kernel_rows(strings)
}

/// The rows of a single-process run: the captured range's kernels when `range` is named and
/// the SQLite export holds it, else `cuda_gpu_kern_sum`. With the rows from the export come
/// their mangled names, read in the same pass.
pub(crate) fn load(run: &RunDir, range: Option<&str>) -> Result<Option<Loaded>, Error> {
    let sqlite = run.nsys_sqlite(None);
    if let (Some(name), true) = (range, sqlite.is_file()) {
        let db = NsysDb::open(&sqlite)?;
        let loaded = streamed(&db, name)?;
        if !loaded.rows.is_empty() {
            return Ok(Some(loaded));
        }
    }
    let csv = run.kern_sum(None);
    if !csv.is_file() {
        return Ok(None);
    }
    Ok(Some(Loaded {
        rows: read_kernels(&csv)?,
        mangled: None,
    }))
}

/// What [`load`] found.
pub(crate) struct Loaded {
    pub(crate) rows: Vec<KernelSum>,
    /// Demangled name -> mangled names of the rows (None: rows from the stats CSV).
    pub(crate) mangled: Option<HashMap<String, Vec<String>>>,
}

/// The captured range's kernels from an open export (empty: the range is not in it),
/// streaming its launches.
pub fn from_db(db: &NsysDb, name: &str) -> Result<Vec<KernelSum>, Error> {
    Ok(streamed(db, name)?.rows)
}

/// [`from_db`], with the rows' mangled names.
fn streamed(db: &NsysDb, name: &str) -> Result<Loaded, Error> {
    let ranges = db.ranges()?;
    let mut scan = crate::analysis::scan::Scan::new(&ranges, Some(name));
    db.for_each_launch(&mut scan)?;
    rows_of(db, &scan)
}

/// What a scan of the captured range found: its kernel rows and their mangled names.
fn rows_of(db: &NsysDb, scan: &crate::analysis::scan::Scan) -> Result<Loaded, Error> {
    let strings = db.strings()?;
    Ok(Loaded {
        rows: scan.kernel_rows(&strings),
        mangled: Some(scan.mangled_names(&strings)),
    })
}

/// The captured range's kernels and every kernel's launch configurations in it, from one read
/// of an open export (the ncu plan reads both); the rows empty where the range is not in it.
pub(crate) fn with_shapes(
    db: &NsysDb,
    ranges: &[NvtxRange],
    name: &str,
) -> Result<(Loaded, crate::analysis::shapes::Shapes), Error> {
    let mut scan = crate::analysis::scan::Scan::new(ranges, Some(name));
    let shapes = crate::analysis::shapes::Shapes::read_beside(db, ranges, Some(name), &mut scan)?;
    Ok((rows_of(db, &scan)?, shapes))
}

/// How the reports name the rows' source.
pub(crate) fn source(run: &RunDir) -> String {
    run.relative(&run.nsys_sqlite(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One read with two consumers gives what two reads give: the kernel rows and their
    /// mangled names, and every kernel's launch configurations in the range.
    #[test]
    fn one_read_gives_the_rows_and_the_shapes_of_two() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        for (path, range) in [
            ("examples/sample-run-hf-eager/nsys/run.sqlite", "decode"),
            ("tests/data/hf/graph-step/nsys/run.sqlite", "step"),
        ] {
            let db = NsysDb::open(&root.join(path)).unwrap();
            let ranges = db.ranges().unwrap();
            let (both, shapes) = with_shapes(&db, &ranges, range).unwrap();
            let rows = streamed(&db, range).unwrap();
            assert!(!rows.rows.is_empty(), "{path}");
            assert_eq!(both.rows, rows.rows, "{path}");
            assert_eq!(both.mangled, rows.mangled, "{path}");
            let alone = crate::analysis::shapes::Shapes::read(&db, &ranges, Some(range)).unwrap();
            assert_ne!(alone, Default::default(), "{path}");
            assert_eq!(shapes, alone, "{path}");
        }
    }
}

//! What the nsys pass left that the ncu plan reads: its export's launch configurations in
//! ncu's range and when that range began, the kernel table's rows, and how long it ran.

use super::{cost, Ctx, Target};

/// What the nsys export says of ncu's range (the whole capture when nsys's range is ncu's and
/// no range is named; nothing where it names none): each kernel's launch configurations in it
/// (None: the export cannot be read for them), for the shapes ncu measures and the cache; when
/// its first instance began, in seconds on the nsys pass's clock (what a launched ncu must
/// reach again before its first kernel); and where nsys's range is ncu's, the kernel table's
/// rows from the same read of the single export (rank 0's CSV under a launcher).
pub(super) fn read_export(ctx: &Ctx, t: &Target) -> FromExport {
    let (range, kernels) = (
        t.range.as_deref(),
        t.same && ctx.run.nsys_sqlite(None).is_file(),
    );
    let path = ctx.run.single_or_rank0_sqlite();
    let db = match (t.same || range.is_some()) && crate::files::present(&path).unwrap_or(false) {
        true => crate::parse::sqlite::NsysDb::open(&path).ok(),
        false => None,
    };
    let Some(db) = db else {
        return FromExport::default();
    };
    // The ranges are read only to find the launches made inside one.
    let ranges = match range {
        Some(_) => db.ranges(),
        None => Ok(Vec::new()),
    };
    let began = ranges
        .as_ref()
        .ok()
        .zip(range)
        .and_then(|(r, name)| range_began_s(&db, r, name));
    let read = ranges.and_then(|r| match (range, kernels) {
        (Some(name), true) => crate::analysis::kernels::with_shapes(&db, &r, name)
            .map(|(rows, shapes)| (shapes, Some(rows).filter(|l| !l.rows.is_empty()))),
        _ => crate::analysis::shapes::Shapes::read(&db, &r, range).map(|s| (s, None)),
    });
    let (shapes, rows) = match read {
        Ok((shapes, rows)) => (Some(shapes), rows),
        Err(e) => {
            tracing::info!("kernel launch configurations not read from the nsys export: {e}");
            (None, None)
        }
    };
    FromExport {
        shapes,
        began_s: began,
        rows,
    }
}

/// [`read_export`]'s answer.
#[derive(Default)]
pub(super) struct FromExport {
    pub(super) shapes: Option<crate::analysis::shapes::Shapes>,
    /// When ncu's range first began, on the nsys pass's clock.
    pub(super) began_s: Option<f64>,
    /// The kernel table's rows.
    pub(super) rows: Option<crate::analysis::kernels::Loaded>,
}

/// When the first instance of `name` began, in seconds from the launch of `nsys profile`.
/// Event times in the export count from the trace's start (ANALYSIS_DETAILS.startTime, on that
/// clock): a capture that began 20 s in has its first range a few ms after it.
pub(crate) fn range_began_s(
    db: &crate::parse::sqlite::NsysDb,
    ranges: &[crate::parse::sqlite::NvtxRange],
    name: &str,
) -> Option<f64> {
    let (trace_start, _) = db.capture_window().ok()??;
    Some(trace_start as f64 / 1e9 + first_start_s(ranges, name)?)
}

/// When the first instance of `name` began, in seconds on the export's clock (from the trace's
/// start).
pub(crate) fn first_start_s(ranges: &[crate::parse::sqlite::NvtxRange], name: &str) -> Option<f64> {
    ranges
        .iter()
        .filter(|r| *r.name == *name)
        .map(|r| r.start)
        .min()
        .map(|ns| ns as f64 / 1e9)
}

/// What the nsys pass of this run measured of the workload (nothing without one).
pub(super) fn nsys_basis(ctx: &Ctx) -> cost::Basis {
    let status = crate::rundir::status::Status::read(&ctx.run.path);
    let Some(nsys) = status.as_ref().and_then(|s| s.passes.get("nsys")) else {
        return cost::Basis::default();
    };
    let timing = nsys.nsys.as_ref().and_then(|r| r.timing.clone());
    cost::Basis {
        pass_s: nsys.duration_s,
        capture_start_s: timing.as_ref().and_then(|t| t.capture_start_s),
        capture_end_s: timing.and_then(|t| t.capture_end_s),
        range_start_s: None,
        held: false,
    }
}

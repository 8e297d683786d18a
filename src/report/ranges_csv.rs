//! ranges.csv: every NVTX range, one row each, however many kernels.md and summary.json list
//! (`report.max_ranges`); an empty cell where the run has no such figure (no SQLite export,
//! a start/end range without a thread's ledger).

use std::io::Write;

use crate::findings::document::{BandwidthSource, BytesSource, Decided, StepBytes, RANGES_CSV};

const HEADER: &[&str] = &[
    "name",
    "style",
    "instances",
    "wall_ns",
    "avg_wall_ns",
    "kernel_ns",
    "launches",
    "graph_kernels",
    "gpu_projection_ns",
    "gpu_busy_ns",
    "gpu_busy_of_projection_pct",
    "gpu_busy_of_range_pct",
    "memcpy_ns",
    "idle_gaps",
    "idle_ns",
    "sync_ns",
    "launch_ns",
    "other_api_ns",
    "compile_ns",
    "children_ns",
    "rest_ns",
    // The captured range's DRAM traffic per step from the nsys pass's samples (empty for the
    // others): medians over its steady instances, see analysis::sampled::bytes.
    "dram_bytes_per_step",
    "dram_read_bytes_per_step",
    "dram_write_bytes_per_step",
    "dram_bytes_within",
    "dram_bytes_source",
    "dram_bytes_coverage_pct",
    "memory_floor_ms_per_step",
    "dram_ceiling_bytes_per_s",
    "dram_ceiling_source",
    "dram_bandwidth_use_pct",
    "listed",
];

/// The fields of [`HEADER`] from `dram_bytes_per_step` to `dram_bandwidth_use_pct`.
const STEP_FIELDS: usize = 10;

/// `ranges.csv`.
pub(crate) struct RangesCsv;

impl super::Output for RangesCsv {
    fn file(&self) -> &'static str {
        RANGES_CSV
    }
    fn stream(&self, d: &Decided, w: &mut dyn Write) -> std::io::Result<bool> {
        if d.tables.ranges.is_empty() && d.tables.nvtx_sum.is_none_or(|r| r.is_empty()) {
            return Ok(false);
        }
        let mut w = csv::Writer::from_writer(std::io::BufWriter::with_capacity(64 * 1024, w));
        w.write_record(HEADER)?;
        let ledger = d.ledger_by_name();
        // Fields written one by one through one number buffer: 73k ranges are 73k rows, and
        // the whole numbers (most fields) through itoa rather than the formatter.
        let mut num = String::new();
        let mut int = itoa::Buffer::new();
        let mut whole_ns = itoa::Buffer::new();
        let mut whole = |w: &mut csv::Writer<_>, v: i64| w.write_field(int.format(v).as_bytes());
        for r in d.tables.ranges {
            w.write_field(crate::term::visible(&r.name).as_bytes())?;
            w.write_field(&r.style)?;
            let pct = [r.gpu_busy_pct, r.busy_of_range_pct()];
            let ints = [
                r.instances as i64,
                r.wall_ns,
                r.kernel_ns,
                r.launches as i64,
                r.graph_kernels as i64,
                r.proj_ns,
                r.busy_ns,
            ];
            let later = [r.memcpy_ns, r.idle_gaps as i64, r.idle_ns];
            whole(&mut w, ints[0])?;
            whole(&mut w, ints[1])?;
            // A whole number of ns (every range of one instance) through itoa: the formatter's
            // exact mode falls back to its slow bignum path for whole numbers (perf on 73,000
            // names: 4% of the report). The same bytes as `{:.1}`.
            match whole_f64(r.avg_wall_ns) {
                Some(v) => {
                    num.clear();
                    num.push_str(whole_ns.format(v));
                    num.push_str(".0");
                    w.write_field(num.as_bytes())?;
                }
                None => field(&mut w, &mut num, format_args!("{:.1}", r.avg_wall_ns))?,
            }
            for v in &ints[2..] {
                whole(&mut w, *v)?;
            }
            for p in pct {
                field(&mut w, &mut num, format_args!("{p:.4}"))?;
            }
            for v in later {
                whole(&mut w, v)?;
            }
            match ledger.get(&r.name).map(|l| &l.total) {
                Some(p) => {
                    for v in [
                        p.sync_ns,
                        p.launch_ns,
                        p.other_api_ns,
                        p.compile_ns,
                        p.children_ns,
                        p.rest_ns,
                    ] {
                        whole(&mut w, v)?;
                    }
                }
                None => (0..6).try_for_each(|_| w.write_field(""))?,
            }
            match d.summary_steps().filter(|s| s.range == r.name) {
                Some(s) => step_fields(&mut w, &mut num, s)?,
                None => (0..STEP_FIELDS).try_for_each(|_| w.write_field(""))?,
            }
            w.write_field(if d.listed.has(&r.name) {
                "true"
            } else {
                "false"
            })?;
            w.write_record(None::<&[u8]>)?;
        }
        if d.tables.ranges.is_empty() {
            // Ranges from nsys's nvtx_sum only (no SQLite export): its own columns.
            for r in d.tables.nvtx_sum.into_iter().flatten() {
                w.write_field(crate::term::visible(r.name()).as_bytes())?;
                w.write_field(r.style.as_deref().unwrap_or_default())?;
                field(&mut w, &mut num, format_args!("{}", r.instances))?;
                field(&mut w, &mut num, format_args!("{:.0}", r.total_ns))?;
                field(&mut w, &mut num, format_args!("{:.1}", r.avg_ns))?;
                (5..HEADER.len() - 1).try_for_each(|_| w.write_field(""))?;
                w.write_field("true")?;
                w.write_record(None::<&[u8]>)?;
            }
        }
        w.flush()?;
        Ok(true)
    }
}

/// The captured range's bytes per step, [`STEP_FIELDS`] fields.
fn step_fields<W: Write>(
    w: &mut csv::Writer<W>,
    num: &mut String,
    s: &StepBytes,
) -> csv::Result<()> {
    let opt = |w: &mut csv::Writer<W>, num: &mut String, v: Option<f64>, digits: usize| match v {
        Some(v) => field(w, num, format_args!("{v:.digits$}")),
        None => w.write_field(""),
    };
    field(w, num, format_args!("{:.0}", s.dram_bytes))?;
    field(w, num, format_args!("{:.0}", s.dram_read_bytes))?;
    field(w, num, format_args!("{:.0}", s.dram_write_bytes))?;
    opt(w, num, s.bytes_within, 0)?;
    w.write_field(source_name(s.source))?;
    field(w, num, format_args!("{:.1}", s.coverage_pct))?;
    opt(w, num, s.memory_floor_ms, 4)?;
    opt(w, num, s.ceiling.map(|c| c.bytes_per_s), 0)?;
    w.write_field(s.ceiling.map_or("", |c| ceiling_name(c.source)))?;
    opt(w, num, s.bandwidth_use_pct, 2)
}

/// The names summary.json gives the sources.
fn source_name(s: BytesSource) -> &'static str {
    match s {
        BytesSource::Counters => "counters",
        BytesSource::Shares => "shares",
    }
}

fn ceiling_name(s: BandwidthSource) -> &'static str {
    match s {
        BandwidthSource::NcuPeak => "ncu_peak",
        BandwidthSource::Datasheet => "datasheet",
    }
}

/// `v` as an integer where it is a non-negative whole number an i64 holds exactly.
fn whole_f64(v: f64) -> Option<i64> {
    (v.is_sign_positive() && v.fract() == 0.0 && v < 9.0e15).then_some(v as i64)
}

/// One formatted field, through the reused buffer `num`.
fn field<W: Write>(
    w: &mut csv::Writer<W>,
    num: &mut String,
    v: std::fmt::Arguments,
) -> csv::Result<()> {
    use std::fmt::Write as _;
    num.clear();
    let _ = num.write_fmt(v);
    w.write_field(num.as_bytes())
}

#[cfg(test)]
mod whole_tests {
    /// Where the integer path is taken, it writes what `{:.1}` writes; elsewhere it is not.
    #[test]
    fn a_whole_number_reads_as_the_formatter_writes_it() {
        for v in [0.0, 1.0, 715_174_939.0, 8.9e15, 123.0] {
            let i = super::whole_f64(v).unwrap();
            assert_eq!(format!("{i}.0"), format!("{v:.1}"));
        }
        for v in [-0.0, -1.0, 0.5, 9.1e15, f64::NAN, f64::INFINITY] {
            assert_eq!(super::whole_f64(v), None, "{v}");
        }
    }
}

//! kernels.csv: every kernel, one row each; empty cell when a value is unknown.

use crate::findings::document::{Decided, Repeats};
use crate::model::{Bound, KernelRecord};

pub(crate) const HEADER: &[&str] = &[
    "rank",
    "name",
    "short_name",
    "instances",
    "total_time_ns",
    "avg_time_ns",
    "gpu_time_pct",
    "sm_throughput_pct",
    "dram_throughput_pct",
    "bound",
    "ncu_instances",
    "grid",
    "block",
    "time_source",
    "nvtx_range",
    "launch_median_ns",
    "launch_min_ns",
    "launch_max_ns",
    "launch_stddev_ns",
    "passes",
    "total_mean_ns",
    "total_stddev_ns",
    "total_min_ns",
    "total_median_ns",
    "total_max_ns",
];

/// The rows; the `launch_*` columns are nsys's spread of one launch, the `total_*` ones the
/// kernel's total time over the timed passes (`run.repeat`; empty with one pass). `short_name`
/// is the label the Markdown tables give the kernel (its operation in brackets, the tag of its
/// full name where another kernel reads the same).
pub(crate) fn kernels_csv(records: &[KernelRecord], repeats: Option<&Repeats>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let labels = crate::model::labels(records.iter().map(|r| r.name.as_str()), usize::MAX);
    let num = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    let _ = w.write_record(HEADER);
    for (r, label) in records.iter().zip(labels) {
        let mut row = vec![
            r.rank.to_string(),
            crate::term::visible(&r.name).into_owned(),
            crate::term::visible(&label).into_owned(),
            r.instances.to_string(),
            format!("{:.0}", r.total_time_ns),
            format!("{:.1}", r.avg_time_ns),
            num(r.gpu_time_pct),
            num(r.sm_throughput_pct),
            num(r.dram_throughput_pct),
            r.bound.map(Bound::label).unwrap_or("").to_string(),
            r.ncu_instances.to_string(),
            r.grid.clone().unwrap_or_default(),
            r.block.clone().unwrap_or_default(),
            match r.time_source {
                crate::model::TimeSource::Nsys => "nsys",
                crate::model::TimeSource::Ncu => "ncu",
            }
            .to_string(),
            crate::term::visible(r.nvtx_range.as_deref().unwrap_or_default()).into_owned(),
        ];
        let launch = r
            .per_launch
            .map(|l| [l.median_ns, l.min_ns, l.max_ns, l.stddev_ns]);
        row.extend((0..4).map(|i| num(launch.map(|l| l[i]))));
        let runs = repeats.and_then(|x| x.kernels.get(&r.name));
        row.push(runs.map(|s| s.values.len().to_string()).unwrap_or_default());
        let over = runs.map(|s| [s.mean, s.stddev, s.min, s.median, s.max]);
        row.extend((0..5).map(|i| num(over.map(|v| v[i]))));
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// `kernels.csv`.
pub(crate) struct KernelsCsv;

impl super::Output for KernelsCsv {
    fn file(&self) -> &'static str {
        "kernels.csv"
    }
    fn render(&self, a: &Decided) -> Option<String> {
        {
            let all: Vec<KernelRecord> = a
                .tables
                .kernels
                .iter()
                .chain(a.tables.ncu_kernels)
                .cloned()
                .collect();
            Some(kernels_csv(&all, a.tables.repeats))
        }
    }
}

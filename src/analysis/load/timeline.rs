//! The nsys side of a run: one streaming pass over the SQLite export (ranges, the scan of
//! launches, the wall-time ledger, graphs, instance groups, launch configurations) and the
//! `nsys stats` CSVs.

use super::*;

/// What one streaming pass over the SQLite export gives.
pub(super) struct Timeline {
    /// The NVTX ranges without the operator ranges (those are `operators`).
    pub(super) phases: Vec<NvtxRange>,
    pub(super) stats: Vec<crate::analysis::ranges::RangeStats>,
    /// The captured range's kernels (empty without one, or when it is not in the export).
    pub(super) kernel_rows: Vec<KernelSum>,
    /// Their mangled names by demangled name (read while streaming).
    pub(super) mangled: HashMap<String, Vec<String>>,
    /// Their launches by thread blocks, by demangled name.
    pub(super) blocks: HashMap<String, Vec<crate::analysis::scan::Blocks>>,
    pub(super) operators: Vec<ops::OpRow>,
    pub(super) ledger: Vec<ledger::RangeLedger>,
    /// CUDA graph launches per range name, and how nsys traced them.
    pub(super) graphs: BTreeMap<String, graphs::GraphUse>,
    pub(super) groups: Vec<crate::analysis::instances::RangeGroups>,
    /// Each grouped instance's (start, thread) -> its range and group, for the samples.
    pub(super) group_of: pysamples::GroupOf,
    /// The launch configurations of the kernels asked for, in the range asked for.
    pub(super) shapes: Option<crate::analysis::shapes::Shapes>,
    /// The loop around the captured range (None: fewer than two instances in a row).
    pub(super) cycle: Option<cadence::Loop>,
    /// The attention kernels' time per range name (analysis::attention).
    pub(super) attention: Vec<crate::analysis::attention::Tally>,
    /// The captured range's instances and the work each did (analysis::work).
    pub(super) work: Vec<crate::analysis::work::Work>,
}

/// Which kernels' launch configurations a pass over the export tallies, and in which range.
pub(super) struct ShapeRequest {
    pub(super) range: String,
    pub(super) mangled: Vec<String>,
}

impl Timeline {
    /// One pass over the export: launches into the scan, API calls into the ledger.
    pub(super) fn read(
        db: &NsysDb,
        focus: &Focus,
        rule: crate::analysis::instances::Rule,
        shapes_of: Option<&ShapeRequest>,
    ) -> Result<Timeline, Error> {
        let captured = focus.range();
        // Operator ranges are not steps, nor are the ranges a library emits in its own NVTX
        // domain (CUB's `cub::DeviceRadixSort` inside a sampling step): their instances are not
        // grouped.
        let (all, library) = db.ranges_and_library_names(focus.domain.as_deref())?;
        let has_ops = all.iter().any(|r| ops::is_op(&r.name));
        // One nesting index for every consumer.
        let nest = nesting::Nesting::new(&all);
        let mut groups = crate::analysis::instances::groups(&all, &nest, rule);
        groups.retain(|g| !ops::is_op(&g.name) && !library.contains(&g.name));
        let mut scan = scan::Scan::with(&all, std::borrow::Cow::Borrowed(&nest), captured);
        // Read before the stream (the kernels watched are named by it); a broken string table
        // is reported after the stream, which names the tables it needs first.
        let strings = db.strings();
        scan.watched = Some(scan::Watched::of(
            strings
                .iter()
                .flatten()
                .filter(|(_, n)| crate::analysis::attention::watched(n))
                .map(|(id, _)| *id)
                .collect(),
        ));
        if let Some(req) = shapes_of {
            scan.shapes = Some(scan::ShapeScope {
                range: req.range.clone(),
                kernels: db.string_ids(&req.mangled)?.into_iter().collect(),
                tally: Default::default(),
            });
        }
        let mut ledger = ledger::Builder::new(&all, &nest);
        // The loop around the captured range: its gaps' kernels and ledger, in the same pass.
        let between = cadence::Between::of(&all, &nest, captured);
        let mut gap_scan = scan::Scan::with(
            &between.ranges,
            std::borrow::Cow::Borrowed(&between.nest),
            None,
        );
        let mut gap_ledger = ledger::Builder::new(&between.ranges, &between.nest);
        let graph_launches = db.stream(
            &mut crate::parse::sqlite::Tee(&mut scan, &mut gap_scan),
            &mut crate::parse::sqlite::Tee(&mut ledger, &mut gap_ledger),
        )?;
        let cycle = between.finish(
            &all,
            |i| scan.instance(i),
            |g| gap_scan.instance(g),
            gap_ledger.finish(),
        );
        if rule == crate::analysis::instances::Rule::Auto {
            let first_use = ledger.first_use();
            crate::analysis::instances::set_apart_compiling(
                &all,
                &mut groups,
                |i| first_use[i],
                |name| !ops::is_op(name) && !library.contains(name),
            );
        }
        let group_of: pysamples::GroupOf = groups
            .iter()
            .flat_map(|g| g.groups.iter().map(move |grp| (g, grp)))
            .flat_map(|(g, grp)| {
                grp.ranges.iter().map(|&i| {
                    let key = (all[i].start, all[i].tid);
                    (key, (g.name.clone(), grp.label.clone()))
                })
            })
            .collect();
        let graphs = graphs::per_range(&all, &nest, &graph_launches);
        // Each group's GPU busy share, from its own instances.
        for grp in groups.iter_mut().flat_map(|g| g.groups.iter_mut()) {
            for &i in &grp.ranges {
                let inst = scan.instance(i);
                let (ns, n) = inst.kernels();
                grp.kernel_ns = grp.kernel_ns.saturating_add(ns);
                grp.launches += u64::from(n);
                grp.graph_kernels += u64::from(inst.graph_kernels());
            }
            let figures: Vec<(i64, i64, i64)> = grp
                .ranges
                .iter()
                .map(|&i| {
                    let inst = scan.instance(i);
                    (
                        (all[i].end - all[i].start).max(0),
                        inst.proj_ns(),
                        inst.busy_ns(),
                    )
                })
                .collect();
            grp.set_busy(figures.into_iter());
        }
        let strings = strings?;
        let attention = scan
            .watched_by_range()
            .into_iter()
            .filter_map(|t| {
                Some(crate::analysis::attention::Tally {
                    range: t.range.to_string(),
                    kernel: strings.get(&t.kernel)?.clone(),
                    ns: t.ns,
                    launches: t.launches,
                })
            })
            .collect();
        let shapes = scan.shapes.as_ref().map(|t| t.tally.shapes(&strings));
        let operators = match has_ops {
            true => ops::table(&all, &scan.ops, &strings),
            false => Vec::new(),
        };
        let nested = crate::analysis::ranges::nested_in_own_name(&all, &nest);
        let (mut stats, kernel_rows, mangled, blocks) = (
            scan.stats(),
            scan.kernel_rows(&strings),
            scan.mangled_names(&strings),
            scan.kernel_blocks(&strings),
        );
        for st in &mut stats {
            st.nested_in_own_name = nested.get(st.name.as_str()).copied().unwrap_or(0);
        }
        let work = captured.map_or_else(Vec::new, |name| {
            crate::analysis::work::of_range(
                &all,
                &nest,
                name,
                |i| u64::from(scan.instance(i).kernels().1),
                |n| !ops::is_op(n) && !library.contains(n),
            )
        });
        // The instances' figures go before the ledger's are aggregated: at most one set held.
        drop(scan);
        let mut ledger = ledger.finish();
        name_compiled(db, &mut ledger)?;
        let phases = match has_ops {
            true => all.into_iter().filter(|r| !ops::is_op(&r.name)).collect(),
            false => all,
        };
        Ok(Timeline {
            shapes,
            phases,
            stats,
            kernel_rows,
            mangled,
            blocks,
            operators,
            ledger,
            graphs,
            groups,
            group_of,
            cycle,
            attention,
            work,
        })
    }
}

/// Each range's kernels whose first launch followed a load of GPU code, by name, most first.
fn name_compiled(db: &NsysDb, ledger: &mut [ledger::RangeLedger]) -> Result<(), Error> {
    for l in ledger.iter_mut().filter(|l| !l.loads_then.is_empty()) {
        let names = db.kernels_of_calls(&l.loads_then)?;
        let mut count: BTreeMap<&str, u32> = BTreeMap::new();
        for c in &l.loads_then {
            if let Some(n) = names.get(c) {
                *count.entry(n.as_str()).or_default() += 1;
            }
        }
        let mut named: Vec<(String, u32)> =
            count.into_iter().map(|(n, c)| (n.to_string(), c)).collect();
        named.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        l.compiled_for = named;
        l.loads_then = Vec::new();
    }
    Ok(())
}

/// The nsys stats CSVs (a multi-rank run has one set per rank: its kernel table is their sum,
/// its other single-rank views are its first rank's).
pub(super) struct Stats {
    pub(super) rank_data: Vec<ranks::RankData>,
    pub(super) kernels: Option<Vec<KernelSum>>,
    pub(super) ranges: Option<Vec<RangeSum>>,
    pub(super) api: Option<Vec<ApiSum>>,
    pub(super) kern_sum_file: String,
    pub(super) nvtx_sum: PathBuf,
    pub(super) api_sum: PathBuf,
}

impl Stats {
    pub(super) fn load(run: &RunDir) -> Result<Stats, Error> {
        let rank_data = ranks::load(run)?;
        let first_rank = rank_data.first().map(|r| r.rank);
        let first = |report: &str| {
            let p = run.nsys_stats(report, None);
            match first_rank {
                Some(r) if !p.is_file() => run.nsys_stats(report, Some(r)),
                _ => p,
            }
        };
        let kernels = match optional(&run.kern_sum(None), nsys::read_kernels)? {
            None if !rank_data.is_empty() => Some(ranks::merged(&rank_data)),
            k => k,
        };
        let (nvtx_sum, api_sum) = (first("nvtx_sum"), first("cuda_api_sum"));
        let mut ranges = optional(&nvtx_sum, nsys::read_ranges)?;
        if let Some(r) = ranges.as_mut() {
            r.retain(|r| !ops::is_op(r.name()));
        }
        let api = optional(&api_sum, nsys::read_api)?;
        let kern_sum_file = match rank_data.is_empty() {
            true => KERN_SUM.to_string(),
            false => "nsys/summary.rank<N>_cuda_gpu_kern_sum.csv, summed over ranks".to_string(),
        };
        Ok(Stats {
            rank_data,
            kernels,
            ranges,
            api,
            kern_sum_file,
            nvtx_sum,
            api_sum,
        })
    }
}

/// The SQLite export (a multi-rank run's first rank's) and what one pass over it gives.
pub(super) fn timeline(
    run: &RunDir,
    first_rank: Option<u32>,
    focus: &Focus,
    rule: crate::analysis::instances::Rule,
    shapes_of: Option<&ShapeRequest>,
) -> Result<(PathBuf, Option<NsysDb>, Option<Timeline>), Error> {
    let sqlite = match first_rank {
        Some(r) if !run.nsys_sqlite(None).is_file() => run.nsys_sqlite(Some(r)),
        _ => run.nsys_sqlite(None),
    };
    let there = crate::files::present(&sqlite)
        .map_err(|e| Error::parse(&sqlite, None, format!("cannot read: {e}")))?;
    let db = there.then(|| NsysDb::open(&sqlite)).transpose()?;
    if let Some(db) = &db {
        crate::analysis::kernels::untraced(&db.cuda_trace()?, &sqlite)?;
    }
    let t = match &db {
        Some(db) => Some(Timeline::read(db, focus, rule, shapes_of)?),
        None => None,
    };
    Ok((sqlite, db, t))
}

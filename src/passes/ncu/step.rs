//! One instance of ncu's range measured whole where it launches CUDA graphs (`ncu.graph_step`).
//! ncu profiles each graph launch as one workload (`--graph-profiling graph`), and the kernels
//! launched outside graphs one by one, so the instance's DRAM bytes are what the GPU moved
//! running it, not a sum of kernels replayed alone (whose caches start cold each time). Which
//! instance, and how many workloads ncu skips to reach it, come from the nsys export; the
//! metrics cache keeps the result for re-runs of the same command on the same GPU.

use std::path::{Path, PathBuf};

use super::{cache, reuse, window_args};
use crate::analysis::graphs::{choose_step, step_work, StepChoice, DRAM_READ, DRAM_WRITE};
use crate::config::{GraphStep, Launcher, Ncu};
use crate::parse::ncu::TIME;
use crate::passes::{process, progress::Progress, run_step, with_program, Ctx};
use crate::rundir::status::{GraphStepRecord, GraphStepState};

/// What the step runs, decided with the ncu plan.
pub(crate) struct StepPlan {
    pub(crate) range: String,
    pub(crate) choice: StepChoice,
    pub(crate) argv: Vec<String>,
    pub(crate) import: Vec<String>,
    pub(crate) report: PathBuf,
    pub(crate) csv: PathBuf,
    /// Where the metrics cache keeps this step (None: the cache is not used).
    pub(crate) entry: Option<PathBuf>,
    /// The cached measurement this run takes (None: ncu runs).
    pub(crate) hit: Option<Entry>,
    /// Predicted seconds of the ncu run (set with the pass's cost plan).
    pub(crate) eta_s: Option<f64>,
    /// How long its ncu may run, and where that comes from (`ncu.budget_s`, as the kernel
    /// pass's): a workload that never reaches the instance is stopped there, not run to its
    /// end under ncu.
    pub(crate) budget: Option<(std::time::Duration, String)>,
    /// Its own copy of the workload, held from the kernel pass's start (set where the kernel
    /// pass attaches to one).
    pub(crate) early: Option<StepEarly>,
}

/// The step's held copy: the launch and the attach that measures the instance, program first.
pub(crate) struct StepEarly {
    pub(crate) port: Option<u16>,
    pub(crate) launch: Vec<String>,
    pub(crate) attach: Vec<String>,
    /// What the held copy's environment adds to the workload's ([`super::early::held_env`]).
    pub(crate) env: Vec<(String, String)>,
}

/// The step's launch and attach, on ports of their own (None: the step line has no `-o`).
/// `env`: the workload's own variables.
pub(crate) fn hold_plan(
    argv: &[String],
    workload: &[String],
    env: &[(String, String)],
) -> Option<StepEarly> {
    let port = super::early::free_ports();
    let attach = super::early::attach_argv(argv, port)?;
    let launch = with_program(
        Path::new(argv.first()?),
        super::early::launch_args(workload, port),
    );
    Some(StepEarly {
        port,
        launch,
        attach,
        env: super::early::held_env(env),
    })
}

/// Start the step's copy now, held at its first CUDA call: its start-up runs while the kernel
/// pass profiles (one more start of the workload otherwise: measured on an H200, static cache,
/// 8 s of the step's 19 s came before ncu's first workload).
pub(crate) fn hold(ctx: &Ctx, p: &StepPlan) -> Option<super::early::Held> {
    let e = p.early.as_ref().filter(|_| p.hit.is_none())?;
    let log = ctx.run.ncu("graph-step-workload.log");
    let spec = ctx.spec(Path::new(&e.launch[0]), e.launch[1..].to_vec(), log);
    Some(super::early::Held::start(spec, e.port))
}

/// The step for ncu's range `range` (as the export names it) and include expression, when
/// `ncu.graph_step` asks for one and the export shows graph launches in the range.
pub(crate) fn plan(
    ctx: &Ctx,
    program: &Path,
    (include, range): (Option<&str>, Option<&str>),
    base: &str,
    device: Option<&cache::Device>,
) -> Option<StepPlan> {
    let cfg = ctx.cfg;
    // Under a launcher every rank would have to stop at the same workload: not attempted.
    if cfg.ncu.graph_step == GraphStep::Off || cfg.workload.launcher != Launcher::None {
        return None;
    }
    let (include, range) = (include?, range?);
    let sqlite = ctx.run.single_or_rank0_sqlite();
    if !sqlite.is_file() {
        return None;
    }
    let per_instance = crate::parse::sqlite::NsysDb::open(&sqlite).and_then(|db| {
        let ranges = db.ranges()?;
        Ok((
            step_work(&db, &ranges, range)?,
            typical(cfg, &ranges, range),
        ))
    });
    let choice = match per_instance {
        Ok((w, typical)) => choose_step(&w, &typical)?,
        Err(e) => {
            tracing::warn!("cannot read the CUDA graph launches of `{range}`: {e}");
            return None;
        }
    };
    let out = ctx.run.ncu(&format!("{base}.graph-step"));
    let mut argv = with_program(
        program,
        step_args(&cfg.ncu, include, &choice, &out, &ctx.workload.argv),
    );
    argv.splice(1..1, window_args(ctx.ncu));
    let report = ctx.run.ncu(&format!("{base}.graph-step.ncu-rep"));
    let entry = match (reuse::unusable(ctx, device), device) {
        (None, Some(d)) => cache::default_dir(cfg.ncu.cache.dir.as_deref())
            .map(|dir| entry_path(&dir, d, &cfg.ncu, range, &choice, &ctx.workload.argv)),
        _ => None,
    };
    let hit = entry
        .as_deref()
        .and_then(|e| served(e, choice.work.kernel_ns, cfg.ncu.cache.duration_tolerance));
    Some(StepPlan {
        range: range.to_string(),
        import: with_program(program, super::import_args(&report)),
        csv: ctx.run.ncu(&format!("{base}.graph-step.csv")),
        choice,
        argv,
        report,
        entry,
        hit,
        eta_s: None,
        budget: None,
        early: None,
    })
}

/// `ncu ...` arguments of the step (without the program): the range's workloads from the
/// chosen instance's first to its last, each graph whole, then ncu ends the workload.
pub(crate) fn step_args(
    cfg: &Ncu,
    include: &str,
    c: &StepChoice,
    out_base: &Path,
    workload: &[String],
) -> Vec<String> {
    let mut a: Vec<String> = ["--target-processes", "all", "--nvtx", "--nvtx-include"]
        .map(String::from)
        .to_vec();
    a.push(include.to_string());
    a.extend(["--graph-profiling".into(), "graph".into()]);
    // The instance by its number among the range's instances (ncu counts those its include
    // matches), not by the workloads before it: a warm-up that compiles or autotunes launches
    // other counts from one run to the next, the number of instances it spans stays. An
    // include of nested ranges numbers the innermost inside its parents, which the export's
    // count does not follow: the skip then.
    match single_range(include) {
        true => a.extend(["--range-filter".into(), format!("::{}", c.instance)]),
        false if c.skip > 0 => a.extend(["--launch-skip".into(), c.skip.to_string()]),
        false => {}
    }
    a.extend([
        "--launch-count".into(),
        c.work.workloads().to_string(),
        "--kill".into(),
        "on".into(),
        "--metrics".into(),
        [TIME, DRAM_READ, DRAM_WRITE].join(","),
    ]);
    if let Some(cc) = cfg.clock_control {
        a.extend(["--clock-control".into(), cc.as_str().to_string()]);
    }
    a.extend(cfg.extra_args.iter().cloned());
    a.extend(["-o".into(), out_base.display().to_string()]);
    a.extend(workload.iter().cloned());
    a
}

/// The 0-based ordinals of `range`'s most numerous group of instances (the report's grouping,
/// `report.instances`), where they fall into several; empty otherwise.
fn typical(
    cfg: &crate::config::Config,
    ranges: &[crate::parse::sqlite::NvtxRange],
    range: &str,
) -> Vec<usize> {
    use crate::analysis::instances::{groups_of, Rule};
    let rule = Rule::parse(&cfg.report.instances).unwrap_or(Rule::Auto);
    let nest = crate::analysis::nesting::Nesting::new(ranges);
    groups_of(ranges, &nest, rule, Some(range))
        .first()
        .and_then(|g| g.typical())
        .map(|g| g.members.clone())
        .unwrap_or_default()
}

/// An include expression that names one range with no parents (`decode/`, `dom@decode/`, a
/// start/end `decode`): the instances ncu numbers are the export's instances of that name.
fn single_range(include: &str) -> bool {
    let e = include.trim();
    let e = e.rsplit_once('@').map_or(e, |(_, r)| r);
    let name = e.strip_suffix('/').unwrap_or(e);
    !e.starts_with("regex:")
        && !name.is_empty()
        && !name.contains(['/', '*', '[', ']'])
        && crate::config::range_of(include).as_deref() == Some(name)
}

/// Measure the planned step, or take it from the cache; the record says which, or why not.
pub(crate) fn run(
    ctx: &Ctx,
    p: &StepPlan,
    progress: &Progress,
    held: Option<super::early::Held>,
) -> GraphStepRecord {
    let c = &p.choice;
    let mut rec = GraphStepRecord {
        range: p.range.clone(),
        instance: c.instance,
        skip: c.skip,
        graphs: c.work.graphs,
        kernels: c.work.kernels,
        kernel_ns: c.work.kernel_ns,
        csv: ctx.run.relative(&p.csv),
        state: GraphStepState::NotMeasured,
        note: None,
        duration_s: None,
    };
    let began = std::time::Instant::now();
    if let Some(hit) = &p.hit {
        // Read when the plan was made: copied, not read again.
        match crate::rundir::status::write_atomic_raw(&p.csv, hit.csv.as_bytes()) {
            Ok(()) => {
                tracing::info!(
                    "`{}` instance {} measured whole: from the metrics cache (run {})",
                    p.range,
                    c.instance,
                    hit.run
                );
                rec.state = GraphStepState::Cached;
                rec.note = Some(hit.run.clone());
                return rec;
            }
            Err(e) => tracing::warn!("cannot use the cached graph step ({e}); measuring it"),
        }
    }
    // The prediction goes in the words: the line's "left" would not count down without
    // ncu's progress to go by.
    progress.handle().update(|s| {
        s.stage = format!(
            "`{}` instance {} whole (graphs{})",
            p.range,
            c.instance,
            p.eta_s
                .map(|e| format!(", about {e:.0} s in all"))
                .unwrap_or_default()
        );
        s.count = None;
        s.left_s = None;
    });
    tracing::info!(
        "ncu: measuring `{}` instance {} whole ({}; --graph-profiling graph){}",
        p.range,
        c.instance,
        c.work.describe(),
        p.eta_s
            .map(|s| format!(", about {s:.0} s"))
            .unwrap_or_default()
    );
    let log = ctx.run.ncu("graph-step.log");
    let out = measure(ctx, p, held, &log);
    rec.duration_s = Some(began.elapsed().as_secs_f64());
    let out = match out {
        Ok(o) => o,
        Err(e) => return not_measured(rec, format!("cannot start ncu: {e}")),
    };
    if out.interrupted || !process::nonempty(&p.report) {
        let why = match (out.interrupted, &p.budget) {
            (true, _) => "interrupted".to_string(),
            (false, Some((b, from))) if out.timed_out && out.duration >= *b => format!(
                "stopped at its time budget of {:.0} s ({from}) before ncu wrote the instance's report",
                b.as_secs_f64()
            ),
            // The workload ended before the instance: fewer instances (or, under a skip,
            // fewer workloads before it) than in the nsys pass.
            (false, _) if out.tail.contains("were profiled") => format!(
                "ncu profiled nothing: this run of the workload ended before instance {} of `{}` ({} workloads before it in the nsys pass) ({})",
                c.instance,
                p.range,
                c.skip,
                out.describe()
            ),
            (false, _) => format!("ncu wrote no report ({})", out.describe()),
        };
        return not_measured(rec, format!("{why}; see {}", ctx.run.relative(&log)));
    }
    let mut import = ctx.spec(Path::new(&p.import[0]), p.import[1..].to_vec(), log);
    import.echo = false;
    import.stdout_file = Some(p.csv.clone());
    import.timeout = Some(crate::passes::nsys::post_step_timeout(
        ctx.cfg.ncu.timeout_s,
    ));
    let imported = run_step(&import);
    rec.duration_s = Some(began.elapsed().as_secs_f64());
    if let Err(why) = imported {
        return not_measured(rec, why);
    }
    rec.state = GraphStepState::Measured;
    if let Some(entry) = &p.entry {
        if let Err(e) = store(entry, &p.csv, &ctx.run.id(), c.work.kernel_ns) {
            tracing::warn!("cannot keep the graph step in the metrics cache: {e}");
        }
    }
    rec
}

/// Run the step's ncu: attached to its held copy where it has one that is ready, else
/// starting the workload (a line in cmd.txt says so).
fn measure(
    ctx: &Ctx,
    p: &StepPlan,
    held: Option<super::early::Held>,
    log: &Path,
) -> std::io::Result<process::Outcome> {
    let budget = p.budget.as_ref().map(|b| b.0);
    let run = |argv: &[String]| {
        let mut spec = ctx.spec(Path::new(&argv[0]), argv[1..].to_vec(), log.to_path_buf());
        spec.timeout = match (ctx.cfg.ncu_timeout(), budget) {
            (Some(t), Some(b)) => Some(t.min(b)),
            (t, b) => t.or(b),
        };
        process::run(&spec)
    };
    let attach = p.early.as_ref().map(|e| &e.attach);
    if let (Some(held), Some(attach)) = (held, attach) {
        let limit = ctx.cfg.ncu_timeout().unwrap_or(super::early::LISTEN_LIMIT);
        let why = match held.attach(limit, attach, run)?.0 {
            Ok(out) => return Ok(out),
            Err(not) => not.said("ncu/graph-step-workload.log"),
        };
        tracing::warn!("graph step: {why}; starting the workload under ncu as usual");
        let _ = super::append_cmd_txt(&ctx.workload.env, &ctx.run.ncu("cmd.txt"), &p.argv);
    }
    run(&p.argv)
}

fn not_measured(mut rec: GraphStepRecord, why: String) -> GraphStepRecord {
    tracing::warn!("the graph step was not measured: {why}");
    rec.note = Some(why);
    rec
}

/// A measured step as the cache keeps it: the raw import, the run that made it and the nsys
/// GPU time of the instance beside it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Entry {
    run: String,
    kernel_ns: i64,
    csv: String,
}

/// `<cache>/graph-step/<sha256>.json`, keyed by the GPU, the settings that change a result,
/// the range, which instance (its number: a warm-up that launches other counts from one run to
/// the next keeps it) and its graph launches, and the command.
fn entry_path(
    dir: &Path,
    device: &cache::Device,
    cfg: &Ncu,
    range: &str,
    c: &StepChoice,
    argv: &[String],
) -> PathBuf {
    use sha2::{Digest, Sha256};
    let key = format!(
        "{device:?}|{:?}|{:?}|{range}|{}|{}|{}",
        cfg.clock_control,
        cfg.extra_args,
        c.instance,
        c.work.graphs,
        argv.join("\u{1f}")
    );
    let hex: String = Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join("graph-step").join(format!("{hex}.json"))
}

/// A graph step's raw import is a few tens of KB (one instance's kernels); an entry or an
/// import past this is not one stage2 made.
const STEP_CAP: u64 = crate::files::RUN_FILE_CAP;

/// The entry, read as every cache file is: a regular file (a FIFO would block the run, a link
/// to `/dev/zero` grow it without end), of bounded size.
fn load(path: &Path) -> Option<Entry> {
    let text = crate::files::read_capped(path, STEP_CAP).ok()?;
    serde_json::from_str(&text).ok()
}

/// The entry when its instance's GPU time is within `tolerance` of this run's.
fn served(path: &Path, kernel_ns: i64, tolerance: f64) -> Option<Entry> {
    let e = load(path)?;
    let (a, b) = (e.kernel_ns as f64, kernel_ns as f64);
    ((a - b).abs() <= tolerance * a.max(b)).then_some(e)
}

fn store(path: &Path, csv: &Path, run: &str, kernel_ns: i64) -> std::io::Result<()> {
    let entry = Entry {
        run: run.to_string(),
        kernel_ns,
        csv: crate::files::read_capped(csv, STEP_CAP)?,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let text = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
    crate::rundir::status::write_atomic(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::graphs::StepWork;

    /// The instance is picked by its number where the include names one range (what ncu's
    /// `--range-filter` counts), by the workloads before it where the include nests ranges.
    #[test]
    fn the_instance_is_numbered_where_the_include_names_one_range() {
        for (include, single) in [
            ("decode/", true),
            ("llm@decode/", true),
            ("decode", true),
            ("generate/decode/", false),
            ("regex:dec.*/", false),
            ("dec*/", false),
            ("[decode/", false),
        ] {
            assert_eq!(single_range(include), single, "{include}");
        }
        let cfg = crate::testutil::config(&[]).ncu;
        let c = StepChoice {
            instance: 3,
            skip: 3301,
            work: StepWork {
                graphs: 1,
                kernels: 2,
                kernel_ns: 0,
            },
        };
        let args = |include| step_args(&cfg, include, &c, Path::new("o"), &[]).join(" ");
        assert!(
            args("decode/").contains("--range-filter ::3 --launch-count 3 "),
            "{}",
            args("decode/")
        );
        assert!(!args("decode/").contains("--launch-skip"));
        assert!(args("generate/decode/").contains("--launch-skip 3301 --launch-count 3 "));
    }
}

#[cfg(test)]
mod typical_tests {
    use super::*;

    /// The H100 capture of graph_loop.py (tests/data/hf/graph-step): its 40 steps group as a
    /// warm-up of 2 and 38 steady ones; the step measured is the steady group's first (instance
    /// 3), after the 10 workloads of the two before it, where the build that made the capture
    /// measured instance 2, a warm-up.
    #[test]
    fn the_graph_step_measures_a_steady_instance() {
        let sqlite =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hf/graph-step/nsys/run.sqlite");
        let db = crate::parse::sqlite::NsysDb::open(&sqlite).unwrap();
        let ranges = db.ranges().unwrap();
        let work = step_work(&db, &ranges, "step").unwrap();
        assert_eq!(work.len(), 40);
        let cfg = crate::testutil::config(&[]);
        let steady = typical(&cfg, &ranges, "step");
        assert_eq!(steady, (2..40).collect::<Vec<_>>());
        let c = choose_step(&work, &steady).unwrap();
        assert_eq!((c.instance, c.skip), (3, 10));
        assert_eq!((c.work.graphs, c.work.kernels), (2, 3));
        // Without groups: the second instance with graphs, as that build chose.
        assert_eq!(choose_step(&work, &[]).map(|c| c.instance), Some(2));
    }
}

//! The one loop every profiler pass goes through: skip or plan, write cmd.txt, check the disk,
//! run, classify, diagnose an empty capture, log, and record the outcome in status.json. A
//! pass only says what it runs ([`Pass::plan`], pure) and what its outcome means
//! ([`Pass::execute`]); everything around that is here, once.

use std::path::PathBuf;

use super::{guards, signals, write_cmd_txt, Ctx};
use crate::error::{Error, ToolError};
use crate::exit_codes;
use crate::rundir::status::{Cause, PassState, PassStatus, Status};

/// A profiler pass.
pub(crate) trait Pass {
    /// What the pass will run, computed before anything runs.
    type Plan;

    /// The pass's name in status.json and in its run-directory folder.
    fn name(&self) -> &'static str;

    /// Why the pass does not run this time (disabled, or a pre-check refused it).
    fn skip(&self, ctx: &Ctx) -> Option<PassStatus>;

    /// Pure: the plan from the config and what earlier passes left in the run directory.
    fn plan(&self, ctx: &Ctx) -> Result<Self::Plan, Error>;

    /// The command lines cmd.txt shows, in order, for a plan.
    fn commands(&self, plan: &Self::Plan) -> Vec<Vec<String>>;

    /// Variables the pass sets for its commands beside the workload's own (cmd.txt shows
    /// them, so a pasted line does what the pass did).
    fn env(&self, _ctx: &Ctx) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Run the plan (children through the process runner) and classify the outcome, post
    /// steps (exports, imports) included.
    fn execute(
        &self,
        ctx: &Ctx,
        plan: &Self::Plan,
        progress: &super::progress::Progress,
    ) -> Result<PassStatus, Error>;

    /// What the plan risks, said before it runs (after the disk's warnings).
    fn warnings(&self, _ctx: &Ctx, _plan: &Self::Plan) -> Vec<String> {
        Vec::new()
    }

    /// When the pass captured nothing: what the workload emits instead, if it can say.
    fn diagnose(&self, _ctx: &Ctx, _plan: &Self::Plan, _st: &PassStatus) -> Option<String> {
        None
    }

    /// What a dry run's plan leaves to be filled in once earlier passes have run (each part
    /// written as a placeholder in its command lines), one note each; cmd.txt ends with them.
    fn pending(&self, _plan: &Self::Plan) -> Vec<String> {
        Vec::new()
    }

    /// Facts of the plan the reports read back from status.json.
    fn record(&self, _plan: &Self::Plan, _st: &mut PassStatus) {}
}

/// The driver: owns status.json while the passes run.
pub(crate) struct Driver<'a> {
    pub(crate) ctx: &'a Ctx<'a>,
    pub(crate) status: Status,
    pub(crate) dry_run: bool,
}

impl Driver<'_> {
    /// Save status.json; a failure to write it is logged, never fatal to the run.
    pub(crate) fn save(&self) {
        if let Err(e) = self.status.write(&self.ctx.run.path) {
            tracing::warn!("cannot write status.json: {e}");
        }
    }

    /// Run one pass through the loop and record its outcome.
    /// An error that stops the run (a launcher that is missing, a disk that is full) is
    /// recorded as this pass's failure and the run's final state before it is returned: no
    /// status.json is left `running`.
    pub(crate) fn drive<P: Pass>(&mut self, pass: &P) -> Result<(), Error> {
        let ctx = self.ctx;
        let began = self.begin(pass, ctx);
        let ran = match &began {
            Ok(Begun::Ready(plan, _)) => Some(run(pass, ctx, plan, ctx.progress)),
            _ => None,
        };
        self.settle(pass.name(), finish(pass, ctx, began, ran))
    }

    /// Two passes at once, each with its own context (its own GPU): both planned, run side
    /// by side, then each outcome recorded as [`Driver::drive`] records one. An empty pass is
    /// diagnosed only once both have ended (the diagnosis reads the other pass's report).
    pub(crate) fn drive_pair<A, B>(
        &mut self,
        (a, actx): (&A, &Ctx),
        (b, bctx): (&B, &Ctx),
    ) -> Result<(), Error>
    where
        A: Pass + Sync,
        B: Pass + Sync,
        A::Plan: Sync,
        B::Plan: Sync,
    {
        let began_a = self.begin(a, actx);
        let began_b = self.begin(b, bctx);
        // Two lines redrawn in place would overwrite each other: plain lines instead.
        let mode = |ctx: &Ctx| match ctx.progress {
            super::progress::Mode::Tty => super::progress::Mode::Plain,
            m => m,
        };
        let (ra, rb) = std::thread::scope(|scope| {
            let tb = match &began_b {
                Ok(Begun::Ready(plan, _)) => {
                    Some(scope.spawn(move || run(b, bctx, plan, mode(bctx))))
                }
                _ => None,
            };
            let ra = match &began_a {
                Ok(Begun::Ready(plan, _)) => Some(run(a, actx, plan, mode(actx))),
                _ => None,
            };
            let rb = tb.map(|t| {
                t.join().unwrap_or_else(|_| {
                    Err(
                        ToolError::Unusable(format!("the {} pass stopped unexpectedly", b.name()))
                            .into(),
                    )
                })
            });
            (ra, rb)
        });
        let st_a = finish(a, actx, began_a, ra);
        let st_b = finish(b, bctx, began_b, rb);
        // Both outcomes are recorded, in order, before an error of either stops the run.
        let mut failed = Vec::new();
        for (name, st) in [(a.name(), st_a), (b.name(), st_b)] {
            match st {
                Ok(st) => self.settle(name, Ok(st))?,
                Err(e) => failed.push((name, e)),
            }
        }
        let mut first = None;
        for (name, e) in failed {
            first = first.or(self.settle(name, Err(e)).err());
        }
        first.map_or(Ok(()), Err)
    }

    /// Record an outcome; an error is recorded as the pass's failure, every pass not started
    /// is marked so, and the error is returned.
    fn settle(&mut self, name: &str, st: Result<PassStatus, Error>) -> Result<(), Error> {
        let st = match st {
            Ok(st) => st,
            Err(e) => {
                let st = PassStatus::failed(Cause::of(&e), Some(e.to_string()));
                self.status.set(name, st);
                for p in self.status.passes.values_mut() {
                    if matches!(p.state, PassState::Pending) {
                        *p = PassStatus::skipped("not started: an earlier step stopped the run");
                    }
                }
                self.status.finish(self.dry_run);
                self.save();
                return Err(e);
            }
        };
        report_pass(name, &st);
        self.status.set(name, st);
        self.save();
        Ok(())
    }

    /// Skip or plan, write cmd.txt, check the disk and mark the pass running; a pass that
    /// does not run (skipped, refused, a dry run) is done here.
    fn begin<P: Pass>(&mut self, pass: &P, ctx: &Ctx) -> Result<Begun<P::Plan>, Error> {
        let name = pass.name();
        // An interrupted run never ends `ok`: a pass it kept from starting says so.
        if signals::interrupted() {
            return Ok(Begun::Done(Box::new(PassStatus::new(
                PassState::Interrupted,
                Some("not started: the run was interrupted".into()),
            ))));
        }
        if let Some(st) = pass.skip(ctx) {
            return Ok(Begun::Done(Box::new(st)));
        }
        let plan = pass.plan(ctx)?;
        let cmd_txt: PathBuf = ctx.run.path.join(name).join("cmd.txt");
        // A pass whose folder the run directory was not made with (baseline) makes its own.
        if let Some(dir) = cmd_txt.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
        }
        let env = [ctx.workload.env.clone(), pass.env(ctx)].concat();
        write_cmd_txt(&cmd_txt, &env, &pass.commands(&plan))
            .map_err(|e| Error::io("write", &cmd_txt, e))?;
        if self.dry_run {
            tracing::info!("{name} pass: writing its command lines (dry run)");
            let pending = pass.pending(&plan);
            write_pending(&cmd_txt, &pending).map_err(|e| Error::io("write", &cmd_txt, e))?;
            for note in &pending {
                tracing::info!("{name} pass (dry run): {note}");
            }
            let why = (!pending.is_empty()).then(|| {
                format!("dry run: parts of its command lines are filled in by a real run ({name}/cmd.txt says which)")
            });
            let mut st = PassStatus::new(PassState::Planned, why);
            pass.record(&plan, &mut st);
            return Ok(Begun::Done(Box::new(st)));
        }
        tracing::info!("{name} pass: running");
        let mut before = guards::warnings(ctx.cfg, name, guards::free_gb(&ctx.run.path));
        before.extend(pass.warnings(ctx, &plan));
        for w in &before {
            tracing::warn!("{name}: {w}");
        }
        self.status
            .set(name, PassStatus::new(PassState::Running, None));
        self.save();
        Ok(Begun::Ready(plan, before))
    }
}

/// A dry run's notes after its command lines, as shell comments (pasting cmd.txt whole still
/// runs only the commands).
fn write_pending(cmd_txt: &std::path::Path, notes: &[String]) -> std::io::Result<()> {
    if notes.is_empty() {
        return Ok(());
    }
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(cmd_txt)?;
    for n in notes {
        writeln!(f, "# dry run: {}", n.replace('\n', " "))?;
    }
    Ok(())
}

/// A pass after [`Driver::begin`]: done already, or planned with the disk's warnings.
enum Begun<Plan> {
    Done(Box<PassStatus>),
    Ready(Plan, Vec<String>),
}

/// Execute a planned pass with its progress line.
fn run<P: Pass>(
    pass: &P,
    ctx: &Ctx,
    plan: &P::Plan,
    mode: super::progress::Mode,
) -> Result<PassStatus, Error> {
    let progress = super::progress::Progress::start(pass.name(), mode);
    let st = pass.execute(ctx, plan, &progress);
    drop(progress);
    st
}

/// The disk's warnings first, an empty capture diagnosed, the plan's facts recorded.
fn end<P: Pass>(
    pass: &P,
    ctx: &Ctx,
    plan: &P::Plan,
    before: Vec<String>,
    mut st: PassStatus,
) -> PassStatus {
    st.warnings.splice(0..0, before);
    if st.state == PassState::NoData && !signals::interrupted() {
        if let Some(more) = pass.diagnose(ctx, plan, &st) {
            let reason = st.reason.take().unwrap_or_default();
            st.reason = Some(format!("{reason}\n{more}"));
        }
    }
    pass.record(plan, &mut st);
    st
}

/// A pass's outcome from what [`Driver::begin`] and [`run`] gave.
fn finish<P: Pass>(
    pass: &P,
    ctx: &Ctx,
    began: Result<Begun<P::Plan>, Error>,
    ran: Option<Result<PassStatus, Error>>,
) -> Result<PassStatus, Error> {
    match (began?, ran) {
        (Begun::Done(st), _) => Ok(*st),
        // A signal before the pass's profiler could be told of it ends the pass, not the run:
        // the next passes are not started and the reports are written of what finished.
        (Begun::Ready(plan, before), Some(Err(Error::Interrupted(when)))) => {
            let why = format!("interrupted {when}; what finished before it is kept");
            let st = PassStatus::new(PassState::Interrupted, Some(why));
            Ok(end(pass, ctx, &plan, before, st))
        }
        (Begun::Ready(plan, before), Some(st)) => Ok(end(pass, ctx, &plan, before, st?)),
        (Begun::Ready(..), None) => {
            Err(ToolError::Unusable(format!("the {} pass did not run", pass.name())).into())
        }
    }
}

/// One log line per pass outcome, then its warnings.
pub(crate) fn report_pass(pass: &str, st: &PassStatus) {
    let state = serde_json::to_value(st.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let took = st
        .duration_s
        .map(|d| format!(" in {d:.1} s"))
        .unwrap_or_default();
    match &st.reason {
        Some(r) if st.exit_code != exit_codes::OK => {
            tracing::error!("{pass} pass: {state}{took}: {r}")
        }
        Some(r) => tracing::info!("{pass} pass: {state}{took}: {r}"),
        None => tracing::info!("{pass} pass: {state}{took}"),
    }
    for w in &st.warnings {
        tracing::warn!("{pass}: {w}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::passes::ncu::NcuPass;
    use crate::passes::nsys::NsysPass;
    use crate::passes::workload::Workload;
    use crate::rundir::RunDir;

    /// A run directory in a temp dir, with its config and workload, for a `Ctx`.
    fn fixture(overrides: &[&str]) -> (tempfile::TempDir, Config, RunDir, Workload) {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = crate::testutil::config(overrides);
        let run = RunDir::create(tmp.path(), Some("r")).unwrap();
        let workload = crate::passes::workload::build(&cfg, &run.stage1()).unwrap();
        (tmp, cfg, run, workload)
    }

    fn quiet<'a>(cfg: &'a Config, run: &'a RunDir, workload: &'a Workload) -> Ctx<'a> {
        Ctx {
            cfg,
            // Leaked: a test's few bytes, for a scope that lives as long as the config.
            ncu: Box::leak(Box::new(crate::config::NcuTarget::of(cfg))),
            run,
            workload,
            echo: false,
            progress: crate::passes::progress::Mode::Off,
        }
    }

    /// Both passes planned and driven as a dry run: command lines and status, nothing run
    /// (the programs named do not exist).
    #[test]
    fn plans_are_pure_and_a_dry_run_records_them() {
        let (_tmp, cfg, run, workload) = fixture(&[
            "workload.argv=[python3,w.py]",
            "nsys.nvtx_capture=decode@llm",
        ]);
        let ctx = quiet(&cfg, &run, &workload);
        let nsys = NsysPass {
            tool: Some("/no/such/nsys".into()),
            profiled: None,
            reuse: None,
            metric_set: None,
        };
        let plan = nsys.plan(&ctx).unwrap();
        let lines = nsys.commands(&plan);
        assert_eq!(lines.len(), 3, "profile, stats, export: {lines:?}");
        assert_eq!(lines[0][0], "/no/such/nsys");
        assert!(lines[0].contains(&"--nvtx-capture=decode@llm".to_string()));
        assert_eq!(lines[0][lines[0].len() - 2..], ["python3", "w.py"]);
        assert_eq!(plan.record.capture.range(), Some("decode"));
        assert!(!plan.record.capture.first_only());
        let ncu = NcuPass {
            tool: Some("/no/such/ncu".into()),
            refused: None,
            nsys: None,
            known_metrics: None,
            second_gpu: None,
            device: None,
            start: std::sync::Mutex::new(crate::passes::ncu::early::Start::Usual),
        };
        let plan = ncu.plan(&ctx).unwrap();
        // No nsys data yet: no kernel filter, so the unfiltered line is the profile line.
        assert!(plan.filter.is_none());
        assert_eq!(plan.profile, plan.unfiltered);
        assert_eq!(ncu.commands(&plan).len(), 4);

        let mut driver = Driver {
            ctx: &ctx,
            status: Status::new("r"),
            dry_run: true,
        };
        driver.drive(&nsys).unwrap();
        driver.drive(&ncu).unwrap();
        let st = Status::read(&run.path).unwrap();
        assert_eq!(st.passes["nsys"].state, PassState::Planned);
        assert_eq!(st.passes["ncu"].state, PassState::Planned);
        assert_eq!(
            st.passes["nsys"].nsys.as_ref().unwrap().capture.range(),
            Some("decode")
        );
        assert!(run.path.join("ncu/cmd.txt").is_file());
    }

    #[test]
    fn a_refused_or_disabled_pass_is_not_planned() {
        let (_tmp, cfg, run, workload) = fixture(&["workload.argv=[python3,w.py]"]);
        let ctx = quiet(&cfg, &run, &workload);
        let mut driver = Driver {
            ctx: &ctx,
            status: Status::new("r"),
            dry_run: false,
        };
        driver
            .drive(&NsysPass {
                reuse: None,
                metric_set: None,
                tool: None,
                profiled: None,
            })
            .unwrap();
        driver
            .drive(&NcuPass {
                tool: Some("/no/such/ncu".into()),
                refused: Some(Error::config("ncu.metrics: not known")),
                nsys: None,
                known_metrics: None,
                second_gpu: None,
                device: None,
                start: std::sync::Mutex::new(crate::passes::ncu::early::Start::Usual),
            })
            .unwrap();
        let st = &driver.status.passes;
        assert_eq!(st["nsys"].state, PassState::Skipped);
        assert_eq!(st["ncu"].state, PassState::Failed);
        assert_eq!(st["ncu"].exit_code, exit_codes::USAGE);
        assert!(!run.path.join("ncu/cmd.txt").exists());
    }

    /// Two passes at once whose programs cannot start: both failures are recorded, none is
    /// left running, and the first error is returned.
    #[test]
    fn a_pair_records_both_outcomes_when_both_fail_to_start() {
        let (_tmp, cfg, run, workload) = fixture(&[
            "workload.argv=[python3,w.py]",
            "nsys.nvtx_capture=prefill",
            "ncu.nvtx_include=decode",
        ]);
        let ctx = quiet(&cfg, &run, &workload);
        let mut driver = Driver {
            ctx: &ctx,
            status: Status::new("r"),
            dry_run: false,
        };
        let nsys = NsysPass {
            tool: Some("/no/such/nsys".into()),
            profiled: None,
            reuse: None,
            metric_set: None,
        };
        let ncu = NcuPass {
            tool: Some("/no/such/ncu".into()),
            refused: None,
            nsys: None,
            known_metrics: None,
            device: None,
            second_gpu: None,
            start: std::sync::Mutex::new(crate::passes::ncu::early::Start::Usual),
        };
        let err = driver.drive_pair((&nsys, &ctx), (&ncu, &ctx)).unwrap_err();
        assert!(err.to_string().contains("/no/such/nsys"), "{err}");
        let st = Status::read(&run.path).unwrap();
        for pass in ["nsys", "ncu"] {
            assert_eq!(st.passes[pass].state, PassState::Failed, "{pass}");
        }
        assert!(st.passes["ncu"]
            .reason
            .as_deref()
            .unwrap()
            .contains("/no/such/ncu"));
    }
}

//! Levers: what to change first and what it can buy, each sized per step from this run's
//! figures and ranked by that saving. A step is the captured range's instance, or its loop's
//! cycle where the loop decides (rules::LOOP_SHARE); the steady instances' where a warm-up or
//! compiling instances are set apart. What cannot move the wall time is no lever.

use super::super::{
    Claim, CpuVerdict, Figure, Findings, LeverKind, LeverUnit, Quantity, Scope, StepBasis,
};
use crate::analysis::roles::Attention;
use crate::analysis::Artifacts;
use crate::model::Bound;
use crate::rules;

pub(super) use super::sized::{Sized, Step};

/// The time per step the levers are sized against.
pub(super) fn step(a: &Artifacts, name: &str) -> Option<Step> {
    let c = a.captured().filter(|c| c.name == name)?;
    let n = a
        .range_stats
        .iter()
        .find(|r| r.name == name)
        .map_or(1, |r| r.instances.max(1)) as f64;
    let range = Scope::range(name);
    if let Some(l) = super::cycle::deciding(a, name) {
        return Some(Step {
            ms: l.median_cadence_ns / 1e6,
            scope: range.group("over its loop").instances(l.cycles),
            instances: n,
            basis: StepBasis::Loop,
        });
    }
    if let Some(g) = a.steady_group(name) {
        return Some(Step {
            // The longer of CPU wall and GPU projection: a prefill's kernels outlast its range.
            ms: g.median_wall_ns.max(g.median_time_ns) / 1e6,
            scope: range.group(&g.label).instances(g.instances),
            instances: n,
            basis: StepBasis::Steady,
        });
    }
    let mean = c.span_ns() / n / 1e6;
    // The median where one slow instance pulls the mean away from the rest.
    let median = a
        .range_stats
        .iter()
        .find(|r| r.name == name)
        .map(|r| r.wall_spread.median.max(r.proj_spread.median) / 1e6);
    let basis = match median {
        Some(m) if n >= 3.0 && m > 0.0 && (mean - m).abs() > rules::MEDIAN_STEP * m => {
            StepBasis::Median
        }
        _ => StepBasis::Mean,
    };
    Some(Step {
        ms: match basis {
            StepBasis::Median => median.unwrap_or(mean),
            _ => mean,
        },
        scope: range.instances(n as u64),
        instances: n,
        basis,
    })
}

/// The steady group of `name` where the instances set apart from it are a warm-up: they all
/// come first, and are at most rules::WARMUP_MAX_INSTANCES. Others recur (a new shape compiled
/// every few steps, or for every new KV length a serving loop meets): the steady step does
/// not pay them, but the loop pays them again and again.
fn warmed_up<'a>(a: &'a Artifacts, name: &str) -> Option<&'a crate::analysis::instances::Group> {
    let steady = a.steady_group(name)?;
    let groups = &a.instance_groups.iter().find(|g| g.name == name)?.groups;
    groups
        .iter()
        .filter(|g| g.label != steady.label)
        .all(|g| g.last < steady.first && g.instances as usize <= rules::WARMUP_MAX_INSTANCES)
        .then_some(steady)
}

/// The instances set apart from the steady ones, as one: their count, their median time and,
/// for two, each one's in start order (a median of two unlike instances describes neither).
fn set_apart(a: &Artifacts, name: &str) -> Option<(u64, f64, String, Vec<f64>)> {
    let steady = a.steady_group(name)?;
    let groups = &a.instance_groups.iter().find(|g| g.name == name)?.groups;
    let other = groups.iter().find(|g| g.label != steady.label)?;
    Some((
        other.instances,
        other.median_wall_ns.max(other.median_time_ns) / 1e6,
        other.label.clone(),
        other.walls_of_two.iter().map(|w| w / 1e6).collect(),
    ))
}

/// Compiling and loading GPU code in a range's instances: in every step; once, in a warm-up
/// before the steady steps (no lever: the step names the warm-up with its time); or again and
/// again in the steps set apart as compiling that are no warm-up (a serving loop meeting new
/// lengths).
enum Compiling {
    PerStep(f64),
    Once,
    Recurring {
        per_instance_ms: f64,
        min_ms: f64,
        max_ms: f64,
        instances: u64,
        total_ms: f64,
        captured_ms: f64,
    },
}

/// How the range's compiling is paid (see [`Compiling`]).
fn compile_cost(a: &Artifacts, name: &str, step: &Step) -> Compiling {
    let by = a.ledger_by_name();
    let Some(l) = by.get(name) else {
        return Compiling::PerStep(0.0);
    };
    if step.basis != StepBasis::Steady {
        return Compiling::PerStep(l.total.compile_within_ns as f64 / step.instances / 1e6);
    }
    let Some(steady) = a.steady_group(name) else {
        return Compiling::PerStep(0.0);
    };
    // Each instance's own parts hold its compiling, its child ranges' included.
    let outside: Vec<i64> = (0..l.per_instance.len())
        .filter(|i| !steady.members.contains(i))
        .map(|i| l.per_instance[i].compile_within_ns)
        .collect();
    if warmed_up(a, name).is_some() {
        return Compiling::Once;
    }
    let total_ms = outside.iter().sum::<i64>() as f64 / 1e6;
    let mut per: Vec<f64> = outside.iter().map(|&ns| ns as f64 / 1e6).collect();
    per.sort_by(f64::total_cmp);
    let captured_ms = a.captured().map_or(0.0, |c| c.span_ns() / 1e6);
    Compiling::Recurring {
        per_instance_ms: per.get(per.len() / 2).copied().unwrap_or(0.0),
        min_ms: per.first().copied().unwrap_or(0.0),
        max_ms: per.last().copied().unwrap_or(0.0),
        instances: per.len() as u64,
        total_ms,
        captured_ms,
    }
}

pub(super) fn levers(a: &Artifacts, out: &mut Findings) {
    let Some(name) = a.focus.range().map(str::to_string) else {
        return;
    };
    let Some(step) = step(a, &name).filter(|s| s.ms > 0.0) else {
        return;
    };
    let busy = busy_over(a, &step);
    let mut ev = vec![Figure::new(
        Quantity::StepMs,
        step.ms,
        &a.sqlite_file,
        &step.scope,
    )];
    if let Some(b) = busy {
        ev.push(Figure::new(
            Quantity::GpuWorkOfStepPct,
            b,
            &a.sqlite_file,
            &step.scope,
        ));
    }
    // The whole range where the step is its steady instances': the others are named too.
    let whole = Scope::range(&name).instances(step.instances as u64);
    let mut claim_scope = step.scope.clone();
    if let Some((n, ms, label, two)) =
        set_apart(a, &name).filter(|_| step.basis == StepBasis::Steady)
    {
        let scope = Scope::range(&name).group(&label).instances(n);
        let which = [Quantity::SetApartFirstMs, Quantity::SetApartSecondMs];
        for (q, w) in which.into_iter().zip(two) {
            ev.push(Figure::new(q, w, &a.sqlite_file, &scope));
        }
        ev.push(Figure::new(
            Quantity::SetApartMedianMs,
            ms,
            &a.sqlite_file,
            &scope,
        ));
        claim_scope = whole.clone();
    }
    if step.basis == StepBasis::Median {
        let r = a.range_stats.iter().find(|r| r.name == name);
        let c = a.captured().map(|c| c.span_ns());
        if let (Some(r), Some(total)) = (r, c) {
            let spread = |f: fn(&crate::analysis::ranges::Spread) -> f64| {
                f(&r.wall_spread).max(f(&r.proj_spread)) / 1e6
            };
            let per = |q, v| Figure::new(q, v, &a.sqlite_file, &claim_scope);
            ev.push(per(Quantity::MeanStepMs, total / 1e6 / step.instances));
            ev.push(per(Quantity::FastestInstanceMs, spread(|s| s.min)));
            ev.push(per(Quantity::SlowestInstanceMs, spread(|s| s.max)));
        }
    }
    let call_of = repeated_child(a, &name);
    if let Some((_, n)) = &call_of {
        ev.push(Figure::new(
            Quantity::StepsPerCall,
            *n,
            &a.sqlite_file,
            &claim_scope,
        ));
    }
    let per_call = call_of.is_some();
    out.push(
        Claim::Step {
            basis: step.basis,
            gpu_bound: busy.map(|b| b >= rules::GPU_IDLE.threshold),
            call_of: call_of.map(|c| c.0),
        },
        claim_scope,
        None,
        ev,
    );
    let fig = |q, v| Figure::new(q, v, &a.sqlite_file, &step.scope);
    let per_step = |kind, ms: f64| Sized {
        kind,
        pct: (100.0 * ms / step.ms).min(100.0),
        figures: vec![
            fig(Quantity::SavingMsPerStep, ms),
            fig(Quantity::SavingOfStepPct, (100.0 * ms / step.ms).min(100.0)),
        ],
    };
    let mut found: Vec<Sized> = Vec::new();
    // A one-off or recurring cost is not part of the steady step the other levers share.
    let mut compile_ms = 0.0;
    // Where steps set apart compile again and again, levers rank by what they save over the
    // captured instances: a steady step's saving counts in every instance.
    let mut per_mean = 1.0;
    match compile_cost(a, &name, &step) {
        Compiling::PerStep(ms) => {
            compile_ms = ms;
            found.push(per_step(LeverKind::Compile, ms));
        }
        // A warm-up's one-off compiling: the step names the warm-up with its time.
        Compiling::Once => {}
        Compiling::Recurring {
            per_instance_ms,
            min_ms,
            max_ms,
            instances,
            total_ms,
            captured_ms,
        } if captured_ms > 0.0 => {
            per_mean = step.ms * step.instances / captured_ms;
            let pct = 100.0 * total_ms / captured_ms;
            let all = |q, v| Figure::new(q, v, &a.sqlite_file, &whole);
            found.push(Sized {
                kind: LeverKind::Compile,
                pct,
                figures: vec![
                    all(Quantity::SavingMsPerCompilingStep, per_instance_ms),
                    all(Quantity::CompileMinMs, min_ms),
                    all(Quantity::CompileMaxMs, max_ms),
                    all(Quantity::CompilingSteps, instances as f64),
                    all(Quantity::SavingMsInCapture, total_ms),
                    all(Quantity::CapturedMs, captured_ms),
                    all(Quantity::SavingOfCapturePct, pct),
                ],
            });
        }
        Compiling::Recurring { .. } => {}
    }
    if let Some(b) = busy.filter(|b| *b < rules::GPU_IDLE.threshold) {
        // The GPU waits the rest of the step: the most that moving host work off it buys
        // (its compiling counted once, above).
        let wait = step.ms * (1.0 - b / 100.0);
        let (verdict, from_graphs) = idle_verdict(a, out, &name);
        let kind = LeverKind::HostWork {
            verdict,
            from_graphs,
        };
        let mut sized = per_step(kind, (wait - compile_ms).max(0.0));
        // A step that rewrites its whole KV cache grows it by concatenation: no CUDA graph can
        // record that, so the cache is preallocated first.
        if let Some(pct) = cache_rewritten(a, &name) {
            sized.figures.push(fig(Quantity::WriteOfKvPct, pct));
        }
        // Between a loop's steps, a call that waits for the GPU: a value read back each step.
        if let Some(ms) = sync_between(a, &name, &step) {
            sized.figures.push(fig(Quantity::SyncMsPerStep, ms));
        }
        found.push(sized);
    }
    if busy.is_some_and(|b| b >= rules::GPU_IDLE.threshold) {
        found.push(per_step(
            LeverKind::Bandwidth,
            bandwidth_ms(a, step.instances),
        ));
        let (ms, kernels) = unfused_ms(a, step.instances);
        let mut fuse = per_step(LeverKind::Fuse, ms);
        fuse.figures
            .push(fig(Quantity::UnfusedKernels, kernels as f64));
        found.push(fuse);
    }
    if let Some(c) = a.captured().filter(|c| c.nccl_wait_ns > 0.0) {
        let ms = c.nccl_wait_ns / step.instances / 1e6;
        found.push(per_step(LeverKind::LateRank, ms));
    }
    found.extend(super::batching::lever(a, &step, busy, compile_ms));
    found.extend(super::copies::lever(a, &step, busy));
    found.extend(super::scaling::lever(a, &step, busy));
    found.extend(super::spec::lever(a, &step));
    found.retain(|s| s.pct >= rules::LEVER_MIN_PCT);
    // Savings of the step and of its tokens first, by their share; then those that move the
    // wall time only after another lever.
    let group = |k: LeverKind| match k.per() {
        LeverUnit::Step | LeverUnit::Token => 0,
        LeverUnit::GpuWork => 1,
    };
    let over_capture = |s: &Sized| {
        s.figures
            .iter()
            .any(|f| f.quantity == Quantity::SavingOfCapturePct)
    };
    let key = |s: &Sized| match over_capture(s) {
        true => s.pct,
        false => s.pct * per_mean,
    };
    found.sort_by(|x, y| (group(x.kind).cmp(&group(y.kind))).then(key(y).total_cmp(&key(x))));
    for (rank, s) in found.into_iter().enumerate() {
        let scope = match over_capture(&s) {
            true => whole.clone(),
            false => step.scope.clone(),
        };
        let mut ev = vec![fig(Quantity::StepMs, step.ms)];
        ev.extend(s.figures);
        let compiled_for = match s.kind {
            LeverKind::Compile => compiled_for(a, out, &name),
            _ => Vec::new(),
        };
        // Loads before an attention kernel's first use: an attention library building a
        // kernel for each new shape (cuDNN's SDPA), which the opening names; cuDNN's own, whose
        // backend one setting turns off, and all the loads named.
        let loads = |pick: &dyn Fn(Option<Attention>) -> bool| -> u32 {
            compiled_for
                .iter()
                .filter(|(k, _)| pick(crate::analysis::roles::attention(k)))
                .map(|(_, n)| n)
                .sum()
        };
        let counts = [
            (Quantity::AttentionLoads, loads(&|k| k.is_some())),
            (
                Quantity::CudnnSdpaLoads,
                loads(&|k| k == Some(Attention::CudnnSdpa)),
            ),
            (Quantity::LoadsNamed, loads(&|_| true)),
        ];
        for (q, n) in counts.into_iter().filter(|(_, n)| *n > 0) {
            ev.push(Figure::new(q, f64::from(n), &a.sqlite_file, &scope));
        }
        let claim = Claim::Lever {
            lever: s.kind,
            rank: rank as u32 + 1,
            // The host work's band was measured on decode steps, not on whole calls of them.
            band: band(s.kind)
                .filter(|_| !(per_call && matches!(s.kind, LeverKind::HostWork { .. }))),
            compiled_for,
            per_call,
        };
        out.push(claim, scope, Some(rule(s.kind)), ev);
    }
}

/// The child range that runs most often inside each of `name`'s instances, where it runs at
/// least rules::CALL's count per instance on average and the instances hold several forward
/// passes: `name` is then a whole call of steps.
fn repeated_child(a: &Artifacts, name: &str) -> Option<(String, f64)> {
    // Forward passes of the model, as the hook's tokens marks count them: a range run per
    // layer repeats inside a step too, but the step holds one pass.
    if a.forwards.is_none_or(|f| f.per_step < 2) {
        return None;
    }
    let by = a.ledger_by_name();
    let n = a
        .range_stats
        .iter()
        .find(|r| r.name == name)?
        .instances
        .max(1) as f64;
    // The step's own child ranges: not PyTorch's operator ranges nor a library's (analysis::work).
    let own: std::collections::BTreeSet<&str> = a
        .step_work
        .iter()
        .flat_map(|w| w.children.iter().map(String::as_str))
        .collect();
    by.get(name)?
        .children
        .keys()
        .filter(|c| own.contains(c.as_str()))
        .filter_map(|c| {
            let k = a.range_stats.iter().find(|r| &r.name == c)?.instances as f64 / n;
            (k >= rules::CALL.threshold).then(|| (c.clone(), k))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
}

/// Where the loop decides the step: the time per cycle between instances spent in calls that
/// wait for the GPU, where it is at least rules::SYNC_BETWEEN of the step.
fn sync_between(a: &Artifacts, name: &str, step: &Step) -> Option<f64> {
    let l = super::cycle::deciding(a, name).filter(|_| step.basis == StepBasis::Loop)?;
    let ms = l.between.sync_ns as f64 / l.cycles.max(1) as f64 / 1e6;
    (100.0 * ms >= rules::SYNC_BETWEEN * step.ms).then_some(ms)
}

/// The step's bytes written as a share of its KV cache, where they are the whole cache within
/// the census's band (rules::CENSUS): the cache is rewritten every step.
fn cache_rewritten(a: &Artifacts, name: &str) -> Option<f64> {
    let (c, s) = (a.census.as_ref()?, a.steps()?);
    let kv = c
        .kv_bytes
        .filter(|kv| *kv > 0.0 && c.range == name && s.range == name)?;
    let pct = 100.0 * s.dram_write_bytes / kv;
    ((pct - 100.0).abs() <= rules::CENSUS.threshold).then_some(pct)
}

/// How busy the GPU is over the step the levers are sized against: its loop's, its steady
/// instances' or, for the mean instance, the whole range's (a steady group that is no warm-up
/// leaves the step the mean of every instance, and its busy share with it).
fn busy_over(a: &Artifacts, step: &Step) -> Option<f64> {
    let c = a
        .captured()
        .filter(|c| step.scope.range.as_deref() == Some(c.name.as_str()));
    match step.basis {
        StepBasis::Mean => c.map(|c| c.working_pct()),
        // The GPU's work per instance (the mean) over the median instance.
        StepBasis::Median => c.map(|c| {
            let mean = c.span_ns() / step.instances / 1e6;
            (c.working_pct() * mean / step.ms).min(100.0)
        }),
        StepBasis::Loop | StepBasis::Steady => super::gpu_busy(a).map(|(b, _)| b),
    }
}

/// The rule a lever kind is sized by.
fn rule(k: LeverKind) -> rules::Rule {
    match k {
        LeverKind::Batch { .. } => rules::SMALL_BATCH,
        LeverKind::Fuse => rules::FUSE,
        LeverKind::Fp8Scaling { .. } => rules::FP8_AROUND,
        LeverKind::WeightCopy { .. } => rules::WEIGHT_COPY,
        LeverKind::PlainDecode => rules::SPECULATION_SLOWER,
        LeverKind::Compile
        | LeverKind::HostWork { .. }
        | LeverKind::Bandwidth
        | LeverKind::LateRank => rules::LEVER,
    }
}

/// How a lever of this kind held when made for real: the host work of a CPU-bound eager step
/// (recorded in CUDA graphs or compiled) and compiling in the step (the backend that compiled
/// turned off) and more sequences in one pass were measured; every other kind was not.
fn band(k: LeverKind) -> Option<rules::Band> {
    match k {
        LeverKind::HostWork {
            verdict: Some(CpuVerdict::Cpu),
            from_graphs: false,
        } => Some(rules::HOST_WORK_BAND),
        LeverKind::Compile => Some(rules::COMPILE_BAND),
        LeverKind::Batch { forwards: 1, .. } => Some(rules::BATCH_BAND),
        LeverKind::HostWork { .. }
        | LeverKind::Fuse
        | LeverKind::Bandwidth
        | LeverKind::LateRank
        | LeverKind::Batch { .. }
        | LeverKind::WeightCopy { .. }
        | LeverKind::Fp8Scaling { .. }
        | LeverKind::PlainDecode => None,
    }
}

/// The kernels the range's compiling came before: as the range's idle verdict followed its
/// ledger into the child range that holds most of its time, else the range's own ledger's,
/// else its direct child ranges' together (a serving loop compiles inside its phases).
fn compiled_for(a: &Artifacts, out: &Findings, name: &str) -> Vec<(String, u32)> {
    let idle = out.made().find_map(|f| match &f.claim {
        Claim::GpuIdle { compiled_for, .. } if f.scope.range.as_deref() == Some(name) => {
            Some(compiled_for.clone())
        }
        _ => None,
    });
    if let Some(c) = idle.filter(|c| !c.is_empty()) {
        return c;
    }
    let by = a.ledger_by_name();
    let Some(l) = by.get(name) else {
        return Vec::new();
    };
    if !l.compiled_for.is_empty() {
        return l.compiled_for.clone();
    }
    let mut loads: std::collections::BTreeMap<&str, u32> = Default::default();
    for child in l.children.keys().filter_map(|c| by.get(c.as_str())) {
        for (k, n) in &child.compiled_for {
            *loads.entry(k.as_str()).or_default() += n;
        }
    }
    let mut all: Vec<(String, u32)> = loads.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
    all.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    all
}

/// What the GPU waits for: the ledger's verdict on the range where it has one, else the
/// largest part of the time between instances where the loop decides; and whether its kernels
/// already run from CUDA graphs.
fn idle_verdict(a: &Artifacts, out: &Findings, name: &str) -> (Option<CpuVerdict>, bool) {
    let graphs = a.captured().is_some_and(|c| c.graph_kernels > 0);
    let of_range = |f: &&crate::findings::Finding| f.scope.range.as_deref() == Some(name);
    let idle = out.made().filter(of_range).find_map(|f| match &f.claim {
        Claim::GpuIdle { verdict, .. } => Some(*verdict),
        _ => None,
    });
    let verdict = idle.unwrap_or_else(|| super::cycle::loop_verdict(a, name).and_then(|(_, v)| v));
    (verdict, graphs)
}

/// Per step, the time of the framework's unfused element-wise and reduction kernels, and how
/// many kinds of them ran.
fn unfused_ms(a: &Artifacts, instances: f64) -> (f64, usize) {
    let of: Vec<&crate::model::KernelRecord> = a
        .records
        .iter()
        .filter(|r| r.gpu_time_pct.is_some() && crate::analysis::roles::unfused(&r.name))
        .collect();
    let ns: f64 = of.iter().map(|r| r.total_time_ns).sum();
    (ns / instances / 1e6, of.len())
}

/// Per step, the time memory-bound kernels spend beyond what their bandwidth use needs: a
/// kernel at X% of the DRAM peak saves at most (1 - X) of its time.
fn bandwidth_ms(a: &Artifacts, instances: f64) -> f64 {
    a.records
        .iter()
        .filter(|r| r.bound == Some(Bound::Memory))
        .filter_map(|r| {
            let dram = r.dram_throughput_pct?;
            Some(r.total_time_ns * (1.0 - dram / 100.0).max(0.0))
        })
        .sum::<f64>()
        / instances
        / 1e6
}

#[cfg(test)]
pub(super) mod tests {
    use crate::findings::{Claim, Finding, LeverKind, Quantity};
    use crate::rules;

    /// The levers of a committed run, rank 1 first, as the reports get them.
    pub(crate) fn levers(path: &str) -> Vec<Finding> {
        let a = crate::testutil::artifacts(path);
        let all = crate::findings::derive(&a);
        let mut out: Vec<Finding> = all
            .made()
            .filter(|f| matches!(f.claim, Claim::Lever { .. }))
            .cloned()
            .collect();
        out.sort_by_key(|f| match f.claim {
            Claim::Lever { rank, .. } => rank,
            _ => 0,
        });
        out
    }

    pub(crate) fn kind(f: &Finding) -> LeverKind {
        match f.claim {
            Claim::Lever { lever, .. } => lever,
            _ => unreachable!("a lever"),
        }
    }

    fn band(f: &Finding) -> Option<rules::Band> {
        match f.claim {
            Claim::Lever { band, .. } => band,
            _ => None,
        }
    }

    /// The bands come from the measured table: a CPU-bound eager step's host work (the H200
    /// qwen2 decode, 0.86-0.94) and compiling in the step (the cuDNN loop, 1.001); host work
    /// of another verdict, and every other kind, has none.
    #[test]
    fn a_lever_carries_the_band_its_kind_was_measured_in() {
        let eager = levers("examples/sample-run-hf-eager");
        assert_eq!(eager.len(), 1);
        assert!(matches!(kind(&eager[0]), LeverKind::HostWork { .. }));
        assert_eq!(band(&eager[0]), Some(rules::HOST_WORK_BAND));
        let compile = levers("examples/sample-run");
        assert_eq!(kind(&compile[0]), LeverKind::Compile);
        assert_eq!(band(&compile[0]), Some(rules::COMPILE_BAND));
        // Compile-bound host work (the rest of the step beyond compiling) was never measured.
        assert!(matches!(kind(&compile[1]), LeverKind::HostWork { .. }));
        assert_eq!(band(&compile[1]), None);
        // Host work around CUDA graphs was not either.
        let graphs = levers("examples/sample-run-hf-static");
        assert_eq!(band(&graphs[0]), None);
        let ranks = levers("examples/sample-run-2gpu");
        assert_eq!(kind(&ranks[0]), LeverKind::LateRank);
        assert_eq!(band(&ranks[0]), None);
    }

    /// A per-token saving ranks by its share of the time per token among the per-step ones; a saving of the GPU's work in a host-bound step after those.
    #[test]
    fn levers_rank_by_their_share_and_unit() {
        let auto = levers("examples/sample-run-hf-auto");
        let shares: Vec<f64> = auto
            .iter()
            .filter_map(|f| {
                f.get(Quantity::SavingOfStepPct)
                    .or(f.get(Quantity::SavingOfTokenPct))
            })
            .collect();
        assert_eq!(shares.len(), 2);
        assert!(shares[0] > shares[1], "{shares:?}");
        let moe = levers("examples/sample-run-hf-moe");
        assert_eq!(kind(&moe[1]), LeverKind::WeightCopy { after_host: true });
        // Its share is of the GPU's work, larger than a share of the step it follows would be.
        assert!(moe[1].get(Quantity::SavingOfGpuWorkPct).unwrap() > 26.0);
    }
}

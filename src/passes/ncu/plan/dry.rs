//! A dry run's ncu lines: the lines a real run runs, with what only the nsys pass can decide
//! written as placeholders (the kernels it chooses in its export and how many, the held
//! workload's ports), and a note for each saying what fills it in.

use super::{early, with_env, KernelFilter, Kernels, NcuPass};
use crate::config::{Config, Shapes};
use crate::passes::Ctx;

/// The chosen kernels' mangled names, `|`-separated in ncu's regex.
pub(crate) const KERNELS: &str = "<kernels chosen from the nsys export>";
/// How many launches ncu profiles before it ends the workload.
pub(crate) const COUNT: &str = "<their number>";
/// The first of the free ports the held launch and its attach use.
pub(crate) const PORT: &str = "<free port>";

/// The kernels and launches a real run gets from the nsys export, as placeholders (no cache
/// lookup, no launch configurations: both need the export).
pub(super) fn after_nsys(cfg: &Config, multi: bool) -> Kernels {
    let filter = KernelFilter::Mangled(vec![KERNELS.to_string()]);
    let (launches, _, bound) = super::which_launches(cfg, multi, false, Some(&filter), None);
    Kernels {
        reuse: None,
        filter: Some(filter),
        shapes: None,
        launches,
        profiles: None,
        bound,
    }
}

/// `argv` with the placeholders where a count or a port would be.
pub(super) fn fill(mut argv: Vec<String>, count: bool) -> Vec<String> {
    for i in 1..argv.len() {
        match argv[i - 1].as_str() {
            "--launch-count" if count => argv[i] = COUNT.to_string(),
            "--port" => argv[i] = PORT.to_string(),
            _ => {}
        }
    }
    argv
}

impl NcuPass {
    /// The held launch and its attach, as a real run would write them (ports to be found).
    pub(super) fn dry_attach(
        &self,
        ctx: &Ctx,
        profile: &[String],
    ) -> Option<(Vec<String>, Vec<String>)> {
        let launch = self.with_prog(early::launch_args(&ctx.workload.argv, Some(0)));
        let launch = with_env(&early::held_env(&ctx.workload.env), fill(launch, false));
        Some((launch, fill(early::attach_argv(profile, Some(0))?, true)))
    }
}

/// What a real run fills in, one note per placeholder or difference. `lines`: the dry run's
/// ncu lines (what they hold decides which notes apply); `unfiltered`: the line a real run
/// falls back to where the export gives no kernel.
pub(super) fn notes(
    cfg: &Config,
    d: &early::Dry,
    lines: &[&[String]],
    unfiltered: &[String],
) -> Vec<String> {
    let has = |p: &str| lines.iter().any(|l| l.iter().any(|a| a.contains(p)));
    let mut out = Vec::new();
    if d.after_nsys && has(KERNELS) {
        let number = match has(COUNT) {
            true => format!(", and their number in place of {COUNT}"),
            false => String::new(),
        };
        let fallback = unfiltered
            .iter()
            .position(|a| a == "--kernel-id")
            .and_then(|i| unfiltered.get(i + 1))
            .map_or(String::new(), |id| {
                format!("; where it chooses none, ncu profiles each distinct kernel once (--kernel-name-base demangled --kernel-id {id})")
            });
        out.push(format!(
            "after the nsys pass, a real run puts the mangled names of the kernels it chooses in the nsys export (ncu.top_n, ncu.coverage; those the metrics cache holds are left to it) in place of {KERNELS}{number}{fallback}"
        ));
        if cfg.ncu.shapes != Shapes::First {
            out.push(format!(
                "with ncu.shapes={}, where the export shows the chosen kernels in several launch configurations, a real run measures each (--filter-mode per-launch-config, the workload run to its end)",
                match cfg.ncu.shapes {
                    Shapes::All => "all",
                    _ => "auto",
                }
            ));
        }
    }
    if has(PORT) {
        out.push(format!(
            "a real run starts the first ncu line as the nsys pass begins (ncu.early_start) and attaches with the second once the kernels are chosen, {PORT} being a block of free ports it finds then; where the nsys pass saw kernels in more than one process, or the metrics cache held every kernel of the last run, it runs one ncu line with the workload instead"
        ));
    }
    if lines.iter().any(|l| l.iter().any(|a| a == "--metrics")) {
        out.push("--metrics lists every metric the reports read; a real run drops those `ncu --query-metrics` does not list for this GPU".to_string());
    }
    out
}

//! Multi-rank workloads: the profiler runs inside the user's launcher (torchrun, srun,
//! mpirun), once per rank, so each rank writes its own report.

pub(crate) use crate::config::Launcher;
use crate::error::Error;

/// The launcher's own path, found on PATH.
pub(crate) fn find(l: Launcher) -> Result<Option<std::path::PathBuf>, Error> {
    if l == Launcher::None {
        return Ok(None);
    }
    which::which(l.program()).map(Some).map_err(|_| {
        Error::tool(format!(
            "workload.launcher={}: `{}` not found on PATH",
            l.program(),
            l.program()
        ))
    })
}

/// This program's own path, which each rank runs as `__rank-exec`.
pub(crate) fn stage2_exe() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "stage2".to_string())
}

/// What the ranks not chosen run: the workload alone (its last N arguments), or the whole argv
/// without the profiler's flags that start with a prefix (those before `-o`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Others {
    Workload(usize),
    Drop(String),
}

/// Run the profiler only on chosen ranks: `stage2 __rank-exec VAR RANKS N -- ARGV...` runs
/// ARGV where `$VAR` is one of RANKS, else only its last N arguments (the workload), or with
/// `--others-drop PREFIX`, ARGV without the flags that start with PREFIX. It replaces itself
/// with the program (exec), so signals and exit codes pass straight through.
pub(crate) fn rank_exec_args(
    stage2: &str,
    l: Launcher,
    ranks: &[u32],
    others: &Others,
    profiled: Vec<String>,
) -> Vec<String> {
    let ranks = ranks
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let (drop, len) = match others {
        Others::Workload(n) => (None, *n),
        Others::Drop(prefix) => (Some(format!("--others-drop={prefix}")), 0),
    };
    let mut a = vec![stage2.to_string(), "__rank-exec".into()];
    a.extend(drop);
    a.extend([l.rank_var().into(), ranks, len.to_string(), "--".into()]);
    a.extend(profiled);
    a
}

/// The argv `__rank-exec` runs for the rank in `rank_value`.
pub(crate) fn choose(
    rank_value: Option<&str>,
    ranks: &str,
    others: &Others,
    argv: &[String],
) -> Vec<String> {
    let mine = rank_value.unwrap_or("0").trim();
    if ranks.split(',').any(|r| r.trim() == mine) {
        return argv.to_vec();
    }
    match others {
        Others::Workload(n) => argv[argv.len().saturating_sub(*n)..].to_vec(),
        Others::Drop(prefix) => crate::passes::without_flags(argv, prefix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::config as cfg;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn each_launcher_wraps_the_per_rank_command() {
        let c = cfg(&[
            "workload.nproc_per_node=2",
            "workload.launcher_args=[--master-port=29600]",
        ]);
        let inner = s(&["nsys", "profile", "-o", "r.rank%q{RANK}", "python3", "w.py"]);
        assert_eq!(
            Launcher::Torchrun.wrap(&c.workload, inner.clone(), &[]).join(" "),
            "torchrun --nnodes 1 --nproc-per-node 2 --master-port=29600 --no-python nsys profile -o r.rank%q{RANK} python3 w.py"
        );
        assert!(Launcher::Srun
            .wrap(&c.workload, inner.clone(), &[])
            .join(" ")
            .starts_with("srun --nodes 1 --ntasks-per-node 2 --master-port=29600 nsys"));
        let env = [
            ("B".to_string(), "1".to_string()),
            ("A".to_string(), "2".to_string()),
        ];
        assert!(Launcher::Mpirun
            .wrap(&c.workload, inner.clone(), &env)
            .join(" ")
            .starts_with("mpirun -np 2 -x A -x B --master-port=29600 nsys"));
        assert_eq!(Launcher::None.wrap(&c.workload, inner.clone(), &env), inner);
        assert_eq!(Launcher::Srun.rank_macro(), "%q{SLURM_PROCID}");
        assert_eq!(Launcher::Mpirun.rank_var(), "OMPI_COMM_WORLD_RANK");
    }

    #[test]
    fn rank_exec_profiles_only_the_chosen_ranks() {
        let argv = s(&["ncu", "--set", "roofline", "-o", "x", "python3", "w.py"]);
        let bare = Others::Workload(2);
        assert_eq!(choose(Some("0"), "0", &bare, &argv), &argv[..]);
        assert_eq!(choose(Some("1"), "0", &bare, &argv), &argv[5..]);
        assert_eq!(choose(Some("3"), "1,3", &bare, &argv), &argv[..]);
        let a = rank_exec_args("stage2", Launcher::Torchrun, &[0], &bare, argv.clone());
        assert_eq!(a[..6].join(" "), "stage2 __rank-exec RANK 0 2 --");
    }

    /// The nsys pass's sampling on rank 0 alone: the others drop the `--gpu-metrics-*` flags
    /// before `-o` and keep the workload's own that happen to look alike.
    #[test]
    fn other_ranks_drop_the_sampling_flags_only() {
        let argv = s(&[
            "nsys",
            "profile",
            "--gpu-metrics-devices=0",
            "--gpu-metrics-frequency=50000",
            "-o",
            "r",
            "w",
            "--gpu-metrics-x",
        ]);
        let drop = Others::Drop("--gpu-metrics-".into());
        assert_eq!(choose(Some("0"), "0", &drop, &argv), &argv[..]);
        assert_eq!(
            choose(Some("1"), "0", &drop, &argv).join(" "),
            "nsys profile -o r w --gpu-metrics-x"
        );
        assert_eq!(
            choose(None, "0", &drop, &argv),
            &argv[..],
            "no rank variable reads as rank 0"
        );
        let a = rank_exec_args("stage2", Launcher::Srun, &[0], &drop, argv.clone());
        assert_eq!(
            a[..7].join(" "),
            "stage2 __rank-exec --others-drop=--gpu-metrics- SLURM_PROCID 0 0 --"
        );
    }
}

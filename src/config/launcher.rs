//! `workload.launcher`: how a multi-rank workload is started (torchrun, srun, mpirun), and the
//! launcher's argv around what each rank runs. The profiler runs inside the launcher, once per
//! rank, so each rank writes its own report.

use serde::{Deserialize, Serialize};

use super::Workload;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    None,
    Torchrun,
    Srun,
    Mpirun,
}

impl Launcher {
    pub(crate) fn program(self) -> &'static str {
        match self {
            Launcher::None => "",
            Launcher::Torchrun => "torchrun",
            Launcher::Srun => "srun",
            Launcher::Mpirun => "mpirun",
        }
    }

    /// The environment variable that holds a process's global rank under this launcher.
    pub(crate) fn rank_var(self) -> &'static str {
        match self {
            Launcher::None | Launcher::Torchrun => "RANK",
            Launcher::Srun => "SLURM_PROCID",
            Launcher::Mpirun => "OMPI_COMM_WORLD_RANK",
        }
    }

    /// The launcher's argv around `per_rank` (what each rank runs: the profiler and the
    /// workload, or the workload alone). None: no launcher, `per_rank` as is. `env` names the
    /// variables stage2 sets for the ranks: mpirun passes only those it is told (`-x`) to
    /// ranks on other nodes; torchrun and srun pass the whole environment on.
    pub(crate) fn wrap(
        self,
        w: &Workload,
        per_rank: Vec<String>,
        env: &[(String, String)],
    ) -> Vec<String> {
        let (n, nodes) = (w.nproc_per_node.max(1), w.nnodes.max(1));
        let mut a: Vec<String> = match self {
            Launcher::None => return per_rank,
            // --no-python: each rank runs the given program itself (the profiler), not python.
            Launcher::Torchrun => vec![
                "torchrun".into(),
                "--nnodes".into(),
                nodes.to_string(),
                "--nproc-per-node".into(),
                n.to_string(),
            ],
            Launcher::Srun => vec![
                "srun".into(),
                "--nodes".into(),
                nodes.to_string(),
                "--ntasks-per-node".into(),
                n.to_string(),
            ],
            Launcher::Mpirun => {
                let mut a = vec!["mpirun".into(), "-np".into(), (n * nodes).to_string()];
                let names: std::collections::BTreeSet<&str> =
                    env.iter().map(|(k, _)| k.as_str()).collect();
                for name in names {
                    a.extend(["-x".to_string(), name.to_string()]);
                }
                a
            }
        };
        a.extend(w.launcher_args.iter().cloned());
        if self == Launcher::Torchrun {
            a.push("--no-python".into());
        }
        a.extend(per_rank);
        a
    }

    /// A file-name part that the profilers expand per process: `%q{RANK}`.
    pub(crate) fn rank_macro(self) -> String {
        format!("%q{{{}}}", self.rank_var())
    }
}

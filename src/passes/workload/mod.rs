//! The workload: its argv, environment and working directory (from the CLI or the config),
//! the launcher that starts it (torchrun, srun, mpirun) and the Python hook stage2 puts in it.

pub(crate) mod hook;
pub(crate) mod launcher;

use std::path::PathBuf;

use serde::Serialize;

use crate::config::Config;
use crate::error::Error;

/// What the profilers launch.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Workload {
    pub(crate) argv: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) cwd: Option<PathBuf>,
    /// A Hydra-based Python module (gets hydra.run.dir and device overrides).
    pub(crate) hydra: bool,
}

/// Build the workload from the resolved config (the argv after `--` is already in
/// `workload.argv`). `stage1_dir` is MAIN/stage1, where a Hydra workload writes its outputs.
pub(crate) fn build(cfg: &Config, stage1_dir: &std::path::Path) -> Result<Workload, Error> {
    let w = &cfg.workload;
    let device = w.device.as_deref().map(map_device).transpose()?.flatten();
    let mut env: Vec<(String, String)> =
        w.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    if let Some(index) = &device {
        env.push(("CUDA_VISIBLE_DEVICES".to_string(), index.clone()));
    }
    let cwd = w.cwd.as_ref().map(PathBuf::from);
    if let Some(dir) = cwd.as_ref().filter(|d| !d.is_dir()) {
        return Err(Error::config(format!(
            "workload.cwd={}: no such directory (the workload would not start)",
            dir.display()
        )));
    }
    if !w.argv.is_empty() {
        return Ok(Workload {
            argv: w.argv.clone(),
            env,
            cwd,
            hydra: false,
        });
    }
    let Some(module) = w.module.as_deref().filter(|m| !m.is_empty()) else {
        return Err(Error::usage(
            "no workload: give its argv after `--` (stage2 profile -- python3 run.py), or set workload.argv or workload.module".to_string(),
        ));
    };
    let mut argv = vec![w.python.clone(), "-m".to_string(), module.to_string()];
    argv.extend(w.overrides.iter().cloned());
    if device.is_some() {
        // The child sees only the chosen GPU, which it calls cuda:0.
        argv.push("+stage1_runner.device=cuda:0".to_string());
    }
    if let Some(n) = cfg.run.representative_max_new_tokens {
        argv.push(format!("infer.max_new_tokens={n}"));
    }
    argv.push(format!("hydra.run.dir={}", stage1_dir.display()));
    argv.push("hydra.job.chdir=false".to_string());
    Ok(Workload {
        argv,
        env,
        cwd,
        hydra: true,
    })
}

/// `cuda:1` or `1` -> Some("1"); `cuda` -> Some("0"); `cpu` -> None (no mapping).
fn map_device(device: &str) -> Result<Option<String>, Error> {
    let d = device.trim();
    if d == "cpu" {
        return Ok(None);
    }
    let index = match d.strip_prefix("cuda") {
        Some("") => "0",
        Some(rest) => rest.strip_prefix(':').unwrap_or("x"),
        None => d,
    };
    if index.is_empty() || !index.chars().all(|c| c.is_ascii_digit()) {
        return Err(Error::config(format!(
            "workload.device={device:?}: expected cuda:N, N or cpu"
        )));
    }
    Ok(Some(index.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::config as cfg;
    use std::path::Path;

    #[test]
    fn argv_workload_passes_through_with_device_mapping() {
        let w = build(
            &cfg(&["workload.argv=[python3, x.py]", "workload.device=cuda:1"]),
            Path::new("/r/stage1"),
        )
        .unwrap();
        assert_eq!(w.argv, ["python3", "x.py"]);
        assert!(!w.hydra);
        assert!(w.env.contains(&("CUDA_VISIBLE_DEVICES".into(), "1".into())));
    }

    #[test]
    fn hydra_module_gets_run_dir_device_and_token_overrides() {
        let w = build(
            &cfg(&[
                "workload.module=llm.infer",
                "workload.overrides=[model=tiny]",
                "workload.device=cuda:1",
                "run.representative_max_new_tokens=8",
            ]),
            Path::new("/r/stage1"),
        )
        .unwrap();
        assert_eq!(
            w.argv,
            [
                "python3",
                "-m",
                "llm.infer",
                "model=tiny",
                "+stage1_runner.device=cuda:0",
                "infer.max_new_tokens=8",
                "hydra.run.dir=/r/stage1",
                "hydra.job.chdir=false"
            ]
        );
        assert!(w.hydra);
        assert!(w.env.contains(&("CUDA_VISIBLE_DEVICES".into(), "1".into())));
    }

    #[test]
    fn no_token_override_unless_configured() {
        let w = build(&cfg(&["workload.module=m"]), Path::new("/s")).unwrap();
        assert!(!w.argv.iter().any(|a| a.contains("max_new_tokens")));
        assert!(!w.argv.iter().any(|a| a.contains("stage1_runner.device")));
    }

    #[test]
    fn missing_workload_and_bad_device_are_usage_errors() {
        let err = build(&cfg(&[]), Path::new("/s")).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit_codes::USAGE);
        assert!(err.to_string().contains("after `--`"));
        let err = build(
            &cfg(&["workload.argv=[x]", "workload.device=gpu1"]),
            Path::new("/s"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("workload.device"));
    }
}

//! stage2's Python hook: a `sitecustomize.py` written into the run directory and put first on
//! the workload's PYTHONPATH, so a Python workload gets automatic `prefill`/`decode` NVTX
//! ranges (`workload.auto_nvtx`) and Python stack samples (`workload.python_sampling_hz`)
//! without a change to its code. The variables it reads are set here and land in cmd.txt.

use std::path::Path;

use crate::config::Config;
use crate::error::Error;
use crate::passes::workload::Workload;
use crate::rundir::RunDir;

/// The hook's source (see the file for what each variable does).
pub(crate) const SITECUSTOMIZE: &str = include_str!("hook/sitecustomize.py");

/// Whether the run needs the hook at all.
pub(crate) fn wanted(cfg: &Config) -> bool {
    cfg.workload.auto_nvtx || cfg.workload.python_sampling_hz > 0.0 || cfg.run.baseline
}

/// Write the hook into `run` and point the workload at it: PYTHONPATH (the workload's own,
/// from `workload.env` or stage2's environment, kept after it) and `STAGE2_AUTO_NVTX`.
pub(crate) fn install(cfg: &Config, run: &RunDir, w: &mut Workload) -> Result<(), Error> {
    if !wanted(cfg) {
        return Ok(());
    }
    let dir = run.hook_dir();
    check_root(cfg, &dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    let file = dir.join("sitecustomize.py");
    crate::rundir::status::write_atomic_raw(&file, SITECUSTOMIZE.as_bytes())
        .map_err(|e| Error::io("write", &file, e))?;
    let inherited = w
        .env
        .iter()
        .find(|(k, _)| k == "PYTHONPATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PYTHONPATH").ok());
    set(
        &mut w.env,
        "PYTHONPATH",
        python_path(&dir, inherited.as_deref()),
    );
    if cfg.workload.auto_nvtx {
        set(&mut w.env, "STAGE2_AUTO_NVTX", "1".into());
        if cfg.workload.auto_nvtx_skip > 0 {
            let skip = cfg.workload.auto_nvtx_skip.to_string();
            set(&mut w.env, "STAGE2_AUTO_NVTX_SKIP", skip);
        }
    }
    Ok(())
}

/// The hook's folder first, then what the workload had, less any other run's hook folder (a
/// pasted cmd.txt line, stage2 inside stage2): two hooks would load each other.
fn python_path(hook: &Path, inherited: Option<&str>) -> String {
    let rest: Vec<&str> = inherited
        .unwrap_or("")
        .split(':')
        .filter(|p| !p.is_empty() && !is_hook_dir(Path::new(p)))
        .collect();
    match rest.is_empty() {
        true => hook.display().to_string(),
        false => format!("{}:{}", hook.display(), rest.join(":")),
    }
}

/// Whether `dir` holds a stage2 hook (its sitecustomize.py is this one, any version).
fn is_hook_dir(dir: &Path) -> bool {
    crate::files::read_capped(&dir.join("sitecustomize.py"), 1 << 20)
        .is_ok_and(|t| t.starts_with("\"\"\"stage2's workload hook"))
}

/// The run root can carry the hook: PYTHONPATH splits at ':', and nsys's `--env-var` (which
/// carries the sampling folder) at ','. Checked before the run directory is made.
pub(crate) fn check_root(cfg: &Config, root: &Path) -> Result<(), Error> {
    let text = root.display().to_string();
    if wanted(cfg) && text.contains(':') {
        return Err(Error::config(format!(
            "run.root {text}: a path with ':' cannot go on PYTHONPATH, so stage2's Python hook (--auto-nvtx, --python-sampling) would never load; use a run root without ':'"
        )));
    }
    if cfg.workload.python_sampling_hz > 0.0 && text.contains(',') {
        return Err(Error::config(format!(
            "run.root {text}: nsys --env-var cannot carry a path with ',' (the Python samples' folder); use a run root without ','"
        )));
    }
    Ok(())
}

fn set(env: &mut Vec<(String, String)>, key: &str, value: String) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_string(), value));
}

/// The variables that turn sampling on for the nsys pass only (the ncu pass replays kernels:
/// its Python timing means nothing); samples go beside that pass's report.
pub(crate) fn nsys_env(cfg: &Config, nsys_dir: &Path) -> Vec<(String, String)> {
    let hz = cfg.workload.python_sampling_hz;
    if hz <= 0.0 {
        return Vec::new();
    }
    vec![
        ("STAGE2_PY_SAMPLE_HZ".into(), hz.to_string()),
        (
            "STAGE2_PY_SAMPLE_DIR".into(),
            nsys_dir.display().to_string(),
        ),
    ]
}

/// Add `vars` to an `nsys profile` argv (program first). nsys takes `--env-var` once, its
/// values separated by commas, so they join the one already there (before `-o`, which ends
/// nsys's own options) or a new one after `profile`.
pub(crate) fn add_nsys_env(argv: &mut Vec<String>, vars: &[(String, String)]) -> Result<(), Error> {
    if vars.is_empty() {
        return Ok(());
    }
    let text: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if let Some(bad) = text.iter().find(|t| t.contains(',')) {
        return Err(Error::config(format!(
            "workload.python_sampling_hz: nsys --env-var cannot carry a value with a comma ({bad}); use a run root and id without commas"
        )));
    }
    let text = text.join(",");
    let options_end = argv.iter().position(|a| a == "-o").unwrap_or(argv.len());
    match argv[..options_end]
        .iter()
        .position(|a| a.starts_with("--env-var="))
    {
        Some(i) => argv[i] = format!("{},{text}", argv[i]),
        None => argv.insert(2.min(argv.len()), format!("--env-var={text}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::config as cfg;

    fn workload(env: &[(&str, &str)]) -> Workload {
        Workload {
            argv: vec!["python3".into(), "w.py".into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cwd: None,
            hydra: false,
        }
    }

    #[test]
    fn the_hook_goes_first_on_the_workloads_python_path() {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir::create(tmp.path(), Some("r")).unwrap();
        let c = cfg(&["workload.auto_nvtx=true"]);
        let mut w = workload(&[("PYTHONPATH", "/mine"), ("A", "1")]);
        install(&c, &run, &mut w).unwrap();
        let hook = run.hook_dir();
        assert!(hook.join("sitecustomize.py").is_file());
        let env: std::collections::HashMap<_, _> = w.env.iter().cloned().collect();
        assert_eq!(env["PYTHONPATH"], format!("{}:/mine", hook.display()));
        assert_eq!(env["STAGE2_AUTO_NVTX"], "1");
        assert_eq!(env["A"], "1");
        // Sampling alone needs the hook but no phases; nsys gets the sampling variables.
        let c = cfg(&["workload.python_sampling_hz=200"]);
        let mut w = workload(&[]);
        install(&c, &run, &mut w).unwrap();
        assert!(!w.env.iter().any(|(k, _)| k == "STAGE2_AUTO_NVTX"));
        let vars = nsys_env(&c, Path::new("/r/nsys"));
        let mut argv: Vec<String> = [
            "nsys",
            "profile",
            "--env-var=A=0",
            "-o",
            "x",
            "w",
            "--env-var=B",
        ]
        .map(String::from)
        .to_vec();
        add_nsys_env(&mut argv, &vars).unwrap();
        assert_eq!(
            argv[2],
            "--env-var=A=0,STAGE2_PY_SAMPLE_HZ=200,STAGE2_PY_SAMPLE_DIR=/r/nsys"
        );
        assert_eq!(argv[6], "--env-var=B");
        let mut argv: Vec<String> = ["nsys", "profile", "-o", "x"].map(String::from).to_vec();
        add_nsys_env(&mut argv, &vars).unwrap();
        assert_eq!(
            argv[2],
            "--env-var=STAGE2_PY_SAMPLE_HZ=200,STAGE2_PY_SAMPLE_DIR=/r/nsys"
        );
        let comma = nsys_env(&c, Path::new("/r,1/nsys"));
        assert!(add_nsys_env(&mut argv, &comma).is_err());
        // Neither: nothing is written or set.
        let mut w = workload(&[]);
        let run2 = RunDir::create(tmp.path(), Some("r2")).unwrap();
        install(&cfg(&[]), &run2, &mut w).unwrap();
        assert!(w.env.is_empty() && !run2.hook_dir().exists());
        assert!(nsys_env(&cfg(&[]), &run2.nsys("")).is_empty());
    }
}

//! The packages pass: for a Python workload, the interpreter's version and the installed
//! versions of the packages that decide what runs on the GPU (torch, transformers, vLLM,
//! Triton, ...) into `packages/versions.json`, so a run says which stack it profiled and two
//! runs can be told apart by it (`stage2 diff`). The workload's own interpreter and
//! environment, reading package metadata only (nothing of the workload's is imported: the query
//! runs in the pass's own folder, no GPU is touched); stage2's
//! hook variables are left out, so the hook does nothing there. A query that fails costs only
//! this file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::driver::Pass;
use super::progress::Progress;
use super::{process, Ctx};
use crate::error::Error;
use crate::rundir::status::{PassState, PassStatus};
use crate::rundir::PACKAGES as FILE;

/// Long enough for an interpreter to start on a busy machine; it only reads metadata.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Distribution names looked up (as pip names them; `-` and `_` are the same to the lookup).
const NAMES: &[&str] = &[
    "torch",
    "transformers",
    "vllm",
    "sglang",
    "tensorrt_llm",
    "triton",
    "flash_attn",
    "flashinfer-python",
    "xformers",
    "accelerate",
    "deepspeed",
    "jax",
    "numpy",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-cublas-cu12",
    "nvidia-cublas-cu13",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
];

/// One scan of the installed distributions, on one line (cmd.txt holds one line per command);
/// a distribution without metadata (a broken install) is passed over, and the file is written
/// whole or not at all.
const SCRIPT: &str = r#"import json,os,platform,sys; from importlib import metadata as m; want={n.lower().replace("-","_") for n in sys.argv[2].split(",")}; found={}; meta=lambda d: d.metadata or {}; [found.setdefault(k,meta(d).get("Version")) for d in m.distributions() for k in [(meta(d).get("Name") or "").lower().replace("-","_")] if k in want]; tmp=sys.argv[1]+".tmp"; open(tmp,"w").write(json.dumps({"python":platform.python_version(),"executable":sys.executable,"packages":found},indent=1,sort_keys=True)); os.replace(tmp,sys.argv[1])"#;

pub(crate) struct PackagesPass;

/// The interpreter at the head of the workload's command line (`python3`, `/venv/bin/python`),
/// or None.
fn interpreter(argv: &[String]) -> Option<&str> {
    let head = argv.first()?;
    let name = Path::new(head).file_name()?.to_str()?;
    let version = name.strip_prefix("python")?;
    version
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.')
        .then_some(head.as_str())
}

impl Pass for PackagesPass {
    /// The interpreter and the file.
    type Plan = (String, PathBuf);

    fn name(&self) -> &'static str {
        "packages"
    }

    fn skip(&self, ctx: &Ctx) -> Option<PassStatus> {
        match interpreter(&ctx.workload.argv) {
            Some(_) => None,
            None => Some(PassStatus::skipped(
                "the workload's command line does not start with a Python interpreter",
            )),
        }
    }

    fn plan(&self, ctx: &Ctx) -> Result<(String, PathBuf), Error> {
        let python = interpreter(&ctx.workload.argv).unwrap_or("python3");
        // The query runs in a folder of its own (see `execute`): an interpreter named by a
        // relative path (`venv/bin/python`) is found where the workload finds it.
        let python = match Path::new(python) {
            p if p.is_relative() && python.contains('/') => {
                let at = ctx.workload.cwd.clone().unwrap_or_default().join(p);
                std::path::absolute(&at).unwrap_or(at).display().to_string()
            }
            _ => python.to_string(),
        };
        Ok((python, ctx.run.file(FILE)))
    }

    fn commands(&self, (python, file): &(String, PathBuf)) -> Vec<Vec<String>> {
        vec![vec![
            python.clone(),
            "-c".to_string(),
            SCRIPT.to_string(),
            file.display().to_string(),
            NAMES.join(","),
        ]]
    }

    fn execute(
        &self,
        ctx: &Ctx,
        plan: &(String, PathBuf),
        _progress: &Progress,
    ) -> Result<PassStatus, Error> {
        let argv = self.commands(plan).remove(0);
        let log = ctx.run.file("packages/query.log");
        let mut spec = ctx.spec(Path::new(&argv[0]), argv[1..].to_vec(), log.clone());
        // stage2's hook (on PYTHONPATH for the workload) stays idle without its variables.
        spec.env.retain(|(k, _)| !k.starts_with("STAGE2_"));
        // `python -c` puts its working folder first on sys.path: in the workload's, its own
        // `platform.py` or `json.py` would be what the query imports. This pass's folder
        // holds no Python. (Not `-I`: it would drop the PYTHONPATH and user site-packages
        // the workload's packages can come from.)
        spec.cwd = log.parent().map(Path::to_path_buf);
        spec.echo = false;
        spec.timeout = Some(TIMEOUT);
        let out = process::run(&spec).map_err(|e| Error::start(&argv[0], e))?;
        if out.interrupted || super::signals::interrupted() {
            return Ok(
                super::stopped(&out, "the package query").unwrap_or_else(|| {
                    PassStatus::new(PassState::Interrupted, Some("interrupted".into()))
                }),
            );
        }
        let mut st = PassStatus::new(PassState::Ok, None);
        st.duration_s = Some(out.duration.as_secs_f64());
        match out.success() && plan.1.is_file() {
            true => st.reason = Some(format!("{} ({})", FILE, plan.0)),
            // The versions are provenance beside the profile: their absence fails nothing.
            false => st.warnings.push(format!(
                "the package versions were not read: `{} -c ...` ended with {} ({}): {}",
                plan.0,
                out.describe(),
                ctx.run.relative(&log),
                out.tail_lines(2)
            )),
        }
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interpreter_is_the_head_of_the_command_line() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(interpreter(&argv(&["python3", "x.py"])), Some("python3"));
        assert_eq!(
            interpreter(&argv(&["/venv/bin/python3.12", "-m", "m"])),
            Some("/venv/bin/python3.12")
        );
        assert_eq!(interpreter(&argv(&["python", "x.py"])), Some("python"));
        assert_eq!(interpreter(&argv(&["python3-config"])), None);
        assert_eq!(interpreter(&argv(&["bash", "run.sh"])), None);
        assert_eq!(interpreter(&argv(&["./serve.py"])), None);
        assert_eq!(interpreter(&[]), None);
    }
}

//! Provenance: env.json (who, where, with what) and inputs.yaml (what was run on what). Never
//! secrets: secret-looking variables are redacted and credentials are cut out of URLs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::process;

use serde::Serialize;

use crate::passes::tools::Found;
use crate::passes::workload::Workload;

/// Environment variables recorded in env.json: what decides how CUDA, NVTX, the profilers and
/// the usual LLM stacks behave.
const ENV_PREFIXES: &[&str] = &[
    "CUDA_",
    "NVIDIA_",
    "NV_",
    "NVTX",
    "NSYS_",
    "NCU_",
    "STAGE2_",
    "TORCH",
    "PYTORCH_",
    "NCCL_",
    "HF_",
    "TRANSFORMERS_",
    "VLLM_",
    "TRITON_",
    "OMP_",
    "SLURM_",
    "LD_LIBRARY_PATH",
    "PATH",
    "PYTHONPATH",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
    "PIXI_",
];
pub(crate) use crate::secrets::{is_secret, redact_url, REDACTED};

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Gpu {
    pub(crate) name: String,
    pub(crate) driver: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Env {
    pub(crate) stage2_version: String,
    pub(crate) argv: Vec<String>,
    pub(crate) host: String,
    pub(crate) os: String,
    pub(crate) gpus: Vec<Gpu>,
    pub(crate) cuda_version: Option<String>,
    pub(crate) tools: BTreeMap<String, Option<Found>>,
    pub(crate) git_commit: Option<String>,
    pub(crate) git_remote: Option<String>,
    pub(crate) cwd: String,
    pub(crate) started: String,
    pub(crate) finished: Option<String>,
    pub(crate) env: BTreeMap<String, String>,
}

impl Env {
    pub(crate) fn collect(argv: &[String], tools: BTreeMap<String, Option<Found>>) -> Env {
        let uts = nix::sys::utsname::uname().ok();
        let (gpus, cuda_version) = nvidia_smi();
        Env {
            stage2_version: env!("CARGO_PKG_VERSION").to_string(),
            argv: argv.iter().map(|a| crate::secrets::redact_arg(a)).collect(),
            host: nix::unistd::gethostname()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default(),
            os: uts
                .map(|u| {
                    format!(
                        "{} {} {}",
                        u.sysname().to_string_lossy(),
                        u.release().to_string_lossy(),
                        u.machine().to_string_lossy()
                    )
                })
                .unwrap_or_default(),
            gpus,
            cuda_version,
            tools,
            git_commit: git(&["rev-parse", "HEAD"]),
            git_remote: git(&["remote", "get-url", "origin"]).map(|u| redact_url(&u)),
            cwd: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            started: crate::rundir::status::now(),
            finished: None,
            env: relevant_env(crate::files::env_vars()),
        }
    }

    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::rundir::status::write_atomic(path, text.as_bytes())
    }
}

/// The variables worth recording, secrets redacted.
pub(crate) fn relevant_env(
    vars: impl Iterator<Item = (String, String)>,
) -> BTreeMap<String, String> {
    vars.filter(|(k, _)| ENV_PREFIXES.iter().any(|p| k.starts_with(p)) || is_secret(k))
        .map(|(k, v)| {
            let v = if is_secret(&k) {
                REDACTED.to_string()
            } else {
                redact_url(&v)
            };
            (k, v)
        })
        .collect()
}

fn git(args: &[&str]) -> Option<String> {
    let out = process::probe(Path::new("git"), args, Duration::from_secs(10))?;
    Some(out.trim().to_string()).filter(|s| !s.is_empty())
}

/// GPUs and driver from `nvidia-smi`, and the CUDA version from its banner; empty without it.
/// The two queries run side by side: both come before any pass starts.
pub(crate) fn nvidia_smi() -> (Vec<Gpu>, Option<String>) {
    let smi = Path::new("nvidia-smi");
    let q = ["--query-gpu=name,driver_version", "--format=csv,noheader"];
    let (listed, banner) = std::thread::scope(|s| {
        let banner = s.spawn(|| process::probe(smi, &[], Duration::from_secs(30)));
        let listed = process::probe(smi, &q, Duration::from_secs(30));
        (listed, banner.join().ok().flatten())
    });
    let gpus = listed
        .map(|text| {
            text.lines()
                .filter_map(|l| {
                    let (n, d) = l.split_once(',')?;
                    Some(Gpu {
                        name: n.trim().to_string(),
                        driver: d.trim().to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let cuda = banner.and_then(|text| {
        let i = text.find("CUDA Version:")?;
        text[i + "CUDA Version:".len()..]
            .split_whitespace()
            .next()
            .map(str::to_string)
    });
    (gpus, cuda)
}

/// inputs.yaml: the workload and the manifest the user named.
#[derive(Debug, Serialize)]
pub(crate) struct Inputs {
    pub(crate) workload_argv: Vec<String>,
    pub(crate) working_dir: String,
    pub(crate) hydra: bool,
    pub(crate) manifest_path: Option<String>,
    pub(crate) manifest: Option<serde_yaml::Value>,
}

impl Inputs {
    pub(crate) fn new(w: &Workload, manifest: Option<&str>) -> Result<Inputs, crate::error::Error> {
        let content = manifest
            .map(|p| {
                crate::files::read_capped(Path::new(p), crate::files::CONFIG_CAP).map_err(|e| {
                    crate::error::Error::config(format!("inputs.manifest={p}: cannot read: {e}"))
                })
            })
            .transpose()?;
        let manifest_value = content.map(|text| {
            serde_yaml::from_str::<serde_yaml::Value>(&text)
                .unwrap_or(serde_yaml::Value::String(text))
        });
        let cwd = w
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        Ok(Inputs {
            workload_argv: w.argv.iter().map(|a| redact_url(a)).collect(),
            working_dir: cwd,
            hydra: w.hydra,
            manifest_path: manifest.map(str::to_string),
            manifest: manifest_value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_urls_lose_credentials() {
        let vars = vec![
            ("HF_TOKEN".to_string(), "hf_abc".to_string()),
            ("MY_API_KEY".to_string(), "k".to_string()),
            ("CUDA_VISIBLE_DEVICES".to_string(), "0".to_string()),
            ("HOME".to_string(), "/root".to_string()),
            ("PIXI_URL".to_string(), "https://u:p@host/x".to_string()),
        ];
        let env = relevant_env(vars.into_iter());
        assert_eq!(env["HF_TOKEN"], REDACTED);
        assert_eq!(env["MY_API_KEY"], REDACTED);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "0");
        assert!(!env.contains_key("HOME"));
        assert_eq!(env["PIXI_URL"], "https://<redacted>@host/x");
    }

    #[test]
    fn url_redaction_keeps_plain_urls() {
        assert_eq!(redact_url("git@github.com:a/b"), "git@github.com:a/b");
        assert_eq!(redact_url("https://host/a@b"), "https://host/a@b");
        assert_eq!(
            redact_url("x https://tok@h.com/p and http://a:b@c"),
            "x https://<redacted>@h.com/p and http://<redacted>@c"
        );
    }
}

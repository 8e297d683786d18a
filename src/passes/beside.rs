//! Two GPUs, two passes at once (`ncu.second_gpu`, opt-in). When ncu's kernel list does not
//! come from the nsys pass, nothing makes the ncu pass wait for it: ncu runs the workload on a
//! second GPU while nsys runs it on the first, and the run takes the longer pass's time
//! instead of the sum. Each pass sees only its own GPU, so neither pass's timings share a GPU
//! with the other's replays.

use crate::config::{Config, NcuTarget};
use crate::passes::launcher::Launcher;
use crate::passes::provenance::Gpu;
use crate::rundir::status::SecondGpu;

const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

/// The GPUs the two passes run on, or why they cannot run side by side. `workload_env` is the
/// workload's own variables (`workload.env`, `workload.device`), `inherited` stage2's
/// `CUDA_VISIBLE_DEVICES`, `gpus` what nvidia-smi listed.
pub(crate) fn gpus(
    (cfg, target): (&Config, &NcuTarget),
    workload_env: &[(String, String)],
    inherited: Option<&str>,
    gpus: &[Gpu],
) -> Result<SecondGpu, String> {
    if !cfg.nsys.enable || !cfg.ncu.enable {
        return Err("only one pass runs".into());
    }
    if cfg.workload.launcher != Launcher::None {
        return Err("under a launcher the workload's ranks take the GPUs".into());
    }
    if target.same_as_capture {
        return Err(format!(
            "ncu's kernels are chosen from the nsys pass of the same range (`{}`); with ncu.nvtx_include naming another range than nsys captures, ncu profiles each distinct kernel there and starts without it",
            target.name
        ));
    }
    let set = workload_env
        .iter()
        .rev()
        .find(|(k, _)| k == VISIBLE)
        .map(|(_, v)| v.as_str())
        .or(inherited);
    let visible: Vec<String> = match set {
        Some(list) => distinct(list),
        None => (0..gpus.len()).map(|i| i.to_string()).collect(),
    };
    let [first, second, ..] = visible.as_slice() else {
        return Err(match (set, visible.len()) {
            (Some(list), 0) => format!("{VISIBLE}={list} leaves no GPU visible"),
            (Some(list), _) => format!("{VISIBLE}={list} leaves one GPU visible"),
            (None, _) => format!("nvidia-smi lists {} GPU(s)", gpus.len()),
        });
    };
    // Figures from another GPU model would describe other hardware than nsys's timings.
    // nvidia-smi's order is the PCI bus's; CUDA's default order can differ, which matters
    // only on a machine of mixed models, where every GPU is compared.
    let model = |d: &str| d.parse::<usize>().ok().and_then(|i| gpus.get(i));
    let (Some(a), Some(_)) = (model(first), model(second)) else {
        return Err(format!(
            "the models of GPUs {first} and {second} are not known (nvidia-smi)"
        ));
    };
    if let Some(other) = gpus.iter().find(|g| g.name != a.name) {
        return Err(format!(
            "the GPUs are not all one model ({} and {}): ncu's figures could describe another GPU than nsys's timings",
            a.name, other.name
        ));
    }
    Ok(SecondGpu {
        nsys: first.clone(),
        ncu: second.clone(),
        model: a.name.clone(),
    })
}

/// The distinct GPUs a `CUDA_VISIBLE_DEVICES` list names, in its order: `0,0`, `1, 1` and
/// `0,00` name one GPU (indices compared as numbers, UUIDs without case), so two passes are
/// never put on the same GPU as if it were two.
fn distinct(list: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in list.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let d = match d.parse::<u64>() {
            Ok(i) => i.to_string(),
            Err(_) => d.to_ascii_lowercase(),
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The workload's variables with only `device` visible.
pub(crate) fn pinned(env: &[(String, String)], device: &str) -> Vec<(String, String)> {
    env.iter()
        .filter(|(k, _)| k != VISIBLE)
        .cloned()
        .chain(std::iter::once((VISIBLE.to_string(), device.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100s(n: usize) -> Vec<Gpu> {
        (0..n)
            .map(|_| Gpu {
                name: "NVIDIA H100 80GB HBM3".into(),
                driver: "580.159.04".into(),
            })
            .collect()
    }

    /// A config with the ncu target it decides (leaked: a test's few bytes).
    fn with_target(cfg: &Config) -> (&Config, &NcuTarget) {
        (cfg, Box::leak(Box::new(NcuTarget::of(cfg))))
    }

    fn distinct_ranges() -> Config {
        crate::testutil::config(&[
            "workload.argv=[python3,w.py]",
            "nsys.nvtx_capture=prefill",
            "ncu.nvtx_include=decode",
            "ncu.second_gpu=true",
        ])
    }

    #[test]
    fn two_gpus_of_one_model_in_distinct_kernel_mode() {
        let g = gpus(with_target(&distinct_ranges()), &[], None, &h100s(2)).unwrap();
        assert_eq!((g.nsys.as_str(), g.ncu.as_str()), ("0", "1"));
        // The user's list is kept, in its order.
        let g = gpus(with_target(&distinct_ranges()), &[], Some("3,1"), &h100s(4)).unwrap();
        assert_eq!((g.nsys.as_str(), g.ncu.as_str()), ("3", "1"));
        let env = pinned(&[("CUDA_VISIBLE_DEVICES".into(), "3,1".into())], "1");
        assert_eq!(env, [("CUDA_VISIBLE_DEVICES".to_string(), "1".to_string())]);
    }

    #[test]
    fn each_reason_not_to_is_named() {
        let why = |cfg: &Config, env: &[(String, String)], gpus_: &[Gpu]| {
            gpus(with_target(cfg), env, None, gpus_).unwrap_err()
        };
        assert!(why(&distinct_ranges(), &[], &h100s(1)).contains("lists 1 GPU"));
        let pinned_env = [("CUDA_VISIBLE_DEVICES".to_string(), "1".to_string())];
        assert!(why(&distinct_ranges(), &pinned_env, &h100s(2)).contains("one GPU visible"));
        let same =
            crate::testutil::config(&["workload.argv=[python3,w.py]", "nsys.nvtx_capture=decode"]);
        assert!(why(&same, &[], &h100s(2)).contains("chosen from the nsys pass"));
        let mut mixed = h100s(2);
        mixed[1].name = "NVIDIA A100-SXM4-80GB".into();
        assert!(why(&distinct_ranges(), &[], &mixed).contains("not all one model"));
        let uuids = [(
            "CUDA_VISIBLE_DEVICES".to_string(),
            "GPU-a,GPU-b".to_string(),
        )];
        assert!(why(&distinct_ranges(), &uuids, &h100s(2)).contains("not known"));
        let mut launched = distinct_ranges();
        launched.workload.launcher = Launcher::Torchrun;
        assert!(why(&launched, &[], &h100s(2)).contains("launcher"));
    }

    /// Two entries that name one GPU are one GPU; an empty list is none.
    #[test]
    fn one_gpu_named_twice_is_one_gpu() {
        for list in ["0,0", "1, 1", "0,00", "GPU-A,gpu-a"] {
            let env = [("CUDA_VISIBLE_DEVICES".to_string(), list.to_string())];
            let e = gpus(with_target(&distinct_ranges()), &env, None, &h100s(2)).unwrap_err();
            assert!(e.contains("leaves one GPU visible"), "{list}: {e}");
        }
        let env = [("CUDA_VISIBLE_DEVICES".to_string(), String::new())];
        let e = gpus(with_target(&distinct_ranges()), &env, None, &h100s(2)).unwrap_err();
        assert!(e.contains("leaves no GPU visible"), "{e}");
    }
}

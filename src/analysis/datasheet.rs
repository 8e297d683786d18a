//! NVIDIA's datasheet DRAM bandwidth of the GPUs stage2 knows, by the name nvidia-smi gives
//! them (env.json's `gpus`): the ceiling a step's bytes are set against where nothing on the
//! GPU measured one (`stage2 doctor` measures no copy bandwidth today). A datasheet figure is a
//! peak no copy reaches; on an H100 ncu's own peak (`dram__bytes.sum.peak_sustained` times the
//! DRAM clock) read 3.33 TB/s against the datasheet's 3.35.

/// (nvidia-smi's name, DRAM bandwidth in bytes/s): from NVIDIA's H100, H200, A100, L40S, L4
/// and A10 datasheets.
const DRAM: &[(&str, f64)] = &[
    ("NVIDIA H100 80GB HBM3", 3.35e12),
    ("NVIDIA H100 PCIe", 2.0e12),
    ("NVIDIA H100 NVL", 3.9e12),
    ("NVIDIA H200", 4.8e12),
    ("NVIDIA H200 NVL", 4.8e12),
    ("NVIDIA A100-SXM4-80GB", 2.039e12),
    ("NVIDIA A100-SXM4-40GB", 1.555e12),
    ("NVIDIA A100 80GB PCIe", 1.935e12),
    ("NVIDIA A100-PCIE-40GB", 1.555e12),
    ("NVIDIA L40S", 0.864e12),
    ("NVIDIA L4", 0.3e12),
    ("NVIDIA A10", 0.6e12),
];

/// The datasheet DRAM bandwidth of the GPU nvidia-smi names `gpu`, in bytes/s.
pub(crate) fn dram_bytes_per_s(gpu: &str) -> Option<f64> {
    DRAM.iter().find(|(n, _)| *n == gpu.trim()).map(|(_, b)| *b)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_runs_gpus_are_known_by_their_full_name_only() {
        assert_eq!(
            super::dram_bytes_per_s("NVIDIA H100 80GB HBM3"),
            Some(3.35e12)
        );
        assert_eq!(super::dram_bytes_per_s("NVIDIA H200"), Some(4.8e12));
        assert_eq!(super::dram_bytes_per_s("NVIDIA H20"), None);
    }
}

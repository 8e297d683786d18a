//! Property tests: the override grammar and the CSV parsers never panic, whatever they get,
//! and well-formed overrides round-trip.

use std::io::Write;

use proptest::prelude::*;
use stage2::config::{self, Sources};
use stage2::parse::{ncu, nsys};

fn resolve(overrides: Vec<String>) -> Result<config::Resolved, stage2::error::Error> {
    config::resolve(&Sources {
        embedded_only: true,
        overrides,
        ..Default::default()
    })
}

fn real(path: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(path),
    )
    .unwrap()
}

/// Parse `bytes` as each kind of CSV; only Ok or a typed error may come back.
fn parse_all(bytes: &[u8]) {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f.flush().unwrap();
    let p = f.path();
    let _ = nsys::read_kernels(p);
    let _ = nsys::read_ranges(p);
    let _ = nsys::read_api(p);
    if let Ok(mut r) = ncu::read_raw(p) {
        let _ = ncu::attach_mangled(&mut r, p);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_override_string_is_accepted_or_refused_never_panics(s in "\\PC{0,40}") {
        let _ = config::parse_override(&s);
        let _ = resolve(vec![s]);
    }

    #[test]
    fn overrides_of_known_keys_round_trip(top_n in 1usize..10_000, name in "[a-z][a-z0-9_]{0,12}") {
        let r = resolve(vec![format!("ncu.top_n={top_n}"), format!("nsys.nvtx_capture={name}")]).unwrap();
        prop_assert_eq!(r.config.ncu.top_n, top_n);
        prop_assert_eq!(r.config.nsys.nvtx_capture.as_deref(), Some(name.as_str()));
    }

    #[test]
    fn plus_then_tilde_leaves_the_config_as_it_was(key in "[a-z][a-z0-9_]{0,10}", v in "[a-z0-9]{1,10}") {
        let base = resolve(vec![]).unwrap();
        let r = resolve(vec![format!("+workload.env.{key}={v}"), format!("~workload.env.{key}")]).unwrap();
        prop_assert_eq!(r.tree, base.tree);
    }

    #[test]
    fn random_bytes_never_panic_the_csv_parsers(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        parse_all(&bytes);
    }

    #[test]
    fn cut_or_corrupted_real_exports_never_panic(cut in 0usize..20_000, at in 0usize..20_000, byte in any::<u8>()) {
        for file in ["nsys/summary_cuda_gpu_kern_sum.csv", "ncu/decode_raw.csv"] {
            let mut bytes = real(file);
            bytes.truncate(bytes.len().min(cut.max(1) * 8));
            let i = at % bytes.len().max(1);
            if !bytes.is_empty() {
                bytes[i] = byte;
            }
            parse_all(&bytes);
        }
    }
}

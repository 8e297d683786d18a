use super::*;
use crate::testutil::data;

#[test]
fn reads_the_real_raw_export() {
    let r = read_raw(&data("ncu/decode_raw.csv")).unwrap();
    assert_eq!(r.rows, 29);
    assert_eq!(r.units.get(TIME).map(String::as_str), Some("us"));
    let first = &r.kernels[0];
    assert!(first
        .name
        .starts_with("void at::<unnamed>::indexSelectSmallIndex<"));
    assert_eq!(first.nvtx_range.as_deref(), Some("decode"));
    assert_eq!(first.time_ns, Some(3456.0));
    assert_eq!(first.block.as_deref(), Some("(128, 1, 1)"));
    assert!(first.metric(SM_PCT).is_some() && first.metric(DRAM_PCT).is_some());
    // Thousands separators: 1,980,000 kHz.
    assert_eq!(first.metric("launch__grid_size"), Some(4.0));
    // Three launches of one nvjet kernel aggregate into one record.
    let nvjet = r
        .kernels
        .iter()
        .find(|k| k.name == "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN")
        .unwrap();
    assert_eq!(nvjet.instances, 3);
    assert_eq!(r.kernels.iter().map(|k| k.instances).sum::<u64>(), 29);
}

#[test]
fn mangled_names_come_from_the_second_import() {
    let mut r = read_raw(&data("ncu/decode_raw.csv")).unwrap();
    attach_mangled(&mut r, &data("ncu/decode_raw_mangled.csv")).unwrap();
    assert!(r.kernels.iter().all(|k| k.mangled.is_some()));
    assert!(r.kernels[0].mangled.as_deref().unwrap().starts_with(
        "_ZN2at6native44_GLOBAL__N__50c743a2_11_Indexing_cu_89862edb21indexSelectSmallIndex"
    ));
}

fn both_readers(path: &Path) -> (Option<String>, String) {
    let fast = read_quoted(File::open(path).unwrap()).unwrap();
    (
        fast.map(|r| format!("{r:?}")),
        format!("{:?}", read_general(path)),
    )
}

#[test]
fn the_fast_reader_takes_real_exports_and_agrees_with_the_general_one() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for p in [
        "tests/data/ncu/decode_raw.csv",
        "tests/data/ncu/decode_raw_mangled.csv",
        "examples/sample-run/ncu/decode_raw.csv",
        "examples/sample-run-2gpu/ncu/decode_raw.csv",
    ] {
        let (fast, general) = both_readers(&root.join(p));
        let fast = fast.unwrap_or_else(|| panic!("{p}: fast reader gave up"));
        assert_eq!(format!("Ok({fast})"), general, "{p}");
    }
}

#[test]
fn both_mangled_readers_agree_on_the_real_import() {
    let r = read_raw(&data("ncu/decode_raw.csv")).unwrap();
    let wanted = first_ids(&r);
    let path = data("ncu/decode_raw_mangled.csv");
    let fast = mangled_quoted(File::open(&path).unwrap(), &wanted)
        .unwrap()
        .expect("the fast reader takes ncu's own output");
    assert_eq!(fast.len(), r.kernels.len());
    assert_eq!(fast, mangled_general(&path, &wanted).unwrap());
}

/// Cells of the shapes ncu writes, and some it does not.
fn cell() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        "-?[0-9]{1,3}(,[0-9]{3}){0,6}(\\.[0-9]{1,6})?",
        "[0-9]{16,20}\\.[0-9]{2}",
        "[0-9]\\.[0-9]e[+-][0-9]{2}",
        Just(String::new()),
        "[A-Za-z (),:<>]{1,12}",
        Just("a \"quoted\" name".to_string()),
        Just("n/a".to_string()),
        Just(" 1.5 ".to_string()),
    ]
}

proptest::proptest! {
    #[test]
    fn both_readers_agree_on_generated_exports(
        rows in proptest::collection::vec(
            (0usize..4, proptest::collection::vec(cell(), 5)), 0..12),
        crlf: bool,
        unquote in proptest::option::of((0usize..12, 0usize..7)),
    ) {
        let headers = ["ID", "Kernel Name", "gpu__time_duration.sum", "m1", "m2", "Block Size", "m3"];
        let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
        let mut lines = vec![
            headers.iter().map(|h| q(h)).collect::<Vec<_>>(),
            ["", "", "us", "%", "", "", "byte"].iter().map(|h| q(h)).collect(),
        ];
        for (i, (k, cells)) in rows.iter().enumerate() {
            let mut l = vec![q(&i.to_string()), q(&format!("kernel {k}"))];
            l.extend(cells.iter().map(|c| q(c)));
            lines.push(l);
        }
        if let Some((r, c)) = unquote {
            if let Some(cell) = lines.get_mut(r).and_then(|l| l.get_mut(c)) {
                *cell = cell.trim_matches('"').to_string();
            }
        }
        let end = if crlf { "\r\n" } else { "\n" };
        let text: String = lines.iter().map(|l| l.join(",") + end).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw.csv");
        std::fs::write(&path, text).unwrap();
        let (fast, general) = both_readers(&path);
        // All quoted: the fast reader must take it; otherwise it may give up, never differ.
        proptest::prop_assert!(fast.is_some() || unquote.is_some());
        if let Some(fast) = fast {
            proptest::prop_assert_eq!(&format!("Ok({fast})"), &general);
        }
        // read_raw refuses what no ncu writes (a negative figure); otherwise it is the same.
        let checked = read_general(&path).and_then(|r| {
            check_values(&r.kernels).map_err(|why| Error::parse(&path, None, why))?;
            Ok(r)
        });
        proptest::prop_assert_eq!(format!("{:?}", read_raw(&path)), format!("{checked:?}"));
    }
}

#[test]
fn range_cells() {
    assert_eq!(
        stack_of(r#"641  "<default domain>:decode:none:none:none:none:none:none" "#),
        ["decode"]
    );
    // A real nested cell (transformers generate(), H200): outermost first.
    assert_eq!(
        stack_of(
            r#"701  "<default domain>:generate:none:none:none:none:none:none"  "<default domain>:decode:none:none:none:none:none:none" "#
        ),
        ["generate", "decode"]
    );
    assert!(stack_of("").is_empty());
}

#[test]
fn figures_no_ncu_writes_are_refused_by_name() {
    let mut r = read_raw(&data("ncu/decode_raw.csv")).unwrap();
    assert!(check_values(&r.kernels).is_ok());
    for bad in [-1.0, 1e308, f64::INFINITY, f64::NAN] {
        let k = &mut r.kernels[0];
        k.metrics.insert("dram__bytes.sum".into(), bad);
        let why = check_values(&r.kernels).unwrap_err();
        assert!(why.contains("metric dram__bytes.sum"), "{why}");
    }
}

#[test]
fn units_differing_by_a_prefix_are_compared_in_the_raw_pages() {
    assert_eq!(si_ratio("Gbyte/s", "Tbyte/s"), 1e-3);
    assert!((si_ratio("us", "ns") - 1e3).abs() < 1e-9);
    assert_eq!(si_ratio("%", "%"), 1.0);
    assert_eq!(si_ratio("Mbyte", "cycle"), 1.0);
}

use super::*;
use crate::parse::sqlite::{Sample, SLOTS};

const PEAK: f64 = 3.0e12;

/// A sample at `t` (us): DRAM read and write shares (%) and byte counters.
fn at(t_us: i64, read_pct: f32, write_pct: f32, bytes: Option<(f32, f32)>) -> Sample {
    let mut v = [f32::NAN; SLOTS];
    v[0] = 100.0;
    v[DRAM_READ] = read_pct;
    v[DRAM_WRITE] = write_pct;
    if let Some((r, w)) = bytes {
        v[READ_BYTES] = r;
        v[WRITE_BYTES] = w;
    }
    Sample { t: t_us * 1000, v }
}

fn series(samples: Vec<Sample>, counters: bool) -> Series {
    let mut names = vec![METRICS[1].to_string(), METRICS[2].to_string()];
    if counters {
        names.extend(COUNTERS.iter().map(|c| c.to_string()));
    }
    Series {
        gpu: 0,
        samples,
        names,
        whole_shares: true,
    }
}

fn shares() -> How {
    How::Shares {
        peak: PEAK,
        whole: true,
    }
}

/// Bytes a share moves over `us` microseconds at PEAK.
fn of(pct: f64, us: f64) -> f64 {
    pct / 100.0 * PEAK * us / 1e6
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn windows_at_the_edges_count_by_the_part_inside() {
    // Windows of 20 us at 10%, 50%, 30% read; the span starts 15 us into the first and ends
    // 5 us into the third: a quarter of the first, all of the second, a quarter of the third.
    let s = vec![
        at(0, 10.0, 2.0, None),
        at(20, 50.0, 4.0, None),
        at(40, 30.0, 6.0, None),
    ];
    let w = Windows::new(&s).unwrap();
    let (read, write, covered) = integrate(&w, 15_000, 45_000, shares(), &Busy::default());
    assert!(
        close(read, of(10.0, 5.0) + of(50.0, 20.0) + of(30.0, 5.0)),
        "{read}"
    );
    assert!(
        close(write, of(2.0, 5.0) + of(4.0, 20.0) + of(6.0, 5.0)),
        "{write}"
    );
    assert_eq!(covered, 30_000.0);
}

#[test]
fn counters_count_a_windows_bytes_by_the_part_inside() {
    let s = vec![
        at(0, 0.0, 0.0, Some((4000.0, 400.0))),
        at(20, 0.0, 0.0, Some((8000.0, 800.0))),
    ];
    let w = Windows::new(&s).unwrap();
    // Half of the first window and the first quarter of the second.
    let (read, write, covered) = integrate(
        &w,
        10_000,
        25_000,
        How::Counters { peak: None },
        &Busy::default(),
    );
    assert!(close(read, 2000.0 + 2000.0), "{read}");
    assert!(close(write, 200.0 + 200.0), "{write}");
    assert_eq!(covered, 15_000.0);
}

/// An edge window whose kernels all ran inside the span is the span's, whole: the GPU moves
/// next to nothing while idle. Where a kernel outside the span shares the window, the bytes
/// split by busy time.
#[test]
fn an_edge_window_counts_by_the_kernels_busy_time_inside() {
    let s = vec![
        at(0, 0.0, 0.0, Some((4000.0, 400.0))),
        at(20, 0.0, 0.0, Some((8000.0, 800.0))),
    ];
    let w = Windows::new(&s).unwrap();
    // Kernels from 10 to 25 us: the first window is idle before 10 us.
    let busy = Busy::new(vec![(10_000, 25_000)]);
    let (read, _, covered) = integrate(&w, 10_000, 25_000, How::Counters { peak: None }, &busy);
    assert!(close(read, 4000.0 + 8000.0), "{read}");
    assert_eq!(covered, 15_000.0);
    // Another kernel from 2 to 6 us shares the first window: 10 of its 14 busy us are inside.
    let busy = Busy::new(vec![(2_000, 6_000), (10_000, 25_000)]);
    let (read, _, _) = integrate(&w, 10_000, 25_000, How::Counters { peak: None }, &busy);
    assert!(close(read, 4000.0 * 10.0 / 14.0 + 8000.0), "{read}");
}

#[test]
fn time_outside_every_window_is_uncovered_and_moves_nothing() {
    // Samples stop at 40 us and resume at 200 us: a window is never stretched over the gap.
    let mut s: Vec<Sample> = (0..3).map(|i| at(i * 20, 40.0, 0.0, None)).collect();
    s.extend((10..13).map(|i| at(i * 20, 40.0, 0.0, None)));
    let w = Windows::new(&s).unwrap();
    let (read, _, covered) = integrate(&w, 40_000, 140_000, shares(), &Busy::default());
    assert_eq!(covered, 20_000.0);
    assert!(close(read, of(40.0, 20.0)));
}

fn launch(start_us: f64, end_us: f64, instance: Option<InstanceKey>, device: i64) -> SampledLaunch {
    SampledLaunch {
        name: "k".into(),
        grid: "(1,1,1)".into(),
        block: "(1,1,1)".into(),
        start: (start_us * 1000.0) as i64,
        end: (end_us * 1000.0) as i64,
        instance,
        device,
    }
}

fn key(start_us: i64, end_us: i64) -> InstanceKey {
    InstanceKey {
        start: start_us * 1000,
        end: end_us * 1000,
        tid: 1,
    }
}

#[test]
fn an_instance_spans_its_first_kernel_to_its_last_and_idle_time_between_counts() {
    let s: Vec<Sample> = (0..10).map(|i| at(i * 20, 10.0, 5.0, None)).collect();
    let w = Windows::new(&s).unwrap();
    let a = key(0, 50);
    let b = key(100, 110);
    let launches = [
        launch(10.0, 20.0, Some(a), 0),
        // The GPU idles between the two: that time is in the span.
        launch(60.0, 70.0, Some(a), 0),
        launch(120.0, 180.0, Some(b), 0),
        launch(185.0, 186.0, None, 0),
    ];
    let got = per_instance(&launches, |_| Some(&w), |_| Some(shares()));
    assert_eq!(got.len(), 2);
    let x = got[&a];
    assert_eq!(x.gpu_span_ns, 60_000);
    // The span's edge windows (0-20 and 60-80 us) hold only its own kernels' busy time, so
    // they count whole: 80 us of windows.
    assert!(
        close(x.dram_read_bytes, of(10.0, 80.0)),
        "{}",
        x.dram_read_bytes
    );
    assert!(close(x.dram_write_bytes, of(5.0, 80.0)));
    assert_eq!(x.bytes_coverage_pct, 100.0);
    assert_eq!(x.bytes_source, BytesSource::Shares);
    // A point of each share over the covered time.
    assert!(close(x.bytes_within.unwrap(), 2.0 * of(1.0, 60.0)));
    // Its time: the longer of CPU wall (50 us) and GPU span (60 us).
    assert_eq!(x.step_ns, 60_000);
    assert_eq!(got[&b].step_ns, 60_000);
}

#[test]
fn an_instance_on_an_unsampled_device_has_no_bytes_and_one_of_no_length_covers_nothing() {
    let s: Vec<Sample> = (0..10).map(|i| at(i * 20, 10.0, 5.0, None)).collect();
    let w = Windows::new(&s).unwrap();
    let (a, b) = (key(0, 50), key(100, 100));
    let launches = [
        launch(10.0, 20.0, Some(a), 0),
        launch(10.0, 20.0, Some(a), 1),
        launch(120.0, 120.0, Some(b), 0),
    ];
    let got = per_instance(
        &launches,
        |d| (d == 0).then_some(&w),
        |_| Some(How::Counters { peak: None }),
    );
    assert!(!got.contains_key(&a), "device 1 was not sampled");
    let z = got[&b];
    assert_eq!(
        (z.gpu_span_ns, z.step_ns, z.bytes_coverage_pct),
        (0, 0, 0.0)
    );
    assert_eq!((z.dram_read_bytes, z.dram_write_bytes), (0.0, 0.0));
    assert_eq!(z.bytes_within, None, "counted");
}

#[test]
fn counters_are_used_where_listed_and_plausible() {
    let peak = Bandwidth {
        bytes_per_s: PEAK,
        source: BandwidthSource::NcuPeak,
    };
    // A 20 us window at PEAK moves 60 MB.
    let ok = vec![
        at(0, 0.0, 0.0, Some((60e6, 1.0))),
        at(20, 0.0, 0.0, Some((1.0, 1.0))),
    ];
    let s = series(ok.clone(), true);
    let w = Windows::new(&s.samples).unwrap();
    assert_eq!(
        how(&s, &w, Some(&peak)),
        (Some(How::Counters { peak: None }), None)
    );
    assert_eq!(how(&s, &w, None).0, Some(How::Counters { peak: None }));
    // Not listed: the shares, of the peak; without a peak, nothing.
    let s = series(ok, false);
    assert_eq!(how(&s, &w, Some(&peak)).0, Some(shares()));
    assert_eq!(how(&s, &w, None).0, None);
    // A window reading more than twice the peak, as a wrapped counter would.
    let wrapped = vec![
        at(0, 0.0, 0.0, Some((1.0, 121e6))),
        at(20, 0.0, 0.0, Some((1.0, 1.0))),
    ];
    let s = series(wrapped, true);
    let w = Windows::new(&s.samples).unwrap();
    let (used, why) = how(&s, &w, Some(&peak));
    assert_eq!(used, Some(shares()));
    assert!(why
        .unwrap()
        .contains("more than twice ncu's peak bandwidth (3.00 TB/s) in the window at 0 ns"));
}

fn figures(k: InstanceKey, read: f64, step_ns: i64, source: BytesSource) -> InstanceFigures {
    let f: crate::model::SampledFigures = serde_json::from_value(serde_json::json!({
        "launches": 1, "time_ns": 1.0, "coverage_pct": 100.0, "samples": 1,
        "dram_pct": null, "sm_issue_pct": null, "tensor_pct": null, "bound": null
    }))
    .unwrap();
    InstanceFigures {
        start_ns: k.start,
        key: k,
        figures: f,
        bytes: Some(InstanceBytes {
            dram_read_bytes: read,
            dram_write_bytes: read / 2.0,
            bytes_coverage_pct: 100.0,
            bytes_source: source,
            bytes_within: None,
            gpu_span_ns: step_ns,
            step_ns,
        }),
    }
}

#[test]
fn a_step_is_the_median_of_the_steady_instances_against_the_ceiling() {
    let ceiling = Bandwidth {
        bytes_per_s: 1e12,
        source: BandwidthSource::Datasheet,
    };
    // A warm-up moving ten times the bytes, set apart; three steady steps of 1 ms.
    let warm = key(0, 10);
    let inst = [
        figures(warm, 1e10, 10_000_000, BytesSource::Counters),
        figures(key(20, 21), 1e8, 1_000_000, BytesSource::Counters),
        figures(key(30, 31), 3e8, 1_000_000, BytesSource::Counters),
        figures(key(40, 41), 2e8, 1_000_000, BytesSource::Counters),
    ];
    let s = per_step(
        "decode",
        &inst,
        |k| *k != warm,
        Some("the other 3".into()),
        None,
        Some(ceiling),
    )
    .unwrap();
    assert_eq!(s.instances, 3);
    assert_eq!(s.dram_read_bytes, 2e8);
    assert_eq!(s.dram_bytes, 3e8);
    assert_eq!(s.source, BytesSource::Counters);
    assert_eq!(s.shares_of, None);
    // 300 MB at 1 TB/s: 0.3 ms, of a 1 ms step: 30%.
    assert!(close(s.memory_floor_ms.unwrap(), 0.3));
    assert!(close(s.bandwidth_use_pct.unwrap(), 30.0));
    assert_eq!(s.step_ms, 1.0);
    // Without a ceiling: bytes, no floor; with none steady: nothing.
    let s = per_step("decode", &inst, |_| true, None, None, None).unwrap();
    assert_eq!((s.memory_floor_ms, s.bandwidth_use_pct), (None, None));
    assert!(per_step("decode", &inst, |_| false, None, None, Some(ceiling)).is_none());
}

#[test]
fn steps_of_no_length_use_no_bandwidth_and_give_no_inf() {
    let ceiling = Bandwidth {
        bytes_per_s: 1e12,
        source: BandwidthSource::Datasheet,
    };
    let inst = [figures(key(0, 0), 0.0, 0, BytesSource::Shares)];
    let s = per_step("decode", &inst, |_| true, None, None, Some(ceiling)).unwrap();
    assert_eq!(s.bandwidth_use_pct, Some(0.0));
    assert_eq!(s.coverage_pct, 0.0);
    assert_eq!(s.source, BytesSource::Shares);
    let json = serde_json::to_string(&s).unwrap();
    assert!(
        !json.contains("null") && !json.contains("inf") && !json.contains("NaN"),
        "{json}"
    );
}

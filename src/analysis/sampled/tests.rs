use super::read::of_devices;
use super::*;
use crate::parse::sqlite::Series;

/// A sample at `t` (us) with GR Active, DRAM read, DRAM write, SM issue, tensor (%).
fn at(t_us: i64, v: [f32; 5]) -> Sample {
    let mut all = [f32::NAN; crate::parse::sqlite::SLOTS];
    all[..5].copy_from_slice(&v);
    Sample {
        t: t_us * 1000,
        v: all,
    }
}

fn launch(name: &str, grid: &str, start_us: f64, end_us: f64) -> SampledLaunch {
    SampledLaunch {
        name: name.into(),
        grid: grid.into(),
        block: "(128,1,1)".into(),
        start: (start_us * 1000.0) as i64,
        end: (end_us * 1000.0) as i64,
        instance: None,
        device: 0,
    }
}

/// Samples every 20 us from 0 to `n` windows, all with the same values.
fn steady(n: i64, v: [f32; 5]) -> Vec<Sample> {
    (0..n).map(|i| at(i * 20, v)).collect()
}

#[test]
fn a_kernel_shorter_than_a_window_gets_the_rate_while_the_gpu_worked() {
    // A 5 us kernel in a 20 us window: the GPU worked a quarter of it (GR Active 25%) at
    // 60% DRAM for that time, which the window averages to 15%.
    let s = steady(4, [25.0, 10.0, 5.0, 2.0, 1.0]);
    let a = attribute(&s, &[launch("gemv", "(4,1,1)", 22.0, 27.0)]).unwrap();
    let f = a.whole.unwrap();
    assert_eq!(f.launches, 1);
    assert_eq!(f.samples, 1);
    assert!((f.coverage_pct - 100.0).abs() < 1e-9);
    assert!((f.dram_pct.unwrap() - 60.0).abs() < 1e-4, "{f:?}");
    assert!((f.sm_issue_pct.unwrap() - 8.0).abs() < 1e-4);
    assert_eq!(f.bound, Some(Bound::Memory));
    assert!((a.frequency_hz - 50_000.0).abs() < 1e-6);
}

#[test]
fn a_kernel_across_two_windows_is_weighed_by_its_time_in_each() {
    let s = vec![
        at(0, [100.0, 80.0, 0.0, 5.0, 0.0]),
        at(20, [100.0, 20.0, 0.0, 5.0, 0.0]),
        at(40, [100.0, 20.0, 0.0, 5.0, 0.0]),
    ];
    // 15 us in the first window (80%), 5 us in the second (20%): 65%.
    let f = attribute(&s, &[launch("k", "(1,1,1)", 5.0, 25.0)])
        .unwrap()
        .whole
        .unwrap();
    assert!((f.dram_pct.unwrap() - 65.0).abs() < 1e-4, "{f:?}");
    assert_eq!(f.samples, 2);
}

#[test]
fn a_sample_is_never_stretched_across_a_gap() {
    // Samples stop at 40 us and resume at 200 us: 60..200 us is in no window.
    let mut s = steady(3, [100.0, 70.0, 0.0, 1.0, 1.0]);
    s.extend((10..13).map(|i| at(i * 20, [100.0, 70.0, 0.0, 1.0, 1.0])));
    let f = attribute(&s, &[launch("k", "(1,1,1)", 40.0, 140.0)])
        .unwrap()
        .whole
        .unwrap();
    // Only 40..60 us is covered: 20 of 100 us.
    assert!((f.coverage_pct - 20.0).abs() < 1e-9, "{f:?}");
    assert_eq!(f.bound, None, "no class under 80% coverage");
    assert!((f.dram_pct.unwrap() - 70.0).abs() < 1e-4);
}

#[test]
fn a_window_at_the_range_edge_covers_one_period_and_no_more() {
    // The last sample's window ends one period after it; a launch before the first sample
    // is uncovered.
    let s = steady(3, [100.0, 0.0, 0.0, 90.0, 80.0]);
    let a = attribute(
        &s,
        &[
            launch("late", "(1,1,1)", 50.0, 70.0),
            launch("early", "(1,1,1)", -10.0, 0.0),
        ],
    )
    .unwrap();
    let mut recs = vec![record("late"), record("early")];
    a.attach(&mut recs);
    let late = recs[0].sampled.as_ref().unwrap().all;
    assert!((late.coverage_pct - 50.0).abs() < 1e-9, "{late:?}");
    let early = recs[1].sampled.as_ref().unwrap().all;
    assert_eq!((early.coverage_pct, early.samples), (0.0, 0));
    assert_eq!(early.dram_pct, None);
}

#[test]
fn a_window_that_saw_the_gpu_idle_says_nothing_of_the_launch() {
    let s = vec![
        at(0, [0.0, 0.0, 0.0, 0.0, 0.0]),
        at(20, [50.0, 40.0, 0.0, 0.0, 0.0]),
    ];
    let f = attribute(&s, &[launch("k", "(1,1,1)", 10.0, 30.0)])
        .unwrap()
        .whole
        .unwrap();
    assert!((f.coverage_pct - 50.0).abs() < 1e-9);
    assert!((f.dram_pct.unwrap() - 80.0).abs() < 1e-4);
}

#[test]
fn a_set_without_gr_active_gives_the_raw_window_average() {
    let s = steady(3, [f32::NAN, 30.0, 10.0, 70.0, f32::NAN]);
    let f = attribute(&s, &[launch("k", "(1,1,1)", 0.0, 40.0)])
        .unwrap()
        .whole
        .unwrap();
    assert!((f.dram_pct.unwrap() - 40.0).abs() < 1e-4);
    assert_eq!(f.tensor_pct, None);
    assert_eq!(f.bound, Some(Bound::Compute));
}

#[test]
fn each_launch_configuration_has_its_own_figures() {
    let mut s = steady(2, [100.0, 90.0, 0.0, 1.0, 0.0]);
    s.extend((2..4).map(|i| at(i * 20, [100.0, 5.0, 0.0, 1.0, 0.0])));
    let a = attribute(
        &s,
        &[
            launch("k", "(64,1,1)", 0.0, 40.0),
            launch("k", "(2,1,1)", 40.0, 50.0),
        ],
    )
    .unwrap();
    let mut recs = vec![record("k")];
    a.attach(&mut recs);
    let k = recs[0].sampled.as_ref().unwrap();
    assert_eq!(k.configs.len(), 2);
    assert_eq!(k.configs[0].grid, "(64,1,1)");
    assert_eq!(k.configs[0].figures.bound, Some(Bound::Memory));
    // The 10 us launch in 20 us windows: figures, but no class (rules::SAMPLED_WINDOW).
    assert_eq!(k.configs[1].figures.bound, None);
    assert!(k.configs[1].figures.dram_pct.is_some());
    assert_eq!(k.all.launches, 2);
    assert_eq!(
        k.all.short, None,
        "a mean launch of 25 us fills its windows"
    );
    assert!((k.all.dram_pct.unwrap() - (90.0 * 40.0 + 5.0 * 10.0) / 50.0).abs() < 1e-4);
}

#[test]
fn fewer_than_two_samples_attribute_nothing() {
    assert!(attribute(&[at(0, [1.0; 5])], &[launch("k", "(1,1,1)", 0.0, 1.0)]).is_none());
    assert!(attribute(&[], &[]).is_none());
}

fn record(name: &str) -> KernelRecord {
    serde_json::from_value(serde_json::json!({
        "rank": 0, "name": name, "ncu_name": null, "nvtx_range": null, "instances": 1,
        "total_time_ns": 1.0, "avg_time_ns": 1.0, "gpu_time_pct": null, "time_source": "nsys",
        "sm_throughput_pct": null, "dram_throughput_pct": null, "bound": null, "grid": null,
        "block": null, "ncu_instances": 0, "mangled": null, "per_launch": null
    }))
    .unwrap()
}

#[test]
fn each_range_instance_has_its_own_figures() {
    let mut s = steady(2, [100.0, 80.0, 0.0, 1.0, 0.0]);
    s.extend((2..4).map(|i| at(i * 20, [100.0, 10.0, 0.0, 1.0, 0.0])));
    let mut a = launch("k", "(1,1,1)", 0.0, 40.0);
    a.instance = Some(InstanceKey {
        start: 7,
        ..InstanceKey::default()
    });
    let mut b = launch("k", "(1,1,1)", 40.0, 80.0);
    b.instance = Some(InstanceKey {
        start: 3,
        ..InstanceKey::default()
    });
    let got = attribute(&s, &[a, b]).unwrap();
    let starts: Vec<i64> = got.instances.iter().map(|i| i.start_ns).collect();
    assert_eq!(starts, [3, 7], "in start order");
    assert!((got.instances[0].figures.dram_pct.unwrap() - 10.0).abs() < 1e-4);
    assert!((got.instances[1].figures.dram_pct.unwrap() - 80.0).abs() < 1e-4);
}

/// A sampled run's figures for `launches` under `samples`, as a later run finds them.
fn stored_of(samples: &[Sample], launches: &[SampledLaunch]) -> reuse::Stored {
    let mut records: Vec<KernelRecord> = Vec::new();
    let a = attribute(samples, launches).unwrap();
    for l in launches {
        if records.iter().all(|r| *r.name != *l.name) {
            records.push(record(&l.name));
        }
    }
    a.attach(&mut records);
    let kernels = records
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.sampled.as_ref()?)));
    reuse::Stored::of("first", Some("H100"), a.frequency_hz, kernels)
}

#[test]
fn reused_figures_keep_their_rates_over_this_runs_launches() {
    let s = steady(50, [100.0, 70.0, 0.0, 10.0, 5.0]);
    let then = [
        launch("gemv", "(4,1,1)", 0.0, 20.0),
        launch("gemv", "(4,1,1)", 40.0, 60.0),
    ];
    let stored = stored_of(&s, &then);
    // This run: three launches of the same length, and a kernel the first run never saw.
    let now = [
        launch("gemv", "(4,1,1)", 100.0, 120.0),
        launch("gemv", "(4,1,1)", 200.0, 220.0),
        launch("gemv", "(4,1,1)", 300.0, 320.0),
        launch("new", "(1,1,1)", 400.0, 460.0),
    ];
    let r = reuse::attribute(&now, &stored, reuse::FILE);
    let mut records = vec![record("gemv")];
    r.attach(&mut records);
    let f = records[0].sampled.as_ref().unwrap().configs[0].figures;
    assert_eq!(f.launches, 3);
    assert!((f.time_ns - 60_000.0).abs() < 1e-6);
    assert!((f.dram_pct.unwrap() - 70.0).abs() < 1e-4, "{f:?}");
    assert!((f.coverage_pct - 100.0).abs() < 1e-9);
    assert_eq!(f.bound, Some(Bound::Memory));
    // The unseen kernel's 60 us are uncovered: half of the 120 us of kernel time.
    let whole = r.whole.unwrap();
    assert!((whole.coverage_pct - 50.0).abs() < 1e-9, "{whole:?}");
    assert_eq!(whole.bound, None, "under the coverage the class needs");
    let used = r.reused.unwrap();
    assert_eq!((used.unseen.configs, used.moved.configs), (1, 0));
    assert!((used.unseen.time_ns - 60_000.0).abs() < 1e-6);
    // Half the kernel time without figures: the next run samples again; 1% would not.
    assert!(used.resample(120_000.0));
    assert!(!used.resample(6_000_000.0));
    assert!(
        r.instances.is_empty(),
        "per instance needs this run's samples"
    );
}

/// A launch of d in windows of W is at most d / W of the window time its figures average: a
/// kernel's mean launch under one window gets no class, its figures marked with both
/// (rules::SAMPLED_WINDOW); a range's figures over the same launches keep theirs.
#[test]
fn launches_shorter_than_the_window_get_no_class() {
    let s = steady(10, [100.0, 90.0, 0.0, 1.0, 0.0]);
    let launches = [
        launch("gemv", "(4,1,1)", 22.0, 27.0),
        launch("gemv", "(4,1,1)", 62.0, 69.0),
        launch("gemm", "(64,1,1)", 100.0, 120.0),
    ];
    let a = attribute(&s, &launches).unwrap();
    let mut recs = vec![record("gemv"), record("gemm")];
    a.attach(&mut recs);
    let gemv = recs[0].sampled.as_ref().unwrap();
    let short = gemv.all.short.expect("6 us against a 20 us window");
    assert!((short.mean_launch_ns - 6_000.0).abs() < 1e-6, "{short:?}");
    assert!((short.window_ns - 20_000.0).abs() < 1e-6);
    assert_eq!(gemv.all.bound, None);
    assert_eq!(gemv.configs[0].figures.short, Some(short));
    // What the windows say stays in the figures, for the comparison with ncu.
    assert!((gemv.all.dram_pct.unwrap() - 90.0).abs() < 1e-4);
    // A launch exactly one window long is classed.
    let gemm = recs[1].sampled.as_ref().unwrap().all;
    assert_eq!((gemm.short, gemm.bound), (None, Some(Bound::Memory)));
    let whole = a.whole.unwrap();
    assert_eq!((whole.short, whole.bound), (None, Some(Bound::Memory)));
}

/// Reused figures are held against the sampled run's window: this run's launches decide.
#[test]
fn reused_launches_shorter_than_the_sampled_window_get_no_class() {
    let s = steady(50, [100.0, 70.0, 0.0, 10.0, 5.0]);
    let stored = stored_of(&s, &[launch("k", "(4,1,1)", 0.0, 10.0)]);
    let r = reuse::attribute(&[launch("k", "(4,1,1)", 100.0, 110.0)], &stored, "f");
    let mut records = vec![record("k")];
    r.attach(&mut records);
    let f = records[0].sampled.as_ref().unwrap().all;
    assert_eq!(f.bound, None);
    assert!(
        (f.short.unwrap().window_ns - 20_000.0).abs() < 1e-6,
        "{f:?}"
    );
    assert!((f.dram_pct.unwrap() - 70.0).abs() < 1e-4);
}

#[test]
fn a_configuration_whose_mean_duration_moved_past_the_band_takes_no_figures() {
    let s = steady(50, [100.0, 70.0, 0.0, 10.0, 5.0]);
    let stored = stored_of(&s, &[launch("k", "(4,1,1)", 0.0, 10.0)]);
    for (len_us, moved) in [(11.4, false), (8.6, false), (11.6, true), (5.0, true)] {
        let r = reuse::attribute(
            &[launch("k", "(4,1,1)", 100.0, 100.0 + len_us)],
            &stored,
            "f",
        );
        let used = r.reused.as_ref().unwrap();
        assert_eq!(used.moved.configs == 1, moved, "{len_us} us against 10");
        assert_eq!(r.whole.unwrap().dram_pct.is_some(), !moved);
    }
}

/// Two GPUs sampled, the kernels on one device: that device's samples are theirs, by the
/// GPU number in the low byte of the stream id (ids as an H100 pair's export had them); a
/// device no stream is numbered as takes none.
#[test]
fn of_several_sampled_gpus_the_kernels_device_is_theirs() {
    let gpu0 = Series {
        gpu: 281_479_271_677_952,
        samples: steady(6, [100.0, 40.0, 10.0, 5.0, 1.0]),
        names: Vec::new(),
        whole_shares: true,
    };
    let gpu1 = Series {
        gpu: 281_479_271_677_953,
        samples: steady(6, [100.0, 2.0, 1.0, 50.0, 1.0]),
        names: Vec::new(),
        whole_shares: true,
    };
    let launches = [launch("k", "(4,1,1)", 21.0, 59.0)];
    for (device, own) in [(0, &gpu0), (1, &gpu1)] {
        let alone = attribute(&own.samples, &launches).unwrap();
        for order in [[gpu0.clone(), gpu1.clone()], [gpu1.clone(), gpu0.clone()]] {
            let on = |mut l: SampledLaunch| {
                l.device = device;
                l
            };
            let mine: Vec<SampledLaunch> = launches.iter().cloned().map(on).collect();
            let a = of_devices(&order, &[device], &mine, None).unwrap();
            assert_eq!(a.whole, alone.whole);
            let p = a.picked.unwrap();
            assert!(p.starts_with(&format!("nsys sampled 2 GPUs and the range's kernels ran on device {device}: its samples are theirs")), "{p}");
        }
    }
    let why = of_devices(&[gpu0.clone(), gpu1.clone()], &[2], &launches, None).unwrap_err();
    assert!(
        why.contains("2 GPUs sampled and none numbered as the range's kernels' device 2"),
        "{why}"
    );
    // One process on two devices (a model split across GPUs): each launch takes its own
    // device's samples; a third device, not sampled, leaves its launch uncovered.
    let on = |device: i64, start: f64| {
        let mut l = launch("k", "(4,1,1)", start, start + 38.0);
        l.device = device;
        l
    };
    let both = [on(0, 21.0), on(1, 21.0)];
    let a = of_devices(&[gpu1.clone(), gpu0.clone()], &[0, 1], &both, None).unwrap();
    let w = a.whole.unwrap();
    assert_eq!((w.launches, w.coverage_pct), (2, 100.0));
    let dram = |s: &Series| {
        attribute(&s.samples, &launches)
            .unwrap()
            .whole
            .unwrap()
            .dram_pct
    };
    let mean = (dram(&gpu0).unwrap() + dram(&gpu1).unwrap()) / 2.0;
    assert!((w.dram_pct.unwrap() - mean).abs() < 1e-9, "{w:?}");
    let p = a.picked.unwrap();
    assert!(
        p.contains("ran on devices 0, 1: each launch takes its own device's samples"),
        "{p}"
    );
    // One GPU sampled, the kernels on two: "1 GPU", not "1 GPUs".
    let one = of_devices(std::slice::from_ref(&gpu0), &[0, 1], &both, None).unwrap();
    let p = one.picked.unwrap();
    assert!(p.starts_with("nsys sampled 1 GPU and"), "{p}");
    let three = [on(0, 21.0), on(1, 21.0), on(2, 21.0)];
    let a = of_devices(&[gpu0, gpu1], &[0, 1, 2], &three, None).unwrap();
    let w = a.whole.unwrap();
    assert!((w.coverage_pct - 200.0 / 3.0).abs() < 1e-9, "{w:?}");
    assert!(a
        .picked
        .unwrap()
        .contains("device 2's launches, with none, are uncovered"));
}

#[test]
fn only_a_visible_list_other_than_0_1_2_renumbers_the_gpus() {
    for v in ["0", "0,1", "0, 1, 2"] {
        assert!(!renumbers(v), "{v}");
    }
    for v in [
        "1",
        "1,0",
        "0,2",
        "GPU-4c3203b8-e321-7995-fd5b-d9ee431943ac",
    ] {
        assert!(renumbers(v), "{v}");
    }
}

/// A configuration without a sampled class (launches shorter than the window) is compared by
/// its DRAM figure and left out of the classes' agreement, not counted as disagreeing.
#[test]
fn classes_agree_over_the_configurations_that_have_one() {
    let row = |kernel: &str, sampled: f64, bound, short| Agreement {
        kernel: kernel.to_string(),
        grid: "(1,1,1)".to_string(),
        block: "(128,1,1)".to_string(),
        share_pct: 50.0,
        time_ns: 1e6,
        coverage_pct: 100.0,
        sampled_dram_pct: sampled,
        ncu_dram_pct: 70.0,
        sampled_bound: bound,
        ncu_bound: Bound::Memory,
        short,
    };
    let short = crate::model::ShortLaunches {
        mean_launch_ns: 2_000.0,
        window_ns: 20_000.0,
    };
    let rows = [
        row("long", 72.0, Some(Bound::Memory), None),
        row("brief", 40.0, None, Some(short)),
    ];
    let c = agreement_stats(&rows, 5.0, 80.0).unwrap();
    assert_eq!((c.configs, c.unclassed), (2, 1));
    assert_eq!(c.same_class_pct, Some(100.0));
    assert!((c.dram_mean_diff - 16.0).abs() < 1e-9, "{c:?}");
    assert!((c.dram_worst_diff - 30.0).abs() < 1e-9);
    let none = agreement_stats(&rows[1..], 5.0, 80.0).unwrap();
    assert_eq!((none.same_class_pct, none.unclassed), (None, 1));
}

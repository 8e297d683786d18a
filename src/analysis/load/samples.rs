//! The nsys pass's GPU-metrics samples of a run: read from the export (or reused from an
//! earlier run), attributed to the captured range's launches, and its bytes per step against
//! the DRAM bandwidths known for the GPU.

use super::*;

/// The workload's `CUDA_VISIBLE_DEVICES`: `workload.device`, else the workload's own env, else
/// stage2's as env.json kept it.
fn visible_devices(config: &Config, env: Option<&serde_json::Value>) -> Option<String> {
    config.visible_devices().or_else(|| {
        env?["env"]["CUDA_VISIBLE_DEVICES"]
            .as_str()
            .map(str::to_string)
    })
}

/// The run's sampled figures, or what it says of their absence. Sampled figures are evidence
/// beside the timeline: a broken table costs them alone.
pub(super) fn sampled_of(
    run: &RunDir,
    (config, (sampling, off)): (&Config, (Option<&SamplingRecord>, Option<&str>)),
    (env, peaks): (Option<&serde_json::Value>, Option<&roofline::Peaks>),
    (db, timeline, range): (Option<&NsysDb>, Option<&Timeline>, Option<&str>),
) -> Option<sampled::Sampled> {
    let visible = visible_devices(config, env);
    let devices = sampling
        .and_then(SamplingRecord::sampled_devices)
        .map(str::to_string);
    let gpu = env.and_then(|e| e["gpus"][0]["name"].as_str());
    let (shares_of, ceiling) = bandwidths(peaks, gpu);
    let read = match (db, timeline) {
        (Some(db), Some(t)) => {
            let renumbered = visible.as_deref().filter(|v| sampled::renumbers(v));
            // GPUs asked for by number are numbered as CUDA numbers them where nothing
            // renumbers.
            let by_number = devices.as_deref().is_some_and(crate::config::gpu_numbers);
            let numbering = match (renumbered, by_number) {
                (None, true) => sampled::Numbering::AsCuda,
                _ => sampled::Numbering::Unknown,
            };
            let asked = sampling.map_or(&[][..], |s| &s.asked[..]);
            let reading = sampled::Reading {
                renumbered,
                numbering,
                shares_of,
                asked,
            };
            sampled_figures(run, db, t, range, &reading).unwrap_or_else(|e| {
                tracing::warn!("sampled GPU metrics left out: {e}");
                None
            })
        }
        _ => None,
    };
    let off = off.map(str::to_string);
    let mut s = read.or_else(|| sampled::none_taken(db.is_some() && devices.is_some(), off))?;
    if let (Some(t), Some(range)) = (timeline, range) {
        s.steps = steps(&s, t, range, shares_of, ceiling);
        if s.steps.is_none() && shares_of.is_none() && !s.instances.is_empty() {
            s.bytes_note = Some(format!(
                "none are given: the export holds no DRAM byte counters, and no DRAM bandwidth is known for {} to read the shares against (ncu measured no peak; the datasheet table has no such GPU)",
                gpu.unwrap_or("this GPU")
            ));
        }
    }
    Some(s)
}

/// The DRAM bandwidth the sampled shares are of (ncu's peak, else the datasheet's), and the
/// ceiling a step's bytes are set against (the datasheet's, else ncu's peak): nothing on the
/// GPU measures a copy bandwidth today.
fn bandwidths(
    peaks: Option<&roofline::Peaks>,
    gpu: Option<&str>,
) -> (
    Option<sampled::bytes::Bandwidth>,
    Option<sampled::bytes::Bandwidth>,
) {
    use sampled::bytes::{Bandwidth, BandwidthSource};
    let ncu = peaks
        .map(|p| p.dram_bytes_per_s)
        .filter(|b| b.is_finite() && *b > 0.0)
        .map(|bytes_per_s| Bandwidth {
            bytes_per_s,
            source: BandwidthSource::NcuPeak,
        });
    let sheet = gpu
        .and_then(crate::analysis::datasheet::dram_bytes_per_s)
        .map(|bytes_per_s| Bandwidth {
            bytes_per_s,
            source: BandwidthSource::Datasheet,
        });
    (ncu.or(sheet), sheet.or(ncu))
}

/// The captured range's bytes per step over its steady instances: where the analysis set some
/// apart (a warm-up, compiling instances), the most numerous group's.
fn steps(
    s: &sampled::Sampled,
    t: &Timeline,
    range: &str,
    shares_of: Option<sampled::bytes::Bandwidth>,
    ceiling: Option<sampled::bytes::Bandwidth>,
) -> Option<sampled::bytes::StepBytes> {
    let typical = t
        .groups
        .iter()
        .find(|g| g.name == range)
        .and_then(|g| g.typical());
    let steady = |k: &sampled::InstanceKey| match typical {
        None => true,
        Some(grp) => t
            .group_of
            .get(&(k.start, k.tid))
            .is_some_and(|(_, label)| *label == grp.label),
    };
    let group = typical.map(|g| g.label.clone());
    sampled::bytes::per_step(range, &s.instances, steady, group, shares_of, ceiling)
}

/// This run's samples, or where its nsys pass did not sample, the figures it reused from an
/// earlier run (`nsys/gpu_metrics_reused.json`).
fn sampled_figures(
    run: &RunDir,
    db: &NsysDb,
    t: &Timeline,
    range: Option<&str>,
    reading: &sampled::Reading,
) -> Result<Option<sampled::Sampled>, Error> {
    match sampled::read(db, &t.phases, range, reading) {
        Ok(Some(s)) => return Ok(Some(s)),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!("sampled GPU metrics left out: {e}");
            // Said in the reports too, without the export's full path: the export holds
            // samples that could not be read, not none.
            let why = match &e {
                Error::Parse(crate::error::ParseError::At { message, .. }) => message.clone(),
                e => e.to_string(),
            };
            let why = format!("its samples could not be read ({why})");
            return Ok(Some(sampled::Sampled::noted(why)));
        }
    }
    let path = run.path.join(sampled::reuse::FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = crate::files::read_capped(&path, crate::files::RUN_FILE_CAP)
        .map_err(|e| Error::io("read", path.clone(), e))?;
    let stored: sampled::reuse::Stored = serde_json::from_str(&text).map_err(|e| {
        Error::parse(
            &path,
            Some(e.line() as u64),
            format!("not the sampled figures of an earlier run ({e})"),
        )
    })?;
    if let Err(why) = stored.check() {
        // This run's nsys pass did not sample: its figures would be these alone.
        return Ok(Some(sampled::Sampled::not_taken(format!(
            "it was to reuse an earlier run's figures, and {} holds figures no sampled run could have ({why})",
            sampled::reuse::FILE
        ))));
    }
    let launches = sampled::launches(db, &t.phases, range)?;
    Ok(Some(sampled::reuse::attribute(
        &launches,
        &stored,
        sampled::reuse::FILE,
    )))
}

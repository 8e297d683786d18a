//! A step's DRAM bytes read, measured by the nsys pass's samples, against what the model's own
//! numbers say it must read (rules::CENSUS).

use super::super::{Claim, Figure, Findings, Quantity, Scope};
use crate::analysis::copies::copies_by_index;
use crate::analysis::Artifacts;
use crate::rules;

pub(super) fn census(a: &Artifacts, out: &mut Findings) {
    let (Some(c), Some(s)) = (a.census.as_ref(), a.steps()) else {
        return;
    };
    if c.range != s.range || c.read_bytes <= 0.0 || s.coverage_pct <= 0.0 {
        return;
    }
    let mut scope = Scope::range(&s.range).instances(s.instances as u64);
    if let Some(g) = &s.group {
        scope = scope.group(g);
    }
    let pct = 100.0 * s.dram_read_bytes / c.read_bytes;
    let band = rules::CENSUS.threshold;
    let above = match pct {
        p if p > 100.0 + band => Some(true),
        p if p < 100.0 - band => Some(false),
        _ => None,
    };
    let marks = |q, v| Figure::new(q, v, &a.sqlite_file, &scope);
    let mut ev = vec![
        Figure::new(
            Quantity::StepReadMb,
            s.dram_read_bytes / 1e6,
            a.sampled_source(),
            &scope,
        ),
        marks(Quantity::CensusReadMb, c.read_bytes / 1e6),
        Figure::new(Quantity::ReadOfCensusPct, pct, a.sampled_source(), &scope),
        marks(Quantity::CensusWeightsMb, c.dense_bytes / 1e6),
        marks(Quantity::BatchSequences, c.batch),
    ];
    let sampled = |q, v| Figure::new(q, v, a.sampled_source(), &scope);
    ev.push(sampled(Quantity::StepWriteMb, s.dram_write_bytes / 1e6));
    if let (Some(kv), Some(past)) = (c.kv_bytes.filter(|kv| *kv > 0.0), c.past) {
        ev.push(marks(Quantity::CensusKvMb, kv / 1e6));
        ev.push(marks(Quantity::CachedTokens, past));
        ev.push(sampled(
            Quantity::WriteOfKvPct,
            100.0 * s.dram_write_bytes / kv,
        ));
    }
    if let Some(x) = c.experts {
        ev.push(marks(Quantity::CensusExpertsMb, x.expected / 1e6));
    }
    // Above the census in a model with experts: the kernels that copy by index, which an
    // experts layer that indexes its chosen experts' weights gathers them with, by GPU time.
    if above == Some(true) && c.experts.is_some() {
        for r in a.records.iter().filter(|r| copies_by_index(&r.name)) {
            let Some(share) = r.gpu_time_pct.filter(|p| *p >= rules::LEVER_MIN_PCT) else {
                continue;
            };
            let k = Scope::range(&s.range).kernel(&r.name);
            ev.push(Figure::new(
                Quantity::KernelSharePct,
                share,
                &a.kern_sum_file,
                &k,
            ));
        }
    }
    out.push(Claim::Census { above }, scope, Some(rules::CENSUS), ev);
}

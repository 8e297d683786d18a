//! Instances that differ, told apart: a repeated range's instances (decode steps, requests)
//! grouped by a stated rule instead of averaged together. `report.instances` chooses it:
//!
//! - `auto`: (1) the first instances (up to 4), each over 3x the median of the rest of its
//!   enclosing instance (or of the rest, without one), are a warm-up of their own;
//!   (2) instances in different enclosing instances (each `generate()` call) whose medians
//!   differ by over 1.5x are grouped by that enclosing instance; (3) otherwise the sorted wall
//!   times are split at their largest jump when it is over 2x and leaves at least two
//!   instances on each side; (4) otherwise one group.
//! - `all`: one group, every instance.
//! - `skip=N`: the first N instances are a warm-up group, the rest one group.

use serde::Serialize;

use super::nesting::Nesting;
use super::ranges::Spread;
use crate::parse::sqlite::NvtxRange;

use crate::rules::GROUPS_MIN_INSTANCES as MIN_INSTANCES;
/// Ranges with fewer instances are not grouped.
pub(crate) use crate::rules::{
    Split, CLUSTERS, COMPILING, ENCLOSING, SKIP, WARMUP, WARMUP_MAX_INSTANCES,
};

/// `report.instances`, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    Auto,
    All,
    Skip(usize),
}

impl Rule {
    pub(crate) fn parse(text: &str) -> Option<Rule> {
        match text.trim() {
            "auto" => Some(Rule::Auto),
            "all" => Some(Rule::All),
            t => t.strip_prefix("skip=")?.parse().ok().map(Rule::Skip),
        }
    }
}

/// One group of a range's instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Group {
    /// What the instances have in common: "warm-up (first instance)", "inside `generate` #2",
    /// "the 15 slower", ...
    pub(crate) label: String,
    pub(crate) instances: u64,
    /// The 1-based ordinals (start order) of its first and last instance.
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) median_wall_ns: f64,
    /// The median of its instances' time on either clock (the longer of CPU wall and GPU
    /// projection: a prefill's kernels run on after the CPU has queued them); 0 before the
    /// stream is read.
    #[serde(skip)]
    pub(crate) median_time_ns: f64,
    pub(crate) min_wall_ns: f64,
    pub(crate) max_wall_ns: f64,
    /// Its instances' 0-based ordinals (start order).
    #[serde(skip)]
    pub(crate) members: Vec<usize>,
    /// Its instances' indices in the export's ranges.
    #[serde(skip)]
    pub(crate) ranges: Vec<usize>,
    /// GPU busy (union of its instances' kernel intervals) over their time (the longer of
    /// CPU wall and GPU projection, summed), in % (None: not measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_busy_of_range_pct: Option<f64>,
    /// A group of two: its instances' walls in start order (a warm-up of a compiling and a
    /// graph-recording call reads in that order); empty for other sizes.
    #[serde(skip)]
    pub(crate) walls_of_two: Vec<f64>,
    /// Its instances' kernels: summed durations and launches (0 before the stream is read).
    #[serde(skip)]
    pub(crate) kernel_ns: i64,
    #[serde(skip)]
    pub(crate) launches: u64,
    /// Of those, kernels of CUDA graph launches (traced per node).
    #[serde(skip)]
    pub(crate) graph_kernels: u64,
}

impl Group {
    /// Set the busy share from each instance's (wall, projection, busy) in ns.
    pub(crate) fn set_busy(&mut self, figures: impl Iterator<Item = (i64, i64, i64)>) {
        let (mut wall, mut proj, mut busy) = (0i64, 0i64, 0i64);
        let mut times = Vec::new();
        for (w, p, b) in figures {
            wall = wall.saturating_add(w);
            proj = proj.saturating_add(p);
            busy = busy.saturating_add(b);
            times.push(w.max(p) as f64);
        }
        self.median_time_ns = Spread::of(times).median;
        let span = wall.max(proj);
        self.gpu_busy_of_range_pct =
            (span > 0).then(|| (100.0 * busy as f64 / span as f64).min(100.0));
    }
}

/// A range whose instances fall into more than one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RangeGroups {
    pub(crate) name: String,
    /// Which rule split them.
    pub(crate) rule: Split,
    pub(crate) groups: Vec<Group>,
}

impl RangeGroups {
    /// The most numerous group (the steady kind, beside a warm-up): the kind the graph step
    /// measures one instance of, and whose median its floor is set against.
    pub(crate) fn typical(&self) -> Option<&Group> {
        self.groups.iter().max_by_key(|g| g.instances)
    }
}

/// One instance: its wall time and what encloses it ("`generate` #2", or none in the capture).
struct Inst {
    wall: f64,
    parent: Option<String>,
}

fn group(label: String, members: Vec<usize>, all: &[Inst]) -> Group {
    let walls = Spread::of(members.iter().map(|&i| all[i].wall).collect());
    let walls_of_two = match members.len() {
        2 => members.iter().map(|&i| all[i].wall).collect(),
        _ => Vec::new(),
    };
    Group {
        label,
        instances: members.len() as u64,
        first: members.first().map_or(0, |&i| i as u64 + 1),
        last: members.last().map_or(0, |&i| i as u64 + 1),
        median_wall_ns: walls.median,
        median_time_ns: 0.0,
        min_wall_ns: walls.min,
        max_wall_ns: walls.max,
        members,
        ranges: Vec::new(),
        gpu_busy_of_range_pct: None,
        walls_of_two,
        kernel_ns: 0,
        launches: 0,
        graph_kernels: 0,
    }
}

/// Group one range's instances (in start order) by `rule`; None when they form one group.
fn split(name: &str, all: &[Inst], rule: Rule) -> Option<RangeGroups> {
    let n = all.len();
    let out = |rule: Split, groups: Vec<Group>| {
        (groups.len() > 1).then(|| RangeGroups {
            name: name.to_string(),
            rule,
            groups,
        })
    };
    match rule {
        Rule::All => return None,
        Rule::Skip(k) if k == 0 || k >= n => return None,
        Rule::Skip(k) => {
            return out(
                SKIP,
                vec![
                    group(
                        format!("the first {k}, skipped as a warm-up"),
                        (0..k).collect(),
                        all,
                    ),
                    group(format!("the other {}", n - k), (k..n).collect(), all),
                ],
            )
        }
        Rule::Auto if n < MIN_INSTANCES => return None,
        Rule::Auto => {}
    }
    let k = warm_up(all);
    if k == 0 {
        return steady(name, all, 0);
    }
    let label = match k {
        1 => "the first, a warm-up".to_string(),
        k => format!("the first {k}, a warm-up"),
    };
    let mut groups = vec![group(label, (0..k).collect(), all)];
    groups.extend(steady(name, &all[k..], k).map_or_else(
        || vec![group(format!("the other {}", n - k), (k..n).collect(), all)],
        |g| g.groups,
    ));
    out(WARMUP, groups)
}

/// How many leading instances are a warm-up: each over the threshold times the median of the
/// instances after it in its own enclosing instance (a slow first call is not a warm-up of
/// the calls around it), at most [`WARMUP_MAX_INSTANCES`], leaving two or more.
fn warm_up(all: &[Inst]) -> usize {
    let mut k = 0;
    while k < WARMUP_MAX_INSTANCES && k < all.len() && all[k].parent == all[0].parent {
        let rest: Vec<f64> = all[k + 1..]
            .iter()
            .filter(|i| i.parent == all[0].parent)
            .map(|i| i.wall)
            .collect();
        if rest.len() < 2 || all[k].wall <= WARMUP.threshold * Spread::of(rest).median {
            break;
        }
        k += 1;
    }
    k
}

/// Rules (2) and (3) over `all`, whose first instance is ordinal `offset` of the range.
fn steady(name: &str, all: &[Inst], offset: usize) -> Option<RangeGroups> {
    let shift = |v: Vec<usize>| v.into_iter().map(|i| i + offset).collect::<Vec<_>>();
    let whole = |members: Vec<usize>, label: String| {
        let mut g = group(label, members.clone(), all);
        g.members = shift(members);
        g.first += offset as u64;
        g.last += offset as u64;
        g
    };
    // (2) By enclosing instance, in order of first appearance.
    let mut parents: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    // By hash, not a search of the list: a range can have thousands of enclosing instances.
    let mut at: rustc_hash::FxHashMap<Option<&str>, usize> = Default::default();
    for (i, inst) in all.iter().enumerate() {
        match at.get(&inst.parent.as_deref()) {
            Some(&p) => parents[p].1.push(i),
            None => {
                at.insert(inst.parent.as_deref(), parents.len());
                parents.push((inst.parent.clone(), vec![i]));
            }
        }
    }
    if parents.len() > 1 {
        let clusters = cluster_parents(&parents, all);
        if clusters.len() > 1 {
            let groups = clusters
                .into_iter()
                .map(|c| {
                    let labels: Vec<Option<&String>> =
                        c.iter().map(|&p| parents[p].0.as_ref()).collect();
                    let mut members: Vec<usize> =
                        c.iter().flat_map(|&p| parents[p].1.clone()).collect();
                    members.sort_unstable();
                    whole(members, enclosing_label(&labels))
                })
                .collect();
            return Some(RangeGroups {
                name: name.to_string(),
                rule: ENCLOSING,
                groups,
            });
        }
    }
    // (3) Two clusters, split at the largest jump of the sorted wall times.
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| all[a].wall.total_cmp(&all[b].wall));
    let (at, ratio) = (2..=all.len().saturating_sub(2))
        .map(|k| (k, all[order[k]].wall / all[order[k - 1]].wall.max(1.0)))
        .fold((0, 0.0), |best, x| if x.1 > best.1 { x } else { best });
    if at == 0 || ratio <= CLUSTERS.threshold {
        return None;
    }
    let (mut fast, mut slow) = (order[..at].to_vec(), order[at..].to_vec());
    fast.sort_unstable();
    slow.sort_unstable();
    let (nf, ns) = (fast.len(), slow.len());
    Some(RangeGroups {
        name: name.to_string(),
        rule: CLUSTERS,
        groups: vec![
            whole(fast, format!("the {nf} faster")),
            whole(slow, format!("the {ns} slower")),
        ],
    })
}

/// The enclosing instances (indices into `parents`) clustered by their instances' median wall
/// time: sorted by median, a cluster takes the next one while its median is within
/// `ENCLOSING.threshold` of the cluster's lowest. Clusters in order of their first instance. Sixty
/// `generate()` calls of one kind are one group, not sixty.
fn cluster_parents(parents: &[(Option<String>, Vec<usize>)], all: &[Inst]) -> Vec<Vec<usize>> {
    let medians: Vec<f64> = parents
        .iter()
        .map(|(_, v)| Spread::of(v.iter().map(|&i| all[i].wall).collect()).median)
        .collect();
    let mut order: Vec<usize> = (0..parents.len()).collect();
    order.sort_by(|&a, &b| medians[a].total_cmp(&medians[b]));
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for p in order {
        match clusters.last_mut() {
            Some(c) if medians[p] <= ENCLOSING.threshold * medians[c[0]].max(1.0) => c.push(p),
            _ => clusters.push(vec![p]),
        }
    }
    for c in &mut clusters {
        c.sort_unstable();
    }
    clusters.sort_by_key(|c| parents[c[0]].1.first().copied().unwrap_or(usize::MAX));
    clusters
}

/// "inside `generate` #2", or for several enclosing instances "inside 62 enclosing instances
/// (`generate` #2, `generate` #3, ..., `generate` #63)".
fn enclosing_label(parents: &[Option<&String>]) -> String {
    let one = |p: &Option<&String>| match p {
        Some(p) => p.to_string(),
        None => "no enclosing range in the capture".to_string(),
    };
    match parents {
        [Some(p)] => format!("inside {p}"),
        [None] => "with no enclosing range in the capture".to_string(),
        [a, b] => format!("inside 2 enclosing instances ({}, {})", one(a), one(b)),
        [a, b, c] => format!(
            "inside 3 enclosing instances ({}, {}, {})",
            one(a),
            one(b),
            one(c)
        ),
        [a, b, .., z] => format!(
            "inside {} enclosing instances ({}, {}, ..., {})",
            parents.len(),
            one(a),
            one(b),
            one(z)
        ),
        [] => String::new(),
    }
}

/// Every repeated range's groups, from the export's ranges.
pub(crate) fn groups(ranges: &[NvtxRange], nest: &Nesting, rule: Rule) -> Vec<RangeGroups> {
    groups_of(ranges, nest, rule, None)
}

/// [`groups`] of the range named `only` alone (the graph step's choice reads one range's).
pub(crate) fn groups_of(
    ranges: &[NvtxRange],
    nest: &Nesting,
    rule: Rule,
    only: Option<&str>,
) -> Vec<RangeGroups> {
    // Ordinals of each name's instances, for the enclosing instance's label.
    let mut by_name: rustc_hash::FxHashMap<&str, Vec<usize>> = Default::default();
    for (i, r) in ranges.iter().enumerate() {
        if r.end >= r.start {
            by_name.entry(&r.name).or_default().push(i);
        }
    }
    // Each instance's ordinal among its name's, by index (a search per instance was quadratic
    // in the enclosing ranges' instances).
    let mut ordinals: rustc_hash::FxHashMap<usize, usize> = Default::default();
    for idx in by_name.values() {
        for (k, &i) in idx.iter().enumerate() {
            ordinals.insert(i, k + 1);
        }
    }
    let ordinal = |i: usize| -> String {
        let k = ordinals.get(&i).copied().unwrap_or(1);
        format!("`{}` #{k}", &*ranges[i].name)
    };
    // By name; a name of one instance has no groups (73k of them cost a split each).
    let mut repeated: Vec<(&str, &Vec<usize>)> = by_name
        .iter()
        .filter(|(name, idx)| idx.len() > 1 && only.is_none_or(|o| o == **name))
        .map(|(name, idx)| (*name, idx))
        .collect();
    repeated.sort_unstable_by_key(|(name, _)| *name);
    let mut out = Vec::new();
    for (name, idx) in repeated {
        let mut idx = idx.clone();
        idx.sort_by_key(|&i| ranges[i].start);
        let all: Vec<Inst> = idx
            .iter()
            .map(|&i| Inst {
                wall: (ranges[i].end - ranges[i].start) as f64,
                parent: nest.parent(i).map(ordinal),
            })
            .collect();
        out.extend(split(name, &all, rule).map(|mut g| {
            for grp in &mut g.groups {
                grp.ranges = grp.members.iter().map(|&m| idx[m]).collect();
            }
            g
        }));
    }
    if !out.is_empty() {
        let wanted = out
            .iter()
            .flat_map(|g| g.groups.iter().flat_map(|grp| grp.ranges.iter().copied()))
            .collect();
        let children = child_names(ranges, nest, &wanted);
        for g in &mut out {
            name_what_holds(g, &children);
        }
    }
    out
}

/// Instances that compile, set apart by that evidence (`compiling(i)`: range `i` spent over
/// half its wall time compiling and loading GPU code), for each repeated range whose instances
/// include both kinds and that no rule but the positional warm-up split: the compiling ones
/// first, then the rest. Their position and number do not matter: a 2-instance range whose
/// first instance loads its kernels gets its steady instance set apart too.
pub(crate) fn set_apart_compiling(
    ranges: &[NvtxRange],
    groups: &mut Vec<RangeGroups>,
    first_use: impl Fn(usize) -> crate::analysis::ledger::FirstUse,
    grouped: impl Fn(&str) -> bool,
) {
    let mut by_name: rustc_hash::FxHashMap<&str, Vec<usize>> = Default::default();
    for (i, r) in ranges.iter().enumerate() {
        if r.push_pop && r.end >= r.start && grouped(&r.name) {
            by_name.entry(&r.name).or_default().push(i);
        }
    }
    let mut names: Vec<&str> = by_name.keys().copied().collect();
    names.sort_unstable();
    for name in names {
        let mut idx = by_name[name].clone();
        let n = idx.len();
        idx.sort_by_key(|&i| ranges[i].start);
        let (c, rest): (Vec<usize>, Vec<usize>) = (0..n).partition(|&k| first_use(idx[k]).any());
        let existing = groups.iter().position(|g| g.name == name);
        // A positional warm-up that holds every such instance already sets them apart (with
        // any slow first instance the evidence does not show): it stays.
        let positional = existing.is_none_or(|e| {
            let g = &groups[e];
            g.rule == WARMUP
                && g.groups
                    .first()
                    .is_none_or(|w| !c.iter().all(|k| w.members.contains(k)))
        });
        if n < 2 || c.is_empty() || rest.is_empty() || !positional {
            continue;
        }
        let all: Vec<Inst> = idx
            .iter()
            .map(|&i| Inst {
                wall: (ranges[i].end - ranges[i].start) as f64,
                parent: None,
            })
            .collect();
        let graphs = c.iter().any(|&k| first_use(idx[k]).records_graphs);
        let compiles = c.iter().any(|&k| first_use(idx[k]).compiles);
        let what = match (compiles, graphs) {
            (true, true) => "compiling GPU code or recording CUDA graphs",
            (false, true) => "recording CUDA graphs",
            _ => "compiling GPU code",
        };
        let label = format!("the {} {what}", c.len());
        // Not "the other N": they need not follow the compiling ones.
        let others = format!("the {} steady", rest.len());
        let mut g = RangeGroups {
            name: name.to_string(),
            rule: COMPILING,
            groups: vec![group(label, c, &all), group(others, rest, &all)],
        };
        for grp in &mut g.groups {
            grp.ranges = grp.members.iter().map(|&m| idx[m]).collect();
        }
        match existing {
            Some(e) => groups[e] = g,
            None => groups.push(g),
        }
    }
}

/// Per push/pop range (by index), the names of the ranges directly inside it, for the ranges
/// in `wanted` only.
fn child_names<'a>(
    ranges: &'a [NvtxRange],
    nest: &Nesting,
    wanted: &rustc_hash::FxHashSet<usize>,
) -> rustc_hash::FxHashMap<usize, Vec<&'a str>> {
    let mut out: rustc_hash::FxHashMap<usize, Vec<&str>> = Default::default();
    for (j, r) in ranges.iter().enumerate().filter(|(_, r)| r.push_pop) {
        if let Some(p) = nest.parent(j).filter(|p| wanted.contains(p)) {
            let v = out.entry(p).or_default();
            if !v.contains(&&*r.name) {
                v.push(&*r.name);
            }
        }
    }
    out
}

/// A group whose every instance holds a range that no instance of the other groups holds (a
/// step that carries a `prefill`, a call that compiles) is named by it: "the 7 slower (each
/// holds `prefill`)".
fn name_what_holds(g: &mut RangeGroups, children: &rustc_hash::FxHashMap<usize, Vec<&str>>) {
    // Per group: in how many of its instances each child name appears.
    let counts: Vec<rustc_hash::FxHashMap<&str, usize>> = g
        .groups
        .iter()
        .map(|grp| {
            let mut c: rustc_hash::FxHashMap<&str, usize> = Default::default();
            for n in grp.ranges.iter().filter_map(|i| children.get(i)).flatten() {
                *c.entry(n).or_default() += 1;
            }
            c
        })
        .collect();
    for (k, grp) in g.groups.iter_mut().enumerate() {
        let mut own: Vec<&str> = counts[k]
            .iter()
            .filter(|(n, &c)| {
                c == grp.ranges.len()
                    && (0..counts.len()).all(|o| o == k || !counts[o].contains_key(*n))
            })
            .map(|(n, _)| *n)
            .collect();
        own.sort_unstable();
        own.truncate(2);
        if !own.is_empty() {
            let names: Vec<String> = own.iter().map(|n| format!("`{n}`")).collect();
            grp.label = format!("{} (each holds {})", grp.label, names.join(" and "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insts(walls: &[f64], parents: &[Option<&str>]) -> Vec<Inst> {
        walls
            .iter()
            .zip(parents.iter().chain(std::iter::repeat(&None)))
            .map(|(&w, p)| Inst {
                wall: w,
                parent: p.map(str::to_string),
            })
            .collect()
    }

    #[test]
    fn each_rule_fires_on_its_shape() {
        // Steady steps: one group.
        assert!(split("d", &insts(&[10.0, 11.0, 10.5, 9.8, 10.2], &[]), Rule::Auto).is_none());
        // A slow first step: warm-up.
        let g = split(
            "d",
            &insts(&[100.0, 10.0, 11.0, 10.5, 9.8], &[]),
            Rule::Auto,
        )
        .unwrap();
        assert_eq!(g.rule, WARMUP);
        assert_eq!(g.groups[0].instances, 1);
        assert_eq!(g.groups[1].instances, 4);
        // A first call that compiles and a second that records a graph (torch.compile's
        // reduce-overhead, measured: 14605 ms, 26 ms, then 1.0 ms steps): one warm-up of two.
        let g = split(
            "d",
            &insts(&[14605.0, 26.0, 1.1, 1.0, 1.0, 0.9, 1.0], &[]),
            Rule::Auto,
        )
        .unwrap();
        assert_eq!(g.groups[0].label, "the first 2, a warm-up");
        assert_eq!((g.groups[0].instances, g.groups[1].instances), (2, 5));
        // Never more than the cap, and never all but one.
        let falling = insts(&[1e6, 1e5, 1e4, 1e3, 100.0, 10.0, 1.0, 1.0, 1.0], &[]);
        let g = split("d", &falling, Rule::Auto).unwrap();
        assert_eq!(g.groups[0].instances, WARMUP_MAX_INSTANCES as u64);
        // Two generate() calls, one three times slower: by enclosing instance.
        let p = [Some("`generate` #1"); 3]
            .into_iter()
            .chain([Some("`generate` #2"); 3])
            .collect::<Vec<_>>();
        let g = split(
            "d",
            &insts(&[70.0, 72.0, 75.0, 20.0, 21.0, 19.0], &p),
            Rule::Auto,
        )
        .unwrap();
        assert_eq!(g.rule, ENCLOSING);
        assert_eq!(g.groups[1].label, "inside `generate` #2");
        assert_eq!((g.groups[1].first, g.groups[1].last), (4, 6));
        // No enclosing ranges, two kinds of step interleaved: clusters.
        let g = split(
            "d",
            &insts(&[10.0, 50.0, 11.0, 52.0, 9.0, 55.0], &[]),
            Rule::Auto,
        )
        .unwrap();
        assert_eq!(g.rule, CLUSTERS);
        assert_eq!(g.groups[0].members, vec![0, 2, 4]);
        // The override.
        assert!(split("d", &insts(&[100.0, 10.0, 11.0, 10.5], &[]), Rule::All).is_none());
        let g = split("d", &insts(&[10.0, 11.0, 10.5, 9.8], &[]), Rule::Skip(2)).unwrap();
        assert_eq!((g.groups[0].instances, g.groups[1].instances), (2, 2));
        assert_eq!(Rule::parse("skip=3"), Some(Rule::Skip(3)));
        assert_eq!(Rule::parse("sometimes"), None);
    }

    /// The real capture of generate() called twice (H100): 15 decode steps of the first call
    /// (its `generate` range opened before the capture began) at ~70 ms, 15 of the second at
    /// ~12-17 ms.
    #[test]
    fn enclosing_instances_of_one_kind_are_one_group() {
        // Sixty calls: one slow prompt-processing kind (~6.0) and two fast kinds 1.1x apart
        // (~2.0 and ~2.2), interleaved. Three calls' worth of kinds, not sixty groups.
        let (mut walls, mut labels) = (Vec::new(), Vec::new());
        for call in 0..60 {
            let w = match call % 3 {
                0 => 6.0,
                1 => 2.0,
                _ => 2.2,
            };
            walls.extend([w, w * 1.01]);
            labels.extend(vec![format!("`generate` #{}", call + 1); 2]);
        }
        let p: Vec<Option<&str>> = labels.iter().map(|l| Some(l.as_str())).collect();
        let g = split("prefill", &insts(&walls, &p), Rule::Auto).unwrap();
        assert_eq!(g.rule, ENCLOSING);
        assert_eq!(g.groups.len(), 2, "{:?}", g.groups);
        let slow = &g.groups[0];
        assert_eq!((slow.instances, slow.first), (40, 1));
        assert_eq!(
            slow.label,
            "inside 20 enclosing instances (`generate` #1, `generate` #4, ..., `generate` #58)"
        );
        assert_eq!(g.groups[1].instances, 80);
        // Calls within 1.5x of each other are not split at all.
        let near: Vec<f64> = (0..8).map(|i| 10.0 + 0.5 * i as f64).collect();
        let p = [
            "`g` #1", "`g` #1", "`g` #2", "`g` #2", "`g` #3", "`g` #3", "`g` #4", "`g` #4",
        ]
        .map(Some);
        assert!(split("d", &insts(&near, &p), Rule::Auto).is_none());
    }

    #[test]
    fn the_two_generate_calls_are_two_groups() {
        let db = crate::parse::sqlite::NsysDb::open(&crate::testutil::data(
            "hf/generate-twice/nsys/run.sqlite",
        ))
        .unwrap();
        let ranges = db.ranges().unwrap();
        let nest = Nesting::new(&ranges);
        let all = groups(&ranges, &nest, Rule::Auto);
        let d = all.iter().find(|g| g.name == "decode").unwrap();
        assert_eq!(d.rule, WARMUP, "{d:?}");
        let counts: Vec<u64> = d.groups.iter().map(|g| g.instances).collect();
        assert_eq!(counts.iter().sum::<u64>(), 30, "{d:?}");
        let last = d.groups.last().unwrap();
        assert_eq!(last.label, "inside `generate` #1");
        assert_eq!(last.instances, 15);
        assert!(last.median_wall_ns < 20e6, "{last:?}");
        assert!(d.groups[1].median_wall_ns > 60e6, "{d:?}");
    }

    use crate::testutil::push_pop as r;

    /// Steps that carry a prefill chunk are named by it: the slower steps each hold a
    /// `prefill` range that no faster step holds (`decode` is in both, so it names neither).
    #[test]
    fn a_group_is_named_by_the_range_only_its_instances_hold() {
        let mut ranges = Vec::new();
        for k in 0..8i64 {
            let t = k * 1_000;
            let long = k % 2 == 1;
            let len = if long { 500 } else { 100 };
            ranges.push(r("step", t, t + len));
            ranges.push(r("decode", t + 1, t + 50));
            if long {
                ranges.push(r("prefill", t + 60, t + 400));
            }
        }
        let nest = Nesting::new(&ranges);
        let g = groups(&ranges, &nest, Rule::Auto);
        let step = g.iter().find(|g| g.name == "step").expect("steps split");
        let labels: Vec<&str> = step.groups.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(
            labels,
            ["the 4 faster", "the 4 slower (each holds `prefill`)"],
            "{labels:?}"
        );
        // One range's groups alone are the same as among all.
        let only = groups_of(&ranges, &nest, Rule::Auto, Some("step"));
        assert_eq!(only.len(), 1);
        assert_eq!(format!("{:?}", only[0]), format!("{step:?}"));
    }

    /// A two-instance prefill whose first instance loads its kernels (a 16k-token prefill: the
    /// first compiles, the second is steady): set apart by that evidence, though two
    /// instances are too few for any positional rule.
    #[test]
    fn instances_that_compile_are_set_apart_whatever_their_number() {
        let ranges = [r("prefill", 0, 900), r("prefill", 1_000, 1_300)];
        let mut groups = Vec::new();
        use crate::analysis::ledger::FirstUse;
        let compiles = |yes: bool| FirstUse {
            compiles: yes,
            records_graphs: false,
        };
        set_apart_compiling(&ranges, &mut groups, |i| compiles(i == 0), |_| true);
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!(g.rule, COMPILING);
        assert_eq!(g.groups[0].label, "the 1 compiling GPU code");
        assert_eq!(g.groups[1].label, "the 1 steady");
        assert_eq!(
            (g.groups[0].ranges.as_slice(), g.groups[1].ranges.as_slice()),
            (&[0][..], &[1][..])
        );
        // Every instance compiling, or none: nothing to set apart.
        let mut none = Vec::new();
        set_apart_compiling(&ranges, &mut none, |_| compiles(true), |_| true);
        set_apart_compiling(&ranges, &mut none, |_| compiles(false), |_| true);
        assert!(none.is_empty());
        // A rule other than the positional warm-up keeps its groups.
        let mut kept = vec![RangeGroups {
            name: "prefill".into(),
            rule: ENCLOSING,
            groups: Vec::new(),
        }];
        set_apart_compiling(&ranges, &mut kept, |i| compiles(i == 0), |_| true);
        assert_eq!(kept[0].rule, ENCLOSING);
    }
}

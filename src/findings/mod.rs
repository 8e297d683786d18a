//! Findings: what the reports claim, as values. Each verdict, headline clause, caveat and piece
//! of advice is a [`Finding`]: its claim, the scope it speaks of (run; range and instances;
//! rank; kernel; pass), the figures it rests on (each with its file and the scope it was
//! measured in), the rule that fired, or an abstention with its reason. The renderers only
//! phrase findings; the rules live in [`rules`]. A finding takes no figure measured outside its
//! scope: [`Finding::new`] refuses it.

mod claim;
mod derive;
pub(crate) mod document;
mod listed;
mod quantity;
mod sure;
pub(crate) use crate::rules;

use serde::Serialize;

pub(crate) use claim::*;
pub(crate) use quantity::{Quantity, Unit};
pub(crate) use rules::Rule;

/// Which pass measured a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Pass {
    #[default]
    Nsys,
    Ncu,
}

/// What a finding or a figure speaks of. `range: None` is everything the capture holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub(crate) struct Scope {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) range: Option<String>,
    /// How many instances of the range the figures cover (None: not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instances: Option<u64>,
    /// One rank of a multi-rank run (None: one process, or every rank).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kernel: Option<String>,
    /// One group of a range's instances (see analysis::instances), by its label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) group: Option<String>,
    pub(crate) pass: Pass,
    /// The tables tag `kernel` (another of the run's kernels shares its display name), so
    /// every sentence that names it does too.
    #[serde(skip)]
    pub(crate) tagged: bool,
}

impl Scope {
    pub(crate) fn capture() -> Scope {
        Scope::default()
    }

    pub(crate) fn range(name: &str) -> Scope {
        Scope {
            range: Some(name.to_string()),
            ..Scope::default()
        }
    }

    pub(crate) fn of(range: Option<&str>) -> Scope {
        Scope {
            range: range.map(str::to_string),
            ..Scope::default()
        }
    }

    pub(crate) fn instances(mut self, n: u64) -> Scope {
        self.instances = Some(n);
        self
    }

    pub(crate) fn rank(mut self, r: u32) -> Scope {
        self.rank = Some(r);
        self
    }

    pub(crate) fn kernel(mut self, k: &str) -> Scope {
        self.kernel = Some(k.to_string());
        self
    }

    pub(crate) fn group(mut self, label: &str) -> Scope {
        self.group = Some(label.to_string());
        self
    }

    pub(crate) fn ncu(mut self) -> Scope {
        self.pass = Pass::Ncu;
        self
    }

    /// Whether a figure measured in `e` may support a claim about `self`: the same range; the
    /// same rank when the claim names one; the same kernel when both name one. The pass may
    /// differ (nsys's time and ncu's counters of one range are one scope).
    pub(crate) fn admits(&self, e: &Scope) -> bool {
        e.range == self.range
            && (self.rank.is_none() || e.rank == self.rank)
            && (self.kernel.is_none() || e.kernel.is_none() || e.kernel == self.kernel)
            && (self.group.is_none() || e.group == self.group)
    }
}

/// One measured value, where it came from and what it was measured on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Figure {
    pub(crate) quantity: Quantity,
    pub(crate) value: f64,
    pub(crate) unit: Unit,
    /// The value as every report prints it.
    pub(crate) text: String,
    /// The file it was read from, relative to the run directory.
    pub(crate) source: String,
    pub(crate) scope: Scope,
}

impl Figure {
    pub(crate) fn new(quantity: Quantity, value: f64, source: &str, scope: &Scope) -> Figure {
        Figure {
            quantity,
            value,
            unit: quantity.unit(),
            text: quantity.text(value),
            source: source.to_string(),
            scope: scope.clone(),
        }
    }
}

/// A claim with its scope, evidence and rule; or the claim abstained from, with why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Finding {
    #[serde(flatten)]
    pub(crate) claim: Claim,
    pub(crate) role: Role,
    pub(crate) scope: Scope,
    pub(crate) evidence: Vec<Figure>,
    /// Written as the rule's id: its words and threshold are once in summary.json's `rules`
    /// (a run with 73k range names has as many verdicts citing one rule).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "rules::serialize_id"
    )]
    pub(crate) rule: Option<Rule>,
    /// Set when the data cannot carry the claim: the reason, and the claim is not made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) abstain: Option<String>,
}

/// A figure offered as evidence for a claim about another scope.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{quantity:?} measured in {figure:?} cannot support a claim about {claim:?}")]
pub(crate) struct MixedScope {
    pub(crate) quantity: Quantity,
    pub(crate) figure: Scope,
    pub(crate) claim: Scope,
}

impl Finding {
    /// A finding whose every figure was measured in its scope; the first that was not is the
    /// error.
    pub(crate) fn new(
        claim: Claim,
        scope: Scope,
        rule: Option<Rule>,
        evidence: Vec<Figure>,
    ) -> Result<Finding, Box<MixedScope>> {
        if let Some(f) = evidence.iter().find(|f| !scope.admits(&f.scope)) {
            return Err(Box::new(MixedScope {
                quantity: f.quantity,
                figure: f.scope.clone(),
                claim: scope,
            }));
        }
        Ok(Finding {
            role: claim.role(),
            claim,
            scope,
            evidence,
            rule,
            abstain: None,
        })
    }

    /// The claim not made, and why.
    pub(crate) fn abstain(claim: Claim, scope: Scope, reason: String) -> Finding {
        Finding {
            role: claim.role(),
            claim,
            scope,
            evidence: Vec::new(),
            rule: None,
            abstain: Some(reason),
        }
    }

    /// The value of one of its figures.
    pub(crate) fn get(&self, q: Quantity) -> Option<f64> {
        self.figure(q).map(|f| f.value)
    }

    /// One of its figures.
    pub(crate) fn figure(&self, q: Quantity) -> Option<&Figure> {
        self.evidence.iter().find(|f| f.quantity == q)
    }

    /// Its figure of `q` measured on one group of the range's instances (by label).
    pub(crate) fn in_group(&self, q: Quantity, label: &str) -> Option<&Figure> {
        self.evidence
            .iter()
            .find(|e| e.quantity == q && e.scope.group.as_deref() == Some(label))
    }

    /// An instance_trend finding's first and last third's median wall time (None for any
    /// other claim).
    pub(crate) fn trend_ends(&self) -> Option<(&Figure, &Figure)> {
        let Claim::InstanceTrend { early, late, .. } = self.claim else {
            return None;
        };
        let median = |x| self.in_group(Quantity::GroupMedianWallNs, &span(x));
        Some((median(early)?, median(late)?))
    }

    /// One of its figures as the reports print it ("–" when it has none).
    pub(crate) fn text(&self, q: Quantity) -> String {
        self.figure(q).map_or("–".to_string(), |f| f.text.clone())
    }

    /// The files its figures came from, each once, in order.
    pub(crate) fn sources(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for f in &self.evidence {
            if !f.source.is_empty() && !out.contains(&f.source.as_str()) {
                out.push(&f.source);
            }
        }
        out
    }
}

/// Every finding of a run, in the order they were derived.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub(crate) struct Findings(pub(crate) Vec<Finding>);

impl Findings {
    /// Make a finding of `claim` and keep it; a mixed-scope one (a bug in a rule) becomes an
    /// abstention that says so, never a claim.
    pub(crate) fn push(
        &mut self,
        claim: Claim,
        scope: Scope,
        rule: Option<Rule>,
        evidence: Vec<Figure>,
    ) {
        match Finding::new(claim.clone(), scope, rule, evidence) {
            Ok(f) => self.0.push(f),
            Err(e) => {
                tracing::warn!("finding refused: {e}");
                let scope = e.claim.clone();
                self.0.push(Finding::abstain(claim, scope, e.to_string()));
            }
        }
    }

    /// Findings that make their claim (no abstention).
    pub(crate) fn made(&self) -> impl Iterator<Item = &Finding> {
        self.0.iter().filter(|f| f.abstain.is_none())
    }

    /// The first claim-making finding that `pick` accepts.
    pub(crate) fn find(&self, pick: impl Fn(&Finding) -> bool) -> Option<&Finding> {
        self.made().find(|f| pick(f))
    }
}

/// Every finding the run's figures support, range verdicts for the ranges the tables list.
#[cfg(test)]
pub(crate) fn derive(a: &crate::analysis::Artifacts) -> Findings {
    let listed = listed::Listed::of_run(a);
    derive::all(a, &listed)
}

#[cfg(test)]
mod tests;

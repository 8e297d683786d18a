//! What the levers are sized against and what each hands back: the types the levers' own
//! subjects (batching, copies, speculation) share with the ranking in levers.rs.

use super::super::{Figure, LeverKind, Scope, StepBasis};

/// A step's time and what it is.
pub(super) struct Step {
    pub(super) ms: f64,
    pub(super) scope: Scope,
    pub(super) instances: f64,
    pub(super) basis: StepBasis,
}

/// A lever sized: its saving's share of what it is counted against (the step, a token, the
/// GPU's work), and its figures beside the step's time.
pub(super) struct Sized {
    pub(super) kind: LeverKind,
    pub(super) pct: f64,
    pub(super) figures: Vec<Figure>,
}

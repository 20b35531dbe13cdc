//! Newbob: the learning rate is decayed when the held-out loss stops improving, and the
//! weights go back to the best ones seen (what the KPPT learners call newbob). This is the
//! decision alone, on plain numbers; `keima train` evaluates it at the end of each
//! generation and does the rollback.
//!
//! The first evaluation is always accepted (there is nothing to roll back to). After that
//! a loss is better when it is below `best × (1 − min_improvement)`; otherwise the run goes
//! back to the best weights with η multiplied by `decay`, and after `max_decays` decays it
//! has converged.

use super::config::NewbobConfig;
use serde::{Deserialize, Serialize};

/// Where newbob stands (kept in a run's checkpoints).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NewbobState {
    /// The best held-out loss so far (`None` before the first evaluation).
    pub best_loss: Option<f64>,
    /// What η is multiplied by: `decay^decays`.
    pub eta_scale: f64,
    pub decays: u32,
}

impl Default for NewbobState {
    fn default() -> Self {
        NewbobState { best_loss: None, eta_scale: 1.0, decays: 0 }
    }
}

/// What an evaluation decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better than the best (or the first): these weights become the best.
    Accepted,
    /// Not better: back to the best weights, η decayed.
    RolledBack,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    /// The state after the decision.
    pub state: NewbobState,
    /// `max_decays` reached: the run stops.
    pub converged: bool,
}

/// The decision on held-out loss `loss`, from `state`.
pub fn decide(cfg: &NewbobConfig, state: &NewbobState, loss: f64) -> Decision {
    let better = match state.best_loss {
        None => true,
        Some(best) => loss < best * (1.0 - cfg.min_improvement),
    };
    if better {
        return Decision {
            verdict: Verdict::Accepted,
            state: NewbobState { best_loss: Some(loss), ..*state },
            converged: false,
        };
    }
    let decays = state.decays + 1;
    Decision {
        verdict: Verdict::RolledBack,
        state: NewbobState { best_loss: state.best_loss, eta_scale: state.eta_scale * cfg.decay, decays },
        converged: decays >= cfg.max_decays,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_sequence_of_losses_gives_known_decisions_and_etas() {
        let cfg = NewbobConfig { decay: 0.5, min_improvement: 0.01, max_decays: 2 };
        let mut state = NewbobState::default();
        // (loss, verdict, best after, eta scale after, converged)
        let expected = [
            (1.0, Verdict::Accepted, 1.0, 1.0, false),
            // 0.95 < 1.0 × 0.99.
            (0.95, Verdict::Accepted, 0.95, 1.0, false),
            // Better, but not by 1 % (0.9405 needed).
            (0.945, Verdict::RolledBack, 0.95, 0.5, false),
            (0.90, Verdict::Accepted, 0.90, 0.5, false),
            (0.90, Verdict::RolledBack, 0.90, 0.25, true),
        ];
        for (i, (loss, verdict, best, scale, converged)) in expected.into_iter().enumerate() {
            let d = decide(&cfg, &state, loss);
            assert_eq!(
                (d.verdict, d.state.best_loss, d.state.eta_scale, d.converged),
                (verdict, Some(best), scale, converged),
                "evaluation {i} (loss {loss})"
            );
            state = d.state;
        }
        assert_eq!(state.decays, 2);
    }

    #[test]
    fn without_a_required_improvement_any_lower_loss_is_better() {
        let cfg = NewbobConfig { decay: 0.25, min_improvement: 0.0, max_decays: 4 };
        let first = decide(&cfg, &NewbobState::default(), 2.0);
        assert_eq!(first.verdict, Verdict::Accepted, "the first evaluation is always accepted");
        let same = decide(&cfg, &first.state, 2.0);
        assert_eq!((same.verdict, same.state.eta_scale, same.converged), (Verdict::RolledBack, 0.25, false));
        let lower = decide(&cfg, &same.state, 1.999);
        assert_eq!((lower.verdict, lower.state.eta_scale), (Verdict::Accepted, 0.25), "η stays decayed");
        let state: NewbobState = serde_json::from_str("{}").unwrap();
        assert_eq!(state, NewbobState::default(), "an older checkpoint without newbob reads as the start");
    }
}

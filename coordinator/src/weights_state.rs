//! The weights the coordinator owns: the memory-mapped f32 weight file with AdaGrad
//! accumulators, the quantized evaluator that workers copy, the version counter (= merges
//! applied), and for the last versions the list of features whose quantized value changed,
//! so a worker one or a few versions behind gets a small delta instead of a full copy.
//!
//! A merge is the learner's sparse AdaGrad step (`adagrad::apply_parallel`, bit-identical to
//! the sequential `apply` and run over disjoint weight ranges), so a
//! sequence of merges equals `keima learn` with the same gradients in the same order.

use engine_core::eval::Evaluator;
use engine_core::eval::patterns::PatternSet;
use engine_core::learn::adagrad::{self, AdaGradConfig, Quantized};
use engine_core::learn::factors;
use engine_core::learn::init::evaluator_from_weights;
use engine_core::learn::quantized;
use engine_core::learn::weights::WeightFile;
use rayon::prelude::*;
use std::collections::VecDeque;
use std::sync::Arc;

pub struct WeightState {
    pub file: WeightFile,
    pub evaluator: Arc<Evaluator>,
    /// Versions with their changed feature lists (sorted), oldest first.
    changes: VecDeque<(u64, Vec<u32>)>,
    max_versions: usize,
    /// Bound on the entries kept in `changes` (memory), whatever `max_versions` says.
    max_logged_entries: usize,
    logged_entries: usize,
}

/// What one merge did.
#[derive(Clone, Copy, Debug, Default)]
pub struct MergeOutcome {
    /// Weights whose f32 value changed.
    pub touched: usize,
    /// Features whose quantized value changed (what a delta sync sends).
    pub quantized_changed: usize,
}

impl WeightState {
    pub fn new(
        file: WeightFile,
        patterns: Option<&PatternSet>,
        max_versions: usize,
    ) -> Result<WeightState, String> {
        let evaluator = Arc::new(evaluator_from_weights(&file, patterns)?);
        Ok(WeightState {
            file,
            evaluator,
            changes: VecDeque::new(),
            max_versions,
            max_logged_entries: 64 << 20,
            logged_entries: 0,
        })
    }

    /// The version (number of merges applied).
    pub fn version(&self) -> u64 {
        self.file.header.updates
    }

    /// Applies one summed gradient (sorted, distinct indices) as one AdaGrad update with
    /// the step sizes of `step` (those of the shard's generation).
    pub fn merge(&mut self, grads: &[(u32, [f32; 2])], examples: u64, step: &AdaGradConfig) -> MergeOutcome {
        let update_no = self.version();
        let ev = Arc::get_mut(&mut self.evaluator).expect("no search holds the coordinator's evaluator");
        let (kppt, mut patterns) = quantized::tables_mut(ev).expect("unique tables");
        let layout = self.file.header.param_layout();
        let records = self.file.records_mut();
        let (touched, changed) = if layout.factors.is_none() {
            // The features whose quantized value may change are the gradient's; read them
            // before and after the step.
            let (k, p) = (&*kppt, patterns.as_deref());
            let before: Vec<[i32; 2]> =
                grads.par_iter().map(|&(i, _)| quantized::get(k, p, i as usize)).collect();
            let mut q = Quantized { kppt: &mut *kppt, patterns: patterns.as_deref_mut() };
            // In parallel over disjoint weight ranges (bit-identical to the sequential update).
            let touched = adagrad::apply_parallel(step, update_no, records, grads, Some(&mut q));
            let (k, p) = (&*kppt, patterns.as_deref());
            let changed: Vec<u32> = grads
                .par_iter()
                .zip(before.par_iter())
                .filter(|&(&(i, _), b)| quantized::get(k, p, i as usize) != *b)
                .map(|(&(i, _), _)| i)
                .collect();
            (touched, changed)
        } else {
            // Factored: the step is on the parameters, and every raw feature that depends on
            // a changed parameter is recomputed (the same as `keima learn`), which also tells
            // which quantized values changed.
            let mut q = Quantized { kppt, patterns };
            factors::apply_factored(step, update_no, &layout, records, grads, Some(&mut q))
        };
        let quantized_changed = changed.len();
        self.file.header.updates += 1;
        self.file.header.examples += examples;
        self.file.write_header();
        self.logged_entries += changed.len();
        self.changes.push_back((self.version(), changed));
        while self.changes.len() > self.max_versions || self.logged_entries > self.max_logged_entries {
            let Some((_, old)) = self.changes.pop_front() else { break };
            self.logged_entries -= old.len();
        }
        MergeOutcome { touched, quantized_changed }
    }

    /// Every non-zero quantized value (a full copy).
    pub fn full_entries(&self) -> Vec<(u32, [i32; 2])> {
        let kppt = self.evaluator.kppt.as_deref().expect("training evaluator has KPPT");
        quantized::nonzero_entries(kppt, self.evaluator.patterns.as_deref())
    }

    /// The current values of every feature changed after version `since`; `None` when the
    /// log no longer reaches back that far (send a full copy) or `since` is in the future.
    pub fn delta_entries(&self, since: u64) -> Option<Vec<(u32, [i32; 2])>> {
        let now = self.version();
        if since > now {
            return None;
        }
        if since == now {
            return Some(Vec::new());
        }
        let oldest = self.changes.front()?.0;
        if since + 1 < oldest {
            return None;
        }
        // Each version's list is sorted and distinct: merge them instead of sorting millions.
        let mut idx: Vec<u32> = Vec::new();
        for (_, changed) in self.changes.iter().filter(|(v, _)| *v > since) {
            idx = union_sorted(&idx, changed);
        }
        let kppt = self.evaluator.kppt.as_deref().expect("training evaluator has KPPT");
        let values = quantized::get_sorted(kppt, self.evaluator.patterns.as_deref(), &idx);
        Some(idx.into_iter().zip(values).collect())
    }
}

/// The union of two sorted lists of distinct indices, sorted and distinct.
fn union_sorted(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::union_sorted;

    #[test]
    fn union_of_sorted_lists() {
        assert_eq!(union_sorted(&[1, 4, 9], &[2, 4, 10, 11]), vec![1, 2, 4, 9, 10, 11]);
        assert_eq!(union_sorted(&[], &[3]), vec![3]);
        assert_eq!(union_sorted(&[3, 5], &[]), vec![3, 5]);
        assert_eq!(union_sorted(&[7], &[7]), vec![7]);
    }
}

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
use std::borrow::Cow;
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
    /// With factors: the tables are refreshed from the parameters at versions that are
    /// multiples of this (see [`WeightState::new`]).
    fold_every: u64,
    /// Parameters changed since the tables were last refreshed (sorted, distinct).
    unfolded: Vec<u32>,
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
    /// `fold_every`: with factors, the quantized tables (what workers search with) are
    /// refreshed only at versions that are multiples of it, from every parameter changed
    /// since the last refresh. A PP parameter feeds up to 81 KPP entries per variant, so one
    /// refresh rewrites millions of entries, most of them again at the next merge: the
    /// merges in between share one. The f32 weights are stepped at every merge either way;
    /// only what the workers see lags, by fewer than `fold_every` merges. 1 refreshes at
    /// every merge, as `keima learn` does.
    pub fn new(
        file: WeightFile,
        patterns: Option<&PatternSet>,
        max_versions: usize,
        fold_every: u64,
    ) -> Result<WeightState, String> {
        let evaluator = Arc::new(evaluator_from_weights(&file, patterns)?);
        Ok(WeightState {
            file,
            evaluator,
            changes: VecDeque::new(),
            max_versions,
            max_logged_entries: 64 << 20,
            logged_entries: 0,
            fold_every: fold_every.max(1),
            unfolded: Vec::new(),
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
            // Factored: the step is on the parameters; every raw feature that depends on a
            // parameter changed since the last fold is recomputed at the fold (with
            // `fold_every` 1 after each merge, the same as `keima learn`), which also tells
            // which quantized values changed.
            let params = factors::param_gradient(&layout, grads, true);
            let touched = factors::apply_params(step, update_no, &layout, records, &params);
            let changed_params: Vec<u32> = params.iter().map(|p| p.0).collect();
            self.unfolded = union_sorted(&self.unfolded, &changed_params);
            let changed = if (update_no + 1).is_multiple_of(self.fold_every) {
                let deps = factors::dependents(&layout, &std::mem::take(&mut self.unfolded));
                let mut q = Quantized { kppt, patterns };
                factors::refresh(&layout, records, &deps, &mut q)
            } else {
                Vec::new()
            };
            (touched, changed)
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
    /// (Pulls go through [`WeightState::sync_span`]; the tests check deltas with this.)
    #[cfg(test)]
    fn delta_entries(&self, since: u64) -> Option<Vec<(u32, [i32; 2])>> {
        match self.sync_span(since, false) {
            SyncSpan::Full { .. } => None,
            span => Some(self.sync_entries(span)),
        }
    }

    /// What a worker that has version `have` (ignored if `full`) needs, named by the versions
    /// whose changes it holds, so that two workers needing the same entries get the same
    /// span (see [`SyncSpan`]).
    pub fn sync_span(&self, have: u64, full: bool) -> SyncSpan {
        let now = self.version();
        let from_log = || {
            let oldest = self.changes.front()?.0;
            // The log must reach back to the version after `have`.
            if have > now || have + 1 < oldest {
                return None;
            }
            let mut changed = self.changes.iter().filter(|(v, list)| *v > have && !list.is_empty());
            let first = changed.next().map(|c| c.0);
            Some(match (first, changed.next_back().map(|c| c.0).or(first)) {
                (Some(first), Some(last)) => SyncSpan::Delta { first, last },
                _ => SyncSpan::Empty,
            })
        };
        if full {
            SyncSpan::Full { version: now }
        } else if have == now {
            SyncSpan::Empty
        } else {
            from_log().unwrap_or(SyncSpan::Full { version: now })
        }
    }

    /// The entries of `span` (from [`WeightState::sync_span`] at this version): every
    /// non-zero value for a full copy, or the current value of each feature changed in the
    /// span's versions.
    pub fn sync_entries(&self, span: SyncSpan) -> Vec<(u32, [i32; 2])> {
        let (first, last) = match span {
            SyncSpan::Empty => return Vec::new(),
            SyncSpan::Full { .. } => return self.full_entries(),
            SyncSpan::Delta { first, last } => (first, last),
        };
        // Each version's list is sorted and distinct: merge them instead of sorting millions
        // (a span of one fold reads its list as it is).
        let mut lists = self.changes.iter().filter(|(v, _)| (first..=last).contains(v)).map(|(_, list)| list);
        let mut idx = Cow::Borrowed(lists.next().map_or(&[][..], |list| list.as_slice()));
        for list in lists {
            idx = Cow::Owned(union_sorted(&idx, list));
        }
        let kppt = self.evaluator.kppt.as_deref().expect("training evaluator has KPPT");
        let values = quantized::get_sorted(kppt, self.evaluator.patterns.as_deref(), &idx);
        idx.iter().copied().zip(values).collect()
    }
}

/// The versions a weight sync covers. Versions only grow (a merge or a rollback makes a new
/// one) and a version's quantized values differ from the one before it only in that
/// version's logged changes, so a span names the bytes a sync sends: the entries of a
/// `Delta` are the changes of the versions `first..=last` with the values they have had
/// since `last` (no version after `last` changed any), and a `Full` copy is the tables at
/// `version`. Workers at different versions that lack the same changes (between the
/// factored folds, most versions change nothing) get the same span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncSpan {
    /// Nothing changed since the worker's version.
    Empty,
    Delta {
        first: u64,
        last: u64,
    },
    Full {
        version: u64,
    },
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
    use super::*;
    use engine_core::learn::weights::{Factorization, PATTERN_BASE};
    use std::collections::BTreeMap;

    /// A raw-feature gradient on `n` random KK/KKP/KPP features (sorted, distinct).
    fn random_gradient(seed: u64, n: usize) -> Vec<(u32, [f32; 2])> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut g: Vec<(u32, [f32; 2])> = (0..n)
            .map(|_| {
                let i = (next() % PATTERN_BASE as u64) as u32;
                let v = (next() % 2001) as f32 / 1000.0 - 1.0;
                (i, [v, -v / 2.0])
            })
            .collect();
        g.sort_by_key(|e| e.0);
        g.dedup_by_key(|e| e.0);
        g
    }

    /// With `fold_every` 3 the weights step at every merge exactly as with 1, the tables
    /// stay as they were between folds (no delta to send), and at every third version
    /// they, and a copy kept up to date by the delta syncs, equal the tables refreshed at
    /// every merge.
    #[test]
    fn folding_every_third_merge_matches_folding_every_merge_at_the_folds() {
        let tmp = tempfile::tempdir().unwrap();
        let state = |name: &str, fold_every| {
            let file = WeightFile::create_factored(&tmp.path().join(name), 0, 0, Factorization::ALL).unwrap();
            WeightState::new(file, None, 64, fold_every).unwrap()
        };
        let (mut every, mut third) = (state("every.kw", 1), state("third.kw", 3));
        let step = AdaGradConfig { eta: 30.0, eta_turn: 8.0, ..AdaGradConfig::default() };
        let mut copy: BTreeMap<u32, [i32; 2]> = third.full_entries().into_iter().collect();
        let mut copy_version = 0;
        let mut folded_before = third.full_entries();
        for v in 1..=6u64 {
            let grads = random_gradient(v, 4000);
            every.merge(&grads, 100, &step);
            let outcome = third.merge(&grads, 100, &step);
            assert_eq!(third.version(), v);
            if v.is_multiple_of(3) {
                let folded = third.full_entries();
                assert_eq!(folded, every.full_entries(), "version {v}");
                assert_ne!(folded, folded_before, "version {v}: the fold changed nothing");
                assert!(outcome.quantized_changed > 0);
                for (i, value) in third.delta_entries(copy_version).expect("within the log") {
                    copy.insert(i, value);
                }
                copy.retain(|_, value| *value != [0, 0]);
                copy_version = v;
                assert_eq!(copy.iter().map(|(&i, &x)| (i, x)).collect::<Vec<_>>(), folded, "version {v}");
                folded_before = folded;
            } else {
                assert_eq!(third.full_entries(), folded_before, "version {v}: tables moved between folds");
                assert_eq!(outcome.quantized_changed, 0);
                assert_eq!(third.delta_entries(copy_version), Some(Vec::new()), "version {v}");
            }
        }
        assert!(every.file.records() == third.file.records(), "the f32 weights differ");
    }

    /// Between the folds most versions change nothing: workers at different versions that
    /// lack the same folds get the same span, whose entries bring a copy of the tables at
    /// their version up to the current tables.
    #[test]
    fn workers_lacking_the_same_folds_get_the_same_span() {
        let tmp = tempfile::tempdir().unwrap();
        let file = WeightFile::create_factored(&tmp.path().join("w.kw"), 0, 0, Factorization::ALL).unwrap();
        let mut state = WeightState::new(file, None, 64, 3).unwrap();
        let step = AdaGradConfig { eta: 30.0, eta_turn: 8.0, ..AdaGradConfig::default() };
        let mut tables = vec![state.full_entries()];
        for v in 1..=7u64 {
            state.merge(&random_gradient(v, 4000), 100, &step);
            tables.push(state.full_entries());
            if v == 5 {
                let span = state.sync_span(1, false);
                assert_eq!(span, SyncSpan::Delta { first: 3, last: 3 });
                assert_eq!(state.sync_span(2, false), span);
                assert_eq!(state.sync_span(3, false), SyncSpan::Empty, "versions 4 and 5 changed nothing");
            }
        }
        assert_ne!(tables[6], tables[3]);
        assert_eq!(state.sync_span(2, false), SyncSpan::Delta { first: 3, last: 6 });
        for have in 3..=5 {
            let span = state.sync_span(have, false);
            assert_eq!(span, SyncSpan::Delta { first: 6, last: 6 }, "a worker at version {have}");
            let mut copy: BTreeMap<u32, [i32; 2]> = tables[have as usize].iter().copied().collect();
            for (i, value) in state.sync_entries(span) {
                copy.insert(i, value);
            }
            copy.retain(|_, value| *value != [0, 0]);
            assert_eq!(copy.into_iter().collect::<Vec<_>>(), tables[7]);
        }
        assert_eq!(state.sync_span(6, false), SyncSpan::Empty);
        assert_eq!(state.sync_span(7, false), SyncSpan::Empty);
        assert_eq!(state.sync_span(8, false), SyncSpan::Full { version: 7 }, "a version from the future");
        assert_eq!(state.sync_span(3, true), SyncSpan::Full { version: 7 });
        assert_eq!(state.sync_entries(SyncSpan::Full { version: 7 }), tables[7]);
    }

    #[test]
    fn union_of_sorted_lists() {
        assert_eq!(union_sorted(&[1, 4, 9], &[2, 4, 10, 11]), vec![1, 2, 4, 9, 10, 11]);
        assert_eq!(union_sorted(&[], &[3]), vec![3]);
        assert_eq!(union_sorted(&[3, 5], &[]), vec![3, 5]);
        assert_eq!(union_sorted(&[7], &[7]), vec![7]);
    }
}

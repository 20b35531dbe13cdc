//! Sparse AdaGrad. For each touched weight only: G += g², w −= η·g/√(G + ε), with a
//! separate η for the side-to-move (turn) part and an optional exponential schedule.
//! The cost is proportional to the number of touched weights, never to the table size.
//!
//! After each weight changes, its rounded and clamped value is written into the quantized
//! tables (`Quantized`) the searcher uses, so the eval that search sees during training is
//! exactly the exported one (`quantize_*` are shared with the exporter).

use super::weights::{Feature, KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, Record, decode_index, untri};
use crate::eval::bona_piece::FE_END;
use crate::eval::kppt::KpptTables;
use crate::eval::patterns::PatternSet;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdaGradConfig {
    /// Step size of board parts (and patterns), in raw (FV_SCALE) weight units.
    pub eta: f64,
    /// Step size of turn (side-to-move) parts.
    pub eta_turn: f64,
    pub epsilon: f64,
    /// η is multiplied by `eta_decay^updates` (1.0 = constant).
    pub eta_decay: f64,
}

impl Default for AdaGradConfig {
    fn default() -> Self {
        AdaGradConfig { eta: 2.0, eta_turn: 0.5, epsilon: 1e-8, eta_decay: 1.0 }
    }
}

#[inline]
pub fn quantize_i32(w: f32) -> (i32, bool) {
    let r = w.round();
    if r > i32::MAX as f32 {
        (i32::MAX, true)
    } else if r < i32::MIN as f32 {
        (i32::MIN, true)
    } else {
        (r as i32, false)
    }
}

#[inline]
pub fn quantize_i16(w: f32) -> (i16, bool) {
    let r = w.round();
    if r > i16::MAX as f32 {
        (i16::MAX, true)
    } else if r < -(i16::MAX as f32) {
        // Symmetric range, so negating a weight never overflows.
        (-i16::MAX, true)
    } else {
        (r as i16, false)
    }
}

/// The quantized evaluation the searcher uses.
pub struct Quantized<'a> {
    pub kppt: &'a mut KpptTables,
    pub patterns: Option<&'a mut PatternSet>,
}

impl Quantized<'_> {
    /// Writes the quantized value of feature `index` from its record.
    pub fn store(&mut self, index: usize, r: &Record) {
        if index < KKP_BASE {
            self.kppt.kk.make_mut()[index] = [quantize_i32(r[0]).0, quantize_i32(r[1]).0];
        } else if index < KPP_BASE {
            self.kppt.kkp.make_mut()[index - KKP_BASE] = [quantize_i32(r[0]).0, quantize_i32(r[1]).0];
        } else if index < PATTERN_BASE {
            let j = index - KPP_BASE;
            let (k, (a, b)) = (j / KPP_TRI, untri(j % KPP_TRI));
            let v = [quantize_i16(r[0]).0, quantize_i16(r[1]).0];
            let kpp = self.kppt.kpp.make_mut();
            kpp[(k * FE_END + a) * FE_END + b] = v;
            kpp[(k * FE_END + b) * FE_END + a] = v;
        } else if let Some(p) = self.patterns.as_deref_mut()
            && let Feature::Pattern(i) = decode_index(index)
        {
            p.set_weight(i, quantize_i32(r[0]).0);
        }
    }
}

/// Applies one update. `grads` holds (feature index, [board, turn] gradient) with distinct
/// indices. Returns the number of weights changed.
pub fn apply(
    cfg: &AdaGradConfig,
    update_no: u64,
    records: &mut [Record],
    grads: &[(u32, [f32; 2])],
    mut quant: Option<&mut Quantized>,
) -> usize {
    let decay = cfg.eta_decay.powf(update_no as f64);
    let eta = [(cfg.eta * decay) as f32, (cfg.eta_turn * decay) as f32];
    let eps = cfg.epsilon as f32;
    let mut touched = 0;
    for &(i, g) in grads {
        let i = i as usize;
        let r = &mut records[i];
        let parts = if i >= PATTERN_BASE { 1 } else { 2 };
        let mut changed = false;
        for p in 0..parts {
            if g[p] == 0.0 {
                continue;
            }
            r[2 + p] += g[p] * g[p];
            r[p] -= eta[p] * g[p] / (r[2 + p] + eps).sqrt();
            changed = true;
        }
        if changed {
            touched += 1;
            if let Some(q) = quant.as_deref_mut() {
                q.store(i, r);
            }
        }
    }
    touched
}

//! The worker's copy of the quantized weights: an evaluator that follows the
//! coordinator's version by full copies and deltas.

use engine_core::eval::Evaluator;
use engine_core::eval::kppt::KpptTables;
use engine_core::eval::patterns::PatternSet;
use engine_core::learn::quantized;
use engine_core::learn::weights::{LAYOUT_KPPT_TRIANGLE, PATTERN_BASE};
use keima_proto::sparse;
use keima_proto::v1::{Layout, WeightsChunk};
use std::sync::Arc;

pub struct LocalWeights {
    pub layout: Layout,
    /// `None` until the first full copy arrived.
    pub version: Option<u64>,
    pub evaluator: Arc<Evaluator>,
}

impl LocalWeights {
    /// Checks that this build can hold the coordinator's layout; `pattern_file` is the
    /// run's pattern definitions (empty = none).
    pub fn new(layout: Layout, pattern_file: &[u8]) -> Result<LocalWeights, String> {
        let patterns = if pattern_file.is_empty() {
            None
        } else {
            Some(
                engine_core::eval::patterns::file::from_bytes(
                    pattern_file,
                    std::path::Path::new("<coordinator>"),
                )
                .map_err(|e| e.to_string())?,
            )
        };
        let n = patterns.as_ref().map_or(0, |p: &PatternSet| p.len() as u64);
        let expect = Layout {
            layout_id: LAYOUT_KPPT_TRIANGLE,
            fe_end: engine_core::eval::bona_piece::FE_END as u32,
            features: PATTERN_BASE as u64 + n,
            patterns: n,
            pattern_hash: patterns.as_ref().map_or(0, engine_core::learn::init::pattern_hash),
        };
        keima_proto::checks::layout(Some(&layout), &expect)?;
        let evaluator = Evaluator {
            use_material: true,
            kppt: Some(Arc::new(KpptTables::zeros())),
            patterns: patterns.map(Arc::new),
        };
        Ok(LocalWeights { layout, version: None, evaluator: Arc::new(evaluator) })
    }

    /// Applies the chunks of one pull (all of them, in order). On error the copy is
    /// marked empty (`version = None`) so the next pull asks for a full copy.
    pub fn apply(&mut self, chunks: &[WeightsChunk]) -> Result<u64, String> {
        let r = self.apply_inner(chunks);
        if r.is_err() {
            self.version = None;
        }
        r
    }

    fn apply_inner(&mut self, chunks: &[WeightsChunk]) -> Result<u64, String> {
        let first = chunks.first().ok_or("the coordinator sent no weight chunks")?;
        let (version, full, count) = (first.version, first.full, first.chunk_count);
        if count as usize != chunks.len() {
            return Err(format!("weights: {} chunks received, {count} announced", chunks.len()));
        }
        if !full && self.version.is_none() {
            return Err("weights: a delta arrived but this worker holds no full copy".into());
        }
        let ev = Arc::get_mut(&mut self.evaluator).ok_or("weights: a search still holds the evaluator")?;
        if full {
            ev.kppt = Some(Arc::new(KpptTables::zeros()));
            if let Some(p) = ev.patterns.as_mut() {
                let p = Arc::get_mut(p).ok_or("weights: a search still holds the patterns")?;
                for i in 0..p.len() {
                    p.set_weight(i, 0);
                }
            }
        }
        let (tables, mut patterns) = quantized::tables_mut(ev).ok_or("weights: evaluator is shared")?;
        for (i, c) in chunks.iter().enumerate() {
            if c.version != version || c.full != full || c.chunk_index as usize != i {
                return Err(format!("weights: chunk {i} does not belong to this transfer"));
            }
            keima_proto::checks::layout(c.layout.as_ref(), &self.layout)?;
            let raw =
                sparse::decompress(&c.blob, sparse::MAX_BLOB_BYTES).map_err(|e| format!("weights: {e}"))?;
            let entries = sparse::decode_weights(&raw, self.layout.features, c.entries)
                .map_err(|e| format!("weights: {e}"))?;
            quantized::set_sorted(tables, patterns.as_deref_mut(), &entries)
                .map_err(|e| format!("weights: {e}"))?;
        }
        self.version = Some(version);
        Ok(version)
    }
}

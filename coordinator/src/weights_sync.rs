//! Weight syncs as sent, kept for reuse. With the factored recipe a fold rewrites millions of
//! table entries, and every worker then pulls the same changes: the entries are gathered,
//! encoded and compressed once per [`SyncSpan`] instead of once per worker, and the next
//! worker that lacks the same versions gets the same bytes.

use crate::weights_state::SyncSpan;
use keima_proto::sparse;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// One chunk of a sync: its entry count and its compressed bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct EncodedChunk {
    pub entries: u64,
    pub blob: Vec<u8>,
}

/// `entries` (sorted by index) as the chunks of one sync; no entries make one empty chunk.
pub fn encode(entries: &[(u32, [i32; 2])]) -> Vec<EncodedChunk> {
    let parts: Vec<&[(u32, [i32; 2])]> =
        if entries.is_empty() { vec![&[]] } else { entries.chunks(sparse::ENTRIES_PER_CHUNK).collect() };
    parts
        .into_iter()
        .map(|part| EncodedChunk {
            entries: part.len() as u64,
            blob: sparse::compress(&sparse::encode_weights(part)),
        })
        .collect()
}

/// A span's encoded sync: empty while its first puller encodes it (the others wait on the
/// lock rather than encode it again), then its chunks.
pub type SyncSlot = Arc<Mutex<Option<Arc<Vec<EncodedChunk>>>>>;

/// The newest encoded syncs, up to a byte budget.
pub struct SyncCache {
    kept: VecDeque<(SyncSpan, SyncSlot)>,
    max_bytes: usize,
}

/// The bytes a slot holds (0 while it is being filled).
fn bytes_of(slot: &SyncSlot) -> usize {
    match slot.try_lock() {
        Ok(filled) => filled.as_ref().map_or(0, |chunks| chunks.iter().map(|c| c.blob.len()).sum()),
        Err(_) => 0,
    }
}

impl SyncCache {
    pub fn new(max_bytes: usize) -> SyncCache {
        SyncCache { kept: VecDeque::new(), max_bytes }
    }

    /// The slot of `span`, and whether it is new: then the caller fills it (locking it
    /// before anyone else can see it). The oldest syncs past the budget leave first.
    pub fn slot(&mut self, span: SyncSpan) -> (SyncSlot, bool) {
        if let Some((_, slot)) = self.kept.iter().find(|(s, _)| *s == span) {
            return (slot.clone(), false);
        }
        let mut bytes: usize = self.kept.iter().map(|(_, slot)| bytes_of(slot)).sum();
        while bytes > self.max_bytes {
            let Some((_, old)) = self.kept.pop_front() else { break };
            bytes -= bytes_of(&old);
        }
        let slot = SyncSlot::default();
        self.kept.push_back((span, slot.clone()));
        (slot, true)
    }

    /// Drops the slot of `span` (its encoder failed: the next puller encodes it afresh).
    pub fn forget(&mut self, span: SyncSpan) {
        self.kept.retain(|(s, _)| *s != span);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(cache: &mut SyncCache, span: SyncSpan, bytes: usize) {
        let (slot, new) = cache.slot(span);
        assert!(new, "{span:?} was kept");
        *slot.lock().unwrap() = Some(Arc::new(vec![EncodedChunk { entries: 1, blob: vec![7; bytes] }]));
    }

    fn kept(cache: &SyncCache, span: SyncSpan) -> bool {
        cache.kept.iter().any(|(s, _)| *s == span)
    }

    #[test]
    fn a_span_is_encoded_once_and_the_oldest_leave_past_the_budget() {
        let mut cache = SyncCache::new(100);
        let span = |first| SyncSpan::Delta { first, last: first };
        fill(&mut cache, span(1), 60);
        let (slot, new) = cache.slot(span(1));
        assert!(!new, "a second puller gets the first one's slot");
        assert_eq!(slot.lock().unwrap().as_ref().unwrap()[0].blob.len(), 60);
        fill(&mut cache, span(2), 30);
        fill(&mut cache, span(3), 30);
        assert!(kept(&cache, span(1)), "120 bytes were past the budget only after the third");
        fill(&mut cache, SyncSpan::Full { version: 4 }, 500);
        assert!(!kept(&cache, span(1)) && kept(&cache, span(2)) && kept(&cache, span(3)));
        fill(&mut cache, span(5), 10);
        assert!(
            !kept(&cache, span(2)) && !kept(&cache, span(3)) && !kept(&cache, SyncSpan::Full { version: 4 })
        );
        assert!(kept(&cache, span(5)));
        cache.forget(span(5));
        assert!(cache.slot(span(5)).1, "forgotten: encoded afresh");
    }

    #[test]
    fn encoded_chunks_decode_to_the_entries() {
        let entries: Vec<(u32, [i32; 2])> =
            (0..(sparse::ENTRIES_PER_CHUNK as u32 + 5)).map(|i| (i * 3, [i as i32, -1])).collect();
        let encoded = encode(&entries);
        assert_eq!(encoded.len(), 2);
        let mut back = Vec::new();
        for c in &encoded {
            let raw = sparse::decompress(&c.blob, 1 << 30).unwrap();
            back.extend(sparse::decode_weights(&raw, u32::MAX as u64, c.entries).unwrap());
        }
        assert_eq!(back, entries);
        let empty = encode(&[]);
        assert_eq!(empty.len(), 1);
        assert_eq!(empty[0].entries, 0);
    }
}

//! The checksum that seals a push: FNV-1a 64 over the uncompressed gradient and record
//! blobs in the order sent, then over the header's fields and the statistics in a fixed
//! little-endian layout. The payload comes first so that a sender can hash it once and seal
//! it for each header cheaply; covering the header means a captured push re-targeted at
//! another shard, attempt or worker, or carrying other counts, no longer checks.
//!
//! It detects corruption and mix-ups, not forgery (anyone with the token can compute it):
//! what a push may change is decided by the coordinator's lease check.

use crate::sparse::Fnv64;
use crate::v1::{MatchResult, PushHeader, ShardStats};

/// Finishes `payload` (the hash of the uncompressed blobs) with the header, the statistics
/// and a match shard's result.
pub fn push_checksum(
    payload: Fnv64,
    header: &PushHeader,
    stats: &ShardStats,
    result: Option<&MatchResult>,
) -> u64 {
    let mut h = payload;
    h.update(b"keima-push-seal-v3");
    h.update(&header.protocol.to_le_bytes());
    h.update(&(header.worker_id.len() as u64).to_le_bytes());
    h.update(header.worker_id.as_bytes());
    h.update(&header.shard_id.to_le_bytes());
    h.update(&header.attempt.to_le_bytes());
    h.update(&header.weights_version.to_le_bytes());
    let layout = header.layout.unwrap_or_default();
    h.update(&layout.layout_id.to_le_bytes());
    h.update(&layout.fe_end.to_le_bytes());
    h.update(&layout.features.to_le_bytes());
    h.update(&layout.patterns.to_le_bytes());
    h.update(&layout.pattern_hash.to_le_bytes());
    h.update(&header.gradient_entries.to_le_bytes());
    h.update(&header.teacher_records.to_le_bytes());
    h.update(&stats.positions.to_le_bytes());
    h.update(&stats.used.to_le_bytes());
    h.update(&stats.skipped.to_le_bytes());
    h.update(&stats.loss_sum.to_bits().to_le_bytes());
    h.update(&stats.games.to_le_bytes());
    h.update(&stats.search_nodes.to_le_bytes());
    h.update(&stats.seconds.to_bits().to_le_bytes());
    h.update(&stats.cpu_seconds.to_bits().to_le_bytes());
    if let Some(r) = result {
        h.update(b"match");
        for n in [r.wins, r.draws, r.losses].iter().chain(&r.pentanomial) {
            h.update(&n.to_le_bytes());
        }
        h.update(&(r.pentanomial.len() as u64).to_le_bytes());
        h.update(&r.time_losses.to_le_bytes());
        h.update(&r.baseline_time_losses.to_le_bytes());
    }
    h.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::Layout;

    #[test]
    fn every_header_and_stats_field_changes_the_checksum() {
        let mut payload = Fnv64::default();
        payload.update(b"gradient bytes");
        let h = PushHeader {
            protocol: crate::PROTOCOL_VERSION,
            worker_id: "w1-a".into(),
            shard_id: 3,
            attempt: 1,
            weights_version: 7,
            layout: Some(Layout { layout_id: 1, fe_end: 1548, features: 100, patterns: 0, pattern_hash: 0 }),
            gradient_entries: 2,
            teacher_records: 0,
        };
        let s = ShardStats { positions: 10, used: 9, loss_sum: 6.5, ..Default::default() };
        let base = push_checksum(payload, &h, &s, None);
        assert_eq!(base, push_checksum(payload, &h.clone(), &s, None), "deterministic");
        let headers = [
            PushHeader { shard_id: 4, ..h.clone() },
            PushHeader { attempt: 2, ..h.clone() },
            PushHeader { worker_id: "w2-a".into(), ..h.clone() },
            PushHeader { weights_version: 6, ..h.clone() },
            PushHeader { gradient_entries: 3, ..h.clone() },
            PushHeader { teacher_records: 1, ..h.clone() },
        ];
        for other in headers {
            assert_ne!(push_checksum(payload, &other, &s, None), base, "{other:?}");
        }
        let stats = [
            ShardStats { positions: u64::MAX, ..s },
            ShardStats { used: 8, ..s },
            ShardStats { loss_sum: 6.25, ..s },
            ShardStats { cpu_seconds: 0.5, ..s },
        ];
        for other in stats {
            assert_ne!(push_checksum(payload, &h, &other, None), base, "{other:?}");
        }
        let mut other_payload = Fnv64::default();
        other_payload.update(b"gradient bytez");
        assert_ne!(push_checksum(other_payload, &h, &s, None), base);
        let r = MatchResult {
            wins: 1,
            draws: 2,
            losses: 1,
            pentanomial: vec![0, 0, 2, 0, 0],
            time_losses: 0,
            baseline_time_losses: 0,
        };
        let with_result = push_checksum(payload, &h, &s, Some(&r));
        assert_ne!(with_result, base);
        for other in [
            MatchResult { wins: 2, losses: 0, ..r.clone() },
            MatchResult { pentanomial: vec![0, 1, 0, 1, 0], ..r.clone() },
            MatchResult { time_losses: 1, ..r.clone() },
            MatchResult { baseline_time_losses: 1, ..r.clone() },
        ] {
            assert_ne!(push_checksum(payload, &h, &s, Some(&other)), with_result, "{other:?}");
        }
    }
}

//! Running one lease: produce teacher records (self-play with search, replayed game records
//! searched position by position, or an existing teacher shard) and the summed sparse
//! gradient of the learner's loss over them, with the weights the lease asked for; or play
//! a match shard's games (`match_job.rs`).

use crate::usi::engines::UsiEngine;
use engine_core::cpu_time::{process_cpu_seconds, reaped_children_cpu_seconds};
use engine_core::eval::Evaluator;
use engine_core::learn::batch_pool::BatchPool;
use engine_core::learn::gradient::batch_gradient;
use engine_core::teacher::gensfen::{self, GensfenConfig, GensfenStats, Opening, run_records, run_selfplay};
use engine_core::teacher::{PackedSfenValue, ShardReader, TeacherRecord};
use keima_proto::spec::{ShardSpec, lease_work};
use keima_proto::v1;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A finished shard: the gradient (sorted by index, distinct), the teacher records (raw
/// PackedSfenValue bytes, empty unless asked for), its statistics, and a match shard's
/// result.
pub struct ShardOutput {
    pub gradient: Vec<(u32, [f32; 2])>,
    pub records: Vec<u8>,
    pub stats: v1::ShardStats,
    pub result: Option<v1::MatchResult>,
}

fn to_teacher(psvs: &[PackedSfenValue]) -> Vec<TeacherRecord> {
    psvs.iter()
        .enumerate()
        .filter_map(|(i, psv)| {
            let (pos, mv) = psv.validate().ok()?;
            Some(TeacherRecord { index: i as u64, psv: *psv, pos, mv })
        })
        .collect()
}

/// One searcher per game played at once: `threads` games in parallel when the shard has
/// that many, else fewer games each searched by several threads (Lazy SMP), so that a
/// shard of one deep game still uses every core. One thread per search (the usual case,
/// and always in deterministic runs with one thread) keeps the output reproducible.
fn searchers(ev: &Arc<Evaluator>, threads: usize, games: usize) -> Vec<gensfen::Worker> {
    let threads = threads.max(1);
    let parallel = threads.min(games.max(1));
    let per_search = threads / parallel;
    (0..parallel).map(|_| gensfen::Worker::with_search_threads(ev.clone(), 16, per_search)).collect()
}

/// Records drawn from the pool per record the shard made (the lease's `batch_pool_draws`;
/// 0, from a coordinator that does not send it, is 1). Checked before the shard's work.
fn pool_draws(lease: &v1::Lease) -> Result<usize, String> {
    match lease.batch_pool_draws {
        0 => Ok(1),
        d if d <= BatchPool::MAX_DRAWS => Ok(d as usize),
        d => Err(format!(
            "the lease asks for {d} batch-pool draws per record; at most {}",
            BatchPool::MAX_DRAWS
        )),
    }
}

/// The gradient's batch when the lease asks for a pool: the shard's records join the
/// worker's pool, and `draws` times as many are drawn from it at random (`None`: the
/// shard's own).
fn pooled_batch(
    lease: &v1::Lease,
    draws: usize,
    pool: &Mutex<BatchPool>,
    records: &[TeacherRecord],
) -> Option<Vec<TeacherRecord>> {
    let capacity = usize::try_from(lease.batch_pool_records).unwrap_or(usize::MAX);
    if capacity == 0 {
        return None;
    }
    // A panic elsewhere while the lock was held leaves at worst a pool missing some records.
    let mut pool = pool.lock().unwrap_or_else(|e| e.into_inner());
    pool.set_capacity(capacity);
    pool.push(records.iter().map(|r| r.psv));
    let seed = engine_core::rng::mix64(lease.shard_id ^ ((lease.attempt as u64) << 48));
    Some(to_teacher(&pool.sample(records.len() * draws, seed)))
}

/// Runs a lease on `threads` threads, with the external USI engines this worker declared.
/// `progress` counts positions (games, for a match) as they are produced.
pub fn run(
    lease: &v1::Lease,
    evaluator: &Arc<Evaluator>,
    usi_engines: &[UsiEngine],
    threads: usize,
    progress: &AtomicU64,
    pool: &Mutex<BatchPool>,
) -> Result<ShardOutput, String> {
    let started = Instant::now();
    // The worker runs one shard at a time, so the process's CPU time meanwhile is the
    // shard's (heartbeats add a negligible share).
    let cpu_started = process_cpu_seconds();
    let (spec, loss) = lease_work(lease).map_err(|e| e.to_string())?;
    let draws = pool_draws(lease)?;
    if let ShardSpec::Match { usi, .. } = &spec {
        // A USI match's engines are child processes, all quit (and reaped) by its end.
        let children_started = reaped_children_cpu_seconds();
        let (result, mut stats) = match usi {
            Some(_) => crate::usi_match_job::run(&spec, usi_engines, threads, progress)?,
            None => crate::match_job::run(&spec, threads, progress)?,
        };
        stats.seconds = started.elapsed().as_secs_f64();
        let children = reaped_children_cpu_seconds() - children_started;
        stats.cpu_seconds = (process_cpu_seconds() - cpu_started + children).max(0.0);
        return Ok(ShardOutput { gradient: Vec::new(), records: Vec::new(), stats, result: Some(result) });
    }
    let mut stats = GensfenStats::default();
    let (records, psvs): (Vec<TeacherRecord>, Vec<PackedSfenValue>) = match &spec {
        ShardSpec::SelfPlay { seed, games, openings, search, play } => {
            let cfg = GensfenConfig::selfplay(*search, *play, *seed);
            let openings = openings
                .iter()
                .map(|l| Opening::parse_usi(l).map_err(|e| format!("opening {l:?}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            let mut workers = searchers(evaluator, threads, *games as usize);
            let (psvs, st) = run_selfplay(&mut workers, &cfg, &openings, *games as u64, Vec::new(), |st| {
                progress.store(st.positions_written, Ordering::Relaxed)
            })
            .map_err(|e| e.to_string())?;
            stats = st;
            (to_teacher(&psvs), psvs)
        }
        ShardSpec::Records { paths, search, unknown_result } => {
            let cfg = GensfenConfig::records(*search, *unknown_result);
            let mut games = Vec::new();
            for p in paths {
                games.extend(
                    engine_core::records::load_file(std::path::Path::new(p)).map_err(|e| e.to_string())?,
                );
            }
            let mut workers = searchers(evaluator, threads, games.len());
            let (psvs, st) = run_records(&mut workers, &cfg, &games, Vec::new(), |st| {
                progress.store(st.positions_written, Ordering::Relaxed)
            })
            .map_err(|e| e.to_string())?;
            stats = st;
            (to_teacher(&psvs), psvs)
        }
        ShardSpec::Teacher { path, start, count } => {
            let (start, count) = (*start, *count);
            let mut reader = ShardReader::open(path).map_err(|e| e.to_string())?;
            let mut recs = Vec::with_capacity(count.min(1 << 22) as usize);
            let mut seen = 0u64;
            while (recs.len() as u64) < count {
                match reader.next_record().map_err(|e| e.to_string())? {
                    Some(r) => {
                        if seen >= start {
                            recs.push(r);
                        }
                        seen += 1;
                    }
                    None => break,
                }
            }
            if recs.len() as u64 != count {
                return Err(format!(
                    "{path}: records {start}..{} asked for, only {} found: the file changed since the run started",
                    start + count,
                    start + recs.len() as u64
                ));
            }
            progress.store(recs.len() as u64, Ordering::Relaxed);
            (recs, Vec::new())
        }
        ShardSpec::Match { .. } => unreachable!("played above"),
    };
    let batch = pooled_batch(lease, draws, pool, &records);
    let threads_pool =
        rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build().map_err(|e| e.to_string())?;
    let g = threads_pool
        .install(|| batch_gradient(evaluator, batch.as_deref().unwrap_or(&records), &loss, threads > 1));
    let mut raw = Vec::new();
    if lease.return_records {
        raw.reserve(psvs.len() * PackedSfenValue::SIZE);
        for p in &psvs {
            raw.extend_from_slice(&p.to_bytes());
        }
    }
    Ok(ShardOutput {
        gradient: g.entries,
        records: raw,
        stats: v1::ShardStats {
            positions: records.len() as u64,
            used: g.stats.used,
            skipped: g.stats.skipped,
            loss_sum: g.stats.loss_sum,
            games: stats.games,
            search_nodes: stats.nodes,
            seconds: started.elapsed().as_secs_f64(),
            cpu_seconds: (process_cpu_seconds() - cpu_started).max(0.0),
        },
        result: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine_core::rules::Position;

    fn shard(scores: std::ops::Range<i16>) -> Vec<TeacherRecord> {
        let pos = Position::startpos();
        let psvs: Vec<PackedSfenValue> =
            scores.map(|s| PackedSfenValue::new(&pos, None, s, 0).expect("startpos packs")).collect();
        to_teacher(&psvs)
    }

    fn scores(rs: &[TeacherRecord]) -> Vec<i16> {
        rs.iter().map(|r| r.psv.score).collect()
    }

    #[test]
    fn a_pooled_batch_mixes_earlier_shards_in() {
        let pool = Mutex::new(BatchPool::default());
        let mut lease = v1::Lease { shard_id: 1, attempt: 1, batch_pool_records: 1000, ..Default::default() };
        let first = shard(0..100);
        let b1 = pooled_batch(&lease, 1, &pool, &first).expect("the lease asks for a pool");
        // The pool held only this shard: the batch is the shard, in another order.
        let mut s1 = scores(&b1);
        s1.sort();
        assert_eq!(s1, scores(&first));
        lease.shard_id = 2;
        let second = shard(100..200);
        let b2 = scores(&pooled_batch(&lease, 1, &pool, &second).unwrap());
        assert_eq!(b2.len(), 100, "as many records as the shard made");
        let older = b2.iter().filter(|&&s| s < 100).count();
        assert!((25..=75).contains(&older), "{older} of 100 from the first shard");
        // Two draws per record: twice the shard's count, distinct records, both shards in it.
        lease.shard_id = 3;
        let third = shard(200..300);
        let mut b3 = scores(&pooled_batch(&lease, 2, &pool, &third).unwrap());
        assert_eq!(b3.len(), 200, "twice as many records as the shard made");
        b3.sort();
        b3.dedup();
        assert_eq!(b3.len(), 200, "drawn without repeats");
        assert!(b3.iter().any(|&s| s >= 200) && b3.iter().any(|&s| s < 200));
        // Without a pool the batch is the shard's own.
        lease.batch_pool_records = 0;
        assert!(pooled_batch(&lease, 2, &pool, &third).is_none());
    }

    #[test]
    fn batch_pool_draws_from_the_wire_are_bounded() {
        let mut lease = v1::Lease::default();
        assert_eq!(pool_draws(&lease), Ok(1), "0 (not sent) is one draw");
        lease.batch_pool_draws = BatchPool::MAX_DRAWS;
        assert_eq!(pool_draws(&lease), Ok(BatchPool::MAX_DRAWS as usize));
        lease.batch_pool_draws = BatchPool::MAX_DRAWS + 1;
        let e = pool_draws(&lease).unwrap_err();
        assert!(e.contains("batch-pool draws"), "{e}");
    }
}

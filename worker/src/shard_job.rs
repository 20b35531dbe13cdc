//! Running one lease: produce teacher records (self-play with search, replayed game records
//! searched position by position, or an existing teacher shard) and the summed sparse
//! gradient of the learner's loss over them, with the weights the lease asked for.

use engine_core::eval::Evaluator;
use engine_core::learn::gradient::{LossConfig, batch_gradient};
use engine_core::teacher::gensfen::{
    self, GensfenConfig, GensfenStats, Opening, SearchLimit, UnknownResult, run_records, run_selfplay,
};
use engine_core::teacher::{PackedSfenValue, ShardReader, TeacherRecord};
use keima_proto::v1::{self, lease::Kind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A finished shard: the gradient (sorted by index, distinct), the teacher records (raw
/// 40-byte PackedSfenValue, empty unless asked for), and its statistics.
pub struct ShardOutput {
    pub gradient: Vec<(u32, [f32; 2])>,
    pub records: Vec<u8>,
    pub stats: v1::ShardStats,
}

fn limit(depth: i32, nodes: u64) -> Result<SearchLimit, String> {
    if depth > 0 {
        Ok(SearchLimit::Depth(depth))
    } else if nodes > 0 {
        Ok(SearchLimit::Nodes(nodes))
    } else {
        Err("the lease gives neither depth nor nodes".into())
    }
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

/// Runs a lease on `threads` threads. `progress` counts positions as they are produced.
pub fn run(
    lease: &v1::Lease,
    evaluator: &Arc<Evaluator>,
    threads: usize,
    progress: &AtomicU64,
) -> Result<ShardOutput, String> {
    let started = Instant::now();
    let loss = lease.loss.ok_or("the lease has no loss settings")?;
    let loss = LossConfig { lambda: loss.lambda, eval_limit: loss.eval_limit, skip_draws: loss.skip_draws };
    if !(0.0..=1.0).contains(&loss.lambda) {
        return Err(format!("the lease's lambda {} is outside [0, 1]", loss.lambda));
    }
    let mut stats = GensfenStats::default();
    let (records, psvs): (Vec<TeacherRecord>, Vec<PackedSfenValue>) = match lease.kind.as_ref() {
        Some(Kind::Selfplay(s)) => {
            let openings = s.openings.iter().map(|l| Opening::parse_usi(l)).collect::<Result<Vec<_>, _>>()?;
            let cfg = GensfenConfig {
                limit: limit(s.depth, s.nodes)?,
                eval_limit: s.eval_limit,
                write_minply: s.write_minply,
                max_ply: s.max_plies,
                random_moves: s.random_moves,
                seed: s.seed,
                ..GensfenConfig::default()
            };
            let mut workers = searchers(evaluator, threads, s.games as usize);
            let (psvs, st) = run_selfplay(&mut workers, &cfg, &openings, s.games as u64, Vec::new(), |st| {
                progress.store(st.positions_written, Ordering::Relaxed)
            })
            .map_err(|e| e.to_string())?;
            stats = st;
            (to_teacher(&psvs), psvs)
        }
        Some(Kind::Records(r)) => {
            let mut games = Vec::new();
            for p in &r.paths {
                games.extend(
                    engine_core::records::load_file(std::path::Path::new(p)).map_err(|e| e.to_string())?,
                );
            }
            let cfg = GensfenConfig {
                limit: limit(r.depth, r.nodes)?,
                unknown_result: match r.unknown_result {
                    1 => UnknownResult::Draw,
                    2 => UnknownResult::LastMoverWins,
                    _ => UnknownResult::Skip,
                },
                ..GensfenConfig::default()
            };
            let mut workers = searchers(evaluator, threads, games.len());
            let (psvs, st) = run_records(&mut workers, &cfg, &games, Vec::new(), |st| {
                progress.store(st.positions_written, Ordering::Relaxed)
            })
            .map_err(|e| e.to_string())?;
            stats = st;
            (to_teacher(&psvs), psvs)
        }
        Some(Kind::Teacher(t)) => {
            let mut reader = ShardReader::open(&t.path).map_err(|e| e.to_string())?;
            let mut recs = Vec::with_capacity(t.count.min(1 << 22) as usize);
            let mut seen = 0u64;
            while (recs.len() as u64) < t.count {
                match reader.next_record().map_err(|e| e.to_string())? {
                    Some(r) => {
                        if seen >= t.start {
                            recs.push(r);
                        }
                        seen += 1;
                    }
                    None => break,
                }
            }
            if recs.len() as u64 != t.count {
                return Err(format!(
                    "{}: records {}..{} asked for, only {} found: the file changed since the run started",
                    t.path,
                    t.start,
                    t.start + t.count,
                    t.start + recs.len() as u64
                ));
            }
            progress.store(recs.len() as u64, Ordering::Relaxed);
            (recs, Vec::new())
        }
        None => return Err("the lease has no work kind (a newer coordinator?)".into()),
    };
    let pool =
        rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build().map_err(|e| e.to_string())?;
    let g = pool.install(|| batch_gradient(evaluator, &records, &loss, threads > 1));
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
        },
    })
}

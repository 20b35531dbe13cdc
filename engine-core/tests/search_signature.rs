//! The search signature (`keima bench`): the node count of the fixed-depth searches over
//! the bench positions. Any change to the search tree changes it; a commit that changes
//! the search on purpose updates the number here (and says so), so that unintended
//! changes cannot slip in. Also checks that the count is the same run after run
//! (determinism with one thread).

use engine_core::search::bench;

/// `keima bench --depth 10` of the current search.
const SIGNATURE_DEPTH_10: u64 = 646_922;

#[test]
fn bench_signature_is_pinned_and_reproducible() {
    let a = bench::run(10);
    let b = bench::run(10);
    assert_eq!(a.nodes, b.nodes, "the same searches gave different node counts");
    assert_eq!(
        a.total_nodes(),
        SIGNATURE_DEPTH_10,
        "the search signature changed: if on purpose, update SIGNATURE_DEPTH_10 (per position: {:?})",
        a.nodes
    );
}

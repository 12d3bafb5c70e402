/* The cost model extensions through the C++17 wrapper (free functions on
 * pipesched::Plan). Expected values are the hand derivations of
 * tests/test_costmodel.c. */
#include <pipesched.hpp>

#include "testutil.h"

#include <cmath>
#include <string>
#include <vector>

namespace {

/* dualpipev p = 8, m = 32, unit costs: span 206, and 179 with s = 0.5 */
void test_overlap_saving_shrinks_dualpipev_span()
{
    pipesched::Plan plan(8, 32);
    CHECK_EQ_DBL(pipesched::generate(plan, "dualpipev").simulate().span(), 206);
    pipesched::set_overlap_saving(plan, 0.5);
    CHECK_EQ_DBL(pipesched::overlap_saving(plan, 3), 0.5);
    CHECK_EQ_DBL(pipesched::generate(plan, "dualpipev").simulate().span(), 179);
    try {
        pipesched::set_overlap_saving(plan, 2);
        CHECK(false);
    } catch (const pipesched::Error &e) {
        CHECK(e.status() == PSCHED_EINVAL);
        CHECK_CONTAINS(e.what(), "must be <= min(t_F, t_B)");
    }
}

/* 1f1b p = 2, m = 3, weights (1, 4, 1): makespan 27 */
void test_weights_and_links()
{
    pipesched::Plan plan(2, 3);
    pipesched::set_microbatch_weights(plan, {1, 4, 1});
    CHECK_EQ_DBL(pipesched::microbatch_weight(plan, 1), 4);
    CHECK_EQ_DBL(pipesched::generate(plan, "1f1b").simulate().makespan(), 27);
    pipesched::set_microbatch_weights(plan, {});
    /* gpipe p = 2, m = 3, 4 bytes forward over bandwidth 1: makespan 22 */
    pipesched::set_comm_bytes(plan, 4, 0);
    pipesched::set_topology(plan, 0, 1, 0, INFINITY, 0);
    CHECK_EQ_DBL(pipesched::generate(plan, "gpipe").simulate().makespan(), 22);
}

/* selective offload of 1f1b p = 8, m = 32 at PCIe bandwidth 1: step time
 * 117, peak M/4 (tests/test_offload.c) */
void test_offload()
{
    pipesched::Plan plan(8, 32);
    pipesched::set_pcie_bandwidth(plan, 1);
    pipesched::Schedule s = pipesched::generate(plan, "1f1b");
    pipesched::Report r = pipesched::offload(s, PSCHED_OFFLOAD_SELECTIVE).simulate();
    CHECK_EQ_DBL(r.makespan(), 117);
    CHECK_EQ_DBL(r.peak_memory_M(), 0.25);
}

} // namespace

int main()
{
    RUN(test_overlap_saving_shrinks_dualpipev_span);
    RUN(test_weights_and_links);
    RUN(test_offload);
    TEST_MAIN_END();
}

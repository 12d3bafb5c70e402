/* psched_validate: structure, counts, dependencies and deadlock freedom,
 * all by the execution engine (rendezvous semantics once comm ops are in). */
#include "execute.h"

psched_status psched_validate(const psched_schedule *schedule)
{
    if (!schedule)
        return psched_fail(PSCHED_EINVAL, "schedule is NULL");
    if (psched__execute_fast(schedule, NULL, NULL, NULL, NULL))
        return PSCHED_OK;
    if (psched__has_comm_ops(schedule)) {
        if (psched__rendezvous_fast_check(schedule))
            return PSCHED_OK;
        return psched__execute_rendezvous(schedule, NULL, NULL, NULL);
    }
    return psched__execute(schedule, NULL, NULL, NULL);
}

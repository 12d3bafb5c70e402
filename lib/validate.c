/* psched_validate: structure, counts, dependencies and deadlock freedom,
 * all by the execution engine. */
#include "internal.h"

psched_status psched_validate(const psched_schedule *schedule)
{
    if (!schedule)
        return psched_fail(PSCHED_EINVAL, "schedule is NULL");
    return psched__execute(schedule, NULL, NULL, NULL);
}

/* Getting started in C: ZB-H1 on 4 devices, 8 micro-batches. */
#include <pipesched.h>
#include <stdio.h>

int main(void)
{
    psched_plan *plan;
    psched_schedule *s;
    psched_report *r;
    psched_plan_create(&plan);
    psched_plan_set_devices(plan, 4);
    psched_plan_set_microbatches(plan, 8);
    psched_status st = psched_generate(plan, "zb-h1", &s);
    if (st != PSCHED_OK) {
        fprintf(stderr, "%s: %s\n", psched_status_str(st), psched_last_error());
        return 1;
    }
    psched_simulate(s, NULL, &r);
    printf("span %g, bubble %.3f\n", psched_report_span(r), psched_report_bubble_ratio(r));
    psched_op ops[4];
    psched_schedule_ops(s, 0, 0, 4, ops, sizeof ops[0]);
    for (int i = 0; i < 4; i++) /* kind: PSCHED_OP_F, _B, _W or _BW */
        printf("device 0 op %d: kind %d stage %u micro-batch %u\n", i, ops[i].kind,
               ops[i].stage, ops[i].microbatch);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return 0;
}

/* The smallest memory any split fits in, exactly, and a split that fits
 * in it, when the layers between the first and the last are identical
 * (docs/optimizer.md, the Status paragraph of "Optimal for the simulated
 * step time").
 *
 * Every layer at its leanest variant, stage s holding n_s of the run's
 * identical layers takes n_s·w_s on its device, w_s = param + inflight[s]
 * · act, plus the first layer on stage 0 and the last on stage S − 1 when
 * they differ from the run (the run's shape, psched__run_shape()). Any
 * counts n_s >= lo_s summing to the run's length are a split (lo_s = 1,
 * but 0 on a stage holding a different first or last layer), so device d
 * at its stages' least counts takes m_d, and each further layer costs it
 * at least its cheapest stage's w, c_d, and exactly that when every
 * further layer goes there. The least largest device over the E = run −
 * Σ lo_s further layers is then that of E identical units over devices
 * whose memory after k of them is m_d + k·c_d: any allocation's largest
 * device is at least max(max m_d, the E-th smallest of the values m_d +
 * k·c_d, k >= 1) (its E units' values are E of them, and a device's
 * values rise with k), and giving each unit in turn to the device least
 * after taking it takes exactly the E smallest. This replaces, on these
 * models, the MILP over every stage's ranges (four chunks per device,
 * Chimera, DualPipe's two chains), which often could not prove the
 * minimum in its share of the time and left it unknown (the grid's L =
 * 80, p = 8 interleaved v = 4 at 1 byte: 12.6 s, no figure; now 157.5 at
 * once), and its split is the witness a tight limit needs (the methods
 * that minimise time found none at L = 32, p = 4 interleaved v = 4 and
 * limits 120 and 121, where it fits). */
#include "optimizer.h"
#include "pathbound.h"

#include <math.h>

/* Device d's memory after one more of its further layers. */
static double next_value(const double *base, const double *cheap, const uint32_t *taken,
                         uint32_t d)
{
    return base[d] + (double)(taken[d] + 1) * cheap[d];
}

static void swap_u32(uint32_t *a, uint32_t *b)
{
    uint32_t t = *a;
    *a = *b;
    *b = t;
}

psched_status psched__run_min_memory(const psched__problem *pb, psched__solution *sol,
                                     double *out, bool *done)
{
    psched__run run;
    uint32_t S = pb->stages, D = pb->devices, L = pb->layers;
    *done = false;
    if (!psched__run_shape(pb, &run) || run.count < S - (uint32_t)run.head - (uint32_t)run.tail)
        return PSCHED_OK;
    double *base = psched__calloc(D, sizeof *base), *cheap = psched__calloc(D, sizeof *cheap);
    uint32_t *at = psched__calloc(D, sizeof *at); /* each device's cheapest stage */
    uint32_t *heap = psched__calloc(D, sizeof *heap), *taken = psched__calloc(D, sizeof *taken);
    bool ok = base && cheap && at && heap && taken;
    for (uint32_t d = 0; ok && d < D; d++)
        cheap[d] = INFINITY;
    uint32_t extra = run.count;
    for (uint32_t s = 0; ok && s < S; s++) {
        uint32_t d = pb->device_of[s];
        double w = psched__lean_memory(pb, s, run.first, 1); /* one run layer */
        bool head = s == 0 && run.head, tail = s == S - 1 && run.tail;
        /* its one layer: the different first or last, or a run layer */
        if (head || tail) {
            base[d] += psched__lean_memory(pb, s, head ? 0 : L - 1, 1);
        } else {
            base[d] += w;
            extra--;
        }
        if (w < cheap[d]) {
            cheap[d] = w;
            at[d] = s;
        }
    }
    double top = 0;
    /* a binary heap of the devices by their memory after one more layer;
     * each further layer to its first */
    for (uint32_t d = 0; ok && d < D; d++) {
        top = fmax(top, base[d]);
        uint32_t k = d;
        heap[k] = d;
        while (k > 0 && next_value(base, cheap, taken, heap[(k - 1) / 2]) >
                            next_value(base, cheap, taken, heap[k])) {
            swap_u32(&heap[k], &heap[(k - 1) / 2]);
            k = (k - 1) / 2;
        }
    }
    for (uint32_t e = 0; ok && e < extra; e++) {
        top = fmax(top, next_value(base, cheap, taken, heap[0]));
        taken[heap[0]]++;
        for (uint32_t k = 0;;) {
            uint32_t c = 2 * k + 1;
            if (c >= D)
                break;
            if (c + 1 < D && next_value(base, cheap, taken, heap[c + 1]) <
                                 next_value(base, cheap, taken, heap[c]))
                c++;
            if (!(next_value(base, cheap, taken, heap[c]) < next_value(base, cheap, taken, heap[k])))
                break;
            swap_u32(&heap[k], &heap[c]);
            k = c;
        }
    }
    if (ok && sol) {
        /* the split: least counts, each device's further layers on its
         * cheapest stage; every layer at its leanest variant */
        uint32_t a = 0;
        for (uint32_t s = 0; s < S; s++) {
            uint32_t d = pb->device_of[s];
            /* one layer each (a run layer, or the different first or
             * last: S >= 2), and the device's further layers */
            uint32_t n = 1 + (at[d] == s ? taken[d] : 0);
            sol->first[s] = a;
            sol->count[s] = n;
            a += n;
        }
        for (uint32_t l = 0; l < L; l++)
            sol->choice[l] = psched__lean_kind(psched__layer_group(pb, l));
        sol->found = a == L; /* (the counts hold every layer) */
    }
    psched__dealloc(base);
    psched__dealloc(cheap);
    psched__dealloc(at);
    psched__dealloc(heap);
    psched__dealloc(taken);
    if (!ok)
        return PSCHED_ENOMEM_FAIL();
    *out = top;
    *done = true;
    return PSCHED_OK;
}

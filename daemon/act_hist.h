/*  =========================================================================
    act_hist - a latency histogram with fixed bounds in milliseconds, as
    Prometheus histograms count (cumulative buckets, a count and a sum):
    STATS shows one per activity for queue wait, run time and end to end.
    Adding costs a few compares and no allocation.
    ========================================================================= */

#ifndef ACT_HIST_H_INCLUDED
#define ACT_HIST_H_INCLUDED

#include <jansson.h>
#include <stdint.h>

//  Bucket upper bounds (ms); a last, unbounded bucket follows them
#define ACT_HIST_BOUNDS 15

typedef struct {
    uint64_t counts [ACT_HIST_BOUNDS + 1];  //  Samples per bucket (not cumulative)
    uint64_t count;             //  Samples in all
    double sum;                 //  Their sum, in ms
} act_hist_t;

//  Count one sample of ms milliseconds (negative counts as 0).
void act_hist_add (act_hist_t *self, long long ms);

//  Count one sample of us microseconds (negative counts as 0): for what
//  often takes less than a millisecond (a store commit), whose bucket and
//  sum whole milliseconds would get wrong.
void act_hist_add_us (act_hist_t *self, long long us);

//  A monotonic clock in microseconds, for act_hist_add_us.
long long act_hist_clock_us (void);

//  The histogram as {"le": [bounds..., "+Inf"], "counts": [cumulative...],
//  "count": N, "sum": S}, a new object.
json_t *act_hist_json (const act_hist_t *self);

#endif

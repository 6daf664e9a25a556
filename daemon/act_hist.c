/*  =========================================================================
    act_hist - latency histograms (see act_hist.h).
    ========================================================================= */

#include <time.h>
#include "act_hist.h"

//  From a millisecond (a store round trip) to a minute (a long tool)
static const long long s_bounds [ACT_HIST_BOUNDS] = {
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000
};

void
act_hist_add (act_hist_t *self, long long ms)
{
    act_hist_add_us (self, ms * 1000);
}

void
act_hist_add_us (act_hist_t *self, long long us)
{
    if (us < 0)
        us = 0;
    size_t bucket = 0;
    while (bucket < ACT_HIST_BOUNDS && us > s_bounds [bucket] * 1000)
        bucket++;
    self->counts [bucket]++;
    self->count++;
    self->sum += (double) us / 1000.0;
}

long long
act_hist_clock_us (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (long long) now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

json_t *
act_hist_json (const act_hist_t *self)
{
    json_t *bounds = json_array ();
    json_t *counts = json_array ();
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= ACT_HIST_BOUNDS; i++) {
        cumulative += self->counts [i];
        json_array_append_new (bounds, i < ACT_HIST_BOUNDS? json_integer (s_bounds [i])
                                                          : json_string ("+Inf"));
        json_array_append_new (counts, json_integer ((json_int_t) cumulative));
    }
    return json_pack ("{sosososf}", "le", bounds, "counts", counts,
                      "count", json_integer ((json_int_t) self->count), "sum", self->sum);
}

/*  =========================================================================
    json_count - jansson's allocations counted, for unit tests that bound
    what an operation costs by its allocations rather than by a timing
    (this machine is shared: timed assertions are not used).

    Include after <jansson.h>. Values made while counting are freed with
    free () as any other, so counting may start and stop at any point.
    ========================================================================= */

#ifndef JSON_COUNT_H_INCLUDED
#define JSON_COUNT_H_INCLUDED

#include <stdlib.h>

//  jansson's allocations since unit_json_count_start
static size_t s_unit_json_counted;
//  The bytes they asked for
static size_t s_unit_json_bytes;

static void *
s_unit_json_count_malloc (size_t size)
{
    s_unit_json_counted++;
    s_unit_json_bytes += size;
    return malloc (size);
}

//  Count jansson's allocations from now, from 0
static inline void
unit_json_count_start (void)
{
    s_unit_json_counted = 0;
    s_unit_json_bytes = 0;
    json_set_alloc_funcs (s_unit_json_count_malloc, free);
}

//  The bytes jansson's allocations asked for since unit_json_count_start
static inline size_t
unit_json_count_bytes (void)
{
    return s_unit_json_bytes;
}

//  Stop counting; the allocations counted since unit_json_count_start
static inline size_t
unit_json_count_stop (void)
{
    json_set_alloc_funcs (malloc, free);
    return s_unit_json_counted;
}

#endif

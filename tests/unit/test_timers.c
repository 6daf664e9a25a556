/*  =========================================================================
    test_timers - what the broker's timer heap promises (act_timers.h):
    the earliest timer comes out first, every timer due at the same ms
    comes out, nothing comes out before its time, and next says when the
    earliest fires. Then random adds and pops against a sorted array.

    The random run prints its seed; to replay one: ACTD_TIMERS_SEED=<seed>.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <czmq.h>
#include "act_timers.h"
#include "unit_support.h"

#define S_SEED          0x71AE25ULL     //  Default seed of the random run
#define S_OPERATIONS    10000           //  Adds, pops and a few clears

static act_timer_t
s_timer (long long at, uint64_t id)
{
    //  Generation and type are carried as given: derive them from the id
    //  so that a pop shows the whole timer came back
    return (act_timer_t) { .at = at, .id = id, .generation = (uint32_t) (id * 7 + 1),
                           .type = (int) (id % 5) };
}

static void
s_assert_timer (const act_timer_t *timer, long long at, uint64_t id)
{
    assert_int_equal (timer->at, at);
    assert_int_equal (timer->id, id);
    assert_int_equal (timer->generation, (uint32_t) (id * 7 + 1));
    assert_int_equal (timer->type, (int) (id % 5));
}


//  --------------------------------------------------------------------------
//  The promises, one by one

//  The earliest timer fires first, whatever order they were added in.
static void
test_earliest_first (void **state)
{
    (void) state;
    act_timers_t *timers = act_timers_new ();
    assert_non_null (timers);
    assert_int_equal (act_timers_add (timers, s_timer (30, 3)), 0);
    assert_int_equal (act_timers_add (timers, s_timer (10, 1)), 0);
    assert_int_equal (act_timers_add (timers, s_timer (40, 4)), 0);
    assert_int_equal (act_timers_add (timers, s_timer (20, 2)), 0);
    assert_int_equal (act_timers_size (timers), 4);

    act_timer_t timer;
    for (uint64_t id = 1; id <= 4; id++) {
        assert_true (act_timers_pop (timers, 1000, &timer));
        s_assert_timer (&timer, (long long) id * 10, id);
    }
    assert_false (act_timers_pop (timers, 1000, &timer));
    assert_int_equal (act_timers_size (timers), 0);
    act_timers_destroy (&timers);
    assert_null (timers);
}

//  Timers due at the same ms all come out (in no set order), and a timer
//  one ms later does not come out with them.
static void
test_timers_due_at_the_same_ms_all_come_out (void **state)
{
    (void) state;
    act_timers_t *timers = act_timers_new ();
    assert_int_equal (act_timers_add (timers, s_timer (101, 9)), 0);
    for (uint64_t id = 1; id <= 5; id++)
        assert_int_equal (act_timers_add (timers, s_timer (100, id)), 0);

    bool seen [6] = { false };
    act_timer_t timer;
    for (int popped = 0; popped < 5; popped++) {
        assert_true (act_timers_pop (timers, 100, &timer));
        assert_int_equal (timer.at, 100);
        assert_in_range (timer.id, 1, 5);
        assert_false (seen [timer.id]);
        seen [timer.id] = true;
        s_assert_timer (&timer, 100, timer.id);
    }
    assert_false (act_timers_pop (timers, 100, &timer));
    assert_int_equal (act_timers_size (timers), 1);
    assert_true (act_timers_pop (timers, 101, &timer));
    s_assert_timer (&timer, 101, 9);
    act_timers_destroy (&timers);
}

//  A timer is taken only when it is due (at <= now): before that, pop
//  takes nothing and leaves it in place.
static void
test_pop_respects_now (void **state)
{
    (void) state;
    act_timers_t *timers = act_timers_new ();
    assert_int_equal (act_timers_add (timers, s_timer (50, 1)), 0);
    act_timer_t timer = s_timer (-1, 0);
    assert_false (act_timers_pop (timers, 49, &timer));
    assert_int_equal (timer.at, -1);                //  Untouched
    assert_int_equal (act_timers_size (timers), 1);
    assert_int_equal (act_timers_next (timers), 50);
    assert_true (act_timers_pop (timers, 50, &timer));
    s_assert_timer (&timer, 50, 1);
    assert_int_equal (act_timers_size (timers), 0);
    act_timers_destroy (&timers);
}

//  next is when the earliest timer fires, -1 when there is none.
static void
test_next_is_the_earliest (void **state)
{
    (void) state;
    act_timers_t *timers = act_timers_new ();
    assert_int_equal (act_timers_next (timers), -1);
    assert_int_equal (act_timers_add (timers, s_timer (70, 1)), 0);
    assert_int_equal (act_timers_next (timers), 70);
    assert_int_equal (act_timers_add (timers, s_timer (90, 2)), 0);
    assert_int_equal (act_timers_next (timers), 70);
    assert_int_equal (act_timers_add (timers, s_timer (60, 3)), 0);
    assert_int_equal (act_timers_next (timers), 60);

    act_timer_t timer;
    assert_true (act_timers_pop (timers, 1000, &timer));
    assert_int_equal (act_timers_next (timers), 70);
    assert_true (act_timers_pop (timers, 1000, &timer));
    assert_int_equal (act_timers_next (timers), 90);
    assert_true (act_timers_pop (timers, 1000, &timer));
    assert_int_equal (act_timers_next (timers), -1);
    act_timers_destroy (&timers);
}

//  clear drops every timer; the heap is usable after.
static void
test_clear_drops_every_timer (void **state)
{
    (void) state;
    act_timers_t *timers = act_timers_new ();
    for (uint64_t id = 1; id <= 300; id++)          //  Past the first allocation
        assert_int_equal (act_timers_add (timers, s_timer ((long long) id, id)), 0);
    assert_int_equal (act_timers_size (timers), 300);
    act_timers_clear (timers);
    assert_int_equal (act_timers_size (timers), 0);
    assert_int_equal (act_timers_next (timers), -1);
    act_timer_t timer;
    assert_false (act_timers_pop (timers, 1000000, &timer));

    assert_int_equal (act_timers_add (timers, s_timer (5, 42)), 0);
    assert_int_equal (act_timers_next (timers), 5);
    assert_true (act_timers_pop (timers, 5, &timer));
    s_assert_timer (&timer, 5, 42);
    act_timers_destroy (&timers);
    act_timers_destroy (&timers);                   //  Safe on NULL
}


//  --------------------------------------------------------------------------
//  Random operations against a sorted array

//  The reference: every timer held, sorted by at (ties in adding order)
typedef struct {
    act_timer_t *timers;
    size_t size;
} s_sorted_t;

static void
s_sorted_add (s_sorted_t *sorted, act_timer_t timer)
{
    size_t at = sorted->size;
    while (at > 0 && sorted->timers [at - 1].at > timer.at) {
        sorted->timers [at] = sorted->timers [at - 1];
        at--;
    }
    sorted->timers [at] = timer;
    sorted->size++;
}

//  Remove the timer with this id, which must be among those at the
//  earliest time (ties come out in no set order)
static void
s_sorted_remove_earliest (s_sorted_t *sorted, const act_timer_t *popped)
{
    size_t index = 0;
    while (index < sorted->size && sorted->timers [index].at == sorted->timers [0].at
       &&  sorted->timers [index].id != popped->id)
        index++;
    assert_true (index < sorted->size);
    assert_int_equal (sorted->timers [index].at, sorted->timers [0].at);
    s_assert_timer (popped, sorted->timers [index].at, sorted->timers [index].id);
    memmove (&sorted->timers [index], &sorted->timers [index + 1],
             (sorted->size - index - 1) * sizeof (act_timer_t));
    sorted->size--;
}

//  Adds (times from a narrow range, so that many share a ms), pops at a
//  random now, and a clear now and then: after each, pop took a timer iff
//  the earliest was due and took one of the earliest, and size and next
//  agree with the sorted array.
static void
test_random_operations_match_a_sorted_array (void **state)
{
    (void) state;
    uint64_t rng = unit_seed ("ACTD_TIMERS_SEED", S_SEED);

    act_timers_t *timers = act_timers_new ();
    s_sorted_t sorted = { calloc (S_OPERATIONS, sizeof (act_timer_t)), 0 };
    assert_non_null (sorted.timers);
    uint64_t next_id = 1;
    size_t pops = 0, empty_pops = 0, most = 0;
    for (int op = 0; op < S_OPERATIONS; op++) {
        long long roll = (long long) unit_below (&rng, 1000);
        //  Grow for the first half (past the heap's first 256 slots), then
        //  shrink; a rare clear
        long long adds = op < S_OPERATIONS / 2? 650: 400;
        if (roll < 2) {
            act_timers_clear (timers);
            sorted.size = 0;
        }
        else
        if (roll < adds) {
            act_timer_t timer = s_timer ((long long) unit_below (&rng, 2000), next_id++);
            assert_int_equal (act_timers_add (timers, timer), 0);
            s_sorted_add (&sorted, timer);
        }
        else {
            long long now = (long long) unit_below (&rng, 2200) - 100;
            act_timer_t timer;
            bool due = sorted.size > 0 && sorted.timers [0].at <= now;
            bool took = act_timers_pop (timers, now, &timer);
            assert_int_equal (took, due);
            if (took) {
                s_sorted_remove_earliest (&sorted, &timer);
                pops++;
            }
            else
                empty_pops++;
        }
        assert_int_equal (act_timers_size (timers), sorted.size);
        assert_int_equal (act_timers_next (timers), sorted.size? sorted.timers [0].at: -1);
        if (sorted.size > most)
            most = sorted.size;
    }
    //  The run exercised what it claims to: growth, real pops, refusals
    assert_true (most > 256);
    assert_true (pops > 1000);
    assert_true (empty_pops > 100);

    //  Drain: everything left comes out in order
    act_timer_t timer;
    while (sorted.size) {
        assert_true (act_timers_pop (timers, 1LL << 40, &timer));
        s_sorted_remove_earliest (&sorted, &timer);
    }
    assert_false (act_timers_pop (timers, 1LL << 40, &timer));
    free (sorted.timers);
    act_timers_destroy (&timers);
}

//  The sweep's test here: odd ids are void
static bool
s_keep_even (void *arg, const act_timer_t *timer)
{
    (void) arg;
    return timer->id % 2 == 0;
}

//  A sweep drops exactly the timers keep refuses, leaves a heap that pops
//  the others earliest first, and takes adds after a sweep that shrank it
static void
test_sweep_drops_void_timers_and_keeps_the_order (void **state)
{
    (void) state;
    act_timers_t *timers = act_timers_new ();
    assert_non_null (timers);
    uint64_t rng = 0x5EE9;
    for (uint64_t id = 0; id < 20000; id++)
        assert_int_equal (act_timers_add (timers, s_timer (
            (long long) ((rng = rng * 6364136223846793005ULL + 1) >> 40) % 100000, id)), 0);
    assert_int_equal (act_timers_sweep (timers, s_keep_even, NULL), 10000);
    assert_int_equal (act_timers_size (timers), 10000);
    long long last = -1;
    act_timer_t timer;
    size_t popped = 0;
    while (act_timers_pop (timers, 1000000, &timer)) {
        assert_true (timer.at >= last);
        assert_int_equal (timer.id % 2, 0);
        assert_int_equal (timer.generation, (uint32_t) (timer.id * 7 + 1));
        last = timer.at;
        popped++;
        //  Shrunk while most of it stands empty, and still takes adds
        if (popped == 9000) {
            assert_int_equal (act_timers_sweep (timers, s_keep_even, NULL), 0);
            assert_int_equal (act_timers_add (timers, s_timer (last, 2)), 0);
        }
    }
    assert_int_equal (popped, 10001);
    act_timers_destroy (&timers);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_earliest_first),
        cmocka_unit_test (test_timers_due_at_the_same_ms_all_come_out),
        cmocka_unit_test (test_pop_respects_now),
        cmocka_unit_test (test_next_is_the_earliest),
        cmocka_unit_test (test_clear_drops_every_timer),
        cmocka_unit_test (test_random_operations_match_a_sorted_array),
        cmocka_unit_test (test_sweep_drops_void_timers_and_keeps_the_order),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

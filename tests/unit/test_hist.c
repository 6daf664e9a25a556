/*  =========================================================================
    test_hist - what a latency histogram promises (act_hist.h): each
    sample lands in the first bucket whose bound it does not pass, the
    counts come out cumulative as Prometheus wants them, and a sample in
    microseconds keeps its fraction of a millisecond in the bucket and in
    the sum (a store commit of 300 us is not 0 ms, one of 1.5 ms not 1).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "act_hist.h"

//  The cumulative count of the bucket whose bound is le (ms)
static json_int_t
s_count_le (json_t *hist, json_int_t le)
{
    json_t *bounds = json_object_get (hist, "le");
    for (size_t i = 0; i < json_array_size (bounds); i++)
        if (json_is_integer (json_array_get (bounds, i))
        &&  json_integer_value (json_array_get (bounds, i)) == le)
            return json_integer_value (json_array_get (json_object_get (hist, "counts"), i));
    fail_msg ("no bucket le=%lld", (long long) le);
    return -1;
}

static void
test_milliseconds (void **state)
{
    act_hist_t hist = { 0 };
    act_hist_add (&hist, 1);            //  On a bound: in its bucket
    act_hist_add (&hist, 3);
    act_hist_add (&hist, -4);           //  Counts as 0
    act_hist_add (&hist, 100000);       //  Past the last bound
    json_t *json = act_hist_json (&hist);
    assert_int_equal (s_count_le (json, 1), 2);
    assert_int_equal (s_count_le (json, 2), 2);
    assert_int_equal (s_count_le (json, 5), 3);
    assert_int_equal (s_count_le (json, 60000), 3);
    json_t *counts = json_object_get (json, "counts");
    assert_int_equal (json_integer_value (json_array_get (counts, json_array_size (counts) - 1)), 4);
    assert_string_equal (json_string_value (json_array_get (json_object_get (json, "le"),
                         json_array_size (counts) - 1)), "+Inf");
    assert_int_equal (json_integer_value (json_object_get (json, "count")), 4);
    assert_true (json_real_value (json_object_get (json, "sum")) == 100004.0);
    json_decref (json);
}

static void
test_microseconds (void **state)
{
    act_hist_t hist = { 0 };
    act_hist_add_us (&hist, 300);       //  0.3 ms: le=1, and 0.3 in the sum
    act_hist_add_us (&hist, 1000);      //  On the bound of 1 ms
    act_hist_add_us (&hist, 1500);      //  1.5 ms: past 1, within 2
    json_t *json = act_hist_json (&hist);
    assert_int_equal (s_count_le (json, 1), 2);
    assert_int_equal (s_count_le (json, 2), 3);
    double sum = json_real_value (json_object_get (json, "sum"));
    assert_true (sum > 2.799 && sum < 2.801);
    json_decref (json);
    long long before = act_hist_clock_us ();
    long long after = act_hist_clock_us ();
    assert_true (before > 0 && after >= before);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_milliseconds),
        cmocka_unit_test (test_microseconds),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

/*  =========================================================================
    test_worker_bounds - the C worker refuses, when they are set, the
    values the broker would refuse in READY (act_worker.h, PROTOCOL.md
    section 2.1): a worker's name of 1 to 256 bytes, activities of 1 to
    256, a capacity of 1 to 100000, a language of 1 to 64 bytes. Before,
    each was taken, and the broker refused every READY for ever.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "actd/act_worker.h"

//  Nothing listens there: nothing here connects
#define S_NOWHERE "tcp://127.0.0.1:9"

//  A string of size bytes of 'a' (the caller frees it)
static char *
s_text (size_t size)
{
    char *text = malloc (size + 1);
    memset (text, 'a', size);
    text [size] = 0;
    return text;
}

static void
s_never (act_task_t *task, void *arg)
{
    (void) task;
    (void) arg;
}

static void
test_the_name_is_checked (void **state)
{
    (void) state;
    char *longest = s_text (ACT_WORKER_MAX_NAME), *longer = s_text (ACT_WORKER_MAX_NAME + 1);
    act_worker_t *worker = act_worker_new (S_NOWHERE, longest);
    assert_non_null (worker);
    act_worker_destroy (&worker);
    assert_null (act_worker_new (S_NOWHERE, longer));
    assert_null (act_worker_new (S_NOWHERE, ""));
    //  No name: the default one
    worker = act_worker_new (S_NOWHERE, NULL);
    assert_non_null (worker);
    act_worker_destroy (&worker);
    free (longest);
    free (longer);
}

static void
test_activities_are_checked (void **state)
{
    (void) state;
    act_worker_t *worker = act_worker_new (S_NOWHERE, "bounds");
    char *longest = s_text (256), *longer = s_text (257);
    assert_int_equal (act_worker_serve (worker, longest, s_never, NULL), 0);
    assert_int_equal (act_worker_serve (worker, longer, s_never, NULL), -1);
    assert_int_equal (act_worker_serve (worker, "", s_never, NULL), -1);
    //  Not served, so not declared either
    assert_int_equal (act_worker_declare (worker, longer, "d", NULL, NULL, NULL), -1);
    free (longest);
    free (longer);
    act_worker_destroy (&worker);
}

static void
test_capacity_and_language_are_checked (void **state)
{
    (void) state;
    act_worker_t *worker = act_worker_new (S_NOWHERE, "bounds");
    assert_int_equal (act_worker_set_capacity (worker, 0), -1);
    assert_int_equal (act_worker_set_capacity (worker, ACT_WORKER_MAX_CAPACITY + 1), -1);
    assert_int_equal (act_worker_set_capacity (worker, ACT_WORKER_MAX_CAPACITY), 0);
    assert_int_equal (act_worker_set_capacity (worker, 1), 0);
    char *longest = s_text (ACT_WORKER_MAX_LANG), *longer = s_text (ACT_WORKER_MAX_LANG + 1);
    assert_int_equal (act_worker_set_lang (worker, longest), 0);
    assert_int_equal (act_worker_set_lang (worker, longer), -1);
    assert_int_equal (act_worker_set_lang (worker, ""), -1);
    assert_int_equal (act_worker_set_lang (worker, NULL), -1);
    free (longest);
    free (longer);
    act_worker_destroy (&worker);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_the_name_is_checked),
        cmocka_unit_test (test_activities_are_checked),
        cmocka_unit_test (test_capacity_and_language_are_checked),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

/*  =========================================================================
    test_settings - settings read from a config file (act_settings_load):
    server/max_worker_activities and server/max_served_activities, the
    bounds on the activities workers' READYs name (docs/operations.md
    section 3): their defaults, a value read, and the values refused,
    with the file's line.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "act_settings.h"

//  Settings loaded from a file holding text: 0 with *settings_p, or -1
//  with message (the settings destroyed)
static int
s_load (const char *text, act_settings_t **settings_p, char *message, size_t size)
{
    char path [] = "/tmp/test_settings-XXXXXX";
    int fd = mkstemp (path);
    assert_true (fd >= 0);
    assert_int_equal (write (fd, text, strlen (text)), (ssize_t) strlen (text));
    close (fd);
    *settings_p = act_settings_new ();
    int rc = act_settings_load (*settings_p, path, message, size);
    unlink (path);
    if (rc)
        act_settings_destroy (settings_p);
    return rc;
}

//  1024 names a READY, 4096 activities served at once, by default; a file
//  sets either
static void
test_ready_bounds_default_and_are_read (void **state)
{
    (void) state;
    act_settings_t *settings = act_settings_new ();
    assert_int_equal (settings->max_worker_activities, 1024);
    assert_int_equal (settings->max_served_activities, 4096);
    act_settings_destroy (&settings);
    char message [256] = "";
    assert_int_equal (s_load ("server\n    max_worker_activities = 16\n"
                              "    max_served_activities = 1000000000\n",
                              &settings, message, sizeof message), 0);
    assert_int_equal (settings->max_worker_activities, 16);
    assert_int_equal (settings->max_served_activities, 1000000000);
    act_settings_destroy (&settings);
}

//  0 (no worker could join), a value over the maximum, or not a number
//  is refused, naming the line and the setting
static void
test_ready_bounds_out_of_range_are_refused (void **state)
{
    (void) state;
    struct { const char *text, *expected; } cases [] = {
        { "server\n    max_worker_activities = 0\n",
          "line 2: server/max_worker_activities: '0' is not an integer of at least 1" },
        { "server\n    max_served_activities = 0\n",
          "line 2: server/max_served_activities: '0' is not an integer of at least 1" },
        { "server\n    max_served_activities = 1000000001\n",
          "line 2: server/max_served_activities: '1000000001' is above the maximum of "
          "1000000000" },
        { "server\n    heartbeat_ms = 100\n    max_worker_activities = many\n",
          "line 3: server/max_worker_activities: 'many' is not an integer of at least 1" }
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        act_settings_t *settings = NULL;
        char message [256] = "";
        assert_int_equal (s_load (cases [i].text, &settings, message, sizeof message), -1);
        assert_null (settings);
        assert_non_null (strstr (message, cases [i].expected));
    }
}

int
main (void)
{
    act_log_threshold = LOG_ERR;
    act_log_stream = NULL;
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_ready_bounds_default_and_are_read),
        cmocka_unit_test (test_ready_bounds_out_of_range_are_refused),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

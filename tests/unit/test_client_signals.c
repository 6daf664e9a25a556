/*  =========================================================================
    test_client_signals - a C client leaves the program's signals as they
    were (act_client.h): CZMQ, which takes SIGINT and SIGTERM the first
    time it is used, gives them back after act_client_new, unless the
    program used CZMQ first; act_worker_run still stops on SIGTERM, also
    when a client was made before the worker. Each case runs in a child
    process: what CZMQ did to signals cannot be undone within one.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "actd/act_client.h"
#include "actd/act_worker.h"

//  Nothing listens there: connecting is asynchronous, nothing waits
#define S_NOWHERE "tcp://127.0.0.1:9"

static volatile sig_atomic_t s_own_seen;    //  The program's own handler ran

static void
s_own (int signal)
{
    (void) signal;
    s_own_seen = 1;
}

//  Run child in a process of its own: its exit status, or 128 + the
//  signal that ended it
static int
s_in_child (int (*child) (void))
{
    fflush (NULL);
    pid_t pid = fork ();
    if (pid == 0)
        _exit (child ());
    int status = 0;
    waitpid (pid, &status, 0);
    return WIFSIGNALED (status)? 128 + WTERMSIG (status): WEXITSTATUS (status);
}

//  A client, then SIGTERM: the default action ends the process
static int
s_default_stays (void)
{
    act_client_t *client = act_client_new (S_NOWHERE);
    if (!client)
        return 2;
    raise (SIGTERM);
    return 0;                   //  Still alive: CZMQ kept the signal
}

//  The program's own handler, then a client, then SIGTERM: it runs
static int
s_own_stays (void)
{
    struct sigaction action = { .sa_handler = s_own };
    sigaction (SIGTERM, &action, NULL);
    act_client_t *client = act_client_new (S_NOWHERE);
    raise (SIGTERM);
    act_client_destroy (&client);
    return s_own_seen? 0: 1;
}

//  A program that used CZMQ first keeps CZMQ's handling
static int
s_czmq_first_stays (void)
{
    zsock_t *socket = zsock_new (ZMQ_PAIR);
    act_client_t *client = act_client_new (S_NOWHERE);
    raise (SIGTERM);
    int rc = zsys_interrupted? 0: 1;
    act_client_destroy (&client);
    zsock_destroy (&socket);
    return rc;
}

static void
s_never (act_task_t *task, void *arg)
{
    (void) task;
    (void) arg;
}

//  SIGTERM from the worker's own loop, a little after it started
static void
s_terminate (act_worker_t *worker, void *arg)
{
    (void) worker;
    (void) arg;
    raise (SIGTERM);
}

//  A client first, then a worker: act_worker_run returns on SIGTERM
static int
s_worker_stops (void)
{
    act_client_t *client = act_client_new (S_NOWHERE);
    act_worker_t *worker = act_worker_new (S_NOWHERE, "signals");
    if (!worker || act_worker_serve (worker, "never", s_never, NULL))
        return 2;
    act_worker_timer (worker, 100, s_terminate, NULL);
    act_worker_run (worker);
    act_worker_destroy (&worker);
    act_client_destroy (&client);
    return 0;
}

static void
test_sigterm_still_ends_a_program_with_a_client (void **state)
{
    (void) state;
    assert_int_equal (s_in_child (s_default_stays), 128 + SIGTERM);
}

static void
test_the_programs_own_handler_stays (void **state)
{
    (void) state;
    assert_int_equal (s_in_child (s_own_stays), 0);
}

static void
test_a_program_that_used_czmq_first_keeps_its_handling (void **state)
{
    (void) state;
    assert_int_equal (s_in_child (s_czmq_first_stays), 0);
}

static void
test_a_worker_made_after_a_client_stops_on_sigterm (void **state)
{
    (void) state;
    assert_int_equal (s_in_child (s_worker_stops), 0);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_sigterm_still_ends_a_program_with_a_client),
        cmocka_unit_test (test_the_programs_own_handler_stays),
        cmocka_unit_test (test_a_program_that_used_czmq_first_keeps_its_handling),
        cmocka_unit_test (test_a_worker_made_after_a_client_stops_on_sigterm),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

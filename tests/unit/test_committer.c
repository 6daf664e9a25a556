/*  =========================================================================
    test_committer - the store's commits on their own thread: a sealed
    batch handed over is committed there, its end makes the committer's
    fd readable (one wake-up for the loop), its outcome is taken once, and
    the thread stops cleanly, also with a commit in flight. On a SQLite
    file, as actd's.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <poll.h>
#include <cmocka.h>
#include <czmq.h>
#include "actd/act.h"
#include "act_store.h"
#include "act_committer.h"

//  The broker's settle function, reduced: wait for the commit in flight
typedef struct {
    act_store_t *store;         //  The store
    act_committer_t *committer; //  Its committer
} s_loop_t;

static void
s_settle (void *arg)
{
    s_loop_t *loop = (s_loop_t *) arg;
    if (loop->committer && act_committer_busy (loop->committer)) {
        act_err_t err = { 0 };
        act_store_sealed_end (loop->store, act_committer_finish (loop->committer, &err));
    }
}

static int
s_each (const json_t *item, void *arg)
{
    json_array_append ((json_t *) arg, (json_t *) item);
    return 0;
}

//  A fresh store file in a new directory; *dir set (the caller removes it)
static act_store_t *
s_open (char **dir)
{
    char template [] = "/tmp/test_committer-XXXXXX";
    assert_non_null (mkdtemp (template));
    *dir = strdup (template);
    char *path = zsys_sprintf ("%s/actd.db", template);
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    zstr_free (&path);
    assert_non_null (store);
    return store;
}

static void
s_close (act_store_t **store, char *dir)
{
    act_store_destroy (store);
    char *command = zsys_sprintf ("rm -rf '%s'", dir);
    assert_int_equal (system (command), 0);
    zstr_free (&command);
    free (dir);
}

//  True when fd becomes readable within ms
static bool
s_readable (int fd, int ms)
{
    struct pollfd item = { fd, POLLIN, 0 };
    return poll (&item, 1, ms) == 1 && (item.revents & POLLIN);
}

//  Batches handed over one after another are each committed on the
//  thread; each end is signalled once, and taken once
static void
test_commits_on_the_thread_and_signals_each_end (void **state)
{
    (void) state;
    char *dir;
    act_store_t *store = s_open (&dir);
    s_loop_t loop = { store, act_committer_new (store) };
    assert_non_null (loop.committer);
    act_store_journal (store, s_settle, &loop);
    int fd = act_committer_fd (loop.committer);
    assert_false (s_readable (fd, 0));
    assert_int_equal (act_store_put_context (store, "c"), 0);
    for (uint64_t seq = 1; seq <= 3; seq++) {
        assert_int_equal (act_store_put_message (store, "c", seq, "{\"type\":\"data\"}", 15), 0);
        assert_true (act_store_seal (store) > 0);
        act_committer_start (loop.committer);
        assert_true (act_committer_busy (loop.committer));
        assert_true (s_readable (fd, 10000));
        act_err_t err = { 0 };
        int rc = act_committer_finish (loop.committer, &err);
        assert_int_equal (rc, 0);
        act_store_sealed_end (store, rc);
        assert_false (act_committer_busy (loop.committer));
        //  Taken: the fd no longer signals
        assert_false (s_readable (fd, 0));
    }
    //  A read from the loop sees every committed message
    json_t *all = json_array ();
    assert_int_equal (act_store_messages (store, "c", s_each, all), 0);
    assert_int_equal (json_array_size (all), 3);
    json_decref (all);
    act_committer_destroy (&loop.committer);
    act_committer_destroy (&loop.committer);
    assert_null (loop.committer);
    s_close (&store, dir);
}

//  Destroyed with a commit in flight, the committer waits for it: the
//  batch is kept, and a store opened again holds it
static void
test_destroy_waits_for_the_commit_in_flight (void **state)
{
    (void) state;
    char *dir;
    act_store_t *store = s_open (&dir);
    s_loop_t loop = { store, act_committer_new (store) };
    assert_non_null (loop.committer);
    act_store_journal (store, s_settle, &loop);
    assert_int_equal (act_store_put_context (store, "c"), 0);
    assert_int_equal (act_store_put_message (store, "c", 1, "{\"type\":\"data\"}", 15), 0);
    assert_true (act_store_seal (store) > 0);
    act_committer_start (loop.committer);
    act_committer_destroy (&loop.committer);
    assert_null (loop.committer);
    act_store_sealed_end (store, 0);
    act_store_destroy (&store);
    char *path = zsys_sprintf ("%s/actd.db", dir);
    act_err_t err = { 0 };
    store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    zstr_free (&path);
    assert_non_null (store);
    json_t *all = json_array ();
    assert_int_equal (act_store_messages (store, "c", s_each, all), 0);
    assert_int_equal (json_array_size (all), 1);
    json_decref (all);
    s_close (&store, dir);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_commits_on_the_thread_and_signals_each_end),
        cmocka_unit_test (test_destroy_waits_for_the_commit_in_flight),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

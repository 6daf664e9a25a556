/*  =========================================================================
    test_store_pg - the PostgreSQL store when its connection is lost (the
    server ended the session: a restart, pg_terminate_backend): a batch
    whose transaction the loss took is refused whole, and the store
    connects again by itself. Runs on the database ACTD_TEST_PG_URL names
    (ctest runs it through tests/unit/with_postgres.py).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include <libpq-fe.h>
#include "actd/act.h"
#include "act_store.h"

static const char *s_url;

//  The store, joined as a broker and owning context
static act_store_t *
s_open_owning (const char *context)
{
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (s_url, ACT_SYNC_NORMAL, &err);
    if (!store)
        fail_msg ("cannot open %s: %s", s_url, err.message);
    assert_int_equal (act_store_timeout (store, 3000), 0);
    assert_int_equal (act_store_join (store, "test-broker", "tcp://test:1", 60000, &err), 0);
    assert_int_equal (act_store_claim (store, context, NULL), 1);
    return store;
}

//  End every other session on the test's database, as a server restart
//  or an administrator would
static void
s_end_sessions (void)
{
    PGconn *conn = PQconnectdb (s_url);
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    PGresult *result = PQexec (conn, "SELECT pg_terminate_backend (pid) FROM pg_stat_activity "
                                     "WHERE datname = current_database () "
                                     "AND pid <> pg_backend_pid ()");
    assert_int_equal (PQresultStatus (result), PGRES_TUPLES_OK);
    assert_true (PQntuples (result) >= 1);
    PQclear (result);
    PQfinish (conn);
}

static int
s_put (act_store_t *store, const char *context, uint64_t seq)
{
    char *text = zsys_sprintf ("{\"_seq\":%" PRIu64 ",\"type\":\"data\",\"data\":%" PRIu64 "}",
                               seq, seq);
    int rc = act_store_put_message (store, context, seq, text, strlen (text));
    zstr_free (&text);
    return rc;
}

//  The _seq of each message context holds, in order, as "1,2"
static char *
s_seqs (act_store_t *store, const char *context)
{
    json_t *history = act_store_history (store, context, 1, 100, 0);
    assert_non_null (history);
    char *seqs = strdup ("");
    size_t index;
    json_t *message;
    json_array_foreach (history, index, message) {
        char *longer = zsys_sprintf ("%s%s%lld", seqs, index? ",": "",
                                     json_integer_value (json_object_get (message, "_seq")));
        free (seqs);
        seqs = longer;
    }
    json_decref (history);
    return seqs;
}

//  The store owning a new context (*context, named after prefix), with
//  the context and its first message written in the open batch
static act_store_t *
s_store_with_one (const char *prefix, char **context)
{
    *context = zsys_sprintf ("%s-%08x", prefix, (unsigned) randof (0x7fffffff));
    act_store_t *store = s_open_owning (*context);
    assert_int_equal (act_store_put_context (store, *context), 0);
    assert_int_equal (s_put (store, *context, 1), 0);
    return store;
}

//  Writes sent into the batch's transaction (a read sends them), then
//  the session ended: the loss, found by the next read, takes them. The
//  batch's later writes, sent on the new connection, may not be kept
//  without them: the commit fails, and keeps nothing.
static void
test_a_batch_the_loss_took_is_refused_whole (void **state)
{
    char *context = NULL;
    act_store_t *store = s_store_with_one ("lost", &context);
    act_err_t err = { 0 };
    char *seqs = s_seqs (store, context);
    assert_string_equal (seqs, "1");
    free (seqs);
    s_end_sessions ();
    //  This read finds the connection lost (and may see nothing)
    act_store_has_context (store, "another");
    assert_int_equal (s_put (store, context, 2), 0);
    assert_int_not_equal (act_store_commit (store, &err), 0);
    act_store_destroy (&store);
    store = s_open_owning (context);
    seqs = s_seqs (store, context);
    assert_string_equal (seqs, "");
    free (seqs);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  After a loss the store connects again by itself: a batch written
//  then commits (within seconds: the attempts run on a thread of their
//  own, once a second at most)
static void
test_the_store_connects_again_after_a_loss (void **state)
{
    char *context = NULL;
    act_store_t *store = s_store_with_one ("again", &context);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    s_end_sessions ();
    int rc = -1;
    for (int attempt = 0; attempt < 100 && rc; attempt++) {
        memset (&err, 0, sizeof err);
        if (s_put (store, context, 2) == 0)
            rc = act_store_commit (store, &err);
        else
            act_store_abort (store);
        if (rc)
            zclock_sleep (100);
    }
    assert_int_equal (rc, 0);
    char *seqs = s_seqs (store, context);
    assert_string_equal (seqs, "1,2");
    free (seqs);
    act_store_destroy (&store);
    zstr_free (&context);
}

int
main (void)
{
    s_url = getenv ("ACTD_TEST_PG_URL");
    if (!s_url) {
        fprintf (stderr, "test_store_pg: ACTD_TEST_PG_URL names no database "
                         "(run it through tests/unit/with_postgres.py)\n");
        return 1;
    }
    zsys_init ();
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_a_batch_the_loss_took_is_refused_whole),
        cmocka_unit_test (test_the_store_connects_again_after_a_loss),
    };
    return cmocka_run_group_tests_name ("store (postgres, lost connections)", tests, NULL, NULL);
}

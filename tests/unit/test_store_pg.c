/*  =========================================================================
    test_store_pg - the PostgreSQL store when its connection is lost (the
    server ended the session: a restart, pg_terminate_backend): a batch
    whose transaction the loss took is refused whole, and the store
    connects again by itself; the bounds on a silent server (TCP options
    of the store's connection) hold, unless the URL sets its own, before
    and after connecting again; and the live brokers a broker knows of,
    learnt at its renewals and its claims, where it sends its clients once
    its lease has lapsed. Runs on the database ACTD_TEST_PG_URL names
    (ctest runs it through tests/unit/with_postgres.py).
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "actd/act.h"
#include "act_store.h"
#include "act_store_pg_int.h"

static const char *s_url;

//  The store on url, joined as a broker (lease 60 s) and owning context
static act_store_t *
s_open_at (const char *url, const char *context)
{
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (url, ACT_SYNC_NORMAL, &err);
    if (!store)
        fail_msg ("cannot open %s: %s", url, err.message);
    assert_int_equal (act_store_timeout (store, 3000), 0);
    assert_int_equal (act_store_join (store, "test-broker", "tcp://test:1", 60000, &err), 0);
    assert_int_equal (act_store_claim (store, context, NULL), 1);
    return store;
}

//  The store on the test's database, owning context
static act_store_t *
s_open_owning (const char *context)
{
    return s_open_at (s_url, context);
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

//  The store on url owning a new context (*context, named after prefix),
//  with the context and its first message written in the open batch
static act_store_t *
s_store_with_one_at (const char *url, const char *prefix, char **context)
{
    *context = zsys_sprintf ("%s-%08x", prefix, (unsigned) randof (0x7fffffff));
    act_store_t *store = s_open_at (url, *context);
    assert_int_equal (act_store_put_context (store, *context), 0);
    assert_int_equal (s_put (store, *context, 1), 0);
    return store;
}

static act_store_t *
s_store_with_one (const char *prefix, char **context)
{
    return s_store_with_one_at (s_url, prefix, context);
}

//  Message seq committed to context, after a loss: the store connects
//  again by itself within seconds (the attempts run on a thread of their
//  own, once a second at most)
static void
s_commit_again (act_store_t *store, const char *context, uint64_t seq)
{
    act_err_t err = { 0 };
    int rc = -1;
    for (int attempt = 0; attempt < 100 && rc; attempt++) {
        memset (&err, 0, sizeof err);
        if (s_put (store, context, seq) == 0)
            rc = act_store_commit (store, &err);
        else
            act_store_abort (store);
        if (rc)
            zclock_sleep (100);
    }
    assert_int_equal (rc, 0);
}

//  Assert the bounds of the store's connection to the server (the one
//  TCP socket of this process whose peer is the URL's port): its
//  TCP_USER_TIMEOUT in ms and its keepalive idle time and interval in s
static void
s_assert_bounds (int user_timeout, int idle, int interval)
{
    int port = 0;
    const char *at = strstr (s_url, "127.0.0.1:");
    assert_non_null (at);
    port = atoi (at + strlen ("127.0.0.1:"));
    int found = -1;
    for (int fd = 0; fd < 1024; fd++) {
        struct sockaddr_in peer;
        socklen_t length = sizeof peer;
        if (getpeername (fd, (struct sockaddr *) &peer, &length) == 0
        &&  peer.sin_family == AF_INET && ntohs (peer.sin_port) == port) {
            assert_int_equal (found, -1);       //  One connection, not two
            found = fd;
        }
    }
    assert_int_not_equal (found, -1);
    int values [3], options [3] = { TCP_USER_TIMEOUT, TCP_KEEPIDLE, TCP_KEEPINTVL };
    for (int i = 0; i < 3; i++) {
        socklen_t length = sizeof values [i];
        assert_int_equal (getsockopt (found, IPPROTO_TCP, options [i], &values [i], &length), 0);
    }
    assert_int_equal (values [0], user_timeout);
    assert_int_equal (values [1], idle);
    assert_int_equal (values [2], interval);
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

//  The batch's first writes still buffered when the session ends: the
//  read that sends them (with the batch's BEGIN, in one round trip) finds
//  the connection lost, and the batch is refused whole at its commit; its
//  writes left the buffers with that round trip.
static void
test_a_batch_lost_with_its_first_writes_is_refused_whole (void **state)
{
    char *context = NULL;
    act_store_t *store = s_store_with_one ("first", &context);
    act_err_t err = { 0 };
    s_end_sessions ();
    //  This read sends the buffered writes: the loss takes them
    act_store_has_context (store, "another");
    assert_int_not_equal (act_store_commit (store, &err), 0);
    act_store_destroy (&store);
    store = s_open_owning (context);
    char *seqs = s_seqs (store, context);
    assert_string_equal (seqs, "");
    free (seqs);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  After a loss the store connects again by itself: a batch written
//  then commits
static void
test_the_store_connects_again_after_a_loss (void **state)
{
    char *context = NULL;
    act_store_t *store = s_store_with_one ("again", &context);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    s_end_sessions ();
    s_commit_again (store, context, 2);
    char *seqs = s_seqs (store, context);
    assert_string_equal (seqs, "1,2");
    free (seqs);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  Which lookup s_lookup makes
typedef enum { S_CALL, S_IDEM, S_APPEND_KEY } s_lookup_t;

//  Lookup which of what the store holds for context (call call_id, its
//  key "key-1", the APPEND key "append-1" of _seq 1): 1, 0 or -1, with
//  the value checked against what it returns
static int
s_lookup (act_store_t *store, s_lookup_t which, const char *context, uint64_t call_id)
{
    json_t *record = (json_t *) 1;
    uint64_t number = 1;
    int rc = which == S_CALL? act_store_call (store, call_id, &record)
           : which == S_IDEM? act_store_idem (store, context, "key-1", &number)
           : act_store_append_key (store, context, "append-1", &number);
    if (which == S_CALL) {
        assert_int_equal (rc == 1, record != NULL);
        if (rc == 1)
            assert_int_equal (json_integer_value (json_object_get (record, "call_id")),
                              call_id);
        json_decref (record);
    }
    else
        assert_int_equal (number, rc == 1? (which == S_IDEM? call_id: 1): 0);
    return rc;
}

//  A lookup the loss takes is no answer (-1), never "not stored" (0):
//  actd would answer not_found, run a call again, append a message twice.
//  Once connected again, each finds what is stored.
static void
test_a_lookup_the_loss_takes_is_no_answer (void **state)
{
    char *context = NULL;
    act_store_t *store = s_store_with_one ("lookup", &context);
    act_err_t err = { 0 };
    uint64_t call_id = act_store_next_call (store);
    act_call_record_t record = { call_id, context, "ok", 1, "{\"_tool\":\"t\"}", "key-1",
                                 "{\"status\":\"ok\"}", NULL, NULL, NULL };
    assert_int_equal (act_store_put_call (store, &record), 0);
    assert_int_equal (act_store_put_append_key (store, context, "append-1", 1), 0);
    assert_int_equal (act_store_commit (store, &err), 0);
    for (s_lookup_t which = S_CALL; which <= S_APPEND_KEY; which++) {
        s_end_sessions ();
        assert_int_equal (s_lookup (store, which, context, call_id), -1);
        int rc = -1;
        for (int attempt = 0; attempt < 100 && rc < 0; attempt++) {
            rc = s_lookup (store, which, context, call_id);
            if (rc < 0)
                zclock_sleep (100);
        }
        assert_int_equal (rc, 1);
    }
    act_store_destroy (&store);
    zstr_free (&context);
}

//  The store on url, its bounds asserted before and after connecting
//  again (s_assert_bounds)
static void
s_bounds_hold (const char *url, int user_timeout, int idle, int interval)
{
    char *context = NULL;
    act_store_t *store = s_store_with_one_at (url, "bounds", &context);
    act_err_t err = { 0 };
    assert_int_equal (act_store_commit (store, &err), 0);
    s_assert_bounds (user_timeout, idle, interval);
    s_end_sessions ();
    s_commit_again (store, context, 2);
    s_assert_bounds (user_timeout, idle, interval);
    act_store_destroy (&store);
    zstr_free (&context);
}

//  A silent server is given up after the lease (60 s here; the session's
//  timeout, 3 s, is shorter), probed from a third of it on, a third
//  apart; the same on the connection made after a loss
static void
test_a_silent_server_is_given_up_after_the_lease (void **state)
{
    s_bounds_hold (s_url, 60000, 20, 20);
}

//  The URL's own tcp_user_timeout and keepalives_* stand, before and
//  after connecting again
static void
test_the_url_bounds_stand (void **state)
{
    char *url = zsys_sprintf ("%s%ctcp_user_timeout=4321&keepalives_idle=7&keepalives_interval=3",
                              s_url, strchr (s_url, '?')? '&': '?');
    s_bounds_hold (url, 4321, 7, 3);
    zstr_free (&url);
}

//  A pipeline cut short (libpq refuses its second statement, which has
//  no text) leaves the first one's result unread, in pipeline mode, where
//  every later statement would read a result that is not its own: the
//  connection is given up at once, made again, and a later statement gets
//  its own result
static void
test_a_pipeline_cut_short_gives_its_connection_up (void **state)
{
    act_err_t err = { 0 };
    act_pg_t *pg = (act_pg_t *) act_store_pg_open (s_url, ACT_SYNC_NORMAL, &err);
    if (!pg)
        fail_msg ("cannot open %s: %s", s_url, err.message);
    act_pg_statement_t statements [] = {
        { "a first statement", "SELECT 1", 0, { NULL } },
        { "a statement libpq refuses", NULL, 0, { NULL } }
    };
    assert_int_equal (act_pg_pipeline (pg, statements, 2, true, NULL, &err), -1);
    assert_string_equal (err.code, ACT_E_INTERNAL);
    assert_non_null (strstr (err.message, "null pointer"));
    //  The error names the statement libpq refused, not the pipeline's first
    assert_non_null (strstr (err.message, "a statement libpq refuses"));
    assert_true (pg->lost);
    PGresult *result = NULL;
    for (int tries = 0; !result && tries < 100; tries++) {
        memset (&err, 0, sizeof err);
        result = act_pg_exec (pg, "a later statement", "SELECT 2", 0, NULL, &err);
        if (!result)
            zclock_sleep (100);
    }
    assert_non_null (result);
    assert_string_equal (PQgetvalue (result, 0, 0), "2");
    PQclear (result);
    act_store_pg.destroy (pg);
}

//  The store on the test's database, joined as broker id at endpoint
static act_store_t *
s_joined (const char *id, const char *endpoint, long long lease_ms)
{
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (s_url, ACT_SYNC_NORMAL, &err);
    if (!store)
        fail_msg ("cannot open %s: %s", s_url, err.message);
    assert_int_equal (act_store_timeout (store, 3000), 0);
    assert_int_equal (act_store_join (store, id, endpoint, lease_ms, &err), 0);
    return store;
}

//  Run sql on a connection of its own
static void
s_run (const char *sql)
{
    PGconn *conn = PQconnectdb (s_url);
    assert_int_equal (PQstatus (conn), CONNECTION_OK);
    PGresult *result = PQexec (conn, sql);
    assert_int_equal (PQresultStatus (result), PGRES_COMMAND_OK);
    PQclear (result);
    PQfinish (conn);
}

#define S_PEERS_LEASE_MS 900    //  Lapsed past 600 ms without a renewal

//  Where a broker whose lease has lapsed (cut off from the database) sends
//  its clients: a peer that joined after its last renewal is known from
//  its next claim (it was not: such a broker named none, and refused its
//  contexts for the whole cut); knowing none, "" (the client tries another
//  broker), never itself; while the lease holds, NULL
static void
test_peers_are_learnt_at_claims (void **state)
{
    //  The other tests' brokers left
    s_run ("UPDATE brokers SET heartbeat = '-infinity'");
    act_store_t *a = s_joined ("broker-a", "tcp://a:1", S_PEERS_LEASE_MS);
    assert_int_equal (act_store_renew (a), 0);
    assert_null (act_store_elsewhere (a, "ctx"));
    act_store_t *b = s_joined ("broker-b", "tcp://b:1", S_PEERS_LEASE_MS);
    assert_int_equal (act_store_claim (a, "peers-ctx", NULL), 1);
    zclock_sleep (S_PEERS_LEASE_MS * 2 / 3 + 100);
    const char *peer = act_store_elsewhere (a, "ctx");
    assert_non_null (peer);
    assert_string_equal (peer, "tcp://b:1");
    //  b left: a, renewed, knows no live peer
    assert_int_equal (act_store_leave (b), 0);
    assert_int_equal (act_store_renew (a), 0);
    assert_null (act_store_elsewhere (a, "ctx"));
    zclock_sleep (S_PEERS_LEASE_MS * 2 / 3 + 100);
    peer = act_store_elsewhere (a, "ctx");
    assert_non_null (peer);
    assert_string_equal (peer, "");
    act_store_destroy (&b);
    act_store_destroy (&a);
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
        cmocka_unit_test (test_a_batch_lost_with_its_first_writes_is_refused_whole),
        cmocka_unit_test (test_the_store_connects_again_after_a_loss),
        cmocka_unit_test (test_a_lookup_the_loss_takes_is_no_answer),
        cmocka_unit_test (test_a_silent_server_is_given_up_after_the_lease),
        cmocka_unit_test (test_the_url_bounds_stand),
        cmocka_unit_test (test_a_pipeline_cut_short_gives_its_connection_up),
        cmocka_unit_test (test_peers_are_learnt_at_claims),
    };
    return cmocka_run_group_tests_name ("store (postgres, lost connections)", tests, NULL, NULL);
}

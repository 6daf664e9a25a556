/*  =========================================================================
    act_store_pg_session - the PostgreSQL store's session: connecting,
    connecting again after the connection was lost, and the limits that
    keep a paused, locked or silent server from holding actd for long.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"

#ifdef ACTD_POSTGRES

#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <poll.h>
#include "act_store_pg_int.h"
#include "act_log.h"

#define S_CONNECT_TIMEOUT "5"   //  Seconds a connection may take (libpq's connect_timeout)
#define S_RETRY_MS 1000         //  Between two attempts to connect again
#define S_WAIT_MS 100           //  A statement may wait for an attempt, once
#define S_FAILURE_LOG_MS 60000  //  Failed attempts logged once a minute at most
#define S_OUTCOME_RETRY_MS 200  //  Between two questions about a commit's outcome

//  Connect to url. libpq alone waits for ever for a server that accepts
//  the connection and never answers, and minutes for a host that does not
//  answer at all; actd's start, or the thread connecting again after a
//  loss, would wait as long. connect_timeout bounds both:
//  S_CONNECT_TIMEOUT seconds, unless the URL or PGCONNECT_TIMEOUT sets it
//  (entries before an expanded dbname give way to the URL's own).
PGconn *
act_pg_connect (const char *url)
{
    const char *keys [] = { "connect_timeout", "dbname", NULL };
    const char *values [] = { getenv ("PGCONNECT_TIMEOUT")? NULL: S_CONNECT_TIMEOUT, url, NULL };
    PGconn *conn = PQconnectdbParams (keys, values, 1);
    //  Sending does not block either (act_pg_query); PQexec still does
    if (PQstatus (conn) == CONNECTION_OK)
        PQsetnonblocking (conn, 1);
    return conn;
}

//  True when the connection's options (its URL, PG* variables) set
//  keyword: the user's choice then stands
static bool
s_user_set (PGconn *conn, const char *keyword)
{
    PQconninfoOption *options = PQconninfo (conn);
    bool set = false;
    for (PQconninfoOption *option = options; option && option->keyword; option++)
        if (streq (option->keyword, keyword))
            set = option->val && *option->val;
    PQconninfoFree (options);
    return set;
}

//  Bound how long a host gone silent (a cable pulled, a VM frozen, a
//  firewall dropping packets) can hold a statement: the kernel waits for
//  minutes (tcp_retries2) before it gives up on data nobody acknowledges,
//  and for ever for an answer on a connection nobody probes. After
//  bound_ms the connection is closed, the statement fails, the batch is
//  refused (as for a server that ended the session) and a thread connects
//  again (act_pg_connected). bound_ms is the lease: by then the other
//  brokers have taken this one's contexts anyway. Options the connection's
//  own options set are left as they are; a Unix socket needs none.
static void
s_bound_silence (const char *where, PGconn *conn, long long bound_ms)
{
    int fd = PQsocket (conn);
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (fd < 0 || getsockname (fd, (struct sockaddr *) &address, &length)
    ||  (address.ss_family != AF_INET && address.ss_family != AF_INET6))
        return;
    //  Probes (libpq turns them on unless keepalives=0) from a third of
    //  the bound on, each a third apart; the bound ends the connection
    int probe = bound_ms >= 3000? (int) (bound_ms / 3000): 1;
    unsigned int bound = (unsigned int) bound_ms;
    struct { const char *keyword; int option; const void *value; } bounds [] = {
        { "keepalives_idle", TCP_KEEPIDLE, &probe },
        { "keepalives_interval", TCP_KEEPINTVL, &probe },
        { "tcp_user_timeout", TCP_USER_TIMEOUT, &bound }
    };
    for (size_t i = 0; i < sizeof bounds / sizeof bounds [0]; i++)
        if (!s_user_set (conn, bounds [i].keyword)
        &&  setsockopt (fd, IPPROTO_TCP, bounds [i].option, bounds [i].value, sizeof (int)))
            act_log (LOG_WARNING, "store %s: cannot set %s: %s", where, bounds [i].keyword,
                     strerror (errno));
}

//  Bound how long this session waits (locks, statements), and how long
//  it may stay idle in a transaction: a broker paused in the middle of a
//  batch (SIGSTOP, a frozen VM) holds that batch's row locks, among them
//  the leases it checked, and would keep the others from taking its
//  contexts over until it resumed. Past its lease it has lost them
//  anyway: the server then ends its session, freeing the locks, and the
//  broker, resumed, finds its batch failed and connects again. The same
//  bound holds for a server gone silent (s_bound_silence). where names
//  the store in messages. Returns 0 or -1 (what failed is logged).
static int
s_limit (const char *where, long long lease_ms, PGconn *conn, long long ms)
{
    long long bound = lease_ms > ms? lease_ms: ms;
    char *sql = zsys_sprintf ("SET client_min_messages = warning; SET lock_timeout = %lld; "
                              "SET statement_timeout = %lld; "
                              "SET idle_in_transaction_session_timeout = %lld", ms, ms, bound);
    PGresult *result = PQexec (conn, sql);
    int rc = PQresultStatus (result) == PGRES_COMMAND_OK? 0: -1;
    if (rc)
        act_log (LOG_ERR, "store %s: cannot set the session's timeouts: %s", where,
                 PQerrorMessage (conn));
    PQclear (result);
    zstr_free (&sql);
    if (rc == 0)
        s_bound_silence (where, conn, bound);
    return rc;
}

int
act_pg_timeout (void *impl, long long ms)
{
    act_pg_t *self = (act_pg_t *) impl;
    self->timeout_ms = ms;
    return s_limit (self->where, self->lease_ms, self->conn, ms);
}

//  An attempt to connect again, shared by the store and the thread that
//  makes it. A stop does not wait for the thread (libpq may take
//  connect_timeout, 5 s, to give up on a server that does not answer):
//  the store lets go of the attempt, and the last of the two frees it.
struct _act_pg_attempt_t {
    char *url;                  //  What it connects to
    char *where;                //  The store's name, for messages
    long long timeout_ms;       //  The session's limits (s_limit)
    long long lease_ms;         //  The lease, for the same
    PGconn *conn;               //  The connection made; NULL when it failed
    char *error;                //  Why it failed, or NULL
    atomic_int holders;         //  The store and the thread, while they hold it
};

//  Let go of attempt: freed, with its connection, by the last holder
static void
s_attempt_release (act_pg_attempt_t *attempt)
{
    if (atomic_fetch_sub (&attempt->holders, 1) > 1)
        return;
    if (attempt->conn)
        PQfinish (attempt->conn);
    free (attempt->url);
    free (attempt->where);
    free (attempt->error);
    free (attempt);
}

//  The thread that connects again: a new connection, its session set,
//  left in the attempt (or why it failed) for the store to take
static void *
s_reconnector (void *arg)
{
    act_pg_attempt_t *attempt = (act_pg_attempt_t *) arg;
    PGconn *conn = act_pg_connect (attempt->url);
    if (PQstatus (conn) != CONNECTION_OK)
        attempt->error = strdup (PQerrorMessage (conn));
    else
    if (s_limit (attempt->where, attempt->lease_ms, conn, attempt->timeout_ms))
        attempt->error = strdup ("cannot set the session's timeouts");
    if (attempt->error) {
        PQfinish (conn);
        conn = NULL;
    }
    attempt->conn = conn;
    s_attempt_release (attempt);
    return NULL;
}

//  Start an attempt to connect again, unless one runs or the last ended
//  less than S_RETRY_MS ago
static void
s_attempt (act_pg_t *self)
{
    if (self->attempt || zclock_mono () < self->retry_at)
        return;
    act_pg_attempt_t *attempt = calloc (1, sizeof *attempt);
    if (!attempt)
        return;
    *attempt = (act_pg_attempt_t) { strdup (self->url), strdup (self->where), self->timeout_ms,
                                    self->lease_ms, NULL, NULL, 2 };
    self->waited = false;
    //  Signals are the loop's: delivered to this thread, a SIGTERM would
    //  not interrupt the loop's poll. The thread starts with them blocked.
    sigset_t all, mask;
    sigfillset (&all);
    pthread_sigmask (SIG_SETMASK, &all, &mask);
    if (pthread_create (&self->reconnector, NULL, s_reconnector, attempt) == 0)
        self->attempt = attempt;
    else {
        atomic_store (&attempt->holders, 1);
        s_attempt_release (attempt);
    }
    pthread_sigmask (SIG_SETMASK, &mask, NULL);
}

//  The attempt has ended (its thread joined): take its connection, or log
//  why it failed (the first time, then once a minute: an attempt a
//  second while the server is away) and note when the next may start
static void
s_attempted (act_pg_t *self)
{
    act_pg_attempt_t *attempt = self->attempt;
    self->attempt = NULL;
    self->retry_at = zclock_mono () + S_RETRY_MS;
    if (attempt->conn) {
        PQfinish (self->conn);
        self->conn = attempt->conn;
        attempt->conn = NULL;
        self->lost = false;
        act_log (LOG_NOTICE, "store %s: connected again (%zu failed attempts before)",
                 self->where, self->failures);
        self->failures = 0;
    }
    else {
        int64_t now = zclock_mono ();
        if (self->failures++ == 0 || now - self->failure_logged >= S_FAILURE_LOG_MS) {
            act_log (LOG_ERR, "store %s: cannot connect again (%zu attempts): %s", self->where,
                     self->failures, attempt->error? attempt->error: "?");
            self->failure_logged = now;
        }
    }
    s_attempt_release (attempt);
}

void
act_pg_lost (act_pg_t *self)
{
    if (!self->lost)
        act_log (LOG_ERR, "store %s: connection lost; connecting again", self->where);
    self->lost = true;
    self->batch_lost = self->batch_lost || self->open_batch;
    self->open_batch = false;
    zhashx_purge (self->known);
    s_attempt (self);
}

bool
act_pg_connected (act_pg_t *self)
{
    if (!self->lost)
        return true;
    if (self->attempt && !self->waited) {
        //  The first statement after a loss waits a little, once: a
        //  server that is there (it restarted, it ended the session)
        //  gives a connection in milliseconds, and the statement runs
        self->waited = true;
        //  On the monotonic clock: on the real-time one, a step back of
        //  the wall clock during the wait held the broker's loop until
        //  the connection attempt gave up (connect_timeout)
        struct timespec until;
        clock_gettime (CLOCK_MONOTONIC, &until);
        until.tv_nsec += S_WAIT_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        if (pthread_clockjoin_np (self->reconnector, NULL, CLOCK_MONOTONIC, &until) == 0)
            s_attempted (self);
    }
    else
    if (self->attempt && pthread_tryjoin_np (self->reconnector, NULL) == 0)
        s_attempted (self);
    if (self->lost)
        s_attempt (self);
    return !self->lost;
}

//  txid_status of xid asked on conn, the answer awaited until deadline
//  (a server paused or gone silent answers nothing): "committed",
//  "aborted", "in progress", or NULL when none came
static const char *
s_xid_status (PGconn *conn, const char *xid, int64_t deadline)
{
    const char *params [] = { xid };
    if (!PQsendQueryParams (conn, "SELECT txid_status ($1::bigint)", 1, NULL, params,
                            NULL, NULL, 0))
        return NULL;
    while (true) {
        int unsent = PQflush (conn);
        if (unsent < 0)
            return NULL;
        if (!unsent && !PQisBusy (conn))
            break;
        //  Writable only matters while the question is not all sent
        int64_t left = deadline - zclock_mono ();
        struct pollfd item = { PQsocket (conn), (short) (POLLIN | (unsent? POLLOUT: 0)), 0 };
        if (left <= 0 || poll (&item, 1, (int) (left > 1000? 1000: left)) < 0
        ||  !PQconsumeInput (conn))
            return NULL;
    }
    static const char *states [] = { "committed", "aborted", "in progress" };
    const char *status = NULL;
    PGresult *result;
    while ((result = PQgetResult (conn))) {
        for (size_t i = 0; i < 3 && PQresultStatus (result) == PGRES_TUPLES_OK; i++)
            if (PQntuples (result) == 1 && streq (PQgetvalue (result, 0, 0), states [i]))
                status = states [i];
        PQclear (result);
    }
    return status;
}

int
act_pg_outcome (act_pg_t *self, const char *xid)
{
    int64_t until = zclock_mono () + self->lease_ms;
    const char *status = NULL;
    while (true) {
        PGconn *conn = act_pg_connect (self->url);
        status = PQstatus (conn) == CONNECTION_OK? s_xid_status (conn, xid, until): NULL;
        PQfinish (conn);
        if ((status && !streq (status, "in progress")) || zclock_mono () >= until)
            break;
        zclock_sleep (S_OUTCOME_RETRY_MS);
    }
    act_log (LOG_WARNING, "store %s: the connection was lost once COMMIT was sent; "
             "transaction %s: %s", self->where, xid,
             status? status: "no answer within the lease (taken as not committed)");
    return !status? -1: streq (status, "committed");
}

void
act_pg_session_end (act_pg_t *self)
{
    if (!self->attempt)
        return;
    if (pthread_tryjoin_np (self->reconnector, NULL) != 0)
        pthread_detach (self->reconnector);
    s_attempt_release (self->attempt);
    self->attempt = NULL;
}

#endif

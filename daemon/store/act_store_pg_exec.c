/*  =========================================================================
    act_store_pg_exec - running statements on the PostgreSQL store's
    connection: one at a time, or several in one round trip (libpq's
    pipeline mode), each waiting for its answer a bounded time, so that a
    server gone silent does not hold the loop for the kernel's bound.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"

#ifdef ACTD_POSTGRES

#include <poll.h>
#include "act_store_pg_int.h"
#include "act_log.h"

#define S_ANSWER_MARGIN_MS 1000 //  A statement's answer may come this long after
                                //  the server's own statement_timeout
#define S_WAIT_SLICE_MS 100     //  on_wait is called this often while waiting

int
act_pg_ready (act_pg_t *self, short events, int64_t deadline)
{
    struct pollfd item = { PQsocket (self->conn), events, 0 };
    bool hook = self->on_wait && pthread_equal (pthread_self (), self->on_wait_thread);
    while (true) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            return 0;
        if (hook && left > S_WAIT_SLICE_MS)
            left = S_WAIT_SLICE_MS;
        int rc = poll (&item, 1, left > INT_MAX? INT_MAX: (int) left);
        if (rc > 0)
            return item.revents;
        if (rc < 0 && errno != EINTR)
            return rc;
        if (rc == 0 && hook)
            self->on_wait (self->on_wait_arg);
        else
        if (rc == 0)
            return 0;
    }
}

void
act_pg_on_wait (void *impl, act_store_wait_fn *fn, void *arg)
{
    act_pg_t *self = (act_pg_t *) impl;
    self->on_wait = fn;
    self->on_wait_arg = arg;
    self->on_wait_thread = pthread_self ();
}

//  Send what libpq holds of the statements sent (sent: PQsend* succeeded),
//  reading meanwhile what the server sends: 1 when all is sent, 0 when
//  sending failed (the error is PQgetResult's), -1 when deadline passed
static int
s_flush (act_pg_t *self, bool sent, int64_t deadline)
{
    int flushed = sent? PQflush (self->conn): -1;
    while (flushed == 1) {
        int events = act_pg_ready (self, POLLIN | POLLOUT, deadline);
        if (events <= 0)
            return -1;
        if ((events & POLLIN) && !PQconsumeInput (self->conn))
            return 0;
        flushed = PQflush (self->conn);
    }
    return flushed == 0;
}

//  Wait until a result can be read without blocking: false when deadline
//  passed (a result that reports a broken connection counts as one)
static bool
s_input (act_pg_t *self, int64_t deadline)
{
    while (PQisBusy (self->conn)) {
        if (act_pg_ready (self, POLLIN, deadline) <= 0)
            return false;
        if (!PQconsumeInput (self->conn))
            break;
    }
    return true;
}

//  The statements sent on self->conn (sent: PQsend* succeeded): their
//  result, or NULL. Of several statements that is the first error (the
//  server runs none after it), else the last result with rows, else the
//  last: for one statement, what PQexec gives. It waits until deadline
//  at most; past it the server is taken as gone (silent, or paused): the
//  loss is noted, and the statement gives NULL.
static PGresult *
s_await (act_pg_t *self, bool sent, int64_t deadline)
{
    PGconn *conn = self->conn;
    if (s_flush (self, sent, deadline) < 0)
        goto silent;
    PGresult *last = NULL, *result;
    while (sent) {
        if (!s_input (self, deadline)) {
            PQclear (last);
            goto silent;
        }
        if (!(result = PQgetResult (conn)))
            break;
        ExecStatusType status = PQresultStatus (last);
        if (last && (status == PGRES_FATAL_ERROR
                 ||  (status == PGRES_TUPLES_OK && PQresultStatus (result) != PGRES_FATAL_ERROR)))
            PQclear (result);           //  Kept: the error, or the rows
        else {
            PQclear (last);
            last = result;
        }
        if (PQstatus (conn) == CONNECTION_BAD)
            break;
    }
    return last;
silent:
    act_pg_silent (self);
    return NULL;
}

void
act_pg_silent (act_pg_t *self)
{
    act_log (LOG_ERR, "store %s: no answer in %lld ms; the connection is given up",
             self->where, self->timeout_ms + S_ANSWER_MARGIN_MS);
    act_pg_lost (self);
}

int64_t
act_pg_deadline (act_pg_t *self, bool bounded)
{
    return bounded && self->timeout_ms? zclock_mono () + self->timeout_ms + S_ANSWER_MARGIN_MS
                                      : INT64_MAX;
}

//  Why a wait: the kernel's bound on a silent server (s_bound_silence) is
//  the lease, 10 s by default, and the loop's reads (a HISTORY page, a
//  context loaded, the lease's renewal) would hold the loop that long:
//  no PING answered, no worker heartbeat sent. A server that is there
//  answers within the session's statement_timeout (it cancels what runs
//  longer), so a statement is given S_ANSWER_MARGIN_MS more, then the
//  connection is given up and a thread connects again. Before the
//  session's timeout is set (at the start) the wait has no bound.
PGresult *
act_pg_query (act_pg_t *self, const char *sql, int nparams, const char *const *params)
{
    if (self->lost)
        return NULL;
    int64_t deadline = act_pg_deadline (self, true);
    bool sent = nparams < 0? PQsendQuery (self->conn, sql)
                           : PQsendQueryParams (self->conn, sql, nparams, NULL, params,
                                                NULL, NULL, 0);
    return s_await (self, sent, deadline);
}

int
act_pg_fail (act_pg_t *self, act_err_t *err, const char *what, PGresult *result)
{
    const char *why = result? PQresultErrorMessage (result): PQerrorMessage (self->conn);
    char *message = strdup (why && *why? why: "no message");
    size_t length = strlen (message);
    while (length && (message [length - 1] == '\n' || message [length - 1] == ' '))
        message [--length] = 0;
    act_log (LOG_ERR, "store %s: %s: %s", self->where, what, message);
    act_err_set (err, ACT_E_INTERNAL, "store %s: %s: %s", self->where, what, message);
    free (message);
    return -1;
}

//  Run a statement; returns its result (the caller clears it), or NULL
//  with the failure logged
PGresult *
act_pg_exec (act_pg_t *self, const char *what, const char *sql, int nparams,
        const char *const *params, act_err_t *err)
{
    //  The loss was logged once; this statement fails quietly
    if (!act_pg_connected (self)) {
        act_err_set (err, ACT_E_INTERNAL, "store %s: %s: no connection to the server "
                     "(connecting again)", self->where, what);
        return NULL;
    }
    PGresult *result = act_pg_query (self, sql, nparams, params);
    if (!result && self->lost) {
        act_err_set (err, ACT_E_INTERNAL, "store %s: %s: no answer from the server", self->where,
                     what);
        return NULL;
    }
    ExecStatusType status = PQresultStatus (result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        act_pg_fail (self, err, what, result);
        PQclear (result);
        if (PQstatus (self->conn) == CONNECTION_BAD)
            act_pg_lost (self);
        return NULL;
    }
    return result;
}

//  Send the pipeline's statements and its sync, and flush them: true, or
//  false when sending failed or the deadline passed (*silent then set).
//  *refused is the index of the statement libpq would not queue, so that
//  the error names it; 0 when the pipeline as a whole failed
static bool
s_pipeline_send (act_pg_t *self, const act_pg_statement_t *statements, size_t count,
                 int64_t deadline, bool *silent, size_t *refused)
{
    PGconn *conn = self->conn;
    bool sent = PQenterPipelineMode (conn);
    size_t queued = 0;
    for (; queued < count && sent; queued++)
        sent = PQsendQueryParams (conn, statements [queued].sql, statements [queued].nparams,
                                  NULL, statements [queued].params, NULL, NULL, 0);
    *refused = sent || queued == 0? 0: queued - 1;
    int flushed = s_flush (self, sent && PQpipelineSync (conn), deadline);
    *silent = flushed < 0;
    return flushed > 0;
}

//  Read the pipeline's results up to its sync: 0, or -1 with the first
//  failure logged and err set; the last statement's result in *last. The
//  server has until deadline for each result (each runs under its own
//  statement_timeout): a result sets the next one's deadline.
static int
s_pipeline_read (act_pg_t *self, const act_pg_statement_t *statements, size_t count,
                 int64_t deadline, bool bounded, bool *silent, PGresult **last, act_err_t *err)
{
    PGconn *conn = self->conn;
    int rc = 0;
    //  Each statement's result then NULL, and the sync's last; a broken
    //  connection gives an error, then NULLs (the count bounds those)
    for (size_t index = 0, nulls = 0; nulls <= count + 1; ) {
        if (!s_input (self, deadline)) {
            *silent = true;
            return -1;
        }
        PGresult *result = PQgetResult (conn);
        if (!result) {
            index++;
            nulls++;
            continue;
        }
        deadline = act_pg_deadline (self, bounded);
        ExecStatusType status = PQresultStatus (result);
        const char *what = statements [index < count? index: count - 1].what;
        if (status == PGRES_PIPELINE_SYNC) {
            PQclear (result);
            return rc;
        }
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && rc == 0)
            rc = status == PGRES_PIPELINE_ABORTED
               ? act_err_set (err, ACT_E_INTERNAL, "store %s: %s: not run", self->where, what)
               : act_pg_fail (self, err, what, result);
        if (rc == 0 && last && index == count - 1) {
            PQclear (*last);
            *last = result;
        }
        else
            PQclear (result);
        if (PQstatus (conn) == CONNECTION_BAD)
            break;
    }
    return rc? rc: act_err_set (err, ACT_E_INTERNAL, "store %s: %s: the connection was lost",
                                self->where, statements [0].what);
}

int
act_pg_pipeline (act_pg_t *self, const act_pg_statement_t *statements, size_t count,
                 bool bounded, PGresult **last, act_err_t *err)
{
    if (last)
        *last = NULL;
    if (count == 0)
        return 0;
    if (!act_pg_connected (self))
        return act_err_set (err, ACT_E_INTERNAL, "store %s: %s: no connection to the server "
                            "(connecting again)", self->where, statements [0].what);
    int64_t deadline = act_pg_deadline (self, bounded);
    bool silent = false;
    size_t refused = 0;
    int rc = -1;
    if (s_pipeline_send (self, statements, count, deadline, &silent, &refused))
        rc = s_pipeline_read (self, statements, count, deadline, bounded, &silent, last, err);
    else
    if (!silent)
        act_pg_fail (self, err, statements [refused].what, NULL);
    if (silent) {
        act_err_set (err, ACT_E_INTERNAL, "store %s: %s: no answer from the server",
                     self->where, statements [0].what);
        act_pg_silent (self);
    }
    else
    //  A connection left in pipeline mode (results not all read) would
    //  refuse every later statement: it is given up too
    if (PQstatus (self->conn) == CONNECTION_BAD || !PQexitPipelineMode (self->conn))
        act_pg_lost (self);
    if (rc && last) {
        PQclear (*last);
        *last = NULL;
    }
    return rc;
}

int
act_pg_run (act_pg_t *self, const char *what, const char *sql, int nparams,
       const char *const *params, act_err_t *err)
{
    PGresult *result = act_pg_exec (self, what, sql, nparams, params, err);
    PQclear (result);
    return result? 0: -1;
}

#endif

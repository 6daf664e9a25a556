/*  =========================================================================
    act_store_pg_int - the PostgreSQL backend's state and helpers, shared
    by its files (act_store_pg.c: batches, calls, migrations;
    act_store_pg_session.c: connecting, again after a loss, and the
    session's limits; act_store_pg_lease.c: brokers and leases;
    act_store_pg_contexts.c: listing, deleting, APPEND keys, retention).
    ========================================================================= */

#ifndef ACT_STORE_PG_INT_H_INCLUDED
#define ACT_STORE_PG_INT_H_INCLUDED

#include <czmq.h>
#include <libpq-fe.h>
#include <pthread.h>
#include "act_store_int.h"

//  An attempt to connect again (act_store_pg_session.c)
typedef struct _act_pg_attempt_t act_pg_attempt_t;

typedef struct {
    PGconn *conn;               //  The connection
    char *where;                //  Host and database, for messages
    act_sync_t sync;            //  FULL: synchronous_commit on; NORMAL: off
    bool open_batch;            //  BEGIN was sent for the current batch
    json_t *contexts;           //  Buffered: context ids to insert
    json_t *messages;           //  Buffered: [context, seq, body text]
    json_t *inserts;            //  Buffered: call records to insert
    zhashx_t *append_keys;      //  Buffered: context \x1f key -> [context, key, seq]
    zhashx_t *updates;          //  Buffered: call id -> latest record update
    zhashx_t *resumes;          //  Buffered: call id -> [id, resume state]
    zhashx_t *touched;          //  Contexts written in this batch
    zhashx_t *known;            //  Contexts known to exist
    char *broker;               //  This broker's id ("" before join)
    char *endpoint;             //  Its client endpoint
    long long lease_ms;         //  Lease length
    long long timeout_ms;       //  store/timeout_ms, 0 before it is set
    char *url;                  //  What it connects to, again after a loss
    bool lost;                  //  The connection was lost, not made again yet
    bool batch_lost;            //  Lost with the batch's transaction open:
                                //  the batch's commit fails
    act_pg_attempt_t *attempt;  //  An attempt to connect again (its thread
                                //  to be joined), or NULL
    bool waited;                //  A statement has waited for this attempt
    pthread_t reconnector;      //  That attempt's thread
    int64_t retry_at;           //  No new attempt before (zclock_mono)
    size_t failures;            //  Attempts that failed since the loss
    int64_t failure_logged;     //  When a failed attempt was last logged
    act_store_wait_fn *on_wait; //  Called while its thread's statements wait
    void *on_wait_arg;          //  Its argument
    pthread_t on_wait_thread;   //  That thread
    uint64_t next_id;           //  Next call id of the current block
    uint64_t block_end;         //  Last call id of the current block
    json_t *peers;              //  The other brokers' client endpoints,
                                //  live at the last renewal or claim
    int64_t renewed;            //  When that renewal was sent (zclock_mono)
} act_pg_t;

//  act_store_pg_session.c
//  A connection to url, bounded by connect_timeout (check its status)
PGconn *act_pg_connect (const char *url);

//  Set the session's lock and statement timeouts to ms, and bound its
//  idle transactions and a silent server by the lease (or ms, if longer)
int act_pg_timeout (void *impl, long long ms);

//  The connection was found lost: the batch's transaction is gone with
//  it, and act_pg_connected connects again
void act_pg_lost (act_pg_t *self);

//  True when there is a connection to run a statement on. After a loss,
//  connecting again runs on a thread of its own, at most once a second,
//  and this takes its connection once it has one: until then false, at
//  once (the first statement after a loss waits up to 100 ms for it).
bool act_pg_connected (act_pg_t *self);

//  The connection was lost once the COMMIT of transaction xid (its
//  txid_current, as text) was sent: the server may have committed it.
//  Asks, on a connection of its own (txid_status), again while the
//  server is away or the transaction in progress, for up to lease_ms:
//  1 committed, 0 not, -1 no answer (logged)
int act_pg_outcome (act_pg_t *self, const char *xid);

//  Let go of an attempt to connect again, before the store is destroyed:
//  joined when it has ended, else left to end on its own (its thread
//  frees it), so that a stop does not wait for connect_timeout
void act_pg_session_end (act_pg_t *self);

//  act_store_pg_exec.c

//  Log the failure of what (the result's message, else the connection's)
//  and set err: -1
int act_pg_fail (act_pg_t *self, act_err_t *err, const char *what, PGresult *result);

//  Run a statement; returns its result (the caller clears it), or NULL
//  with the failure logged (and err set). Without a connection (lost, not
//  made again yet: act_pg_connected) it fails at once; a connection it
//  finds lost is noted (act_pg_lost).
PGresult *act_pg_exec (act_pg_t *self, const char *what, const char *sql, int nparams,
                       const char *const *params, act_err_t *err);

//  One statement of a pipeline: what it does (for messages), its text,
//  its text parameters
typedef struct {
    const char *what;           //  What it does, for messages
    const char *sql;            //  Its text
    int nparams;                //  How many parameters
    const char *params [3];     //  The parameters, as text
} act_pg_statement_t;

//  Run count statements in one round trip (libpq's pipeline mode): 0, or
//  -1 with the first failure logged and err set (the server runs none
//  after it). The last statement's result goes to *last (the caller
//  clears it) when last is not NULL and all succeeded. bounded: waits as
//  act_pg_query does; else without a bound of actd's own (a COMMIT).
int act_pg_pipeline (act_pg_t *self, const act_pg_statement_t *statements, size_t count,
                     bool bounded, PGresult **last, act_err_t *err);

//  Run a statement for its effect: 0, or -1 with the failure logged
int act_pg_run (act_pg_t *self, const char *what, const char *sql, int nparams,
                const char *const *params, act_err_t *err);

//  Run sql on the connection: its result (NULL after a loss), waiting for
//  the answer the session's timeout and a second at most: past that the
//  connection is given up (act_pg_lost), as for a server gone silent.
//  nparams < 0: sql is several statements, without parameters, and the
//  result is the first error, else the last with rows, else the last. A
//  COMMIT does not go through here: it waits for the server's disk, which
//  statement_timeout does not cancel (act_pg_pipeline, unbounded).
PGresult *act_pg_query (act_pg_t *self, const char *sql, int nparams,
                        const char *const *params);

//  Wait until the connection's socket is ready for events or deadline
//  (zclock_mono) passes: the events that came (0 at the deadline), or -1.
//  The thread that set on_wait calls it every S_WAIT_SLICE_MS meanwhile.
int act_pg_ready (act_pg_t *self, short events, int64_t deadline);

//  Call fn (arg) while a statement of the calling thread waits
void act_pg_on_wait (void *impl, act_store_wait_fn *fn, void *arg);

//  When a statement sent now is given up: the session's timeout and a
//  second from now when bounded (and the timeout is set), else never
int64_t act_pg_deadline (act_pg_t *self, bool bounded);

//  No answer came in time: log it and give the connection up
void act_pg_silent (act_pg_t *self);

//  act_store_pg.c

//  Open the batch's transaction if it is not open yet: 0 or -1
int act_pg_begin (act_pg_t *self, act_err_t *err);

//  Send the buffered writes into the batch's transaction: 0 or -1
int act_pg_flush (act_pg_t *self, act_err_t *err);

//  The number in the first row of sql with parameters context and key
//  (after the buffered writes are sent): 1 with *number set, 0 when there
//  is no row, -1 when the server could not be read (logged as what);
//  *number is 0 unless 1
int act_pg_number (act_pg_t *self, const char *what, const char *sql,
                   const char *context, const char *key, uint64_t *number);

//  Call fn with the first column of each row of result as a JSON string,
//  until it returns non-zero, and clear result: 0, or -1 if result is NULL
int act_pg_each_text (PGresult *result, act_store_each_fn *fn, void *arg);

//  act_store_pg_lease.c
int act_pg_join (void *impl, const char *id, const char *endpoint, long long lease_ms,
                 act_err_t *err);
int act_pg_renew (void *impl);
int act_pg_leave (void *impl);
int act_pg_claim (void *impl, const char *context, char **owner);
const char *act_pg_elsewhere (void *impl, const char *key);
int act_pg_contexts_pending (void *impl, bool mine, act_store_each_fn *fn, void *arg);

//  act_store_pg_contexts.c
json_t *act_pg_contexts (void *impl, const char *from, const char *end, const char *after,
                         size_t limit);
int act_pg_delete_context (void *impl, const char *context, size_t *messages);
int act_pg_append_key (void *impl, const char *context, const char *key, uint64_t *seq);
int act_pg_put_append_key (void *impl, const char *context, const char *key, uint64_t seq);
//  Buffer a call's resume state (the last one of a call in the batch is sent)
int act_pg_put_resume (void *impl, const char *context, uint64_t call_id, const char *text);
int act_pg_idle_contexts (void *impl, const char *before, size_t limit,
                          act_store_each_fn *fn, void *arg);

//  Bring the schema to its latest version, each step in a transaction,
//  under an advisory lock so that brokers starting together migrate once.
//  Returns 0, or -1 with err set (act_store_pg_schema.c).
int act_pg_migrate (act_pg_t *self, act_err_t *err);

#endif

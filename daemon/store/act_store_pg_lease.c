/*  =========================================================================
    act_store_pg_lease - several brokers on one PostgreSQL store: joining,
    the heartbeat, and the leases through which each context has one
    owner at a time.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"

#ifdef ACTD_POSTGRES

#include "act_store_pg_int.h"
#include "act_log.h"

#define S_CLAIM_WAIT_MS 50     //  A claim's longest wait for a lease row's lock

int
act_pg_join (void *impl, const char *id, const char *endpoint, long long lease_ms, act_err_t *err)
{
    act_pg_t *self = (act_pg_t *) impl;
    free (self->broker);
    free (self->endpoint);
    self->broker = strdup (id);
    self->endpoint = strdup (endpoint);
    self->lease_ms = lease_ms;
    const char *params [] = { id, endpoint };
    if (act_pg_run (self, "cannot join",
        "INSERT INTO brokers (id, endpoint, heartbeat) VALUES ($1, $2, now()) "
        "ON CONFLICT (id) DO UPDATE SET endpoint = EXCLUDED.endpoint, heartbeat = now()",
        2, params, err))
        return -1;
    //  The idle limit follows the lease (act_pg_timeout)
    if (self->timeout_ms && act_pg_timeout (self, self->timeout_ms))
        return act_err_set (err, ACT_E_INTERNAL, "store %s: cannot set the session's limits",
                            self->where);
    return 0;
}

int
act_pg_renew (void *impl)
{
    act_pg_t *self = (act_pg_t *) impl;
    const char *params [] = { self->broker };
    return act_pg_run (self, "cannot renew the lease",
                  "UPDATE brokers SET heartbeat = now () WHERE id = $1", 1, params, NULL);
}

int
act_pg_leave (void *impl)
{
    act_pg_t *self = (act_pg_t *) impl;
    const char *params [] = { self->broker };
    return act_pg_run (self, "cannot leave",
                  "UPDATE brokers SET heartbeat = '-infinity' WHERE id = $1", 1, params, NULL);
}

//  Run sql as is (several statements, no parameters): 0, or -1 logged
static int
s_plain (act_pg_t *self, const char *sql)
{
    PGresult *result = act_pg_query (self, sql, -1, NULL);
    int rc = PQresultStatus (result) == PGRES_COMMAND_OK? 0: -1;
    PQclear (result);
    if (rc && !self->lost) {
        act_log (LOG_ERR, "store %s: %s: %s", self->where, sql, PQerrorMessage (self->conn));
        if (PQstatus (self->conn) == CONNECTION_BAD)
            act_pg_lost (self);
    }
    return rc;
}

//  Run the claim's statement waiting S_CLAIM_WAIT_MS at most for a lock:
//  a lease row another session has inserted and not committed (a broker
//  stopped in the middle of the commit claiming the same new context),
//  which no probe sees, would keep it waiting for lock_timeout, on the
//  loop. In a batch, a savepoint keeps a claim that gave up from failing
//  the batch. Returns the statement's result, NULL on an error (logged),
//  or NULL with *locked set when it gave up.
static PGresult *
s_claim_run (act_pg_t *self, const char *sql, const char *const *params, bool *locked)
{
    bool batch = self->open_batch;
    char *wait = zsys_sprintf ("%sSET lock_timeout = %d", batch? "SAVEPOINT claim; ": "",
                               S_CLAIM_WAIT_MS);
    char *restore = zsys_sprintf ("%sSET lock_timeout = %lld", batch? "RELEASE SAVEPOINT claim; ":
                                  "", self->timeout_ms);
    PGresult *result = NULL;
    if (act_pg_connected (self) && s_plain (self, wait) == 0) {
        result = act_pg_query (self, sql, 3, params);
        const char *state = PQresultErrorField (result, PG_DIAG_SQLSTATE);
        *locked = state && streq (state, "55P03");     //  lock_not_available
        if (PQresultStatus (result) != PGRES_TUPLES_OK) {
            if (!*locked && !self->lost)
                act_log (LOG_ERR, "store %s: cannot claim a context: %s", self->where,
                         PQresultErrorMessage (result));
            PQclear (result);
            result = NULL;
            if (PQstatus (self->conn) == CONNECTION_BAD)
                act_pg_lost (self);
            else
            if (batch)
                s_plain (self, "ROLLBACK TO SAVEPOINT claim");
        }
        if (PQstatus (self->conn) == CONNECTION_OK && s_plain (self, restore)) {
            PQclear (result);
            result = NULL;
        }
    }
    zstr_free (&wait);
    zstr_free (&restore);
    return result;
}

int
act_pg_claim (void *impl, const char *context, char **owner)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (owner)
        *owner = NULL;
    if (act_pg_flush (self, NULL))
        return -1;
    //  A lease row another session holds locked (a broker stopped in the
    //  middle of its commit, which checked its leases FOR SHARE, until the
    //  server ends that session past lease_ms) is seen at once: SKIP
    //  LOCKED passes it by. Its claims come again at every look for
    //  orphaned contexts, so they do not even wait S_CLAIM_WAIT_MS.
    const char *probe_params [] = { context };
    PGresult *probe = act_pg_exec (self, "cannot claim a context",
        "WITH free AS (SELECT 1 FROM leases WHERE context = $1 FOR NO KEY UPDATE SKIP LOCKED) "
        "SELECT EXISTS (SELECT 1 FROM leases WHERE context = $1) "
        "  AND NOT EXISTS (SELECT 1 FROM free)", 1, probe_params, NULL);
    if (!probe)
        return -1;
    bool locked = streq (PQgetvalue (probe, 0, 0), "t");
    PQclear (probe);
    if (locked)
        return -2;
    char lease [32];
    snprintf (lease, sizeof lease, "%lld", self->lease_ms);
    const char *params [] = { context, self->broker, lease };
    //  Take the lease when it is free, ours, or its broker's heartbeat is
    //  older than the lease; else name the live owner
    PGresult *result = s_claim_run (self,
        "WITH claimed AS (INSERT INTO leases (context, broker) VALUES ($1, $2) "
        "  ON CONFLICT (context) DO UPDATE SET broker = EXCLUDED.broker "
        "  WHERE leases.broker = EXCLUDED.broker OR NOT EXISTS (SELECT 1 FROM brokers b "
        "    WHERE b.id = leases.broker AND b.heartbeat > now () - $3::bigint * interval '1 ms') "
        "  RETURNING broker) "
        "SELECT (SELECT broker FROM claimed), (SELECT b.endpoint FROM leases l "
        "  JOIN brokers b ON b.id = l.broker WHERE l.context = $1)", params, &locked);
    if (!result)
        return locked? -2: -1;
    int rc = PQgetisnull (result, 0, 0)? 0: 1;
    if (rc == 0 && owner && !PQgetisnull (result, 0, 1))
        *owner = strdup (PQgetvalue (result, 0, 1));
    PQclear (result);
    return rc;
}

int
act_pg_contexts_pending (void *impl, bool mine, act_store_each_fn *fn, void *arg)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL))
        return -1;
    char lease [32];
    snprintf (lease, sizeof lease, "%lld", self->lease_ms);
    const char *params [] = { self->broker, lease };
    PGresult *result = mine
        ? act_pg_exec (self, "cannot read leases",
            "SELECT DISTINCT c.context FROM calls c JOIN leases l ON l.context = c.context "
            "WHERE NOT c.ended AND l.broker = $1", 1, params, NULL)
        : act_pg_exec (self, "cannot read leases",
            "SELECT DISTINCT c.context FROM calls c JOIN leases l ON l.context = c.context "
            "LEFT JOIN brokers b ON b.id = l.broker WHERE NOT c.ended AND l.broker <> $1 "
            "AND (b.id IS NULL OR b.heartbeat <= now () - $2::bigint * interval '1 ms')",
            2, params, NULL);
    return act_pg_each_text (result, fn, arg);
}

#endif

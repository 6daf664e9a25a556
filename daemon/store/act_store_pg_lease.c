/*  =========================================================================
    act_store_pg_lease - several brokers on one PostgreSQL store: joining,
    the heartbeat, and the leases through which each context has one
    owner at a time.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"

#ifdef ACTD_POSTGRES

#include "act_store_pg_int.h"

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
    //  server ends that session past lease_ms) would keep the claim below
    //  waiting for lock_timeout, on the loop, claim after claim: SKIP
    //  LOCKED passes such a row by, so it is seen at once
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
    PGresult *result = act_pg_exec (self, "cannot claim a context",
        "WITH claimed AS (INSERT INTO leases (context, broker) VALUES ($1, $2) "
        "  ON CONFLICT (context) DO UPDATE SET broker = EXCLUDED.broker "
        "  WHERE leases.broker = EXCLUDED.broker OR NOT EXISTS (SELECT 1 FROM brokers b "
        "    WHERE b.id = leases.broker AND b.heartbeat > now () - $3::bigint * interval '1 ms') "
        "  RETURNING broker) "
        "SELECT (SELECT broker FROM claimed), (SELECT b.endpoint FROM leases l "
        "  JOIN brokers b ON b.id = l.broker WHERE l.context = $1)", 3, params, NULL);
    if (!result)
        return -1;
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

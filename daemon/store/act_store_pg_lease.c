/*  =========================================================================
    act_store_pg_lease - several brokers on one PostgreSQL store: joining,
    the heartbeat, and the leases through which each context has one
    owner at a time.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"

#ifdef ACTD_POSTGRES

#include "act_store_pg_int.h"
#include "actd/act_client.h"
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

//  The other brokers' client endpoints live by the database's clock, as
//  one JSON array (NULL when there is none): the column a renewal and a
//  claim read, from the id and endpoint of this broker and the lease
#define S_PEERS_SQL(id, endpoint, lease) \
    "(SELECT json_agg (DISTINCT endpoint ORDER BY endpoint) FROM brokers " \
    "WHERE id <> " id " AND endpoint <> " endpoint " " \
    "AND heartbeat > now () - " lease " * interval '1 ms')"

//  Keep the peers column (S_PEERS_SQL) of result's row 0 as the live
//  brokers; what this broker knows of them is never older than its last
//  read of the database, a renewal or a claim (act_pg_elsewhere)
static void
s_peers_learn (act_pg_t *self, PGresult *result, int column)
{
    json_t *peers = PQgetisnull (result, 0, column)
                  ? json_array ()
                  : json_loads (PQgetvalue (result, 0, column), 0, NULL);
    if (json_is_array (peers)) {
        json_decref (self->peers);
        self->peers = json_incref (peers);
    }
    json_decref (peers);
}

//  Renew the heartbeat and read, in the same statement, the other brokers
//  live by the database's clock (act_pg_elsewhere sends clients there
//  should this broker's lease lapse)
int
act_pg_renew (void *impl)
{
    act_pg_t *self = (act_pg_t *) impl;
    char lease [32];
    snprintf (lease, sizeof lease, "%lld", self->lease_ms);
    const char *params [] = { self->broker, lease, self->endpoint };
    int64_t sent = zclock_mono ();
    PGresult *result = act_pg_exec (self, "cannot renew the lease",
        "WITH beat AS (UPDATE brokers SET heartbeat = now () WHERE id = $1) "
        "SELECT " S_PEERS_SQL ("$1", "$3", "$2::bigint"), 3, params, NULL);
    if (!result)
        return -1;
    if (PQntuples (result) == 1)
        s_peers_learn (self, result, 0);
    PQclear (result);
    self->renewed = sent;
    return 0;
}

//  A broker cut off from the database past two thirds of its lease (the
//  point where it drops what it holds) cannot serve a context; the others
//  take its contexts over once the lease has run out. Its clients would
//  otherwise come back to it, refused, for as long as the cut lasts: they
//  are sent to the peer the rendezvous order ranks first instead, which
//  serves them once it can take the context over (and until then names
//  this broker, the owner, as moved: the client tries again). Only a
//  broker live at this one's last read of the database is named, never
//  this one. When it knew none (a peer joined after that read, or there
//  is no other broker), the answer is "": the client tries another
//  broker it knows of, if any.
const char *
act_pg_elsewhere (void *impl, const char *key)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (!self->renewed || zclock_mono () - self->renewed <= self->lease_ms * 2 / 3)
        return NULL;
    const char *best = "";
    uint64_t best_score = 0;
    for (size_t i = 0; i < json_array_size (self->peers); i++) {
        const char *peer = json_string_value (json_array_get (self->peers, i));
        uint64_t score = peer? act_client_score (peer, key): 0;
        if (peer && (!*best || score > best_score)) {
            best = peer;
            best_score = score;
        }
    }
    return best;
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

//  The claim in one round trip (a new context's first request waits for
//  it, on the loop), as one simple query: its statement between two SETs
//  of lock_timeout, inside a savepoint when a batch is open.
//  - A lease row another session holds locked (a broker stopped in the
//    middle of its commit, which checked its leases FOR SHARE, until the
//    server ends that session past lease_ms) is seen at once: SKIP LOCKED
//    passes it by, and the claim gives busy without waiting. Its claims
//    come again at every look for orphaned contexts.
//  - A lease row another session has inserted and not committed (a broker
//    stopped in the middle of the commit claiming the same new context),
//    which no probe sees, is waited for S_CLAIM_WAIT_MS at most, then busy
//    too: it would otherwise hold the loop for lock_timeout.
//  - Otherwise the lease is taken when it is free, ours, or its broker's
//    heartbeat is older than the lease; else the live owner is named.
//  It also reads which other brokers are live (S_PEERS_SQL), as a renewal
//  does: a peer that joined since the last renewal is known from the next
//  context claimed on (act_pg_elsewhere).
//  Outside a batch the statements run as one implicit transaction, which
//  an error rolls back whole, the first SET with it; in a batch, a
//  rollback to the savepoint does the same.
//  A claim locks the lease row before it knows whether it takes it (the
//  free CTE; ON CONFLICT DO UPDATE locks the conflicting row even when
//  its WHERE refuses the update), and a lock lasts until its transaction
//  ends. The implicit transaction ends with the claim; a batch's would
//  keep the row of a lease another broker owns locked until this batch's
//  commit, and that owner's commit, which checks its leases FOR SHARE,
//  would wait that long, or fail on lock_timeout. So in a batch the
//  savepoint is ended once the answer is read (act_pg_claim, one more
//  round trip): released when the lease was taken, which keeps the
//  lease's lock until the commit as a takeover needs; rolled back, its
//  locks with it, when it was not.
#define S_CLAIM_SQL \
    "%sSET lock_timeout = %d; " \
    "WITH free AS (SELECT 1 FROM leases WHERE context = %s FOR NO KEY UPDATE SKIP LOCKED), " \
    "probe AS (SELECT EXISTS (SELECT 1 FROM leases WHERE context = %s) " \
    "  AND NOT EXISTS (SELECT 1 FROM free) AS locked), " \
    "claimed AS (INSERT INTO leases (context, broker) SELECT %s, %s " \
    "  WHERE NOT (SELECT locked FROM probe) " \
    "  ON CONFLICT (context) DO UPDATE SET broker = EXCLUDED.broker " \
    "  WHERE leases.broker = EXCLUDED.broker OR NOT EXISTS (SELECT 1 FROM brokers b " \
    "    WHERE b.id = leases.broker AND b.heartbeat > now () - %lld * interval '1 ms') " \
    "  RETURNING broker) " \
    "SELECT (SELECT locked FROM probe), (SELECT broker FROM claimed), " \
    "  (SELECT b.endpoint FROM leases l JOIN brokers b ON b.id = l.broker " \
    "   WHERE l.context = %s), " S_PEERS_SQL ("%s", "%s", "%lld") "; " \
    "SET lock_timeout = %lld"

int
act_pg_claim (void *impl, const char *context, char **owner)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (owner)
        *owner = NULL;
    if (act_pg_flush (self, NULL) || !act_pg_connected (self))
        return -1;
    char *quoted = PQescapeLiteral (self->conn, context, strlen (context));
    char *broker = PQescapeLiteral (self->conn, self->broker, strlen (self->broker));
    char *endpoint = PQescapeLiteral (self->conn, self->endpoint, strlen (self->endpoint));
    bool batch = self->open_batch;
    char *sql = quoted && broker && endpoint
              ? zsys_sprintf (S_CLAIM_SQL, batch? "SAVEPOINT claim; ": "", S_CLAIM_WAIT_MS,
                              quoted, quoted, quoted, broker, self->lease_ms, quoted,
                              broker, endpoint, self->lease_ms, self->timeout_ms)
              : NULL;
    PQfreemem (quoted);
    PQfreemem (broker);
    PQfreemem (endpoint);
    PGresult *result = sql? act_pg_query (self, sql, -1, NULL): NULL;
    zstr_free (&sql);
    int rc = -1;
    if (PQresultStatus (result) == PGRES_TUPLES_OK && PQntuples (result) == 1) {
        s_peers_learn (self, result, 3);
        if (streq (PQgetvalue (result, 0, 0), "t"))
            rc = -2;
        else
        if (!PQgetisnull (result, 0, 1))
            rc = 1;
        else {
            rc = 0;
            if (owner && !PQgetisnull (result, 0, 2))
                *owner = strdup (PQgetvalue (result, 0, 2));
        }
        //  A lease not taken leaves no lock behind (S_CLAIM_SQL). A claim
        //  whose savepoint cannot be ended cannot tell what it holds
        if (batch && s_plain (self, rc == 1? "RELEASE SAVEPOINT claim"
                                  : "ROLLBACK TO SAVEPOINT claim; RELEASE SAVEPOINT claim")) {
            rc = -1;
            if (owner)
                zstr_free (owner);
        }
    }
    else
    if (result) {
        const char *state = PQresultErrorField (result, PG_DIAG_SQLSTATE);
        if (state && streq (state, "55P03"))        //  lock_not_available
            rc = -2;
        else
            act_log (LOG_ERR, "store %s: cannot claim a context: %s", self->where,
                     PQresultErrorMessage (result));
        if (PQstatus (self->conn) == CONNECTION_BAD)
            act_pg_lost (self);
        else
        if (batch)
            s_plain (self, "ROLLBACK TO SAVEPOINT claim; RELEASE SAVEPOINT claim");
    }
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

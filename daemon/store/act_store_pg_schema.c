/*  =========================================================================
    act_store_pg_schema - the PostgreSQL store's schema and its migrations
    (see act_store_pg_int.h).
    ========================================================================= */

#include "act_store_pg_int.h"
#include "act_log.h"

//  Schema migrations: s_migrations [v] takes the schema from v to v + 1
static const char *s_migrations [] = {
    "CREATE TABLE contexts (id TEXT PRIMARY KEY, created TIMESTAMPTZ NOT NULL DEFAULT now());"
    "CREATE TABLE messages (context TEXT NOT NULL, seq BIGINT NOT NULL, body TEXT NOT NULL,"
    "  PRIMARY KEY (context, seq));"
    "CREATE SEQUENCE call_ids INCREMENT BY 1000 START WITH 1;"
    "CREATE TABLE calls (id BIGINT PRIMARY KEY, context TEXT NOT NULL, state TEXT NOT NULL,"
    "  attempts INTEGER NOT NULL DEFAULT 0, call TEXT NOT NULL, idem TEXT, outcome TEXT,"
    "  progress TEXT, client TEXT, request TEXT, ended BOOLEAN NOT NULL DEFAULT false);"
    "CREATE UNIQUE INDEX calls_by_key ON calls (context, idem) WHERE idem IS NOT NULL;"
    "CREATE INDEX calls_pending ON calls (context, id) WHERE NOT ended;"
    "CREATE TABLE counters (broker TEXT NOT NULL, name TEXT NOT NULL, value BIGINT NOT NULL,"
    "  PRIMARY KEY (broker, name));"
    "CREATE TABLE brokers (id TEXT PRIMARY KEY, endpoint TEXT NOT NULL,"
    "  heartbeat TIMESTAMPTZ NOT NULL);"
    "CREATE TABLE leases (context TEXT PRIMARY KEY, broker TEXT NOT NULL);",
    //  1 -> 2: CONTEXTS, DELETE, retention and APPEND keys. Ids in byte
    //  order (collation "C"), so that a page of CONTEXTS is a range scan of
    //  the primary key; a context's counts and last date in its row; calls
    //  by context, to delete them
    "ALTER TABLE contexts ALTER COLUMN id TYPE TEXT COLLATE \"C\";"
    "ALTER TABLE contexts ADD COLUMN messages BIGINT NOT NULL DEFAULT 0,"
    "  ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0, ADD COLUMN updated TEXT COLLATE \"C\";"
    "UPDATE contexts c SET messages = m.n, last_seq = m.last FROM (SELECT context,"
    "  count (*) AS n, max (seq) AS last FROM messages GROUP BY context) m"
    "  WHERE c.id = m.context;"
    //  (body::json fails on a \u0000 anywhere in a body: such a body gives
    //  the last "_date" of its text, which is the broker's, set last)
    "UPDATE contexts c SET updated = (SELECT CASE WHEN body NOT LIKE '%\\u0000%'"
    "  THEN body::json->>'_date' ELSE substring (body FROM '.*\"_date\":\\s*\"([^\"]*)\"') END"
    "  FROM messages WHERE context = c.id AND seq = c.last_seq) WHERE c.last_seq > 0;"
    "CREATE INDEX contexts_by_updated ON contexts (updated) WHERE updated IS NOT NULL;"
    "CREATE INDEX contexts_by_created ON contexts (created) WHERE updated IS NULL;"
    "CREATE INDEX calls_by_context ON calls (context);"
    "CREATE TABLE append_keys (context TEXT NOT NULL, key TEXT NOT NULL, seq BIGINT NOT NULL,"
    "  PRIMARY KEY (context, key));",
    //  2 -> 3: a call's resume state (its _id's repeats, its retry delay;
    //  version 10 of the SQLite store), a row only a call with such state
    //  writes. A new, empty table
    "CREATE TABLE resume (id BIGINT PRIMARY KEY, body TEXT NOT NULL);"
};
#define S_VERSION (int) (sizeof s_migrations / sizeof s_migrations [0])

//  0, or -1 with err set when another broker renewed its heartbeat within
//  the lease (act_store_set_lease): the schema is at version from and
//  that broker may run an older actd, which would go on writing by the
//  old schema (it never reads the version again): counts a migration
//  adds left wrong for good, retention then deleting live contexts. A
//  broker that stopped left '-infinity'; one that died is taken for gone
//  a lease after its last heartbeat
static int
s_alone (act_pg_t *self, int from, act_err_t *err)
{
    char lease [24];
    snprintf (lease, sizeof lease, "%lld", act_store_lease ());
    const char *params [] = { lease };
    PGresult *result = act_pg_exec (self, "cannot read the brokers",
        "SELECT id, round (extract (epoch FROM now () - heartbeat) * 1000)::bigint "
        "FROM brokers WHERE heartbeat > now () - $1::bigint * interval '1 ms' "
        "ORDER BY heartbeat DESC", 1, params, err);
    int rc = result? 0: -1;
    if (result && PQntuples (result))
        rc = act_err_set (err, ACT_E_INTERNAL, "store %s has schema version %d, and broker "
                          "%s (and %d more) renewed its heartbeat %s ms ago: it may run an "
                          "older actd, which would go on writing by the old schema. Stop "
                          "every broker of the store before the upgrade (docs/operations.md, "
                          "Upgrades); a broker that died is taken for gone %s ms after its "
                          "last heartbeat", self->where, from, PQgetvalue (result, 0, 0),
                          PQntuples (result) - 1, PQgetvalue (result, 0, 1), lease);
    PQclear (result);
    return rc;
}

//  Bring the schema to S_VERSION, each step in a transaction, under an
//  advisory lock so that brokers starting together migrate once
int
act_pg_migrate (act_pg_t *self, act_err_t *err)
{
    if (act_pg_run (self, "cannot lock the schema", "SELECT pg_advisory_lock (2020)", 0, NULL, err)
    ||  act_pg_run (self, "cannot create actd_meta",
               "CREATE TABLE IF NOT EXISTS actd_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
               0, NULL, err))
        return -1;
    PGresult *result = act_pg_exec (self, "cannot read the schema version",
        "SELECT value FROM actd_meta WHERE key = 'schema_version'", 0, NULL, err);
    int version = result && PQntuples (result)? atoi (PQgetvalue (result, 0, 0)): 0;
    PQclear (result);
    int rc = result? 0: -1;
    int from = version;
    if (rc == 0 && version > S_VERSION)
        rc = act_err_set (err, ACT_E_INTERNAL,
                          "store %s has schema version %d; this actd knows up to %d",
                          self->where, version, S_VERSION);
    if (rc == 0 && from > 0 && version < S_VERSION)
        rc = s_alone (self, from, err);
    int64_t started = zclock_mono ();
    if (rc == 0 && from > 0 && version < S_VERSION)
        act_log (LOG_NOTICE, "store %s: schema version %d, migrating it to version %d "
                 "before serving", self->where, from, S_VERSION);
    for (; rc == 0 && version < S_VERSION; version++) {
        char *sql = zsys_sprintf ("BEGIN; %s INSERT INTO actd_meta VALUES ('schema_version', '%d') "
                                  "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value; COMMIT;",
                                  s_migrations [version], version + 1);
        PGresult *step = PQexec (self->conn, sql);
        zstr_free (&sql);
        if (PQresultStatus (step) != PGRES_COMMAND_OK) {
            char what [64];
            snprintf (what, sizeof what, "cannot migrate the schema to version %d", version + 1);
            rc = act_pg_fail (self, err, what, step);
            PQclear (PQexec (self->conn, "ROLLBACK"));
        }
        else
        if (from > 0)
            act_log (LOG_INFO, "store %s: schema migrated to version %d", self->where, version + 1);
        PQclear (step);
    }
    if (rc == 0 && from > 0 && from < S_VERSION)
        act_log (LOG_NOTICE, "store %s: schema migrated from version %d to %d in %.1f s",
                 self->where, from, S_VERSION, (double) (zclock_mono () - started) / 1000);
    //  A new database goes through every step in no time: one line
    if (rc == 0 && from == 0)
        act_log (LOG_INFO, "store %s: created with schema version %d", self->where, S_VERSION);
    PQclear (PQexec (self->conn, "SELECT pg_advisory_unlock (2020)"));
    return rc;
}

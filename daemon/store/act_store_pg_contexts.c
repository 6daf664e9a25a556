/*  =========================================================================
    act_store_pg_contexts - the lifecycle of contexts in PostgreSQL:
    listing them (CONTEXTS), deleting them (DELETE and retention), and the
    idempotency keys of APPEND.

    A listing reads every broker's contexts: the contexts table is shared.
    A delete is a write like the others: it goes into the batch's
    transaction (after what the batch buffered), so a failed batch keeps
    the context whole. It removes the lease too, so the broker claims the
    id again before it writes into a new context of that id.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"
#include "actd/act_wire.h"

#ifdef ACTD_POSTGRES

#include "act_store_pg_int.h"
#include "act_log.h"

json_t *
act_pg_contexts (void *impl, const char *from, const char *end, const char *after,
                 size_t limit)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL))
        return NULL;
    char count [24];
    snprintf (count, sizeof count, "%zu", limit);
    const char *params [] = { from, end, after, count };
    //  The ids are in collation "C": the range is one of the primary key
    PGresult *result = act_pg_exec (self, "cannot list contexts",
        "SELECT c.id, c.messages, c.last_seq, c.updated, (SELECT count (*) FROM calls "
        "  WHERE context = c.id AND NOT ended) FROM contexts c "
        "WHERE c.id >= $1 AND c.id < $2 AND c.id <> $3 ORDER BY c.id LIMIT $4::bigint",
        4, params, NULL);
    if (!result)
        return NULL;
    json_t *page = json_array ();
    for (int row = 0; row < PQntuples (result); row++)
        json_array_append_new (page, json_pack ("{sssIsIsosI}",
            "context", PQgetvalue (result, row, 0),
            "messages", (json_int_t) strtoll (PQgetvalue (result, row, 1), NULL, 10),
            "last_seq", (json_int_t) strtoll (PQgetvalue (result, row, 2), NULL, 10),
            "updated", PQgetisnull (result, row, 3)
                     ? json_null (): json_string (PQgetvalue (result, row, 3)),
            "pending", (json_int_t) strtoll (PQgetvalue (result, row, 4), NULL, 10)));
    PQclear (result);
    return page;
}

//  True unless another broker holds the context's lease (then this one
//  may not delete it); the lease row stays locked to the commit
static bool
s_may_delete (act_pg_t *self, const char *context)
{
    const char *params [] = { context };
    PGresult *result = act_pg_exec (self, "cannot check a lease",
        "SELECT broker FROM leases WHERE context = $1 FOR UPDATE", 1, params, NULL);
    if (!result)
        return false;
    bool mine = PQntuples (result) == 0 || streq (PQgetvalue (result, 0, 0), self->broker);
    if (!mine)
        act_log (LOG_ERR, "store %s: context %s belongs to broker %s; not deleted",
                 self->where, context, PQgetvalue (result, 0, 0));
    PQclear (result);
    return mine;
}

int
act_pg_delete_context (void *impl, const char *context, size_t *messages)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL) || act_pg_begin (self, NULL) || !s_may_delete (self, context))
        return -1;
    //  One round trip; each DELETE runs whether or not it is read
    const char *params [] = { context };
    PGresult *result = act_pg_exec (self, "cannot delete a context",
        "WITH m AS (DELETE FROM messages WHERE context = $1 RETURNING 1), "
        "r AS (DELETE FROM resume WHERE id IN (SELECT id FROM calls WHERE context = $1)), "
        "c AS (DELETE FROM calls WHERE context = $1), "
        "k AS (DELETE FROM append_keys WHERE context = $1), "
        "l AS (DELETE FROM leases WHERE context = $1), "
        "x AS (DELETE FROM contexts WHERE id = $1 RETURNING 1) "
        "SELECT (SELECT count (*) FROM m), (SELECT count (*) FROM x)", 1, params, NULL);
    if (!result)
        return -1;
    *messages = (size_t) strtoull (PQgetvalue (result, 0, 0), NULL, 10);
    int existed = atoi (PQgetvalue (result, 0, 1)) > 0;
    PQclear (result);
    //  Its lease is gone with it: the commit's fence no longer asks for it
    zhashx_delete (self->touched, context);
    zhashx_delete (self->known, context);
    return existed;
}

int
act_pg_append_key (void *impl, const char *context, const char *key, uint64_t *seq)
{
    return act_pg_number ((act_pg_t *) impl, "cannot read APPEND keys",
        "SELECT seq FROM append_keys WHERE context = $1 AND key = $2", context, key, seq);
}

int
act_pg_put_append_key (void *impl, const char *context, const char *key, uint64_t seq)
{
    act_pg_t *self = (act_pg_t *) impl;
    //  Kept by context and key: the last one of the batch is sent
    char *name = act_key_new (context, key);
    zhashx_update (self->append_keys, name,
                   json_pack ("[ssI]", context, key, (json_int_t) seq));
    free (name);
    zhashx_update (self->touched, context, (void *) 1);
    return 0;
}

int
act_pg_put_resume (void *impl, const char *context, uint64_t call_id, const char *text)
{
    act_pg_t *self = (act_pg_t *) impl;
    char key [24];
    snprintf (key, sizeof key, "%" PRIu64, call_id);
    zhashx_update (self->resumes, key, json_pack ("[Is]", (json_int_t) call_id, text));
    //  The call's context: the commit's fence checks this broker owns it
    zhashx_update (self->touched, context, (void *) 1);
    return 0;
}

int
act_pg_idle_contexts (void *impl, const char *before, size_t limit,
                      act_store_each_fn *fn, void *arg)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL))
        return -1;
    char count [24];
    snprintf (count, sizeof count, "%zu", limit);
    const char *params [] = { before, count };
    //  Two index scans: by the last message's date, and by the creation
    //  date of contexts without messages
    PGresult *result = act_pg_exec (self, "cannot read contexts",
        "SELECT id FROM (SELECT id FROM contexts WHERE updated < $1 UNION ALL "
        "  SELECT id FROM contexts WHERE updated IS NULL AND created < $1::timestamptz) i "
        "WHERE NOT EXISTS (SELECT 1 FROM calls WHERE context = i.id AND NOT ended) "
        "LIMIT $2::bigint", 2, params, NULL);
    return act_pg_each_text (result, fn, arg);
}

#endif

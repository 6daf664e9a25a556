/*  =========================================================================
    act_store_pg - the store in PostgreSQL, shared by several brokers.

    Group commit. The writes of a batch are buffered here and sent at the
    commit as one statement per table, each carrying its rows as one JSON
    array parameter (unnested server side), inside one transaction: a
    commit costs a handful of round trips however large the batch. A read
    in the middle of a batch first sends what is buffered (in the open
    transaction), so reads still see the batch.

    Several brokers. A broker joins with an id and its client endpoint and
    renews a heartbeat (the database's clock, so the brokers' clocks do
    not matter). A context belongs to the broker holding its lease; a
    lease whose broker's heartbeat is older than lease_ms can be taken
    over. Every commit first checks, holding the lease rows (FOR SHARE),
    that this broker still owns each context it wrote: a broker that lost
    a context while it was stalled can never commit into it again, and a
    takeover waits for a commit in flight to end.

    Call ids come from a sequence in blocks of 1000 per broker.
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"
#include "actd/act_json.h"

#ifdef ACTD_POSTGRES

#include <libpq-fe.h>
#include "act_store_pg_int.h"
#include "act_log.h"


#define S_CALL_COLUMNS "id, context, state, attempts, call, idem, outcome, progress, client, request"
//  A call's record as s_call_record reads it (calls c), with its resume state
#define S_CALL_SELECT "SELECT c.id, c.context, c.state, c.attempts, c.call, c.idem, c.outcome," \
    " c.progress, c.client, c.request, r.body FROM calls AS c LEFT JOIN resume AS r ON r.id = c.id"
#define S_BLOCK 1000            //  Call ids reserved at a time


static void
s_json_free (void **item)
{
    json_decref ((json_t *) *item);
    *item = NULL;
}

static void
s_destroy (void *impl)
{
    act_pg_t *self = (act_pg_t *) impl;
    act_pg_session_end (self);
    if (self->conn) {
        if (self->open_batch)
            PQclear (PQexec (self->conn, "ROLLBACK"));
        PQfinish (self->conn);
    }
    json_decref (self->contexts);
    json_decref (self->messages);
    json_decref (self->inserts);
    json_decref (self->peers);
    zhashx_destroy (&self->updates);
    zhashx_destroy (&self->append_keys);
    zhashx_destroy (&self->resumes);
    zhashx_destroy (&self->touched);
    zhashx_destroy (&self->known);
    free (self->where);
    free (self->url);
    free (self->broker);
    free (self->endpoint);
    free (self);
}

static size_t
s_buffered (act_pg_t *self)
{
    return json_array_size (self->contexts) + json_array_size (self->messages)
         + json_array_size (self->inserts) + zhashx_size (self->updates)
         + zhashx_size (self->append_keys) + zhashx_size (self->resumes);
}

//  A pipeline being built: its statements, and the texts they point to
#define S_PIPE_MAX 11
typedef struct {
    act_pg_statement_t statements [S_PIPE_MAX];     //  Its statements
    size_t count;                                   //  How many
    char *texts [S_PIPE_MAX];                       //  Texts they point to
    size_t ntexts;                                  //  How many
} s_pipe_t;

//  Add a statement of up to two parameters; text, when not NULL, is a
//  text the pipeline frees once run
static void
s_pipe_add (s_pipe_t *pipe, const char *what, const char *sql, int nparams, const char *first,
            const char *second, char *text)
{
    if (text)
        pipe->texts [pipe->ntexts++] = text;
    pipe->statements [pipe->count++] = (act_pg_statement_t) { what, sql, nparams,
                                                              { first, second, NULL } };
}

//  Add rows (a JSON array, emptied) as the one parameter of sql, if any
static void
s_pipe_rows (s_pipe_t *pipe, const char *what, const char *sql, json_t *rows)
{
    if (json_array_size (rows) == 0)
        return;
    char *text = act_json_dump (rows);
    json_array_clear (rows);
    s_pipe_add (pipe, what, sql, 1, text, NULL, text);
}

//  Empty the pipeline without running it
static void
s_pipe_drop (s_pipe_t *pipe)
{
    for (size_t i = 0; i < pipe->ntexts; i++)
        free (pipe->texts [i]);
    pipe->count = pipe->ntexts = 0;
}

//  Run the pipeline's statements in one round trip, as act_pg_pipeline,
//  and empty it
static int
s_pipe_run (act_pg_t *self, s_pipe_t *pipe, bool bounded, PGresult **last, act_err_t *err)
{
    int rc = act_pg_pipeline (self, pipe->statements, pipe->count, bounded, last, err);
    s_pipe_drop (pipe);
    return rc;
}

//  Add the batch's BEGIN, unless its transaction is open. NORMAL: the
//  commit returns before the WAL is flushed (a crash of the database
//  server may lose the last commits, never corrupt)
static void
s_pipe_begin (act_pg_t *self, s_pipe_t *pipe)
{
    if (self->open_batch)
        return;
    s_pipe_add (pipe, "cannot begin a transaction", "BEGIN", 0, NULL, NULL, NULL);
    if (self->sync == ACT_SYNC_NORMAL)
        s_pipe_add (pipe, "cannot set synchronous_commit", "SET LOCAL synchronous_commit = off",
                    0, NULL, NULL, NULL);
    self->open_batch = true;
}

int
act_pg_begin (act_pg_t *self, act_err_t *err)
{
    s_pipe_t pipe = { .count = 0 };
    s_pipe_begin (self, &pipe);
    return s_pipe_run (self, &pipe, true, NULL, err);
}

//  What the buffered messages add to each context: [context, messages,
//  last _seq, _date of the last one or null], as a new JSON array. The
//  date is read here, from the last message of each context only: in
//  PostgreSQL, body::json->>'_date' fails on a \u0000 anywhere in the body.
static json_t *
s_added (act_pg_t *self)
{
    zhashx_t *last = zhashx_new ();         //  Context -> its row in added
    json_t *added = json_array ();
    size_t index;
    json_t *message;
    json_array_foreach (self->messages, index, message) {
        const char *context = json_string_value (json_array_get (message, 0));
        json_t *row = zhashx_lookup (last, context);
        if (!row) {
            row = json_pack ("[sIIn]", context, (json_int_t) 0, (json_int_t) 0);
            json_array_append_new (added, row);
            zhashx_insert (last, context, row);
        }
        json_array_set_new (row, 1, json_integer (json_integer_value (json_array_get (row, 1)) + 1));
        json_array_set (row, 2, json_array_get (message, 1));
        //  The text of the last message so far, parsed once at the end
        json_array_set (row, 3, json_array_get (message, 2));
    }
    json_array_foreach (added, index, message) {
        const char *text = json_string_value (json_array_get (message, 3));
        json_t *body = text? json_loads (text, JSON_ALLOW_NUL, NULL): NULL;
        json_t *date = json_object_get (body, "_date");
        json_array_set_new (message, 3, json_is_string (date)? json_incref (date): json_null ());
        json_decref (body);
    }
    zhashx_destroy (&last);
    return added;
}

//  The values of a buffer kept by key, as a new JSON array (then emptied)
static json_t *
s_values (zhashx_t *buffer)
{
    json_t *rows = json_array ();
    for (json_t *row = zhashx_first (buffer); row; row = zhashx_next (buffer))
        json_array_append (rows, row);
    zhashx_purge (buffer);
    return rows;
}

//  Add the buffered writes (the buffers emptied), after the batch's BEGIN
//  when its transaction is not open yet. The messages' statement also
//  brings their contexts' rows up to date (count, last _seq, the last
//  one's _date), once per context.
static void
s_pipe_writes (act_pg_t *self, s_pipe_t *pipe)
{
    if (s_buffered (self) == 0)
        return;
    s_pipe_begin (self, pipe);
    s_pipe_rows (pipe, "cannot store contexts",
        "INSERT INTO contexts (id, created) "
        "SELECT r->>0, (r->>1)::timestamptz FROM jsonb_array_elements ($1::jsonb) AS r "
        "ON CONFLICT DO NOTHING", self->contexts);
    if (json_array_size (self->messages)) {
        json_t *added = s_added (self);
        char *messages = act_json_dump (self->messages), *counts = act_json_dump (added);
        s_pipe_add (pipe, "cannot store messages",
            "WITH ins AS (INSERT INTO messages (context, seq, body) "
            "  SELECT r->>0, (r->>1)::bigint, r->>2 FROM jsonb_array_elements ($1::jsonb) AS r) "
            "UPDATE contexts c SET messages = c.messages + (a->>1)::bigint, "
            "  last_seq = GREATEST (c.last_seq, (a->>2)::bigint), "
            "  updated = COALESCE (a->>3, c.updated) "
            "FROM jsonb_array_elements ($2::jsonb) AS a WHERE c.id = a->>0",
            2, messages, counts, messages);
        pipe->texts [pipe->ntexts++] = counts;
        json_decref (added);
        json_array_clear (self->messages);
    }
    s_pipe_rows (pipe, "cannot store calls",
        "INSERT INTO calls (" S_CALL_COLUMNS ", ended) SELECT (r->>'call_id')::bigint, "
        "r->>'context', r->>'state', (r->>'attempts')::int, r->>'call', r->>'id', "
        "r->>'outcome', r->>'progress', r->>'client', r->>'request', (r->>'ended')::boolean "
        "FROM jsonb_array_elements ($1::jsonb) AS r", self->inserts);
    json_t *updates = s_values (self->updates), *keys = s_values (self->append_keys);
    s_pipe_rows (pipe, "cannot update calls",
        "UPDATE calls SET state = u.state, attempts = u.attempts, outcome = u.outcome, "
        "progress = u.progress, ended = u.ended FROM (SELECT (r->>'call_id')::bigint AS id, "
        "r->>'state' AS state, (r->>'attempts')::int AS attempts, r->>'outcome' AS outcome, "
        "r->>'progress' AS progress, (r->>'ended')::boolean AS ended "
        "FROM jsonb_array_elements ($1::jsonb) AS r) AS u WHERE calls.id = u.id", updates);
    s_pipe_rows (pipe, "cannot store APPEND keys",
        "INSERT INTO append_keys (context, key, seq) SELECT r->>0, r->>1, (r->>2)::bigint "
        "FROM jsonb_array_elements ($1::jsonb) AS r "
        "ON CONFLICT (context, key) DO UPDATE SET seq = EXCLUDED.seq", keys);
    json_t *resumes = s_values (self->resumes);
    s_pipe_rows (pipe, "cannot store resume states",
        "INSERT INTO resume (id, body) SELECT (r->>0)::bigint, r->>1 "
        "FROM jsonb_array_elements ($1::jsonb) AS r "
        "ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body", resumes);
    json_decref (updates);
    json_decref (keys);
    json_decref (resumes);
}

//  Send the buffered writes into the batch's transaction (opened here),
//  in one round trip
int
act_pg_flush (act_pg_t *self, act_err_t *err)
{
    s_pipe_t pipe = { .count = 0 };
    s_pipe_writes (self, &pipe);
    return s_pipe_run (self, &pipe, true, NULL, err);
}

//  A call record as the buffered row (JSON columns as their text)
static json_t *
s_row (const act_call_record_t *record)
{
    json_t *row = json_pack ("{sIsssIsb}", "call_id", (json_int_t) record->call_id,
                             "state", record->state, "attempts", (json_int_t) record->attempts,
                             "ended", act_state_ended (record->state));
    const char *names [] = { "context", "call", "id", "outcome", "progress", "client", "request" };
    const char *values [] = { record->context, record->call, record->id, record->outcome,
                              record->progress, record->client, record->request };
    for (int i = 0; i < 7; i++)
        if (values [i])
            json_object_set_new (row, names [i], json_string (values [i]));
    return row;
}

static int
s_put_context (void *impl, const char *context)
{
    act_pg_t *self = (act_pg_t *) impl;
    //  Only the context's owner creates it: a context it has not seen is new
    if (zhashx_lookup (self->known, context))
        return 0;
    zhashx_insert (self->known, context, (void *) 1);
    //  Its creation date on actd's clock, as its messages' _date and
    //  retention's cutoff are: the database server's now() is another
    //  clock, and a skew between the two deleted (or kept) a context
    //  with no message early (or late)
    char created [32];
    act_date_now (created);
    json_array_append_new (self->contexts, json_pack ("[ss]", context, created));
    zhashx_update (self->touched, context, (void *) 1);
    return 1;
}

static int
s_put_message (void *impl, const char *context, uint64_t seq, const char *text, size_t size)
{
    act_pg_t *self = (act_pg_t *) impl;
    json_array_append_new (self->messages,
                           json_pack ("[sIs%]", context, (json_int_t) seq, text, size));
    zhashx_update (self->touched, context, (void *) 1);
    return 0;
}

static int
s_put_call (void *impl, const act_call_record_t *record)
{
    act_pg_t *self = (act_pg_t *) impl;
    json_array_append_new (self->inserts, s_row (record));
    if (record->context)
        zhashx_update (self->touched, record->context, (void *) 1);
    return 0;
}

static int
s_update_call (void *impl, const act_call_record_t *record)
{
    act_pg_t *self = (act_pg_t *) impl;
    //  An insert still buffered takes the update; else the last update of
    //  a call in the batch is the one sent
    json_int_t id = (json_int_t) record->call_id;
    size_t index;
    json_t *row;
    json_array_foreach (self->inserts, index, row)
        if (json_integer_value (json_object_get (row, "call_id")) == id) {
            json_t *fresh = s_row (record);
            json_object_update (row, fresh);
            json_decref (fresh);
            return 0;
        }
    char key [24];
    snprintf (key, sizeof key, "%" JSON_INTEGER_FORMAT, id);
    zhashx_update (self->updates, key, s_row (record));
    if (record->context)
        zhashx_update (self->touched, record->context, (void *) 1);
    return 0;
}

//  The contexts written in this batch, as a JSON array text
static char *
s_touched (act_pg_t *self)
{
    json_t *ids = json_array ();
    zlistx_t *keys = zhashx_keys (self->touched);
    for (char *key = zlistx_first (keys); key; key = zlistx_next (keys))
        json_array_append_new (ids, json_string (key));
    zlistx_destroy (&keys);
    char *text = act_json_dump (ids);
    json_decref (ids);
    return text;
}

//  Room for a transaction's id as text (txid_current: a 64-bit number)
#define S_XID_SIZE 32

//  Fencing: add to pipe the check that the batch only touches contexts
//  this broker still owns (their lease rows held FOR SHARE until the
//  commit) and run it; on success xid (S_XID_SIZE bytes) holds the
//  transaction's id.
//  0, or -1 with err (the lease of a context written was lost)
static int
s_check_leases (act_pg_t *self, s_pipe_t *pipe, char *xid, act_err_t *err)
{
    char *touched = s_touched (self);
    if (!touched) {
        s_pipe_drop (pipe);
        return act_err_set (err, ACT_E_INTERNAL, "store %s: out of memory", self->where);
    }
    PGresult *held = NULL;
    s_pipe_add (pipe, "cannot check leases",
        "SELECT context, txid_current () FROM leases WHERE broker = $1 AND context IN "
        "(SELECT jsonb_array_elements_text ($2::jsonb)) FOR SHARE", 2, self->broker,
        touched, touched);
    int rc = s_pipe_run (self, pipe, true, &held, err);
    if (rc == 0 && PQntuples (held) > 0)
        snprintf (xid, S_XID_SIZE, "%s", PQgetvalue (held, 0, 1));
    if (rc == 0 && (size_t) PQntuples (held) != zhashx_size (self->touched)) {
        act_log (LOG_ERR, "store %s: this broker lost the lease of a context it wrote; "
                 "the batch is rolled back", self->where);
        rc = act_err_set (err, ACT_E_INTERNAL, "this broker no longer owns a context it wrote");
    }
    PQclear (held);
    return rc;
}

//  Room for the counters' changes as one JSON text (s_add_counters)
#define S_CHANGES_MAX (S_COUNTERS * 40 + 2)

//  Add to pipe the counters that changed, in one statement ({"name":
//  delta, ...}) written into changes (S_CHANGES_MAX bytes, which the
//  pipe points to until it runs), when any did
static void
s_add_counters (act_pg_t *self, s_pipe_t *pipe, const int64_t *deltas, char *changes)
{
    size_t used = 1;
    strcpy (changes, "{");
    for (int i = 0; i < S_COUNTERS; i++)
        if (deltas [i])
            used += (size_t) snprintf (changes + used, S_CHANGES_MAX - used, "%s\"%s\":%" PRId64,
                                       used > 1? ",": "", act_store_counter_names [i], deltas [i]);
    snprintf (changes + used, S_CHANGES_MAX - used, "}");
    if (used > 1)
        s_pipe_add (pipe, "cannot update counters",
            "INSERT INTO counters (broker, name, value) "
            "SELECT $1, key, value::bigint FROM jsonb_each_text ($2::jsonb) "
            "ON CONFLICT (broker, name) DO UPDATE SET value = counters.value + EXCLUDED.value",
            2, self->broker, changes, NULL);
}

//  Forget the batch's state, committed or not
static void
s_batch_reset (act_pg_t *self)
{
    self->open_batch = false;
    self->batch_lost = false;
    zhashx_purge (self->touched);
    json_array_clear (self->contexts);
    json_array_clear (self->messages);
    json_array_clear (self->inserts);
    zhashx_purge (self->updates);
    zhashx_purge (self->append_keys);
    zhashx_purge (self->resumes);
}

//  Commit the batch in two round trips: its writes not sent yet, then the
//  check of its leases, in one; its counters and COMMIT in the other
static int
s_commit (void *impl, const int64_t *deltas, bool rollback, act_err_t *err)
{
    act_pg_t *self = (act_pg_t *) impl;
    //  Writes sent before the connection was lost are gone with their
    //  transaction: the rest of the batch may not be kept without them
    int rc = rollback? -1: self->batch_lost
           ? act_err_set (err, ACT_E_INTERNAL, "store %s: the connection was lost during "
                          "the batch", self->where)
           : 0;
    s_pipe_t pipe = { .count = 0 };
    char xid [S_XID_SIZE] = ""; //  The transaction's id, once the leases are checked
    char changes [S_CHANGES_MAX];   //  The counters' changes, for the pipe
    if (rc == 0)
        s_pipe_writes (self, &pipe);
    if (rc == 0 && !self->open_batch)
        return 0;               //  Nothing was written
    if (rc == 0 && zhashx_size (self->touched))
        rc = s_check_leases (self, &pipe, xid, err);
    if (rc == 0)
        s_add_counters (self, &pipe, deltas, changes);
    //  A COMMIT waits for the server's disk, which statement_timeout does
    //  not cancel: given up, it might still be kept. It waits without a
    //  bound of actd's own (the kernel's holds: s_bound_silence)
    if (rc == 0) {
        s_pipe_add (&pipe, "commit failed", "COMMIT", 0, NULL, NULL, NULL);
        rc = s_pipe_run (self, &pipe, false, NULL, err);
        //  Lost once COMMIT was sent (the server restarted, ended the
        //  session, or went silent): the transaction may have committed
        //  all the same (a session ended while its COMMIT waited for a
        //  synchronous standby has committed), and its replies, refused,
        //  would be sent again by clients and stored twice. The server
        //  is asked (act_pg_outcome)
        if (rc && self->lost && *xid && act_pg_outcome (self, xid) == 1) {
            rc = 0;
            if (err)
                memset (err, 0, sizeof *err);
        }
    }
    if (rc) {
        //  No transaction left to roll back when the connection was lost
        if (self->open_batch)
            PQclear (PQexec (self->conn, "ROLLBACK"));
        //  Contexts created in the batch are not known to exist any more
        zhashx_purge (self->known);
    }
    s_batch_reset (self);
    return rc;
}

//  1 when the context is stored, 0 when not, -1 when the server could
//  not be read (a lost connection is no answer)
static int
s_has_context (void *impl, const char *context)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (zhashx_lookup (self->known, context))
        return 1;
    if (act_pg_flush (self, NULL))
        return -1;
    const char *params [] = { context };
    PGresult *result = act_pg_exec (self, "cannot read contexts",
                               "SELECT 1 FROM contexts WHERE id = $1", 1, params, NULL);
    if (!result)
        return -1;
    int found = PQntuples (result) > 0;
    PQclear (result);
    if (found)
        zhashx_insert (self->known, context, (void *) 1);
    return found;
}

static int
s_messages (void *impl, const char *context, act_store_each_fn *fn, void *arg)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL))
        return -1;
    const char *params [] = { context };
    PGresult *result = act_pg_exec (self, "cannot read messages",
        "SELECT body FROM messages WHERE context = $1 ORDER BY seq", 1, params, NULL);
    if (!result)
        return -1;
    for (int row = 0; row < PQntuples (result); row++) {
        const char *body = PQgetvalue (result, row, 0);
        json_t *message = act_json_parse_stored (body, strlen (body), NULL);
        int stop = message? fn (message, arg): 0;
        json_decref (message);
        if (stop)
            break;
    }
    PQclear (result);
    return 0;
}

static int
s_history (void *impl, const char *context, uint64_t from, size_t limit, size_t max_bytes,
           act_store_text_fn *fn, void *arg)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL))
        return -1;
    char from_text [24], limit_text [24], bytes_text [24];
    snprintf (from_text, sizeof from_text, "%" PRIu64, from);
    snprintf (limit_text, sizeof limit_text, "%zu", limit);
    snprintf (bytes_text, sizeof bytes_text, "%zu", max_bytes? max_bytes: SIZE_MAX / 2);
    const char *params [] = { context, from_text, limit_text, bytes_text };
    //  The server stops the page where its text would pass max_bytes ("["
    //  then each body and "," or "]"), so a page of big messages does not
    //  cross the wire whole only to be cut here
    PGresult *result = act_pg_exec (self, "cannot read history",
        "SELECT body, seq FROM (SELECT body, seq, row_number () OVER w AS n, "
        "1 + sum (octet_length (body) + 1) OVER w AS bytes FROM messages "
        "WHERE context = $1 AND seq >= $2::bigint WINDOW w AS (ORDER BY seq) "
        "ORDER BY seq LIMIT $3::bigint) page WHERE n = 1 OR bytes <= $4::bigint "
        "ORDER BY n", 4, params, NULL);
    if (!result)
        return -1;
    for (int row = 0; row < PQntuples (result); row++)
        if (fn (strtoull (PQgetvalue (result, row, 1), NULL, 10), PQgetvalue (result, row, 0),
                (size_t) PQgetlength (result, row, 0), arg))
            break;
    PQclear (result);
    return 0;
}

//  The call record in row (columns S_CALL_SELECT)
static json_t *
s_call_record (PGresult *result, int row)
{
    json_t *record = json_object ();
    json_object_set_new (record, "call_id",
                         json_integer (strtoll (PQgetvalue (result, row, 0), NULL, 10)));
    json_object_set_new (record, "attempts",
                         json_integer (strtoll (PQgetvalue (result, row, 3), NULL, 10)));
    const char *names [] = { NULL, "context", "state", NULL, "call", "id", "outcome",
                             "progress", "client", "request", "resume" };
    for (int column = 1; column < 11; column++) {
        if (column == 3 || PQgetisnull (result, row, column))
            continue;
        const char *text = PQgetvalue (result, row, column);
        bool is_json = column == 4 || column == 6 || column == 7 || column == 10;
        json_object_set_new (record, names [column], is_json
            ? json_loads (text, JSON_DECODE_ANY, NULL): json_string (text));
    }
    return record;
}

//  1 with *record set, 0 when the call is not stored, -1 when the server
//  could not be read (a lost connection is no answer)
static int
s_call (void *impl, uint64_t call_id, json_t **record)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (act_pg_flush (self, NULL))
        return -1;
    char id [24];
    snprintf (id, sizeof id, "%" PRIu64, call_id);
    const char *params [] = { id };
    PGresult *result = act_pg_exec (self, "cannot read a call",
        S_CALL_SELECT " WHERE c.id = $1::bigint", 1, params, NULL);
    if (!result)
        return -1;
    *record = PQntuples (result)? s_call_record (result, 0): NULL;
    PQclear (result);
    return *record != NULL;
}

int
act_pg_number (act_pg_t *self, const char *what, const char *sql, const char *context,
               const char *key, uint64_t *number)
{
    *number = 0;
    if (act_pg_flush (self, NULL))
        return -1;
    const char *params [] = { context, key };
    PGresult *result = act_pg_exec (self, what, sql, 2, params, NULL);
    if (!result)
        return -1;
    if (PQntuples (result))
        *number = strtoull (PQgetvalue (result, 0, 0), NULL, 10);
    PQclear (result);
    return *number != 0;
}

int
act_pg_each_text (PGresult *result, act_store_each_fn *fn, void *arg)
{
    if (!result)
        return -1;
    for (int row = 0; row < PQntuples (result); row++)
        if (act_store_give_text (fn, arg, PQgetvalue (result, row, 0)))
            break;
    PQclear (result);
    return 0;
}

static int
s_idem (void *impl, const char *context, const char *key, uint64_t *call_id)
{
    return act_pg_number ((act_pg_t *) impl, "cannot read calls",
        "SELECT id FROM calls WHERE context = $1 AND idem = $2", context, key, call_id);
}

//  Walk call records a query returns
static int
s_walk_calls (act_pg_t *self, const char *sql, int nparams, const char *const *params,
              act_store_each_fn *fn, void *arg)
{
    if (act_pg_flush (self, NULL))
        return -1;
    PGresult *result = act_pg_exec (self, "cannot read calls", sql, nparams, params, NULL);
    if (!result)
        return -1;
    for (int row = 0; row < PQntuples (result); row++) {
        json_t *record = s_call_record (result, row);
        int stop = fn (record, arg);
        json_decref (record);
        if (stop)
            break;
    }
    PQclear (result);
    return 0;
}

static int
s_pending (void *impl, act_store_each_fn *fn, void *arg)
{
    act_pg_t *self = (act_pg_t *) impl;
    //  Shared: only this broker's calls (contexts it holds the lease of)
    const char *params [] = { self->broker };
    return s_walk_calls (self,
        S_CALL_SELECT " WHERE NOT c.ended AND c.context IN "
        "(SELECT context FROM leases WHERE broker = $1) ORDER BY c.id", 1, params, fn, arg);
}

static int
s_pending_in (void *impl, const char *context, act_store_each_fn *fn, void *arg)
{
    const char *params [] = { context };
    return s_walk_calls ((act_pg_t *) impl,
        S_CALL_SELECT " WHERE NOT c.ended AND c.context = $1 ORDER BY c.id",
        1, params, fn, arg);
}

static int
s_last_call (void *impl, uint64_t *call_id)
{
    act_pg_t *self = (act_pg_t *) impl;
    PGresult *result = act_pg_exec (self, "cannot read calls",
                               "SELECT COALESCE (MAX (id), 0) FROM calls", 0, NULL, NULL);
    if (!result)
        return -1;
    *call_id = strtoull (PQgetvalue (result, 0, 0), NULL, 10);
    PQclear (result);
    return 0;
}

static uint64_t
s_next_call (void *impl, bool reserve)
{
    act_pg_t *self = (act_pg_t *) impl;
    if (self->next_id == 0 || self->next_id > self->block_end) {
        if (!reserve)
            return 0;
        PGresult *result = act_pg_exec (self, "cannot reserve call ids",
                                   "SELECT nextval ('call_ids')", 0, NULL, NULL);
        if (!result)
            return 0;
        self->next_id = strtoull (PQgetvalue (result, 0, 0), NULL, 10);
        self->block_end = self->next_id + S_BLOCK - 1;
        PQclear (result);
    }
    return self->next_id++;
}

static int
s_counters (void *impl, int64_t *counts)
{
    act_pg_t *self = (act_pg_t *) impl;
    memset (counts, 0, sizeof (int64_t) * S_COUNTERS);
    PGresult *result = act_pg_exec (self, "cannot read counters",
        "SELECT name, SUM (value) FROM counters GROUP BY name", 0, NULL, NULL);
    if (!result)
        return -1;
    for (int row = 0; row < PQntuples (result); row++)
        for (int i = 0; i < S_COUNTERS; i++)
            if (streq (PQgetvalue (result, row, 0), act_store_counter_names [i]))
                counts [i] = strtoll (PQgetvalue (result, row, 1), NULL, 10);
    PQclear (result);
    return 0;
}

const act_store_backend_t act_store_pg = {
    "postgres", s_destroy, s_put_context, s_put_message, s_put_call, s_update_call,
    s_commit, s_has_context, s_messages, s_history, s_call, s_idem, s_pending,
    s_last_call, s_counters, s_next_call, act_pg_join, act_pg_claim, act_pg_renew,
    act_pg_leave, act_pg_contexts_pending, s_pending_in, act_pg_contexts, act_pg_delete_context,
    act_pg_append_key, act_pg_put_append_key, act_pg_idle_contexts, act_pg_timeout,
    NULL, act_pg_on_wait, act_pg_put_resume, act_pg_elsewhere, NULL
};

void *
act_store_pg_open (const char *url, act_sync_t sync, act_err_t *err)
{
    act_pg_t *self = calloc (1, sizeof *self);
    self->sync = sync;
    self->contexts = json_array ();
    self->messages = json_array ();
    self->inserts = json_array ();
    self->updates = zhashx_new ();
    zhashx_set_destructor (self->updates, s_json_free);
    self->append_keys = zhashx_new ();
    zhashx_set_destructor (self->append_keys, s_json_free);
    self->resumes = zhashx_new ();
    zhashx_set_destructor (self->resumes, s_json_free);
    self->touched = zhashx_new ();
    self->known = zhashx_new ();
    self->broker = strdup ("");
    self->endpoint = strdup ("");
    self->lease_ms = 10000;
    self->peers = json_array ();
    self->url = strdup (url);
    self->conn = act_pg_connect (url);
    if (PQstatus (self->conn) != CONNECTION_OK) {
        self->where = strdup ("(postgres)");
        act_err_set (err, ACT_E_INTERNAL, "cannot connect to PostgreSQL: %s",
                     PQerrorMessage (self->conn));
        s_destroy (self);
        return NULL;
    }
    self->where = zsys_sprintf ("postgres %s/%s", PQhost (self->conn), PQdb (self->conn));
    //  Quiet: NOTICEs (CREATE TABLE IF NOT EXISTS) are not errors
    PQclear (PQexec (self->conn, "SET client_min_messages = warning"));
    if (act_pg_migrate (self, err)) {
        s_destroy (self);
        return NULL;
    }
    return self;
}

#else

//  Built without libpq
void *
act_store_pg_open (const char *url, act_sync_t sync, act_err_t *err)
{
    act_err_set (err, ACT_E_INTERNAL,
                 "this actd was built without PostgreSQL (install libpq-dev and rebuild)");
    return NULL;
}

const act_store_backend_t act_store_pg = { .name = "postgres" };

#endif

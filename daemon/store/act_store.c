/*  =========================================================================
    act_store - the store: batches and counters over a backend, and the
    ":memory:" backend.
    ========================================================================= */

#include <czmq.h>
#include "act_store.h"
#include "act_store_int.h"

const char *act_store_counter_names [S_COUNTERS] = {
    "contexts", "messages", "accepted", "ok", "error", "timeout", "skipped", "cancelled"
};

struct _act_store_t {
    const act_store_backend_t *backend;     //  What stores it
    void *impl;                             //  The backend's state
    int64_t counts [S_COUNTERS];            //  Committed totals
    int64_t deltas [S_COUNTERS];            //  Changes in the current batch
    size_t batch;                           //  Writes in the current batch
    char *failed;                           //  First failed write of the
                                            //  batch (what), or NULL
    uint64_t last_call;                     //  Call ids given out (one broker)
};

static const char *s_outcomes [] = { "ok", "error", "timeout", "skipped", "cancelled" };

bool
act_state_ended (const char *state)
{
    for (size_t i = 0; state && i < 5; i++)
        if (streq (state, s_outcomes [i]))
            return true;
    return false;
}


//  --------------------------------------------------------------------------
//  The memory backend: the same contract, nothing on disk. It keeps texts,
//  as a database would, and builds JSON when read.

typedef struct {
    char **items;               //  Message texts by _seq - 1
    size_t size;                //  Number of messages
    size_t capacity;            //  Slots allocated
} s_messages_t;

//  A call as kept here: owned copies of a record's fields
typedef struct {
    uint64_t call_id;           //  Call id
    long long attempts;         //  Dispatches so far
    char *fields [8];           //  context, state, call, id, outcome,
                                //  progress, client, request (or NULL)
} s_mcall_t;

static const char *s_field_names [8] = {
    "context", "state", "call", "id", "outcome", "progress", "client", "request"
};

typedef struct {
    zhashx_t *contexts;         //  Context id -> s_messages_t
    zhashx_t *calls;            //  Call id (decimal) -> s_mcall_t
    zhashx_t *keys;             //  context + "\x1f" + _id -> call id (decimal)
    uint64_t last_call;         //  Highest call id stored
    int64_t counts [S_COUNTERS];//  Committed totals
} s_memory_t;

static void
s_messages_destroy (void **item)
{
    s_messages_t *list = (s_messages_t *) *item;
    for (size_t i = 0; i < list->size; i++)
        free (list->items [i]);
    free (list->items);
    free (list);
    *item = NULL;
}

static void
s_mcall_destroy (void **item)
{
    s_mcall_t *call = (s_mcall_t *) *item;
    for (int i = 0; i < 8; i++)
        free (call->fields [i]);
    free (call);
    *item = NULL;
}

static void
s_memory_destroy (void *impl)
{
    s_memory_t *self = (s_memory_t *) impl;
    zhashx_destroy (&self->contexts);
    zhashx_destroy (&self->calls);
    zhashx_destroy (&self->keys);
    free (self);
}

static int
s_memory_put_context (void *impl, const char *context)
{
    s_memory_t *self = (s_memory_t *) impl;
    if (zhashx_lookup (self->contexts, context))
        return 0;
    zhashx_insert (self->contexts, context, calloc (1, sizeof (s_messages_t)));
    return 1;
}

static int
s_memory_put_message (void *impl, const char *context, uint64_t seq,
                      const char *text, size_t size)
{
    s_memory_t *self = (s_memory_t *) impl;
    s_memory_put_context (impl, context);
    s_messages_t *list = (s_messages_t *) zhashx_lookup (self->contexts, context);
    if (seq != list->size + 1)
        return -1;              //  _seq must grow by one
    if (list->size == list->capacity) {
        list->capacity = list->capacity? list->capacity * 2: 16;
        list->items = realloc (list->items, list->capacity * sizeof (char *));
    }
    list->items [list->size++] = strndup (text, size);
    return 0;
}

static char *
s_copy (const char *text)
{
    return text? strdup (text): NULL;
}

static int
s_memory_put_call (void *impl, const act_call_record_t *record)
{
    s_memory_t *self = (s_memory_t *) impl;
    s_mcall_t *call = calloc (1, sizeof *call);
    call->call_id = record->call_id;
    call->attempts = record->attempts;
    const char *fields [8] = { record->context, record->state, record->call, record->id,
                               record->outcome, record->progress, record->client,
                               record->request };
    for (int i = 0; i < 8; i++)
        call->fields [i] = s_copy (fields [i]);
    char key [24];
    snprintf (key, sizeof key, "%" PRIu64, record->call_id);
    zhashx_update (self->calls, key, call);
    if (record->id) {
        char *full = zsys_sprintf ("%s\x1f%s", record->context, record->id);
        zhashx_update (self->keys, full, strdup (key));
        zstr_free (&full);
    }
    if (record->call_id > self->last_call)
        self->last_call = record->call_id;
    return 0;
}

static int
s_memory_update_call (void *impl, const act_call_record_t *record)
{
    s_memory_t *self = (s_memory_t *) impl;
    char key [24];
    snprintf (key, sizeof key, "%" PRIu64, record->call_id);
    s_mcall_t *call = (s_mcall_t *) zhashx_lookup (self->calls, key);
    if (!call)
        return -1;
    call->attempts = record->attempts;
    free (call->fields [1]);
    call->fields [1] = s_copy (record->state);
    free (call->fields [4]);
    call->fields [4] = s_copy (record->outcome);
    free (call->fields [5]);
    call->fields [5] = s_copy (record->progress);
    return 0;
}

//  The record of a call, as JSON
static json_t *
s_mcall_json (s_mcall_t *call)
{
    json_t *record = json_pack ("{sIsI}", "call_id", (json_int_t) call->call_id,
                                "attempts", (json_int_t) call->attempts);
    for (int i = 0; i < 8; i++)
        if (call->fields [i]) {
            bool is_json = i == 2 || i == 4 || i == 5;
            json_object_set_new (record, s_field_names [i], is_json
                ? json_loads (call->fields [i], JSON_DECODE_ANY, NULL)
                : json_string (call->fields [i]));
        }
    return record;
}

static int
s_memory_commit (void *impl, const int64_t *deltas, bool rollback, act_err_t *err)
{
    //  Its writes cannot fail (they are in memory at once), so a batch is
    //  never doomed here; the counters follow the facade's verdict
    s_memory_t *self = (s_memory_t *) impl;
    if (rollback)
        return -1;
    for (int i = 0; i < S_COUNTERS; i++)
        self->counts [i] += deltas [i];
    return 0;
}

static bool
s_memory_has_context (void *impl, const char *context)
{
    return zhashx_lookup (((s_memory_t *) impl)->contexts, context) != NULL;
}

static int
s_memory_messages (void *impl, const char *context, act_store_each_fn *fn, void *arg)
{
    s_messages_t *list = zhashx_lookup (((s_memory_t *) impl)->contexts, context);
    for (size_t i = 0; list && i < list->size; i++) {
        json_t *message = json_loads (list->items [i], 0, NULL);
        int stop = message? fn (message, arg): 0;
        json_decref (message);
        if (stop)
            break;
    }
    return 0;
}

static json_t *
s_memory_history (void *impl, const char *context, uint64_t from, size_t limit,
                  size_t max_bytes)
{
    s_messages_t *list = zhashx_lookup (((s_memory_t *) impl)->contexts, context);
    json_t *page = json_array ();
    size_t bytes = 1;           //  "[", then each message and "," or "]"
    for (size_t i = from? from - 1: 0; list && i < list->size && limit; i++, limit--) {
        bytes += strlen (list->items [i]) + 1;
        if (max_bytes && bytes > max_bytes && json_array_size (page))
            break;
        json_array_append_new (page, json_loads (list->items [i], 0, NULL));
    }
    return page;
}

static json_t *
s_memory_call (void *impl, uint64_t call_id)
{
    char key [24];
    snprintf (key, sizeof key, "%" PRIu64, call_id);
    s_mcall_t *call = zhashx_lookup (((s_memory_t *) impl)->calls, key);
    return call? s_mcall_json (call): NULL;
}

static uint64_t
s_memory_idem (void *impl, const char *context, const char *key)
{
    char *full = zsys_sprintf ("%s\x1f%s", context, key);
    const char *id = zhashx_lookup (((s_memory_t *) impl)->keys, full);
    zstr_free (&full);
    return id? strtoull (id, NULL, 10): 0;
}

static int
s_compare_ids (const void *a, const void *b)
{
    uint64_t left = (*(s_mcall_t * const *) a)->call_id;
    uint64_t right = (*(s_mcall_t * const *) b)->call_id;
    return left < right? -1: left > right;
}

static int
s_memory_pending (void *impl, act_store_each_fn *fn, void *arg)
{
    s_memory_t *self = (s_memory_t *) impl;
    size_t size = 0;
    s_mcall_t **list = malloc ((zhashx_size (self->calls) + 1) * sizeof (s_mcall_t *));
    for (s_mcall_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls))
        if (!act_state_ended (call->fields [1]))
            list [size++] = call;
    qsort (list, size, sizeof (s_mcall_t *), s_compare_ids);
    for (size_t i = 0; i < size; i++) {
        json_t *record = s_mcall_json (list [i]);
        int stop = fn (record, arg);
        json_decref (record);
        if (stop)
            break;
    }
    free (list);
    return 0;
}

static int
s_memory_contexts_pending (void *impl, bool mine, act_store_each_fn *fn, void *arg)
{
    s_memory_t *self = (s_memory_t *) impl;
    if (!mine)
        return 0;
    zhashx_t *seen = zhashx_new ();
    for (s_mcall_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls))
        if (!act_state_ended (call->fields [1])
        &&  zhashx_insert (seen, call->fields [0], (void *) 1) == 0) {
            json_t *name = json_string (call->fields [0]);
            fn (name, arg);
            json_decref (name);
        }
    zhashx_destroy (&seen);
    return 0;
}

static uint64_t
s_memory_last_call (void *impl)
{
    return ((s_memory_t *) impl)->last_call;
}

static int
s_memory_counters (void *impl, int64_t *counts)
{
    memcpy (counts, ((s_memory_t *) impl)->counts, sizeof (int64_t) * S_COUNTERS);
    return 0;
}

static const act_store_backend_t s_memory = {
    "memory", s_memory_destroy, s_memory_put_context, s_memory_put_message,
    s_memory_put_call, s_memory_update_call, s_memory_commit, s_memory_has_context,
    s_memory_messages, s_memory_history, s_memory_call, s_memory_idem,
    s_memory_pending, s_memory_last_call, s_memory_counters, NULL, NULL, NULL, NULL, NULL,
    s_memory_contexts_pending, NULL
};

static void *
s_memory_open (void)
{
    s_memory_t *self = calloc (1, sizeof *self);
    self->contexts = zhashx_new ();
    zhashx_set_destructor (self->contexts, s_messages_destroy);
    self->calls = zhashx_new ();
    zhashx_set_destructor (self->calls, s_mcall_destroy);
    self->keys = zhashx_new ();
    zhashx_set_destructor (self->keys, (zhashx_destructor_fn *) zstr_free);
    return self;
}


//  --------------------------------------------------------------------------
//  The store

act_store_t *
act_store_open (const char *location, act_sync_t sync, act_err_t *err)
{
    act_store_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    if (location && streq (location, ":memory:")) {
        self->backend = &s_memory;
        self->impl = s_memory_open ();
    }
    else
    if (location && (strncmp (location, "postgres://", 11) == 0
                 ||  strncmp (location, "postgresql://", 13) == 0)) {
        self->backend = &act_store_pg;
        self->impl = act_store_pg_open (location, sync, err);
    }
    else {
        self->backend = &act_store_sqlite;
        self->impl = act_store_sqlite_open (location, sync, err);
    }
    if (!self->impl || self->backend->counters (self->impl, self->counts)) {
        if (self->impl)
            self->backend->destroy (self->impl);
        if (err && !err->code)
            act_err_set (err, ACT_E_INTERNAL, "cannot open store '%s'", location);
        free (self);
        return NULL;
    }
    self->last_call = self->backend->last_call (self->impl);
    return self;
}

void
act_store_destroy (act_store_t **self_p)
{
    if (self_p && *self_p) {
        act_store_t *self = *self_p;
        self->backend->destroy (self->impl);
        free (self->failed);
        free (self);
        *self_p = NULL;
    }
}

const char *
act_store_backend (act_store_t *self)
{
    return self->backend->name;
}

//  Count a write in the batch. A failed one dooms the batch: in SQLite a
//  failed statement rolls back only itself, so a COMMIT after it would
//  keep the rest, and a DONE could go out without the message it reports.
//  The first failure is remembered and the commit refuses the whole batch.
static int
s_counted (act_store_t *self, int rc, const char *what)
{
    self->batch++;
    if (rc < 0 && !self->failed)
        self->failed = strdup (what);
    return rc < 0? -1: 0;
}

int
act_store_put_context (act_store_t *self, const char *context)
{
    int rc = self->backend->put_context (self->impl, context);
    if (rc < 0)
        return s_counted (self, rc, "a new context");
    self->deltas [S_CONTEXTS] += rc;
    self->batch += rc;
    return 0;
}

int
act_store_put_message (act_store_t *self, const char *context, uint64_t seq,
                       const char *text, size_t size)
{
    int rc = self->backend->put_message (self->impl, context, seq, text, size);
    if (rc == 0)
        self->deltas [S_MESSAGES]++;
    return s_counted (self, rc, "a message");
}

int
act_store_put_call (act_store_t *self, const act_call_record_t *record)
{
    int rc = self->backend->put_call (self->impl, record);
    if (rc == 0)
        self->deltas [S_ACCEPTED]++;
    return s_counted (self, rc, "a new call");
}

int
act_store_update_call (act_store_t *self, const act_call_record_t *record)
{
    int rc = self->backend->update_call (self->impl, record);
    const char *state = record->state;
    for (int i = 0; rc == 0 && i < 5; i++)
        if (state && streq (state, s_outcomes [i]))
            self->deltas [S_OK + i]++;
    return s_counted (self, rc, "a call's state");
}

int
act_store_commit (act_store_t *self, act_err_t *err)
{
    if (self->batch == 0)
        return 0;
    bool doomed = self->failed != NULL;
    int rc = self->backend->commit (self->impl, self->deltas, doomed, err);
    if (doomed) {
        act_err_set (err, ACT_E_INTERNAL, "the store could not write %s; "
                     "the batch was rolled back", self->failed);
        rc = -1;
    }
    if (rc == 0)
        for (int i = 0; i < S_COUNTERS; i++)
            self->counts [i] += self->deltas [i];
    memset (self->deltas, 0, sizeof self->deltas);
    self->batch = 0;
    zstr_free (&self->failed);
    return rc;
}

size_t
act_store_batch (act_store_t *self)
{
    return self->batch;
}

bool
act_store_has_context (act_store_t *self, const char *context)
{
    return self->backend->has_context (self->impl, context);
}

int
act_store_messages (act_store_t *self, const char *context, act_store_each_fn *fn,
                    void *arg)
{
    return self->backend->messages (self->impl, context, fn, arg);
}

json_t *
act_store_history (act_store_t *self, const char *context, uint64_t from, size_t limit,
                   size_t max_bytes)
{
    return self->backend->history (self->impl, context, from, limit, max_bytes);
}

json_t *
act_store_call (act_store_t *self, uint64_t call_id)
{
    return self->backend->call (self->impl, call_id);
}

uint64_t
act_store_idem (act_store_t *self, const char *context, const char *key)
{
    return self->backend->idem (self->impl, context, key);
}

int
act_store_pending (act_store_t *self, act_store_each_fn *fn, void *arg)
{
    return self->backend->pending (self->impl, fn, arg);
}

uint64_t
act_store_last_call (act_store_t *self)
{
    return self->backend->last_call (self->impl);
}

json_t *
act_store_counts (act_store_t *self)
{
    //  A shared store: other brokers commit too, so the committed totals
    //  are read again (one small query); if that fails, the last ones read
    if (act_store_shared (self)) {
        int64_t fresh [S_COUNTERS];
        if (self->backend->counters (self->impl, fresh) == 0)
            memcpy (self->counts, fresh, sizeof fresh);
    }
    int64_t total [S_COUNTERS];
    for (int i = 0; i < S_COUNTERS; i++)
        total [i] = self->counts [i] + self->deltas [i];
    json_t *calls = json_object ();
    for (int i = S_ACCEPTED; i < S_COUNTERS; i++)
        json_object_set_new (calls, act_store_counter_names [i], json_integer (total [i]));
    return json_pack ("{sIsIso}", "contexts", (json_int_t) total [S_CONTEXTS],
                      "messages", (json_int_t) total [S_MESSAGES], "calls", calls);
}

uint64_t
act_store_next_call (act_store_t *self)
{
    if (self->backend->next_call)
        return self->backend->next_call (self->impl);
    return ++self->last_call;
}

bool
act_store_shared (act_store_t *self)
{
    return self->backend->join != NULL;
}

int
act_store_join (act_store_t *self, const char *id, const char *endpoint,
                long long lease_ms, act_err_t *err)
{
    return self->backend->join? self->backend->join (self->impl, id, endpoint, lease_ms, err): 0;
}

int
act_store_claim (act_store_t *self, const char *context, char **owner)
{
    return self->backend->claim? self->backend->claim (self->impl, context, owner): 1;
}

int
act_store_renew (act_store_t *self)
{
    return self->backend->renew? self->backend->renew (self->impl): 0;
}

int
act_store_leave (act_store_t *self)
{
    return self->backend->leave? self->backend->leave (self->impl): 0;
}

int
act_store_contexts_pending (act_store_t *self, bool mine, act_store_each_fn *fn, void *arg)
{
    return self->backend->contexts_pending (self->impl, mine, fn, arg);
}

//  Filter a walk of pending calls down to one context
typedef struct {
    const char *context;        //  The context wanted
    act_store_each_fn *fn;      //  The caller's function
    void *arg;                  //  Its argument
} s_filter_t;

static int
s_filter (const json_t *record, void *arg)
{
    s_filter_t *filter = (s_filter_t *) arg;
    const char *context = json_string_value (json_object_get (record, "context"));
    return context && streq (context, filter->context)? filter->fn (record, filter->arg): 0;
}

int
act_store_pending_in (act_store_t *self, const char *context, act_store_each_fn *fn,
                      void *arg)
{
    if (self->backend->pending_in)
        return self->backend->pending_in (self->impl, context, fn, arg);
    s_filter_t filter = { context, fn, arg };
    return self->backend->pending (self->impl, s_filter, &filter);
}

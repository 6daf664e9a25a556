/*  =========================================================================
    act_store_memory - the ":memory:" backend: the store's contract with
    nothing on disk, for tests and benchmarks. It keeps texts, as a
    database would, and builds JSON when read.

    Its writes take effect at once and cannot fail, so a batch is never
    doomed here; a batch the facade rolls back keeps its other writes,
    except deletes, which are held until the commit and put back on a
    rollback (a failed DELETE must leave the context whole).
    ========================================================================= */

#include <czmq.h>
#include "act_store_int.h"
#include "actd/act_wire.h"
#include "actd/act_json.h"

//  A context: its messages and APPEND keys
typedef struct {
    char **items;               //  Message texts by _seq - 1
    size_t size;                //  Number of messages
    size_t capacity;            //  Slots allocated
    char created [32];          //  When it was created (RFC 3339)
    zhashx_t *append_keys;      //  APPEND key -> _seq (decimal)
} s_mctx_t;

//  A call as kept here: owned copies of a record's fields
typedef struct {
    uint64_t call_id;           //  Call id
    long long attempts;         //  Dispatches so far
    bool ended;                 //  Its state is an outcome (act_state_ended)
    char *fields [8];           //  context, state, call, id, outcome,
                                //  progress, client, request (or NULL);
                                //  those an update never changes (context,
                                //  call, id, client, request) are in the
                                //  call's own allocation
    char state [16];            //  The state when it fits (fields [1]
                                //  points here then)
    char *resume;               //  Its resume state (act_store_put_resume),
                                //  or NULL
} s_mcall_t;

//  True for a field an update replaces (state, outcome, progress): it is
//  allocated apart
#define S_MUTABLE(field) ((field) == 1 || (field) == 4 || (field) == 5)

static const char *s_field_names [8] = {
    "context", "state", "call", "id", "outcome", "progress", "client", "request"
};

//  A context deleted in the current batch, kept until the commit
typedef struct {
    char *context;              //  Its id
    s_mctx_t *ctx;              //  Its messages and keys
    zlistx_t *calls;            //  Its calls (s_mcall_t *)
} s_grave_t;

typedef struct {
    zhashx_t *contexts;         //  Context id -> s_mctx_t (freed here)
    char **ids;                 //  Context ids in byte order, owned
    size_t nids;                //  Number of ids
    size_t capacity;            //  Slots allocated
    zhashx_t *calls;            //  Call id (decimal) -> s_mcall_t (freed here)
    zhashx_t *keys;             //  context + "\x1f" + _id -> call id (decimal)
    zhashx_t *pending;          //  Context id -> calls not ended (a
                                //  size_t of its own, counted in place)
    zlistx_t *graves;           //  Contexts deleted in the batch (s_grave_t *)
    uint64_t last_call;         //  Highest call id stored
    int64_t counts [S_COUNTERS];//  Committed totals
} s_memory_t;

static void
s_mctx_destroy (s_mctx_t **self_p)
{
    s_mctx_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->size; i++)
        free (self->items [i]);
    free (self->items);
    zhashx_destroy (&self->append_keys);
    free (self);
    *self_p = NULL;
}

static void
s_mcall_destroy (s_mcall_t **self_p)
{
    s_mcall_t *self = *self_p;
    for (int i = 0; i < 8; i++)
        if (S_MUTABLE (i) && self->fields [i] != self->state)
            free (self->fields [i]);
    free (self->resume);
    free (self);
    *self_p = NULL;
}

static void
s_grave_destroy (void **item)
{
    s_grave_t *grave = (s_grave_t *) *item;
    for (s_mcall_t *call = zlistx_first (grave->calls); call; call = zlistx_next (grave->calls))
        s_mcall_destroy (&call);
    zlistx_destroy (&grave->calls);
    s_mctx_destroy (&grave->ctx);
    free (grave->context);
    free (grave);
    *item = NULL;
}

static void
s_memory_destroy (void *impl)
{
    s_memory_t *self = (s_memory_t *) impl;
    zlistx_destroy (&self->graves);
    for (s_mctx_t *ctx = zhashx_first (self->contexts); ctx; ctx = zhashx_next (self->contexts))
        s_mctx_destroy (&ctx);
    zhashx_destroy (&self->contexts);
    for (s_mcall_t *call = zhashx_first (self->calls); call; call = zhashx_next (self->calls))
        s_mcall_destroy (&call);
    zhashx_destroy (&self->calls);
    for (size_t i = 0; i < self->nids; i++)
        free (self->ids [i]);
    free (self->ids);
    zhashx_destroy (&self->keys);
    zhashx_destroy (&self->pending);
    free (self);
}

//  Index of the first id >= key in the sorted ids (binary search)
static size_t
s_lower_bound (s_memory_t *self, const char *key)
{
    size_t low = 0, high = self->nids;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (strcmp (self->ids [middle], key) < 0)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

//  Add a context with the given created date (now when NULL); 1 when it
//  is new, 0 when it existed
static int
s_add_context (s_memory_t *self, const char *context, s_mctx_t *ctx)
{
    if (zhashx_lookup (self->contexts, context))
        return 0;
    if (!ctx) {
        ctx = calloc (1, sizeof *ctx);
        act_date_now (ctx->created);
        ctx->append_keys = zhashx_new ();
        zhashx_set_destructor (ctx->append_keys, (zhashx_destructor_fn *) zstr_free);
    }
    zhashx_insert (self->contexts, context, ctx);
    if (self->nids == self->capacity) {
        self->capacity = self->capacity? self->capacity * 2: 64;
        self->ids = realloc (self->ids, self->capacity * sizeof (char *));
    }
    size_t at = s_lower_bound (self, context);
    memmove (self->ids + at + 1, self->ids + at, (self->nids - at) * sizeof (char *));
    self->ids [at] = strdup (context);
    self->nids++;
    return 1;
}

//  Take a context out of the store (not freed); NULL if there is none
static s_mctx_t *
s_take_context (s_memory_t *self, const char *context)
{
    s_mctx_t *ctx = zhashx_lookup (self->contexts, context);
    if (ctx) {
        zhashx_delete (self->contexts, context);
        size_t at = s_lower_bound (self, context);
        free (self->ids [at]);
        memmove (self->ids + at, self->ids + at + 1, (self->nids - at - 1) * sizeof (char *));
        self->nids--;
    }
    return ctx;
}

static int
s_memory_put_context (void *impl, const char *context)
{
    return s_add_context ((s_memory_t *) impl, context, NULL);
}

static int
s_memory_put_message (void *impl, const char *context, uint64_t seq,
                      const char *text, size_t size)
{
    s_memory_t *self = (s_memory_t *) impl;
    s_mctx_t *ctx = (s_mctx_t *) zhashx_lookup (self->contexts, context);
    if (!ctx) {
        s_add_context (self, context, NULL);
        ctx = (s_mctx_t *) zhashx_lookup (self->contexts, context);
    }
    if (seq != ctx->size + 1)
        return -1;              //  _seq must grow by one
    if (ctx->size == ctx->capacity) {
        ctx->capacity = ctx->capacity? ctx->capacity * 2: 16;
        ctx->items = realloc (ctx->items, ctx->capacity * sizeof (char *));
    }
    ctx->items [ctx->size++] = strndup (text, size);
    return 0;
}

static char *
s_copy (const char *text)
{
    return text? strdup (text): NULL;
}

//  Count a call of context as pending (by +1) or no longer (by -1)
static void
s_count_pending (s_memory_t *self, const char *context, int by)
{
    //  One lookup while the context has calls pending: the count is
    //  changed where it is kept
    size_t *count = (size_t *) zhashx_lookup (self->pending, context);
    if (count) {
        *count += (size_t) (ptrdiff_t) by;
        if (*count == 0)
            zhashx_delete (self->pending, context);
    }
    else
    if (by > 0 && (count = (size_t *) malloc (sizeof *count))) {
        *count = (size_t) by;
        zhashx_insert (self->pending, context, count);
    }
}

//  Free a pending count (the pending table's destructor)
static void
s_count_free (void **item)
{
    free (*item);
    *item = NULL;
}

//  The number of calls of context not ended
static size_t
s_pending_of (s_memory_t *self, const char *context)
{
    size_t *count = (size_t *) zhashx_lookup (self->pending, context);
    return count? *count: 0;
}

//  The calls table's key of call_id, its decimal digits, into key (24
//  bytes); by hand: snprintf cost more than the lookup it serves
static void
s_call_key (char *key, uint64_t call_id)
{
    key [act_decimal_write (key, (long long) call_id)] = 0;
}

//  Store call (taken) under its id, with its _id key
static void
s_add_call (s_memory_t *self, s_mcall_t *call)
{
    char key [24];
    s_call_key (key, call->call_id);
    //  A new id (the usual case) is stored with one lookup
    if (zhashx_insert (self->calls, key, call) != 0) {
        s_mcall_t *old = zhashx_lookup (self->calls, key);
        if (!old->ended)
            s_count_pending (self, old->fields [0], -1);
        s_mcall_destroy (&old);
        zhashx_update (self->calls, key, call);
    }
    if (call->fields [3]) {
        char *full = act_key_new (call->fields [0], call->fields [3]);
        zhashx_update (self->keys, full, strdup (key));
        free (full);
    }
    if (!call->ended)
        s_count_pending (self, call->fields [0], 1);
    if (call->call_id > self->last_call)
        self->last_call = call->call_id;
}

//  Set call's state to a copy of state (NULL: none); in the call itself
//  when it fits, as every state actd writes does
static void
s_set_state (s_mcall_t *call, const char *state)
{
    if (call->fields [1] != call->state)
        free (call->fields [1]);
    size_t length = state? strlen (state): 0;
    if (state && length < sizeof call->state) {
        memcpy (call->state, state, length + 1);
        call->fields [1] = call->state;
    }
    else
        call->fields [1] = s_copy (state);
}

static int
s_memory_put_call (void *impl, const act_call_record_t *record)
{
    const char *fields [8] = { record->context? record->context: "", record->state,
                               record->call, record->id, record->outcome,
                               record->progress, record->client, record->request };
    //  The fields an update never changes follow the call, in one block
    size_t lengths [8] = { 0 };
    size_t total = 0;
    for (int i = 0; i < 8; i++)
        if (fields [i] && !S_MUTABLE (i))
            total += lengths [i] = strlen (fields [i]) + 1;
    s_mcall_t *call = calloc (1, sizeof *call + total);
    if (!call)
        return -1;
    call->call_id = record->call_id;
    call->attempts = record->attempts;
    char *at = (char *) (call + 1);
    for (int i = 0; i < 8; i++)
        if (i == 1)
            s_set_state (call, fields [i]);
        else
        if (S_MUTABLE (i))
            call->fields [i] = s_copy (fields [i]);
        else
        if (fields [i]) {
            memcpy (at, fields [i], lengths [i]);
            call->fields [i] = at;
            at += lengths [i];
        }
    call->ended = act_state_ended (call->fields [1]);
    s_add_call ((s_memory_t *) impl, call);
    return 0;
}

static int
s_memory_update_call (void *impl, const act_call_record_t *record)
{
    s_memory_t *self = (s_memory_t *) impl;
    char key [24];
    s_call_key (key, record->call_id);
    s_mcall_t *call = (s_mcall_t *) zhashx_lookup (self->calls, key);
    if (!call)
        return -1;
    call->attempts = record->attempts;
    //  A state is rewritten only when it changes (and so is its count)
    if (!call->fields [1] || !record->state || strcmp (call->fields [1], record->state)) {
        int was = call->ended, is = act_state_ended (record->state);
        if (was != is)
            s_count_pending (self, call->fields [0], was - is);
        call->ended = is;
        s_set_state (call, record->state);
    }
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
    if (call->resume)
        json_object_set_new (record, "resume", json_loads (call->resume, 0, NULL));
    return record;
}

static int
s_memory_put_resume (void *impl, const char *context, uint64_t call_id, const char *text)
{
    (void) context;
    char key [24];
    s_call_key (key, call_id);
    s_mcall_t *call = (s_mcall_t *) zhashx_lookup (((s_memory_t *) impl)->calls, key);
    if (!call)
        return -1;
    free (call->resume);
    call->resume = s_copy (text);
    return 0;
}

//  Put back a context deleted in a batch that was rolled back. A context
//  of the same id created since in that batch gives way to it.
static void
s_restore (s_memory_t *self, s_grave_t *grave)
{
    if (grave->ctx) {
        s_mctx_t *fresh = s_take_context (self, grave->context);
        s_mctx_destroy (&fresh);
        s_add_context (self, grave->context, grave->ctx);
    }
    grave->ctx = NULL;
    for (s_mcall_t *call = zlistx_first (grave->calls); call; call = zlistx_next (grave->calls))
        s_add_call (self, call);
    zlistx_purge (grave->calls);
}

static int
s_memory_commit (void *impl, const int64_t *deltas, bool rollback, act_err_t *err)
{
    s_memory_t *self = (s_memory_t *) impl;
    if (rollback) {
        for (s_grave_t *grave = zlistx_last (self->graves); grave;
             grave = zlistx_prev (self->graves))
            s_restore (self, grave);
    }
    zlistx_purge (self->graves);
    if (rollback)
        return -1;
    for (int i = 0; i < S_COUNTERS; i++)
        self->counts [i] += deltas [i];
    return 0;
}

static int
s_memory_has_context (void *impl, const char *context)
{
    return zhashx_lookup (((s_memory_t *) impl)->contexts, context) != NULL;
}

static int
s_memory_messages (void *impl, const char *context, act_store_each_fn *fn, void *arg)
{
    s_mctx_t *ctx = zhashx_lookup (((s_memory_t *) impl)->contexts, context);
    for (size_t i = 0; ctx && i < ctx->size; i++) {
        json_t *message = act_json_parse_stored (ctx->items [i], strlen (ctx->items [i]), NULL);
        int stop = message? fn (message, arg): 0;
        json_decref (message);
        if (stop)
            break;
    }
    return 0;
}

static int
s_memory_history (void *impl, const char *context, uint64_t from, size_t limit,
                  size_t max_bytes, act_store_text_fn *fn, void *arg)
{
    s_mctx_t *ctx = zhashx_lookup (((s_memory_t *) impl)->contexts, context);
    size_t bytes = 1;           //  "[", then each message and "," or "]"
    size_t first = from? from - 1: 0;
    for (size_t i = first; ctx && i < ctx->size && limit; i++, limit--) {
        size_t size = strlen (ctx->items [i]);
        bytes += size + 1;
        if (max_bytes && bytes > max_bytes && i > first)
            break;
        if (fn ((uint64_t) i + 1, ctx->items [i], size, arg))
            break;
    }
    return 0;
}

//  Memory cannot fail a read: 1 or 0
static int
s_memory_call (void *impl, uint64_t call_id, json_t **record)
{
    char key [24];
    s_call_key (key, call_id);
    s_mcall_t *call = zhashx_lookup (((s_memory_t *) impl)->calls, key);
    *record = call? s_mcall_json (call): NULL;
    return *record != NULL;
}

static int
s_memory_idem (void *impl, const char *context, const char *key, uint64_t *call_id)
{
    char *full = act_key_new (context, key);
    const char *id = zhashx_lookup (((s_memory_t *) impl)->keys, full);
    free (full);
    *call_id = id? strtoull (id, NULL, 10): 0;
    return *call_id != 0;
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
        if (!call->ended)
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
    zlistx_t *contexts = zhashx_keys (self->pending);
    for (const char *context = zlistx_first (contexts); context;
         context = zlistx_next (contexts))
        if (act_store_give_text (fn, arg, context))
            break;
    zlistx_destroy (&contexts);
    return 0;
}

static int
s_memory_last_call (void *impl, uint64_t *call_id)
{
    *call_id = ((s_memory_t *) impl)->last_call;
    return 0;
}

static int
s_memory_counters (void *impl, int64_t *counts)
{
    memcpy (counts, ((s_memory_t *) impl)->counts, sizeof (int64_t) * S_COUNTERS);
    return 0;
}

//  The _date of a context's last message, or NULL (a new reference)
static json_t *
s_updated (s_mctx_t *ctx)
{
    if (ctx->size == 0)
        return json_null ();
    json_t *message = json_loads (ctx->items [ctx->size - 1], JSON_ALLOW_NUL, NULL);
    json_t *date = json_object_get (message, "_date");
    date = json_is_string (date)? json_incref (date): json_null ();
    json_decref (message);
    return date;
}

static json_t *
s_memory_contexts (void *impl, const char *from, const char *end, const char *after,
                   size_t limit)
{
    s_memory_t *self = (s_memory_t *) impl;
    json_t *page = json_array ();
    for (size_t at = s_lower_bound (self, from);
         at < self->nids && json_array_size (page) < limit; at++) {
        const char *id = self->ids [at];
        if (strcmp (id, end) >= 0)
            break;
        if (streq (id, after))
            continue;
        s_mctx_t *ctx = zhashx_lookup (self->contexts, id);
        json_array_append_new (page, json_pack ("{sssIsIsosI}", "context", id,
            "messages", (json_int_t) ctx->size, "last_seq", (json_int_t) ctx->size,
            "updated", s_updated (ctx),
            "pending", (json_int_t) s_pending_of (self, id)));
    }
    return page;
}

//  Delete a context: it, its calls and their keys go to a grave until the
//  commit
static int
s_memory_delete_context (void *impl, const char *context, size_t *messages)
{
    s_memory_t *self = (s_memory_t *) impl;
    s_grave_t *grave = calloc (1, sizeof *grave);
    grave->context = strdup (context);
    grave->calls = zlistx_new ();
    zhashx_delete (self->pending, context);     //  Counted again if restored
    //  Memory is for tests: finding a context's calls scans them all
    zlistx_t *ids = zhashx_keys (self->calls);
    for (const char *id = zlistx_first (ids); id; id = zlistx_next (ids)) {
        s_mcall_t *call = zhashx_lookup (self->calls, id);
        if (!streq (call->fields [0], context))
            continue;
        if (call->fields [3]) {
            char *full = act_key_new (context, call->fields [3]);
            zhashx_delete (self->keys, full);
            free (full);
        }
        zhashx_delete (self->calls, id);
        zlistx_add_end (grave->calls, call);
    }
    zlistx_destroy (&ids);
    zlistx_add_end (self->graves, grave);
    grave->ctx = s_take_context (self, context);
    //  Calls without a context are removed all the same
    *messages = grave->ctx? grave->ctx->size: 0;
    return grave->ctx? 1: 0;
}

static int
s_memory_append_key (void *impl, const char *context, const char *key, uint64_t *seq)
{
    s_mctx_t *ctx = zhashx_lookup (((s_memory_t *) impl)->contexts, context);
    const char *text = ctx? zhashx_lookup (ctx->append_keys, key): NULL;
    *seq = text? strtoull (text, NULL, 10): 0;
    return *seq != 0;
}

static int
s_memory_put_append_key (void *impl, const char *context, const char *key, uint64_t seq)
{
    s_memory_t *self = (s_memory_t *) impl;
    s_add_context (self, context, NULL);
    s_mctx_t *ctx = zhashx_lookup (self->contexts, context);
    zhashx_update (ctx->append_keys, key, zsys_sprintf ("%" PRIu64, seq));
    return 0;
}

//  Memory is for tests: this walks every context
static int
s_memory_idle_contexts (void *impl, const char *before, size_t limit,
                        act_store_each_fn *fn, void *arg)
{
    s_memory_t *self = (s_memory_t *) impl;
    for (size_t at = 0; at < self->nids && limit; at++) {
        const char *id = self->ids [at];
        if (zhashx_lookup (self->pending, id))
            continue;
        s_mctx_t *ctx = zhashx_lookup (self->contexts, id);
        json_t *updated = s_updated (ctx);
        const char *date = json_is_string (updated)? json_string_value (updated): ctx->created;
        bool idle = strcmp (date, before) < 0;
        json_decref (updated);
        if (!idle)
            continue;
        limit--;
        if (act_store_give_text (fn, arg, id))
            break;
    }
    return 0;
}

const act_store_backend_t act_store_memory = {
    "memory", s_memory_destroy, s_memory_put_context, s_memory_put_message,
    s_memory_put_call, s_memory_update_call, s_memory_commit, s_memory_has_context,
    s_memory_messages, s_memory_history, s_memory_call, s_memory_idem,
    s_memory_pending, s_memory_last_call, s_memory_counters, NULL, NULL, NULL, NULL, NULL,
    s_memory_contexts_pending, NULL, s_memory_contexts, s_memory_delete_context,
    s_memory_append_key, s_memory_put_append_key, s_memory_idle_contexts, NULL, NULL, NULL,
    s_memory_put_resume, NULL, NULL
};

void *
act_store_memory_open (void)
{
    s_memory_t *self = calloc (1, sizeof *self);
    self->contexts = zhashx_new ();
    self->calls = zhashx_new ();
    self->keys = zhashx_new ();
    zhashx_set_destructor (self->keys, (zhashx_destructor_fn *) zstr_free);
    self->pending = zhashx_new ();
    zhashx_set_destructor (self->pending, s_count_free);
    self->graves = zlistx_new ();
    zlistx_set_destructor (self->graves, s_grave_destroy);
    return self;
}

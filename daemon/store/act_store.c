/*  =========================================================================
    act_store - the store: batches and counters over a backend
    (act_store_memory.c, act_store_sqlite.c, act_store_pg.c).
    ========================================================================= */

#include <czmq.h>
#include "act_store.h"
#include "act_store_int.h"
#include "actd/act_json.h"
#include "actd/act_text.h"

const char *act_store_counter_names [S_COUNTERS] = {
    "contexts", "messages", "accepted", "ok", "error", "timeout", "skipped", "cancelled",
    "deleted"
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
    act_journal_t *journal;                 //  Writes of the batch not given to
                                            //  the backend yet, or NULL: writes
                                            //  go to the backend at once
    act_journal_t *sealed;                  //  The sealed batch's writes, for
                                            //  the commit thread
    int64_t sealed_deltas [S_COUNTERS];     //  The sealed batch's changes
    size_t sealed_batch;                    //  Its writes
    char *sealed_failed;                    //  Its first failed write, or NULL
    act_store_settle_fn *settle;            //  Ends the commit in flight
    void *settle_arg;                       //  Its argument
    bool settling;                          //  In settle (no recursion)
    uint64_t generation;                    //  Number of the current batch
    uint64_t sealed_generation;             //  Number of the sealed batch
    uint64_t durable;                       //  Batches up to this number
                                            //  are committed
};

static const char *s_outcomes [] = { "ok", "error", "timeout", "skipped", "cancelled" };

int
act_store_give_text (act_store_each_fn *fn, void *arg, const char *text)
{
    json_t *value = json_string (text);
    int stop = value? fn (value, arg): 0;
    json_decref (value);
    return stop;
}

//  The index of state in s_outcomes, or -1 (by its first letter: this
//  runs for every write of a call)
static int
s_outcome (const char *state)
{
    int index = -1;
    switch (state? state [0]: 0) {
        case 'o': index = 0; break;
        case 'e': index = 1; break;
        case 't': index = 2; break;
        case 's': index = 3; break;
        case 'c': index = 4; break;
    }
    return index >= 0 && streq (state, s_outcomes [index])? index: -1;
}

bool
act_state_ended (const char *state)
{
    return s_outcome (state) >= 0;
}


//  --------------------------------------------------------------------------
//  The store

char *
act_store_location_shown (const char *location)
{
    if (!location)
        return strdup ("(none)");
    //  A PostgreSQL URL may carry a password: as user:password@ and as a
    //  password= parameter; each is written as *** (the rest says which
    //  store it is)
    const char *scheme = strstr (location, "://");
    if (!scheme || !(strncmp (location, "postgres://", 11) == 0
                 ||  strncmp (location, "postgresql://", 13) == 0))
        return strdup (location);
    act_buf_t shown = { 0 };
    const char *rest = scheme + 3;
    const char *at = strchr (rest, '@'), *slash = strchr (rest, '/');
    const char *colon = at? memchr (rest, ':', (size_t) (at - rest)): NULL;
    if (at && (!slash || at < slash) && colon) {
        act_buf_add (&shown, location, (size_t) (colon + 1 - location));
        act_buf_add_str (&shown, "***");
        rest = at;
    }
    else
        rest = location;
    for (const char *next; (next = strstr (rest, "password=")) != NULL; rest = next) {
        next += 9;
        act_buf_add (&shown, rest, (size_t) (next - rest));
        act_buf_add_str (&shown, "***");
        next += strcspn (next, "&");
    }
    act_buf_add_str (&shown, rest);
    return act_buf_take (&shown);
}

//  See act_store_set_lease
static long long s_lease_ms = 10000;

void
act_store_set_lease (long long lease_ms)
{
    s_lease_ms = lease_ms;
}

long long
act_store_lease (void)
{
    return s_lease_ms;
}

act_store_t *
act_store_open (const char *location, act_sync_t sync, act_err_t *err)
{
    act_store_t *self = calloc (1, sizeof *self);
    if (self)
        self->generation = 1;
    if (!self)
        return NULL;
    if (location && streq (location, ":memory:")) {
        self->backend = &act_store_memory;
        self->impl = act_store_memory_open ();
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
    //  A call id read as 0 for want of an answer would give out the
    //  stored calls' ids again
    if (self->backend->last_call (self->impl, &self->last_call)) {
        self->backend->destroy (self->impl);
        act_err_set (err, ACT_E_INTERNAL, "cannot open store '%s': its calls do not read",
                     location);
        free (self);
        return NULL;
    }
    return self;
}

void
act_store_destroy (act_store_t **self_p)
{
    if (self_p && *self_p) {
        act_store_t *self = *self_p;
        self->backend->destroy (self->impl);
        free (self->failed);
        free (self->sealed_failed);
        act_journal_destroy (&self->journal);
        act_journal_destroy (&self->sealed);
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

//  The commit in flight, if any, ends (the backend's connection is the
//  commit thread's until then)
static void
s_settle (act_store_t *self)
{
    if (self->settle && !self->settling) {
        self->settling = true;
        self->settle (self->settle_arg);
        self->settling = false;
    }
}

//  Before the loop uses the backend itself: the commit in flight ends,
//  then the batch's journaled writes go to the backend, so that reads see
//  them (they stay in the journal until the batch's commit ends)
static void
s_direct (act_store_t *self)
{
    if (!self->journal)
        return;
    s_settle (self);
    const char *failed = act_journal_apply (self->journal, self->backend, self->impl);
    if (failed && !self->failed)
        self->failed = strdup (failed);
}

void
act_store_journal (act_store_t *self, act_store_settle_fn *settle, void *arg)
{
    if (!self->journal) {
        self->journal = act_journal_new ();
        self->sealed = act_journal_new ();
        //  Every text the backend's batch holds comes from a journal now
        if (self->backend->borrow)
            self->backend->borrow (self->impl);
    }
    self->settle = settle;
    self->settle_arg = arg;
}

int
act_store_put_context (act_store_t *self, const char *context)
{
    s_direct (self);
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
    int rc = self->journal? act_journal_message (self->journal, context, seq, text, size)
                          : self->backend->put_message (self->impl, context, seq, text, size);
    if (rc == 0)
        self->deltas [S_MESSAGES]++;
    return s_counted (self, rc, "a message");
}

int
act_store_put_call (act_store_t *self, const act_call_record_t *record)
{
    int rc = self->journal? act_journal_call (self->journal, true, record)
                          : self->backend->put_call (self->impl, record);
    if (rc == 0)
        self->deltas [S_ACCEPTED]++;
    return s_counted (self, rc, "a new call");
}

int
act_store_update_call (act_store_t *self, const act_call_record_t *record)
{
    int rc = self->journal? act_journal_call (self->journal, false, record)
                          : self->backend->update_call (self->impl, record);
    int outcome = s_outcome (record->state);
    if (rc == 0 && outcome >= 0)
        self->deltas [S_OK + outcome]++;
    return s_counted (self, rc, "a call's state");
}

int
act_store_put_resume (act_store_t *self, const char *context, uint64_t call_id,
                      const char *text)
{
    int rc = self->journal? act_journal_resume (self->journal, context, call_id, text)
                          : self->backend->put_resume (self->impl, context, call_id, text);
    return s_counted (self, rc, "a call's resume state");
}

int
act_store_commit (act_store_t *self, act_err_t *err)
{
    if (self->batch == 0)
        return 0;
    s_direct (self);
    bool doomed = self->failed != NULL;
    int rc = self->backend->commit (self->impl, self->deltas, doomed, err);
    if (doomed) {
        act_err_set (err, ACT_E_INTERNAL, "the store could not write %s; "
                     "the batch was rolled back", self->failed);
        rc = -1;
    }
    if (rc == 0) {
        for (int i = 0; i < S_COUNTERS; i++)
            self->counts [i] += self->deltas [i];
        self->durable = self->generation++;
    }
    memset (self->deltas, 0, sizeof self->deltas);
    self->batch = 0;
    zstr_free (&self->failed);
    if (self->journal)
        act_journal_clear (self->journal);
    return rc;
}

const char *
act_store_cause (act_store_t *self)
{
    s_settle (self);
    return self->backend->cause? self->backend->cause (self->impl): NULL;
}

size_t
act_store_batch (act_store_t *self)
{
    return self->batch;
}

uint64_t
act_store_generation (act_store_t *self)
{
    return self->generation;
}

bool
act_store_durable (act_store_t *self, uint64_t generation)
{
    return generation <= self->durable;
}

size_t
act_store_seal (act_store_t *self)
{
    act_journal_t *swap = self->sealed;
    self->sealed = self->journal;
    self->journal = swap;
    memcpy (self->sealed_deltas, self->deltas, sizeof self->deltas);
    memset (self->deltas, 0, sizeof self->deltas);
    self->sealed_batch = self->batch;
    self->sealed_generation = self->generation++;
    self->batch = 0;
    free (self->sealed_failed);
    self->sealed_failed = self->failed;
    self->failed = NULL;
    return self->sealed_batch;
}

int
act_store_commit_sealed (act_store_t *self, act_err_t *err)
{
    if (self->sealed_batch == 0)
        return 0;
    const char *failed = act_journal_apply (self->sealed, self->backend, self->impl);
    if (failed && !self->sealed_failed)
        self->sealed_failed = strdup (failed);
    bool doomed = self->sealed_failed != NULL;
    int rc = self->backend->commit (self->impl, self->sealed_deltas, doomed, err);
    if (doomed) {
        act_err_set (err, ACT_E_INTERNAL, "the store could not write %s; "
                     "the batch was rolled back", self->sealed_failed);
        rc = -1;
    }
    return rc;
}

void
act_store_sealed_end (act_store_t *self, int rc)
{
    if (rc == 0) {
        for (int i = 0; i < S_COUNTERS; i++)
            self->counts [i] += self->sealed_deltas [i];
        self->durable = self->sealed_generation;
    }
    memset (self->sealed_deltas, 0, sizeof self->sealed_deltas);
    self->sealed_batch = 0;
    zstr_free (&self->sealed_failed);
    act_journal_clear (self->sealed);
}

int
act_store_has_context (act_store_t *self, const char *context)
{
    s_direct (self);
    return self->backend->has_context (self->impl, context);
}

int
act_store_messages (act_store_t *self, const char *context, act_store_each_fn *fn,
                    void *arg)
{
    s_direct (self);
    return self->backend->messages (self->impl, context, fn, arg);
}

//  Add a stored message's text, read as JSON, to the array arg (a text
//  that does not read is left out)
static int
s_history_json (uint64_t seq, const char *text, size_t size, void *arg)
{
    (void) seq;
    json_t *message = act_json_parse_stored (text, size, NULL);
    if (message)
        json_array_append_new ((json_t *) arg, message);
    return 0;
}

json_t *
act_store_history (act_store_t *self, const char *context, uint64_t from, size_t limit,
                   size_t max_bytes)
{
    s_direct (self);
    json_t *page = json_array ();
    if (self->backend->history (self->impl, context, from, limit, max_bytes,
                                s_history_json, page))
    {
        json_decref (page);
        page = NULL;
    }
    return page;
}

int
act_store_history_texts (act_store_t *self, const char *context, uint64_t from,
                         size_t limit, size_t max_bytes, act_store_text_fn *fn, void *arg)
{
    s_direct (self);
    return self->backend->history (self->impl, context, from, limit, max_bytes, fn, arg);
}

int
act_store_call (act_store_t *self, uint64_t call_id, json_t **record)
{
    s_direct (self);
    *record = NULL;
    int rc = self->backend->call (self->impl, call_id, record);
    if (rc != 1) {
        json_decref (*record);
        *record = NULL;
    }
    return rc;
}

int
act_store_idem (act_store_t *self, const char *context, const char *key, uint64_t *call_id)
{
    s_direct (self);
    *call_id = 0;
    int rc = self->backend->idem (self->impl, context, key, call_id);
    if (rc != 1)
        *call_id = 0;
    return rc;
}

int
act_store_pending (act_store_t *self, act_store_each_fn *fn, void *arg)
{
    s_direct (self);
    return self->backend->pending (self->impl, fn, arg);
}

int
act_store_last_call (act_store_t *self, uint64_t *call_id)
{
    s_direct (self);
    *call_id = 0;
    int rc = self->backend->last_call (self->impl, call_id);
    if (rc)
        *call_id = 0;
    return rc;
}

json_t *
act_store_counts (act_store_t *self)
{
    //  A shared store: other brokers commit too, so the committed totals
    //  are read again (one small query); if that fails, the last ones read
    if (act_store_shared (self)) {
        s_direct (self);
        int64_t fresh [S_COUNTERS];
        if (self->backend->counters (self->impl, fresh) == 0)
            memcpy (self->counts, fresh, sizeof fresh);
    }
    int64_t total [S_COUNTERS];
    for (int i = 0; i < S_COUNTERS; i++)
        total [i] = self->counts [i] + self->sealed_deltas [i] + self->deltas [i];
    json_t *calls = json_object ();
    for (int i = S_ACCEPTED; i <= S_CANCELLED; i++)
        json_object_set_new (calls, act_store_counter_names [i], json_integer (total [i]));
    return json_pack ("{sIsIsIso}", "contexts", (json_int_t) total [S_CONTEXTS],
                      "messages", (json_int_t) total [S_MESSAGES],
                      "deleted", (json_int_t) total [S_DELETED], "calls", calls);
}

uint64_t
act_store_next_call (act_store_t *self)
{
    if (self->backend->next_call) {
        //  From the block of ids in hand, with no statement: a commit in
        //  flight is not waited for, but once a block
        uint64_t id = self->backend->next_call (self->impl, false);
        if (id)
            return id;
        s_direct (self);
        return self->backend->next_call (self->impl, true);
    }
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
    s_direct (self);
    return self->backend->join? self->backend->join (self->impl, id, endpoint, lease_ms, err): 0;
}

void
act_store_on_wait (act_store_t *self, act_store_wait_fn *fn, void *arg)
{
    if (self->backend->on_wait)
        self->backend->on_wait (self->impl, fn, arg);
}

int
act_store_claim (act_store_t *self, const char *context, char **owner)
{
    s_direct (self);
    return self->backend->claim? self->backend->claim (self->impl, context, owner): 1;
}

int
act_store_renew (act_store_t *self)
{
    s_direct (self);
    return self->backend->renew? self->backend->renew (self->impl): 0;
}

const char *
act_store_elsewhere (act_store_t *self, const char *key)
{
    //  Reads only what the last renewal or claim left: the commit in
    //  flight may go on
    return self->backend->elsewhere? self->backend->elsewhere (self->impl, key): NULL;
}

int
act_store_timeout (act_store_t *self, long long ms)
{
    s_direct (self);
    return self->backend->timeout? self->backend->timeout (self->impl, ms): 0;
}

void
act_store_abort (act_store_t *self)
{
    //  The commit in flight ends first; what was not given to the backend
    //  is simply forgotten, after the backend's rollback (which may hold
    //  the journal's texts)
    s_settle (self);
    if (self->batch) {
        act_err_t err = { 0 };
        self->backend->commit (self->impl, self->deltas, true, &err);
    }
    if (self->journal)
        act_journal_clear (self->journal);
    memset (self->deltas, 0, sizeof self->deltas);
    self->batch = 0;
    zstr_free (&self->failed);
}

int
act_store_leave (act_store_t *self)
{
    s_direct (self);
    return self->backend->leave? self->backend->leave (self->impl): 0;
}

int
act_store_contexts_pending (act_store_t *self, bool mine, act_store_each_fn *fn, void *arg)
{
    s_direct (self);
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
    s_direct (self);
    if (self->backend->pending_in)
        return self->backend->pending_in (self->impl, context, fn, arg);
    s_filter_t filter = { context, fn, arg };
    return self->backend->pending (self->impl, s_filter, &filter);
}


//  --------------------------------------------------------------------------
//  The lifecycle of contexts

json_t *
act_store_contexts (act_store_t *self, const char *prefix, const char *after, size_t limit)
{
    s_direct (self);
    prefix = prefix? prefix: "";
    after = after? after: "";
    //  Context ids are printable ASCII (SEMANTICS.md 1): a prefix with any
    //  other byte names none. The ids starting with prefix are then those
    //  in [prefix, prefix with its last byte + 1), a range of the index.
    size_t length = strlen (prefix);
    for (size_t i = 0; i < length; i++)
        if ((unsigned char) prefix [i] < 0x21 || (unsigned char) prefix [i] > 0x7e)
            return json_array ();
    if (limit == 0)
        return json_array ();
    //  "\x7f" is above every id; the range starts at the greater of prefix
    //  and after (one bound, so that a page is one range scan)
    char *end = strdup (length? prefix: "\x7f");
    if (length)
        end [length - 1]++;
    const char *from = strcmp (after, prefix) > 0? after: prefix;
    json_t *page = self->backend->contexts (self->impl, from, end, after, limit);
    free (end);
    return page;
}

int
act_store_delete_context (act_store_t *self, const char *context, size_t *messages)
{
    s_direct (self);
    size_t held = 0;
    int rc = self->backend->delete_context (self->impl, context, &held);
    if (rc == 1) {
        self->deltas [S_CONTEXTS]--;
        self->deltas [S_MESSAGES] -= (int64_t) held;
        self->deltas [S_DELETED]++;
    }
    if (messages)
        *messages = rc == 1? held: 0;
    return s_counted (self, rc, "a context's deletion");
}

int
act_store_append_key (act_store_t *self, const char *context, const char *key,
                      uint64_t *seq)
{
    s_direct (self);
    *seq = 0;
    size_t length = key? strlen (key): 0;
    if (length == 0 || length > ACT_STORE_KEY_MAX)
        return 0;
    int rc = self->backend->append_key (self->impl, context, key, seq);
    if (rc != 1)
        *seq = 0;
    return rc;
}

int
act_store_put_append_key (act_store_t *self, const char *context, const char *key,
                          uint64_t seq)
{
    size_t length = key? strlen (key): 0;
    if (length == 0 || length > ACT_STORE_KEY_MAX || !context)
        return -1;              //  Refused: nothing written, the batch is whole
    int rc = self->journal? act_journal_append_key (self->journal, context, key, seq)
                          : self->backend->put_append_key (self->impl, context, key, seq);
    return s_counted (self, rc, "an APPEND key");
}

int
act_store_idle_contexts (act_store_t *self, const char *before_date, size_t limit,
                         act_store_each_fn *fn, void *arg)
{
    s_direct (self);
    if (!before_date || limit == 0)
        return 0;
    return self->backend->idle_contexts (self->impl, before_date, limit, fn, arg);
}

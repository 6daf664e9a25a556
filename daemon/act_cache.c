/*  =========================================================================
    act_cache - the contexts held in memory (see act_cache.h).
    ========================================================================= */

#include "act_cache.h"

#define S_RECOVER_RETRY_MS  60000   //  How long recovery tries a store it
                                    //  cannot read again (s_recover_later)

struct _act_cache_t {
    act_settings_t *settings;   //  Limits (borrowed)
    act_store_t *store;         //  Where contexts live (borrowed)
    zhashx_t *contexts;         //  Context id -> act_context_t
    zlistx_t *adopt;            //  Ids with calls to recover, not loaded yet
    bool unlisted;              //  Those ids could not be read: read again
    long long retry_since;      //  When recovery first failed on a store
                                //  that could not be read, or 0
    act_cache_loaded_fn *loaded;    //  Recovers a loaded context's calls
    void *loaded_arg;           //  Its argument
};

static void
s_context_destroy (void **item)
{
    act_context_t *context = (act_context_t *) *item;
    if (!context)
        return;
    act_deps_destroy (&context->deps);
    act_ctx_destroy (&context->ctx);
    free (context->id);
    free (context);
    *item = NULL;
}

act_cache_t *
act_cache_new (act_settings_t *settings, act_store_t *store)
{
    act_cache_t *self = (act_cache_t *) calloc (1, sizeof (act_cache_t));
    if (!self)
        return NULL;
    self->settings = settings;
    self->store = store;
    self->contexts = zhashx_new ();
    zhashx_set_destructor (self->contexts, s_context_destroy);
    self->adopt = zlistx_new ();
    zlistx_set_destructor (self->adopt, (zlistx_destructor_fn *) zstr_free);
    return self;
}

void
act_cache_destroy (act_cache_t **self_p)
{
    if (self_p && *self_p) {
        act_cache_t *self = *self_p;
        zhashx_destroy (&self->contexts);
        zlistx_destroy (&self->adopt);
        free (self);
        *self_p = NULL;
    }
}

void
act_cache_set_loaded (act_cache_t *self, act_cache_loaded_fn *loaded, void *arg)
{
    self->loaded = loaded;
    self->loaded_arg = arg;
}

//  Replay one stored message into the context's index
static int
s_replay (const json_t *message, void *arg)
{
    act_err_t err = { 0 };
    if (act_ctx_replay ((act_ctx_t *) arg, message, &err))
        act_log (LOG_ERR, "context %s: stored message skipped: %s",
                 act_ctx_id ((act_ctx_t *) arg), err.message);
    return 0;
}

//  The store could not be read about context: when this broker's lease
//  has lapsed, the client goes to a live peer (moved) rather than coming
//  back here, refused, until the store is reachable again; to another
//  broker of its own choice (moved naming none) when this one knew no
//  live peer. True when err was so set.
static bool
s_elsewhere (act_cache_t *self, const char *id, act_err_t *err)
{
    const char *peer = act_store_elsewhere (self->store, id);
    if (peer)
        act_err_set (err, ACT_E_MOVED, "%s", peer);
    return peer != NULL;
}

//  On a shared store, own the context before using it. Returns true when
//  this broker owns it; else err says who does (moved) or that the store
//  could not tell (internal).
static bool
s_claim (act_cache_t *self, const char *id, act_err_t *err)
{
    if (!act_store_shared (self->store))
        return true;
    char *owner = NULL;
    int rc = act_store_claim (self->store, id, &owner);
    if (rc == 0)
        act_err_set (err, ACT_E_MOVED, "%s", owner? owner: "");
    else
    if (rc == -2)
        act_err_set (err, ACT_E_BUSY, "context %s: another broker's transaction holds its "
                     "lease (a broker stopped in the middle of a commit); try again", id);
    else
    if (rc < 0 && !s_elsewhere (self, id, err))
        act_err_set (err, ACT_E_INTERNAL, "the store could not tell who owns context %s", id);
    free (owner);
    return rc > 0;
}

act_context_t *
act_cache_get (act_cache_t *self, const char *id, bool create, act_err_t *err)
{
    //  Requests check their context id; an id read from the store (calls
    //  to recover, retention) is checked here, as any data from a file
    if (!id || !act_ctx_id_valid (id)) {
        act_log (LOG_ERR, "store: a stored context id is not valid (%s): left alone",
                 id? id: "none");
        act_err_set (err, ACT_E_INTERNAL, "the stored context id is not valid");
        return NULL;
    }
    act_context_t *context = (act_context_t *) zhashx_lookup (self->contexts, id);
    if (context) {
        context->used = act_clock_ms ();
        return context;
    }
    int stored = act_store_has_context (self->store, id);
    if (stored < 0) {
        if (!s_elsewhere (self, id, err))
            act_err_set (err, ACT_E_INTERNAL, "the store could not tell whether context %s "
                         "exists", id);
        return NULL;
    }
    if (!stored && !create) {
        act_err_set (err, ACT_E_NOT_FOUND, "no context %s", id);
        return NULL;
    }
    if (!s_claim (self, id, err))
        return NULL;
    context = calloc (1, sizeof *context);
    context->id = strdup (id);
    context->ctx = act_ctx_new (id);
    context->stored = stored > 0;
    context->deps = act_deps_new ();
    context->used = act_clock_ms ();
    //  Read with the writes of the batch not committed yet (a context
    //  evicted and loaded again at once): none counts as durable before
    //  the current batch is
    context->written = act_store_generation (self->store);
    if (stored && act_store_messages (self->store, id, s_replay, context->ctx)) {
        s_context_destroy ((void **) &context);
        act_err_set (err, ACT_E_INTERNAL, "the store could not read context %s", id);
        return NULL;
    }
    zhashx_insert (self->contexts, id, context);
    //  Its calls that had not ended come back with it (after a restart, or
    //  a takeover from a dead broker)
    if (stored && self->loaded)
        self->loaded (self->loaded_arg, context);
    return context;
}

act_context_t *
act_cache_lookup (act_cache_t *self, const char *id)
{
    return (act_context_t *) zhashx_lookup (self->contexts, id);
}

void
act_cache_release (act_cache_t *self, act_context_t *context)
{
    if (context && !context->stored && context->live == 0)
        zhashx_delete (self->contexts, context->id);
}

void
act_cache_forget (act_cache_t *self, const char *id)
{
    zhashx_delete (self->contexts, id);
}

void
act_cache_store (act_cache_t *self, act_context_t *context)
{
    if (!context->stored) {
        act_store_put_context (self->store, context->id);
        context->stored = true;
    }
}

static int
s_compare_used (const void *a, const void *b)
{
    long long left = (*(act_context_t * const *) a)->used;
    long long right = (*(act_context_t * const *) b)->used;
    return left < right? -1: left > right;
}

void
act_cache_evict (act_cache_t *self, long long now)
{
    size_t loaded = zhashx_size (self->contexts);
    act_context_t **idle = malloc ((loaded + 1) * sizeof (act_context_t *));
    size_t count = 0;
    for (act_context_t *context = zhashx_first (self->contexts); context;
         context = zhashx_next (self->contexts))
        if (context->live == 0 && context->stored)
            idle [count++] = context;
    qsort (idle, count, sizeof (act_context_t *), s_compare_used);
    size_t most = (size_t) self->settings->max_contexts;
    size_t excess = loaded > most? loaded - most: 0;
    size_t evicted = 0;
    for (size_t i = 0; i < count; i++)
        if (i < excess || now - idle [i]->used > self->settings->context_idle_ms) {
            zhashx_delete (self->contexts, idle [i]->id);
            evicted++;
        }
    if (evicted)
        act_log (LOG_DEBUG, "%zu contexts left memory (%zu loaded)", evicted,
                 zhashx_size (self->contexts));
    free (idle);
}

//  Recovery could not read the store (why): true while it is tried again
//  at the next passes, for S_RECOVER_RETRY_MS after the first failure
//  (PostgreSQL restarting, a connection lost), so that the calls still
//  running at their workers are taken back rather than run again; then
//  false, and what is left is recovered when a request loads it
static bool
s_recover_later (act_cache_t *self, const char *why)
{
    long long now = act_clock_ms ();
    if (!self->retry_since)
        self->retry_since = now;
    bool again = now - self->retry_since < S_RECOVER_RETRY_MS;
    act_log_burst (again? LOG_NOTICE: LOG_WARNING, "recovery waits for the store",
                   "recovery: %s; %s", why, again? "trying again": "given up");
    if (!again) {
        self->unlisted = false;
        self->retry_since = 0;
    }
    return again;
}

static int
s_adopt_later (const json_t *context, void *arg)
{
    zlistx_add_end ((zlistx_t *) arg, strdup (json_string_value (context)));
    return 0;
}

size_t
act_cache_recover (act_cache_t *self)
{
    zlistx_purge (self->adopt);
    self->unlisted = act_store_contexts_pending (self->store, true, s_adopt_later,
                                                 self->adopt) != 0;
    if (self->unlisted) {
        zlistx_purge (self->adopt);
        return s_recover_later (self, "the contexts with calls to recover could not be "
                                "listed")? 1: 0;
    }
    self->retry_since = 0;
    if (zlistx_size (self->adopt))
        act_log (LOG_NOTICE, "recovering the calls that had not ended in %zu contexts",
                 zlistx_size (self->adopt));
    return zlistx_size (self->adopt);
}

size_t
act_cache_adopt (act_cache_t *self, size_t count)
{
    if (self->unlisted && act_cache_recover (self) == 0)
        return 0;
    for (size_t i = 0; i < count && zlistx_size (self->adopt) && !self->unlisted; i++) {
        char *id = zlistx_detach (self->adopt, NULL);
        act_err_t err = { 0 };
        if (zhashx_lookup (self->contexts, id) || act_cache_get (self, id, false, &err))
            free (id);
        else
        if (err.code && (streq (err.code, ACT_E_INTERNAL) || streq (err.code, ACT_E_BUSY))
        &&  act_ctx_id_valid (id) && s_recover_later (self, err.message)) {
            zlistx_add_end (self->adopt, id);
            break;              //  The store cannot be read now: next pass
        }
        else {
            act_log (LOG_WARNING, "context %s not recovered: %s", id, err.message);
            free (id);
        }
    }
    return zlistx_size (self->adopt) + (self->unlisted? 1: 0);
}

//  A context another broker left behind (its lease ran out) with calls
//  not ended: taking it over recovers them
static int
s_adopt_orphan (const json_t *context, void *arg)
{
    act_cache_t *self = (act_cache_t *) arg;
    act_err_t err = { 0 };
    const char *id = json_string_value (context);
    if (!zhashx_lookup (self->contexts, id) && act_cache_get (self, id, false, &err))
        act_log (LOG_NOTICE, "took over context %s from a broker whose lease ran out", id);
    return 0;
}

size_t
act_cache_adopt_orphans (act_cache_t *self)
{
    size_t before = zhashx_size (self->contexts);
    act_store_contexts_pending (self->store, false, s_adopt_orphan, self);
    return zhashx_size (self->contexts) - before;
}

void
act_cache_clear (act_cache_t *self)
{
    zhashx_purge (self->contexts);
    zlistx_purge (self->adopt);
}

size_t
act_cache_size (act_cache_t *self)
{
    return zhashx_size (self->contexts);
}

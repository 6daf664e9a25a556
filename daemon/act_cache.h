/*  =========================================================================
    act_cache - the contexts this broker holds in memory: loaded from the
    store on first use, evicted when idle, and, on a shared store, claimed
    through a lease before they are used.

    A context comes back with the calls of it that had not ended: the
    cache calls the loaded hook (the call flow's recovery) for each stored
    context it loads. At start, and when a dead broker's leases run out,
    the contexts with such calls are adopted a batch at a time, so the
    broker answers from its first pass however much there is to recover.
    ========================================================================= */

#ifndef ACT_CACHE_H_INCLUDED
#define ACT_CACHE_H_INCLUDED

#include "act_settings.h"
#include "act_deps.h"

typedef struct _act_cache_t act_cache_t;

//  A context held in memory
typedef struct {
    char *id;                   //  Context id
    act_ctx_t *ctx;             //  Its messages and their index
    bool stored;                //  The store knows the context
    act_deps_t *deps;           //  Live output targets of its calls
    size_t live;                //  Its calls not ended (it stays while any)
    long long used;             //  Last use, for eviction
    uint64_t written;           //  The store's batch (act_store_generation)
                                //  that last wrote a message of it, or
                                //  the batch in which it was loaded
} act_context_t;

//  Called when a stored context has been loaded, to recover its calls
typedef void (act_cache_loaded_fn) (void *arg, act_context_t *context);

//  A cache over store, with settings' limits (both borrowed).
act_cache_t *act_cache_new (act_settings_t *settings, act_store_t *store);

//  Destroy the cache and its contexts, and null the pointer; safe on NULL.
void act_cache_destroy (act_cache_t **self_p);

//  Set the hook called after a stored context is loaded.
void act_cache_set_loaded (act_cache_t *self, act_cache_loaded_fn *loaded, void *arg);

//  The context named id, loaded, when this broker may serve it: from the
//  store if it is there; else, with create, a new one the store learns of
//  when something is accepted (act_cache_store). On a shared store it is
//  first claimed (taken over when its owner is dead). Returns NULL with
//  err set: not_found (no such context, create off), moved (another live
//  broker owns it; the message is its client endpoint), internal (among
//  others when the store could not be read: never taken for not_found).
act_context_t *act_cache_get (act_cache_t *self, const char *id, bool create,
                              act_err_t *err);

//  The context if it is in memory now, without loading it; else NULL.
act_context_t *act_cache_lookup (act_cache_t *self, const char *id);

//  Forget a context made for a request that was refused (one the store
//  does not know and no call holds); safe on NULL.
void act_cache_release (act_cache_t *self, act_context_t *context);

//  Forget the context from memory (deleted: no call of it is live).
void act_cache_forget (act_cache_t *self, const char *id);

//  Make sure the store knows the context (on its first accepted write).
void act_cache_store (act_cache_t *self, act_context_t *context);

//  Let idle contexts leave memory: those with no live call unused for
//  context_idle_ms, and the least recently used beyond max_contexts.
void act_cache_evict (act_cache_t *self, long long now);

//  List the contexts with calls not ended that this broker owns (at
//  start, and after reloading state), to be adopted by act_cache_adopt.
//  Returns how many there are.
size_t act_cache_recover (act_cache_t *self);

//  Load up to count contexts of the recovery list. Returns how many remain.
size_t act_cache_adopt (act_cache_t *self, size_t count);

//  Shared store: take over the contexts with calls not ended whose broker
//  is dead. Returns how many were taken.
size_t act_cache_adopt_orphans (act_cache_t *self);

//  Forget every context (after the store was lost, or to reload state).
void act_cache_clear (act_cache_t *self);

//  Contexts in memory.
size_t act_cache_size (act_cache_t *self);

#endif

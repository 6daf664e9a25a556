/*  =========================================================================
    act_deps - one context's dependency index: which live calls could
    still write where a call reads (SEMANTICS.md section 7).

    Each live call with an output path registers every target of every
    alternative. A lookup finds the earlier calls with a target that may
    write the reference read (act_ref_may_write: same kind, one path a
    prefix of the other, "-" matching any segment; a global target feeds
    any read, an instance target only reads of its instance). The index
    is a trie of path segments per kind, so a lookup costs the depth of
    the path plus the targets on it and below it, never a scan of the
    context's calls.
    ========================================================================= */

#ifndef ACT_DEPS_H_INCLUDED
#define ACT_DEPS_H_INCLUDED

#include <czmq.h>
#include "actd/act_ref.h"

typedef struct _act_deps_t act_deps_t;
typedef struct _act_producer_t act_producer_t;

//  An empty index; NULL when out of memory.
act_deps_t *act_deps_new (void);

//  Destroy the index and null the pointer; safe on NULL. Registrations
//  still held must be unregistered first.
void act_deps_destroy (act_deps_t **self_p);

//  Register every target of output (written in instance, NULL: global)
//  for the call numbered number; lookups give back owner. Returns the
//  registration to unregister later, or NULL when output is NULL.
act_producer_t *act_deps_register (act_deps_t *self, const act_expr_t *output,
                                   const char *instance, uint64_t number, void *owner);

//  Remove a registration and null the pointer; safe on NULL.
void act_deps_unregister (act_deps_t *self, act_producer_t **producer_p);

//  Add to found (once each per lookup) the owners of calls numbered below
//  reader whose targets may write ref as read in instance. Returns how
//  many targets matched, found before or not (0: nothing can write it).
size_t act_deps_find (act_deps_t *self, const act_ref_t *ref, const char *instance,
                      uint64_t reader, zlistx_t *found);

//  Registrations held.
size_t act_deps_size (act_deps_t *self);

//  Steps every index's lookups took in this process so far: nodes and
//  targets looked at. Tests bound what a lookup costs with it.
size_t act_deps_visits (void);

#endif

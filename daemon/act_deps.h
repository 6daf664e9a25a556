/*  =========================================================================
    act_deps - one context's dependency index: which live calls could
    still write where a call reads (SEMANTICS.md section 7).

    Each live call with an output path registers every target of every
    alternative. A lookup finds the earlier calls with a target that may
    write the reference read (act_ref_may_write: same kind, one path a
    prefix of the other, "-" matching any segment; a global target feeds
    any read, an instance target only reads of its instance). The index
    is a trie of path segments per kind; at each node, the targets at
    its path and those at its path or under it are kept in lists in the
    order of their calls' numbers, one of each per scope (global, each
    instance). So act_deps_bound, the lookup a call's evaluation makes,
    costs the nodes on the path (more under "-" targets) and the ends of
    their lists, never a walk of the targets: a PLAN of n calls each
    reading what all the earlier ones write costs n lookups of a few
    steps, not n^2/2 (an audit of what one request can cost).
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
//  Costs every target matched: for tests and diagnostics, not for each
//  evaluation (act_deps_bound).
size_t act_deps_find (act_deps_t *self, const act_ref_t *ref, const char *instance,
                      uint64_t reader, zlistx_t *found);

//  The newest and the oldest of some calls that may write (owners; both
//  NULL while none is known)
typedef struct {
    void *newest;               //  Owner of the highest numbered
    uint64_t newest_number;     //  Its number
    void *oldest;               //  Owner of the lowest numbered
    uint64_t oldest_number;     //  Its number
} act_deps_bounds_t;

//  Widen bounds with the newest and the oldest of the calls act_deps_find
//  would find. Returns true when any call can write ref as read in
//  instance. Costs the nodes on ref's path, and at each of their lists
//  the fewer of its targets numbered below reader and above it.
bool act_deps_bound (act_deps_t *self, const act_ref_t *ref, const char *instance,
                     uint64_t reader, act_deps_bounds_t *bounds);

//  Registrations held.
size_t act_deps_size (act_deps_t *self);

//  Steps every index's lookups took in this process so far: nodes and
//  targets looked at. Tests bound what a lookup costs with it.
size_t act_deps_visits (void);

#endif

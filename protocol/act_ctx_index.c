/*  =========================================================================
    act_ctx_index - the kinds and identities of a context, and reading,
    checking and applying a write in one scope (global or an instance).

    Global scope. Global writes of a kind are never skipped by the fold:
    each one was checked against exactly the state the fold gives before
    it. So the fold of a kind's global writes is kept as one document,
    changed in place by each write, and a global read is a walk down the
    path: O(depth), whatever the length of the context.

    Instance scope. An instance's writes are kept in a trie by path and
    read through act_ctx_instance_base (act_ctx_trie.c).
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_json.h"
#include "act_ctx_int.h"


//  --------------------------------------------------------------------------
//  Kinds and identities

//  Free a kind's document and instance map; its identities belong to the
//  context's list, which frees them
void
act_ctx_kind_destroy (void **item)
{
    act_ctx_kind_t *kind = (act_ctx_kind_t *) *item;
    if (!kind)
        return;
    zhashx_destroy (&kind->instances);
    json_decref (kind->doc);
    free (kind->name);
    free (kind);
    *item = NULL;
}

//  Free an identity with its write trie and cached folds
void
act_ctx_ident_destroy (void **item)
{
    act_ctx_ident_t *ident = (act_ctx_ident_t *) *item;
    if (!ident)
        return;
    act_ctx_node_destroy (&ident->root);
    zhashx_destroy (&ident->cache);
    json_decref (ident->description);
    json_decref (ident->schema);
    free (ident->instance);
    free (ident);
    *item = NULL;
}

//  The kind named name, created empty when it has none yet
act_ctx_kind_t *
act_ctx_kind_require (act_ctx_t *self, const char *name)
{
    act_ctx_kind_t *kind = (act_ctx_kind_t *) zhashx_lookup (self->kinds, name);
    if (!kind) {
        kind = calloc (1, sizeof *kind);
        kind->name = strdup (name);
        zhashx_insert (self->kinds, name, kind);
    }
    return kind;
}

//  The identity (kind, instance), created (and shown in the view from now
//  on) when create is set
act_ctx_ident_t *
act_ctx_ident (act_ctx_t *self, act_ctx_kind_t *kind, const char *instance, bool create)
{
    act_ctx_ident_t *ident = instance
        ? (kind->instances? zhashx_lookup (kind->instances, instance): NULL)
        : kind->global;
    if (!ident && create) {
        ident = calloc (1, sizeof *ident);
        ident->kind = kind;
        if (instance) {
            ident->instance = strdup (instance);
            ident->root = act_ctx_node_new ();
            if (!kind->instances)
                kind->instances = zhashx_new ();
            zhashx_insert (kind->instances, instance, ident);
        }
        else
            kind->global = ident;
        zlistx_add_end (self->identities, ident);
    }
    return ident;
}


//  --------------------------------------------------------------------------
//  Writes in a scope

//  The value at segs in scope (kind, ident); ident NULL: global or an
//  instance with no writes. Returns a new reference, or NULL when absent.
json_t *
act_ctx_scope_read (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                    const act_seg_t *segs, size_t nsegs)
{
    if (!kind)
        return NULL;
    if (!ident || !ident->root) {
        act_ctx_lazy_force (kind, segs, nsegs, ACT_CTX_LAZY_DEEP);
        json_t *value = act_path_get (kind->doc, segs, nsegs);
        return value? json_deep_copy (value): NULL;
    }
    json_t *base;
    size_t depth;
    bool shared;
    ident->visited = 0;
    if (!act_ctx_instance_base (kind, ident, segs, nsegs, false, &base, &depth, &shared))
        return NULL;
    //  A whole-kind reference has no segments (segs may be NULL)
    json_t *value = act_path_get (base, nsegs > depth? segs + depth: NULL,
                                  nsegs - depth);
    value = value == base && !shared? json_incref (value): json_deep_copy (value);
    json_decref (base);
    return value;
}

char *
act_ctx_scope_dump (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                    const act_seg_t *segs, size_t nsegs, size_t max, bool *found)
{
    *found = false;
    json_t *base = NULL, *value = NULL;
    size_t depth = 0;
    bool shared;
    if (!kind)
        return NULL;
    if (!ident || !ident->root) {
        act_ctx_lazy_force (kind, segs, nsegs, ACT_CTX_LAZY_DEEP);
        value = act_path_get (kind->doc, segs, nsegs);
    }
    else {
        ident->visited = 0;
        if (act_ctx_instance_base (kind, ident, segs, nsegs, false, &base, &depth, &shared))
            value = act_path_get (base, nsegs > depth? segs + depth: NULL, nsegs - depth);
    }
    *found = value != NULL;
    char *text = value? act_json_dump_within (value, max): NULL;
    json_decref (base);
    return text;
}

//  What a global write by method reads at its path: set and erase replace
//  it, push needs only its type; the others combine with all of it
static act_ctx_lazy_reach_t
s_reach (act_method_t method)
{
    return method == ACT_SET || method == ACT_ERASE? ACT_CTX_LAZY_ABOVE
         : method == ACT_PUSH? ACT_CTX_LAZY_NODE: ACT_CTX_LAZY_DEEP;
}

//  Check a write in scope (kind, instance), without changing anything: 0,
//  or -1 with err set
int
act_ctx_scope_check (act_ctx_t *self, act_ctx_kind_t *kind, const char *instance,
                     const act_seg_t *segs, size_t nsegs, act_method_t method,
                     const json_t *value, act_err_t *err)
{
    act_ctx_ident_t *ident = instance? act_ctx_ident (self, kind, instance, false): NULL;
    if (!ident) {
        if (method == ACT_CONCAT && act_ctx_lazy_concat (kind, segs, nsegs, value, true))
            return 0;
        act_ctx_lazy_force (kind, segs, nsegs, s_reach (method));
        return act_path_write (&kind->doc, segs, nsegs, method, value, true, err);
    }
    //  The value's own rules come first, as in the global scope: a refused
    //  write gets the same code in every scope
    if (act_method_check_value (method, value, err))
        return -1;
    ident->visited = 0;
    //  set, merge and erase on a path of keys apply to whatever is there:
    //  only an array on a level above can refuse them, and those levels
    //  follow from the writes above the path, not from the path's own
    int blocked = act_ctx_instance_blocked (kind, ident, segs, nsegs, method);
    if (blocked == 0)
        return 0;
    if (blocked == 1)
        return act_err_set (err, ACT_E_BAD_PATH, "the path runs through an array by a key");
    json_t *base;
    size_t depth;
    bool shared;                //  The dry run below changes nothing of it
    bool rope = method == ACT_CONCAT && json_is_string (value);
    if (!act_ctx_instance_base (kind, ident, segs, nsegs, rope, &base, &depth, &shared))
        return act_err_set (err, ACT_E_BAD_PATH,
                            "the path runs through an array by a key");
    //  A rope at the path holds a string, onto which a string concats
    int rc = rope && depth == nsegs && act_ctx_lazy_rope_is (base)? 0
           : act_path_write (&base, nsegs > depth? segs + depth: NULL,
                             nsegs - depth, method, value, true, err);
    json_decref (base);
    return rc;
}

//  Apply a write that act_ctx_scope_check accepted
void
act_ctx_scope_apply (act_ctx_t *self, act_ctx_kind_t *kind, const char *instance,
                     uint64_t seq, const act_seg_t *segs, size_t nsegs,
                     act_method_t method, const json_t *value)
{
    act_ctx_ident_t *ident = act_ctx_ident (self, kind, instance, true);
    if (instance)
        act_ctx_node_add (ident->root, seq, segs, nsegs, method, value);
    else {
        act_ctx_global_write (kind, segs, nsegs, method, value);
        kind->version++;
    }
}

void
act_ctx_global_write (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                      act_method_t method, const json_t *value)
{
    if (method == ACT_CONCAT && act_ctx_lazy_concat (kind, segs, nsegs, value, false))
        return;
    act_ctx_lazy_force (kind, segs, nsegs, s_reach (method));
    act_path_write (&kind->doc, segs, nsegs, method, value, false, NULL);
    kind->lazy |= act_ctx_lazy_is (value);
}

void
act_ctx_scope_apply_shared (act_ctx_t *self, act_ctx_kind_t *kind, const char *instance,
                            uint64_t seq, const act_seg_t *segs, size_t nsegs,
                            act_method_t method, json_t *value)
{
    if (instance)
        act_ctx_scope_apply (self, kind, instance, seq, segs, nsegs, method, value);
    else {
        act_ctx_ident (self, kind, NULL, true);
        if (!(method == ACT_CONCAT && act_ctx_lazy_concat (kind, segs, nsegs, value, false))) {
            act_ctx_lazy_force (kind, segs, nsegs, s_reach (method));
            act_path_write_shared (&kind->doc, segs, nsegs, method, value, NULL);
            kind->lazy |= act_ctx_lazy_is (value);
        }
        kind->version++;
    }
}


int
act_ctx_scope_write_shared (act_ctx_t *self, act_ctx_kind_t *kind, const act_seg_t *segs,
                            size_t nsegs, act_method_t method, json_t *value, act_err_t *err)
{
    if (method == ACT_CONCAT && act_ctx_lazy_concat (kind, segs, nsegs, value, false)) {
        act_ctx_ident (self, kind, NULL, true);
        kind->version++;
        return 0;
    }
    act_ctx_lazy_force (kind, segs, nsegs, s_reach (method));
    if (act_path_write_shared (&kind->doc, segs, nsegs, method, value, err))
        return -1;
    act_ctx_ident (self, kind, NULL, true);
    kind->lazy |= act_ctx_lazy_is (value);
    kind->version++;
    return 0;
}

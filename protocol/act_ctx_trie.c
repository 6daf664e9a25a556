/*  =========================================================================
    act_ctx_trie - the writes of one instance, in a trie by path, and the
    fold that reads a path of the instance through them.

    The fold of instance I is the global document with I's writes applied
    on top, skipping those that no longer apply. A global write can change
    what an older instance write does, so instance writes are kept, not
    folded: in a trie by path, per instance. A read at path P looks only at
    instance writes on the nodes from the root to P and below P, starting
    from the global document's value (see act_ctx_instance_base). The fold
    of a path is cached and continued while the global document does not
    change.
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_json.h"
#include "act_ctx_int.h"

//  One instance write
typedef struct {
    uint64_t seq;               //  _seq of the message that made it
    act_method_t method;        //  How it combines with what is there
    json_t *value;              //  The value written (a reference)
    act_seg_t *segs;            //  Its path, an owned copy
    size_t nsegs;               //  Length of the path
} s_write_t;

//  A node of an instance's write trie: one path
struct _act_ctx_node_t {
    zhashx_t *children;         //  Segment text -> act_ctx_node_t, NULL if none
    act_ctx_node_t *append;     //  The "-" child, NULL if none
    s_write_t **writes;         //  Writes whose path ends here, oldest first
    size_t nwrites;             //  Number of writes
    size_t capacity;            //  Slots allocated in writes
    uint64_t last;              //  Newest _seq written here or below
};

//  A tracked fold of one instance path, kept to be continued: while the
//  kind's global document does not change, the next read of the path only
//  applies the instance writes newer than the last one it saw
typedef struct {
    uint64_t version;           //  Kind's global version it was folded on
    uint64_t after;             //  Newest instance _seq it has seen
    bool arrays [ACT_MAX_SEGMENTS];  //  The levels above P'
    json_t *value;              //  Value at P', owned; NULL: absent
} s_cache_t;

//  Most paths cached per instance; past it the cache starts again
#define S_CACHE_MAX 64


//  --------------------------------------------------------------------------
//  The trie of instance writes

//  Free one write with its copies of the path and value
static void
s_write_destroy (s_write_t *write)
{
    for (size_t s = 0; s < write->nsegs; s++)
        free (write->segs [s].key);
    free (write->segs);
    json_decref (write->value);
    free (write);
}

//  An empty node: no children, no writes
act_ctx_node_t *
act_ctx_node_new (void)
{
    return calloc (1, sizeof (act_ctx_node_t));
}

//  Free the node, everything below it and all their writes
void
act_ctx_node_destroy (act_ctx_node_t **self_p)
{
    act_ctx_node_t *self = *self_p;
    if (!self)
        return;
    if (self->children) {
        for (act_ctx_node_t *child = zhashx_first (self->children); child;
             child = zhashx_next (self->children))
            act_ctx_node_destroy (&child);
        zhashx_destroy (&self->children);
    }
    act_ctx_node_destroy (&self->append);
    for (size_t i = 0; i < self->nwrites; i++)
        s_write_destroy (self->writes [i]);
    free (self->writes);
    free (self);
    *self_p = NULL;
}

//  The child for seg, created when create is set; NULL if there is none
static act_ctx_node_t *
s_node_child (act_ctx_node_t *self, const act_seg_t *seg, bool create)
{
    if (seg->type == ACT_SEG_APPEND) {
        if (!self->append && create)
            self->append = act_ctx_node_new ();
        return self->append;
    }
    act_ctx_node_t *child = self->children? zhashx_lookup (self->children, seg->key): NULL;
    if (!child && create) {
        if (!self->children)
            self->children = zhashx_new ();
        child = act_ctx_node_new ();
        zhashx_insert (self->children, seg->key, child);
    }
    return child;
}

//  Record a write at its path under root
void
act_ctx_node_add (act_ctx_node_t *root, uint64_t seq, const act_seg_t *segs,
                  size_t nsegs, act_method_t method, const json_t *value)
{
    act_ctx_node_t *node = root;
    root->last = seq;
    for (size_t i = 0; i < nsegs; i++) {
        node = s_node_child (node, &segs [i], true);
        node->last = seq;
    }
    if (node->nwrites == node->capacity) {
        node->capacity = node->capacity? node->capacity * 2: 2;
        node->writes = realloc (node->writes, node->capacity * sizeof (s_write_t *));
    }
    s_write_t *write = calloc (1, sizeof *write);
    write->seq = seq;
    write->method = method;
    write->value = json_deep_copy (value);
    write->nsegs = nsegs;
    write->segs = calloc (nsegs + 1, sizeof (act_seg_t));
    for (size_t i = 0; i < nsegs; i++) {
        write->segs [i] = segs [i];
        write->segs [i].key = strdup (segs [i].key);
    }
    node->writes [node->nwrites++] = write;
}

//  Forget the newest write at path (undo of a tentative act_ctx_node_add)
void
act_ctx_node_pop (act_ctx_node_t *root, const act_seg_t *segs, size_t nsegs)
{
    act_ctx_node_t *node = root;
    for (size_t i = 0; i < nsegs && node; i++)
        node = s_node_child (node, &segs [i], false);
    if (node && node->nwrites)
        s_write_destroy (node->writes [--node->nwrites]);
}

//  A write gathered for one read, with the depth of the node it sits on
typedef struct {
    s_write_t *write;           //  The write
    size_t depth;               //  Depth of its node from the kind's root
} s_item_t;

//  The writes gathered for one read, in no order until s_items_apply
typedef struct {
    s_item_t *items;            //  Gathered writes
    size_t size;                //  Number gathered
    size_t capacity;            //  Slots allocated
} s_items_t;

//  Gather the writes at node whose _seq is in (after, before), newest
//  first from the end of its list: older writes are never visited
static void
s_items_add_node (s_items_t *list, act_ctx_node_t *node, size_t depth,
                  uint64_t after, uint64_t before)
{
    for (size_t i = node->nwrites; i > 0 && node->writes [i - 1]->seq > after; i--) {
        if (node->writes [i - 1]->seq >= before)
            continue;
        if (list->size == list->capacity) {
            list->capacity = list->capacity * 2 + 16;
            list->items = realloc (list->items, list->capacity * sizeof (s_item_t));
        }
        list->items [list->size++] = (s_item_t) { node->writes [i - 1], depth };
    }
}

//  Gather the writes strictly below node newer than after, skipping the
//  branches where nothing is newer
static void
s_items_add_subtree (s_items_t *list, act_ctx_node_t *node, size_t depth, uint64_t after)
{
    if (node->children)
        for (act_ctx_node_t *child = zhashx_first (node->children); child;
             child = zhashx_next (node->children))
            if (child->last > after) {
                s_items_add_node (list, child, depth + 1, after, UINT64_MAX);
                s_items_add_subtree (list, child, depth + 1, after);
            }
    if (node->append && node->append->last > after) {
        s_items_add_node (list, node->append, depth + 1, after, UINT64_MAX);
        s_items_add_subtree (list, node->append, depth + 1, after);
    }
}

//  Gather the writes newer than after on the chain (chain [0 .. reached])
//  and, when the chain reaches P' (length), below it
static void
s_items_add_chain (s_items_t *list, act_ctx_node_t **chain, size_t reached,
                   size_t length, uint64_t after)
{
    for (size_t i = 0; i <= reached; i++)
        s_items_add_node (list, chain [i], i, after, UINT64_MAX);
    if (reached == length)
        s_items_add_subtree (list, chain [length], length, after);
}

//  Order of gathered writes: by _seq
static int
s_items_compare (const void *a, const void *b)
{
    uint64_t left = ((const s_item_t *) a)->write->seq;
    uint64_t right = ((const s_item_t *) b)->write->seq;
    return left < right? -1: left > right;
}


//  --------------------------------------------------------------------------
//  Reading in an instance

//  What a read at the key path P' knows about the levels above it. arrays
//  [i] tells whether the value at the first i segments is an array: a key
//  segment then finds nothing, and a write through it fails. Writes on a
//  branch beside P' never change this (they only turn absent or scalar
//  levels into objects, which a key path walks through the same way), so
//  it follows from the global document and the writes on P' itself.
typedef struct {
    const act_seg_t *segs;      //  The path P'
    size_t length;              //  Number of key segments in P'
    bool *arrays;               //  arrays [i] for i < length
    json_t *value;              //  Value at P', owned; NULL: absent
    bool keep_value;            //  False: follow only the levels above P'
} s_track_t;

//  Level depth now holds value (borrowed): derive the levels below it
static void
s_track_set (s_track_t *track, size_t depth, const json_t *value)
{
    const json_t *current = value;
    for (size_t i = depth; i < track->length; i++) {
        track->arrays [i] = json_is_array (current);
        current = json_is_object (current)
                ? json_object_get (current, track->segs [i].key): NULL;
    }
    json_decref (track->value);
    track->value = current && track->keep_value? json_deep_copy (current): NULL;
}

//  Level depth is now absent, and everything below it
static void
s_track_clear (s_track_t *track, size_t depth)
{
    for (size_t i = depth; i < track->length; i++)
        track->arrays [i] = false;
    json_decref (track->value);
    track->value = NULL;
}

//  A merge of the object patch at level depth (< length). Along P' the
//  patch either stops (the rest is untouched), deletes, replaces, or merges
//  into P' itself; every level it passes becomes an object.
static void
s_track_merge (s_track_t *track, size_t depth, const json_t *patch)
{
    for (size_t i = depth; ; i++) {
        if (track->arrays [i])
            s_track_clear (track, i + 1);   //  An array becomes {}
        track->arrays [i] = false;
        json_t *member = json_object_get (patch, track->segs [i].key);
        if (!member)
            return;
        if (json_is_null (member)) {
            s_track_clear (track, i + 1);
            return;
        }
        if (!json_is_object (member)) {
            s_track_set (track, i + 1, member);
            return;
        }
        if (i + 1 == track->length) {
            if (track->keep_value)
                track->value = act_merge_patch (track->value, member);
            return;
        }
        patch = member;
    }
}

//  True when a level above depth (and above the end of P') is an array:
//  a key through it finds nothing, and a write through it fails
static bool
s_track_blocked (s_track_t *track, size_t depth)
{
    for (size_t i = 0; i < depth && i < track->length; i++)
        if (track->arrays [i])
            return true;
    return false;
}

//  Apply one gathered write to the tracked state
static void
s_track_apply (s_track_t *track, s_item_t *item)
{
    s_write_t *write = item->write;
    if (item->depth < track->length) {
        if (s_track_blocked (track, item->depth))
            return;             //  The write failed: a key through an array
        if (write->method == ACT_ERASE)
            s_track_clear (track, item->depth);
        else
        if (write->method == ACT_MERGE && json_is_object (write->value))
            s_track_merge (track, item->depth, write->value);
        else
            s_track_set (track, item->depth, write->value);
    }
    else
    if (track->keep_value && !s_track_blocked (track, track->length))
        act_path_write (&track->value, write->segs + track->length,
                        write->nsegs - track->length, write->method,
                        write->value, false, NULL);
}

//  Start from the global document: the levels of P' and its value there
static void
s_track_reset (s_track_t *track, const json_t *doc)
{
    s_track_set (track, 0, doc);
}

//  Apply the gathered writes in _seq order, then empty the list
static void
s_items_apply (s_track_t *track, s_items_t *list)
{
    if (list->size)
        qsort (list->items, list->size, sizeof (s_item_t), s_items_compare);
    for (size_t i = 0; i < list->size; i++)
        s_track_apply (track, &list->items [i]);
    list->size = 0;
}

//  True when the write, at a level above P', replaces everything below its
//  own level whatever was there
static bool
s_replaces (s_item_t *item, size_t length)
{
    act_method_t method = item->write->method;
    return item->depth <= length
        && (method == ACT_SET || method == ACT_ERASE
        ||  (method == ACT_MERGE && !json_is_object (item->write->value)));
}

//  zhashx destructor of a cached fold
static void
s_cache_destroy (void **item)
{
    s_cache_t *cache = (s_cache_t *) *item;
    json_decref (cache->value);
    free (cache);
    *item = NULL;
}

//  The tracked fold of P' (track->segs, track->length) through the writes
//  on the chain (chain [0 .. reached]) and below it, from the global
//  document, starting at the newest write that replaced P' when the
//  levels above that write let it apply
static void
s_track_fold (s_track_t *track, act_ctx_kind_t *kind, act_ctx_node_t **chain, size_t reached,
              s_items_t *list)
{
    s_track_reset (track, kind->doc);

    //  The newest write on P' or above it that replaces P': scan each node
    //  of the chain from its newest write back to its newest replacing one
    s_item_t newest = { NULL, 0 };
    for (size_t i = 0; i <= reached; i++)
        for (size_t w = chain [i]->nwrites; w > 0; w--) {
            s_item_t item = { chain [i]->writes [w - 1], i };
            if (newest.write && item.write->seq < newest.write->seq)
                break;
            if (s_replaces (&item, track->length)) {
                newest = item;
                break;
            }
        }
    bool replayed = false;
    if (newest.write) {
        //  The levels above it at its time come from the writes above it
        for (size_t i = 0; i < newest.depth; i++)
            s_items_add_node (list, chain [i], i, 0, newest.write->seq);
        s_items_apply (track, list);
        if (!s_track_blocked (track, newest.depth)) {
            s_track_apply (track, &newest);
            s_items_add_chain (list, chain, reached, track->length, newest.write->seq);
            s_items_apply (track, list);
            replayed = true;
        }
        else
            s_track_reset (track, kind->doc);
    }
    if (!replayed) {
        //  Everything on the path, from the global document
        s_items_add_chain (list, chain, reached, track->length, 0);
        s_items_apply (track, list);
    }
}

//  For a set, merge or erase at a path of keys in instance ident: 1 when a
//  level above the path is an array (the write fails), 0 when none is, -1
//  when this cannot tell (another method or path, or a push, concat or
//  assign above the path: use act_ctx_instance_base)
int
act_ctx_instance_blocked (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                          const act_seg_t *segs, size_t nsegs, act_method_t method)
{
    if (method != ACT_SET && method != ACT_MERGE && method != ACT_ERASE)
        return -1;
    for (size_t i = 0; i < nsegs; i++)
        if (segs [i].type != ACT_SEG_KEY)
            return -1;
    act_ctx_node_t *node = ident->root;
    s_items_t list = { NULL, 0, 0 };
    for (size_t i = 0; i < nsegs && node; i++) {
        for (size_t w = 0; w < node->nwrites; w++) {
            act_method_t above = node->writes [w]->method;
            if (above == ACT_PUSH || above == ACT_CONCAT || above == ACT_ASSIGN) {
                free (list.items);
                return -1;
            }
        }
        s_items_add_node (&list, node, i, 0, UINT64_MAX);
        node = s_node_child (node, &segs [i], false);
    }
    bool arrays [ACT_MAX_SEGMENTS];
    s_track_t track = { segs, nsegs, arrays, NULL, false };
    act_ctx_lazy_force (kind, segs, nsegs, ACT_CTX_LAZY_ABOVE);
    s_track_reset (&track, kind->doc);
    s_items_apply (&track, &list);
    free (list.items);
    return s_track_blocked (&track, nsegs)? 1: 0;
}

//  The trie nodes along the key path segs [0 .. length): chain [0] is the
//  root. Returns reached: chain [0 .. reached] exist
static size_t
s_chain (act_ctx_ident_t *ident, const act_seg_t *segs, size_t length,
         act_ctx_node_t **chain)
{
    size_t reached = 0;
    chain [0] = ident->root;
    while (reached < length) {
        act_ctx_node_t *child = s_node_child (chain [reached], &segs [reached], false);
        if (!child)
            break;
        chain [++reached] = child;
    }
    return reached;
}

//  True when a push, concat or assign sits on a strict ancestor of P' (a
//  chain node above length). Sets *shallowest to the shallowest chain node
//  with writes (reached + 1: none has any)
static bool
s_chain_complex (act_ctx_node_t **chain, size_t reached, size_t length,
                 size_t *shallowest)
{
    *shallowest = reached + 1;
    bool complex = false;
    for (size_t i = 0; i <= reached; i++) {
        if (chain [i]->nwrites && *shallowest > reached)
            *shallowest = i;
        for (size_t w = 0; i < length && w < chain [i]->nwrites; w++) {
            act_method_t method = chain [i]->writes [w]->method;
            if (method == ACT_PUSH || method == ACT_CONCAT || method == ACT_ASSIGN)
                complex = true;
        }
    }
    return complex;
}

//  Way (2) of act_ctx_instance_base: every instance write below chain
//  [shallowest], in _seq order, onto the global value there. False when
//  the global levels above it run through an array by a key
static bool
s_fold_below (act_ctx_kind_t *kind, act_ctx_node_t **chain, size_t shallowest,
              const act_seg_t *segs, json_t **base)
{
    json_t *current = kind->doc;
    for (size_t i = 0; i < shallowest; i++) {
        if (json_is_array (current))
            return false;
        current = json_is_object (current)
                ? json_object_get (current, segs [i].key): NULL;
    }
    json_t *value = current? json_deep_copy (current): NULL;
    s_items_t list = { NULL, 0, 0 };
    s_items_add_node (&list, chain [shallowest], shallowest, 0, UINT64_MAX);
    s_items_add_subtree (&list, chain [shallowest], shallowest, 0);
    if (list.size)
        qsort (list.items, list.size, sizeof (s_item_t), s_items_compare);
    for (size_t i = 0; i < list.size; i++) {
        s_write_t *write = list.items [i].write;
        act_path_write (&value, write->segs + shallowest,
                        write->nsegs - shallowest, write->method,
                        write->value, false, NULL);
    }
    free (list.items);
    *base = value;
    return true;
}

//  A new, empty cached fold of the path whose code is code; the cache of
//  ident starts again when it is full
static s_cache_t *
s_cache_new (act_ctx_ident_t *ident, const char *code)
{
    if (!ident->cache) {
        ident->cache = zhashx_new ();
        zhashx_set_destructor (ident->cache, s_cache_destroy);
    }
    if (zhashx_size (ident->cache) >= S_CACHE_MAX)
        zhashx_purge (ident->cache);
    s_cache_t *cache = calloc (1, sizeof *cache);
    zhashx_insert (ident->cache, code, cache);
    return cache;
}

//  Way (1) of act_ctx_instance_base: the cached fold of P' (segs [0 ..
//  length)) brought up to date. While the kind's global document has not
//  changed it is continued with the instance writes it has not seen; else
//  it is folded again
static s_cache_t *
s_cache_fold (act_ctx_kind_t *kind, act_ctx_ident_t *ident, const act_seg_t *segs,
              size_t length, act_ctx_node_t **chain, size_t reached)
{
    s_items_t list = { NULL, 0, 0 };
    char *code = act_path_code (segs, length);
    s_cache_t *cache = ident->cache? zhashx_lookup (ident->cache, code): NULL;
    if (cache && cache->version == kind->version) {
        //  Continue the fold with the instance writes it has not seen
        s_track_t track = { segs, length, cache->arrays, cache->value, true };
        s_items_add_chain (&list, chain, reached, length, cache->after);
        s_items_apply (&track, &list);
        cache->value = track.value;
    }
    else {
        if (!cache)
            cache = s_cache_new (ident, code);
        s_track_t track = { segs, length, cache->arrays, NULL, true };
        s_track_fold (&track, kind, chain, reached, &list);
        json_decref (cache->value);
        cache->value = track.value;
        cache->version = kind->version;
    }
    cache->after = ident->root->last;
    free (code);
    free (list.items);
    return cache;
}

//  Find the value, in instance ident of kind, at a prefix of path segs
//  from which the rest of segs can be read or written exactly. Returns
//  false when that prefix runs through an array by a key (nothing is there
//  and no write there applies). Else sets *base to the value at the first
//  *depth segments (owned; NULL: absent).
//
//  Two ways. P' is segs up to its first index or "-" segment: an index
//  reads or writes an array element, whose position depends on its
//  siblings, so everything below an index is taken from the whole array.
//  (1) Usually: follow the levels of P' (s_track_t) through the writes on
//  P', its ancestors and its descendants, in _seq order, from the newest
//  write that replaced P' if the levels above it allow. (2) When a push,
//  concat or assign sits on a strict ancestor of P', its effect depends on
//  that ancestor's siblings: fold every instance write below the
//  shallowest written ancestor onto the global value there, as
//  SEMANTICS.md section 4 prescribes for push and concat.
bool
act_ctx_instance_base (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                       const act_seg_t *segs, size_t nsegs,
                       json_t **base, size_t *depth)
{
    size_t length = 0;
    while (length < nsegs && segs [length].type == ACT_SEG_KEY)
        length++;
    act_ctx_node_t *chain [ACT_MAX_SEGMENTS + 1];
    size_t reached = s_chain (ident, segs, length, chain);
    size_t shallowest;
    if (s_chain_complex (chain, reached, length, &shallowest)) {
        act_ctx_lazy_force (kind, segs, shallowest, ACT_CTX_LAZY_DEEP);
        if (!s_fold_below (kind, chain, shallowest, segs, base))
            return false;
        *depth = shallowest;
        return true;
    }
    act_ctx_lazy_force (kind, segs, length, ACT_CTX_LAZY_DEEP);
    s_cache_t *cache = s_cache_fold (kind, ident, segs, length, chain, reached);
    s_track_t done = { segs, length, cache->arrays, cache->value, true };
    if (s_track_blocked (&done, length))
        return false;
    *base = cache->value? json_deep_copy (cache->value): NULL;
    *depth = length;
    return true;
}

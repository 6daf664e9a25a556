/*  =========================================================================
    act_ctx_trie - the fold that reads a path of an instance through its
    writes, which act_ctx_node.c keeps in a trie by path.

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



//  What one level above a read path P' holds, as far as a key path and an
//  assign through it care: an array, a scalar (null included), or else
//  absent or an object (which a key path walks through the same way)
typedef struct {
    bool array;                 //  An array: a key finds nothing, a write fails
    uint64_t scalar;            //  0; else a scalar put there before _seq scalar
} s_level_t;

//  A tracked fold of one instance path, kept to be continued: while the
//  kind's global document does not change, the next read of the path only
//  applies the instance writes newer than the last one it saw
typedef struct {
    uint64_t version;           //  Kind's global version it was folded on
    uint64_t after;             //  Newest instance _seq it has seen
    json_t *value;              //  Value at P', a reference; NULL: absent
    bool owned;                 //  value is the fold's own; else shared
    s_level_t levels [];        //  The levels above P', one per key segment
} s_cache_t;

//  Most paths cached per instance; past it the cache starts again
#define S_CACHE_MAX 64


//  A write gathered for one read, with the depth of the node it sits on
typedef struct {
    act_ctx_write_t *write;           //  The write
    size_t depth;               //  Depth of its node from the kind's root
} s_item_t;

//  The writes gathered for one read, in no order until s_items_apply
typedef struct {
    s_item_t *items;            //  Gathered writes
    size_t size;                //  Number gathered
    size_t capacity;            //  Slots allocated
    size_t visited;             //  Writes looked at, gathered or not
} s_items_t;

//  Gather the writes at node whose _seq is in (after, before), newest
//  first from the end of its list: older writes are never visited
static void
s_items_add_node (s_items_t *list, act_ctx_node_t *node, size_t depth,
                  uint64_t after, uint64_t before)
{
    for (size_t i = node->nwrites; i > 0 && node->writes [i - 1]->seq > after; i--) {
        list->visited++;
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

//  What a read at the key path P' knows about the levels above it: levels
//  [i] is what the value at the first i segments holds. An array there
//  means a key finds nothing and a write through it fails; a scalar means
//  an assign there does not apply (T must be absent or an object). Writes
//  beside P' never set a level; the only thing they do to one is turn an
//  absent or scalar level they pass through into an object. So the arrays
//  follow from the global document and the writes on P' itself, and so
//  does every level but one marked scalar, which may have become an
//  object since (s_track_object says).
typedef struct {
    const act_seg_t *segs;      //  The path P'
    size_t length;              //  Number of key segments in P'
    s_level_t *levels;          //  levels [i] for i < length
    json_t *value;              //  Value at P', a reference; NULL: absent
    bool owned;                 //  value is the fold's own; else shared (s_track_own)
    bool keep_value;            //  False: follow only the levels above P'
    act_ctx_node_t **chain;     //  Trie nodes along P' (s_chain), for s_track_object
    size_t searched;            //  Writes s_track_object looked at
} s_track_t;

//  Level depth now holds value (borrowed), written before the _seq since:
//  derive the levels below it. The value at P' is shared, not copied (each
//  instance's fold copied the global value: an audit, 500 instances each
//  reading an item of a global list of 100,000, 27 MB to 2 GB)
static void
s_track_set (s_track_t *track, size_t depth, const json_t *value, uint64_t since)
{
    const json_t *current = value;
    for (size_t i = depth; i < track->length; i++) {
        bool scalar = current && !json_is_object (current) && !json_is_array (current);
        track->levels [i] = (s_level_t) { json_is_array (current), scalar? since: 0 };
        current = json_is_object (current)
                ? json_object_get (current, track->segs [i].key): NULL;
    }
    json_decref (track->value);
    track->value = current && track->keep_value? json_incref ((json_t *) current): NULL;
    track->owned = false;
}

//  The value at P' made the fold's own before it is changed in place: one
//  shared with the global document or a write's value is copied (copy on
//  write). Scalars are never changed in place (a write replaces them)
static void
s_track_own (s_track_t *track)
{
    if (!track->owned && (json_is_object (track->value) || json_is_array (track->value))) {
        json_t *copy = json_deep_copy (track->value);
        json_decref (track->value);
        track->value = copy;
    }
    track->owned = true;
}

//  Level depth is now absent, and everything below it
static void
s_track_clear (s_track_t *track, size_t depth)
{
    for (size_t i = depth; i < track->length; i++)
        track->levels [i] = (s_level_t) { false, 0 };
    json_decref (track->value);
    track->value = NULL;
}

//  A write below level depth went through: every level above it that was
//  absent or a scalar is an object now (none was an array, or it failed)
static void
s_track_through (s_track_t *track, size_t depth)
{
    for (size_t i = 0; i < depth && i < track->length; i++)
        track->levels [i].scalar = 0;
}

//  A merge of the object patch at level depth (< length), made by the
//  write _seq since - 1. Along P' the patch either stops (the rest is
//  untouched), deletes, replaces, or merges into P' itself; every level
//  it passes becomes an object.
static void
s_track_merge (s_track_t *track, size_t depth, const json_t *patch, uint64_t since)
{
    s_track_through (track, depth);
    for (size_t i = depth; ; i++) {
        if (track->levels [i].array)
            s_track_clear (track, i + 1);   //  An array becomes {}
        track->levels [i] = (s_level_t) { false, 0 };
        json_t *member = json_object_get (patch, track->segs [i].key);
        if (!member)
            return;
        if (json_is_null (member)) {
            s_track_clear (track, i + 1);
            return;
        }
        if (!json_is_object (member)) {
            s_track_set (track, i + 1, member, since);
            return;
        }
        if (i + 1 == track->length) {
            if (track->keep_value) {
                if (json_is_object (track->value))
                    s_track_own (track);        //  Merged into in place
                track->value = act_merge_patch (track->value, member);
                track->owned = true;
            }
            return;
        }
        patch = member;
    }
}

//  True when one of the first depth levels is an array: a key through it
//  finds nothing, and a write through it fails
static bool
s_levels_blocked (const s_level_t *levels, size_t depth)
{
    for (size_t i = 0; i < depth; i++)
        if (levels [i].array)
            return true;
    return false;
}

//  True when a level above depth (and above the end of P') is an array
static bool
s_track_blocked (s_track_t *track, size_t depth)
{
    return s_levels_blocked (track->levels, depth < track->length? depth: track->length);
}

//  True when a write below node, with _seq in [from, to), went through a
//  scalar at node's level, making it an object: any write but an erase
//  (which changes nothing below a scalar) whose path has no "-" (which
//  fails there: those are all below an append child, never visited).
//  Branches written only outside the span are skipped, and in a node only
//  the writes inside it are looked at
static bool
s_node_objectified (act_ctx_node_t *node, uint64_t from, uint64_t to, size_t *searched)
{
    if (!node->children)
        return false;
    for (act_ctx_node_t *child = zhashx_first (node->children); child;
         child = zhashx_next (node->children)) {
        if (child->last < from || child->first >= to)
            continue;
        //  The writes older than to: a binary search, they are in _seq order
        size_t low = 0, high = child->nwrites;
        while (low < high) {
            size_t middle = low + (high - low) / 2;
            if (child->writes [middle]->seq < to)
                low = middle + 1;
            else
                high = middle;
        }
        for (size_t w = low; w > 0 && child->writes [w - 1]->seq >= from; w--) {
            act_ctx_write_t *write = child->writes [w - 1];
            (*searched)++;
            if (write->method != ACT_ERASE)
                return true;
        }
        if (s_node_objectified (child, from, to, searched))
            return true;
    }
    return false;
}

//  True when level depth holds an object or is absent when the write seq
//  folds. A level marked scalar is one no tracked write has changed since;
//  only a write below it, made after the scalar and before seq, can have
//  turned it into an object, and that write may be beside P': look for one
static bool
s_track_object (s_track_t *track, size_t depth, uint64_t seq)
{
    s_level_t *level = &track->levels [depth];
    if (level->array)
        return false;
    if (!level->scalar)
        return true;
    if (!s_node_objectified (track->chain [depth], level->scalar, seq, &track->searched))
        return false;
    level->scalar = 0;          //  An object from now on
    return true;
}

//  True when the write gathered as item, at a level above P' (item->depth
//  < length), applies to the tracked state: no array above it, and for an
//  assign an object or nothing at its level
static bool
s_track_applies (s_track_t *track, s_item_t *item)
{
    if (s_track_blocked (track, item->depth))
        return false;           //  A key through an array
    return item->write->method != ACT_ASSIGN
        || s_track_object (track, item->depth, item->write->seq);
}

//  Apply write, at P' or below it, to the value at P': 0 when it applies.
//  A concat of a string onto P' itself, when a long string is there,
//  appends a piece to a rope (act_ctx_lazy.c), so that n concats onto one
//  path of an instance copy each piece once; any other write joins it
static int
s_track_write (s_track_t *track, act_ctx_write_t *write)
{
    if (write->method == ACT_CONCAT && write->nsegs == track->length) {
        if (act_ctx_lazy_rope_is (track->value))
            s_track_own (track);                //  Appended to in place
        if (act_ctx_lazy_rope_append (&track->value, write->value)) {
            track->owned = true;                //  A rope of the fold's own
            return 0;
        }
    }
    act_ctx_lazy_rope_join (&track->value);
    //  A set or an erase of P' itself replaces it: nothing to copy first
    if (write->nsegs > track->length
    ||  (write->method != ACT_SET && write->method != ACT_ERASE))
        s_track_own (track);
    int rc = act_path_write (&track->value, write->segs + track->length,
                             write->nsegs - track->length, write->method,
                             write->value, false, NULL);
    track->owned |= rc == 0;
    return rc;
}

//  Apply one gathered write to the tracked state. At a level above P', an
//  assign either replaces P's part (its value has the member on the way to
//  P') or leaves it as it was; push and concat never come here (see
//  act_ctx_instance_base)
static void
s_track_apply (s_track_t *track, s_item_t *item)
{
    act_ctx_write_t *write = item->write;
    uint64_t since = write->seq + 1;
    if (item->depth < track->length) {
        if (!s_track_applies (track, item))
            return;             //  The write fails at this point of the fold
        if (write->method == ACT_ERASE)
            s_track_clear (track, item->depth);
        else
        if (write->method == ACT_MERGE && json_is_object (write->value))
            s_track_merge (track, item->depth, write->value, since);
        else
        if (write->method == ACT_ASSIGN) {
            s_track_through (track, item->depth + 1);
            json_t *member = json_object_get (write->value, track->segs [item->depth].key);
            if (member)
                s_track_set (track, item->depth + 1, member, since);
        }
        else {
            s_track_through (track, item->depth);
            s_track_set (track, item->depth, write->value, since);
        }
    }
    else
    if (track->keep_value && !s_track_blocked (track, track->length)
    &&  s_track_write (track, write) == 0
    &&  write->method != ACT_ERASE)
        s_track_through (track, track->length);
}

//  Start from the global document: the levels of P' and its value there
static void
s_track_reset (s_track_t *track, const json_t *doc)
{
    //  Every instance write (_seq 1 on) folds after the global document
    s_track_set (track, 0, doc, 1);
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

//  True when the write, at P' or above it, replaces P' whatever was there
//  when it applies: a set, an erase or a merge of a non-object replace
//  everything below their own level, an assign above P' whose value has
//  the member on the way to P' replaces that member
static bool
s_replaces (s_item_t *item, const s_track_t *track)
{
    act_ctx_write_t *write = item->write;
    if (write->method == ACT_ASSIGN)
        return item->depth < track->length
            && json_object_get (write->value, track->segs [item->depth].key);
    return item->depth <= track->length
        && (write->method == ACT_SET || write->method == ACT_ERASE
        ||  (write->method == ACT_MERGE && !json_is_object (write->value)));
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
//  levels above that write (and an assign's own level) let it apply
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
            list->visited++;
            if (newest.write && item.write->seq < newest.write->seq)
                break;
            if (s_replaces (&item, track)) {
                newest = item;
                break;
            }
        }
    bool replayed = false;
    if (newest.write) {
        //  The levels above it at its time come from the writes above it,
        //  and an assign's own level from the writes there too
        size_t levels = newest.depth + (newest.write->method == ACT_ASSIGN);
        for (size_t i = 0; i < levels; i++)
            s_items_add_node (list, chain [i], i, 0, newest.write->seq);
        s_items_apply (track, list);
        if (newest.depth < track->length
            ? s_track_applies (track, &newest)
            : !s_track_blocked (track, newest.depth)) {
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

//  The trie nodes along the key path segs [0 .. length): chain [0] is the
//  root. Returns reached: chain [0 .. reached] exist
static size_t
s_chain (act_ctx_ident_t *ident, const act_seg_t *segs, size_t length,
         act_ctx_node_t **chain)
{
    size_t reached = 0;
    chain [0] = ident->root;
    while (reached < length) {
        act_ctx_node_t *child = act_ctx_node_child (chain [reached], &segs [reached], false);
        if (!child)
            break;
        chain [++reached] = child;
    }
    return reached;
}

//  For a set, merge or erase at a path of keys in instance ident: 1 when a
//  level above the path is an array (the write fails), 0 when none is, -1
//  when this cannot tell (another method or path, or a push or concat
//  above the path: use act_ctx_instance_base)
int
act_ctx_instance_blocked (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                          const act_seg_t *segs, size_t nsegs, act_method_t method)
{
    if (method != ACT_SET && method != ACT_MERGE && method != ACT_ERASE)
        return -1;
    for (size_t i = 0; i < nsegs; i++)
        if (segs [i].type != ACT_SEG_KEY)
            return -1;
    act_ctx_node_t *chain [ACT_MAX_SEGMENTS + 1];
    size_t reached = s_chain (ident, segs, nsegs, chain);
    s_items_t list = { NULL, 0, 0, 0 };
    for (size_t i = 0; i <= reached && i < nsegs; i++) {
        for (size_t w = 0; w < chain [i]->nwrites; w++) {
            act_method_t above = chain [i]->writes [w]->method;
            ident->visited++;
            if (above == ACT_PUSH || above == ACT_CONCAT) {
                free (list.items);
                return -1;
            }
        }
        s_items_add_node (&list, chain [i], i, 0, UINT64_MAX);
    }
    s_level_t levels [ACT_MAX_SEGMENTS];
    s_track_t track = { segs, nsegs, levels, NULL, false, false, chain, 0 };
    list.visited += act_ctx_lazy_force (kind, segs, nsegs, ACT_CTX_LAZY_ABOVE);
    s_track_reset (&track, kind->doc);
    s_items_apply (&track, &list);
    ident->visited += list.visited + track.searched;
    free (list.items);
    return s_track_blocked (&track, nsegs)? 1: 0;
}

//  True when a push or concat sits on a strict ancestor of P' (a chain
//  node above length). Sets *shallowest to the shallowest chain node with
//  writes (reached + 1: none has any)
static bool
s_chain_complex (act_ctx_node_t **chain, size_t reached, size_t length,
                 s_items_t *list, size_t *shallowest)
{
    *shallowest = reached + 1;
    bool complex = false;
    for (size_t i = 0; i <= reached; i++) {
        if (chain [i]->nwrites && *shallowest > reached)
            *shallowest = i;
        for (size_t w = 0; i < length && w < chain [i]->nwrites; w++) {
            act_method_t method = chain [i]->writes [w]->method;
            list->visited++;
            if (method == ACT_PUSH || method == ACT_CONCAT)
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
              const act_seg_t *segs, s_items_t *list, json_t **base)
{
    json_t *current = kind->doc;
    for (size_t i = 0; i < shallowest; i++) {
        if (json_is_array (current))
            return false;
        current = json_is_object (current)
                ? json_object_get (current, segs [i].key): NULL;
    }
    json_t *value = current? json_deep_copy (current): NULL;
    s_items_add_node (list, chain [shallowest], shallowest, 0, UINT64_MAX);
    s_items_add_subtree (list, chain [shallowest], shallowest, 0);
    if (list->size)
        qsort (list->items, list->size, sizeof (s_item_t), s_items_compare);
    for (size_t i = 0; i < list->size; i++) {
        act_ctx_write_t *write = list->items [i].write;
        act_path_write (&value, write->segs + shallowest,
                        write->nsegs - shallowest, write->method,
                        write->value, false, NULL);
    }
    list->size = 0;
    *base = value;
    return true;
}

//  A new, empty cached fold of the path whose code is code, of length key
//  segments; the cache of ident starts again when it is full
static s_cache_t *
s_cache_new (act_ctx_ident_t *ident, const char *code, size_t length)
{
    if (!ident->cache) {
        ident->cache = zhashx_new ();
        zhashx_set_destructor (ident->cache, s_cache_destroy);
    }
    if (zhashx_size (ident->cache) >= S_CACHE_MAX)
        zhashx_purge (ident->cache);
    s_cache_t *cache = calloc (1, sizeof *cache + length * sizeof (s_level_t));
    zhashx_insert (ident->cache, code, cache);
    return cache;
}

//  Way (1) of act_ctx_instance_base: the cached fold of P' (segs [0 ..
//  length)) brought up to date. While the kind's global document has not
//  changed it is continued with the instance writes it has not seen; else
//  it is folded again
static s_cache_t *
s_cache_fold (act_ctx_kind_t *kind, act_ctx_ident_t *ident, const act_seg_t *segs,
              size_t length, act_ctx_node_t **chain, size_t reached, s_items_t *list)
{
    char *code = act_path_code (segs, length);
    s_cache_t *cache = ident->cache? zhashx_lookup (ident->cache, code): NULL;
    if (cache && cache->version == kind->version) {
        //  Continue the fold with the instance writes it has not seen
        s_track_t track = { segs, length, cache->levels, cache->value, cache->owned,
                            true, chain, 0 };
        s_items_add_chain (list, chain, reached, length, cache->after);
        s_items_apply (&track, list);
        cache->value = track.value;
        cache->owned = track.owned;
        list->visited += track.searched;
    }
    else {
        if (!cache)
            cache = s_cache_new (ident, code, length);
        //  Values kept as text are parsed when the fold starts again from
        //  the global document, not each time it is continued (a walk of
        //  the value at P': an audit, 2,000 pushes in an instance, 4.25 s)
        list->visited += act_ctx_lazy_force (kind, segs, length, ACT_CTX_LAZY_DEEP);
        s_track_t track = { segs, length, cache->levels, NULL, false, true, chain, 0 };
        s_track_fold (&track, kind, chain, reached, list);
        json_decref (cache->value);
        cache->value = track.value;
        cache->owned = track.owned;
        list->visited += track.searched;
        cache->version = kind->version;
    }
    cache->after = ident->root->last;
    free (code);
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
//  write that replaced P' if the levels above it allow. An assign above
//  P' replaces P's part or leaves it alone, as a merge does; only whether
//  it applies at all can depend on writes beside P', when its level holds
//  a scalar (s_track_object). (2) When a push or concat sits on a strict
//  ancestor of P', its effect depends on that ancestor's siblings (the
//  length of an array, the text of a string): fold every instance write
//  below the shallowest written ancestor onto the global value there, as
//  SEMANTICS.md section 4 prescribes for push and concat.
bool
act_ctx_instance_base (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                       const act_seg_t *segs, size_t nsegs, bool rope,
                       json_t **base, size_t *depth, bool *shared)
{
    *shared = false;
    size_t length = 0;
    while (length < nsegs && segs [length].type == ACT_SEG_KEY)
        length++;
    act_ctx_node_t *chain [ACT_MAX_SEGMENTS + 1];
    size_t reached = s_chain (ident, segs, length, chain);
    size_t shallowest;
    s_items_t list = { NULL, 0, 0, 0 };
    if (s_chain_complex (chain, reached, length, &list, &shallowest)) {
        list.visited += act_ctx_lazy_force (kind, segs, shallowest, ACT_CTX_LAZY_DEEP);
        bool found = s_fold_below (kind, chain, shallowest, segs, &list, base);
        ident->visited += list.visited;
        free (list.items);
        *depth = shallowest;
        return found;
    }
    s_cache_t *cache = s_cache_fold (kind, ident, segs, length, chain, reached, &list);
    ident->visited += list.visited;
    free (list.items);
    if (s_levels_blocked (cache->levels, length))
        return false;
    if (!(rope && length == nsegs))
        act_ctx_lazy_rope_join (&cache->value);
    *base = cache->value? json_incref (cache->value): NULL;
    *shared = true;
    *depth = length;
    return true;
}

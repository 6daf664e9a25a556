/*  =========================================================================
    act_ctx - one agent context and the index that resolves against it.

    Global scope. Global writes of a kind are never skipped by the fold:
    each one was checked against exactly the state the fold gives before
    it. So the fold of a kind's global writes is kept as one document,
    changed in place by each write, and a global read is a walk down the
    path: O(depth), whatever the length of the context.

    Instance scope. The fold of instance I is the global document with I's
    writes applied on top, skipping those that no longer apply. A global
    write can change what an older instance write does, so instance writes
    are kept, not folded: in a trie by path, per instance. A read at path P
    looks only at instance writes on the nodes from the root to P and below
    P, starting from the global document's value (see s_instance_base).
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_ctx.h"
#include "actd/act_json.h"

//  One instance write
typedef struct {
    uint64_t seq;               //  _seq of the message that made it
    act_method_t method;        //  How it combines with what is there
    json_t *value;              //  The value written (a reference)
    act_seg_t *segs;            //  Its path, an owned copy
    size_t nsegs;               //  Length of the path
} s_write_t;

//  A node of an instance's write trie: one path
typedef struct _s_node_t s_node_t;
struct _s_node_t {
    zhashx_t *children;         //  Segment text -> s_node_t, NULL if none
    s_node_t *append;           //  The "-" child, NULL if none
    s_write_t **writes;         //  Writes whose path ends here, oldest first
    size_t nwrites;             //  Number of writes
    size_t capacity;            //  Slots allocated in writes
    uint64_t last;              //  Newest _seq written here or below
};

typedef struct _s_kind_t s_kind_t;

//  An identity (kind, instance): what the merged view shows one entry for
typedef struct {
    s_kind_t *kind;             //  The kind it belongs to
    char *instance;             //  Instance, NULL for the global scope
    json_t *description;        //  Latest description, or NULL
    json_t *schema;             //  Latest schema, or NULL
    s_node_t *root;             //  Instance writes by path; NULL if global
    zhashx_t *cache;            //  Path code of P' -> s_cache_t, or NULL
} s_ident_t;

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

struct _s_kind_t {
    char *name;                 //  The kind, such as "state"
    json_t *doc;                //  Fold of its global writes; NULL: absent
    uint64_t version;           //  Changes whenever doc changes
    s_ident_t *global;          //  Global identity, once it has a message
    zhashx_t *instances;        //  Instance -> s_ident_t, NULL if none
};

struct _act_ctx_t {
    char *id;                   //  Context id
    uint64_t next_seq;          //  _seq the next message gets
    zhashx_t *kinds;            //  Kind name -> s_kind_t
    zlistx_t *identities;       //  s_ident_t, in order of first appearance
};


//  --------------------------------------------------------------------------
//  Names

bool
act_ctx_id_valid (const char *id)
{
    size_t length = id? strlen (id): 0;
    if (length == 0 || length > ACT_MAX_CONTEXT_ID)
        return false;
    for (const char *c = id; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')
        ||    (*c >= '0' && *c <= '9') || strchr ("._:@/-", *c)))
            return false;
    return true;
}

bool
act_kind_valid (const char *kind)
{
    if (!kind || !*kind)
        return false;
    if (!((*kind >= 'A' && *kind <= 'Z') || (*kind >= 'a' && *kind <= 'z') || *kind == '_'))
        return false;
    for (const char *c = kind + 1; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')
        ||    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return false;
    return true;
}


//  --------------------------------------------------------------------------
//  The trie of instance writes

static void
s_node_destroy (s_node_t **self_p)
{
    s_node_t *self = *self_p;
    if (!self)
        return;
    if (self->children) {
        for (s_node_t *child = zhashx_first (self->children); child;
             child = zhashx_next (self->children))
            s_node_destroy (&child);
        zhashx_destroy (&self->children);
    }
    s_node_destroy (&self->append);
    for (size_t i = 0; i < self->nwrites; i++) {
        s_write_t *write = self->writes [i];
        for (size_t s = 0; s < write->nsegs; s++)
            free (write->segs [s].key);
        free (write->segs);
        json_decref (write->value);
        free (write);
    }
    free (self->writes);
    free (self);
    *self_p = NULL;
}

//  The child for seg, created when create is set; NULL if there is none
static s_node_t *
s_node_child (s_node_t *self, const act_seg_t *seg, bool create)
{
    if (seg->type == ACT_SEG_APPEND) {
        if (!self->append && create)
            self->append = calloc (1, sizeof (s_node_t));
        return self->append;
    }
    s_node_t *child = self->children? zhashx_lookup (self->children, seg->key): NULL;
    if (!child && create) {
        if (!self->children)
            self->children = zhashx_new ();
        child = calloc (1, sizeof (s_node_t));
        zhashx_insert (self->children, seg->key, child);
    }
    return child;
}

//  Record a write at its path under root
static void
s_node_add (s_node_t *root, uint64_t seq, const act_seg_t *segs, size_t nsegs,
            act_method_t method, const json_t *value)
{
    s_node_t *node = root;
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

//  Forget the newest write at path (undo of a tentative s_node_add)
static void
s_node_pop (s_node_t *root, const act_seg_t *segs, size_t nsegs)
{
    s_node_t *node = root;
    for (size_t i = 0; i < nsegs && node; i++)
        node = s_node_child (node, &segs [i], false);
    if (node && node->nwrites) {
        s_write_t *write = node->writes [--node->nwrites];
        for (size_t s = 0; s < write->nsegs; s++)
            free (write->segs [s].key);
        free (write->segs);
        json_decref (write->value);
        free (write);
    }
}

//  A write gathered for one read, with the depth of the node it sits on
typedef struct {
    s_write_t *write;           //  The write
    size_t depth;               //  Depth of its node from the kind's root
} s_item_t;

typedef struct {
    s_item_t *items;            //  Gathered writes
    size_t size;                //  Number gathered
    size_t capacity;            //  Slots allocated
} s_items_t;

//  Gather the writes at node whose _seq is in (after, before), newest
//  first from the end of its list: older writes are never visited
static void
s_items_add_node (s_items_t *list, s_node_t *node, size_t depth,
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
s_items_add_subtree (s_items_t *list, s_node_t *node, size_t depth, uint64_t after)
{
    if (node->children)
        for (s_node_t *child = zhashx_first (node->children); child;
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
    const json_t *current = doc;
    for (size_t i = 0; i < track->length; i++) {
        track->arrays [i] = json_is_array (current);
        current = json_is_object (current)
                ? json_object_get (current, track->segs [i].key): NULL;
    }
    json_decref (track->value);
    track->value = current && track->keep_value? json_deep_copy (current): NULL;
}

static int s_items_compare (const void *a, const void *b);

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
s_track_fold (s_track_t *track, s_kind_t *kind, s_node_t **chain, size_t reached,
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
            uint64_t after = newest.write->seq;
            for (size_t i = 0; i <= reached; i++)
                s_items_add_node (list, chain [i], i, after, UINT64_MAX);
            if (reached == track->length)
                s_items_add_subtree (list, chain [track->length], track->length, after);
            s_items_apply (track, list);
            replayed = true;
        }
        else
            s_track_reset (track, kind->doc);
    }
    if (!replayed) {
        //  Everything on the path, from the global document
        for (size_t i = 0; i <= reached; i++)
            s_items_add_node (list, chain [i], i, 0, UINT64_MAX);
        if (reached == track->length)
            s_items_add_subtree (list, chain [track->length], track->length, 0);
        s_items_apply (track, list);
    }
}

//  For a set, merge or erase at a path of keys in instance ident: 1 when a
//  level above the path is an array (the write fails), 0 when none is, -1
//  when this cannot tell (another method or path, or a push, concat or
//  assign above the path: use s_instance_base)
static int
s_instance_blocked (s_kind_t *kind, s_ident_t *ident, const act_seg_t *segs,
                    size_t nsegs, act_method_t method)
{
    if (method != ACT_SET && method != ACT_MERGE && method != ACT_ERASE)
        return -1;
    for (size_t i = 0; i < nsegs; i++)
        if (segs [i].type != ACT_SEG_KEY)
            return -1;
    s_node_t *node = ident->root;
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
    s_track_reset (&track, kind->doc);
    s_items_apply (&track, &list);
    free (list.items);
    return s_track_blocked (&track, nsegs)? 1: 0;
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
static bool
s_instance_base (s_kind_t *kind, s_ident_t *ident, const act_seg_t *segs,
                 size_t nsegs, json_t **base, size_t *depth)
{
    size_t length = 0;
    while (length < nsegs && segs [length].type == ACT_SEG_KEY)
        length++;
    s_node_t *chain [ACT_MAX_SEGMENTS + 1];
    size_t reached = 0;             //  chain [0 .. reached] exist
    chain [0] = ident->root;
    while (reached < length) {
        s_node_t *child = s_node_child (chain [reached], &segs [reached], false);
        if (!child)
            break;
        chain [++reached] = child;
    }
    size_t shallowest = reached + 1;    //  Shallowest chain node with writes
    bool complex = false;
    for (size_t i = 0; i <= reached; i++) {
        if (chain [i]->nwrites && shallowest > reached)
            shallowest = i;
        for (size_t w = 0; i < length && w < chain [i]->nwrites; w++) {
            act_method_t method = chain [i]->writes [w]->method;
            if (method == ACT_PUSH || method == ACT_CONCAT || method == ACT_ASSIGN)
                complex = true;
        }
    }
    s_items_t list = { NULL, 0, 0 };
    if (complex) {
        json_t *current = kind->doc;
        for (size_t i = 0; i < shallowest; i++) {
            if (json_is_array (current))
                return false;
            current = json_is_object (current)
                    ? json_object_get (current, segs [i].key): NULL;
        }
        json_t *value = current? json_deep_copy (current): NULL;
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
        *depth = shallowest;
        return true;
    }
    char *code = act_path_code (segs, length);
    s_cache_t *cache = ident->cache? zhashx_lookup (ident->cache, code): NULL;
    if (cache && cache->version == kind->version) {
        //  Continue the fold with the instance writes it has not seen
        s_track_t track = { segs, length, cache->arrays, cache->value, true };
        for (size_t i = 0; i <= reached; i++)
            s_items_add_node (&list, chain [i], i, cache->after, UINT64_MAX);
        if (reached == length)
            s_items_add_subtree (&list, chain [length], length, cache->after);
        s_items_apply (&track, &list);
        cache->value = track.value;
    }
    else {
        if (!cache) {
            if (!ident->cache) {
                ident->cache = zhashx_new ();
                zhashx_set_destructor (ident->cache, s_cache_destroy);
            }
            if (zhashx_size (ident->cache) >= S_CACHE_MAX)
                zhashx_purge (ident->cache);
            cache = calloc (1, sizeof *cache);
            zhashx_insert (ident->cache, code, cache);
        }
        s_track_t track = { segs, length, cache->arrays, NULL, true };
        s_track_fold (&track, kind, chain, reached, &list);
        json_decref (cache->value);
        cache->value = track.value;
        cache->version = kind->version;
    }
    cache->after = ident->root->last;
    free (code);
    free (list.items);
    s_track_t done = { segs, length, cache->arrays, cache->value, true };
    if (s_track_blocked (&done, length))
        return false;
    *base = cache->value? json_deep_copy (cache->value): NULL;
    *depth = length;
    return true;
}


//  --------------------------------------------------------------------------
//  Kinds and identities

static void
s_kind_destroy (void **item)
{
    s_kind_t *kind = (s_kind_t *) *item;
    if (!kind)
        return;
    zhashx_destroy (&kind->instances);
    json_decref (kind->doc);
    free (kind->name);
    free (kind);
    *item = NULL;
}

static void
s_ident_destroy (void **item)
{
    s_ident_t *ident = (s_ident_t *) *item;
    if (!ident)
        return;
    s_node_destroy (&ident->root);
    zhashx_destroy (&ident->cache);
    json_decref (ident->description);
    json_decref (ident->schema);
    free (ident->instance);
    free (ident);
    *item = NULL;
}

static s_kind_t *
s_kind_require (act_ctx_t *self, const char *name)
{
    s_kind_t *kind = (s_kind_t *) zhashx_lookup (self->kinds, name);
    if (!kind) {
        kind = calloc (1, sizeof *kind);
        kind->name = strdup (name);
        zhashx_insert (self->kinds, name, kind);
    }
    return kind;
}

//  The identity (kind, instance), created (and shown in the view from now
//  on) when create is set
static s_ident_t *
s_ident (act_ctx_t *self, s_kind_t *kind, const char *instance, bool create)
{
    s_ident_t *ident = instance
        ? (kind->instances? zhashx_lookup (kind->instances, instance): NULL)
        : kind->global;
    if (!ident && create) {
        ident = calloc (1, sizeof *ident);
        ident->kind = kind;
        if (instance) {
            ident->instance = strdup (instance);
            ident->root = calloc (1, sizeof (s_node_t));
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
static json_t *
s_read (s_kind_t *kind, s_ident_t *ident, const act_seg_t *segs, size_t nsegs)
{
    if (!kind)
        return NULL;
    if (!ident || !ident->root) {
        json_t *value = act_path_get (kind->doc, segs, nsegs);
        return value? json_deep_copy (value): NULL;
    }
    json_t *base;
    size_t depth;
    if (!s_instance_base (kind, ident, segs, nsegs, &base, &depth))
        return NULL;
    //  A whole-kind reference has no segments (segs may be NULL)
    json_t *value = act_path_get (base, nsegs > depth? segs + depth: NULL,
                                  nsegs - depth);
    value = value == base? json_incref (value): json_deep_copy (value);
    json_decref (base);
    return value;
}

//  Check a write in scope (kind, instance), without changing anything
static int
s_check (act_ctx_t *self, s_kind_t *kind, const char *instance,
         const act_seg_t *segs, size_t nsegs, act_method_t method,
         const json_t *value, act_err_t *err)
{
    s_ident_t *ident = instance? s_ident (self, kind, instance, false): NULL;
    if (!ident)
        return act_path_write (&kind->doc, segs, nsegs, method, value, true, err);
    //  The value's own rules come first, as in the global scope: a refused
    //  write gets the same code in every scope
    if (act_method_check_value (method, value, err))
        return -1;
    //  set, merge and erase on a path of keys apply to whatever is there:
    //  only an array on a level above can refuse them, and those levels
    //  follow from the writes above the path, not from the path's own
    int blocked = s_instance_blocked (kind, ident, segs, nsegs, method);
    if (blocked == 0)
        return 0;
    if (blocked == 1)
        return act_err_set (err, ACT_E_BAD_PATH, "the path runs through an array by a key");
    json_t *base;
    size_t depth;
    if (!s_instance_base (kind, ident, segs, nsegs, &base, &depth))
        return act_err_set (err, ACT_E_BAD_PATH,
                            "the path runs through an array by a key");
    int rc = act_path_write (&base, nsegs > depth? segs + depth: NULL,
                             nsegs - depth, method, value, true, err);
    json_decref (base);
    return rc;
}

//  Apply a write that s_check accepted
static void
s_apply (act_ctx_t *self, s_kind_t *kind, const char *instance, uint64_t seq,
         const act_seg_t *segs, size_t nsegs, act_method_t method,
         const json_t *value)
{
    s_ident_t *ident = s_ident (self, kind, instance, true);
    if (instance)
        s_node_add (ident->root, seq, segs, nsegs, method, value);
    else {
        act_path_write (&kind->doc, segs, nsegs, method, value, false, NULL);
        kind->version++;
    }
}


//  --------------------------------------------------------------------------
//  The context

act_ctx_t *
act_ctx_new (const char *id)
{
    if (!act_ctx_id_valid (id))
        return NULL;
    act_ctx_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->id = strdup (id);
    self->next_seq = 1;
    self->kinds = zhashx_new ();
    zhashx_set_destructor (self->kinds, s_kind_destroy);
    self->identities = zlistx_new ();
    zlistx_set_destructor (self->identities, s_ident_destroy);
    return self;
}

void
act_ctx_destroy (act_ctx_t **self_p)
{
    if (self_p && *self_p) {
        act_ctx_t *self = *self_p;
        zlistx_destroy (&self->identities);
        zhashx_destroy (&self->kinds);
        free (self->id);
        free (self);
        *self_p = NULL;
    }
}

const char *
act_ctx_id (act_ctx_t *self)
{
    return self->id;
}

uint64_t
act_ctx_next_seq (act_ctx_t *self)
{
    return self->next_seq;
}

//  Stamp a stored message with the next _seq and the time
static void
s_stamp (act_ctx_t *self, json_t *message)
{
    char date [32];
    act_date_now (date);
    json_object_set_new (message, "_seq", json_integer ((json_int_t) self->next_seq++));
    json_object_set_new (message, "_date", json_string (date));
}

//  Fields of a data message the client may not set: they mark outputs or
//  are stamped by the broker
static const char *s_reserved [] = { "_seq", "_date", "_outputPath", "_call", "_callId" };

//  Read kind, instance, data and method of an appended data message
static int
s_data_fields (const json_t *message, const char **kind, const char **instance,
               act_method_t *method, act_method_t method_default, act_err_t *err)
{
    json_t *field = json_object_get (message, "kind");
    *kind = field? json_string_value (field): "data";
    if (!*kind || !act_kind_valid (*kind))
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "\"kind\" must be an identifier [A-Za-z_][A-Za-z0-9_-]*");
    field = json_object_get (message, "_instance");
    *instance = field? json_string_value (field): NULL;
    if (field && (!*instance || !**instance
              ||  json_string_length (field) > ACT_MAX_INSTANCE))
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "\"_instance\" must be a string of 1 to %d bytes",
                            ACT_MAX_INSTANCE);
    field = json_object_get (message, "_outputMethod");
    *method = method_default;
    if (field && act_method_parse (json_string_value (field), method))
        return act_err_set (err, ACT_E_BAD_METHOD,
                            "\"_outputMethod\" must be one of set, merge, "
                            "assign, push, concat, erase");
    return 0;
}

//  Keep an appended message's description and schema for the view
static void
s_describe (s_ident_t *ident, const json_t *message)
{
    json_t *description = json_object_get (message, "description");
    if (description) {
        json_decref (ident->description);
        ident->description = json_incref (description);
    }
    json_t *schema = json_object_get (message, "schema");
    if (schema) {
        json_decref (ident->schema);
        ident->schema = json_incref (schema);
    }
}

json_t *
act_ctx_append (act_ctx_t *self, const json_t *message, act_err_t *err)
{
    if (!json_is_object (message)) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "a message must be a JSON object");
        return NULL;
    }
    const char *type = json_string_value (json_object_get (message, "type"));
    if (!type) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "a message needs a string \"type\"");
        return NULL;
    }
    for (size_t i = 0; i < sizeof s_reserved / sizeof s_reserved [0]; i++)
        if (json_object_get (message, s_reserved [i])) {
            act_err_set (err, ACT_E_BAD_ARGUMENT,
                         "\"%s\" is set by the broker, not by clients", s_reserved [i]);
            return NULL;
        }
    json_t *stored = json_copy ((json_t *) message);
    if (streq (type, "data")) {
        const char *kind_name, *instance;
        act_method_t method;
        json_t *data = json_object_get (message, "data");
        if (s_data_fields (message, &kind_name, &instance, &method, ACT_MERGE, err)) {
            json_decref (stored);
            return NULL;
        }
        if (!data) {
            act_err_set (err, ACT_E_BAD_ARGUMENT, "a data message needs \"data\"");
            json_decref (stored);
            return NULL;
        }
        s_kind_t *kind = s_kind_require (self, kind_name);
        if (s_check (self, kind, instance, NULL, 0, method, data, err)) {
            json_decref (stored);
            return NULL;
        }
        s_apply (self, kind, instance, self->next_seq, NULL, 0, method, data);
        s_describe (s_ident (self, kind, instance, true), message);
    }
    s_stamp (self, stored);
    return stored;
}

//  True when two targets of one fan-out could change what the other finds
static bool
s_alt_overlaps (const act_alt_t *alt)
{
    for (size_t i = 0; i < alt->nrefs; i++)
        for (size_t j = i + 1; j < alt->nrefs; j++)
            if (act_ref_overlaps (&alt->refs [i], &alt->refs [j]))
                return true;
    return false;
}

//  Check every target of a fan-out. Targets that overlap are checked in
//  turn with the earlier ones applied, then undone (kind documents are
//  restored from copies; instance writes are popped).
static int
s_output_check (act_ctx_t *self, const act_alt_t *alt, const json_t *value,
                act_method_t method, const char *instance, act_err_t *err)
{
    //  The instance is stored as a JSON string, so it must be text
    if (instance && !act_utf8_valid (instance, strlen (instance), NULL))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "the instance is not valid UTF-8");
    if (!s_alt_overlaps (alt)) {
        for (size_t i = 0; i < alt->nrefs; i++) {
            const act_ref_t *ref = &alt->refs [i];
            s_kind_t *kind = s_kind_require (self, ref->kind);
            if (s_check (self, kind, instance, ref->segs, ref->nsegs, method, value, err))
                return -1;
        }
        return 0;
    }
    json_t *saved [ACT_MAX_OPERANDS];  //  Global: each kind document before
    bool created [ACT_MAX_OPERANDS];   //  Instance: identity made for the try
    size_t applied = 0;
    int rc = 0;
    for (; applied < alt->nrefs; applied++) {
        const act_ref_t *ref = &alt->refs [applied];
        s_kind_t *kind = s_kind_require (self, ref->kind);
        if (s_check (self, kind, instance, ref->segs, ref->nsegs, method, value, err)) {
            rc = -1;
            break;
        }
        if (instance) {
            created [applied] = !s_ident (self, kind, instance, false);
            s_node_add (s_ident (self, kind, instance, true)->root,
                        self->next_seq + applied, ref->segs, ref->nsegs, method, value);
        }
        else {
            saved [applied] = json_deep_copy (kind->doc);
            act_path_write (&kind->doc, ref->segs, ref->nsegs, method, value, false, NULL);
            kind->version++;
        }
    }
    //  Undo in reverse order: an identity made for the try is the newest
    while (applied-- > 0) {
        const act_ref_t *ref = &alt->refs [applied];
        s_kind_t *kind = s_kind_require (self, ref->kind);
        if (instance) {
            s_ident_t *ident = s_ident (self, kind, instance, false);
            s_node_pop (ident->root, ref->segs, ref->nsegs);
            if (ident->cache)
                zhashx_purge (ident->cache);    //  It may have seen the write
            if (created [applied]) {
                zhashx_delete (kind->instances, instance);
                //  zlistx_last also moves the cursor, so it must run
                //  outside assert (): NDEBUG builds would delete the head
                s_ident_t *last = (s_ident_t *) zlistx_last (self->identities);
                assert (last == ident);
                (void) last;
                zlistx_delete (self->identities, zlistx_cursor (self->identities));
            }
        }
        else {
            json_decref (kind->doc);
            kind->doc = saved [applied];
            kind->version++;
        }
    }
    return rc;
}

int
act_ctx_output_check (act_ctx_t *self, const act_alt_t *alt, const json_t *value,
                      act_method_t method, const char *instance, act_err_t *err)
{
    return s_output_check (self, alt, value, method, instance, err);
}

//  Build the stored message for one target of an output
static json_t *
s_output_message (const act_ref_t *ref, const json_t *value, act_method_t method,
                  const char *instance, const json_t *call, const char *call_id)
{
    json_t *message = json_object ();
    json_object_set_new (message, "type", json_string ("data"));
    json_object_set_new (message, "kind", json_string (ref->kind));
    if (instance)
        json_object_set_new (message, "_instance", json_string (instance));
    json_object_set_new (message, "data", act_path_nest (ref->segs, ref->nsegs, value));
    json_object_set_new (message, "_outputPath", json_string (ref->text));
    json_object_set_new (message, "_outputMethod", json_string (act_method_name (method)));
    if (call)
        json_object_set (message, "_call", (json_t *) call);
    if (call_id)
        json_object_set_new (message, "_callId", json_string (call_id));
    return message;
}

json_t *
act_ctx_output (act_ctx_t *self, const act_alt_t *alt, const json_t *value,
                act_method_t method, const char *instance, const json_t *call,
                const char *call_id, act_err_t *err)
{
    if (s_output_check (self, alt, value, method, instance, err))
        return NULL;
    json_t *messages = json_array ();
    for (size_t i = 0; i < alt->nrefs; i++) {
        const act_ref_t *ref = &alt->refs [i];
        s_kind_t *kind = s_kind_require (self, ref->kind);
        s_apply (self, kind, instance, self->next_seq, ref->segs, ref->nsegs,
                 method, value);
        json_t *message = s_output_message (ref, value, method, instance, call, call_id);
        s_stamp (self, message);
        json_array_append_new (messages, message);
    }
    return messages;
}

json_t *
act_ctx_error (act_ctx_t *self, const json_t *error, const json_t *call,
               const char *call_id)
{
    json_t *message = json_object ();
    json_object_set_new (message, "type", json_string ("error"));
    json_object_set (message, "error", (json_t *) error);
    if (call)
        json_object_set (message, "_call", (json_t *) call);
    if (call_id)
        json_object_set_new (message, "_callId", json_string (call_id));
    s_stamp (self, message);
    return message;
}

int
act_ctx_replay (act_ctx_t *self, const json_t *message, act_err_t *err)
{
    json_t *seq = json_object_get (message, "_seq");
    if (!json_is_integer (seq) || json_integer_value (seq) < (json_int_t) self->next_seq)
        return act_err_set (err, ACT_E_INTERNAL,
                            "stored message has no _seq or is out of order");
    const char *type = json_string_value (json_object_get (message, "type"));
    if (type && streq (type, "data")) {
        const char *kind_name, *instance;
        act_method_t method;
        const char *path = json_string_value (json_object_get (message, "_outputPath"));
        json_t *data = json_object_get (message, "data");
        if (s_data_fields (message, &kind_name, &instance, &method,
                           path? ACT_SET: ACT_MERGE, err))
            return -1;
        uint64_t at = (uint64_t) json_integer_value (seq);
        if (path) {
            act_expr_t *expr = act_expr_parse (path, true, err);
            if (!expr)
                return -1;
            if (expr->nalts != 1 || expr->alts [0].nrefs != 1) {
                act_expr_destroy (&expr);
                return act_err_set (err, ACT_E_INTERNAL,
                                    "stored _outputPath is not one reference");
            }
            //  The written value is the display form's innermost value
            act_ref_t *ref = &expr->alts [0].refs [0];
            json_t *value = data;
            for (size_t i = 0; i < ref->nsegs && value; i++)
                value = json_object_get (value, ref->segs [i].key);
            s_kind_t *kind = s_kind_require (self, ref->kind);
            int rc = value? s_check (self, kind, instance, ref->segs, ref->nsegs,
                                     method, value, err)
                          : act_err_set (err, ACT_E_INTERNAL,
                                         "stored output's data does not match its path");
            if (rc == 0) {
                s_apply (self, kind, instance, at, ref->segs, ref->nsegs, method, value);
                s_ident (self, kind, instance, true);
            }
            act_expr_destroy (&expr);
            if (rc)
                return -1;
        }
        else {
            if (!data)
                return act_err_set (err, ACT_E_INTERNAL, "stored data message has no data");
            s_kind_t *kind = s_kind_require (self, kind_name);
            if (s_check (self, kind, instance, NULL, 0, method, data, err))
                return -1;
            s_apply (self, kind, instance, at, NULL, 0, method, data);
            s_describe (s_ident (self, kind, instance, true), message);
        }
    }
    self->next_seq = (uint64_t) json_integer_value (seq) + 1;
    return 0;
}

json_t *
act_ctx_get (act_ctx_t *self, const act_ref_t *ref, const char *instance)
{
    s_kind_t *kind = (s_kind_t *) zhashx_lookup (self->kinds, ref->kind);
    if (!kind)
        return NULL;
    s_ident_t *ident = instance? s_ident (self, kind, instance, false): NULL;
    return s_read (kind, ident, ref->segs, ref->nsegs);
}

bool
act_ctx_has (act_ctx_t *self, const act_ref_t *ref, const char *instance)
{
    s_kind_t *kind = (s_kind_t *) zhashx_lookup (self->kinds, ref->kind);
    if (!kind)
        return false;
    s_ident_t *ident = instance? s_ident (self, kind, instance, false): NULL;
    if (!ident)
        return act_path_get (kind->doc, ref->segs, ref->nsegs) != NULL;
    json_t *value = s_read (kind, ident, ref->segs, ref->nsegs);
    json_decref (value);
    return value != NULL;
}

json_t *
act_ctx_resolve (act_ctx_t *self, const act_expr_t *expr, const char *instance)
{
    for (size_t a = 0; a < expr->nalts; a++) {
        json_t *value = NULL;
        for (size_t r = 0; r < expr->alts [a].nrefs; r++) {
            json_decref (value);
            value = act_ctx_get (self, &expr->alts [a].refs [r], instance);
            if (!value)
                break;
        }
        if (value)
            return value;
    }
    return NULL;
}

json_t *
act_ctx_view (act_ctx_t *self)
{
    json_t *view = json_array ();
    for (s_ident_t *ident = zlistx_first (self->identities); ident;
         ident = zlistx_next (self->identities)) {
        json_t *entry = json_object ();
        json_object_set_new (entry, "type", json_string ("data"));
        json_object_set_new (entry, "kind", json_string (ident->kind->name));
        if (ident->instance)
            json_object_set_new (entry, "_instance", json_string (ident->instance));
        json_t *data = s_read (ident->kind, ident, NULL, 0);
        if (data)
            json_object_set_new (entry, "data", data);
        if (ident->description)
            json_object_set (entry, "description", ident->description);
        if (ident->schema)
            json_object_set (entry, "schema", ident->schema);
        json_array_append_new (view, entry);
    }
    return view;
}

char *
act_ctx_view_text (act_ctx_t *self)
{
    json_t *view = act_ctx_view (self);
    char *text = strdup ("");
    size_t index;
    json_t *entry;
    json_array_foreach (view, index, entry) {
        const char *kind = json_string_value (json_object_get (entry, "kind"));
        const char *instance = json_string_value (json_object_get (entry, "_instance"));
        json_t *data = json_object_get (entry, "data");
        json_t *description = json_object_get (entry, "description");
        json_t *schema = json_object_get (entry, "schema");
        char *pretty = data
            ? act_json_dumps (data, JSON_INDENT (2))
            : strdup ("(absent)");
        char *about = NULL;
        if (json_is_string (description))
            about = strdup (json_string_value (description));
        else
        if (description)
            about = act_json_dumps (description, 0);
        char *shape = schema? act_json_dumps (schema, JSON_INDENT (2)): NULL;
        char *name = instance
            ? zsys_sprintf ("\xC2\xB6%s (instance %s)", kind, instance)
            : zsys_sprintf ("\xC2\xB6%s", kind);
        char *section = zsys_sprintf ("%s## Data: %s\n%s\n%s%s%s%s%s%s",
            index? "\n": "", name, pretty,
            about? about: "", about? "\n": "",
            shape? "Schema for ": "", shape? name: "", shape? ":\n": "",
            shape? shape: "");
        char *joined = zsys_sprintf ("%s%s%s", text, section, shape? "\n": "");
        free (text);
        text = joined;
        zstr_free (&section);
        zstr_free (&name);
        free (pretty);
        free (about);
        free (shape);
    }
    json_decref (view);
    return text;
}

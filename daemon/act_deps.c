/*  =========================================================================
    act_deps - the dependency index of one context (see act_deps.h).
    ========================================================================= */

#include "act_deps.h"

typedef struct _s_node_t s_node_t;

typedef struct _s_link_t s_link_t;

//  Targets in the order of their calls' numbers
typedef struct {
    s_link_t *first;            //  The lowest number, NULL when empty
    s_link_t *last;             //  The highest
} s_list_t;

//  The targets of one scope at a node: of global calls, or of the calls
//  of one instance
typedef struct {
    s_list_t here;              //  Targets at the node's path
    s_list_t below;             //  Targets at its path and every path
                                //  under it
    size_t links;               //  Entries in both lists
    s_node_t *node;             //  An instance's: the node that holds it
                                //  (NULL: the global one, in its node)
} s_scope_t;

//  A target's entry in one list
struct _s_link_t {
    act_producer_t *producer;   //  The call that may write there
    s_scope_t *scope;           //  Scope of the list at its node
    s_link_t *prev;             //  The one numbered before it there
    s_link_t *next;             //  The one numbered after it there
    bool here;                  //  In the scope's here, else in below
};

//  A node of the trie: one path of one kind
struct _s_node_t {
    s_node_t *parent;           //  NULL for a kind's root
    char *key;                  //  Key in the parent (NULL: root or "-"),
                                //  in the node's allocation
    zhashx_t *children;         //  Segment text -> s_node_t, NULL if none;
                                //  keyed by each child's own key
    s_node_t *append;           //  The "-" child, NULL if none
    s_scope_t global;           //  Targets of global calls
    zhashx_t *instances;        //  Instance -> s_scope_t, NULL if none
    size_t count;               //  Targets at this node and below
};

struct _act_producer_t {
    uint64_t number;            //  The call's number: only later calls read
    char *instance;             //  Its instance, NULL: global
    void *owner;                //  Given back by lookups
    uint64_t stamp;             //  The last lookup that found it
    s_node_t **nodes;           //  Node of each target
    size_t ntargets;            //  Number of targets
    s_link_t *links;            //  Its entries: each target's in here at
                                //  its node, and in below at its node and
                                //  each ancestor
    size_t nlinks;              //  Number of entries
};

//  Steps of all lookups (act_deps_visits)
static size_t s_visits;

struct _act_deps_t {
    zhashx_t *kinds;            //  Kind -> s_node_t (the root)
    uint64_t stamp;             //  Current lookup
    size_t size;                //  Registrations held
};

//  What one lookup looks for
typedef struct {
    const char *instance;       //  The reader's instance, NULL: global
    uint64_t reader;            //  The reader's number
    zlistx_t *found;            //  act_deps_find: owners found, or NULL
    size_t matched;             //  act_deps_find: targets matched
    act_deps_bounds_t *bounds;  //  act_deps_bound: widened, or NULL
    bool hit;                   //  act_deps_bound: a target matched
} s_query_t;

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
    zhashx_destroy (&self->instances);
    free (self);
    *self_p = NULL;
}

static void
s_root_destroy (void **item)
{
    s_node_destroy ((s_node_t **) item);
}

static void
s_scope_free (void **item)
{
    free (*item);
    *item = NULL;
}

act_deps_t *
act_deps_new (void)
{
    act_deps_t *self = (act_deps_t *) calloc (1, sizeof (act_deps_t));
    if (self) {
        self->kinds = zhashx_new ();
        zhashx_set_destructor (self->kinds, s_root_destroy);
    }
    return self;
}

void
act_deps_destroy (act_deps_t **self_p)
{
    if (self_p && *self_p) {
        zhashx_destroy (&(*self_p)->kinds);
        free (*self_p);
        *self_p = NULL;
    }
}

//  The child of node for seg; made when create is set, else NULL if none
static s_node_t *
s_child (s_node_t *node, const act_seg_t *seg, bool create)
{
    if (seg->type == ACT_SEG_APPEND) {
        if (!node->append && create) {
            node->append = calloc (1, sizeof (s_node_t));
            node->append->parent = node;
        }
        return node->append;
    }
    s_node_t *child = node->children? zhashx_lookup (node->children, seg->key): NULL;
    if (!child && create) {
        if (!node->children) {
            node->children = zhashx_new ();
            zhashx_set_key_duplicator (node->children, NULL);
            zhashx_set_key_destructor (node->children, NULL);
        }
        size_t length = strlen (seg->key);
        child = calloc (1, sizeof (s_node_t) + length + 1);
        child->parent = node;
        child->key = (char *) (child + 1);
        memcpy (child->key, seg->key, length + 1);
        zhashx_insert (node->children, child->key, child);
    }
    return child;
}

//  The scope of instance (NULL: global) at node; made when create is
//  set, else NULL if none
static s_scope_t *
s_scope (s_node_t *node, const char *instance, bool create)
{
    if (!instance)
        return &node->global;
    s_scope_t *scope = node->instances? zhashx_lookup (node->instances, instance): NULL;
    if (!scope && create) {
        if (!node->instances) {
            node->instances = zhashx_new ();
            zhashx_set_destructor (node->instances, s_scope_free);
        }
        scope = calloc (1, sizeof (s_scope_t));
        scope->node = node;
        zhashx_insert (node->instances, instance, scope);
    }
    return scope;
}

//  Put the producer's next entry in the here or below list of its scope
//  at node, in number order: a context's calls register in the order of
//  their numbers, so its place is the end but after a restart's recovery
static void
s_link (act_producer_t *producer, s_node_t *node, bool here)
{
    s_link_t *link = &producer->links [producer->nlinks++];
    s_scope_t *scope = s_scope (node, producer->instance, true);
    s_list_t *list = here? &scope->here: &scope->below;
    s_link_t *after = list->last;
    while (after && after->producer->number > producer->number)
        after = after->prev;
    *link = (s_link_t) { producer, scope, after, after? after->next: list->first, here };
    if (link->next)
        link->next->prev = link;
    else
        list->last = link;
    if (after)
        after->next = link;
    else
        list->first = link;
    scope->links++;
}

//  Take an entry out of its list; an instance's scope left empty goes
static void
s_unlink (s_link_t *link)
{
    s_scope_t *scope = link->scope;
    s_list_t *list = link->here? &scope->here: &scope->below;
    if (link->prev)
        link->prev->next = link->next;
    else
        list->first = link->next;
    if (link->next)
        link->next->prev = link->prev;
    else
        list->last = link->prev;
    if (--scope->links == 0 && scope->node)
        zhashx_delete (scope->node->instances, link->producer->instance);
}

//  Register one target: the node of ref's path, counted on the way down,
//  in the below lists of the path and its ancestors, and in here at it
static void
s_register (act_deps_t *self, act_producer_t *producer, const act_ref_t *ref)
{
    s_node_t *node = zhashx_lookup (self->kinds, ref->kind);
    if (!node) {
        node = calloc (1, sizeof (s_node_t));
        zhashx_insert (self->kinds, ref->kind, node);
    }
    node->count++;
    s_link (producer, node, false);
    for (size_t s = 0; s < ref->nsegs; s++) {
        node = s_child (node, &ref->segs [s], true);
        node->count++;
        s_link (producer, node, false);
    }
    s_link (producer, node, true);
    producer->nodes [producer->ntargets++] = node;
}

act_producer_t *
act_deps_register (act_deps_t *self, const act_expr_t *output, const char *instance,
                   uint64_t number, void *owner)
{
    if (!output)
        return NULL;
    size_t targets = 0, links = 0;
    for (size_t a = 0; a < output->nalts; a++)
        for (size_t r = 0; r < output->alts [a].nrefs; r++) {
            targets++;
            links += output->alts [a].refs [r].nsegs + 2;
        }
    //  The producer, its entries and its nodes are one allocation
    act_producer_t *producer = calloc (1, sizeof (act_producer_t)
                                          + links * sizeof (s_link_t)
                                          + targets * sizeof (s_node_t *));
    producer->number = number;
    producer->instance = instance? strdup (instance): NULL;
    producer->owner = owner;
    producer->links = (s_link_t *) (producer + 1);
    producer->nodes = (s_node_t **) (producer->links + links);
    for (size_t a = 0; a < output->nalts; a++)
        for (size_t r = 0; r < output->alts [a].nrefs; r++)
            s_register (self, producer, &output->alts [a].refs [r]);
    self->size++;
    return producer;
}

void
act_deps_unregister (act_deps_t *self, act_producer_t **producer_p)
{
    act_producer_t *producer = *producer_p;
    if (!producer)
        return;
    //  Its entries first, while every node they are at is there
    for (size_t i = 0; i < producer->nlinks; i++)
        s_unlink (&producer->links [i]);
    for (size_t i = 0; i < producer->ntargets; i++) {
        //  Walk up, dropping nodes nothing is registered under any more; a
        //  kind's root stays (it is small and reused)
        s_node_t *node = producer->nodes [i];
        while (node) {
            s_node_t *parent = node->parent;
            if (--node->count == 0 && parent) {
                if (node == parent->append)
                    parent->append = NULL;
                else
                    zhashx_delete (parent->children, node->key);
                s_node_destroy (&node);
            }
            node = parent;
        }
    }
    free (producer->instance);
    free (producer);
    self->size--;
    *producer_p = NULL;
}

//  act_deps_find's visit of a list: every target numbered below the
//  reader, each owner added once
static void
s_every (act_deps_t *self, const s_list_t *list, s_query_t *query)
{
    for (s_link_t *link = list->first; link; link = link->next) {
        s_visits++;
        act_producer_t *producer = link->producer;
        if (producer->number >= query->reader)
            break;              //  Only earlier calls produce for a call
        query->matched++;
        if (producer->stamp != self->stamp) {
            producer->stamp = self->stamp;
            zlistx_add_end (query->found, producer->owner);
        }
    }
}

//  Widen bounds with producer
static void
s_widen (act_deps_bounds_t *bounds, act_producer_t *producer)
{
    if (!bounds->newest || producer->number > bounds->newest_number) {
        bounds->newest = producer->owner;
        bounds->newest_number = producer->number;
    }
    if (!bounds->oldest || producer->number < bounds->oldest_number) {
        bounds->oldest = producer->owner;
        bounds->oldest_number = producer->number;
    }
}

//  act_deps_bound's visit of a list: its oldest target is its first; its
//  newest below the reader is sought from both ends at once, so that it
//  costs the fewer of the targets before the reader and after it (at
//  its first evaluation a call is the newest; evaluated again, it is
//  mostly the oldest)
static void
s_ends (const s_list_t *list, s_query_t *query)
{
    s_link_t *low = list->first, *high = list->last;
    if (!low || low->producer->number >= query->reader)
        return;
    query->hit = true;
    s_widen (query->bounds, low->producer);
    //  low is before the reader and high after it, or the newest before it
    while (high->producer->number >= query->reader) {
        s_visits++;
        if (low->next->producer->number >= query->reader) {
            high = low;
            break;
        }
        low = low->next;
        high = high->prev;
    }
    s_widen (query->bounds, high->producer);
}

//  Visit the lists of node that may feed the reader: targets at its path
//  (here) or at its path and below (below), global ones and those of the
//  reader's instance
static void
s_visit (act_deps_t *self, s_node_t *node, bool below, s_query_t *query)
{
    s_visits++;
    s_scope_t *scopes [2] = { &node->global,
                              query->instance? s_scope (node, query->instance, false): NULL };
    for (size_t i = 0; i < 2 && scopes [i]; i++) {
        const s_list_t *list = below? &scopes [i]->below: &scopes [i]->here;
        if (query->found)
            s_every (self, list, query);
        else
            s_ends (list, query);
    }
}

//  Walk ref's path from node: targets at each ancestor, then at the path
//  and below it; a "-" child matches any segment
static void
s_walk (act_deps_t *self, s_node_t *node, const act_ref_t *ref, size_t depth,
        s_query_t *query)
{
    if (depth == ref->nsegs) {
        s_visit (self, node, true, query);
        return;
    }
    s_visit (self, node, false, query);
    s_node_t *child = s_child (node, &ref->segs [depth], false);
    if (child)
        s_walk (self, child, ref, depth + 1, query);
    if (node->append)
        s_walk (self, node->append, ref, depth + 1, query);
}

size_t
act_deps_find (act_deps_t *self, const act_ref_t *ref, const char *instance,
               uint64_t reader, zlistx_t *found)
{
    s_node_t *root = zhashx_lookup (self->kinds, ref->kind);
    if (!root)
        return 0;
    self->stamp++;
    s_query_t query = { instance, reader, found, 0, NULL, false };
    s_walk (self, root, ref, 0, &query);
    return query.matched;
}

bool
act_deps_bound (act_deps_t *self, const act_ref_t *ref, const char *instance,
                uint64_t reader, act_deps_bounds_t *bounds)
{
    s_node_t *root = zhashx_lookup (self->kinds, ref->kind);
    if (!root)
        return false;
    s_query_t query = { instance, reader, NULL, 0, bounds, false };
    s_walk (self, root, ref, 0, &query);
    return query.hit;
}

size_t
act_deps_size (act_deps_t *self)
{
    return self->size;
}

size_t
act_deps_visits (void)
{
    return s_visits;
}

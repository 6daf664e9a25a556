/*  =========================================================================
    act_deps - the dependency index of one context (see act_deps.h).
    ========================================================================= */

#include "act_deps.h"

typedef struct _s_node_t s_node_t;

typedef struct _s_target_t s_target_t;

//  One output target of a registered call
struct _s_target_t {
    act_producer_t *producer;   //  The call that may write there
    s_node_t *node;             //  Node it is registered at
    s_target_t *prev;           //  The one registered before it there
    s_target_t *next;           //  The one registered after it there
};

//  A node of the trie: one path of one kind
struct _s_node_t {
    s_node_t *parent;           //  NULL for a kind's root
    char *key;                  //  Key in the parent (NULL: root or "-"),
                                //  in the node's allocation
    zhashx_t *children;         //  Segment text -> s_node_t, NULL if none;
                                //  keyed by each child's own key
    s_node_t *append;           //  The "-" child, NULL if none
    s_target_t *first;          //  Targets registered at this path, in
    s_target_t *last;           //  order of registration
    size_t count;               //  Targets at this node and below
};

struct _act_producer_t {
    uint64_t number;            //  The call's number: only later calls read
    char *instance;             //  Its instance, NULL: global
    void *owner;                //  Given back by lookups
    uint64_t stamp;             //  The last lookup that found it
    s_target_t *targets;        //  Its targets
    size_t ntargets;            //  Number of targets
};

//  Steps of all lookups (act_deps_visits)
static size_t s_visits;

struct _act_deps_t {
    zhashx_t *kinds;            //  Kind -> s_node_t (the root)
    uint64_t stamp;             //  Current lookup
    size_t size;                //  Registrations held
};

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
    free (self);
    *self_p = NULL;
}

static void
s_root_destroy (void **item)
{
    s_node_destroy ((s_node_t **) item);
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

//  Register one target: the node of ref's path, counted on the way down
static void
s_register (act_deps_t *self, act_producer_t *producer, const act_ref_t *ref)
{
    s_node_t *node = zhashx_lookup (self->kinds, ref->kind);
    if (!node) {
        node = calloc (1, sizeof (s_node_t));
        zhashx_insert (self->kinds, ref->kind, node);
    }
    node->count++;
    for (size_t s = 0; s < ref->nsegs; s++) {
        node = s_child (node, &ref->segs [s], true);
        node->count++;
    }
    s_target_t *target = &producer->targets [producer->ntargets++];
    *target = (s_target_t) { producer, node, node->last, NULL };
    if (node->last)
        node->last->next = target;
    else
        node->first = target;
    node->last = target;
}

act_producer_t *
act_deps_register (act_deps_t *self, const act_expr_t *output, const char *instance,
                   uint64_t number, void *owner)
{
    if (!output)
        return NULL;
    size_t total = 0;
    for (size_t a = 0; a < output->nalts; a++)
        total += output->alts [a].nrefs;
    //  The producer and its targets are one allocation
    act_producer_t *producer = calloc (1, sizeof (act_producer_t)
                                          + total * sizeof (s_target_t));
    producer->number = number;
    producer->instance = instance? strdup (instance): NULL;
    producer->owner = owner;
    producer->targets = (s_target_t *) (producer + 1);
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
    for (size_t i = 0; i < producer->ntargets; i++) {
        s_target_t *target = &producer->targets [i];
        s_node_t *node = target->node;
        if (target->prev)
            target->prev->next = target->next;
        else
            node->first = target->next;
        if (target->next)
            target->next->prev = target->prev;
        else
            node->last = target->prev;
        //  Walk up, dropping nodes nothing is registered under any more; a
        //  kind's root stays (it is small and reused)
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

//  Add to found the producers registered at node that can feed the
//  reader. Returns how many targets there can, found before or not.
static size_t
s_at (act_deps_t *self, s_node_t *node, const char *instance, uint64_t reader,
      zlistx_t *found)
{
    size_t matched = 0;
    s_visits++;
    for (s_target_t *target = node->first; target; target = target->next) {
        s_visits++;
        act_producer_t *producer = target->producer;
        if (producer->number >= reader)
            continue;           //  Only earlier calls produce for a call
        if (producer->instance && !(instance && streq (producer->instance, instance)))
            continue;           //  Instance targets feed only their instance
        matched++;
        if (producer->stamp != self->stamp) {
            producer->stamp = self->stamp;
            zlistx_add_end (found, producer->owner);
        }
    }
    return matched;
}

//  The same for every node below node (descendants of the read path)
static size_t
s_below (act_deps_t *self, s_node_t *node, const char *instance, uint64_t reader,
         zlistx_t *found)
{
    size_t matched = 0;
    if (node->children)
        for (s_node_t *child = zhashx_first (node->children); child;
             child = zhashx_next (node->children))
            matched += s_at (self, child, instance, reader, found)
                     + s_below (self, child, instance, reader, found);
    if (node->append)
        matched += s_at (self, node->append, instance, reader, found)
                 + s_below (self, node->append, instance, reader, found);
    return matched;
}

//  Walk ref's path from node: targets at each ancestor, then at the path
//  and below it; a "-" child matches any segment
static size_t
s_walk (act_deps_t *self, s_node_t *node, const act_ref_t *ref, size_t depth,
        const char *instance, uint64_t reader, zlistx_t *found)
{
    size_t matched = s_at (self, node, instance, reader, found);
    if (depth == ref->nsegs)
        return matched + s_below (self, node, instance, reader, found);
    s_node_t *child = s_child (node, &ref->segs [depth], false);
    if (child)
        matched += s_walk (self, child, ref, depth + 1, instance, reader, found);
    if (node->append)
        matched += s_walk (self, node->append, ref, depth + 1, instance, reader, found);
    return matched;
}

size_t
act_deps_find (act_deps_t *self, const act_ref_t *ref, const char *instance,
               uint64_t reader, zlistx_t *found)
{
    s_node_t *root = zhashx_lookup (self->kinds, ref->kind);
    if (!root)
        return 0;
    self->stamp++;
    return s_walk (self, root, ref, 0, instance, reader, found);
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

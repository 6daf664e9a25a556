/*  =========================================================================
    act_ctx_node - the trie of one instance's writes, by path: a node per
    path with the writes that end there, oldest first (act_ctx_trie.c
    folds a path through them).
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "act_ctx_int.h"

//  Free one write with its copies of the path and value
static void
s_write_destroy (act_ctx_write_t *write)
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
act_ctx_node_t *
act_ctx_node_child (act_ctx_node_t *self, const act_seg_t *seg, bool create)
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
    root->first = root->first? root->first: seq;
    root->last = seq;
    for (size_t i = 0; i < nsegs; i++) {
        node = act_ctx_node_child (node, &segs [i], true);
        node->first = node->first? node->first: seq;
        node->last = seq;
    }
    if (node->nwrites == node->capacity) {
        node->capacity = node->capacity? node->capacity * 2: 2;
        node->writes = realloc (node->writes, node->capacity * sizeof (act_ctx_write_t *));
    }
    act_ctx_write_t *write = calloc (1, sizeof *write);
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
        node = act_ctx_node_child (node, &segs [i], false);
    if (node && node->nwrites)
        s_write_destroy (node->writes [--node->nwrites]);
}


/*  =========================================================================
    act_ctx_lazy - output values kept as text in a kind's global document
    until something reads them (issue 21, "output values parsed lazily").

    A set in the global scope needs nothing of its value to be checked or
    applied: the levels above its path decide. So a worker's result
    written with set goes into the document as a stand-in holding the
    result's JSON text, and becomes a jansson tree only when a read, a
    check or a write needs what is at or below it (act_ctx_lazy_force).
    A push is the same: it needs only the type of its target, and appends
    the stand-in.

    The stand-in is a JSON string whose first byte is 0xFF, followed by the
    text. No JSON text decodes to such a string (0xFF is never UTF-8, and
    act_json_parse refuses what is not), so it cannot be mistaken for data;
    and being an ordinary jansson value, it moves, is copied and is dropped
    with the document like any other.
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_json.h"
#include "act_ctx_int.h"

//  The first byte of a stand-in's string
#define S_MARK '\xff'

//  A stand-in for the JSON text of size bytes at text; NULL when out of
//  memory
json_t *
act_ctx_lazy_new (const char *text, size_t size)
{
    //  jansson copies the string: a short one is marked on the stack
    char local [1024];
    char *marked = size < sizeof local? local: malloc (size + 1);
    if (!marked)
        return NULL;
    marked [0] = S_MARK;
    memcpy (marked + 1, text, size);
    json_t *lazy = json_stringn_nocheck (marked, size + 1);
    if (marked != local)
        free (marked);
    return lazy;
}

//  True when value is a stand-in
bool
act_ctx_lazy_is (const json_t *value)
{
    return json_is_string (value) && json_string_length (value) > 0
        && json_string_value (value) [0] == S_MARK;
}

//  The value a stand-in holds, parsed (a new reference). The text was
//  accepted by act_scan, whose verdicts are act_json_parse's, so only a
//  lack of memory can fail it: the value is then null
static json_t *
s_parse (const json_t *lazy)
{
    act_err_t err = { 0 };
    json_t *value = act_json_parse (json_string_value (lazy) + 1,
                                    json_string_length (lazy) - 1, &err);
    return value? value: json_null ();
}

//  Parse every stand-in in value and below it; returns value itself, or
//  what replaces it when value is a stand-in (value is then released)
static json_t *
s_force_tree (json_t *value)
{
    if (act_ctx_lazy_is (value)) {
        json_t *parsed = s_parse (value);
        json_decref (value);
        return parsed;
    }
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach (value, key, member) {
            json_t *forced = s_force_tree (json_incref (member));
            //  Setting a key that exists replaces its value in place: the
            //  iteration goes on
            if (forced != member)
                json_object_set_new_nocheck (value, key, forced);
            else
                json_decref (forced);
        }
    }
    else
    if (json_is_array (value)) {
        size_t index;
        json_t *member;
        json_array_foreach (value, index, member) {
            json_t *forced = s_force_tree (json_incref (member));
            if (forced != member)
                json_array_set_new (value, index, forced);
            else
                json_decref (forced);
        }
    }
    return value;
}

//  The value in parent under key (an object) or at index (an array), or
//  the document at *root_p when parent is NULL: parsed when it is a
//  stand-in, and everything below it too when deep. Returns what is there
static json_t *
s_force_at (json_t **root_p, json_t *parent, const char *key, size_t index, bool deep)
{
    json_t *node = !parent? *root_p
                 : json_is_object (parent)? json_object_get (parent, key)
                 : json_array_get (parent, index);
    if (!node || !(deep || act_ctx_lazy_is (node)))
        return node;
    json_t *forced = deep? s_force_tree (json_incref (node)): s_parse (node);
    if (forced == node)
        json_decref (forced);           //  Changed in place, if at all
    else
    if (!parent) {
        json_decref (*root_p);
        *root_p = forced;
    }
    else
    if (json_is_object (parent))
        json_object_set_new_nocheck (parent, key, forced);
    else
        json_array_set_new (parent, index, forced);
    return forced;
}

//  Make the kind's global document a tree where a path reads it: each
//  level segs walks through (the document and the containers down to the
//  parent of segs' end), and then as reach says the value at segs
//  (ACT_CTX_LAZY_NODE) or that value and everything below it
//  (ACT_CTX_LAZY_DEEP). Changes how the document is held, never what it
//  means. Nothing to do when the kind holds no stand-in
void
act_ctx_lazy_force (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                    act_ctx_lazy_reach_t reach)
{
    if (!kind->lazy)
        return;
    json_t *parent = NULL;
    const char *key = NULL;
    size_t index = 0;
    for (size_t i = 0; i < nsegs; i++) {
        json_t *current = s_force_at (&kind->doc, parent, key, index, false);
        const act_seg_t *seg = &segs [i];
        if (json_is_array (current) && seg->type == ACT_SEG_INDEX
        &&  seg->index < json_array_size (current))
            index = seg->index;
        else
        if (json_is_object (current) && seg->type != ACT_SEG_APPEND
        &&  json_object_get (current, seg->key))
            key = seg->key;
        else
            return;                     //  Nothing there: nothing below
        parent = current;
    }
    if (reach != ACT_CTX_LAZY_ABOVE)
        s_force_at (&kind->doc, parent, key, index, reach == ACT_CTX_LAZY_DEEP);
    if (nsegs == 0 && reach == ACT_CTX_LAZY_DEEP)
        kind->lazy = false;             //  The whole document is a tree
}

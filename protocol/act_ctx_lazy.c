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

    A concat of a string onto a long string is kept the same way, as a
    rope: jansson's strings have no spare room, so each concat copied the
    whole stored string (n writes onto one path cost O(n^2): an audit, 400
    writes of 256 KB, 35 s). A rope is an array whose first item is the
    string 0xFE (never UTF-8, so never data) and whose other items are the
    pieces; a concat appends its piece, and a read joins the pieces once,
    as it parses a stand-in. An instance's cached fold of a path
    (act_ctx_trie.c) keeps its value's concats as a rope the same way.
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_json.h"
#include "act_ctx_int.h"

//  The first byte of a stand-in's string
#define S_MARK '\xff'
//  A rope's first item, a string of this one byte
#define S_ROPE_MARK '\xfe'
//  A concat onto a string at least this long (in bytes) makes a rope: a
//  shorter one costs less to copy than a rope to keep
#define S_ROPE_MIN 256

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

//  True when value is a rope
static bool
s_rope_is (const json_t *value)
{
    json_t *mark = json_is_array (value)? json_array_get (value, 0): NULL;
    return json_is_string (mark) && json_string_length (mark) == 1
        && json_string_value (mark) [0] == S_ROPE_MARK;
}

//  True when value stands for another: a stand-in or a rope
static bool
s_lazy_is (const json_t *value)
{
    return act_ctx_lazy_is (value) || s_rope_is (value);
}

//  The strings of array from index from on, joined (a new reference): a
//  rope's pieces from 1
static json_t *
s_join (const json_t *array, size_t from)
{
    size_t size = 0, index;
    json_t *piece;
    json_array_foreach (array, index, piece)
        size += index >= from? json_string_length (piece): 0;
    char *text = malloc (size + 1);
    size_t at = 0;
    json_array_foreach (array, index, piece)
        if (index >= from && text) {
            memcpy (text + at, json_string_value (piece), json_string_length (piece));
            at += json_string_length (piece);
        }
    json_t *joined = text? json_stringn_nocheck (text, size): NULL;
    free (text);
    return joined? joined: json_null ();
}

//  The value a stand-in or a rope holds (a new reference). A stand-in's
//  text was accepted by act_scan, whose verdicts are act_json_parse's, so
//  only a lack of memory can fail it (or a rope's join): the value is then
//  null
static json_t *
s_parse (const json_t *lazy)
{
    if (s_rope_is (lazy))
        return s_join (lazy, 1);
    act_err_t err = { 0 };
    json_t *value = act_json_parse (json_string_value (lazy) + 1,
                                    json_string_length (lazy) - 1, &err);
    return value? value: json_null ();
}

//  Parse every stand-in in value and below it; returns value itself, or
//  what replaces it when value is a stand-in (value is then released).
//  Adds the values it looked at to *walked
static json_t *
s_force_tree (json_t *value, size_t *walked)
{
    (*walked)++;
    if (s_lazy_is (value)) {
        json_t *parsed = s_parse (value);
        json_decref (value);
        return parsed;
    }
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach (value, key, member) {
            json_t *forced = s_force_tree (json_incref (member), walked);
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
            json_t *forced = s_force_tree (json_incref (member), walked);
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
//  stand-in, and everything below it too when deep. Returns what is there;
//  adds the values it looked at to *walked
static json_t *
s_force_at (json_t **root_p, json_t *parent, const char *key, size_t index, bool deep,
            size_t *walked)
{
    json_t *node = !parent? *root_p
                 : json_is_object (parent)? json_object_get (parent, key)
                 : json_array_get (parent, index);
    if (!node || !(deep || s_lazy_is (node))) {
        *walked += node != NULL;
        return node;
    }
    if (!deep)
        (*walked)++;
    json_t *forced = deep? s_force_tree (json_incref (node), walked): s_parse (node);
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
//  means. Nothing to do when the kind holds no stand-in. Returns the
//  values it looked at: its cost, for act_ctx_visited
size_t
act_ctx_lazy_force (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                    act_ctx_lazy_reach_t reach)
{
    size_t walked = 0;
    if (!kind->lazy)
        return walked;
    json_t *parent = NULL;
    const char *key = NULL;
    size_t index = 0;
    for (size_t i = 0; i < nsegs; i++) {
        json_t *current = s_force_at (&kind->doc, parent, key, index, false, &walked);
        const act_seg_t *seg = &segs [i];
        if (json_is_array (current) && seg->type == ACT_SEG_INDEX
        &&  seg->index < json_array_size (current))
            index = seg->index;
        else
        if (json_is_object (current) && seg->type != ACT_SEG_APPEND
        &&  json_object_get (current, seg->key))
            key = seg->key;
        else
            return walked;              //  Nothing there: nothing below
        parent = current;
    }
    if (reach != ACT_CTX_LAZY_ABOVE)
        s_force_at (&kind->doc, parent, key, index, reach == ACT_CTX_LAZY_DEEP, &walked);
    if (nsegs == 0 && reach == ACT_CTX_LAZY_DEEP)
        kind->lazy = false;             //  The whole document is a tree
    return walked;
}

//  The value at segs in the kind's document, with its container in
//  *parent (NULL: the document itself); NULL when there is none
static json_t *
s_locate (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs, json_t **parent)
{
    json_t *node = kind->doc;
    *parent = NULL;
    for (size_t i = 0; i < nsegs && node; i++) {
        *parent = node;
        if (json_is_array (node))
            node = segs [i].type == ACT_SEG_INDEX? json_array_get (node, segs [i].index): NULL;
        else
        if (json_is_object (node) && segs [i].type != ACT_SEG_APPEND)
            node = json_object_get (node, segs [i].key);
        else
            node = NULL;
    }
    return node;
}

//  node (a rope, or a string of S_ROPE_MIN bytes or more) with the string
//  value appended: node itself when it is a rope, else a new rope holding
//  it (a new reference)
static json_t *
s_rope_add (json_t *node, const json_t *value)
{
    json_t *piece = json_stringn_nocheck (json_string_value (value), json_string_length (value));
    //  A short last piece takes the new one in: each piece but the last
    //  is S_ROPE_MIN bytes or more, so a rope of many small concats costs
    //  little more than their text
    size_t pieces = s_rope_is (node)? json_array_size (node): 0;
    json_t *last = pieces > 2? json_array_get (node, pieces - 1): NULL;
    if (last && json_string_length (last) < S_ROPE_MIN) {
        json_t *both = json_pack ("[Oo]", last, piece);
        piece = s_join (both, 0);
        json_decref (both);
        json_array_remove (node, pieces - 1);
    }
    if (pieces) {
        json_array_append_new (node, piece);
        return node;
    }
    char mark = S_ROPE_MARK;
    json_t *made = json_array ();
    json_array_append_new (made, json_stringn_nocheck (&mark, 1));
    json_array_append (made, node);
    json_array_append_new (made, piece);
    return made;
}

//  True when a concat of value onto node is one a rope takes
static bool
s_rope_takes (const json_t *node, const json_t *value)
{
    return json_is_string (value) && !act_ctx_lazy_is (value)
        && (s_rope_is (node)
        ||  (json_is_string (node) && json_string_length (node) >= S_ROPE_MIN));
}

bool
act_ctx_lazy_concat (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                     const json_t *value, bool dry_run)
{
    if (!json_is_string (value) || act_ctx_lazy_is (value))
        return false;
    //  The levels above are walked through as any write does; a stand-in
    //  at the end is parsed (it may hold a string), a rope is not joined
    act_ctx_lazy_force (kind, segs, nsegs, ACT_CTX_LAZY_ABOVE);
    json_t *parent;
    json_t *node = s_locate (kind, segs, nsegs, &parent);
    if (act_ctx_lazy_is (node)) {
        act_ctx_lazy_force (kind, segs, nsegs, ACT_CTX_LAZY_NODE);
        node = s_locate (kind, segs, nsegs, &parent);
    }
    if (!s_rope_takes (node, value))
        return false;                   //  The usual way: a copy, or an error
    if (dry_run)
        return true;
    json_t *rope = s_rope_add (node, value);
    if (rope == node)
        return true;
    if (!parent) {
        json_decref (kind->doc);
        kind->doc = rope;
    }
    else
    if (json_is_array (parent))
        json_array_set_new (parent, segs [nsegs - 1].index, rope);
    else
        json_object_set_new_nocheck (parent, segs [nsegs - 1].key, rope);
    kind->lazy = true;
    return true;
}

bool
act_ctx_lazy_rope_append (json_t **value_p, const json_t *value)
{
    if (!s_rope_takes (*value_p, value))
        return false;
    json_t *rope = s_rope_add (*value_p, value);
    if (rope != *value_p) {
        json_decref (*value_p);
        *value_p = rope;
    }
    return true;
}

bool
act_ctx_lazy_rope_is (const json_t *value)
{
    return s_rope_is (value);
}

void
act_ctx_lazy_rope_join (json_t **value_p)
{
    if (s_rope_is (*value_p)) {
        json_t *joined = s_join (*value_p, 1);
        json_decref (*value_p);
        *value_p = joined;
    }
}

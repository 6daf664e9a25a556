/*  =========================================================================
    property_model - the naive model the property tests hold the library
    to (test_property.c, test_property_model.c): SEMANTICS.md section 4's
    writes written out plainly, with the model's own path segments, path
    walk and merge patch (nothing from libactd but its codes and methods).

    Include after <cmocka.h>.
    ========================================================================= */

#ifndef PROPERTY_MODEL_H_INCLUDED
#define PROPERTY_MODEL_H_INCLUDED

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "actd/act.h"

//  --------------------------------------------------------------------------
//  The model's own paths: a key ("a", "b", "c"), an index, or "-"

typedef enum { M_KEY, M_INDEX, M_APPEND } m_seg_type_t;

typedef struct {
    m_seg_type_t type;
    char text [24];             //  The key, the index in decimal, or "-"
    size_t index;               //  M_INDEX
} m_seg_t;

//  A key segment
static inline m_seg_t
s_seg_key (const char *key)
{
    m_seg_t seg = { M_KEY, "", 0 };
    snprintf (seg.text, sizeof seg.text, "%s", key);
    return seg;
}

//  An index segment, its text the index in decimal
static inline m_seg_t
s_seg_index (size_t index)
{
    m_seg_t seg = { M_INDEX, "", index };
    snprintf (seg.text, sizeof seg.text, "%zu", index);
    return seg;
}

//  The append segment, "-"
static inline m_seg_t
s_seg_append (void)
{
    m_seg_t seg = { M_APPEND, "-", 0 };
    return seg;
}


//  --------------------------------------------------------------------------
//  The model's semantics, written plainly. Every function builds new
//  values and never changes its inputs; NULL is absent.
//
//  Where the project's decisions leave a choice open, the model takes the
//  one act_path_write documents:
//  - a write whose value breaks its method's rule (assign of a non-object,
//    concat of neither array nor string) is type_mismatch whatever its
//    path, even one that would be bad_path;
//  - "-" on an object is bad_path (it is not a key), in writes and erases;
//  - erase whose last segment lands on an array is bad_path, even at
//    index = length or "-" (an array element is never erased).

static inline const char *
s_key_of (const m_seg_t *seg)
{
    return seg->text;           //  A key, or an index as its decimal text
}

//  Reading: an index indexes an array (absent out of range) and is a key
//  on an object; a key on an array is absent; anything on a scalar or null
//  is absent
static inline const json_t *
s_model_read (const json_t *doc, const m_seg_t *segs, size_t depth)
{
    const json_t *current = doc;
    for (size_t i = 0; i < depth && current; i++) {
        if (json_is_array (current))
            current = segs [i].type == M_INDEX
                    ? json_array_get (current, segs [i].index): NULL;
        else
        if (json_is_object (current))
            current = json_object_get (current, s_key_of (&segs [i]));
        else
            current = NULL;
    }
    return current;
}

//  RFC 7396
static inline json_t *
s_model_merge (const json_t *target, const json_t *patch)
{
    if (!json_is_object (patch))
        return json_deep_copy (patch);
    json_t *result = json_is_object (target)? json_deep_copy (target): json_object ();
    const char *key;
    json_t *member;
    json_object_foreach ((json_t *) patch, key, member) {
        if (json_is_null (member))
            json_object_del (result, key);
        else
            json_object_set_new (result, key,
                s_model_merge (json_object_get (result, key), member));
    }
    return result;
}

//  The method's rules on V alone (checked before the path is walked)
static inline const char *
s_model_check_value (act_method_t method, const json_t *value)
{
    if (method == ACT_ASSIGN && !json_is_object (value))
        return ACT_E_TYPE_MISMATCH;
    if (method == ACT_CONCAT && !json_is_array (value) && !json_is_string (value))
        return ACT_E_TYPE_MISMATCH;
    return NULL;
}

//  T combined with V by method, or NULL with *code set
static inline json_t *
s_model_combine (const json_t *target, const json_t *value, act_method_t method,
                 const char **code)
{
    bool empty = !target || json_is_null (target);
    switch (method) {
        case ACT_SET:
            return json_deep_copy (value);
        case ACT_MERGE:
            return s_model_merge (target, value);
        case ACT_ASSIGN: {
            if (target && !json_is_object (target)) {
                *code = ACT_E_TYPE_MISMATCH;
                return NULL;
            }
            json_t *result = target? json_deep_copy (target): json_object ();
            const char *key;
            json_t *member;
            json_object_foreach ((json_t *) value, key, member)
                json_object_set_new (result, key, json_deep_copy (member));
            return result;
        }
        case ACT_PUSH: {
            if (!empty && !json_is_array (target)) {
                *code = ACT_E_TYPE_MISMATCH;
                return NULL;
            }
            json_t *result = empty? json_array (): json_deep_copy (target);
            json_array_append_new (result, json_deep_copy (value));
            return result;
        }
        case ACT_CONCAT: {
            if (empty)
                return json_deep_copy (value);
            if (json_typeof (target) != json_typeof (value)) {
                *code = ACT_E_TYPE_MISMATCH;
                return NULL;
            }
            if (json_is_array (target)) {
                json_t *result = json_deep_copy (target);
                size_t index;
                json_t *member;
                json_array_foreach ((json_t *) value, index, member)
                    json_array_append_new (result, json_deep_copy (member));
                return result;
            }
            size_t left = json_string_length (target);
            size_t right = json_string_length (value);
            char *joined = malloc (left + right + 1);
            assert_non_null (joined);
            memcpy (joined, json_string_value (target), left);
            memcpy (joined + left, json_string_value (value), right);
            json_t *result = json_stringn (joined, left + right);
            free (joined);
            return result;
        }
        default:
            *code = ACT_E_INTERNAL;
            return NULL;
    }
}

//  T with V written at the path (set, merge, assign, push, concat), as a
//  new value, or NULL with *code set
static inline json_t *
s_model_write_at (const json_t *target, const m_seg_t *segs, size_t depth,
                  act_method_t method, const json_t *value, const char **code)
{
    if (depth == 0)
        return s_model_combine (target, value, method, code);
    const m_seg_t *seg = &segs [0];
    if (json_is_array (target)) {
        //  An index < length descends, index = length or "-" appends, a
        //  larger index or a key is bad_path
        size_t length = json_array_size (target);
        if (seg->type == M_KEY) {
            *code = ACT_E_BAD_PATH;
            return NULL;
        }
        size_t at = seg->type == M_APPEND? length: seg->index;
        if (at > length) {
            *code = ACT_E_BAD_PATH;
            return NULL;
        }
        json_t *child = s_model_write_at (at < length? json_array_get (target, at): NULL,
                                          segs + 1, depth - 1, method, value, code);
        if (!child)
            return NULL;
        json_t *result = json_deep_copy (target);
        if (at < length)
            json_array_set_new (result, at, child);
        else
            json_array_append_new (result, child);
        return result;
    }
    //  "-" needs an array
    if (seg->type == M_APPEND) {
        *code = ACT_E_BAD_PATH;
        return NULL;
    }
    if (json_is_object (target)) {
        json_t *child = s_model_write_at (json_object_get (target, s_key_of (seg)),
                                          segs + 1, depth - 1, method, value, code);
        if (!child)
            return NULL;
        json_t *result = json_deep_copy (target);
        json_object_set_new (result, s_key_of (seg), child);
        return result;
    }
    //  Absent, null or a scalar: replaced by a new object
    json_t *child = s_model_write_at (NULL, segs + 1, depth - 1, method, value, code);
    if (!child)
        return NULL;
    json_t *result = json_object ();
    json_object_set_new (result, s_key_of (seg), child);
    return result;
}

//  Erase never creates anything. Returns NULL (accepted) with *result the
//  new document, or a code.
static inline const char *
s_model_erase (const json_t *doc, const m_seg_t *segs, size_t depth, json_t **result)
{
    if (depth == 0) {
        *result = NULL;         //  The whole kind becomes absent
        return NULL;
    }
    //  Walk first, to see whether there is anything to remove
    const json_t *current = doc;
    bool found = false;
    for (size_t i = 0; i < depth; i++) {
        const m_seg_t *seg = &segs [i];
        bool last = i == depth - 1;
        if (json_is_array (current)) {
            size_t length = json_array_size (current);
            if (seg->type == M_KEY)
                return ACT_E_BAD_PATH;
            size_t at = seg->type == M_APPEND? length: seg->index;
            if (at > length)
                return ACT_E_BAD_PATH;
            if (last)
                return ACT_E_BAD_PATH;  //  Would renumber the siblings
            if (at == length)
                break;                  //  Nothing there: no change
            current = json_array_get (current, at);
        }
        else
        if (json_is_object (current)) {
            if (seg->type == M_APPEND)
                return ACT_E_BAD_PATH;
            const json_t *child = json_object_get (current, s_key_of (seg));
            if (!child)
                break;                  //  Missing member: no change
            if (last)
                found = true;
            current = child;
        }
        else
            break;                      //  Absent, null or scalar: no change
    }
    *result = doc? json_deep_copy (doc): NULL;
    if (found) {
        json_t *parent = *result;
        for (size_t i = 0; i + 1 < depth; i++)
            parent = json_is_array (parent)
                   ? json_array_get (parent, segs [i].index)
                   : json_object_get (parent, s_key_of (&segs [i]));
        json_object_del (parent, s_key_of (&segs [depth - 1]));
    }
    return NULL;
}

//  Apply a write to doc. Returns NULL (accepted) with *result the new
//  document, or the code of the refusal (and *result untouched).
static inline const char *
s_model_apply (const json_t *doc, const m_seg_t *segs, size_t depth,
               act_method_t method, const json_t *value, json_t **result)
{
    if (method == ACT_ERASE)
        return s_model_erase (doc, segs, depth, result);
    const char *code = s_model_check_value (method, value);
    if (code)
        return code;
    json_t *written = s_model_write_at (doc, segs, depth, method, value, &code);
    if (!written)
        return code;
    *result = written;
    return NULL;
}

#endif

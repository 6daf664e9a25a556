/*  =========================================================================
    act_method - the six output methods and writes at a path.

    A write first walks the path and checks everything (structure, then the
    method's type rules) and only then changes the document, so a refused
    write leaves it exactly as it was. Documents own their values: what a
    write stores is copied from the caller's value, which lets later writes
    change the document in place (a push is O(1), not a copy of the array).
    ========================================================================= */

#include <string.h>
#include <stdlib.h>
#include "actd/act_method.h"

static const char *s_names [] = { "set", "merge", "assign", "push", "concat", "erase" };

int
act_method_parse (const char *name, act_method_t *method)
{
    for (int index = 0; index < 6; index++)
        if (name && strcmp (name, s_names [index]) == 0) {
            *method = (act_method_t) index;
            return 0;
        }
    return -1;
}

const char *
act_method_name (act_method_t method)
{
    return (unsigned) method < 6? s_names [method]: "?";
}

json_t *
act_merge_patch (json_t *target, const json_t *patch)
{
    if (!json_is_object (patch)) {
        json_decref (target);
        return json_deep_copy (patch);
    }
    if (!json_is_object (target)) {
        json_decref (target);
        target = json_object ();
    }
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) patch, key, value) {
        if (json_is_null (value))
            json_object_del (target, key);
        else {
            json_t *member = json_incref (json_object_get (target, key));
            json_object_set_new (target, key, act_merge_patch (member, value));
        }
    }
    return target;
}

json_t *
act_path_get (json_t *doc, const act_seg_t *segs, size_t nsegs)
{
    json_t *current = doc;
    for (size_t i = 0; i < nsegs && current; i++) {
        const act_seg_t *seg = &segs [i];
        if (json_is_array (current))
            current = seg->type == ACT_SEG_INDEX
                    ? json_array_get (current, seg->index): NULL;
        else
        if (json_is_object (current) && seg->type != ACT_SEG_APPEND)
            current = json_object_get (current, seg->key);
        else
            current = NULL;
    }
    return current;
}

int
act_method_check_value (act_method_t method, const json_t *value, act_err_t *err)
{
    if (method == ACT_ASSIGN && !json_is_object (value))
        return act_err_set (err, ACT_E_TYPE_MISMATCH, "assign needs an object value");
    if (method == ACT_CONCAT && !json_is_array (value) && !json_is_string (value))
        return act_err_set (err, ACT_E_TYPE_MISMATCH,
                            "concat needs an array or a string value");
    return 0;
}

static const char *
s_type_name (const json_t *value)
{
    if (!value)
        return "absent";
    switch (json_typeof (value)) {
        case JSON_OBJECT:   return "an object";
        case JSON_ARRAY:    return "an array";
        case JSON_STRING:   return "a string";
        case JSON_NULL:     return "null";
        case JSON_TRUE:
        case JSON_FALSE:    return "a boolean";
        default:            return "a number";
    }
}

//  The method's rules on the current value T (NULL: absent)
static int
s_check_target (act_method_t method, const json_t *target, const json_t *value,
                act_err_t *err)
{
    bool empty = !target || json_is_null (target);
    if (method == ACT_ASSIGN && target && !json_is_object (target))
        return act_err_set (err, ACT_E_TYPE_MISMATCH,
                            "assign needs an object or absent target, found %s",
                            s_type_name (target));
    if (method == ACT_PUSH && !empty && !json_is_array (target))
        return act_err_set (err, ACT_E_TYPE_MISMATCH,
                            "push needs an array, null or absent target, found %s",
                            s_type_name (target));
    if (method == ACT_CONCAT && !empty && json_typeof (target) != json_typeof (value))
        return act_err_set (err, ACT_E_TYPE_MISMATCH,
                            "concat of %s onto %s", s_type_name (value),
                            s_type_name (target));
    return 0;
}

//  Combine target (an owned reference, or NULL) with value by method, once
//  the checks passed. Returns the new value (owned), NULL for erase. Works
//  in place on target when it can.
static json_t *
s_combine (act_method_t method, json_t *target, const json_t *value, bool share)
{
    switch (method) {
        case ACT_SET:
            json_decref (target);
            return share? json_incref ((json_t *) value): json_deep_copy (value);
        case ACT_MERGE:
            return act_merge_patch (target, value);
        case ACT_ASSIGN: {
            if (!target)
                target = json_object ();
            const char *key;
            json_t *member;
            json_object_foreach ((json_t *) value, key, member)
                json_object_set_new (target, key, json_deep_copy (member));
            return target;
        }
        case ACT_PUSH:
            if (!json_is_array (target)) {
                json_decref (target);
                target = json_array ();
            }
            json_array_append_new (target, json_deep_copy (value));
            return target;
        case ACT_CONCAT:
            if (!target || json_is_null (target)) {
                json_decref (target);
                return json_deep_copy (value);
            }
            if (json_is_array (target)) {
                size_t index;
                json_t *member;
                json_array_foreach (value, index, member)
                    json_array_append_new (target, json_deep_copy (member));
                return target;
            }
            else {
                size_t left = json_string_length (target);
                size_t right = json_string_length (value);
                char *joined = malloc (left + right + 1);
                if (!joined)
                    return target;
                memcpy (joined, json_string_value (target), left);
                memcpy (joined + left, json_string_value (value), right);
                json_t *result = json_stringn_nocheck (joined, left + right);
                free (joined);
                json_decref (target);
                return result;
            }
        case ACT_ERASE:
        default:
            json_decref (target);
            return NULL;
    }
}

//  Where a value lives: the document root, an object member, an existing
//  array element, or the slot one past an array's end
typedef struct {
    enum { SLOT_ROOT, SLOT_KEY, SLOT_INDEX, SLOT_APPEND } type;
    json_t *parent;             //  The container, NULL for the root
    const char *key;            //  SLOT_KEY: member name
    size_t index;               //  SLOT_INDEX: element index
} s_slot_t;

//  Store value (owned; NULL removes) in slot
static void
s_store (json_t **doc_p, s_slot_t *slot, json_t *value)
{
    switch (slot->type) {
        case SLOT_ROOT:
            json_decref (*doc_p);
            *doc_p = value;
            break;
        case SLOT_KEY:
            if (value)
                json_object_set_new (slot->parent, slot->key, value);
            else
                json_object_del (slot->parent, slot->key);
            break;
        case SLOT_INDEX:
            json_array_set_new (slot->parent, slot->index, value);
            break;
        case SLOT_APPEND:
            json_array_append_new (slot->parent, value);
            break;
    }
}

//  act_path_write; with share, a set keeps value itself (a new reference)
static int
s_path_write (json_t **doc_p, const act_seg_t *segs, size_t nsegs, act_method_t method,
              const json_t *value, bool dry_run, bool share, act_err_t *err)
{
    if (act_method_check_value (method, value, err))
        return -1;
    s_slot_t slot = { SLOT_ROOT, NULL, NULL, 0 };
    json_t *current = *doc_p;
    for (size_t i = 0; i < nsegs; i++) {
        const act_seg_t *seg = &segs [i];
        s_slot_t next;
        json_t *child;
        if (json_is_array (current)) {
            size_t size = json_array_size (current);
            if (seg->type == ACT_SEG_KEY)
                return act_err_set (err, ACT_E_BAD_PATH,
                                    "key '%.64s' (segment %zu) applied to an array",
                                    seg->key, i + 1);
            size_t index = seg->type == ACT_SEG_APPEND? size: seg->index;
            if (index > size)
                return act_err_set (err, ACT_E_BAD_PATH,
                                    "index %.24s (segment %zu) is past the end "
                                    "of an array of %zu", seg->key, i + 1, size);
            if (method == ACT_ERASE) {
                if (i == nsegs - 1)
                    return act_err_set (err, ACT_E_BAD_PATH,
                        "erase cannot remove an array element (segment %zu): "
                        "it would renumber its siblings", i + 1);
                if (index == size)
                    return 0;   //  Nothing there to erase
            }
            child = index < size? json_array_get (current, index): NULL;
            next = (s_slot_t) { index < size? SLOT_INDEX: SLOT_APPEND, current, NULL, index };
        }
        else
        if (json_is_object (current)) {
            if (seg->type == ACT_SEG_APPEND)
                return act_err_set (err, ACT_E_BAD_PATH,
                                    "'-' (segment %zu) applied to an object", i + 1);
            child = json_object_get (current, seg->key);
            next = (s_slot_t) { SLOT_KEY, current, seg->key, 0 };
        }
        else {
            //  Absent or a scalar: this level becomes an object that holds
            //  the rest of the path
            if (method == ACT_ERASE)
                return 0;
            for (size_t j = i; j < nsegs; j++)
                if (segs [j].type == ACT_SEG_APPEND)
                    return act_err_set (err, ACT_E_BAD_PATH,
                        "'-' (segment %zu) needs an array, found %s",
                        j + 1, j == i? s_type_name (current): "absent");
            if (s_check_target (method, NULL, value, err))
                return -1;
            if (dry_run)
                return 0;
            json_t *created = s_combine (method, NULL, value, share);
            for (size_t j = nsegs; j > i; j--) {
                json_t *wrapper = json_object ();
                json_object_set_new (wrapper, segs [j - 1].key, created);
                created = wrapper;
            }
            s_store (doc_p, &slot, created);
            return 0;
        }
        slot = next;
        current = child;
    }
    if (method == ACT_ERASE) {
        if (current && !dry_run)
            s_store (doc_p, &slot, NULL);
        return 0;
    }
    if (s_check_target (method, current, value, err))
        return -1;
    if (!dry_run)
        s_store (doc_p, &slot, s_combine (method, json_incref (current), value, share));
    return 0;
}

int
act_path_write (json_t **doc_p, const act_seg_t *segs, size_t nsegs,
                act_method_t method, const json_t *value, bool dry_run,
                act_err_t *err)
{
    return s_path_write (doc_p, segs, nsegs, method, value, dry_run, false, err);
}

int
act_path_write_shared (json_t **doc_p, const act_seg_t *segs, size_t nsegs,
                       act_method_t method, json_t *value, act_err_t *err)
{
    return s_path_write (doc_p, segs, nsegs, method, value, false, true, err);
}

json_t *
act_path_nest (const act_seg_t *segs, size_t nsegs, const json_t *value)
{
    json_t *nested = json_deep_copy (value);
    for (size_t j = nsegs; j > 0; j--) {
        json_t *wrapper = json_object ();
        json_object_set_new (wrapper, segs [j - 1].key, nested);
        nested = wrapper;
    }
    return nested;
}

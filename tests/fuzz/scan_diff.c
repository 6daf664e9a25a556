/*  =========================================================================
    scan_diff - act_scan against act_json_parse on one text.

    jansson is the reference: whatever it holds after parsing is what the
    scanner's records must describe. Objects keep their keys in text order
    and duplicates are refused, so a walk of jansson's value meets the
    strings in the order the scanner met them.
    ========================================================================= */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act_json.h"
#include "actd/act_ref.h"
#include "scan_diff.h"

static char s_report [512];

#define S_DIFF(...) \
    do { snprintf (s_report, sizeof s_report, __VA_ARGS__); return s_report; } while (0)

//  A string jansson holds, where it is
typedef struct {
    const json_t *string;       //  The string value (borrowed)
    int depth;                  //  Containers around it
    int member;                 //  Index of the top-level member, or -1
} s_found_t;

//  The dagger strings jansson holds, in the order a walk meets them
typedef struct {
    s_found_t *items;           //  count of them, max allocated
    size_t count;               //  Found so far
    size_t max;                 //  Allocated
} s_list_t;

static bool
s_is_dagger (const json_t *value)
{
    return json_is_string (value) && json_string_length (value) >= ACT_DAGGER_LEN
        && memcmp (json_string_value (value), ACT_DAGGER, ACT_DAGGER_LEN) == 0;
}

//  Every dagger string in value (values and items, never keys)
static void
s_collect (const json_t *value, int depth, int member, s_list_t *list)
{
    if (s_is_dagger (value)) {
        if (list->count == list->max) {
            list->max = list->max? list->max * 2: 16;
            list->items = realloc (list->items, list->max * sizeof *list->items);
        }
        list->items [list->count++] = (s_found_t) { value, depth, member };
    }
    else
    if (json_is_object (value)) {
        int index = 0;
        for (void *iter = json_object_iter ((json_t *) value); iter;
             iter = json_object_iter_next ((json_t *) value, iter), index++)
            s_collect (json_object_iter_value (iter), depth + 1, depth == 0? index: member,
                       list);
    }
    else
    if (json_is_array (value))
        for (size_t i = 0; i < json_array_size (value); i++)
            s_collect (json_array_get (value, i), depth + 1, member, list);
}

//  Replace every dagger string inside value (a container) with null
static void
s_nullify (json_t *value)
{
    if (json_is_object (value))
        for (void *iter = json_object_iter (value); iter;
             iter = json_object_iter_next (value, iter)) {
            json_t *member = json_object_iter_value (iter);
            if (s_is_dagger (member))
                json_object_iter_set_new (value, iter, json_null ());
            else
                s_nullify (member);
        }
    else
    if (json_is_array (value))
        for (size_t i = 0; i < json_array_size (value); i++) {
            json_t *item = json_array_get (value, i);
            if (s_is_dagger (item))
                json_array_set_new (value, i, json_null ());
            else
                s_nullify (item);
        }
}

//  The string token of size bytes at token decodes to exactly want?
static bool
s_decodes_to (const char *token, size_t size, const char *want, size_t want_size)
{
    char *decoded = malloc (size > 1? size - 1: 1);
    size_t length = act_scan_decode (token, size, decoded);
    bool same = length == want_size && memcmp (decoded, want, length) == 0
             && decoded [length] == 0;
    free (decoded);
    return same;
}

static bool
s_is_space (char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *
s_check_members (act_scan_t *scan, const char *text, size_t size, const json_t *value)
{
    size_t count;
    const act_scan_member_t *members = act_scan_members (scan, &count);
    if (!json_is_object (value)) {
        if (count)
            S_DIFF ("%zu members recorded for a text that is not an object", count);
        return NULL;
    }
    if (count != json_object_size (value))
        S_DIFF ("%zu members recorded, jansson has %zu", count, json_object_size (value));
    size_t i = 0;
    for (void *iter = json_object_iter ((json_t *) value); iter;
         iter = json_object_iter_next ((json_t *) value, iter), i++) {
        const act_scan_member_t *member = &members [i];
        const char *key = json_object_iter_key (iter);
        if (member->key_size < 2 || member->key + member->key_size > size
        ||  text [member->key] != '"' || text [member->key + member->key_size - 1] != '"')
            S_DIFF ("member %zu: the key's span is not a string token", i);
        if (!s_decodes_to (text + member->key, member->key_size, key,
                           json_object_iter_key_len (iter)))
            S_DIFF ("member %zu: the key does not decode to jansson's '%s'", i, key);
        if (member->key_escaped != (memchr (text + member->key, '\\', member->key_size) != NULL))
            S_DIFF ("member %zu ('%s'): wrong escape flag", i, key);
        if (act_scan_find (scan, text, key) != member)
            S_DIFF ("act_scan_find does not find member %zu ('%s')", i, key);
        if (member->value_size == 0 || member->value + member->value_size > size
        ||  s_is_space (text [member->value])
        ||  s_is_space (text [member->value + member->value_size - 1]))
            S_DIFF ("member %zu ('%s'): the value's span is wrong", i, key);
        //  Read as the project reads JSON (an integer beyond int64 is a
        //  double: SEMANTICS.md section 1)
        json_t *alone = act_json_parse (text + member->value, member->value_size, NULL);
        bool equal = alone && json_equal (alone, json_object_iter_value (iter));
        json_decref (alone);
        if (!equal)
            S_DIFF ("member %zu ('%s'): the value's span does not hold jansson's value", i, key);
    }
    //  A key the text does not hold (the fuzzer may write this one too)
    if (!json_object_get (value, "\xE2\x80\xA0 no such key")
    &&  act_scan_find (scan, text, "\xE2\x80\xA0 no such key"))
        S_DIFF ("act_scan_find finds a key the text does not hold");
    return NULL;
}

static const char *
s_check_daggers (act_scan_t *scan, const char *text, size_t size, const s_list_t *list)
{
    size_t count;
    const act_scan_string_t *daggers = act_scan_daggers (scan, &count);
    if (count != list->count)
        S_DIFF ("%zu dagger strings recorded, jansson has %zu", count, list->count);
    for (size_t i = 0; i < count; i++) {
        const act_scan_string_t *dagger = &daggers [i];
        const s_found_t *want = &list->items [i];
        if (dagger->size < 2 || dagger->offset + dagger->size > size
        ||  text [dagger->offset] != '"' || text [dagger->offset + dagger->size - 1] != '"')
            S_DIFF ("dagger string %zu: its span is not a string token", i);
        if (!s_decodes_to (text + dagger->offset, dagger->size, json_string_value (want->string),
                           json_string_length (want->string)))
            S_DIFF ("dagger string %zu does not decode to jansson's '%s'", i,
                    json_string_value (want->string));
        if (dagger->depth != want->depth || dagger->member != want->member)
            S_DIFF ("dagger string %zu ('%s'): depth %d member %d, jansson: depth %d member %d",
                    i, json_string_value (want->string), dagger->depth, dagger->member,
                    want->depth, want->member);
        if (dagger->escaped != (memchr (text + dagger->offset, '\\', dagger->size) != NULL))
            S_DIFF ("dagger string %zu: wrong escape flag", i);
    }
    return NULL;
}

//  Splice null over every dagger string: jansson's value with them nulled
static const char *
s_check_splice (act_scan_t *scan, const char *text, size_t size, const json_t *value)
{
    size_t count;
    const act_scan_string_t *daggers = act_scan_daggers (scan, &count);
    act_scan_edit_t *edits = calloc (count + 1, sizeof *edits);
    for (size_t i = 0; i < count; i++)
        edits [i] = (act_scan_edit_t) { daggers [i].offset, daggers [i].size, "null", 4 };
    size_t spliced_size;
    char *spliced = act_scan_splice (text, size, edits, count, &spliced_size);
    free (edits);
    if (!spliced)
        S_DIFF ("act_scan_splice refused the dagger strings' spans");
    json_t *want = s_is_dagger (value)? json_null (): json_deep_copy (value);
    s_nullify (want);
    act_err_t err = { 0 };
    json_t *got = act_json_parse (spliced, spliced_size, &err);
    bool equal = got && json_equal (got, want) && spliced [spliced_size] == 0;
    json_decref (got);
    json_decref (want);
    free (spliced);
    if (!equal)
        S_DIFF ("splicing null over the dagger strings does not give jansson's value");
    return NULL;
}

//  Both accepted the text: the records against jansson's value
static const char *
s_check_accepted (act_scan_t *scan, const char *text, size_t size, const json_t *value)
{
    if (act_scan_type (scan) != json_typeof (value))
        S_DIFF ("type %d, jansson's %d", (int) act_scan_type (scan), (int) json_typeof (value));
    s_list_t list = { NULL, 0, 0 };
    s_collect (value, 0, -1, &list);
    const char *diff = s_check_members (scan, text, size, value);
    if (!diff)
        diff = s_check_daggers (scan, text, size, &list);
    if (!diff)
        diff = s_check_splice (scan, text, size, value);
    free (list.items);
    return diff;
}

const char *
scan_diff (act_scan_t *scan, const char *text, size_t size, bool *accepted)
{
    act_err_t parse_err = { 0 }, scan_err = { 0 };
    json_t *value = act_json_parse (text, size, &parse_err);
    int rc = act_scan (scan, text, size, &scan_err);
    *accepted = value != NULL;
    if (!value) {
        if (rc == 0)
            S_DIFF ("act_scan accepted a text act_json_parse refuses (%s)", parse_err.message);
        if (!scan_err.code || strcmp (scan_err.code, ACT_E_BAD_JSON) != 0
        ||  !scan_err.message [0])
            S_DIFF ("act_scan refused with code %s, message '%s'",
                    scan_err.code? scan_err.code: "(none)", scan_err.message);
        return NULL;
    }
    const char *diff = rc == 0? s_check_accepted (scan, text, size, value): NULL;
    json_decref (value);
    if (rc != 0)
        S_DIFF ("act_scan refused a text act_json_parse accepts (%s: %s)",
                scan_err.code, scan_err.message);
    return diff;
}

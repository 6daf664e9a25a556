/*  =========================================================================
    act_text - JSON texts built from JSON texts (see act_text.h).
    ========================================================================= */

#include <stdlib.h>
#include <string.h>
#include "actd/act_text.h"
#include "actd/act_json.h"

char *
act_text_splice (const char *object, const char *name, const char *value)
{
    size_t used = strlen (object);
    size_t name_size = strlen (name), value_size = strlen (value);
    char *joined = malloc (used + name_size + value_size + 8);
    if (!joined)
        return NULL;
    memcpy (joined, object, used);
    size_t at = used - 1;                       //  Over the closing brace
    if (at > 1)
        joined [at++] = ',';                    //  Not after "{" alone
    joined [at++] = '"';
    memcpy (joined + at, name, name_size);
    at += name_size;
    joined [at++] = '"';
    joined [at++] = ':';
    memcpy (joined + at, value, value_size);
    at += value_size;
    joined [at++] = '}';
    joined [at] = 0;
    return joined;
}

char *
act_text_nest (const act_ref_t *ref, const char *value_text)
{
    //  Keys are written by the JSON writer: a segment may hold any text
    size_t size = strlen (value_text) + 1;
    char **keys = calloc (ref->nsegs + 1, sizeof (char *));
    for (size_t i = 0; i < ref->nsegs; i++) {
        json_t *key = json_string (ref->segs [i].key);
        keys [i] = act_json_dump (key);
        json_decref (key);
        size += strlen (keys [i]) + 3;
    }
    char *text = malloc (size);
    size_t used = 0;
    for (size_t i = 0; i < ref->nsegs; i++) {
        size_t length = strlen (keys [i]);
        text [used++] = '{';
        memcpy (text + used, keys [i], length);
        used += length;
        text [used++] = ':';
    }
    size_t length = strlen (value_text);
    memcpy (text + used, value_text, length);
    used += length;
    for (size_t i = 0; i < ref->nsegs; i++) {
        text [used++] = '}';
        free (keys [i]);
    }
    text [used] = 0;
    free (keys);
    return text;
}

/*  =========================================================================
    act_json - JSON in and out of frames, with limits, and timestamps.
    ========================================================================= */

#include <stdio.h>
#include <string.h>
#include <time.h>
#include "actd/act_json.h"

int
act_json_depth (const json_t *value, int limit)
{
    if (!json_is_object (value) && !json_is_array (value))
        return 0;
    if (limit <= 0)
        return 1;               //  Deep enough: the caller refuses it
    int deepest = 0;
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach ((json_t *) value, key, member) {
            int depth = act_json_depth (member, limit - 1);
            if (depth > deepest)
                deepest = depth;
            if (deepest > limit)
                break;
        }
    }
    else {
        size_t index;
        json_t *member;
        json_array_foreach (value, index, member) {
            int depth = act_json_depth (member, limit - 1);
            if (depth > deepest)
                deepest = depth;
            if (deepest > limit)
                break;
        }
    }
    return deepest + 1;
}

json_t *
act_json_parse (const char *data, size_t size, act_err_t *err)
{
    //  jansson checks UTF-8 itself, but a message naming the first bad byte
    //  is worth the extra pass, and it refuses what jansson would accept
    size_t offset;
    if (!act_utf8_valid (data, size, &offset)) {
        act_err_set (err, ACT_E_BAD_JSON, "invalid UTF-8 at byte %zu", offset);
        return NULL;
    }
    json_error_t error;
    json_t *value = json_loadb (data, size,
                                JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &error);
    if (!value) {
        act_err_set (err, ACT_E_BAD_JSON, "%s at line %d, column %d (byte %d)",
                     error.text, error.line, error.column, error.position);
        return NULL;
    }
    if (act_json_depth (value, ACT_MAX_JSON_DEPTH) > ACT_MAX_JSON_DEPTH) {
        json_decref (value);
        act_err_set (err, ACT_E_BAD_JSON,
                     "JSON nested deeper than %d levels", ACT_MAX_JSON_DEPTH);
        return NULL;
    }
    return value;
}

char *
act_json_dump (const json_t *value)
{
    if (!value)
        return NULL;
    return json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
}

bool
act_utf8_valid (const char *data, size_t size, size_t *offset)
{
    const unsigned char *s = (const unsigned char *) data;
    size_t i = 0;
    while (i < size) {
        unsigned char c = s [i];
        size_t need;
        unsigned int min, code;
        if (c < 0x80) {
            i++;
            continue;
        }
        else
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1; min = 0x80; code = c & 0x1F;
        }
        else
        if (c >= 0xE0 && c <= 0xEF) {
            need = 2; min = 0x800; code = c & 0x0F;
        }
        else
        if (c >= 0xF0 && c <= 0xF4) {
            need = 3; min = 0x10000; code = c & 0x07;
        }
        else
            goto bad;
        if (i + need >= size)
            goto bad;           //  Truncated sequence
        for (size_t k = 1; k <= need; k++) {
            if ((s [i + k] & 0xC0) != 0x80)
                goto bad;
            code = (code << 6) | (s [i + k] & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            goto bad;
        i += need + 1;
    }
    return true;
bad:
    if (offset)
        *offset = i;
    return false;
}

void
act_date_now (char *buffer)
{
    struct timespec now;
    clock_gettime (CLOCK_REALTIME, &now);
    struct tm utc;
    gmtime_r (&now.tv_sec, &utc);
    size_t length = strftime (buffer, 21, "%Y-%m-%dT%H:%M:%S", &utc);
    snprintf (buffer + length, 6, ".%03dZ", (int) (now.tv_nsec / 1000000));
}

long long
act_clock_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (long long) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

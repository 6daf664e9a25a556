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

//  A text being written: grows by doubling
typedef struct {
    char *data;                 //  The bytes so far, not terminated
    size_t used;                //  Bytes written
    size_t size;                //  Bytes allocated
} s_text_t;

static void
s_text_add (s_text_t *self, const char *bytes, size_t length)
{
    if (self->used + length + 1 > self->size) {
        while (self->used + length + 1 > self->size)
            self->size *= 2;
        self->data = realloc (self->data, self->size);
    }
    memcpy (self->data + self->used, bytes, length);
    self->used += length;
}

//  A string as jansson writes it: '"', '\\' and control characters
//  escaped (\b \f \n \r \t, else \u00XX in upper case); the rest as it is
static void
s_text_string (s_text_t *self, const char *string, size_t length)
{
    s_text_add (self, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char) string [i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        s_text_add (self, string + start, i - start);
        char escape [8];
        const char *simple = c == '"'? "\\\"": c == '\\'? "\\\\": c == '\b'? "\\b"
                           : c == '\f'? "\\f": c == '\n'? "\\n": c == '\r'? "\\r"
                           : c == '\t'? "\\t": NULL;
        if (!simple) {
            snprintf (escape, sizeof escape, "\\u%04X", c);
            simple = escape;
        }
        s_text_add (self, simple, strlen (simple));
        start = i + 1;
    }
    s_text_add (self, string + start, length - start);
    s_text_add (self, "\"", 1);
}

//  Write value; false when it is nested absurdly deep (a cycle)
static bool
s_text_value (s_text_t *self, const json_t *value, int depth)
{
    if (depth > 2048)
        return false;
    char number [64];
    switch (json_typeof (value)) {
        case JSON_OBJECT: {
            s_text_add (self, "{", 1);
            bool first = true;
            for (void *iter = json_object_iter ((json_t *) value); iter;
                 iter = json_object_iter_next ((json_t *) value, iter)) {
                if (!first)
                    s_text_add (self, ",", 1);
                first = false;
                s_text_string (self, json_object_iter_key (iter),
                               json_object_iter_key_len (iter));
                s_text_add (self, ":", 1);
                if (!s_text_value (self, json_object_iter_value (iter), depth + 1))
                    return false;
            }
            s_text_add (self, "}", 1);
            return true;
        }
        case JSON_ARRAY: {
            s_text_add (self, "[", 1);
            for (size_t i = 0; i < json_array_size (value); i++) {
                if (i)
                    s_text_add (self, ",", 1);
                if (!s_text_value (self, json_array_get (value, i), depth + 1))
                    return false;
            }
            s_text_add (self, "]", 1);
            return true;
        }
        case JSON_STRING:
            s_text_string (self, json_string_value (value), json_string_length (value));
            return true;
        case JSON_INTEGER: {
            //  By hand: snprintf cost more than the rest of a small object
            json_int_t integer = json_integer_value (value);
            unsigned long long left = integer < 0? 0ULL - (unsigned long long) integer
                                                 : (unsigned long long) integer;
            char *digit = number + sizeof number;
            do
                *--digit = (char) ('0' + left % 10);
            while (left /= 10);
            if (integer < 0)
                *--digit = '-';
            s_text_add (self, digit, (size_t) (number + sizeof number - digit));
            return true;
        }
        case JSON_REAL: {
            //  jansson's own format (17 digits, always a '.' or an 'e')
            size_t length = json_dumpb (value, number, sizeof number, JSON_ENCODE_ANY);
            if (length == 0 || length > sizeof number)
                return false;
            s_text_add (self, number, length);
            return true;
        }
        case JSON_TRUE:
            s_text_add (self, "true", 4);
            return true;
        case JSON_FALSE:
            s_text_add (self, "false", 5);
            return true;
        default:
            s_text_add (self, "null", 4);
            return true;
    }
}

char *
act_json_dump (const json_t *value)
{
    //  Not json_dumps: for every object and array it writes, jansson 2.14
    //  formats the container's address with snprintf and keeps it in a
    //  hash table (its cycle check), which made serializing a third of the
    //  broker's instructions per call. This writes the same bytes.
    if (!value)
        return NULL;
    s_text_t text = { malloc (256), 0, 256 };
    if (!s_text_value (&text, value, 0)) {
        free (text.data);
        return NULL;
    }
    text.data [text.used] = 0;
    return text.data;
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

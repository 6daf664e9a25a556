/*  =========================================================================
    act_text - JSON texts built from JSON texts (see act_text.h).
    ========================================================================= */

#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "actd/act_text.h"
#include "actd/act_json.h"
#include "actd/act_wire.h"

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
act_hex_write (char *out, const void *bytes, size_t size)
{
    static const char digits [] = "0123456789ABCDEF";
    const unsigned char *data = (const unsigned char *) bytes;
    for (size_t at = 0; at < size; at++) {
        out [at * 2] = digits [data [at] >> 4];
        out [at * 2 + 1] = digits [data [at] & 15];
    }
    out [size * 2] = 0;
    return out;
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


//  --------------------------------------------------------------------------
//  A text being built

bool
act_buf_reserve (act_buf_t *self, size_t size)
{
    if (self->failed)
        return false;
    if (self->size + size + 1 <= self->room)
        return true;
    size_t room = self->room? self->room: 64;
    while (room < self->size + size + 1)
        room *= 2;
    char *bigger = (char *) realloc (self->data, room);
    if (!bigger) {
        free (self->data);
        *self = (act_buf_t) { .failed = true };
        return false;
    }
    self->data = bigger;
    self->room = room;
    return true;
}

//  A word of eight bytes, each of them byte
#define S_BYTES(byte) ((uint64_t) (byte) * 0x0101010101010101ull)

//  True when a word of eight bytes may hold a byte that JSON escapes (a
//  control character, '"' or '\\'); false means it holds none. The
//  zero-byte tests of "Bit Twiddling Hacks": a true may be a byte after a
//  real one, never a word with none
static inline bool
s_word_escapes (uint64_t word)
{
    uint64_t quote = word ^ S_BYTES ('"'), backslash = word ^ S_BYTES ('\\');
    return (((word - S_BYTES (0x20)) & ~word)
          | ((quote - S_BYTES (1)) & ~quote)
          | ((backslash - S_BYTES (1)) & ~backslash)) & S_BYTES (0x80);
}

//  True when string (length bytes) holds a byte JSON escapes: eight bytes
//  at a time, then byte by byte from the first word that may
static bool
s_escapes (const char *string, size_t length)
{
    size_t at = 0;
    for (uint64_t word; at + 8 <= length; at += 8) {
        memcpy (&word, string + at, 8);
        if (s_word_escapes (word))
            break;
    }
    for (; at < length; at++) {
        unsigned char c = (unsigned char) string [at];
        if (c < 0x20 || c == '"' || c == '\\')
            return true;
    }
    return false;
}

bool
act_buf_add_quoted (act_buf_t *self, const char *string)
{
    //  Most strings (ids, paths, states) need no escape: copied at once
    size_t length = strlen (string);
    if (s_escapes (string, length)) {
        char *quoted = act_json_quote (string);
        bool added = quoted && act_buf_add_str (self, quoted);
        free (quoted);
        return added;
    }
    return act_buf_add_plain (self, string, length);
}

bool
act_buf_add_plain (act_buf_t *self, const char *string, size_t length)
{
    if (!act_buf_reserve (self, length + 2))
        return false;
    char *at = self->data + self->size;
    at [0] = '"';
    memcpy (at + 1, string, length);
    at [length + 1] = '"';
    at [length + 2] = 0;
    self->size += length + 2;
    return true;
}

bool
act_buf_add_number (act_buf_t *self, long long number)
{
    char digits [24];
    return act_buf_add (self, digits, act_decimal_write (digits, number));
}

char *
act_buf_take (act_buf_t *self)
{
    char *data = self->data;
    if (!data && !self->failed)
        data = strdup ("");
    *self = (act_buf_t) { 0 };
    return data;
}

/*  =========================================================================
    fuzz_common - the text framing the fuzz targets read.

    An input is a list of lines (split on '\n'); a line is a list of fields
    (split on '\t'). A '$' starts an escape inside a field:

        $t  a tab          $n  a newline        $$  a dollar sign
        $0  a NUL byte     $L  LARGE_FRAME bytes of 'a' (over the broker's
                               max_message_bytes: the too_large path)
        $C<d>  the d-th most recent call id the broker accepted (0: newest)
        $T<d>  the d-th most recent task id the broker sent to this peer
               (or to anyone when this peer holds none)

    Anything else after '$' stands for itself. The framing keeps seeds
    readable (one message per line, one frame per field) and lets the
    fuzzer reach deep states: most lines are well-formed commands, and the
    ids that the broker gives out can be named without knowing them.
    ========================================================================= */

#ifndef FUZZ_COMMON_H_INCLUDED
#define FUZZ_COMMON_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  A growable byte buffer
typedef struct {
    char *data;
    size_t size;
    size_t cap;
} fuzz_buf_t;

static inline void
fuzz_buf_add (fuzz_buf_t *buf, const void *data, size_t size)
{
    if (buf->size + size + 1 > buf->cap) {
        size_t cap = buf->cap? buf->cap: 64;
        while (cap < buf->size + size + 1)
            cap *= 2;
        buf->data = realloc (buf->data, cap);
        buf->cap = cap;
    }
    if (size)
        memcpy (buf->data + buf->size, data, size);
    buf->size += size;
    buf->data [buf->size] = 0;      //  Always terminated, for C strings
}

static inline void
fuzz_buf_byte (fuzz_buf_t *buf, char byte)
{
    fuzz_buf_add (buf, &byte, 1);
}

static inline void
fuzz_buf_reset (fuzz_buf_t *buf)
{
    buf->size = 0;
    if (buf->data)
        buf->data [0] = 0;
}

static inline void
fuzz_buf_free (fuzz_buf_t *buf)
{
    free (buf->data);
    *buf = (fuzz_buf_t) { NULL, 0, 0 };
}

//  Resolves $C<d> and $T<d>: returns the text to put in, or NULL (then the
//  escape stands for itself)
typedef const char *(fuzz_token_fn) (char kind, int digit, void *arg);

//  Decode one field [data, data + size) into out (reset first).
static inline void
fuzz_field_decode (const char *data, size_t size, fuzz_buf_t *out,
                   size_t large, fuzz_token_fn *token, void *arg)
{
    fuzz_buf_reset (out);
    fuzz_buf_add (out, "", 0);      //  Never NULL, even when empty
    for (size_t i = 0; i < size; i++) {
        char c = data [i];
        if (c != '$' || i + 1 == size) {
            fuzz_buf_byte (out, c);
            continue;
        }
        char e = data [++i];
        if (e == 't')
            fuzz_buf_byte (out, '\t');
        else
        if (e == 'n')
            fuzz_buf_byte (out, '\n');
        else
        if (e == '$')
            fuzz_buf_byte (out, '$');
        else
        if (e == '0')
            fuzz_buf_byte (out, 0);
        else
        if (e == 'L') {
            for (size_t k = 0; k < large; k++)
                fuzz_buf_byte (out, 'a');
        }
        else
        if ((e == 'C' || e == 'T') && i + 1 < size
        &&  data [i + 1] >= '0' && data [i + 1] <= '9') {
            int digit = data [++i] - '0';
            const char *text = token? token (e, digit, arg): NULL;
            if (text)
                fuzz_buf_add (out, text, strlen (text));
            else {
                fuzz_buf_byte (out, '$');
                fuzz_buf_byte (out, e);
                fuzz_buf_byte (out, (char) ('0' + digit));
            }
        }
        else {
            fuzz_buf_byte (out, '$');
            fuzz_buf_byte (out, e);
        }
    }
}

//  Encode bytes so that decoding gives them back (for replay histories)
static inline void
fuzz_field_encode (const char *data, size_t size, fuzz_buf_t *out)
{
    for (size_t i = 0; i < size; i++) {
        char c = data [i];
        if (c == '\t')
            fuzz_buf_add (out, "$t", 2);
        else
        if (c == '\n')
            fuzz_buf_add (out, "$n", 2);
        else
        if (c == '$')
            fuzz_buf_add (out, "$$", 2);
        else
            fuzz_buf_byte (out, c);
    }
}

//  Call fn on each line of the input (without its '\n'); empty lines are
//  skipped
typedef void (fuzz_line_fn) (const char *line, size_t size, void *arg);

static inline void
fuzz_lines (const uint8_t *data, size_t size, fuzz_line_fn *fn, void *arg)
{
    const char *text = (const char *) data;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || text [i] == '\n') {
            if (i > start)
                fn (text + start, i - start, arg);
            start = i + 1;
        }
}

//  The index-th field of a line (fields split on '\t'); false when the
//  line has fewer fields
static inline bool
fuzz_field (const char *line, size_t size, size_t index, const char **field,
            size_t *field_size)
{
    size_t start = 0, current = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || line [i] == '\t') {
            if (current == index) {
                *field = line + start;
                *field_size = i - start;
                return true;
            }
            current++;
            start = i + 1;
        }
    return false;
}

#endif

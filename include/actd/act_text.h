/*  =========================================================================
    act_text - JSON texts built from JSON texts, without parsing them
    again: a member spliced into an object's text, and a value's text
    nested under a reference's path (the display form of SEMANTICS.md
    section 4). The broker keeps what a client or worker sent as bytes and
    builds stored messages and replies around them.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_TEXT_H_INCLUDED
#define ACT_TEXT_H_INCLUDED

#include <stdbool.h>
#include <string.h>
#include "act_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

//  A text being built: it grows as it is written to. Start with
//  act_buf_t text = { 0 }, end with act_buf_take.
typedef struct {
    char *data;                 //  The bytes, NUL-terminated; NULL before the
                                //  first write, or after memory ran out
    size_t size;                //  Bytes written
    size_t room;                //  Bytes allocated
    bool failed;                //  Memory ran out: every later write fails
} act_buf_t;

//  Make room for size more bytes (and the NUL). Returns false when memory
//  ran out: the text is then dropped.
bool act_buf_reserve (act_buf_t *self, size_t size);

//  Append size bytes. Returns false when memory ran out.
static inline bool
act_buf_add (act_buf_t *self, const void *bytes, size_t size)
{
    if (self->size + size + 1 > self->room && !act_buf_reserve (self, size))
        return false;
    memcpy (self->data + self->size, bytes, size);
    self->size += size;
    self->data [self->size] = 0;
    return true;
}

//  Empty the text, keeping its room for the next one (and forgetting a
//  lack of memory).
static inline void
act_buf_clear (act_buf_t *self)
{
    self->size = 0;
    self->failed = false;
    if (self->data)
        self->data [0] = 0;
}

//  Append a C string. Returns false when memory ran out.
static inline bool
act_buf_add_str (act_buf_t *self, const char *string)
{
    return act_buf_add (self, string, strlen (string));
}

//  Append string as a JSON string, escaped as act_json_dump escapes.
//  Returns false when memory ran out.
bool act_buf_add_quoted (act_buf_t *self, const char *string);

//  Append length bytes at string between quotes, as they are: for a
//  string known to need no escape (digits, a date, a fixed name). Returns
//  false when memory ran out.
bool act_buf_add_plain (act_buf_t *self, const char *string, size_t length);

//  Append an integer in decimal. Returns false when memory ran out.
bool act_buf_add_number (act_buf_t *self, long long number);

//  The text built, for the caller to free (NULL when memory ran out); the
//  buffer is empty again.
char *act_buf_take (act_buf_t *self);

//  size bytes in upper-case hex (as zframe_strhex writes them) at out,
//  which has room for 2 * size + 1 bytes, NUL-terminated. Returns out.
char *act_hex_write (char *out, const void *bytes, size_t size);

//  The text of JSON object object (compact, ending in '}') with the member
//  "name": value added last, value being JSON text. name must need no
//  escaping. Returns a new string the caller frees.
char *act_text_splice (const char *object, const char *name, const char *value);

//  The display form of a value written at ref: value_text (JSON) inside
//  one object level per segment of ref's path, the segment's text as the
//  key. Returns a new string the caller frees.
char *act_text_nest (const act_ref_t *ref, const char *value_text);

#ifdef __cplusplus
}
#endif

#endif

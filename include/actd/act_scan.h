/*  =========================================================================
    act_scan - one pass over a JSON text, without building it: the same
    texts accepted and refused as act_json_parse (jansson with
    JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, plus its UTF-8 and depth
    checks), and what the broker's hot path needs from a call.

    A scan records, as offsets into the text it was given:
    - for a top-level object, each member: its key and its value, raw;
    - every string value (object member or array item, at any depth, never
      a key) whose decoded text starts with U+2020, the dagger: the
      candidates for references (SEMANTICS.md section 2), with the depth
      and the top-level member that hold them, so that a caller can leave
      out meta-properties (section 7) and splice each replacement in.

    tests/fuzz/fuzz_scan.c proves the verdicts equal to act_json_parse's
    (the one exception the guide allows to "use jansson"); keep it passing
    after any change here.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_SCAN_H_INCLUDED
#define ACT_SCAN_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "act_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _act_scan_t act_scan_t;

//  One member of a top-level object
typedef struct {
    size_t key;                 //  Offset of the key's string token (its '"')
    size_t key_size;            //  Bytes of the key token, both quotes included
    size_t value;               //  Offset of the value's first byte
    size_t value_size;          //  Bytes of the value, no white space around it
    bool key_escaped;           //  The key holds a '\' escape: decode it to read it
} act_scan_member_t;

//  One string value whose decoded text starts with the dagger
typedef struct {
    size_t offset;              //  Offset of its string token (its '"')
    size_t size;                //  Bytes of the token, both quotes included
    int depth;                  //  Containers around it: 0 for a text that is
                                //  only this string, 1 for a top-level member
    int member;                 //  Index of the top-level member holding it;
                                //  -1 when the text is not an object
    bool escaped;               //  Holds a '\' escape: decode it to read it
} act_scan_string_t;

//  A replacement: size bytes at offset become text_size bytes of text
typedef struct {
    size_t offset;              //  First byte replaced
    size_t size;                //  Bytes replaced (0: an insertion)
    const char *text;           //  The bytes put there
    size_t text_size;           //  Their number
} act_scan_edit_t;

//  Create a scanner. Its arrays are allocated here and grow only for texts
//  with more members, references or open keys than any before, so scans
//  of ordinary calls allocate nothing. Returns NULL when out of memory.
act_scan_t *act_scan_new (void);

//  Destroy the scanner and null the caller's pointer; safe on NULL.
void act_scan_destroy (act_scan_t **self_p);

//  Scan the size bytes at text (not NUL-terminated; NUL bytes are data).
//  Returns 0 when act_json_parse would accept the text, -1 with err set to
//  bad_json and a message naming the byte when it would refuse it (or to
//  internal when memory ran out). The records below describe the last
//  text accepted and are offsets into it: keep the text while using them.
//  Costs O(size), plus O(k log k) for an object of more than 8 keys.
int act_scan (act_scan_t *self, const char *text, size_t size, act_err_t *err);

//  Type of the last text accepted (JSON_OBJECT, JSON_INTEGER, ...).
json_type act_scan_type (act_scan_t *self);

//  True when every number of the last text accepted is written as
//  act_json_dump writes what act_json_parse reads of it (act_json_number_
//  dumped): "0.1", not "0.10" or "1E-1"; "0", not "-0". SEMANTICS.md
//  section 1 wants replies and stored messages in that form.
bool act_scan_numbers_dumped (act_scan_t *self);

//  The members of the last text accepted, in the text's order (*count set;
//  0 unless it is an object).
const act_scan_member_t *act_scan_members (act_scan_t *self, size_t *count);

//  The member of the last text accepted whose decoded key is key (a C
//  string, in the text); NULL when there is none.
const act_scan_member_t *act_scan_find (act_scan_t *self, const char *text,
                                        const char *key);

//  The string values of the last text accepted that start with the dagger,
//  in the text's order (*count set).
const act_scan_string_t *act_scan_daggers (act_scan_t *self, size_t *count);

//  Decode the string token of size bytes at token (quotes included, as
//  recorded by a scan) into out, which must hold size - 1 bytes: the text
//  and a terminating NUL. Returns the decoded length. Never reads or
//  writes outside those bounds, even on a token no scan accepted.
size_t act_scan_decode (const char *token, size_t size, char *out);

//  Build, in one allocation, text with each edit applied. Edits must be in
//  increasing offset order, must not overlap and must lie within size.
//  Returns the new text (NUL-terminated, the caller frees it) and sets
//  *result_size (when not NULL), or NULL when an edit is out of order or
//  out of bounds, or memory ran out.
char *act_scan_splice (const char *text, size_t size, const act_scan_edit_t *edits,
                       size_t count, size_t *result_size);

#ifdef __cplusplus
}
#endif

#endif

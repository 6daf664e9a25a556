/*  =========================================================================
    act_json - JSON in and out of frames, with the limits a network-facing
    broker needs, and the timestamps the broker stamps on messages.
    ========================================================================= */

#ifndef ACT_JSON_H_INCLUDED
#define ACT_JSON_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include "act_err.h"

#ifdef __cplusplus
extern "C" {
#endif

//  Deepest nesting of arrays and objects accepted in any JSON frame. Deeper
//  documents are refused with bad_json: they are never useful to an agent
//  and every recursive walk in the broker stays well inside its stack.
#define ACT_MAX_JSON_DEPTH  64

//  Parse exactly one JSON text of size bytes (any value, not only objects).
//  Refuses invalid UTF-8, a \u0000 in strings, duplicate object keys,
//  numbers beyond a double (1e400) and nesting deeper than
//  ACT_MAX_JSON_DEPTH. An integer literal outside int64 is read as the
//  nearest double, as SEMANTICS.md section 1 says (jansson alone refuses it).
//  Returns a new reference, or NULL with err set to bad_json and a message
//  that names the line, column and byte position.
json_t *act_json_parse (const char *data, size_t size, act_err_t *err);

//  A message actd stored (or reads back from its store) nests deeper than
//  what it accepts: a call's output wraps a value of up to
//  ACT_MAX_JSON_DEPTH levels in one object per segment of its output path
//  (up to 64), inside the message, which also carries the call (up to
//  ACT_MAX_JSON_DEPTH levels) as _call
#define ACT_MAX_STORED_DEPTH  (2 * ACT_MAX_JSON_DEPTH + 4)

//  act_json_parse for the text of a stored message: the same checks, with
//  nesting up to ACT_MAX_STORED_DEPTH (actd wrote it; a row refused for
//  its depth was lost without a word).
json_t *act_json_parse_stored (const char *data, size_t size, act_err_t *err);

//  Deepest nesting of a reply actd sends to a client: a stored message
//  (ACT_MAX_STORED_DEPTH) inside the array of HISTORY or VIEW, or inside
//  a watch's EVENT object, one level more; one level is left to spare
#define ACT_MAX_REPLY_DEPTH  (ACT_MAX_STORED_DEPTH + 2)

//  act_json_parse for a JSON frame of a broker's reply (a client reads
//  it): the same checks, with nesting up to ACT_MAX_REPLY_DEPTH, deeper
//  than anything actd sends.
json_t *act_json_parse_reply (const char *data, size_t size, act_err_t *err);

//  Serialize value compactly (any JSON value): act_json_dumps (value,
//  JSON_COMPACT). Returns a new string the caller frees, or NULL when value
//  is NULL (or holds a cycle).
char *act_json_dump (const json_t *value);

//  As act_json_dump, but NULL when the text would be over max bytes: it
//  stops there (a value may be far larger than anything worth writing).
char *act_json_dump_within (const json_t *value, size_t max);

//  Serialize value (any JSON value) byte for byte as json_dumps (value,
//  flags | JSON_ENCODE_ANY) lays it out, honouring JSON_INDENT (n) and
//  JSON_COMPACT (other flags are ignored), except that reals are written
//  in their shortest round-trip form (act_dtoa.h): 0.1, not
//  0.10000000000000001. Returns a new string the caller frees, or NULL when
//  value is NULL (or holds a cycle).
char *act_json_dumps (const json_t *value, size_t flags);

//  As act_json_dumps, but NULL when the text would be over max bytes: it
//  stops there.
char *act_json_dumps_within (const json_t *value, size_t flags, size_t max);

//  The size bytes at data as act_json_dump writes them once
//  act_json_parse_stored has read them (numbers in their shortest form,
//  compact); a new string the caller frees, or NULL when they are not JSON
//  it accepts.
char *act_json_redump (const char *data, size_t size);

//  True when the size bytes at data are an object that act_json_dump would
//  write again byte for byte after jansson reads it (json_loads): compact,
//  strings escaped as the writer escapes them, integers in int64 without
//  leading zeros, reals in their shortest form, no duplicate keys, valid
//  UTF-8, no \u0000, nesting up to ACT_MAX_STORED_DEPTH. False says only
//  "parse and write it to know": such a text may still be valid JSON.
bool act_json_is_dump (const char *data, size_t size);

//  True when the size bytes at text start with a JSON number written as
//  act_json_dump writes what jansson reads of it: an int64 integer other
//  than "-0", or a real in act_dtoa's shortest form ("0.1", "1.0",
//  "1e+16"; not "1e5", "1E5" or "0.10"). Sets *length to the bytes its
//  number grammar took (the whole number when true).
bool act_json_number_dumped (const char *text, size_t size, size_t *length);

//  string as a JSON string text (quoted, escaped as act_json_dump writes
//  strings), for JSON built around texts; a new string the caller frees.
char *act_json_quote (const char *string);

//  The same for length bytes at string (no NUL among them).
char *act_json_quoten (const char *string, size_t length);

//  Depth of value: 0 for a scalar, 1 for an empty or flat container, ...
//  Stops counting at limit + 1, so a hostile document costs O(limit) stack.
int act_json_depth (const json_t *value, int limit);

//  True when the size bytes at data are well-formed UTF-8 (no overlong
//  forms, no surrogates, nothing above U+10FFFF). If not, *offset (when
//  not NULL) is set to the first bad byte.
bool act_utf8_valid (const char *data, size_t size, size_t *offset);

//  Write the current UTC time as RFC 3339 with milliseconds, such as
//  "2026-11-22T08:00:00.123Z", into buffer (at least 25 bytes).
void act_date_now (char *buffer);

//  The same for the time ago_ms milliseconds before now (these texts
//  compare as the times do).
void act_date_ago (long long ago_ms, char *buffer);

//  Milliseconds on a monotonic clock, for timers and durations.
long long act_clock_ms (void);

#ifdef __cplusplus
}
#endif

#endif

/*  =========================================================================
    act_schema - a JSON Schema (draft 2020-12) validator for the tools that
    workers declare (PROTOCOL.md section 2.1): compiled once when a READY
    names a tool, then used for every CALL and PLAN of that activity.

    Keywords implemented: type, enum, const, properties, required,
    additionalProperties, patternProperties, prefixItems, items, minItems,
    maxItems, uniqueItems, minLength, maxLength, pattern, minimum, maximum,
    exclusiveMinimum, exclusiveMaximum, multipleOf, allOf, anyOf, oneOf,
    not, if, then, else, $ref (a "#" JSON Pointer into the same document
    that lands on a subschema, e.g. "#" or "#/$defs/name") and $defs.
    Annotations, accepted and not checked: format, $schema, $id (at the
    root only), $comment, title, description, default, examples,
    deprecated, readOnly, writeOnly, contentMediaType, contentEncoding.
    Boolean schemas true and false. Any other keyword is refused when the
    schema is compiled: a keyword silently ignored would let calls through
    that the tool's author meant to refuse.

    Patterns are PCRE2 in UTF mode with ECMA-262 leanings (\uHHHH escapes,
    $ only at the very end, \d and \w ASCII); like ECMA-262's test() they
    are not anchored. Letter escapes that PCRE2 has and ECMA-262 lacks
    (\A, \Z, \z, \G, \Q, \h, \K, \R, \X ...) are refused.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_SCHEMA_H_INCLUDED
#define ACT_SCHEMA_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include "act_err.h"
#include "act_call.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _act_schema_t act_schema_t;

//  Compile schema (the caller keeps its reference; the schema copies what
//  it needs). Returns NULL with err set to bad_argument when schema is not
//  a valid schema, uses a keyword or form this module does not implement
//  (the message says "not supported" and names it), has a pattern PCRE2
//  refuses, or a $ref that does not land on a subschema (internal when
//  memory runs out). Messages start with the JSON Pointer of the
//  offending place in the schema.
act_schema_t *act_schema_new (const json_t *schema, act_err_t *err);

//  Destroy the schema and null the caller's pointer; safe on NULL.
void act_schema_destroy (act_schema_t **self_p);

//  True when instance is valid against the schema. Otherwise false with
//  err set to bad_call and a message "<pointer>: <keyword>: <why>", where
//  <pointer> is the RFC 6901 JSON Pointer of the first offending value in
//  instance ("(root)" for the instance itself), e.g.
//  "/city: type: expected string". Allocates nothing but the backtracking
//  memory PCRE2 keeps in the schema between matches, and, for uniqueItems
//  on an array of more than 16 items, a table of its items' hashes (freed
//  before it returns: the check is linear, not one of every pair). A
//  schema is used by
//  one thread at a time (it keeps the scratch space its patterns match in).
//  A pattern that needs more than a million backtracking steps on a value
//  fails the validation ("match limit exceeded") instead of stalling.
bool act_schema_valid (act_schema_t *self, const json_t *instance, act_err_t *err);

//  The same verdict and message as act_schema_valid on act_json_parse of
//  text, read from the size bytes at text in place: the text must be one
//  that act_scan accepted (it is not checked again). Allocates nothing
//  for scalars, objects and arrays, except to decode a string or key
//  longer than 255 bytes that holds an escape, and to make a tree of an
//  object or array that enum, const or uniqueItems compare.
bool act_schema_valid_text (act_schema_t *self, const char *text, size_t size,
                            act_err_t *err);

//  The same verdict and message as act_schema_valid on the call's
//  parameters (act_call_params (call, NULL, err)), read from the call's
//  text in place: its members that are not meta-properties, in the
//  call's order. A call with "††" literals is checked on its parameters'
//  tree; one with references cannot be checked before they resolve (false,
//  err set to unresolved_reference): check its resolved parameters with
//  act_schema_valid at dispatch.
bool act_schema_valid_call (act_schema_t *self, act_call_t *call, act_err_t *err);

//  True when some resolution of the call's references could make its
//  parameters valid: each reference (a string of the parameters that is
//  one; a "††" literal is a string) is taken as an unknown value, and the
//  call is refused only when it is invalid whatever they resolve to.
//  Then false with err set as act_schema_valid_call sets it (bad_call,
//  "<pointer>: <keyword>: <why>"). A reference passes every keyword (the
//  schema false refuses it, as it refuses any value); the keywords that
//  see a value whole (not, oneOf, if, enum, const, uniqueItems) do not
//  refuse one that holds a reference; the others, and every value without
//  a reference, are judged as usual (so a call without references gets
//  act_schema_valid_call's verdict and message). A call that passes is
//  to be checked again resolved, with act_schema_valid, at dispatch.
//  Reads a copy of the call's text, its references marked in place, and
//  allocates the list of its parameters when they, their references and
//  literals are more than 32.
bool act_schema_valid_unresolved (act_schema_t *self, act_call_t *call, act_err_t *err);

//  JSON Schema equality: numbers by value (1 == 1.0), objects regardless
//  of key order, arrays element by element. As enum, const and
//  uniqueItems compare.
bool act_schema_equal (const json_t *a, const json_t *b);

#ifdef __cplusplus
}
#endif

#endif

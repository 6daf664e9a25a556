/*  =========================================================================
    act_schema_int - the compiled form of a JSON Schema, shared by the
    compiler (act_schema.c) and the validator (act_schema_valid.c). Not
    installed: nothing outside libactd sees it.
    ========================================================================= */

#ifndef ACT_SCHEMA_INT_H_INCLUDED
#define ACT_SCHEMA_INT_H_INCLUDED

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "actd/act_schema.h"
#include "actd/act_call.h"

//  Bits of the type keyword, and of an instance's kinds (a number with no
//  fractional part is both a number and an integer)
#define ACT_ST_NULL     0x01
#define ACT_ST_BOOLEAN  0x02
#define ACT_ST_OBJECT   0x04
#define ACT_ST_ARRAY    0x08
#define ACT_ST_NUMBER   0x10
#define ACT_ST_STRING   0x20
#define ACT_ST_INTEGER  0x40
#define ACT_ST_COUNT    7
//  The kind of a reference not resolved yet (act_schema_partial.c): no
//  type names it, and it passes every keyword
#define ACT_ST_UNKNOWN  0x80

//  The names of the ACT_ST_ bits, in bit order ("null" ... "integer")
extern const char *const act_schema_type_names [ACT_ST_COUNT];

//  Which groups of keywords a node has, so the validator skips the others
//  without looking at their fields
#define ACT_SH_NUMBER   0x01    //  minimum ... multipleOf
#define ACT_SH_STRING   0x02    //  minLength, maxLength, pattern
#define ACT_SH_ARRAY    0x04    //  prefixItems, items, min/maxItems, uniqueItems
#define ACT_SH_OBJECT   0x08    //  properties, required, patternProperties, additionalProperties
#define ACT_SH_APPLY    0x10    //  allOf, anyOf, oneOf, not, if, $ref

typedef struct _act_snode_t act_snode_t;

//  A property's name, as a C string reads it
typedef struct {
    const char *name;           //  In the schema copy
    size_t length;              //  strlen (name)
} act_sname_t;

//  A list of subschemas (allOf, anyOf, oneOf, prefixItems)
typedef struct {
    act_snode_t **nodes;        //  The compiled subschemas, in order
    size_t count;               //  How many
} act_slist_t;

//  One entry of patternProperties
typedef struct {
    pcre2_code *regex;          //  The compiled key pattern
    act_snode_t *schema;        //  What values of matching keys must match
} act_spattern_t;

//  One compiled (sub)schema
struct _act_snode_t {
    const json_t *source;       //  The schema JSON it came from, in the copy
    char *location;             //  Its JSON Pointer in the schema, for compile errors
    int boolean;                //  1 or 0: the boolean schema true or false; -1: an object
    unsigned has;               //  ACT_SH_ bits of the keyword groups present
    unsigned types;             //  ACT_ST_ bits of type; 0: no type keyword
    const json_t *enum_values;  //  enum's array; NULL: no enum
    const json_t *const_value;  //  const's value; NULL: no const
    const json_t *minimum;      //  Inclusive lower bound (a number); NULL: none
    const json_t *maximum;      //  Inclusive upper bound; NULL: none
    const json_t *exclusive_minimum;    //  Exclusive lower bound; NULL: none
    const json_t *exclusive_maximum;    //  Exclusive upper bound; NULL: none
    const json_t *multiple_of;  //  Positive divisor; NULL: none
    long long min_length;       //  In code points; -1: none
    long long max_length;       //  In code points; -1: none
    pcre2_code *pattern;        //  String pattern; NULL: none
    const char *pattern_text;   //  Its source, for messages
    act_slist_t prefix_items;   //  Schemas of the first items
    act_snode_t *items;         //  Schema of the items after prefixItems; NULL: any
    long long min_items;        //  -1: none
    long long max_items;        //  -1: none
    bool unique_items;          //  uniqueItems: true
    act_snode_t **properties;   //  properties' schemas, in the schema's order
    size_t property_count;      //  How many
    act_sname_t *property_names;    //  properties' names, in the same order
    json_t *property_index;     //  Owned: name -> index in properties (one lookup per member)
    act_spattern_t *patterns;   //  patternProperties
    size_t pattern_count;       //  How many
    act_snode_t *additional;    //  additionalProperties; NULL: any
    const char **required;      //  required names (strings of the schema copy)
    size_t required_count;      //  How many
    act_slist_t all_of;         //  allOf
    act_slist_t any_of;         //  anyOf
    act_slist_t one_of;         //  oneOf
    act_snode_t *not_schema;    //  not; NULL: none
    act_snode_t *if_schema;     //  if; NULL: none (then and else are ignored)
    act_snode_t *then_schema;   //  then; NULL: none
    act_snode_t *else_schema;   //  else; NULL: none
    const char *ref_text;       //  $ref as written; NULL: none
    act_snode_t *ref;           //  What $ref points to, once resolved
    size_t id;                  //  Index in the schema's node list
};

struct _act_schema_t {
    json_t *document;           //  Deep copy of the schema: nodes point into it
    act_snode_t *root;          //  The compiled root schema
    act_snode_t **nodes;        //  Every compiled node, to resolve $ref and to free
    size_t node_count;          //  How many
    size_t node_limit;          //  Room in nodes
    pcre2_match_data *match;    //  Scratch for pattern matches: no allocation per check
    pcre2_match_context *limits;    //  The match limit against runaway backtracking
    uint64_t hash_key [2];      //  Keys the item hashes of uniqueItems (random)
    bool hash_keyed;            //  hash_key is set (at the first use)
};

//  --------------------------------------------------------------------------
//  The instances the validator reads (act_schema_value.c): a jansson value,
//  or JSON text that act_scan accepted, walked in place

//  An instance: exactly one of json, members or text says where it is
typedef struct {
    const json_t *json;         //  A tree; NULL: text
    const char *text;           //  The value's first byte, or the text the
                                //  members are offsets into
    size_t size;                //  Bytes of the value (0 with members)
    const act_call_span_t *members; //  An object made of these members of
                                //  text (key to end of value); NULL: none
    size_t count;               //  How many members
} act_sval_t;

//  A number as jansson holds it
typedef struct {
    bool integer;               //  An int64 integer (else a real)
    json_int_t i;               //  Its value when integer
    double d;                   //  Its value when real
} act_snum_t;

//  Room for a decoded string or key: local unless it is longer
typedef struct {
    char local [256];           //  Most strings and keys
    char *allocated;            //  A longer one (freed by act_sbuf_release)
} act_sbuf_t;

//  A member's key, read by act_siter_member: length bytes at name (not
//  NUL-terminated for text), as a C string reads it (up to a \u0000)
typedef struct {
    const char *name;           //  Its bytes
    size_t length;              //  How many
    size_t full;                //  Its decoded length, past any \u0000
    act_sbuf_t buffer;          //  Where an escaped key is decoded
} act_skey_t;

//  A walk over an array's items or an object's members
typedef struct {
    const act_sval_t *of;       //  The container
    size_t index;               //  Items or members read so far
    size_t pos;                 //  Text: offset of the next one
    void *iter;                 //  Tree object: jansson's iterator
} act_siter_t;

//  The kind of a value of text by its first byte ('{', '"', '-', '7' ...):
//  one load, whatever the byte (0 for one no JSON value starts with). '?'
//  marks a reference in act_schema_partial.c's copy of a call's text.
extern const unsigned char act_sval_kinds [256];

//  The instance's kind: one ACT_ST_ bit, never ACT_ST_INTEGER
static inline unsigned
act_sval_kind (const act_sval_t *self)
{
    if (self->json) {
        switch (json_typeof (self->json)) {
            case JSON_OBJECT:  return ACT_ST_OBJECT;
            case JSON_ARRAY:   return ACT_ST_ARRAY;
            case JSON_STRING:  return ACT_ST_STRING;
            case JSON_INTEGER:
            case JSON_REAL:    return ACT_ST_NUMBER;
            case JSON_TRUE:
            case JSON_FALSE:   return ACT_ST_BOOLEAN;
            default:           return ACT_ST_NULL;
        }
    }
    if (self->members)
        return ACT_ST_OBJECT;
    return act_sval_kinds [(unsigned char) self->text [0]];
}

//  A number (kind ACT_ST_NUMBER) without a fractional part
bool act_sval_integral (const act_sval_t *self);

//  The number (kind ACT_ST_NUMBER), read as act_json_parse reads it
void act_sval_number (const act_sval_t *self, act_snum_t *number);

//  The string (kind ACT_ST_STRING), decoded into buffer when it must be:
//  its bytes, *length set. NULL when out of memory.
const char *act_sval_string (const act_sval_t *self, act_sbuf_t *buffer, size_t *length);

//  At least the string's decoded length in bytes, without decoding it
size_t act_sval_string_bound (const act_sval_t *self);

//  Items of an array, members of an object
size_t act_sval_count (const act_sval_t *self);

//  True when the object has a member named name (a C string)
bool act_sval_has (const act_sval_t *self, const char *name);

//  The instance as a new tree (containers compared by value); NULL when
//  out of memory
json_t *act_sval_tree (const act_sval_t *self);

//  JSON Schema equality of two scalars of text (a and b).
bool act_sval_equal_text (const act_sval_t *a, const act_sval_t *b);

//  JSON Schema equality of self and a value of a schema. Text scalars
//  compare in place; a text object or array is made a tree first (rare:
//  enum and const of containers).
bool act_sval_equal (const act_sval_t *self, const json_t *value);

//  Start a walk over the container
void act_siter_start (act_siter_t *self, const act_sval_t *of);

//  The next item of an array; false at the end
bool act_siter_item (act_siter_t *self, act_sval_t *item);

//  The next member of an object, its key in key (act_sbuf_release
//  (&key->buffer) after); false at the end or when out of memory (*oom)
bool act_siter_member (act_siter_t *self, act_sval_t *value, act_skey_t *key, bool *oom);

//  Free what buffer allocated
static inline void
act_sbuf_release (act_sbuf_t *self)
{
    if (self->allocated) {
        free (self->allocated);
        self->allocated = NULL;
    }
}

//  A jansson number as an act_snum_t
void act_snum_of (const json_t *number, act_snum_t *out);

//  Compare numbers exactly: -1, 0 or 1 as a is below, at or above b
int act_snum_compare (const act_snum_t *a, const act_snum_t *b);

//  True when number is a multiple of divisor (a number above 0), as
//  multipleOf says: exactly for integers, within rounding for reals
bool act_snum_multiple (const act_snum_t *number, const json_t *divisor);

//  The jansson number as text for a message, in buffer (size bytes): an
//  integer as it is, a real in the fewest digits that read back the same
const char *act_snum_text (const json_t *number, char *buffer, size_t size);

//  A hash of value consistent with act_schema_equal: equal values hash
//  equal (numbers by value, objects regardless of member order), keyed by
//  key (SipHash-1-3: who does not know the key cannot pick distinct
//  values whose hashes collide). *plain is set false when value holds an
//  object key with a \u0000, which act_schema_equal looks up by its C
//  string (up to the \u0000): the hash then tells nothing. What is nested
//  deeper than 256 levels is hashed as one constant. Allocates nothing.
uint64_t act_schema_hash (const json_t *value, const uint64_t key [2], bool *plain);

//  --------------------------------------------------------------------------
//  Unknowns (act_schema_partial.c): the references of a call, whose values
//  are not known before they resolve, in a copy of the call's text that
//  the validator reads (act_schema_valid_unresolved)

//  Where a call's references are in the text being validated
typedef struct {
    const act_call_t *call;     //  Its spans: each reference's token
    const char *text;           //  The text read: a copy of the call's, each
                                //  reference's token a '?' (ACT_ST_UNKNOWN)
                                //  and each "††" literal read as its value
                                //  (every offset the same)
} act_sunknowns_t;

//  True when instance is or holds one of the references, at any depth (a
//  tree made apart from the text holds none)
bool act_sunknown_within (const act_sunknowns_t *self, const act_sval_t *instance);

//  The validation of act_schema_valid_text, of instance read in unknowns'
//  text, with each reference an unknown value: false only when no value
//  of theirs would make instance valid (act_schema_valid.c says how each
//  keyword is judged), with err set as act_schema_valid sets it
bool act_schema_valid_unknowns (act_schema_t *self, const act_sval_t *instance,
                                const act_sunknowns_t *unknowns, act_err_t *err);

#endif

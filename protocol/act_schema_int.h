/*  =========================================================================
    act_schema_int - the compiled form of a JSON Schema, shared by the
    compiler (act_schema.c) and the validator (act_schema_valid.c). Not
    installed: nothing outside libactd sees it.
    ========================================================================= */

#ifndef ACT_SCHEMA_INT_H_INCLUDED
#define ACT_SCHEMA_INT_H_INCLUDED

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include "actd/act_schema.h"

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
};

#endif

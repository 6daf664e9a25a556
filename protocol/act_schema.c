/*  =========================================================================
    act_schema - compiling a JSON Schema (draft 2020-12) into the nodes the
    validator walks (act_schema_valid.c). Every keyword is checked against
    what the 2020-12 meta-schema allows and turned into plain fields, every
    pattern is compiled once, every $ref is resolved once: validating then
    costs no parsing, no lookup of keywords and no allocation.
    ========================================================================= */

#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "act_schema_int.h"

//  Longest schema location kept for messages; deeper ones are cut
#define S_PATH_MAX  256

//  The state of one compilation
typedef struct {
    act_schema_t *schema;       //  What is being built
    act_err_t *err;             //  Where the first error goes
    char path [S_PATH_MAX];     //  JSON Pointer of the current place in the schema
    size_t used;                //  Bytes of path in use
} s_compiler_t;

//  What a keyword's value must be, for those s_kw_value checks
typedef enum { S_ANY, S_STRING, S_BOOLEAN, S_ARRAY, S_NUMBER, S_POSITIVE } s_kind_t;

typedef struct _s_keyword_t s_keyword_t;
//  Compiles one keyword's value into node; 0, or -1 with the error set
typedef int (s_compile_fn) (s_compiler_t *c, act_snode_t *node,
                            const s_keyword_t *keyword, const json_t *value);

//  One row of the keyword table
struct _s_keyword_t {
    const char *name;           //  As in the schema
    s_compile_fn *compile;      //  Checks the value and fills node
    size_t field;               //  offsetof the node field it fills (if one)
    unsigned group;             //  ACT_SH_ bit it sets (0: none)
    s_kind_t kind;              //  What the value must be (s_kw_value)
};

//  Set a bad_argument error naming the current place in the schema
static int
s_error (s_compiler_t *c, const char *why)
{
    return act_err_set (c->err, ACT_E_BAD_ARGUMENT, "%s: %s",
                        c->used? c->path: "(root)", why);
}

//  Set an internal error: memory ran out (not the schema's fault)
static int
s_oom (s_compiler_t *c)
{
    return act_err_set (c->err, ACT_E_INTERNAL, "%s: out of memory",
                        c->used? c->path: "(root)");
}

//  Append one reference token (escaped as RFC 6901 says) to the current
//  path; returns the length to restore with s_path_pop
static size_t
s_path_push (s_compiler_t *c, const char *token)
{
    size_t mark = c->used;
    if (c->used + 1 < S_PATH_MAX)
        c->path [c->used++] = '/';
    for (const char *p = token; *p && c->used + 2 < S_PATH_MAX; p++) {
        if (*p == '~' || *p == '/') {
            c->path [c->used++] = '~';
            c->path [c->used++] = *p == '~'? '0': '1';
        }
        else
            c->path [c->used++] = *p;
    }
    c->path [c->used] = 0;
    return mark;
}

//  Append an array index to the current path, as s_path_push
static size_t
s_path_push_index (s_compiler_t *c, size_t index)
{
    char token [32];
    snprintf (token, sizeof token, "%zu", index);
    return s_path_push (c, token);
}

//  Cut the current path back to what s_path_push returned
static void
s_path_pop (s_compiler_t *c, size_t mark)
{
    c->used = mark;
    c->path [mark] = 0;
}

//  The names of the ACT_ST_ bits, in bit order
const char *const act_schema_type_names [ACT_ST_COUNT] = {
    "null", "boolean", "object", "array", "number", "string", "integer"
};

static act_snode_t *s_compile (s_compiler_t *c, const json_t *json);

//  Compile the subschema value of the current keyword, under token (NULL:
//  the keyword's value itself is the subschema)
static act_snode_t *
s_compile_at (s_compiler_t *c, const json_t *value, const char *token)
{
    size_t mark = token? s_path_push (c, token): c->used;
    act_snode_t *node = s_compile (c, value);
    s_path_pop (c, mark);
    return node;
}

//  A non-empty array of subschemas (allOf, anyOf, oneOf, prefixItems)
static int
s_compile_list (s_compiler_t *c, const json_t *value, act_slist_t *list)
{
    if (!json_is_array (value) || json_array_size (value) == 0)
        return s_error (c, "expected a non-empty array of schemas");
    list->nodes = calloc (json_array_size (value), sizeof (act_snode_t *));
    if (!list->nodes)
        return s_oom (c);
    size_t index;
    json_t *member;
    json_array_foreach (value, index, member) {
        size_t mark = s_path_push_index (c, index);
        list->nodes [index] = s_compile (c, member);
        s_path_pop (c, mark);
        if (!list->nodes [index])
            return -1;
        list->count++;
    }
    return 0;
}

//  A non-negative integer such as minLength (1.0 counts: the meta-schema
//  says "integer"); huge values are clamped, they forbid nothing real
static int
s_kw_count (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
            const json_t *value)
{
    long long count;
    if (json_is_integer (value))
        count = json_integer_value (value);
    else
    if (json_is_real (value) && json_real_value (value) == floor (json_real_value (value))) {
        //  Negative ones are refused before the conversion, which a value
        //  below LLONG_MIN would make undefined
        double real = json_real_value (value);
        count = real < 0? -1: real >= 9.2e18? LLONG_MAX: (long long) real;
    }
    else
        return s_error (c, "expected a non-negative integer");
    if (count < 0)
        return s_error (c, "expected a non-negative integer");
    *(long long *) ((char *) node + keyword->field) = count;
    return 0;
}

//  A value kept as it is (enum, const, the number bounds) or an annotation
//  (kept nowhere: field 0), after checking that it is what the 2020-12
//  meta-schema says it is. format is an annotation unless a vocabulary
//  asserts it.
static int
s_kw_value (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
            const json_t *value)
{
    bool fits;
    switch (keyword->kind) {
        case S_STRING:   fits = json_is_string (value); break;
        case S_BOOLEAN:  fits = json_is_boolean (value); break;
        case S_ARRAY:    fits = json_is_array (value); break;
        case S_NUMBER:   fits = json_is_number (value); break;
        case S_POSITIVE: fits = json_is_number (value) && json_number_value (value) > 0; break;
        default:         fits = true;
    }
    if (!fits) {
        static const char *expected [] = {
            "", "a string", "a boolean", "an array", "a number", "a number above 0"
        };
        char why [40];
        snprintf (why, sizeof why, "expected %s", expected [keyword->kind]);
        return s_error (c, why);
    }
    if (keyword->field)
        *(const json_t **) ((char *) node + keyword->field) = value;
    return 0;
}

//  One subschema (not, if, then, else, items, additionalProperties)
static int
s_kw_schema (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
             const json_t *value)
{
    if (json_is_array (value) && !strcmp (keyword->name, "items"))
        return s_error (c, "not supported: the array form of items is draft 7's "
                           "(draft 2020-12 uses prefixItems)");
    act_snode_t *sub = s_compile_at (c, value, NULL);
    *(act_snode_t **) ((char *) node + keyword->field) = sub;
    return sub? 0: -1;
}

//  A list of subschemas (allOf, anyOf, oneOf, prefixItems)
static int
s_kw_list (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
           const json_t *value)
{
    return s_compile_list (c, value, (act_slist_t *) ((char *) node + keyword->field));
}

//  type: a name or a non-empty array of distinct names
static int
s_kw_type (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
           const json_t *value)
{
    const char *const *names = act_schema_type_names;
    size_t count = json_is_array (value)? json_array_size (value): 1;
    for (size_t index = 0; index < count; index++) {
        const json_t *name = json_is_array (value)? json_array_get (value, index): value;
        unsigned bit = 0;
        for (size_t kind = 0; kind < ACT_ST_COUNT; kind++)
            if (json_is_string (name) && !strcmp (json_string_value (name), names [kind]))
                bit = 1u << kind;
        if (!bit)
            return s_error (c, "expected a type name (null, boolean, object, array, "
                               "number, string, integer) or an array of them");
        if (node->types & bit)
            return s_error (c, "a type is named twice");
        node->types |= bit;
    }
    if (count == 0)
        return s_error (c, "expected at least one type");
    return 0;
}

//  A letter escape PCRE2 gives a meaning ECMA-262 does not (\A, \Z, \z,
//  \G, \Q...\E, \h, \K, \R, \X ...): the schema's author meant ECMA-262,
//  where these are errors (or a plain letter), so it is refused rather
//  than matched otherwise. Returns the letter, or 0 if there is none.
static char
s_foreign_escape (const char *text, size_t size)
{
    for (size_t index = 0; index + 1 < size; index++)
        if (text [index] == '\\') {
            char next = text [++index];
            bool letter = (next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z');
            if (letter && !strchr ("dDwWsSbBfnrtvcxupPk", next))
                return next;
        }
    return 0;
}

//  Compile a pattern as ECMA-262 would read it, as near as PCRE2 goes: UTF,
//  \uHHHH escapes (ALT_BSUX), and $ only at the very end of the subject
static pcre2_code *
s_regex (s_compiler_t *c, const char *text, size_t size)
{
    char foreign = s_foreign_escape (text, size);
    if (foreign) {
        char message [80];
        snprintf (message, sizeof message, "not supported: \\%c is not an ECMA-262 "
                  "escape", foreign);
        s_error (c, message);
        return NULL;
    }
    int code;
    PCRE2_SIZE offset;
    pcre2_code *regex = pcre2_compile ((PCRE2_SPTR) text, size,
                                       PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY,
                                       &code, &offset, NULL);
    if (!regex) {
        char why [128];
        pcre2_get_error_message (code, (PCRE2_UCHAR *) why, sizeof why);
        char message [200];
        snprintf (message, sizeof message, "bad pattern at offset %zu: %s",
                  (size_t) offset, why);
        s_error (c, message);
        return NULL;
    }
    //  No JIT: actd's unit has MemoryDenyWriteExecute=yes, under which JIT
    //  cannot get executable memory, and valgrind cannot follow JIT code.
    //  The interpreter matches the short strings of tool parameters in
    //  tens of nanoseconds anyway (bench_schema).
    return regex;
}

//  pattern: a string PCRE2 compiles
static int
s_kw_pattern (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
              const json_t *value)
{
    if (!json_is_string (value))
        return s_error (c, "expected a string (a regular expression)");
    node->pattern_text = json_string_value (value);
    node->pattern = s_regex (c, json_string_value (value), json_string_length (value));
    return node->pattern? 0: -1;
}

//  properties: an object of schemas, indexed by name for the validator
static int
s_kw_properties (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
                 const json_t *value)
{
    if (!json_is_object (value))
        return s_error (c, "expected an object of schemas");
    node->properties = calloc (json_object_size (value) + 1, sizeof (act_snode_t *));
    node->property_names = calloc (json_object_size (value) + 1, sizeof (act_sname_t));
    node->property_index = json_object ();
    if (!node->properties || !node->property_names || !node->property_index)
        return s_oom (c);
    const char *name;
    json_t *member;
    json_object_foreach ((json_t *) value, name, member) {
        node->properties [node->property_count] = s_compile_at (c, member, name);
        node->property_names [node->property_count] = (act_sname_t) { name, strlen (name) };
        if (!node->properties [node->property_count])
            return -1;
        if (json_object_set_new (node->property_index, name,
                                 json_integer ((json_int_t) node->property_count)))
            return s_oom (c);
        node->property_count++;
    }
    return 0;
}

//  patternProperties: an object whose keys are patterns, of schemas
static int
s_kw_pattern_properties (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
                         const json_t *value)
{
    if (!json_is_object (value))
        return s_error (c, "expected an object of schemas");
    node->patterns = calloc (json_object_size (value) + 1, sizeof (act_spattern_t));
    if (!node->patterns)
        return s_oom (c);
    const char *name;
    json_t *member;
    json_object_foreach ((json_t *) value, name, member) {
        act_spattern_t *entry = &node->patterns [node->pattern_count];
        size_t mark = s_path_push (c, name);
        entry->regex = s_regex (c, name, strlen (name));
        if (entry->regex)
            node->pattern_count++;
        entry->schema = entry->regex? s_compile (c, member): NULL;
        s_path_pop (c, mark);
        if (!entry->schema)
            return -1;
    }
    return 0;
}

//  required: an array of distinct strings
static int
s_kw_required (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
               const json_t *value)
{
    if (!json_is_array (value))
        return s_error (c, "expected an array of strings");
    node->required = calloc (json_array_size (value) + 1, sizeof (const char *));
    if (!node->required)
        return s_oom (c);
    size_t index;
    json_t *name;
    json_array_foreach (value, index, name) {
        if (!json_is_string (name))
            return s_error (c, "expected an array of strings");
        for (size_t seen = 0; seen < index; seen++)
            if (json_equal (name, json_array_get (value, seen)))
                return s_error (c, "a name is listed twice");
        node->required [node->required_count++] = json_string_value (name);
    }
    return 0;
}

//  uniqueItems: a boolean
static int
s_kw_unique_items (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
                   const json_t *value)
{
    if (!json_is_boolean (value))
        return s_error (c, "expected a boolean");
    node->unique_items = json_is_true (value);
    return 0;
}

//  $defs: an object of schemas
static int
s_kw_defs (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
           const json_t *value)
{
    if (!json_is_object (value))
        return s_error (c, "expected an object of schemas");
    //  Compiled now, so that bad keywords in them are refused even when no
    //  $ref uses them, and so that $ref finds them compiled
    const char *name;
    json_t *member;
    json_object_foreach ((json_t *) value, name, member)
        if (!s_compile_at (c, member, name))
            return -1;
    return 0;
}

//  $ref: a reference into this schema; resolved once all is compiled
static int
s_kw_ref (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
          const json_t *value)
{
    if (!json_is_string (value))
        return s_error (c, "expected a string");
    if (json_string_value (value) [0] != '#')
        return s_error (c, "not supported: only references within the schema "
                           "(\"#\" and \"#/...\") are resolved");
    node->ref_text = json_string_value (value);
    return 0;
}

//  $id: at the root it only names the document, whose "#..." references
//  stay the same. Below the root it would change the base URI that later
//  $ref resolve against, and $ref here is not resolved against URIs:
//  accepting it could make a reference point somewhere else than meant.
static int
s_kw_id (s_compiler_t *c, act_snode_t *node, const s_keyword_t *keyword,
         const json_t *value)
{
    if (!json_is_string (value))
        return s_error (c, "expected a string");
    if (node != c->schema->root)
        return s_error (c, "not supported: $id below the root (it changes "
                           "what $ref points to)");
    return 0;
}

#define S_AT(field) offsetof (act_snode_t, field)

//  Every keyword accepted; anything else is refused
static const s_keyword_t s_keywords [] = {
    { "type",                 s_kw_type,               0, 0, S_ANY },
    { "enum",                 s_kw_value,              S_AT (enum_values), 0, S_ARRAY },
    { "const",                s_kw_value,              S_AT (const_value), 0, S_ANY },
    { "minimum",              s_kw_value,              S_AT (minimum), ACT_SH_NUMBER, S_NUMBER },
    { "maximum",              s_kw_value,              S_AT (maximum), ACT_SH_NUMBER, S_NUMBER },
    { "exclusiveMinimum",     s_kw_value,              S_AT (exclusive_minimum), ACT_SH_NUMBER,
                                                       S_NUMBER },
    { "exclusiveMaximum",     s_kw_value,              S_AT (exclusive_maximum), ACT_SH_NUMBER,
                                                       S_NUMBER },
    { "multipleOf",           s_kw_value,              S_AT (multiple_of), ACT_SH_NUMBER,
                                                       S_POSITIVE },
    { "minLength",            s_kw_count,              S_AT (min_length), ACT_SH_STRING, S_ANY },
    { "maxLength",            s_kw_count,              S_AT (max_length), ACT_SH_STRING, S_ANY },
    { "pattern",              s_kw_pattern,            0, ACT_SH_STRING, S_ANY },
    { "prefixItems",          s_kw_list,               S_AT (prefix_items), ACT_SH_ARRAY, S_ANY },
    { "items",                s_kw_schema,             S_AT (items), ACT_SH_ARRAY, S_ANY },
    { "minItems",             s_kw_count,              S_AT (min_items), ACT_SH_ARRAY, S_ANY },
    { "maxItems",             s_kw_count,              S_AT (max_items), ACT_SH_ARRAY, S_ANY },
    { "uniqueItems",          s_kw_unique_items,       0, ACT_SH_ARRAY, S_ANY },
    { "properties",           s_kw_properties,         0, ACT_SH_OBJECT, S_ANY },
    { "patternProperties",    s_kw_pattern_properties, 0, ACT_SH_OBJECT, S_ANY },
    { "additionalProperties", s_kw_schema,             S_AT (additional), ACT_SH_OBJECT, S_ANY },
    { "required",             s_kw_required,           0, ACT_SH_OBJECT, S_ANY },
    { "allOf",                s_kw_list,               S_AT (all_of), ACT_SH_APPLY, S_ANY },
    { "anyOf",                s_kw_list,               S_AT (any_of), ACT_SH_APPLY, S_ANY },
    { "oneOf",                s_kw_list,               S_AT (one_of), ACT_SH_APPLY, S_ANY },
    { "not",                  s_kw_schema,             S_AT (not_schema), ACT_SH_APPLY, S_ANY },
    { "if",                   s_kw_schema,             S_AT (if_schema), ACT_SH_APPLY, S_ANY },
    { "then",                 s_kw_schema,             S_AT (then_schema), 0, S_ANY },
    { "else",                 s_kw_schema,             S_AT (else_schema), 0, S_ANY },
    { "$ref",                 s_kw_ref,                0, ACT_SH_APPLY, S_ANY },
    { "$defs",                s_kw_defs,               0, 0, S_ANY },
    { "$id",                  s_kw_id,                 0, 0, S_ANY },
    //  Annotations (field 0: checked, kept nowhere)
    { "$schema",              s_kw_value,              0, 0, S_STRING },
    { "$comment",             s_kw_value,              0, 0, S_STRING },
    { "format",               s_kw_value,              0, 0, S_STRING },
    { "title",                s_kw_value,              0, 0, S_STRING },
    { "description",          s_kw_value,              0, 0, S_STRING },
    { "contentMediaType",     s_kw_value,              0, 0, S_STRING },
    { "contentEncoding",      s_kw_value,              0, 0, S_STRING },
    { "default",              s_kw_value,              0, 0, S_ANY },
    { "examples",             s_kw_value,              0, 0, S_ARRAY },
    { "deprecated",           s_kw_value,              0, 0, S_BOOLEAN },
    { "readOnly",             s_kw_value,              0, 0, S_BOOLEAN },
    { "writeOnly",            s_kw_value,              0, 0, S_BOOLEAN },
};

static const s_keyword_t *
s_keyword (const char *name)
{
    for (size_t index = 0; index < sizeof s_keywords / sizeof s_keywords [0]; index++)
        if (!strcmp (s_keywords [index].name, name))
            return &s_keywords [index];
    return NULL;
}

//  A new node for json at the current place, owned by the schema's list
static act_snode_t *
s_node_new (s_compiler_t *c, const json_t *json)
{
    act_schema_t *schema = c->schema;
    if (schema->node_count == schema->node_limit) {
        size_t limit = schema->node_limit? schema->node_limit * 2: 16;
        act_snode_t **nodes = realloc (schema->nodes, limit * sizeof (act_snode_t *));
        if (!nodes)
            return NULL;
        schema->nodes = nodes;
        schema->node_limit = limit;
    }
    act_snode_t *node = calloc (1, sizeof (act_snode_t));
    if (!node)
        return NULL;
    node->location = strdup (c->used? c->path: "(root)");
    if (!node->location) {
        free (node);
        return NULL;
    }
    node->source = json;
    node->id = schema->node_count;
    node->min_length = node->max_length = -1;
    node->min_items = node->max_items = -1;
    schema->nodes [schema->node_count++] = node;
    return node;
}

//  Compile one schema (object or boolean) and everything under it
static act_snode_t *
s_compile (s_compiler_t *c, const json_t *json)
{
    if (!json_is_object (json) && !json_is_boolean (json)) {
        s_error (c, "expected a schema (an object or a boolean)");
        return NULL;
    }
    act_snode_t *node = s_node_new (c, json);
    if (!node) {
        s_oom (c);
        return NULL;
    }
    if (!c->schema->root)
        c->schema->root = node;
    if (json_is_boolean (json)) {
        node->boolean = json_is_true (json);
        return node;
    }
    node->boolean = -1;
    const char *name;
    json_t *value;
    json_object_foreach ((json_t *) json, name, value) {
        const s_keyword_t *keyword = s_keyword (name);
        size_t mark = s_path_push (c, name);
        int rc = keyword? keyword->compile (c, node, keyword, value)
                        : s_error (c, "not supported");
        s_path_pop (c, mark);
        if (rc)
            return NULL;        //  The node is freed with the schema
        if (keyword->group)
            node->has |= keyword->group;
    }
    return node;
}

//  Percent-decode then unescape (~1, ~0) one reference token of a $ref
//  fragment into buffer. False if it does not fit or is malformed.
static bool
s_ref_token (const char *start, const char *end, char *buffer, size_t size)
{
    size_t used = 0;
    for (const char *p = start; p < end; p++) {
        int byte = (unsigned char) *p;
        if (byte == '%') {
            unsigned int value;
            if (end - p < 3 || sscanf (p + 1, "%2x", &value) != 1)
                return false;
            byte = (int) value;
            p += 2;
        }
        if (used + 1 >= size)
            return false;
        buffer [used++] = (char) byte;
    }
    buffer [used] = 0;
    //  RFC 6901: ~1 is '/', ~0 is '~', in that order
    char *out = buffer;
    for (char *in = buffer; *in; in++) {
        if (*in == '~' && (in [1] == '0' || in [1] == '1')) {
            *out++ = in [1] == '0'? '~': '/';
            in++;
        }
        else
        if (*in == '~')
            return false;
        else
            *out++ = *in;
    }
    *out = 0;
    return true;
}

//  The JSON value in the schema copy that the "#..." reference text names,
//  or NULL
static const json_t *
s_ref_target (const json_t *document, const char *text)
{
    const json_t *value = document;
    const char *p = text + 1;               //  After '#'
    if (*p && *p != '/')
        return NULL;                        //  A plain-name anchor: no $anchor here
    while (*p && value) {
        const char *start = p + 1;
        const char *end = strchr (start, '/');
        if (!end)
            end = start + strlen (start);
        char token [256];
        if (!s_ref_token (start, end, token, sizeof token))
            return NULL;
        if (json_is_object (value))
            value = json_object_get (value, token);
        else
        if (json_is_array (value)) {
            char *rest;
            unsigned long index = strtoul (token, &rest, 10);
            bool canonical = *token && !*rest && (token [0] != '0' || !token [1]);
            value = canonical? json_array_get (value, index): NULL;
        }
        else
            value = NULL;
        p = end;
    }
    return value;
}

//  Resolve every $ref to the node compiled from the value it names
static int
s_resolve_refs (act_schema_t *self, act_err_t *err)
{
    for (size_t index = 0; index < self->node_count; index++) {
        act_snode_t *node = self->nodes [index];
        if (!node->ref_text)
            continue;
        const json_t *target = s_ref_target (self->document, node->ref_text);
        for (size_t other = 0; target && other < self->node_count; other++)
            if (self->nodes [other]->source == target) {
                node->ref = self->nodes [other];
                break;
            }
        if (!node->ref)
            return act_err_set (err, ACT_E_BAD_ARGUMENT, "%s/$ref: \"%s\" does not "
                                "name a subschema of this schema",
                                node->id? node->location: "", node->ref_text);
    }
    return 0;
}

//  Depth-first search for a loop of in-place applicators ($ref, allOf,
//  anyOf, oneOf, not, if/then/else): such a loop would validate for ever
//  without looking at a smaller part of the instance. colour: 0 unseen,
//  1 on the current path, 2 done.
static act_snode_t *
s_find_loop (act_snode_t *node, unsigned char *colour)
{
    if (colour [node->id] == 2)
        return NULL;
    if (colour [node->id] == 1)
        return node;
    colour [node->id] = 1;
    act_snode_t *next [4] = {
        node->ref, node->not_schema, node->if_schema,
        node->if_schema? node->then_schema: NULL
    };
    act_snode_t *loop = NULL;
    for (size_t index = 0; index < 4 && !loop; index++)
        if (next [index])
            loop = s_find_loop (next [index], colour);
    if (!loop && node->if_schema && node->else_schema)
        loop = s_find_loop (node->else_schema, colour);
    const act_slist_t *lists [3] = { &node->all_of, &node->any_of, &node->one_of };
    for (size_t list = 0; list < 3 && !loop; list++)
        for (size_t index = 0; index < lists [list]->count && !loop; index++)
            loop = s_find_loop (lists [list]->nodes [index], colour);
    colour [node->id] = 2;
    return loop;
}

//  Refuse a schema with a loop of in-place applicators
static int
s_check_loops (act_schema_t *self, act_err_t *err)
{
    unsigned char *colour = calloc (self->node_count, 1);
    if (!colour)
        return act_err_set (err, ACT_E_INTERNAL, "out of memory");
    act_snode_t *loop = NULL;
    for (size_t index = 0; index < self->node_count && !loop; index++)
        loop = s_find_loop (self->nodes [index], colour);
    free (colour);
    if (loop)
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "%s: $ref: the schema refers to "
                            "itself without going into the value (it would never end)",
                            loop->location);
    return 0;
}

act_schema_t *
act_schema_new (const json_t *schema, act_err_t *err)
{
    if (!schema) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "(root): no schema");
        return NULL;
    }
    act_schema_t *self = calloc (1, sizeof (act_schema_t));
    if (!self) {
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
        return NULL;
    }
    //  A private copy: the caller may change or free its schema, and nodes
    //  point at strings and values inside this one
    self->document = json_deep_copy (schema);
    s_compiler_t compiler = { .schema = self, .err = err };
    if (!self->document)
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
    else
    if (s_compile (&compiler, self->document)
    &&  !s_resolve_refs (self, err)
    &&  !s_check_loops (self, err)) {
        self->match = pcre2_match_data_create (1, NULL);
        //  A pattern that backtracks catastrophically ((a+)+$) on a string a
        //  client sent must not stall the broker: past a million steps the
        //  match fails, and so does the validation
        self->limits = pcre2_match_context_create (NULL);
        if (self->limits)
            pcre2_set_match_limit (self->limits, 1000000);
        if (self->match && self->limits)
            return self;
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
    }
    act_schema_destroy (&self);
    return NULL;
}

//  Free a node and what it owns (not the nodes it points to)
static void
s_node_destroy (act_snode_t *node)
{
    for (size_t index = 0; index < node->pattern_count; index++)
        pcre2_code_free (node->patterns [index].regex);
    pcre2_code_free (node->pattern);
    free (node->patterns);
    free (node->properties);
    free (node->property_names);
    json_decref (node->property_index);
    free (node->required);
    free (node->prefix_items.nodes);
    free (node->all_of.nodes);
    free (node->any_of.nodes);
    free (node->one_of.nodes);
    free (node->location);
    free (node);
}

void
act_schema_destroy (act_schema_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    act_schema_t *self = *self_p;
    for (size_t index = 0; index < self->node_count; index++)
        s_node_destroy (self->nodes [index]);
    free (self->nodes);
    pcre2_match_data_free (self->match);
    pcre2_match_context_free (self->limits);
    json_decref (self->document);
    free (self);
    *self_p = NULL;
}

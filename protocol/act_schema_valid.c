/*  =========================================================================
    act_schema_valid - validating an instance against a compiled schema
    (act_schema.c compiles it). The instance is read through
    act_schema_value.c: a jansson tree, or JSON text that act_scan
    accepted (a call's parameters at submit, without a tree); the same
    keywords, in the same order, with the same messages, for both.

    The walk stops at the first failure, so a valid call costs one visit of
    each keyword and an invalid one less. The path to the current value is
    kept as (key or index) steps on the stack; the JSON Pointer text is
    written only when a failure is reported, and not at all inside anyOf,
    oneOf, not and if, whose failures are expected.

    With unknowns (act_schema_valid_unresolved: a call's references not
    resolved yet), the walk refuses only what no value of theirs would
    make valid. Keyword by keyword:
    - a reference is a value of its own kind (ACT_ST_UNKNOWN): type, its
      own enum and const pass it, the number, string, array and object
      checks apply to other kinds, and the subschemas applied to it judge
      it alike: false alone refuses it, as it refuses any value (a schema
      no value matches, such as allOf of two types, is not looked for);
    - what looks at a container's shape is judged as usual: required, the
      keys of properties, patternProperties and additionalProperties,
      minItems, maxItems (a member or item is there whatever it resolves
      to), type; and so is every value that holds no reference;
    - properties, prefixItems, items, allOf, anyOf, $ref are sound as they
      are: anyOf passes when one of its schemas may, the others refuse
      when one of theirs refuses for sure;
    - where a value inside can turn a pass into a failure, a value that
      holds a reference is not refused: not is skipped; oneOf passes when
      one of its schemas may (two may not both last) and refuses when
      none may; an if that may match lets then or else pass (a missing
      one passes), one that cannot applies else; enum, const and
      uniqueItems pass (nor difference nor equality is known).
    These are asked only where a keyword would refuse (uniqueItems: before
    it compares): a validation without references pays nothing for them.
    minProperties, propertyNames, contains ... are not compiled (act_schema.c).
    ========================================================================= */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "act_schema_int.h"

//  Deepest instance nesting validated (the broker's frames stop at 64)
#define S_MAX_DEPTH     256
//  Most schemas evaluated inside each other ($ref recursion included)
#define S_MAX_NESTING   1024
//  Longest array whose uniqueItems compares every pair of items
#define S_PAIRWISE_ITEMS    16
//  Microseconds that the patterns of one validation may take in all. Each
//  match is bounded (a match limit), but anyOf, oneOf and not take a
//  failed match as an answer and go on: a call of 56 bytes against 200
//  costly branches cost actd's loop 2.7 s, and one of 7 KB with 200
//  strings 2.8 s (an audit), twice a call (at submit and at dispatch)
#define S_MATCH_BUDGET_US   100000

//  One step from the instance's root to the current value
typedef struct {
    const char *key;            //  Member name; NULL: an array item
    size_t length;              //  Bytes of key
    size_t index;               //  The item's index when key is NULL
} s_step_t;

//  The state of one validation
typedef struct {
    act_schema_t *schema;       //  Its scratch match data
    act_err_t *err;             //  Where the failure goes
    int quiet;                  //  Above 0: failures are expected, not reported
    const act_sunknowns_t *unknowns;    //  The call's references (unknown
                                //  values); NULL: every value is known
    size_t depth;               //  Steps in path
    size_t nesting;             //  Schemas being evaluated
    long long match_us;         //  Time its patterns took so far
    bool given_up;              //  A pattern hit its limit, or the patterns
                                //  their budget: the value is refused,
                                //  whatever anyOf, oneOf or not say
    char why [400];             //  Then why
    s_step_t path [S_MAX_DEPTH];    //  Where the current value is
} s_state_t;

static bool s_valid (s_state_t *st, const act_snode_t *node, const act_sval_t *instance);

//  True when instance is or holds an unknown value: a keyword that sees
//  the value whole (not, oneOf, if, enum, const, uniqueItems) cannot
//  refuse it
static bool
s_unsure (const s_state_t *st, const act_sval_t *instance)
{
    return st->unknowns && act_sunknown_within (st->unknowns, instance);
}

//  Write the JSON Pointer of the current value into buffer
static void
s_pointer (const s_state_t *st, char *buffer, size_t size)
{
    size_t used = 0;
    for (size_t step = 0; step < st->depth && used + 2 < size; step++) {
        buffer [used++] = '/';
        if (!st->path [step].key) {
            int length = snprintf (buffer + used, size - used, "%zu", st->path [step].index);
            used += length > 0? (size_t) length: 0;
            if (used >= size)
                used = size - 1;
            continue;
        }
        const char *key = st->path [step].key;
        for (const char *p = key; p < key + st->path [step].length && used + 3 < size; p++) {
            if (*p == '~' || *p == '/') {
                buffer [used++] = '~';
                buffer [used++] = *p == '~'? '0': '1';
            }
            else
                buffer [used++] = *p;
        }
    }
    buffer [used] = 0;
    if (!used)
        snprintf (buffer, size, "(root)");
}

//  Report a failure of keyword at the current value (unless quiet);
//  always returns false
static bool
s_fail (s_state_t *st, const char *keyword, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

static bool
s_fail (s_state_t *st, const char *keyword, const char *format, ...)
{
    if (st->quiet || !st->err)
        return false;
    char pointer [160];
    s_pointer (st, pointer, sizeof pointer);
    char detail [160];
    va_list args;
    va_start (args, format);
    vsnprintf (detail, sizeof detail, format, args);
    va_end (args);
    act_err_set (st->err, ACT_E_BAD_CALL, "%s: %s: %s", pointer, keyword, detail);
    return false;
}

//  Validate a member (key) or an item (key NULL, index) of the current
//  value against node. A false node is reported as the keyword that
//  brought it (additionalProperties: false says more than "false").
static bool
s_valid_at (s_state_t *st, const act_snode_t *node, const act_sval_t *instance,
            const act_skey_t *key, size_t index, const char *keyword)
{
    if (st->depth == S_MAX_DEPTH)
        return s_fail (st, keyword, "nested deeper than %d levels", S_MAX_DEPTH);
    st->path [st->depth].key = key? key->name: NULL;
    st->path [st->depth].length = key? key->length: 0;
    st->path [st->depth].index = index;
    st->depth++;
    bool valid = node->boolean == 0? s_fail (st, keyword, "not allowed")
                                   : s_valid (st, node, instance);
    st->depth--;
    return valid;
}

//  type: true when one of the instance's kinds is named
static bool
s_check_type (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    unsigned kind = act_sval_kind (instance);
    if (kind & node->types)
        return true;
    if (kind == ACT_ST_NUMBER && (node->types & ACT_ST_INTEGER)
    &&  act_sval_integral (instance))
        return true;
    if (kind == ACT_ST_UNKNOWN)
        return true;            //  A reference: it may resolve to one
    char expected [80] = "";
    for (size_t kind = 0; kind < ACT_ST_COUNT; kind++)
        if (node->types & (1u << kind)) {
            if (*expected)
                strcat (expected, " or ");
            strcat (expected, act_schema_type_names [kind]);
        }
    return s_fail (st, "type", "expected %s", expected);
}

//  Compare a number with a bound of the schema
static int
s_compare (const act_snum_t *number, const json_t *bound)
{
    act_snum_t other;
    act_snum_of (bound, &other);
    return act_snum_compare (number, &other);
}

//  minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf
static bool
s_check_number (s_state_t *st, const act_snode_t *node, const act_sval_t *value)
{
    act_snum_t number, *instance = &number;
    act_sval_number (value, &number);
    char bound [40];
    if (node->minimum && s_compare (instance, node->minimum) < 0)
        return s_fail (st, "minimum", "expected at least %s",
                       act_snum_text (node->minimum, bound, sizeof bound));
    if (node->maximum && s_compare (instance, node->maximum) > 0)
        return s_fail (st, "maximum", "expected at most %s",
                       act_snum_text (node->maximum, bound, sizeof bound));
    if (node->exclusive_minimum && s_compare (instance, node->exclusive_minimum) <= 0)
        return s_fail (st, "exclusiveMinimum", "expected more than %s",
                       act_snum_text (node->exclusive_minimum, bound, sizeof bound));
    if (node->exclusive_maximum && s_compare (instance, node->exclusive_maximum) >= 0)
        return s_fail (st, "exclusiveMaximum", "expected less than %s",
                       act_snum_text (node->exclusive_maximum, bound, sizeof bound));
    if (node->multiple_of && !act_snum_multiple (instance, node->multiple_of))
        return s_fail (st, "multipleOf", "expected a multiple of %s",
                       act_snum_text (node->multiple_of, bound, sizeof bound));
    return true;
}

//  Microseconds on the monotonic clock
static long long
s_now_us (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (long long) now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

//  Does regex match text (anywhere: patterns are not anchored)? An error of
//  the matcher (a limit hit), or the patterns past S_MATCH_BUDGET_US, give
//  the whole validation up (given_up): no branch may take it as an answer.
static bool
s_match (s_state_t *st, pcre2_code *regex, const char *text, size_t size,
         const char *keyword, bool *matched)
{
    *matched = false;
    if (st->given_up)
        return false;
    long long started = s_now_us ();
    int rc = pcre2_match (regex, (PCRE2_SPTR) text, size, 0, 0, st->schema->match,
                          st->schema->limits);
    st->match_us += s_now_us () - started;
    *matched = rc >= 0;
    char pointer [160];
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
        char why [120];
        pcre2_get_error_message (rc, (PCRE2_UCHAR *) why, sizeof why);
        s_pointer (st, pointer, sizeof pointer);
        snprintf (st->why, sizeof st->why, "%s: %s: the pattern could not be matched: %s",
                  pointer, keyword, why);
        st->given_up = true;
    }
    else
    if (st->match_us > S_MATCH_BUDGET_US) {
        s_pointer (st, pointer, sizeof pointer);
        snprintf (st->why, sizeof st->why, "%s: %s: the schema's patterns took over %d ms "
                  "to match this value: refused as too costly", pointer, keyword,
                  S_MATCH_BUDGET_US / 1000);
        st->given_up = true;
    }
    return !st->given_up;           //  Said by s_validate
}

//  minLength, maxLength (in code points, when counted) and pattern on the
//  size bytes at text
static bool
s_check_text (s_state_t *st, const act_snode_t *node, const char *text, size_t size,
              bool counted)
{
    if (counted) {
        //  Code points: every byte that does not continue a UTF-8 sequence
        long long length = 0;
        for (size_t index = 0; index < size; index++)
            length += ((unsigned char) text [index] & 0xC0) != 0x80;
        if (length < node->min_length)
            return s_fail (st, "minLength", "expected at least %lld characters, not %lld",
                           node->min_length, length);
        if (node->max_length >= 0 && length > node->max_length)
            return s_fail (st, "maxLength", "expected at most %lld characters, not %lld",
                           node->max_length, length);
    }
    bool matched;
    if (node->pattern) {
        if (!s_match (st, node->pattern, text, size, "pattern", &matched))
            return false;
        if (!matched)
            return s_fail (st, "pattern", "does not match %s", node->pattern_text);
    }
    return true;
}

//  minLength, maxLength and pattern
static bool
s_check_string (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    //  No more bytes than maxLength (nor less than the characters): no count
    bool counted = node->min_length > 0
               || (node->max_length >= 0
                   && act_sval_string_bound (instance) > (unsigned long long) node->max_length);
    if (!counted && !node->pattern)
        return true;
    act_sbuf_t buffer;
    size_t size;
    const char *text = act_sval_string (instance, &buffer, &size);
    if (!text)
        return s_fail (st, "(internal)", "out of memory");
    bool valid = s_check_text (st, node, text, size, counted);
    act_sbuf_release (&buffer);
    return valid;
}

//  uniqueItems on the array as a tree by comparing every pair: for arrays of
//  up to S_PAIRWISE_ITEMS items, and for those a hash cannot tell apart
static bool
s_check_pairs (s_state_t *st, const json_t *array)
{
    size_t size = json_array_size (array);
    for (size_t index = 1; index < size; index++)
        for (size_t before = 0; before < index; before++)
            if (act_schema_equal (json_array_get (array, before), json_array_get (array, index)))
                return s_fail (st, "uniqueItems", "items %zu and %zu are equal", before, index);
    return true;
}

//  One slot of the table of hashed items
typedef struct {
    uint64_t hash;              //  act_schema_hash of the item
    size_t index;               //  1 + the item's index; 0: an empty slot
} s_slot_t;

//  Set the schema's hash key, once: random, so that a client cannot pick
//  items whose hashes collide
static void
s_hash_key (act_schema_t *schema)
{
    if (schema->hash_keyed)
        return;
    if (getrandom (schema->hash_key, sizeof schema->hash_key, GRND_NONBLOCK)
        != (ssize_t) sizeof schema->hash_key) {
        struct timespec now;
        clock_gettime (CLOCK_MONOTONIC, &now);
        schema->hash_key [0] ^= (uint64_t) now.tv_nsec * 0x9e3779b97f4a7c15ULL
                              ^ (uint64_t) (uintptr_t) schema;
        schema->hash_key [1] ^= (uint64_t) now.tv_sec ^ (uint64_t) getpid () << 32;
    }
    schema->hash_keyed = true;
}

//  uniqueItems on the array as a tree: the same verdict and pair as
//  s_check_pairs (the first item equal to one before it, and that one), in
//  linear time expected. Each item is compared (act_schema_equal) only to
//  the items before it with the same hash; those are distinct (or the
//  check had ended), so at most one of them is equal.
static bool
s_check_unique (s_state_t *st, const json_t *array)
{
    size_t size = json_array_size (array);
    if (size <= S_PAIRWISE_ITEMS)
        return s_check_pairs (st, array);
    if (size > SIZE_MAX / 4 / sizeof (s_slot_t))
        return s_fail (st, "(internal)", "out of memory");
    size_t room = 64;           //  A power of two, at most half full
    while (room < 2 * size)
        room *= 2;
    s_slot_t *slots = (s_slot_t *) calloc (room, sizeof (s_slot_t));
    if (!slots)
        return s_fail (st, "(internal)", "out of memory");
    s_hash_key (st->schema);
    bool plain = true;
    for (size_t index = 0; index < size; index++) {
        const json_t *item = json_array_get (array, index);
        uint64_t hash = act_schema_hash (item, st->schema->hash_key, &plain);
        if (!plain) {
            free (slots);
            return s_check_pairs (st, array);
        }
        //  Linear probing: the items of a hash come in the order of their index
        size_t slot = (size_t) hash & (room - 1);
        for (; slots [slot].index; slot = (slot + 1) & (room - 1))
            if (slots [slot].hash == hash
            &&  act_schema_equal (json_array_get (array, slots [slot].index - 1), item)) {
                size_t before = slots [slot].index - 1;
                free (slots);
                return s_fail (st, "uniqueItems", "items %zu and %zu are equal", before, index);
            }
        slots [slot] = (s_slot_t) { .hash = hash, .index = index + 1 };
    }
    free (slots);
    return true;
}

//  The items of an array of text, read once
typedef struct {
    act_sval_t items [64];      //  The first 64 items
    size_t count;               //  How many items in all
} s_items_t;

//  Read the items of the array of text instance
static void
s_items (const act_sval_t *instance, s_items_t *items)
{
    act_siter_t iter;
    act_siter_start (&iter, instance);
    act_sval_t item;
    items->count = 0;
    while (act_siter_item (&iter, items->count < 64? &items->items [items->count]: &item))
        items->count++;
}

//  uniqueItems on an array of text whose items (up to 64) are all
//  scalars: compared in place. -1 when it is not such an array.
static int
s_check_unique_text (s_state_t *st, const s_items_t *items)
{
    if (items->count > 64)
        return -1;
    for (size_t index = 0; index < items->count; index++) {
        unsigned kind = act_sval_kind (&items->items [index]);
        if (kind == ACT_ST_OBJECT || kind == ACT_ST_ARRAY)
            return -1;
    }
    for (size_t index = 1; index < items->count; index++)
        for (size_t before = 0; before < index; before++)
            if (act_sval_equal_text (&items->items [before], &items->items [index]))
                return s_fail (st, "uniqueItems", "items %zu and %zu are equal", before, index);
    return 1;
}

//  prefixItems and items on the item at index
static bool
s_check_item (s_state_t *st, const act_snode_t *node, const act_sval_t *item, size_t index)
{
    bool prefix = index < node->prefix_items.count;
    return s_valid_at (st, prefix? node->prefix_items.nodes [index]: node->items, item, NULL,
                       index, prefix? "prefixItems": "items");
}

//  prefixItems and items on each item: from items when it holds them all
static bool
s_check_items (s_state_t *st, const act_snode_t *node, const act_sval_t *instance,
               const s_items_t *items)
{
    size_t last = node->items? SIZE_MAX: node->prefix_items.count;
    if (items && items->count <= 64) {
        for (size_t index = 0; index < items->count && index < last; index++)
            if (!s_check_item (st, node, &items->items [index], index))
                return false;
        return true;
    }
    act_siter_t iter;
    act_siter_start (&iter, instance);
    act_sval_t item;
    for (size_t index = 0; index < last && act_siter_item (&iter, &item); index++)
        if (!s_check_item (st, node, &item, index))
            return false;
    return true;
}

//  minItems, maxItems, prefixItems, items, uniqueItems, in that order. An
//  array of text is walked once (64 items kept), a tree read by index.
static bool
s_check_array (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    s_items_t items;
    if (!instance->json)
        s_items (instance, &items);
    if (node->min_items >= 0 || node->max_items >= 0) {
        size_t size = instance->json? act_sval_count (instance): items.count;
        if (node->min_items >= 0 && size < (unsigned long long) node->min_items)
            return s_fail (st, "minItems", "expected at least %lld items, not %zu",
                           node->min_items, size);
        if (node->max_items >= 0 && size > (unsigned long long) node->max_items)
            return s_fail (st, "maxItems", "expected at most %lld items, not %zu",
                           node->max_items, size);
    }
    if ((node->prefix_items.count || node->items)
    &&  !s_check_items (st, node, instance, instance->json? NULL: &items))
        return false;
    if (!node->unique_items || s_unsure (st, instance))
        return true;
    int unique = instance->json? -1: s_check_unique_text (st, &items);
    if (unique >= 0)
        return unique == 1;
    json_t *tree = act_sval_tree (instance);
    if (!tree)
        return s_fail (st, "(internal)", "out of memory");
    bool valid = s_check_unique (st, tree);
    json_decref (tree);
    return valid;
}

//  The index in properties in properties of the one named key, or -1. *guess: where to
//  look first (members mostly come in the schema's order), then after it.
static long
s_property (const act_snode_t *node, const act_skey_t *key, size_t *guess)
{
    if (!node->property_count)
        return -1;
    const act_sname_t *name = &node->property_names [*guess % node->property_count];
    if (name->length == key->length) {
        //  Names are short: a loop costs less than a call to memcmp
        size_t same = 0;
        while (same < key->length && name->name [same] == key->name [same])
            same++;
        if (same == key->length)
            return (long) (*guess % node->property_count);
    }
    json_t *slot = json_object_getn (node->property_index, key->name, key->length);
    return slot? (long) json_integer_value (slot): -1;
}

//  properties, patternProperties and additionalProperties on one member
static bool
s_check_member (s_state_t *st, const act_snode_t *node, const act_sval_t *value,
                const act_skey_t *key, size_t *guess)
{
    long slot = s_property (node, key, guess);
    if (slot >= 0)
        *guess = (size_t) slot + 1;
    if (slot >= 0 && !s_valid_at (st, node->properties [slot], value, key, 0, "properties"))
        return false;
    bool named = slot >= 0;
    for (size_t index = 0; index < node->pattern_count; index++) {
        bool matched;
        if (!s_match (st, node->patterns [index].regex, key->name, key->length,
                      "patternProperties", &matched))
            return false;
        if (matched && !s_valid_at (st, node->patterns [index].schema, value, key, 0,
                                    "patternProperties"))
            return false;
        named |= matched;
    }
    if (!named && node->additional
    &&  !s_valid_at (st, node->additional, value, key, 0, "additionalProperties"))
        return false;
    return true;
}

//  required, then properties, patternProperties and additionalProperties
//  in one pass over the members, in the instance's order: one lookup per
//  member (in properties' index) rather than one per property and another
//  per member to tell the additional ones
static bool
s_check_object (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    for (size_t index = 0; index < node->required_count; index++)
        if (!act_sval_has (instance, node->required [index]))
            return s_fail (st, "required", "missing \"%s\"", node->required [index]);
    if (!node->property_index && !node->pattern_count && !node->additional)
        return true;
    act_siter_t iter;
    act_siter_start (&iter, instance);
    act_sval_t value;
    act_skey_t key;
    bool oom;
    size_t guess = 0;
    while (act_siter_member (&iter, &value, &key, &oom)) {
        bool valid = s_check_member (st, node, &value, &key, &guess);
        act_sbuf_release (&key.buffer);
        if (!valid)
            return false;
    }
    return oom? s_fail (st, "(internal)", "out of memory"): true;
}

//  Validate against node without reporting (inside anyOf, oneOf, not, if)
static bool
s_quietly (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    st->quiet++;
    bool valid = s_valid (st, node, instance);
    st->quiet--;
    return valid;
}

//  if, then and else. With unknowns in the value, an if that may match may
//  as well not once they resolve: the value passes when then may pass or
//  else may (a missing one passes). An if that cannot match, cannot.
static bool
s_check_if (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    bool matched = s_quietly (st, node->if_schema, instance);
    const act_snode_t *branch = matched? node->then_schema: node->else_schema;
    if (!matched || !s_unsure (st, instance))
        return !branch || s_valid (st, branch, instance);
    if (!branch || !node->else_schema || s_quietly (st, branch, instance)
    ||  s_quietly (st, node->else_schema, instance))
        return true;
    return s_fail (st, "if", "matches neither then nor else, whatever the references "
                   "in it resolve to");
}

//  allOf, anyOf, oneOf, not, if/then/else, $ref: the schemas applied to
//  the same value. Only allOf, then/else and $ref report their inner
//  failure; the others say which of their own rules failed.
static bool
s_check_apply (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    for (size_t index = 0; index < node->all_of.count; index++)
        if (!s_valid (st, node->all_of.nodes [index], instance))
            return false;
    if (node->any_of.count) {
        size_t index = 0;
        while (index < node->any_of.count && !s_quietly (st, node->any_of.nodes [index], instance))
            index++;
        if (index == node->any_of.count)
            return s_fail (st, "anyOf", "matches none of the %zu schemas", node->any_of.count);
    }
    if (node->one_of.count) {
        size_t first = SIZE_MAX;
        for (size_t index = 0; index < node->one_of.count; index++) {
            if (!s_quietly (st, node->one_of.nodes [index], instance))
                continue;
            if (first != SIZE_MAX && s_unsure (st, instance))
                break;          //  Both may pass; enough that one may
            if (first != SIZE_MAX)
                return s_fail (st, "oneOf", "matches schemas %zu and %zu, not one",
                               first, index);
            first = index;
        }
        if (first == SIZE_MAX)
            return s_fail (st, "oneOf", "matches none of the %zu schemas", node->one_of.count);
    }
    if (node->not_schema && s_quietly (st, node->not_schema, instance)
    &&  !s_unsure (st, instance))
        return s_fail (st, "not", "matches the schema it must not match");
    if (node->if_schema && (node->then_schema || node->else_schema)
    &&  !s_check_if (st, node, instance))
        return false;
    if (node->ref && !s_valid (st, node->ref, instance))
        return false;
    return true;
}

//  enum: the instance equals one of the values (JSON Schema equality). An
//  object, array or string of text is made a tree once for all the values:
//  compared as text, it was parsed (or decoded) again for each value, and
//  a 4 KB enum of 1,000 {} against a 150 KB object held the loop 5 s
static bool
s_check_enum (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    act_sval_t whole = *instance;
    json_t *tree = NULL;
    if (!instance->json && (act_sval_kind (instance)
                            & (ACT_ST_OBJECT | ACT_ST_ARRAY | ACT_ST_STRING)))
        tree = act_sval_tree (instance);
    if (tree)
        whole = (act_sval_t) { .json = tree };
    bool found = false;
    size_t index;
    json_t *value;
    json_array_foreach (node->enum_values, index, value)
        if ((found = act_sval_equal (&whole, value)))
            break;
    json_decref (tree);
    if (found)
        return true;
    if (s_unsure (st, instance))
        return true;            //  It may equal one once resolved
    return s_fail (st, "enum", "not one of the %zu values allowed",
                   json_array_size (node->enum_values));
}

//  Validate instance against node, keyword group by keyword group. Each
//  branch of the chain runs only when the ones before it passed; of the
//  four kind-specific groups at most one applies to an instance.
static bool
s_valid (s_state_t *st, const act_snode_t *node, const act_sval_t *instance)
{
    if (node->boolean >= 0)
        return node->boolean || s_fail (st, "false", "no value is allowed here");
    if (st->given_up)
        return false;
    if (st->nesting == S_MAX_NESTING)
        return s_fail (st, "$ref", "schemas nested deeper than %d", S_MAX_NESTING);
    st->nesting++;
    bool valid = true;
    unsigned has = node->has;
    unsigned kind = act_sval_kind (instance);
    if (node->types && !s_check_type (st, node, instance))
        valid = false;
    else
    if (node->const_value && !act_sval_equal (instance, node->const_value)
    &&  !s_unsure (st, instance))
        valid = s_fail (st, "const", "not the value required");
    else
    if (node->enum_values && !s_check_enum (st, node, instance))
        valid = false;
    else
    if ((has & ACT_SH_NUMBER) && kind == ACT_ST_NUMBER)
        valid = s_check_number (st, node, instance);
    else
    if ((has & ACT_SH_STRING) && kind == ACT_ST_STRING)
        valid = s_check_string (st, node, instance);
    else
    if ((has & ACT_SH_ARRAY) && kind == ACT_ST_ARRAY)
        valid = s_check_array (st, node, instance);
    else
    if ((has & ACT_SH_OBJECT) && kind == ACT_ST_OBJECT)
        valid = s_check_object (st, node, instance);
    if (valid && (has & ACT_SH_APPLY))
        valid = s_check_apply (st, node, instance);
    st->nesting--;
    return valid;
}

//  Validate instance from the root of self, with unknowns (NULL: none)
static bool
s_validate (act_schema_t *self, const act_sval_t *instance, const act_sunknowns_t *unknowns,
            act_err_t *err)
{
    s_state_t st;
    st.schema = self;
    st.err = err;
    st.quiet = 0;
    st.unknowns = unknowns;
    st.depth = 0;
    st.nesting = 0;
    st.match_us = 0;
    st.given_up = false;
    bool valid = s_valid (&st, self->root, instance);
    if (st.given_up && err)
        act_err_set (err, ACT_E_BAD_CALL, "%s", st.why);
    return valid && !st.given_up;
}

bool
act_schema_valid (act_schema_t *self, const json_t *instance, act_err_t *err)
{
    if (!self || !instance) {
        act_err_set (err, ACT_E_BAD_CALL, "(root): no %s to validate",
                     self? "value": "schema");
        return false;
    }
    return s_validate (self, &(act_sval_t) { .json = instance }, NULL, err);
}

bool
act_schema_valid_text (act_schema_t *self, const char *text, size_t size, act_err_t *err)
{
    if (!self || !text || !size) {
        act_err_set (err, ACT_E_BAD_CALL, "(root): no %s to validate",
                     self? "value": "schema");
        return false;
    }
    //  The value without the white space around it
    size_t start = 0;
    while (start < size && strchr (" \t\n\r", text [start]))
        start++;
    while (size > start && strchr (" \t\n\r", text [size - 1]))
        size--;
    return s_validate (self, &(act_sval_t) { .text = text + start, .size = size - start },
                       NULL, err);
}

bool
act_schema_valid_call (act_schema_t *self, act_call_t *call, act_err_t *err)
{
    bool literals = false;
    for (size_t index = 0; index < call->nspans; index++)
        literals |= call->spans [index].ref != -2;
    if (!self || !literals)
        return self? s_validate (self, &(act_sval_t) { .text = call->text,
                                                       .members = call->spans,
                                                       .count = call->nspans }, NULL, err)
                   : act_schema_valid (self, NULL, err);
    //  References or "††" literals: on the parameters as the worker gets them
    act_err_t why = { 0 };
    json_t *params = act_call_params (call, NULL, &why);
    if (!params) {
        act_err_set (err, why.code? why.code: ACT_E_INTERNAL, "(root): %s",
                     why.code? why.message: "out of memory");
        return false;
    }
    bool valid = act_schema_valid (self, params, err);
    json_decref (params);
    return valid;
}

bool
act_schema_valid_unknowns (act_schema_t *self, const act_sval_t *instance,
                           const act_sunknowns_t *unknowns, act_err_t *err)
{
    return s_validate (self, instance, unknowns, err);
}

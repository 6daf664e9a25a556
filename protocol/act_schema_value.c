/*  =========================================================================
    act_schema_value - the instances act_schema_valid reads, behind one
    small interface with two backends: a jansson value, and JSON text that
    act_scan has accepted (walked in place: nothing allocated, strings and
    keys decoded only when asked for and only when they hold an escape,
    numbers read as act_json_parse reads them). A text object may also be
    a list of members of a larger text: a call's parameters are its
    top-level members that are not meta-properties (act_call_t spans).
    Also the numbers' exact comparison, multipleOf and their text in
    messages, JSON Schema equality of trees (act_schema_equal), and the
    keyed hashes of values that uniqueItems buckets items by (consistent
    with act_schema_equal).

    The text is trusted to be valid JSON: the walks below do not check it.
    ========================================================================= */

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "act_schema_int.h"
#include "actd/act_json.h"

//  act_sval_kind's table (act_schema_int.h): a JSON value's first bytes,
//  and the mark of a reference not resolved yet
const unsigned char act_sval_kinds [256] = {
    ['{'] = ACT_ST_OBJECT, ['['] = ACT_ST_ARRAY, ['"'] = ACT_ST_STRING,
    ['t'] = ACT_ST_BOOLEAN, ['f'] = ACT_ST_BOOLEAN, ['n'] = ACT_ST_NULL,
    ['-'] = ACT_ST_NUMBER, ['0'] = ACT_ST_NUMBER, ['1'] = ACT_ST_NUMBER,
    ['2'] = ACT_ST_NUMBER, ['3'] = ACT_ST_NUMBER, ['4'] = ACT_ST_NUMBER,
    ['5'] = ACT_ST_NUMBER, ['6'] = ACT_ST_NUMBER, ['7'] = ACT_ST_NUMBER,
    ['8'] = ACT_ST_NUMBER, ['9'] = ACT_ST_NUMBER, ['?'] = ACT_ST_UNKNOWN
};

//  Past JSON white space from pos
static size_t
s_space (const char *text, size_t pos, size_t end)
{
    while (pos < end && (text [pos] == ' ' || text [pos] == '\t' || text [pos] == '\n'
                     ||  text [pos] == '\r'))
        pos++;
    return pos;
}

//  Past the string token at pos (its '"'); *escaped set when it holds a '\'
static size_t
s_string_end (const char *text, size_t pos, size_t end, bool *escaped)
{
    *escaped = false;
    for (pos++; pos < end; ) {
        const char *stop = text + pos;
        while (stop < text + end && *stop != '"' && *stop != '\\')
            stop++;
        pos = (size_t) (stop - text);
        if (pos >= end)
            break;
        if (text [pos] == '"')
            return pos + 1;
        *escaped = true;
        pos += 2;
    }
    return end;
}

//  Past the value at pos
static size_t
s_value_end (const char *text, size_t pos, size_t end)
{
    bool escaped;
    char c = text [pos];
    if (c == '"')
        return s_string_end (text, pos, end, &escaped);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (pos < end) {
            c = text [pos];
            if (c == '"') {
                pos = s_string_end (text, pos, end, &escaped);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else
            if ((c == '}' || c == ']') && --depth == 0)
                return pos + 1;
            pos++;
        }
        return end;
    }
    while (pos < end && text [pos] != ',' && text [pos] != ']' && text [pos] != '}'
       &&  text [pos] != ' ' && text [pos] != '\t' && text [pos] != '\n' && text [pos] != '\r')
        pos++;
    return pos;
}

//  The integer literal of size bytes at text, when it is one (no '.',
//  'e' or 'E') and fits int64
static bool
s_integer (const char *text, size_t size, json_int_t *value)
{
    bool negative = text [0] == '-';
    unsigned long long magnitude = 0;
    unsigned long long limit = negative? 9223372036854775808ULL: 9223372036854775807ULL;
    for (size_t pos = negative; pos < size; pos++) {
        unsigned digit = (unsigned) (text [pos] - '0');
        if (digit > 9 || (magnitude >= 922337203685477580ULL
                          && magnitude > (limit - digit) / 10))
            return false;       //  A fraction, an exponent, or too large
        magnitude = magnitude * 10 + digit;
    }
    *value = negative? (json_int_t) (0 - magnitude): (json_int_t) magnitude;
    return true;
}

bool
act_sval_integral (const act_sval_t *self)
{
    json_int_t integer;
    if (!self->json && s_integer (self->text, self->size, &integer))
        return true;            //  An int64 integer: no need to read it twice
    act_snum_t number;
    act_sval_number (self, &number);
    return number.integer || (isfinite (number.d) && number.d == floor (number.d));
}

void
act_sval_number (const act_sval_t *self, act_snum_t *number)
{
    if (self->json) {
        act_snum_of (self->json, number);
        return;
    }
    //  An integer unless it has a fraction or an exponent or does not fit
    //  int64 (SEMANTICS.md section 1): as act_json_parse reads it
    number->integer = s_integer (self->text, self->size, &number->i);
    if (number->integer)
        return;
    char local [64];
    char *copy = self->size < sizeof local? local: malloc (self->size + 1);
    if (!copy) {
        number->d = NAN;        //  Out of memory: no bound holds
        return;
    }
    memcpy (copy, self->text, self->size);
    copy [self->size] = 0;
    number->d = strtod (copy, NULL);
    if (copy != local)
        free (copy);
}

const char *
act_sval_string (const act_sval_t *self, act_sbuf_t *buffer, size_t *length)
{
    buffer->allocated = NULL;
    if (self->json) {
        *length = json_string_length (self->json);
        return json_string_value (self->json);
    }
    if (!memchr (self->text + 1, '\\', self->size - 2)) {
        *length = self->size - 2;
        return self->text + 1;
    }
    char *out = buffer->local;
    if (self->size - 1 > sizeof buffer->local)
        out = buffer->allocated = malloc (self->size - 1);
    if (!out)
        return NULL;
    *length = act_scan_decode (self->text, self->size, out);
    return out;
}

size_t
act_sval_string_bound (const act_sval_t *self)
{
    return self->json? json_string_length (self->json): self->size - 2;
}

//  The key token of the member whose text starts at pos, and its value:
//  *value set to the value's offset, *escaped when the key holds a '\'
static size_t
s_key_end (const char *text, size_t pos, size_t end, size_t *value, bool *escaped)
{
    size_t after = s_string_end (text, pos, end, escaped);
    if (after + 1 < end && text [after] == ':' && text [after + 1] > ' ')
        *value = after + 1;     //  The usual "key":value
    else
        *value = s_space (text, s_space (text, after, end) + 1, end);
    return after;
}

void
act_siter_start (act_siter_t *self, const act_sval_t *of)
{
    self->of = of;
    self->index = 0;
    self->iter = of->json && json_is_object (of->json)? json_object_iter ((json_t *) of->json)
                                                     : NULL;
    self->pos = of->json || of->members? 0: s_space (of->text, 1, of->size);
}

bool
act_siter_item (act_siter_t *self, act_sval_t *item)
{
    const act_sval_t *of = self->of;
    *item = (act_sval_t) { 0 };
    if (of->json) {
        if (self->index >= json_array_size (of->json))
            return false;
        item->json = json_array_get (of->json, self->index++);
        return true;
    }
    if (of->text [self->pos] == ']')
        return false;
    size_t end = s_value_end (of->text, self->pos, of->size);
    item->text = of->text + self->pos;
    item->size = end - self->pos;
    self->pos = s_space (of->text, end, of->size);
    if (of->text [self->pos] == ',')
        self->pos = s_space (of->text, self->pos + 1, of->size);
    self->index++;
    return true;
}

//  Set key from the key token of size bytes at token
static bool
s_key (act_skey_t *key, const char *token, size_t size, bool escaped)
{
    key->buffer.allocated = NULL;
    if (!escaped) {
        key->name = token + 1;
        key->length = key->full = size - 2;
        return true;
    }
    char *out = key->buffer.local;
    if (size - 1 > sizeof key->buffer.local)
        out = key->buffer.allocated = malloc (size - 1);
    if (!out)
        return false;
    key->full = act_scan_decode (token, size, out);
    key->name = out;
    key->length = strlen (out);     //  As a C string: the tree's keys are read so
    return true;
}

bool
act_siter_member (act_siter_t *self, act_sval_t *value, act_skey_t *key, bool *oom)
{
    const act_sval_t *of = self->of;
    *value = (act_sval_t) { 0 };
    *oom = false;
    if (of->json) {
        if (!self->iter)
            return false;
        key->name = json_object_iter_key (self->iter);
        key->length = strlen (key->name);
        key->full = json_object_iter_key_len (self->iter);
        key->buffer.allocated = NULL;
        value->json = json_object_iter_value (self->iter);
        self->iter = json_object_iter_next ((json_t *) of->json, self->iter);
        self->index++;
        return true;
    }
    const char *text = of->text;
    size_t at, end, start;
    bool escaped;
    if (of->members) {
        if (self->index >= of->count)
            return false;
        at = of->members [self->index].offset;
        end = at + of->members [self->index].size;
        //  The usual member, "key":value with no escape in the key, read
        //  here; any other through s_key_end and s_key
        const char *quote = text + at + 1;
        while (*quote != '"' && *quote != '\\')
            quote++;
        if (*quote == '"' && quote [1] == ':' && quote [2] > ' ') {
            key->name = text + at + 1;
            key->length = key->full = (size_t) (quote - key->name);
            key->buffer.allocated = NULL;
            value->text = quote + 2;
            value->size = (size_t) (text + end - value->text);
            self->index++;
            return true;
        }
        size_t after = s_key_end (text, at, end, &start, &escaped);
        value->size = end - start;
        *oom = !s_key (key, text + at, after - at, escaped);
    }
    else {
        if (text [self->pos] == '}')
            return false;
        at = self->pos;
        size_t after = s_key_end (text, at, of->size, &start, &escaped);
        end = s_value_end (text, start, of->size);
        value->size = end - start;
        *oom = !s_key (key, text + at, after - at, escaped);
        self->pos = s_space (text, end, of->size);
        if (text [self->pos] == ',')
            self->pos = s_space (text, self->pos + 1, of->size);
    }
    value->text = text + start;
    self->index++;
    return !*oom;
}

size_t
act_sval_count (const act_sval_t *self)
{
    if (self->json)
        return json_is_array (self->json)? json_array_size (self->json)
                                         : json_object_size (self->json);
    if (self->members)
        return self->count;
    act_siter_t iter;
    act_siter_start (&iter, self);
    act_sval_t item;
    act_skey_t key;
    bool oom;
    if (self->text [0] == '[')
        while (act_siter_item (&iter, &item));
    else
        while (act_siter_member (&iter, &item, &key, &oom))
            act_sbuf_release (&key.buffer);
    return iter.index;
}

//  True when the key token at text holds an escape and decodes to the
//  length bytes at name (apart: its buffer stays off the common path)
static __attribute__ ((noinline)) bool
s_key_is_decoded (const char *text, size_t end, const char *name, size_t length)
{
    bool escaped;
    size_t size = s_string_end (text, 0, end, &escaped);
    if (!escaped)
        return false;
    act_skey_t key;
    bool equal = s_key (&key, text, size, true)
              && key.full == length && !memcmp (key.name, name, length);
    act_sbuf_release (&key.buffer);
    return equal;
}

//  True when the key token at text (its '"') decodes to the length bytes
//  at name. Compared in place unless the key holds an escape.
static bool
s_key_is (const char *text, size_t end, const char *name, size_t length)
{
    if (text [1] != '\\' && (length == 0? text [1] != '"': text [1] != name [0]))
        return false;           //  The common case: another first byte
    if (length + 2 <= end && !memcmp (text + 1, name, length) && text [length + 1] == '"'
    &&  !memchr (name, '\\', length))
        return true;
    return s_key_is_decoded (text, end, name, length);
}

bool
act_sval_has (const act_sval_t *self, const char *name)
{
    if (self->json)
        return json_object_get (self->json, name) != NULL;
    size_t length = strlen (name);
    if (self->members) {
        for (size_t index = 0; index < self->count; index++) {
            const char *key = self->text + self->members [index].offset;
            if (key [1] != '\\' && key [1] != (length? name [0]: '"'))
                continue;       //  Another first byte: not the name (s_key_is)
            if (s_key_is (key, self->members [index].size, name, length))
                return true;
        }
        return false;
    }
    act_siter_t iter;
    act_siter_start (&iter, self);
    while (self->text [iter.pos] != '}') {
        size_t at = iter.pos, start;
        bool escaped;
        s_key_end (self->text, at, self->size, &start, &escaped);
        if (s_key_is (self->text + at, self->size - at, name, length))
            return true;
        iter.pos = s_space (self->text, s_value_end (self->text, start, self->size),
                            self->size);
        if (self->text [iter.pos] == ',')
            iter.pos = s_space (self->text, iter.pos + 1, self->size);
    }
    return false;
}

json_t *
act_sval_tree (const act_sval_t *self)
{
    if (self->json)
        return json_incref ((json_t *) self->json);
    act_err_t err = { 0 };
    if (!self->members)
        return act_json_parse (self->text, self->size, &err);
    size_t size = 2;
    for (size_t index = 0; index < self->count; index++)
        size += self->members [index].size + 1;
    char *text = malloc (size);
    if (!text)
        return NULL;
    size_t used = 0;
    text [used++] = '{';
    for (size_t index = 0; index < self->count; index++) {
        if (index)
            text [used++] = ',';
        memcpy (text + used, self->text + self->members [index].offset,
                self->members [index].size);
        used += self->members [index].size;
    }
    text [used++] = '}';
    json_t *tree = act_json_parse (text, used, &err);
    free (text);
    return tree;
}

void
act_snum_of (const json_t *number, act_snum_t *out)
{
    out->integer = json_is_integer (number);
    out->i = out->integer? json_integer_value (number): 0;
    out->d = out->integer? 0: json_real_value (number);
}

//  Compare an integer and a double exactly. Not through long double: it
//  is no wider than double under valgrind, which would call 2^53 + 1 and
//  2^53 equal. |real| < 2^63 truncates to an integer that fits.
static int
s_compare_mixed (json_int_t integer, double real)
{
    if (real >= 9223372036854775808.0)
        return -1;
    if (real < -9223372036854775808.0)
        return 1;
    double whole = trunc (real);
    json_int_t truncated = (json_int_t) whole;
    if (integer != truncated)
        return integer < truncated? -1: 1;
    return real > whole? -1: real < whole;
}

int
act_snum_compare (const act_snum_t *a, const act_snum_t *b)
{
    if (a->integer && b->integer)
        return a->i < b->i? -1: a->i > b->i;
    if (a->integer)
        return s_compare_mixed (a->i, b->d);
    if (b->integer)
        return -s_compare_mixed (b->i, a->d);
    return a->d < b->d? -1: a->d > b->d;
}

const char *
act_snum_text (const json_t *number, char *buffer, size_t size)
{
    if (json_is_integer (number))
        snprintf (buffer, size, "%" JSON_INTEGER_FORMAT, json_integer_value (number));
    else {
        //  The shortest of %.15g and %.17g that reads back the same: 0.1, not
        //  0.10000000000000001
        snprintf (buffer, size, "%.15g", json_real_value (number));
        if (strtod (buffer, NULL) != json_real_value (number))
            snprintf (buffer, size, "%.17g", json_real_value (number));
    }
    return buffer;
}

//  Integers divide exactly. Otherwise the quotient is computed in doubles
//  and must be an integer within rounding: each of the two numbers and the
//  division carry at most half an ulp of relative error, so 0.0075 /
//  0.0001 = 74.99999999999999 counts as 75 while 75.1 never does. A
//  quotient that overflows is no multiple.
bool
act_snum_multiple (const act_snum_t *number, const json_t *divisor)
{
    if (number->integer && json_is_integer (divisor))
        return number->i % json_integer_value (divisor) == 0;
    double value = number->integer? (double) number->i: number->d;
    double quotient = value / json_number_value (divisor);
    if (!isfinite (quotient))
        return false;
    double nearest = nearbyint (quotient);
    return fabs (quotient - nearest) <= 4 * DBL_EPSILON * fabs (quotient);
}

bool
act_schema_equal (const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    if (json_is_number (a) && json_is_number (b)) {
        act_snum_t x, y;
        act_snum_of (a, &x);
        act_snum_of (b, &y);
        return act_snum_compare (&x, &y) == 0;
    }
    if (json_typeof (a) != json_typeof (b))
        return false;
    if (json_is_string (a))
        return json_string_length (a) == json_string_length (b)
            && !memcmp (json_string_value (a), json_string_value (b), json_string_length (a));
    if (json_is_array (a)) {
        if (json_array_size (a) != json_array_size (b))
            return false;
        for (size_t index = 0; index < json_array_size (a); index++)
            if (!act_schema_equal (json_array_get (a, index), json_array_get (b, index)))
                return false;
        return true;
    }
    if (json_is_object (a)) {
        if (json_object_size (a) != json_object_size (b))
            return false;
        const char *key;
        json_t *value;
        json_object_foreach ((json_t *) a, key, value)
            if (!act_schema_equal (value, json_object_get (b, key)))
                return false;
        return true;
    }
    return true;                //  true, false, null: the same type is the same value
}

//  --------------------------------------------------------------------------
//  Hashes consistent with act_schema_equal, for uniqueItems

//  Deepest a value is hashed: what is deeper hashes as one constant
#define S_HASH_DEPTH    256

//  What each kind of value starts its hash with
enum { S_HASH_NULL = 1, S_HASH_TRUE, S_HASH_FALSE, S_HASH_NUMBER, S_HASH_REAL,
       S_HASH_STRING, S_HASH_ARRAY, S_HASH_OBJECT, S_HASH_MEMBER, S_HASH_DEEP };

//  SipHash-1-3 over 64-bit words (Aumasson and Bernstein): its state
typedef struct {
    uint64_t v0, v1, v2, v3;
} s_sip_t;

#define S_ROTL(x, bits) (((x) << (bits)) | ((x) >> (64 - (bits))))

//  One SipRound of self
static inline void
s_sip_round (s_sip_t *self)
{
    self->v0 += self->v1; self->v1 = S_ROTL (self->v1, 13); self->v1 ^= self->v0;
    self->v0 = S_ROTL (self->v0, 32);
    self->v2 += self->v3; self->v3 = S_ROTL (self->v3, 16); self->v3 ^= self->v2;
    self->v0 += self->v3; self->v3 = S_ROTL (self->v3, 21); self->v3 ^= self->v0;
    self->v2 += self->v1; self->v1 = S_ROTL (self->v1, 17); self->v1 ^= self->v2;
    self->v2 = S_ROTL (self->v2, 32);
}

//  Start self with key, then the word tag
static inline void
s_sip_start (s_sip_t *self, const uint64_t key [2], uint64_t tag)
{
    self->v0 = key [0] ^ 0x736f6d6570736575ULL;
    self->v1 = key [1] ^ 0x646f72616e646f6dULL;
    self->v2 = key [0] ^ 0x6c7967656e657261ULL;
    self->v3 = key [1] ^ 0x7465646279746573ULL;
    self->v3 ^= tag;
    s_sip_round (self);
    self->v0 ^= tag;
}

//  Add the word to self
static inline void
s_sip_word (s_sip_t *self, uint64_t word)
{
    self->v3 ^= word;
    s_sip_round (self);
    self->v0 ^= word;
}

//  Add size bytes: their count, then them in words (the last one padded
//  with zeros)
static void
s_sip_bytes (s_sip_t *self, const char *bytes, size_t size)
{
    s_sip_word (self, size);
    uint64_t word;
    for (; size >= 8; bytes += 8, size -= 8) {
        memcpy (&word, bytes, 8);
        s_sip_word (self, word);
    }
    if (size) {
        word = 0;
        memcpy (&word, bytes, size);
        s_sip_word (self, word);
    }
}

//  The hash of what self was given
static inline uint64_t
s_sip_end (s_sip_t *self)
{
    self->v2 ^= 0xff;
    s_sip_round (self);
    s_sip_round (self);
    s_sip_round (self);
    return self->v0 ^ self->v1 ^ self->v2 ^ self->v3;
}

//  The hash of value at depth: a number as an int64 when it is one
//  (1 and 1.0, 0 and -0.0 are equal), an object as the sum of its
//  members' hashes (their order is free)
static uint64_t
s_hash (const json_t *value, const uint64_t key [2], size_t depth, bool *plain)
{
    s_sip_t sip;
    if (depth == S_HASH_DEPTH) {
        s_sip_start (&sip, key, S_HASH_DEEP);
        return s_sip_end (&sip);
    }
    switch (json_typeof (value)) {
        case JSON_NULL:
        case JSON_TRUE:
        case JSON_FALSE:
            s_sip_start (&sip, key, json_is_null (value)? S_HASH_NULL
                                  : json_is_true (value)? S_HASH_TRUE: S_HASH_FALSE);
            break;
        case JSON_INTEGER:
            s_sip_start (&sip, key, S_HASH_NUMBER);
            s_sip_word (&sip, (uint64_t) json_integer_value (value));
            break;
        case JSON_REAL: {
            //  An integer in int64's range as that integer (act_snum_compare
            //  calls them equal); any other real by its bits (equal reals
            //  other than 0 and -0.0 have the same bits; never NaN in a tree)
            double real = json_real_value (value);
            if (real >= -9223372036854775808.0 && real < 9223372036854775808.0
            &&  real == trunc (real)) {
                s_sip_start (&sip, key, S_HASH_NUMBER);
                s_sip_word (&sip, (uint64_t) (json_int_t) real);
            }
            else {
                uint64_t bits;
                memcpy (&bits, &real, sizeof bits);
                s_sip_start (&sip, key, S_HASH_REAL);
                s_sip_word (&sip, bits);
            }
            break;
        }
        case JSON_STRING:
            s_sip_start (&sip, key, S_HASH_STRING);
            s_sip_bytes (&sip, json_string_value (value), json_string_length (value));
            break;
        case JSON_ARRAY:
            s_sip_start (&sip, key, S_HASH_ARRAY);
            s_sip_word (&sip, json_array_size (value));
            for (size_t index = 0; index < json_array_size (value); index++)
                s_sip_word (&sip, s_hash (json_array_get (value, index), key, depth + 1,
                                          plain));
            break;
        default: {
            uint64_t sum = 0;
            const char *name;
            size_t length;
            json_t *member;
            json_object_keylen_foreach ((json_t *) value, name, length, member) {
                if (memchr (name, 0, length))
                    *plain = false;
                s_sip_t one;
                s_sip_start (&one, key, S_HASH_MEMBER);
                s_sip_bytes (&one, name, length);
                s_sip_word (&one, s_hash (member, key, depth + 1, plain));
                sum += s_sip_end (&one);
            }
            s_sip_start (&sip, key, S_HASH_OBJECT);
            s_sip_word (&sip, json_object_size (value));
            s_sip_word (&sip, sum);
        }
    }
    return s_sip_end (&sip);
}

uint64_t
act_schema_hash (const json_t *value, const uint64_t key [2], bool *plain)
{
    if (!value) {
        s_sip_t sip;
        s_sip_start (&sip, key, 0);
        return s_sip_end (&sip);
    }
    return s_hash (value, key, 0, plain);
}

bool
act_sval_equal_text (const act_sval_t *a, const act_sval_t *b)
{
    unsigned kind = act_sval_kind (a);
    if (kind != act_sval_kind (b))
        return false;
    if (kind == ACT_ST_NUMBER) {
        act_snum_t x, y;
        act_sval_number (a, &x);
        act_sval_number (b, &y);
        return act_snum_compare (&x, &y) == 0;
    }
    if (kind != ACT_ST_STRING)
        return kind == ACT_ST_NULL || a->text [0] == b->text [0];
    act_sbuf_t one, other;
    size_t size, other_size;
    const char *text = act_sval_string (a, &one, &size);
    const char *other_text = act_sval_string (b, &other, &other_size);
    bool equal = text && other_text && size == other_size && !memcmp (text, other_text, size);
    act_sbuf_release (&one);
    act_sbuf_release (&other);
    return equal;
}

bool
act_sval_equal (const act_sval_t *instance, const json_t *value)
{
    if (instance->json)
        return act_schema_equal (value, instance->json);
    unsigned kind = act_sval_kind (instance);
    if (kind == ACT_ST_NUMBER) {
        if (!json_is_number (value))
            return false;
        act_snum_t number, other;
        act_sval_number (instance, &number);
        act_snum_of (value, &other);
        return act_snum_compare (&number, &other) == 0;
    }
    if (kind == ACT_ST_STRING) {
        if (!json_is_string (value))
            return false;
        act_sbuf_t buffer;
        size_t size;
        const char *text = act_sval_string (instance, &buffer, &size);
        bool equal = text && size == json_string_length (value)
                  && !memcmp (text, json_string_value (value), size);
        act_sbuf_release (&buffer);
        return equal;
    }
    if (kind == ACT_ST_BOOLEAN)
        return instance->text [0] == 't'? json_is_true (value): json_is_false (value);
    if (kind == ACT_ST_NULL)
        return json_is_null (value);
    if (!(kind == ACT_ST_OBJECT? json_is_object (value): json_is_array (value)))
        return false;
    json_t *tree = act_sval_tree (instance);
    bool equal = tree && act_schema_equal (value, tree);
    json_decref (tree);
    return equal;
}

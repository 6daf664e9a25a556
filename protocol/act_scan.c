/*  =========================================================================
    act_scan - one validating pass over a JSON text, without a DOM.

    What act_json_parse accepts (jansson 2.14's load.c and the project's
    own rules), which this pass must match byte for byte, beyond RFC 8259:
    - a NUL byte is refused wherever it is (jansson alone skips one right
      after a number or a literal; act_json_parse refuses it first);
    - \u0000 is refused, in keys and in values; a high surrogate escape
      must be followed at once by a low one, a low one never comes alone;
    - an integer (no '.', no exponent) outside 64 bits is read as a double
      (SEMANTICS.md section 1); a number that strtod rounds to infinity is
      refused (underflow to 0 is accepted);
    - duplicate keys are compared decoded ("a" and "\u0061" are the same).
    act_json_parse adds: the whole text is valid UTF-8, and no more than
    ACT_MAX_JSON_DEPTH containers nest (jansson's own limit of 2048 values
    is then never reached).
    ========================================================================= */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act_json.h"
#include "actd/act_scan.h"

//  Objects with more keys than this are checked for duplicates by sorting
//  their keys; smaller ones pair by pair, which is cheaper for the usual call
#define S_PAIRWISE_KEYS     8

//  A string token just scanned, or a key of an object still open
typedef struct {
    size_t offset;              //  Offset of its first byte after the quote
    size_t size;                //  Raw bytes between the quotes
    size_t length;              //  Bytes once decoded
    const char *bytes;          //  Its decoded bytes, while its object's keys
                                //  are compared (in the text or in scratch)
    bool escaped;               //  Holds a '\' escape
} s_string_t;

struct _act_scan_t {
    const unsigned char *text;  //  The text being scanned, not owned
    size_t size;                //  Its bytes
    size_t pos;                 //  Next byte to read
    act_err_t *err;             //  Where a refusal is reported
    json_type type;             //  Type of the top-level value
    int depth;                  //  Containers open around pos
    bool is_object [ACT_MAX_JSON_DEPTH];    //  Each open container is an object
    size_t first_key [ACT_MAX_JSON_DEPTH];  //  Index in keys of each open
                                            //  object's first key
    act_scan_member_t *members; //  Top-level members, nmembers of members_max
    size_t nmembers;            //  Members recorded
    size_t members_max;         //  Members allocated
    act_scan_string_t *daggers; //  Dagger strings, ndaggers of daggers_max
    size_t ndaggers;            //  Dagger strings recorded
    size_t daggers_max;         //  Dagger strings allocated
    s_string_t *keys;              //  Keys of every open object, a stack
    size_t nkeys;               //  Keys on the stack
    size_t keys_max;            //  Keys allocated
    char *scratch;              //  Decoded keys, to compare escaped ones
    size_t scratch_max;         //  Bytes allocated
    bool numbers_dumped;        //  Every number so far is written as
                                //  act_json_dump writes it
};

act_scan_t *
act_scan_new (void)
{
    //  The arrays come with the first scan that needs them, then stay
    return calloc (1, sizeof (act_scan_t));
}

void
act_scan_destroy (act_scan_t **self_p)
{
    if (self_p && *self_p) {
        act_scan_t *self = *self_p;
        free (self->members);
        free (self->daggers);
        free (self->keys);
        free (self->scratch);
        free (self);
        *self_p = NULL;
    }
}

//  Refuse the text at the current byte; returns -1
static int
s_fail (act_scan_t *self, const char *what)
{
    return act_err_set (self->err, ACT_E_BAD_JSON, "%s at byte %zu", what, self->pos);
}

//  Make *array (of *max elements of size bytes) hold need elements, at
//  least doubling it (16 at first); -1 (internal) when memory ran out
static int
s_room (act_scan_t *self, void **array, size_t need, size_t *max, size_t size)
{
    if (need <= *max)
        return 0;
    size_t more = *max? *max * 2: 16;
    more = more < need? need: more;
    void *bigger = realloc (*array, more * size);
    if (!bigger)
        return act_err_set (self->err, ACT_E_INTERNAL, "out of memory scanning JSON");
    *array = bigger;
    *max = more;
    return 0;
}

static void
s_space (act_scan_t *self)
{
    const unsigned char *text = self->text;
    size_t pos = self->pos;
    while (pos < self->size
       && (text [pos] == ' ' || text [pos] == '\n' || text [pos] == '\r' || text [pos] == '\t'))
        pos++;
    self->pos = pos;
}

//  Where in the 8 bytes at text a run of plain string bytes ends: at a
//  quote, a backslash, a control character or a byte of 0x80 and above.
//  Returns a mask with the high bit of each such byte set, 0 when there is
//  none. Bytes above the first such byte (in memory order) may be set
//  falsely (a borrow), never bytes below it: the lowest set bit is exact.
static inline uint64_t
s_special (const unsigned char *text)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t word;
    memcpy (&word, text, 8);
    uint64_t quote = word ^ (ones * '"'), backslash = word ^ (ones * '\\');
    uint64_t found = ((quote - ones) & ~quote)
                   | ((backslash - ones) & ~backslash)
                   | (word - ones * 0x20)
                   | word;
    return found & highs;
}

//  A byte that goes into a string as it is
static inline bool
s_plain (unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

//  Bytes of the well-formed UTF-8 sequence at pos (2 to 4), or 0: by the
//  rules act_json_parse checks the whole text with
static size_t
s_utf8 (const unsigned char *text, size_t pos, size_t size)
{
    size_t bytes = text [pos] >= 0xF0? 4: text [pos] >= 0xE0? 3: 2;
    return pos + bytes <= size && act_utf8_valid ((const char *) text + pos, bytes, NULL)
         ? bytes: 0;
}

//  The value of 4 hex digits at text, or -1
static long
s_hex4 (const unsigned char *text)
{
    long value = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = text [i];
        int digit = c >= '0' && c <= '9'? c - '0': c >= 'a' && c <= 'f'? c - 'a' + 10
                  : c >= 'A' && c <= 'F'? c - 'A' + 10: -1;
        if (digit < 0)
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

//  What the one-letter escape \c stands for, or 0 when there is none
static inline char
s_simple_escape (unsigned char c)
{
    switch (c) {
        case '"': case '\\': case '/': return (char) c;
        case 'b': return '\b';
        case 'f': return '\f';
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        default:  return 0;
    }
}

//  The escape at pos (its '\'): advances pos past it and returns how many
//  bytes shorter its decoded form is, or -1 (refused)
static long
s_escape (act_scan_t *self)
{
    const unsigned char *text = self->text;
    size_t pos = self->pos;
    if (pos + 1 >= self->size)
        return s_fail (self, "premature end of input");
    if (s_simple_escape (text [pos + 1])) {
        self->pos += 2;
        return 1;
    }
    if (text [pos + 1] != 'u')
        return s_fail (self, "invalid escape");
    long value = pos + 6 <= self->size? s_hex4 (text + pos + 2): -1;
    if (value < 0)
        return s_fail (self, "invalid escape");
    if (value == 0)
        return s_fail (self, "\\u0000 is not allowed");
    if (value >= 0xDC00 && value <= 0xDFFF)
        return s_fail (self, "invalid Unicode escape (a low surrogate alone)");
    if (value >= 0xD800 && value <= 0xDBFF) {
        long low = pos + 12 <= self->size && text [pos + 6] == '\\' && text [pos + 7] == 'u'
                 ? s_hex4 (text + pos + 8): -1;
        if (low < 0xDC00 || low > 0xDFFF)
            return s_fail (self, "invalid Unicode escape (a high surrogate alone)");
        self->pos += 12;
        return 12 - 4;
    }
    self->pos += 6;
    return value < 0x80? 6 - 1: value < 0x800? 6 - 2: 6 - 3;
}

//  The string token at pos (its opening quote): on success pos is past its
//  closing quote and *string says what it holds
static int
s_string (act_scan_t *self, s_string_t *string)
{
    const unsigned char *text = self->text;
    size_t size = self->size;
    *string = (s_string_t) { .offset = self->pos + 1 };
    size_t shorter = 0;             //  Bytes saved by decoding escapes
    size_t pos = self->pos + 1;
    while (true) {
        //  Long runs of plain text 8 bytes at a time, then byte by byte
        for (uint64_t special; pos + 8 <= size; pos += 8)
            if ((special = s_special (text + pos))) {
#if defined (__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                pos += (size_t) __builtin_ctzll (special) / 8;  //  At the first
#endif
                break;
            }
        while (pos < size && s_plain (text [pos]))
            pos++;
        self->pos = pos;
        if (pos >= size)
            return s_fail (self, "premature end of input");
        if (text [pos] == '"')
            break;
        if (text [pos] < 0x20)
            return s_fail (self, text [pos] == '\n'? "unexpected newline"
                                                    : "control character");
        if (text [pos] == '\\') {
            long saved = s_escape (self);
            if (saved < 0)
                return -1;
            shorter += (size_t) saved;
            string->escaped = true;
            pos = self->pos;
        }
        else {
            size_t bytes = s_utf8 (text, pos, size);
            if (!bytes)
                return act_err_set (self->err, ACT_E_BAD_JSON,
                                    "invalid UTF-8 at byte %zu", pos);
            pos += bytes;
        }
    }
    string->size = pos - string->offset;
    string->length = string->size - shorter;
    self->pos = pos + 1;
    return 0;
}

//  True when the string's decoded text starts with U+2020
static bool
s_dagger (const unsigned char *text, const s_string_t *string)
{
    const unsigned char *start = text + string->offset;
    return (string->size >= 3 && memcmp (start, "\xE2\x80\xA0", 3) == 0)
        || (string->size >= 6 && memcmp (start, "\\u2020", 6) == 0);
}

//  Refuse a real that jansson's strtod would turn into infinity. The first
//  nonzero digit gives the magnitude m (10^m <= |value| < 10^(m+1)):
//  below 308 it fits, above it does not, at 308 strtod decides (on a copy:
//  the text is not terminated).
static int
s_check_real (act_scan_t *self, size_t start, size_t digits, size_t fraction,
              size_t fraction_end, long long exponent)
{
    const unsigned char *text = self->text;
    long long magnitude = (long long) digits - 1 + exponent;
    if (text [start + (text [start] == '-')] == '0') {
        size_t first = fraction;
        while (first < fraction_end && text [first] == '0')
            first++;
        if (first >= fraction_end)
            return 0;           //  Zero, whatever the exponent
        magnitude = exponent - (long long) (first - fraction + 1);
    }
    if (magnitude < 308)
        return 0;
    if (magnitude > 308)
        return s_fail (self, "real number overflow");
    size_t size = self->pos - start;
    char local [128];
    char *copy = size < sizeof local? local: malloc (size + 1);
    if (!copy)
        return act_err_set (self->err, ACT_E_INTERNAL, "out of memory scanning JSON");
    memcpy (copy, text + start, size);
    copy [size] = 0;
    errno = 0;
    double value = strtod (copy, NULL);
    bool overflow = (value == HUGE_VAL || value == -HUGE_VAL) && errno == ERANGE;
    if (copy != local)
        free (copy);
    return overflow? s_fail (self, "real number overflow"): 0;
}

//  The number at pos, as jansson reads it: sets *real for a real
static int
s_number (act_scan_t *self, bool *real)
{
    const unsigned char *text = self->text;
    size_t size = self->size, start = self->pos, pos = start;
    bool negative = text [pos] == '-';
    pos += negative;
    size_t integer = pos;
    if (pos >= size || text [pos] < '0' || text [pos] > '9')
        return s_fail (self, "invalid token");
    if (text [pos] == '0') {
        pos++;
        if (pos < size && text [pos] >= '0' && text [pos] <= '9')
            return s_fail (self, "invalid token (a leading zero)");
    }
    else
        while (pos < size && text [pos] >= '0' && text [pos] <= '9')
            pos++;
    size_t digits = pos - integer, fraction = pos, fraction_end = pos;
    long long exponent = 0;
    *real = false;
    if (pos < size && text [pos] == '.') {
        fraction = ++pos;
        while (pos < size && text [pos] >= '0' && text [pos] <= '9')
            pos++;
        fraction_end = pos;
        if (fraction_end == fraction)
            return s_fail (self, "invalid token (no digit after '.')");
        *real = true;
    }
    if (pos < size && (text [pos] == 'e' || text [pos] == 'E')) {
        pos++;
        bool below = pos < size && text [pos] == '-';
        pos += pos < size && (text [pos] == '-' || text [pos] == '+');
        size_t first = pos;
        for (; pos < size && text [pos] >= '0' && text [pos] <= '9'; pos++)
            if (exponent < 100000000000000000LL)    //  Past that, only "huge" counts
                exponent = exponent * 10 + (text [pos] - '0');
        if (pos == first)
            return s_fail (self, "invalid token (no digit in the exponent)");
        exponent = below? -exponent: exponent;
        *real = true;
    }
    self->pos = pos;
    if (*real)
        return s_check_real (self, start, digits, fraction, fraction_end, exponent);
    //  strtoll's range, without strtoll: the text has no leading zeros. An
    //  integer beyond it is read as a double (SEMANTICS.md section 1, as
    //  act_json_parse does), refused only past the largest double
    const char *limit = negative? "9223372036854775808": "9223372036854775807";
    if (digits > 19 || (digits == 19 && memcmp (text + integer, limit, 19) > 0)) {
        *real = true;
        return s_check_real (self, start, digits, fraction, fraction_end, 0);
    }
    return 0;
}

//  true, false or null at pos: jansson reads every letter that follows
static int
s_literal (act_scan_t *self, json_type *type)
{
    const unsigned char *text = self->text;
    size_t start = self->pos, pos = start;
    while (pos < self->size && ((text [pos] | 0x20) >= 'a' && (text [pos] | 0x20) <= 'z'))
        pos++;
    static const struct {
        char word [6];          //  As written
        size_t size;            //  Its bytes
        json_type type;         //  What it is
    } literals [] = { { "true", 4, JSON_TRUE }, { "false", 5, JSON_FALSE },
                      { "null", 4, JSON_NULL } };
    for (size_t i = 0; i < 3; i++)
        if (pos - start == literals [i].size
        &&  memcmp (text + start, literals [i].word, literals [i].size) == 0) {
            *type = literals [i].type;
            self->pos = pos;
            return 0;
        }
    return s_fail (self, "invalid token");
}

//  Shorter first, then by bytes: equal keys compare equal
static int
s_key_order (const void *a, const void *b)
{
    const s_string_t *left = a, *right = b;
    if (left->length != right->length)
        return left->length < right->length? -1: 1;
    return memcmp (left->bytes, right->bytes, left->length);
}

//  Refuse duplicates among keys [first, last), compared decoded: pair by
//  pair in small objects; large ones are sorted first, so that equal keys
//  are neighbours (O(k log k), and no hash for a client to collide)
static int
s_unique (act_scan_t *self, size_t first, size_t last)
{
    s_string_t *keys = self->keys;
    size_t need = 0, used = 0;
    for (size_t i = first; i < last; i++)
        need += keys [i].escaped? keys [i].size + 1: 0;
    if (s_room (self, (void **) &self->scratch, need, &self->scratch_max, 1))
        return -1;
    for (size_t i = first; i < last; i++) {
        const char *raw = (const char *) self->text + keys [i].offset;
        keys [i].bytes = raw;
        if (keys [i].escaped) {
            keys [i].bytes = self->scratch + used;
            act_scan_decode (raw - 1, keys [i].size + 2, self->scratch + used);
            used += keys [i].size + 1;
        }
    }
    bool sorted = last - first > S_PAIRWISE_KEYS;
    if (sorted)             //  The keys are popped next: their order is free
        qsort (keys + first, last - first, sizeof *keys, s_key_order);
    for (size_t i = first; i < last; i++)
        for (size_t j = i + 1; j < last && (!sorted || j == i + 1); j++)
            if (s_key_order (&keys [i], &keys [j]) == 0) {
                self->pos = keys [j].offset - 1;
                return s_fail (self, "duplicate object key");
            }
    return 0;
}

//  The value just ended at end: a top-level member's value ends there
static void
s_value_end (act_scan_t *self, size_t end)
{
    if (self->depth == 1 && self->is_object [0]) {
        act_scan_member_t *member = &self->members [self->nmembers - 1];
        member->value_size = end - member->value;
    }
}

//  The key at pos, its ':' and the white space after it
static int
s_key (act_scan_t *self)
{
    if (self->pos >= self->size || self->text [self->pos] != '"')
        return s_fail (self, "string or '}' expected");
    s_string_t string;
    if (s_string (self, &string)
    ||  s_room (self, (void **) &self->keys, self->nkeys + 1, &self->keys_max,
                sizeof *self->keys))
        return -1;
    self->keys [self->nkeys++] = string;
    bool member = self->depth == 1;
    if (member) {
        if (s_room (self, (void **) &self->members, self->nmembers + 1, &self->members_max,
                    sizeof *self->members))
            return -1;
        self->members [self->nmembers++] = (act_scan_member_t) {
            string.offset - 1, string.size + 2, 0, 0, string.escaped
        };
    }
    s_space (self);
    if (self->pos >= self->size || self->text [self->pos] != ':')
        return s_fail (self, "':' expected");
    self->pos++;
    s_space (self);
    if (member)
        self->members [self->nmembers - 1].value = self->pos;
    return 0;
}

//  A string value: recorded when it starts with the dagger
static int
s_string_value (act_scan_t *self)
{
    s_string_t string;
    if (s_string (self, &string))
        return -1;
    if (!s_dagger (self->text, &string))
        return 0;
    if (s_room (self, (void **) &self->daggers, self->ndaggers + 1, &self->daggers_max,
                sizeof *self->daggers))
        return -1;
    bool in_object = self->depth > 0 && self->is_object [0];
    self->daggers [self->ndaggers++] = (act_scan_string_t) {
        string.offset - 1, string.size + 2, self->depth,
        in_object? (int) self->nmembers - 1: -1, string.escaped
    };
    return 0;
}

//  The scalar at pos; sets *type
static int
s_scalar (act_scan_t *self, json_type *type)
{
    unsigned char c = self->text [self->pos];
    int rc;
    if (c == '"') {
        *type = JSON_STRING;
        if (s_string_value (self))
            return -1;
        s_value_end (self, self->pos);
        return 0;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        bool real = false;
        size_t start = self->pos;
        rc = s_number (self, &real);
        *type = real? JSON_REAL: JSON_INTEGER;
        //  Only a real or a negative number may be written otherwise
        //  ("1E2", "0.10", "-0"): those are compared with their dump
        size_t length;
        if (rc == 0 && self->numbers_dumped && (real || c == '-'))
            self->numbers_dumped = act_json_number_dumped ((const char *) self->text + start,
                                                           self->pos - start, &length)
                                && length == self->pos - start;
    }
    else
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
        rc = s_literal (self, type);
    else
        return s_fail (self, c >= 0x80 && !s_utf8 (self->text, self->pos, self->size)
                             ? "invalid UTF-8": "invalid token");
    if (rc == 0)
        s_value_end (self, self->pos);
    return rc;
}

//  Open the container at pos; *empty when it closes at once
static int
s_open (act_scan_t *self, bool *empty)
{
    bool object = self->text [self->pos] == '{';
    if (self->depth == ACT_MAX_JSON_DEPTH)
        return s_fail (self, "JSON nested too deep");
    self->is_object [self->depth] = object;
    self->first_key [self->depth] = self->nkeys;
    self->depth++;
    self->pos++;
    s_space (self);
    *empty = self->pos < self->size && self->text [self->pos] == (object? '}': ']');
    if (object && !*empty)
        return s_key (self);
    return 0;
}

//  Close the innermost container at pos (its closing bracket)
static int
s_close (act_scan_t *self)
{
    self->pos++;
    int depth = self->depth - 1;
    if (self->is_object [depth]) {
        if (self->nkeys - self->first_key [depth] > 1
        &&  s_unique (self, self->first_key [depth], self->nkeys))
            return -1;
        self->nkeys = self->first_key [depth];
    }
    self->depth = depth;
    s_value_end (self, self->pos);
    return 0;
}

//  After a value: a ',' and the next value's start (a key first in an
//  object), or the end of containers. Sets *more when a value follows.
static int
s_after (act_scan_t *self, bool *more)
{
    *more = false;
    while (self->depth > 0) {
        s_space (self);
        if (self->pos >= self->size)
            return s_fail (self, "premature end of input");
        bool object = self->is_object [self->depth - 1];
        unsigned char c = self->text [self->pos];
        if (c == ',') {
            self->pos++;
            s_space (self);
            *more = true;
            return object? s_key (self): 0;
        }
        if (c != (object? '}': ']'))
            return s_fail (self, object? "'}' expected": "']' expected");
        if (s_close (self))
            return -1;
    }
    return 0;
}

//  The scan proper; act_scan clears the records when it refuses
static int
s_scan (act_scan_t *self)
{
    s_space (self);
    bool more = true;
    while (more) {
        //  A value at pos, white space skipped
        if (self->pos >= self->size)
            return s_fail (self, "premature end of input");
        unsigned char c = self->text [self->pos];
        bool top = self->depth == 0;
        json_type type = c == '{'? JSON_OBJECT: JSON_ARRAY;
        if (c == '{' || c == '[') {
            bool empty = false;
            if (s_open (self, &empty) || (empty && s_close (self)))
                return -1;
            self->type = top? type: self->type;
            if (!empty)
                continue;       //  Its first value (after its key) is next
        }
        else {
            if (s_scalar (self, &type))
                return -1;
            self->type = top? type: self->type;
        }
        if (s_after (self, &more))
            return -1;
    }
    s_space (self);
    if (self->pos < self->size)
        return s_fail (self, "end of file expected");
    return 0;
}

int
act_scan (act_scan_t *self, const char *text, size_t size, act_err_t *err)
{
    self->text = (const unsigned char *) text;
    self->size = size;
    self->pos = 0;
    self->err = err;
    self->type = JSON_NULL;
    self->depth = 0;
    self->nmembers = self->ndaggers = self->nkeys = 0;
    self->numbers_dumped = true;
    int rc = s_scan (self);
    self->err = NULL;           //  Not the caller's to keep
    if (rc)
        self->nmembers = self->ndaggers = 0;
    return rc;
}

json_type
act_scan_type (act_scan_t *self)
{
    return self->type;
}

bool
act_scan_numbers_dumped (act_scan_t *self)
{
    return self->numbers_dumped;
}

const act_scan_member_t *
act_scan_members (act_scan_t *self, size_t *count)
{
    *count = self->nmembers;
    return self->members;
}

const act_scan_member_t *
act_scan_find (act_scan_t *self, const char *text, const char *key)
{
    size_t length = strlen (key);
    for (size_t i = 0; i < self->nmembers; i++) {
        const act_scan_member_t *member = &self->members [i];
        const char *decoded = text + member->key + 1;
        size_t decoded_size = member->key_size - 2;
        if (member->key_escaped) {
            if (s_room (self, (void **) &self->scratch, member->key_size,
                        &self->scratch_max, 1))
                return NULL;
            decoded_size = act_scan_decode (text + member->key, member->key_size, self->scratch);
            decoded = self->scratch;
        }
        if (decoded_size == length && memcmp (decoded, key, length) == 0)
            return member;
    }
    return NULL;
}

const act_scan_string_t *
act_scan_daggers (act_scan_t *self, size_t *count)
{
    *count = self->ndaggers;
    return self->daggers;
}

//  Write code point value as UTF-8 at out; returns its bytes (1 to 4)
static size_t
s_encode (long value, char *out)
{
    unsigned char *bytes = (unsigned char *) out;
    size_t size = value < 0x80? 1: value < 0x800? 2: value < 0x10000? 3: 4;
    static const unsigned char lead [5] = { 0, 0, 0xC0, 0xE0, 0xF0 };
    for (size_t i = size - 1; i > 0; i--, value >>= 6)
        bytes [i] = (unsigned char) (0x80 | (value & 0x3F));
    bytes [0] = (unsigned char) (lead [size] | value);
    return size;
}

size_t
act_scan_decode (const char *token, size_t size, char *out)
{
    if (size < 2)
        return 0;
    //  Every step below writes no more bytes than it reads, so the text
    //  between the quotes (size - 2 bytes) and a NUL fit in size - 1
    const unsigned char *in = (const unsigned char *) token + 1;
    size_t left = size - 2, i = 0, length = 0;
    while (i < left) {
        long value = in [i] == '\\' && i + 6 <= left && in [i + 1] == 'u'
                   ? s_hex4 (in + i + 2): -1;
        if (value >= 0) {
            i += 6;
            long low = value >= 0xD800 && value <= 0xDBFF && i + 6 <= left
                    && in [i] == '\\' && in [i + 1] == 'u'? s_hex4 (in + i + 2): -1;
            if (low >= 0xDC00 && low <= 0xDFFF) {
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00);
                i += 6;
            }
            length += s_encode (value, out + length);
        }
        else
        if (in [i] == '\\' && i + 1 < left && s_simple_escape (in [i + 1])) {
            out [length++] = s_simple_escape (in [i + 1]);
            i += 2;
        }
        else
            out [length++] = (char) in [i++];
    }
    out [length] = 0;
    return length;
}

char *
act_scan_splice (const char *text, size_t size, const act_scan_edit_t *edits,
                 size_t count, size_t *result_size)
{
    size_t total = size, done = 0;
    for (size_t i = 0; i < count; i++) {
        const act_scan_edit_t *edit = &edits [i];
        if (edit->offset < done || edit->offset > size || edit->size > size - edit->offset
        ||  (!edit->text && edit->text_size)
        ||  edit->text_size > SIZE_MAX - 1 - (total - edit->size))
            return NULL;
        total = total - edit->size + edit->text_size;
        done = edit->offset + edit->size;
    }
    char *result = malloc (total + 1);
    if (!result)
        return NULL;
    char *out = result;
    done = 0;
    for (size_t i = 0; i <= count; i++) {
        //  The bytes kept before edit i (before the end, after the last)
        size_t next = i < count? edits [i].offset: size;
        if (next > done)
            memcpy (out, text + done, next - done);
        out += next - done;
        if (i == count)
            break;
        if (edits [i].text_size)
            memcpy (out, edits [i].text, edits [i].text_size);
        out += edits [i].text_size;
        done = edits [i].offset + edits [i].size;
    }
    result [total] = 0;
    if (result_size)
        *result_size = total;
    return result;
}

/*  =========================================================================
    act_json - JSON in and out of frames, with limits, and timestamps.
    ========================================================================= */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "actd/act_wire.h"
#include "actd/act_json.h"
#include "actd/act_dtoa.h"

//  Bytes of a 64-bit word: some byte is zero, some byte is below n (<= 128)
#define S_ONES              0x0101010101010101ULL
#define S_HAS_ZERO(w)       (((w) - S_ONES) & ~(w) & (S_ONES * 0x80))
#define S_HAS_LESS(w, n)    (((w) - S_ONES * (n)) & ~(w) & (S_ONES * 0x80))

int
act_json_depth (const json_t *value, int limit)
{
    if (!json_is_object (value) && !json_is_array (value))
        return 0;
    if (limit <= 0)
        return 1;               //  Deep enough: the caller refuses it
    int deepest = 0;
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach ((json_t *) value, key, member) {
            int depth = act_json_depth (member, limit - 1);
            if (depth > deepest)
                deepest = depth;
            if (deepest > limit)
                break;
        }
    }
    else {
        size_t index;
        json_t *member;
        json_array_foreach (value, index, member) {
            int depth = act_json_depth (member, limit - 1);
            if (depth > deepest)
                deepest = depth;
            if (deepest > limit)
                break;
        }
    }
    return deepest + 1;
}

//  Rewrite the integer literal of length bytes at literal, which does not
//  fit int64, as the same double in at most length bytes ("DIGITSeEXP",
//  then spaces). False when it does not fit or is beyond any double.
static bool
s_integer_as_real (char *literal, size_t length)
{
    char *copy = strndup (literal, length);
    errno = 0;
    double value = strtod (copy, NULL);
    bool finite = errno != ERANGE;
    free (copy);
    if (!finite)
        return false;           //  jansson says why, as for 1e400
    //  act_dtoa writes an integer this large as "-D.DDDe+X": keep its
    //  digits, move the point into the exponent
    char text [ACT_DTOA_SIZE];
    act_dtoa (value, text);
    char *exponent = strchr (text, 'e');
    if (!exponent)
        return false;
    char *point = strchr (text, '.');
    long fraction = point? (long) (exponent - point - 1): 0;
    char digits [ACT_DTOA_SIZE];
    int count = 0;
    for (char *c = text; c < exponent; c++)
        if (*c != '.')
            digits [count++] = *c;
    char real [2 * ACT_DTOA_SIZE];
    int written = snprintf (real, sizeof real, "%.*se%ld", count, digits,
                            strtol (exponent + 1, NULL, 10) - fraction);
    if (written < 0 || (size_t) written > length)
        return false;
    memcpy (literal, real, (size_t) written);
    memset (literal + written, ' ', length - (size_t) written);
    return true;
}

//  The number at text [*at], if it is an integer literal outside int64:
//  its length, and *at moved past it either way (0 when none is there)
static size_t
s_scan_number (const char *text, size_t size, size_t *at)
{
    size_t start = *at, i = start;
    if (text [i] == '-')
        i++;
    size_t first = i;
    while (i < size && text [i] >= '0' && text [i] <= '9')
        i++;
    size_t digits = i - first;
    size_t end = i;
    bool real = i < size && (text [i] == '.' || text [i] == 'e' || text [i] == 'E');
    while (i < size && text [i] && strchr (".eE+-0123456789", text [i]))
        i++;
    *at = i > start? i: start + 1;
    if (real || digits == 0 || (digits > 1 && text [first] == '0'))
        return 0;               //  A real, or not JSON: jansson judges it
    const char *limit = text [start] == '-'? "9223372036854775808": "9223372036854775807";
    bool beyond = digits > 19 || (digits == 19 && memcmp (text + first, limit, 19) > 0);
    return beyond? end - start: 0;
}

//  A copy of data in which every integer literal outside int64 is written
//  as the same double, padded to its length so that the line, column and
//  byte of any later error stay right; NULL when there is none to rewrite
static char *
s_widen_integers (const char *data, size_t size)
{
    char *copy = NULL;
    size_t at = 0;
    while (at < size) {
        char c = data [at];
        if (c == '"') {
            for (at++; at < size && data [at] != '"'; at++)
                if (data [at] == '\\')
                    at++;
            at++;
        }
        else
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t start = at;
            size_t length = s_scan_number (data, size, &at);
            if (length) {
                if (!copy) {
                    copy = malloc (size);
                    memcpy (copy, data, size);
                }
                s_integer_as_real (copy + start, length);
            }
        }
        else
            at++;
    }
    return copy;
}

//  jansson's parse with actd's flags and limits
static json_t *
s_load (const char *data, size_t size, json_error_t *error)
{
    return json_loadb (data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, error);
}

static json_t *s_parse (const char *data, size_t size, int depth, act_err_t *err);

json_t *
act_json_parse (const char *data, size_t size, act_err_t *err)
{
    return s_parse (data, size, ACT_MAX_JSON_DEPTH, err);
}

json_t *
act_json_parse_stored (const char *data, size_t size, act_err_t *err)
{
    return s_parse (data, size, ACT_MAX_STORED_DEPTH, err);
}

json_t *
act_json_parse_reply (const char *data, size_t size, act_err_t *err)
{
    return s_parse (data, size, ACT_MAX_REPLY_DEPTH, err);
}

//  act_json_parse, nesting up to depth
static json_t *
s_parse (const char *data, size_t size, int depth, act_err_t *err)
{
    //  jansson checks UTF-8 itself, but a message naming the first bad byte
    //  is worth the extra pass, and it refuses what jansson would accept
    size_t offset;
    if (!act_utf8_valid (data, size, &offset)) {
        act_err_set (err, ACT_E_BAD_JSON, "invalid UTF-8 at byte %zu", offset);
        return NULL;
    }
    //  A NUL byte is never JSON (nor white space). jansson 2.14 skips one
    //  right after a number or a literal ("1\0" parses), which would make
    //  the text's meaning depend on a quirk: refused here, wherever it is
    const char *nul = memchr (data, 0, size);
    if (nul) {
        act_err_set (err, ACT_E_BAD_JSON, "a NUL byte at byte %zu", (size_t) (nul - data));
        return NULL;
    }
    json_error_t error;
    json_t *value = s_load (data, size, &error);
    if (!value && json_error_code (&error) == json_error_numeric_overflow) {
        //  "too big integer": SEMANTICS 1 makes it a double. Rare, so it
        //  costs one more parse of a copy, whatever the number of them.
        char *widened = s_widen_integers (data, size);
        if (widened)
            value = s_load (widened, size, &error);
        free (widened);
    }
    if (!value) {
        //  jansson's own words would name its flag (JSON_ALLOW_NUL), which
        //  means nothing to a peer: the scanner's words instead
        bool nul = json_error_code (&error) == json_error_null_character;
        act_err_set (err, ACT_E_BAD_JSON, "%s at line %d, column %d (byte %d)",
                     nul? "\\u0000 is not allowed": error.text, error.line, error.column,
                     error.position);
        return NULL;
    }
    if (act_json_depth (value, depth) > depth) {
        json_decref (value);
        act_err_set (err, ACT_E_BAD_JSON, "JSON nested deeper than %d levels", depth);
        return NULL;
    }
    return value;
}

//  A text being written (grows by doubling), and its layout
typedef struct {
    char *data;                 //  The bytes so far, not terminated
    size_t used;                //  Bytes written
    size_t size;                //  Bytes allocated
    int indent;                 //  Spaces per level; 0: all on one line
    bool compact;               //  No space after ',' and ':' on one line
    size_t max;                 //  Bytes it may reach; SIZE_MAX: any
    bool over;                  //  It would have gone past max: nothing
                                //  more is written
} s_text_t;

static void
s_text_add (s_text_t *self, const char *bytes, size_t length)
{
    if (self->over || length > self->max - self->used) {
        self->over = true;
        return;
    }
    if (self->used + length + 1 > self->size) {
        while (self->used + length + 1 > self->size)
            self->size *= 2;
        self->data = realloc (self->data, self->size);
    }
    memcpy (self->data + self->used, bytes, length);
    self->used += length;
}

//  Between two items of a container, or inside its brackets, as jansson
//  lays it out: a new line indented to depth, else a space if spaced
static void
s_text_break (s_text_t *self, int depth, bool spaced)
{
    if (self->indent > 0) {
        s_text_add (self, "\n", 1);
        for (int spaces = depth * self->indent; spaces > 0; spaces -= 32)
            s_text_add (self, "                                ", spaces < 32? (size_t) spaces: 32);
    }
    else
    if (spaced && !self->compact)
        s_text_add (self, " ", 1);
}

//  A string as jansson writes it: '"', '\\' and control characters
//  escaped (\b \f \n \r \t, else \u00XX in upper case); the rest as it is
static void
s_text_string (s_text_t *self, const char *string, size_t length)
{
    if (self->over || length > self->max - self->used)
        self->over = true;              //  Not worth escaping
    if (self->over)
        return;
    s_text_add (self, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < length; i++) {
        //  Eight bytes at a time while none needs an escape (a result of
        //  hundreds of MB is quoted in a fraction of a second)
        uint64_t word;
        while (length - i >= 8 && (memcpy (&word, string + i, 8), !(S_HAS_LESS (word, 0x20)
               | S_HAS_ZERO (word ^ (S_ONES * '"')) | S_HAS_ZERO (word ^ (S_ONES * '\\')))))
            i += 8;
        if (i == length)
            break;
        unsigned char c = (unsigned char) string [i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        s_text_add (self, string + start, i - start);
        char escape [8];
        const char *simple = c == '"'? "\\\"": c == '\\'? "\\\\": c == '\b'? "\\b"
                           : c == '\f'? "\\f": c == '\n'? "\\n": c == '\r'? "\\r"
                           : c == '\t'? "\\t": NULL;
        if (!simple) {
            snprintf (escape, sizeof escape, "\\u%04X", c);
            simple = escape;
        }
        s_text_add (self, simple, strlen (simple));
        start = i + 1;
    }
    s_text_add (self, string + start, length - start);
    s_text_add (self, "\"", 1);
}

static bool s_text_value (s_text_t *self, const json_t *value, int depth);

//  An object or an array, laid out as jansson does
static bool
s_text_container (s_text_t *self, const json_t *value, int depth)
{
    bool object = json_is_object (value);
    s_text_add (self, object? "{": "[", 1);
    void *iter = object? json_object_iter ((json_t *) value): NULL;
    size_t count = object? json_object_size (value): json_array_size (value);
    if (count)
        s_text_break (self, depth + 1, false);
    for (size_t i = 0; i < count; i++) {
        const json_t *member = json_array_get (value, i);
        if (object) {
            s_text_string (self, json_object_iter_key (iter), json_object_iter_key_len (iter));
            s_text_add (self, ": ", self->compact? 1: 2);
            member = json_object_iter_value (iter);
            iter = json_object_iter_next ((json_t *) value, iter);
        }
        if (!s_text_value (self, member, depth + 1))
            return false;
        if (i + 1 < count) {
            s_text_add (self, ",", 1);
            s_text_break (self, depth + 1, true);
        }
        else
            s_text_break (self, depth, false);
    }
    s_text_add (self, object? "}": "]", 1);
    return true;
}

//  Write value; false when it is nested absurdly deep (a cycle)
static bool
s_text_value (s_text_t *self, const json_t *value, int depth)
{
    if (depth > 2048)
        return false;
    char number [ACT_DTOA_SIZE];
    switch (json_typeof (value)) {
        case JSON_OBJECT:
        case JSON_ARRAY:
            return s_text_container (self, value, depth);
        case JSON_STRING:
            s_text_string (self, json_string_value (value), json_string_length (value));
            return true;
        case JSON_INTEGER: {
            //  By hand: snprintf cost more than the rest of a small object
            s_text_add (self, number, act_decimal_write (number, json_integer_value (value)));
            return true;
        }
        case JSON_REAL:
            //  SEMANTICS 1: the shortest text that reads back as the same
            //  double (jansson writes 17 digits: 0.10000000000000001)
            s_text_add (self, number, act_dtoa (json_real_value (value), number));
            return true;
        case JSON_TRUE:
            s_text_add (self, "true", 4);
            return true;
        case JSON_FALSE:
            s_text_add (self, "false", 5);
            return true;
        default:
            s_text_add (self, "null", 4);
            return true;
    }
}

//  value written as flags say, at most max bytes; NULL when it is longer
//  (or NULL, or holds a cycle)
static char *
s_dumps (const json_t *value, size_t flags, size_t max)
{
    if (!value)
        return NULL;
    s_text_t text = { malloc (256), 0, 256, (int) (flags & JSON_MAX_INDENT),
                      (flags & JSON_COMPACT) != 0, max, false };
    if (!s_text_value (&text, value, 0) || text.over) {
        free (text.data);
        return NULL;
    }
    text.data [text.used] = 0;
    return text.data;
}

char *
act_json_dump_within (const json_t *value, size_t max)
{
    return s_dumps (value, JSON_COMPACT, max);
}

char *
act_json_dumps_within (const json_t *value, size_t flags, size_t max)
{
    return s_dumps (value, flags, max);
}

char *
act_json_dumps (const json_t *value, size_t flags)
{
    //  Not json_dumps: for every object and array it writes, jansson 2.14
    //  formats the container's address with snprintf and keeps it in a
    //  hash table (its cycle check), which made serializing a third of the
    //  broker's instructions per call; and it writes reals with 17 digits.
    return s_dumps (value, flags, SIZE_MAX);
}

char *
act_json_dump (const json_t *value)
{
    return act_json_dumps (value, JSON_COMPACT);
}

char *
act_json_redump (const char *data, size_t size)
{
    json_t *value = act_json_parse_stored (data, size, NULL);
    char *text = value? act_json_dump (value): NULL;
    json_decref (value);
    return text;
}

//  A text being checked against what the writer writes (act_json_is_dump)
typedef struct {
    const char *data;           //  The text
    size_t size;                //  Its bytes
    size_t at;                  //  The next byte to read
} s_dump_t;

//  One key of an object being checked: its token, quotes included
typedef struct {
    const char *bytes;          //  The token's first byte
    size_t size;                //  Its bytes
} s_key_t;

static bool s_dump_value (s_dump_t *self, int depth);

//  A string token as s_text_string writes it; moves past it
static bool
s_dump_string (s_dump_t *self)
{
    const char *data = self->data;
    size_t at = self->at + 1;
    while (at < self->size) {
        //  The run of bytes written as they are: eight at a time while
        //  none of them is a control, '"' or '\\', then one at a time
        const unsigned char *byte = (const unsigned char *) data + at;
        const unsigned char *end = (const unsigned char *) data + self->size;
        while (end - byte >= 8) {
            uint64_t word;
            memcpy (&word, byte, 8);
            if (S_HAS_LESS (word, 0x20) | S_HAS_ZERO (word ^ (S_ONES * '"'))
                                        | S_HAS_ZERO (word ^ (S_ONES * '\\')))
                break;
            byte += 8;
        }
        while (byte < end && *byte >= 0x20 && *byte != '"' && *byte != '\\')
            byte++;
        at = (size_t) (byte - (const unsigned char *) data);
        if (at >= self->size)
            break;
        unsigned char c = *byte;
        if (c == '"') {
            self->at = at + 1;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c != '\\') {
            at++;
            continue;
        }
        if (at + 1 >= self->size)
            return false;
        char escape = data [at + 1];
        if (strchr ("\"\\bfnrt", escape) && escape) {
            at += 2;
            continue;
        }
        //  Else only \u00XX in upper case, for a control without a short form
        if (escape != 'u' || at + 6 > self->size || data [at + 2] != '0' || data [at + 3] != '0'
        ||  (data [at + 4] != '0' && data [at + 4] != '1'))
            return false;
        char low = data [at + 5];
        int code = (data [at + 4] - '0') * 16
                 + (low >= '0' && low <= '9'? low - '0': low >= 'A' && low <= 'F'? low - 'A' + 10: -99);
        if (code <= 0 || code == '\b' || code == '\f' || code == '\n' || code == '\r'
        ||  code == '\t')
            return false;
        at += 6;
    }
    return false;
}

//  How many decimal digits start the size bytes at data
static size_t
s_digits (const char *data, size_t size)
{
    size_t count = 0;
    while (count < size && data [count] >= '0' && data [count] <= '9')
        count++;
    return count;
}

bool
act_json_number_dumped (const char *text, size_t size, size_t *length)
{
    bool negative = size && text [0] == '-';
    size_t digits = s_digits (text + negative, size - negative);
    size_t at = negative + digits;
    *length = at;
    if (!digits || (digits > 1 && text [negative] == '0'))
        return false;
    bool real = at < size && (text [at] == '.' || text [at] == 'e' || text [at] == 'E');
    if (!real && digits < 19)
        return !(negative && text [negative] == '0');      //  The usual case
    if (at < size && text [at] == '.') {
        size_t decimals = s_digits (text + at + 1, size - at - 1);
        if (!decimals)
            return false;
        at += 1 + decimals;
    }
    if (at < size && (text [at] == 'e' || text [at] == 'E')) {
        at++;
        if (at < size && (text [at] == '+' || text [at] == '-'))
            at++;
        size_t exponent = s_digits (text + at, size - at);
        if (!exponent)
            return false;
        at += exponent;
    }
    *length = at;
    char token [64];
    if (at >= sizeof token)
        return false;
    memcpy (token, text, at);
    token [at] = 0;
    errno = 0;
    if (!real) {
        //  "-0" reads as 0; beyond int64 jansson refuses the text
        long long integer = strtoll (token, NULL, 10);
        return errno == 0 && !(integer == 0 && negative);
    }
    double value = strtod (token, NULL);
    if (isinf (value) || isnan (value))
        return false;
    char shortest [ACT_DTOA_SIZE];
    return act_dtoa (value, shortest) == at && memcmp (shortest, token, at) == 0;
}

static int
s_key_compare (const void *left, const void *right)
{
    const s_key_t *a = (const s_key_t *) left, *b = (const s_key_t *) right;
    if (a->size != b->size)
        return a->size < b->size? -1: 1;
    return memcmp (a->bytes, b->bytes, a->size);
}

//  True when two of count keys are the same (their tokens are canonical,
//  so equal keys are equal bytes)
static bool
s_keys_repeat (s_key_t *keys, size_t count)
{
    if (count > 16)
        qsort (keys, count, sizeof *keys, s_key_compare);
    for (size_t i = 1; i < count; i++)
        for (size_t j = count > 16? i - 1: 0; j < i; j++)
            if (s_key_compare (keys + i, keys + j) == 0)
                return true;
    return false;
}

//  An object or an array written compactly; moves past it
static bool
s_dump_container (s_dump_t *self, int depth)
{
    bool object = self->data [self->at++] == '{';
    char close = object? '}': ']';
    if (self->at < self->size && self->data [self->at] == close) {
        self->at++;
        return true;
    }
    s_key_t local [16], *keys = local;
    size_t count = 0, room = 16;
    bool good = false;
    while (self->at < self->size) {
        if (object) {
            if (self->data [self->at] != '"')
                break;
            size_t key = self->at;
            if (!s_dump_string (self) || self->at >= self->size || self->data [self->at++] != ':')
                break;
            if (count == room) {
                s_key_t *more = (s_key_t *) malloc (2 * room * sizeof *keys);
                if (!more)
                    break;
                memcpy (more, keys, count * sizeof *keys);
                if (keys != local)
                    free (keys);
                keys = more;
                room *= 2;
            }
            keys [count++] = (s_key_t) { self->data + key, self->at - 1 - key };
        }
        if (!s_dump_value (self, depth) || self->at >= self->size)
            break;
        char next = self->data [self->at++];
        if (next == close) {
            good = !object || !s_keys_repeat (keys, count);
            break;
        }
        if (next != ',')
            break;
    }
    if (keys != local)
        free (keys);
    return good;
}

static bool
s_dump_value (s_dump_t *self, int depth)
{
    if (self->at >= self->size)
        return false;
    char c = self->data [self->at];
    const char *word = c == 't'? "true": c == 'f'? "false": c == 'n'? "null": NULL;
    if (word) {
        size_t length = strlen (word);
        if (self->size - self->at < length || memcmp (self->data + self->at, word, length))
            return false;
        self->at += length;
        return true;
    }
    if (c == '"')
        return s_dump_string (self);
    if (c == '{' || c == '[')
        return depth < ACT_MAX_STORED_DEPTH && s_dump_container (self, depth + 1);
    if (c == '-' || (c >= '0' && c <= '9')) {
        size_t length;
        bool dumped = act_json_number_dumped (self->data + self->at, self->size - self->at, &length);
        self->at += length;
        return dumped;
    }
    return false;
}

bool
act_json_is_dump (const char *data, size_t size)
{
    if (!size || data [0] != '{' || !act_utf8_valid (data, size, NULL))
        return false;
    s_dump_t dump = { data, size, 0 };
    return s_dump_value (&dump, 0) && dump.at == size;
}

char *
act_json_quote (const char *string)
{
    return act_json_quoten (string, strlen (string));
}

char *
act_json_quoten (const char *string, size_t length)
{
    s_text_t text = { malloc (length + 8), 0, length + 8, 0, true, SIZE_MAX, false };
    s_text_string (&text, string, length);
    text.data [text.used] = 0;
    return text.data;
}

bool
act_utf8_valid (const char *data, size_t size, size_t *offset)
{
    const unsigned char *s = (const unsigned char *) data;
    size_t i = 0;
    while (i < size) {
        unsigned char c = s [i];
        size_t need;
        unsigned int min, code;
        if (c < 0x80) {
            i++;
            //  ASCII eight bytes at a time
            uint64_t word;
            while (size - i >= 8 && (memcpy (&word, s + i, 8), (word & S_ONES * 0x80) == 0))
                i += 8;
            continue;
        }
        else
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1; min = 0x80; code = c & 0x1F;
        }
        else
        if (c >= 0xE0 && c <= 0xEF) {
            need = 2; min = 0x800; code = c & 0x0F;
        }
        else
        if (c >= 0xF0 && c <= 0xF4) {
            need = 3; min = 0x10000; code = c & 0x07;
        }
        else
            goto bad;
        if (i + need >= size)
            goto bad;           //  Truncated sequence
        for (size_t k = 1; k <= need; k++) {
            if ((s [i + k] & 0xC0) != 0x80)
                goto bad;
            code = (code << 6) | (s [i + k] & 0x3F);
        }
        if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            goto bad;
        i += need + 1;
    }
    return true;
bad:
    if (offset)
        *offset = i;
    return false;
}

void
act_date_now (char *buffer)
{
    act_date_ago (0, buffer);
}

void
act_date_ago (long long ago_ms, char *buffer)
{
    struct timespec now;
    clock_gettime (CLOCK_REALTIME, &now);
    long long ms = (long long) now.tv_sec * 1000 + now.tv_nsec / 1000000 - ago_ms;
    time_t seconds = (time_t) (ms / 1000);
    //  The text of the second is kept per thread: a broker stamps many
    //  messages a second, and gmtime_r with strftime cost more than the
    //  rest of a stamp
    static _Thread_local time_t cached_second = (time_t) -1;
    static _Thread_local char cached_text [21];
    static _Thread_local size_t cached_length;
    if (seconds != cached_second) {
        struct tm utc;
        gmtime_r (&seconds, &utc);
        cached_length = strftime (cached_text, sizeof cached_text, "%Y-%m-%dT%H:%M:%S", &utc);
        cached_second = seconds;
    }
    size_t length = cached_length;
    memcpy (buffer, cached_text, length);
    unsigned millis = (unsigned) (ms % 1000);
    char *tail = buffer + length;
    tail [0] = '.';
    tail [1] = (char) ('0' + millis / 100);
    tail [2] = (char) ('0' + millis / 10 % 10);
    tail [3] = (char) ('0' + millis % 10);
    tail [4] = 'Z';
    tail [5] = 0;
}

long long
act_clock_ms (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return (long long) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

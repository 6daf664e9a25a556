/*  =========================================================================
    act_ref - references and expressions (SEMANTICS.md sections 2 and 5).

    The grammar is small enough for a hand-written scanner. It never looks
    behind and never allocates before a piece is known to be good, so a bad
    string costs one pass and leaves nothing behind.
    ========================================================================= */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <jansson.h>
#include "actd/act_ref.h"
#include "actd/act_json.h"

//  The scanner's state: the text and where it stands in it
typedef struct {
    const char *text;           //  Expression being parsed
    size_t size;                //  Its length in bytes
    size_t pos;                 //  Current byte offset
    bool output;                //  Parsing an output path
} s_scan_t;

static bool
s_at_dagger (s_scan_t *scan)
{
    return scan->size - scan->pos >= ACT_DAGGER_LEN
        && memcmp (scan->text + scan->pos, ACT_DAGGER, ACT_DAGGER_LEN) == 0;
}

static bool
s_is_space (char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void
s_skip_space (s_scan_t *scan)
{
    while (scan->pos < scan->size && s_is_space (scan->text [scan->pos]))
        scan->pos++;
}

//  The code point of a Unicode White_Space character beyond ASCII at pos
//  (U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F,
//  U+3000), 0 when there is none. Keys exclude all white space (SEMANTICS
//  2), not only the ASCII one.
static unsigned int
s_wide_space (s_scan_t *scan)
{
    const unsigned char *s = (const unsigned char *) scan->text + scan->pos;
    size_t left = scan->size - scan->pos;
    if (left >= 2 && s [0] == 0xC2 && (s [1] == 0x85 || s [1] == 0xA0))
        return s [1];
    if (left < 3 || (s [0] & 0xF0) != 0xE0 || (s [1] & 0xC0) != 0x80 || (s [2] & 0xC0) != 0x80)
        return 0;               //  Not a three-byte sequence
    unsigned int code = ((s [0] & 0x0Fu) << 12) | ((s [1] & 0x3Fu) << 6) | (s [2] & 0x3Fu);
    bool space = code == 0x1680 || (code >= 0x2000 && code <= 0x200A)
              || code == 0x2028 || code == 0x2029 || code == 0x202F
              || code == 0x205F || code == 0x3000;
    return space? code: 0;
}

//  True when the byte at pos may be part of an unquoted key
static bool
s_is_key_byte (s_scan_t *scan)
{
    unsigned char c = (unsigned char) scan->text [scan->pos];
    if (c < 0x20 || c == 0x7F || s_is_space ((char) c))
        return false;
    switch (c) {
        case '.': case '[': case ']': case '"': case '|': case '&': case '<': case '>':
        case '*':
            return false;
        default:
            //  A dagger and wide white space start with a byte above 0x7F
            return c < 0x80 || (!s_at_dagger (scan) && !s_wide_space (scan));
    }
}

//  Length of the operator at pos (||, &&, and in output paths <|> and *>),
//  0 when there is none; *is_or tells which one.
static size_t
s_operator (s_scan_t *scan, bool *is_or)
{
    const char *here = scan->text + scan->pos;
    size_t left = scan->size - scan->pos;
    if (left >= 2 && memcmp (here, "||", 2) == 0) {
        *is_or = true;
        return 2;
    }
    if (left >= 2 && memcmp (here, "&&", 2) == 0) {
        *is_or = false;
        return 2;
    }
    if (scan->output && left >= 3 && memcmp (here, "<|>", 3) == 0) {
        *is_or = true;
        return 3;
    }
    if (scan->output && left >= 2 && memcmp (here, "*>", 2) == 0) {
        *is_or = false;
        return 2;
    }
    return 0;
}

static int
s_fail (s_scan_t *scan, act_err_t *err, const char *what)
{
    if (scan->pos < scan->size)
        return act_err_set (err, ACT_E_BAD_REFERENCE,
                            "%s at byte %zu of '%.80s'", what, scan->pos, scan->text);
    return act_err_set (err, ACT_E_BAD_REFERENCE,
                        "%s at byte %zu (end) of '%.80s'", what, scan->pos, scan->text);
}

//  A segment's key while its reference is parsed: a run of the source
//  text, or a decoded quoted key of its own
typedef struct {
    const char *text;           //  The key's bytes (not terminated)
    size_t length;              //  Their number
    char *owned;                //  A decoded key to free, or NULL
} s_piece_t;

//  A reference's segments, kind, keys and text share one block: it starts
//  at the segments, or at the kind when there are none
static void
s_ref_free (act_ref_t *ref)
{
    free (ref->nsegs? (void *) ref->segs: (void *) ref->kind);
    memset (ref, 0, sizeof *ref);
}

//  Classify a run of digits: an index when it has no leading zero (or is
//  "0"), else a key such as "007".
static void
s_set_numeric (act_seg_t *seg, const char *digits, size_t length)
{
    seg->type = ACT_SEG_INDEX;
    seg->index = 0;
    for (size_t i = 0; i < length; i++) {
        if (seg->index > (SIZE_MAX - 9) / 10) {
            seg->index = SIZE_MAX;  //  Too large for any array: a key only
            return;
        }
        seg->index = seg->index * 10 + (size_t) (digits [i] - '0');
    }
}

static bool
s_all_digits (const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s [i] < '0' || s [i] > '9')
            return false;
    return n > 0;
}

//  A key after '.': a run of key bytes, "-" (the append position, output
//  paths only) or digits (an index unless it has a leading zero). Sets
//  seg's type and the key's piece; returns 0, or -1 with err set.
static int
s_parse_dotted (s_scan_t *scan, act_seg_t *seg, s_piece_t *piece, act_err_t *err)
{
    size_t start = scan->pos;
    while (scan->pos < scan->size && s_is_key_byte (scan))
        scan->pos++;
    size_t length = scan->pos - start;
    unsigned int space = scan->pos < scan->size? s_wide_space (scan): 0;
    if (space) {
        char what [48];
        snprintf (what, sizeof what, "white space (U+%04X) in a key", space);
        return s_fail (scan, err, what);
    }
    if (length == 0)
        return s_fail (scan, err, "empty path segment");
    const char *run = scan->text + start;
    if (!act_utf8_valid (run, length, NULL)) {
        scan->pos = start;
        return s_fail (scan, err, "invalid UTF-8 in key");
    }
    if (length == 1 && run [0] == '-') {
        if (!scan->output) {
            scan->pos = start;
            return s_fail (scan, err,
                "'-' (the append position) is only allowed in output paths");
        }
        seg->type = ACT_SEG_APPEND;
    }
    else
    if (s_all_digits (run, length) && (length == 1 || run [0] != '0'))
        s_set_numeric (seg, run, length);
    *piece = (s_piece_t) { run, length, NULL };
    return 0;
}

//  A quoted key after '[', up to and past its ']'. Sets the key's piece
//  (a decoded copy); returns 0, or -1 with err set and no key kept.
static int
s_parse_quoted (s_scan_t *scan, s_piece_t *piece, act_err_t *err)
{
    //  A JSON string: find its closing quote, then let jansson decode it
    size_t start = scan->pos++;
    while (scan->pos < scan->size && scan->text [scan->pos] != '"') {
        if (scan->text [scan->pos] == '\\')
            scan->pos++;
        scan->pos++;
    }
    if (scan->pos >= scan->size)
        return s_fail (scan, err, "unterminated quoted key");
    scan->pos++;
    json_t *string = json_loadb (scan->text + start, scan->pos - start,
                                 JSON_DECODE_ANY, NULL);
    if (!json_is_string (string)) {
        json_decref (string);
        scan->pos = start;
        return s_fail (scan, err, "bad quoted key");
    }
    //  [""] names the key "" (the grammar allows any json-string);
    //  a key with a NUL in it could not be told from a shorter one
    size_t length = json_string_length (string);
    if (strlen (json_string_value (string)) != length) {
        json_decref (string);
        scan->pos = start;
        return s_fail (scan, err, "quoted key with a NUL (\\u0000)");
    }
    char *key = strdup (json_string_value (string));
    json_decref (string);
    if (!key)
        return act_err_set (err, ACT_E_INTERNAL, "out of memory");
    if (scan->pos >= scan->size || scan->text [scan->pos] != ']') {
        free (key);
        return s_fail (scan, err, "expected ']'");
    }
    scan->pos++;
    *piece = (s_piece_t) { key, length, key };
    return 0;
}

//  An index after '[', up to and past its ']'. Sets seg's index and the
//  key's piece; returns 0, or -1 with err set.
static int
s_parse_index (s_scan_t *scan, act_seg_t *seg, s_piece_t *piece, act_err_t *err)
{
    size_t start = scan->pos;
    while (scan->pos < scan->size
       &&  scan->text [scan->pos] >= '0' && scan->text [scan->pos] <= '9')
        scan->pos++;
    size_t length = scan->pos - start;
    if (length == 0) {
        return s_fail (scan, err, "expected an index or a quoted key after '['");
    }
    if (length > 1 && scan->text [start] == '0') {
        scan->pos = start;
        return s_fail (scan, err, "index with a leading zero");
    }
    if (scan->pos >= scan->size || scan->text [scan->pos] != ']')
        return s_fail (scan, err, "expected ']'");
    *piece = (s_piece_t) { scan->text + start, length, NULL };
    s_set_numeric (seg, scan->text + start, length);
    scan->pos++;
    return 0;
}

//  Parse one segment after '.' or '['; appends it to segs and its key to
//  pieces (*nsegs of them, room for ACT_MAX_SEGMENTS). Returns 0 or -1.
static int
s_parse_segment (s_scan_t *scan, act_seg_t *segs, s_piece_t *pieces, size_t *nsegs,
                 act_err_t *err)
{
    if (*nsegs == ACT_MAX_SEGMENTS)
        return s_fail (scan, err, "too many path segments");
    act_seg_t seg = { ACT_SEG_KEY, NULL, 0 };
    s_piece_t piece;
    char opener = scan->text [scan->pos++];
    int rc;
    if (opener == '.')
        rc = s_parse_dotted (scan, &seg, &piece, err);
    else
    if (scan->pos < scan->size && scan->text [scan->pos] == '"')
        rc = s_parse_quoted (scan, &piece, err);
    else
        rc = s_parse_index (scan, &seg, &piece, err);
    if (rc)
        return rc;
    pieces [*nsegs] = piece;
    segs [(*nsegs)++] = seg;
    return 0;
}

//  Give ref one block: its segments, then its kind, keys and text, each
//  terminated. Returns 0, or -1 when out of memory.
static int
s_ref_block (act_ref_t *ref, const char *source, size_t kind_start, size_t kind_length,
             act_seg_t *segs, const s_piece_t *pieces, size_t nsegs, size_t end)
{
    size_t text_length = end - ref->offset;
    size_t bytes = nsegs * sizeof *segs + kind_length + 1 + text_length + 1;
    for (size_t i = 0; i < nsegs; i++)
        bytes += pieces [i].length + 1;
    char *block = malloc (bytes);
    if (!block)
        return -1;
    //  The segments first (the block is aligned for them), the strings after
    char *next = block + nsegs * sizeof *segs;
    ref->kind = next;
    memcpy (next, source + kind_start, kind_length);
    next [kind_length] = 0;
    next += kind_length + 1;
    for (size_t i = 0; i < nsegs; i++) {
        segs [i].key = next;
        memcpy (next, pieces [i].text, pieces [i].length);
        next [pieces [i].length] = 0;
        next += pieces [i].length + 1;
    }
    ref->text = next;
    memcpy (next, source + ref->offset, text_length);
    next [text_length] = 0;
    if (nsegs)
        memcpy (block, segs, nsegs * sizeof *segs);
    ref->segs = nsegs? (act_seg_t *) block: NULL;
    ref->nsegs = nsegs;
    return 0;
}

//  Parse one reference at pos (which must be a dagger) into ref.
static int
s_parse_ref (s_scan_t *scan, act_ref_t *ref, act_err_t *err)
{
    memset (ref, 0, sizeof *ref);
    if (!s_at_dagger (scan))
        return s_fail (scan, err, "expected a reference (a dagger)");
    ref->offset = scan->pos;
    scan->pos += ACT_DAGGER_LEN;

    size_t start = scan->pos;
    if (scan->pos < scan->size) {
        char c = scan->text [scan->pos];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_') {
            scan->pos++;
            while (scan->pos < scan->size) {
                c = scan->text [scan->pos];
                if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
                ||  (c >= '0' && c <= '9') || c == '_' || c == '-')
                    scan->pos++;
                else
                    break;
            }
        }
    }
    if (scan->pos == start)
        return s_fail (scan, err, "expected a kind ([A-Za-z_][A-Za-z0-9_-]*)");
    size_t kind_length = scan->pos - start;

    //  The segments and their keys are gathered here, then copied into
    //  the reference's one block
    act_seg_t segs [ACT_MAX_SEGMENTS];
    s_piece_t pieces [ACT_MAX_SEGMENTS];
    size_t nsegs = 0;
    int rc = 0;
    while (rc == 0 && scan->pos < scan->size
       &&  (scan->text [scan->pos] == '.' || scan->text [scan->pos] == '['))
        rc = s_parse_segment (scan, segs, pieces, &nsegs, err);
    //  A reference ends at white space, an operator or the end
    bool is_or;
    if (rc == 0 && scan->pos < scan->size
    &&  !s_is_space (scan->text [scan->pos]) && !s_operator (scan, &is_or))
        rc = s_fail (scan, err, "unexpected character in reference");
    if (rc == 0 && s_ref_block (ref, scan->text, start, kind_length, segs, pieces,
                                nsegs, scan->pos))
        rc = act_err_set (err, ACT_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < nsegs; i++)
        free (pieces [i].owned);
    if (rc)
        memset (ref, 0, sizeof *ref);
    return rc? -1: 0;
}

//  An expression, its first alternative, its first reference and its text
//  are one allocation; more alternatives and references grow apart
typedef struct {
    act_expr_t expr;            //  The expression
    act_alt_t alt;              //  Its first alternative
    act_ref_t ref;              //  That alternative's first reference
} s_expr_block_t;

//  Room for one more item in an array that may still be the inline one
static void *
s_grow (void *array, void *inline_one, size_t count, size_t size)
{
    if (array != inline_one)
        return realloc (array, (count + 1) * size);
    void *grown = malloc ((count + 1) * size);
    if (grown && count)
        memcpy (grown, array, count * size);
    return grown;
}

void
act_expr_destroy (act_expr_t **self_p)
{
    if (self_p && *self_p) {
        act_expr_t *self = *self_p;
        s_expr_block_t *block = (s_expr_block_t *) self;
        for (size_t a = 0; a < self->nalts; a++) {
            for (size_t r = 0; r < self->alts [a].nrefs; r++)
                s_ref_free (&self->alts [a].refs [r]);
            if (self->alts [a].refs != &block->ref)
                free (self->alts [a].refs);
        }
        if (self->alts != &block->alt)
            free (self->alts);
        free (self);
        *self_p = NULL;
    }
}

act_expr_t *
act_expr_parse (const char *text, bool output, act_err_t *err)
{
    s_scan_t scan = { text, text ? strlen (text) : 0, 0, output };
    if (!text || scan.size == 0) {
        act_err_set (err, ACT_E_BAD_REFERENCE, "empty expression at byte 0");
        return NULL;
    }
    s_expr_block_t *block = malloc (sizeof *block + scan.size + 1);
    if (!block)
        return NULL;
    act_expr_t *self = &block->expr;
    *self = (act_expr_t) { NULL, 0, output, (char *) (block + 1) };
    memcpy (self->text, text, scan.size + 1);
    size_t operands = 0;
    bool new_alternative = true;
    while (true) {
        if (new_alternative) {
            act_alt_t *alts = self->nalts? s_grow (self->alts, &block->alt, self->nalts,
                                                   sizeof *alts): &block->alt;
            if (!alts)
                goto failed;
            self->alts = alts;
            self->alts [self->nalts++] = (act_alt_t) { NULL, 0 };
        }
        act_alt_t *alt = &self->alts [self->nalts - 1];
        if (++operands > ACT_MAX_OPERANDS) {
            s_fail (&scan, err, "too many references in one expression");
            goto failed;
        }
        act_ref_t *refs = operands == 1? &block->ref
                        : s_grow (alt->refs, &block->ref, alt->nrefs, sizeof *refs);
        if (!refs)
            goto failed;
        alt->refs = refs;
        if (s_parse_ref (&scan, &alt->refs [alt->nrefs], err))
            goto failed;
        alt->nrefs++;

        //  White space is allowed around operators, nowhere else
        size_t before_space = scan.pos;
        s_skip_space (&scan);
        bool is_or;
        size_t length = s_operator (&scan, &is_or);
        if (length == 0) {
            if (scan.pos < scan.size) {
                s_fail (&scan, err, "expected an operator (|| or &&)");
                goto failed;
            }
            if (before_space != scan.pos) {
                scan.pos = before_space;
                s_fail (&scan, err, "trailing white space");
                goto failed;
            }
            break;
        }
        scan.pos += length;
        s_skip_space (&scan);
        new_alternative = is_or;
    }
    return self;

failed:
    if (err && !err->code)
        act_err_set (err, ACT_E_INTERNAL, "out of memory");
    act_expr_destroy (&self);
    return NULL;
}

bool
act_ref_is_reference (const char *string)
{
    return string
        && strncmp (string, ACT_DAGGER, ACT_DAGGER_LEN) == 0
        && strncmp (string + ACT_DAGGER_LEN, ACT_DAGGER, ACT_DAGGER_LEN) != 0;
}

bool
act_ref_is_escaped (const char *string)
{
    return string
        && strncmp (string, ACT_DAGGER ACT_DAGGER, 2 * ACT_DAGGER_LEN) == 0;
}

bool
act_ref_overlaps (const act_ref_t *a, const act_ref_t *b)
{
    if (strcmp (a->kind, b->kind) != 0)
        return false;
    size_t common = a->nsegs < b->nsegs? a->nsegs: b->nsegs;
    for (size_t i = 0; i < common; i++) {
        if (a->segs [i].type == ACT_SEG_APPEND || b->segs [i].type == ACT_SEG_APPEND)
            continue;
        if (strcmp (a->segs [i].key, b->segs [i].key) != 0)
            return false;
    }
    return true;
}

bool
act_ref_may_write (const act_ref_t *target, const char *target_instance,
                   const act_ref_t *read, const char *read_instance)
{
    //  Instance writes are folded only into reads of their own instance
    //  (SEMANTICS.md section 4), so they cannot feed a global read
    if (target_instance && !(read_instance && strcmp (target_instance, read_instance) == 0))
        return false;
    return act_ref_overlaps (target, read);
}

char *
act_path_code (const act_seg_t *segs, size_t nsegs)
{
    //  Each key as <length>:<bytes>; "-" alone for the append position
    size_t size = 1;
    for (size_t i = 0; i < nsegs; i++)
        size += strlen (segs [i].key) + 24;
    char *code = malloc (size);
    if (!code)
        return NULL;
    size_t used = 0;
    code [0] = 0;
    for (size_t i = 0; i < nsegs; i++) {
        if (segs [i].type == ACT_SEG_APPEND)
            used += (size_t) snprintf (code + used, size - used, "-");
        else
            used += (size_t) snprintf (code + used, size - used, "%zu:%s",
                                       strlen (segs [i].key), segs [i].key);
    }
    return code;
}

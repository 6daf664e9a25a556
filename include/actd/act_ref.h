/*  =========================================================================
    act_ref - references (†kind.path) and expressions (|| and &&), as
    defined in SEMANTICS.md sections 2 and 5.

    A parsed expression is read-only data: alternatives (||) of operands
    (&&), each operand a reference with a kind and a list of segments.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_REF_H_INCLUDED
#define ACT_REF_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include "act_err.h"

#ifdef __cplusplus
extern "C" {
#endif

//  The dagger, U+2020, as UTF-8
#define ACT_DAGGER          "\xE2\x80\xA0"
#define ACT_DAGGER_LEN      3

//  Most segments in one reference, and most references in one expression.
//  Longer ones are refused with bad_reference.
#define ACT_MAX_SEGMENTS    64
#define ACT_MAX_OPERANDS    64

typedef enum {
    ACT_SEG_KEY,                //  An object key: .name or ["a.b"] or .007
    ACT_SEG_INDEX,              //  .0 or [0]: an index on arrays, a key on
                                //  anything else
    ACT_SEG_APPEND              //  .- in output paths: one past the end
} act_seg_type_t;

typedef struct {
    act_seg_type_t type;        //  What the segment is
    char *key;                  //  Its text: the key, the index in decimal,
                                //  or "-" for ACT_SEG_APPEND
    size_t index;               //  ACT_SEG_INDEX: the index, or SIZE_MAX
                                //  when too large to address any array
} act_seg_t;

typedef struct {
    char *kind;                 //  The kind, such as "state"
    act_seg_t *segs;            //  The path, nsegs segments
    size_t nsegs;               //  0 means the whole kind
    char *text;                 //  The reference as written, trimmed
    size_t offset;              //  Byte offset of the dagger in the source
} act_ref_t;

typedef struct {
    act_ref_t *refs;            //  The && operands (fan-out targets)
    size_t nrefs;               //  At least 1
} act_alt_t;

typedef struct {
    act_alt_t *alts;            //  The || alternatives, in order
    size_t nalts;               //  At least 1
    bool output;                //  Parsed as an output path
    char *text;                 //  The whole expression as given
} act_expr_t;

//  Parse text as a parameter expression (output false) or as an output
//  path (output true: "-" segments and the <|> and *> synonyms allowed).
//  Returns a new expression, or NULL with err set to bad_reference and a
//  message naming the byte offset of the problem.
act_expr_t *act_expr_parse (const char *text, bool output, act_err_t *err);

//  Destroy the expression and null the pointer; safe on NULL.
void act_expr_destroy (act_expr_t **self_p);

//  True when the string must be read as a reference or expression: it
//  starts with a dagger and not with two (SEMANTICS.md section 2).
bool act_ref_is_reference (const char *string);

//  True when the string is a literal that starts with a dagger ("††x"):
//  its value is the string without its first dagger.
bool act_ref_is_escaped (const char *string);

//  True when reference a could write where b reads, or the reverse: same
//  kind, and one path is a prefix of the other ("-" matches any segment).
bool act_ref_overlaps (const act_ref_t *a, const act_ref_t *b);

//  True when an output target (written in target_instance, NULL: global)
//  could write where a call reads read (in read_instance, NULL: global):
//  the dependency relation of SEMANTICS.md section 7. The paths overlap
//  (one is a prefix of the other, "-" matching any segment), and the
//  target is global or in the reader's instance.
bool act_ref_may_write (const act_ref_t *target, const char *target_instance,
                        const act_ref_t *read, const char *read_instance);

//  Encode a path as a string that is equal for equal paths and never
//  equal for different ones (index and key with the same text are one
//  path; "-" is not a key). Returns a new string the caller frees.
char *act_path_code (const act_seg_t *segs, size_t nsegs);

#ifdef __cplusplus
}
#endif

#endif

/*  =========================================================================
    act_method - the six output methods and writes at a path inside a JSON
    document (SEMANTICS.md section 3).

    A document is a json_t * owned by its holder; NULL means absent. Writes
    mutate the document in place and copy what they store from the written
    value, so the caller's value is never shared with the document.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_METHOD_H_INCLUDED
#define ACT_METHOD_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include "act_err.h"
#include "act_ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ACT_SET,                    //  V
    ACT_MERGE,                  //  RFC 7396 merge patch of T by V
    ACT_ASSIGN,                 //  {...T, ...V}
    ACT_PUSH,                   //  T with V appended as one element
    ACT_CONCAT,                 //  T and V concatenated (arrays, strings)
    ACT_ERASE                   //  absent
} act_method_t;

//  Find the method called name. Returns 0, or -1 when name is not one of
//  the six (the caller answers bad_method).
int act_method_parse (const char *name, act_method_t *method);

//  The method's name, such as "merge".
const char *act_method_name (act_method_t method);

//  Check the method's rules on the written value alone (assign needs an
//  object, concat an array or a string). Returns 0, or -1 with err set to
//  type_mismatch.
int act_method_check_value (act_method_t method, const json_t *value, act_err_t *err);

//  RFC 7396: apply patch to target and return the result. Takes ownership
//  of target (which may be NULL and is changed in place when it is an
//  object); never keeps a reference to patch.
json_t *act_merge_patch (json_t *target, const json_t *patch);

//  The value at path segs in doc, read as SEMANTICS.md section 2 says: an
//  index segment indexes arrays and is a key on objects. Returns a
//  borrowed reference, or NULL when the path is absent.
json_t *act_path_get (json_t *doc, const act_seg_t *segs, size_t nsegs);

//  Write value at path segs inside *doc_p with method (SEMANTICS.md
//  section 3). With dry_run, only check that the write applies. Returns 0,
//  or -1 with err set (type_mismatch, bad_path) and *doc_p unchanged.
//  Erasing never creates parents; erasing an array element is bad_path,
//  because removing it would renumber its siblings.
int act_path_write (json_t **doc_p, const act_seg_t *segs, size_t nsegs,
                    act_method_t method, const json_t *value, bool dry_run,
                    act_err_t *err);

//  As act_path_write (not a dry run), but a set keeps value itself at the
//  path, a new reference, instead of a copy: for a caller that drops value
//  at once. The document may change value in place later, so no one else
//  may hold it or change it.
int act_path_write_shared (json_t **doc_p, const act_seg_t *segs, size_t nsegs,
                           act_method_t method, json_t *value, act_err_t *err);

//  The display form of a value written at segs: the value nested under one
//  object level per segment (an index as its decimal key, "-" as "-").
//  Returns a new reference; copies value.
json_t *act_path_nest (const act_seg_t *segs, size_t nsegs, const json_t *value);

#ifdef __cplusplus
}
#endif

#endif

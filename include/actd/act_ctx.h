/*  =========================================================================
    act_ctx - one agent context: an append-only list of messages and the
    index that resolves references against it without folding the list
    (SEMANTICS.md sections 1 to 6).

    The context does not keep the messages themselves (the store does): it
    builds each stored message (with _seq and _date), and keeps what
    resolution and the merged view need.

    The index. For each kind, the global scope is kept as the document the
    fold of its global writes gives, updated in place by each write: a
    resolution walks the path, O(depth), whatever the context's length.
    A worker's result set or pushed there (act_ctx_output_text) stays in
    it as the worker's text until something reads it.
    Each instance keeps its own writes in a trie by path; reading in an
    instance starts from the global document and applies only the instance
    writes on the path, its ancestors and its descendants. The cost of one
    resolution is O(depth + instance writes touching the path), plus the
    size of the value returned.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_CTX_H_INCLUDED
#define ACT_CTX_H_INCLUDED

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "act_err.h"
#include "act_ref.h"
#include "act_method.h"

#ifdef __cplusplus
extern "C" {
#endif

//  Context ids: 1 to 128 bytes of [A-Za-z0-9._:@/-]; instances: 1 to 128
//  bytes of UTF-8 text without NUL (they come from JSON strings).
#define ACT_MAX_CONTEXT_ID  128
#define ACT_MAX_INSTANCE    128

typedef struct _act_ctx_t act_ctx_t;

//  True when id is a valid context id.
bool act_ctx_id_valid (const char *id);

//  True when kind is a valid kind identifier [A-Za-z_][A-Za-z0-9_-]*.
bool act_kind_valid (const char *kind);

//  Create an empty context named id. Returns NULL if id is not valid.
act_ctx_t *act_ctx_new (const char *id);

//  Destroy the context and null the caller's pointer; safe on NULL.
void act_ctx_destroy (act_ctx_t **self_p);

//  The context id.
const char *act_ctx_id (act_ctx_t *self);

//  The _seq the next appended message gets (1 for an empty context).
uint64_t act_ctx_next_seq (act_ctx_t *self);

//  Append a client's message (the APPEND command). A data message writes
//  its data at the root of its kind with its _outputMethod (default
//  merge); other types are kept unchanged. Returns the stored message (a
//  new reference, with _seq and _date), or NULL with err set (bad_argument,
//  bad_method, type_mismatch, bad_path) and nothing changed.
json_t *act_ctx_append (act_ctx_t *self, const json_t *message, act_err_t *err);

//  Append the output of a call: value written with method at every target
//  of alt (one message per target, in order), in scope instance (NULL:
//  global). Every target is checked before any is appended. Returns a new
//  JSON array of the stored messages, or NULL with err set (type_mismatch,
//  bad_path, bad_argument for an instance that is not UTF-8) and nothing
//  changed.
json_t *act_ctx_output (act_ctx_t *self, const act_alt_t *alt,
                        const json_t *value, act_method_t method,
                        const char *instance, const json_t *call,
                        const char *call_id, act_err_t *err);

//  As act_ctx_output, but the stored messages come without their "data"
//  member: for a caller that has the value's text and adds "data" to the
//  messages' text itself (act_text_nest), so that the value is not nested
//  and copied into a tree only to be dropped. Everything else, the index
//  included, is as act_ctx_output leaves it, except that a set in the
//  global scope may keep value itself (a new reference) rather than a
//  copy: the caller drops value after this call and neither changes it
//  nor hands it to anyone else.
json_t *act_ctx_output_bare (act_ctx_t *self, const act_alt_t *alt,
                             json_t *value, act_method_t method,
                             const char *instance, const json_t *call,
                             const char *call_id, act_err_t *err);

//  As act_ctx_output_bare, for a value given as its JSON text (size bytes
//  that act_json_parse, or act_scan, accepts), and with the stored messages
//  returned as text. A set or push in the global scope keeps the text in the
//  index, and parses it only when something needs what it holds (a read at
//  or below its path, a write that combines with it, the view): a result
//  nobody reads is never parsed. Other writes parse it here.
//  Returns a NULL-terminated array of the stored messages' texts, one a
//  target (the caller frees each and the array), with *first_seq set to
//  the first one's _seq (the others follow); each is the text
//  act_json_dump gives of act_ctx_output_bare's message, with "data" (the
//  value nested at its path, as act_text_nest) and, when call_text is not
//  NULL, "_call" (call_text, the call's JSON) added last, as
//  act_text_splice adds them. NULL with err set and nothing changed as
//  act_ctx_output_bare.
char **act_ctx_output_text (act_ctx_t *self, const act_alt_t *alt,
                            const char *text, size_t size, act_method_t method,
                            const char *instance, const char *call_text,
                            const char *call_id, uint64_t *first_seq, act_err_t *err);

//  Check, without appending, that act_ctx_output would succeed.
int act_ctx_output_check (act_ctx_t *self, const act_alt_t *alt,
                          const json_t *value, act_method_t method,
                          const char *instance, act_err_t *err);

//  Append the error message of a failed call that has no alternative to
//  write its error to. Returns the stored message (a new reference).
json_t *act_ctx_error (act_ctx_t *self, const json_t *error,
                       const json_t *call, const char *call_id);

//  Replay a message read back from the store (it carries its _seq), to
//  rebuild the index after a restart. Messages must come in _seq order.
//  Returns 0, or -1 with err set when the message is not one this
//  library could have stored.
int act_ctx_replay (act_ctx_t *self, const json_t *message, act_err_t *err);

//  The value of one reference in scope instance (NULL: global). Returns a
//  new reference the caller owns, or NULL when the value is absent.
json_t *act_ctx_get (act_ctx_t *self, const act_ref_t *ref, const char *instance);

//  True when the reference has a value in scope instance (cheaper than
//  act_ctx_get in the global scope: nothing is copied).
bool act_ctx_has (act_ctx_t *self, const act_ref_t *ref, const char *instance);

//  How many of instance's writes of kind the last read or write check in
//  that scope looked at, with the values of the kind's global document it
//  walked to parse values kept as text: its cost, counted rather than
//  timed, for tests and diagnostics. 0 when the scope has no writes.
uint64_t act_ctx_visited (act_ctx_t *self, const char *kind, const char *instance);

//  The value of a parameter expression: the first alternative whose
//  operands are all present gives its last operand's value. Returns a new
//  reference, or NULL when absent.
json_t *act_ctx_resolve (act_ctx_t *self, const act_expr_t *expr,
                         const char *instance);

//  The text of act_ctx_resolve's value, as act_json_dump writes it, dumped
//  straight from the stored value (nothing is copied, in the global scope
//  or an instance's) and given up once it passes max bytes. Returns a new string; NULL with
//  *absent true when no alternative has a value, NULL with *absent false
//  when the text would pass max. A RESOLVE of a value of 200 MB copied it
//  and wrote it whole before refusing it too_large.
char *act_ctx_resolve_dump (act_ctx_t *self, const act_expr_t *expr, const char *instance,
                            size_t max, bool *absent);

//  The merged view (SEMANTICS.md section 6) as a new JSON array.
json_t *act_ctx_view (act_ctx_t *self);

//  The text rendering of the merged view; the caller frees the string.
char *act_ctx_view_text (act_ctx_t *self);

//  The merged view's text, written into one growing buffer: with text,
//  act_ctx_view_text's; else the compact JSON act_json_dump writes of
//  act_ctx_view. Stops as soon as the text passes max bytes (SIZE_MAX: no
//  bound), building nothing past it, and copies no value. Returns a new
//  string the caller frees, with *size its length; NULL with *size over
//  max when the text is longer than max, NULL with *size 0 when memory
//  ran out.
char *act_ctx_view_dump (act_ctx_t *self, bool text, size_t max, size_t *size);

#ifdef __cplusplus
}
#endif

#endif

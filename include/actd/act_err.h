/*  =========================================================================
    act_err - an error as a value: a code from PROTOCOL.md section 3 and a
    message a person can act on.

    Anything that came from a socket or a file is checked and answered with
    one of these; nothing in libactd asserts on input.

    PROTOCOL.md and SEMANTICS.md are the ACT/1 specification; actd's own
    docs/protocol.md and docs/semantics.md are installed in share/doc/actd.
    ========================================================================= */

#ifndef ACT_ERR_H_INCLUDED
#define ACT_ERR_H_INCLUDED

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

//  The error codes of PROTOCOL.md section 3, and the call outcome codes of
//  SEMANTICS.md section 7 and PROTOCOL.md section 2.1. Every code libactd
//  and actd set is one of these constants; an outcome's code may also be
//  a worker's own (its FAIL's "code"), so compare codes with strcmp.
#define ACT_E_BAD_FRAME             "bad_frame"
#define ACT_E_UNKNOWN_COMMAND       "unknown_command"
#define ACT_E_BAD_JSON              "bad_json"
#define ACT_E_BAD_CONTEXT           "bad_context"
#define ACT_E_BAD_CALL              "bad_call"
#define ACT_E_BAD_REFERENCE         "bad_reference"
#define ACT_E_BAD_METHOD            "bad_method"
#define ACT_E_BAD_ARGUMENT          "bad_argument"
#define ACT_E_TYPE_MISMATCH         "type_mismatch"
#define ACT_E_UNRESOLVED_REFERENCE  "unresolved_reference"
#define ACT_E_NOT_FOUND             "not_found"
#define ACT_E_TOO_LARGE             "too_large"
#define ACT_E_BUSY                  "busy"
#define ACT_E_UNAUTHORIZED          "unauthorized"
#define ACT_E_INTERNAL              "internal"
#define ACT_E_MOVED                 "moved"
#define ACT_E_UNKNOWN_ACTIVITY      "unknown_activity"
//  Outcome-only codes (a call's error object, never an ERROR reply)
#define ACT_E_BAD_PATH              "bad_path"
#define ACT_E_ACTIVITY_FAILED       "activity_failed"
#define ACT_E_WORKER_LOST           "worker_lost"
#define ACT_E_TIMEOUT               "timeout"
#define ACT_E_NO_WORKER             "no_worker"
#define ACT_E_CANCELLED             "cancelled"
#define ACT_E_BAD_PARAMS            "bad_params"

typedef struct {
    const char *code;           //  One of the ACT_E_ codes; NULL: no error
    char message [256];         //  Human-readable detail, always terminated
} act_err_t;

//  Set err to code with a printf-style message; safe when err is NULL.
//  Always returns -1, so a caller can write "return act_err_set (...)".
int act_err_set (act_err_t *err, const char *code, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

//  Clear err (no error); safe when err is NULL.
void act_err_clear (act_err_t *err);

#ifdef __cplusplus
}
#endif

#endif

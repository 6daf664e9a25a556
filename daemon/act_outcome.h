/*  =========================================================================
    act_outcome - what an ended call writes and reports: its output in its
    context (SEMANTICS.md section 7: the chosen alternative, the error on
    the last alternative, or an error message) and in the store, and the
    outcome object that DONE, STATUS and the store carry.

    The worker's result is kept as the bytes it sent: it is nested into
    the stored messages and spliced into the outcome as text, never
    serialized again.
    ========================================================================= */

#ifndef ACT_OUTCOME_H_INCLUDED
#define ACT_OUTCOME_H_INCLUDED

#include "act_live.h"
#include "act_watch.h"
#include "actd/act_text.h"

//  How a call ends
typedef struct {
    const char *status;         //  ok, error, timeout, skipped, cancelled;
                                //  an ok whose write is refused turns error
    json_t *error;              //  Error object, or NULL (the caller's;
                                //  set when an ok turns error)
    const json_t *result;       //  For ok with an output and no text: the
                                //  result as a tree
    const char *result_text;    //  For ok: the worker's text of the result
                                //  (valid JSON; the index keeps it as text),
                                //  not NUL-terminated
    size_t result_size;         //  Bytes of result_text
    long long branch;           //  For ok: the alternative it chose
} act_ending_t;

//  Write the ending of call into its context and into store's batch (each
//  message also to the watches of its context), and the outcome's JSON
//  text into text (emptied first, its room reused). Returns that text
//  (text's own), or NULL when memory ran out.
const char *act_outcome_write (act_live_t *call, act_store_t *store, act_watches_t *watches,
                               act_ending_t *ending, act_buf_t *text);

#endif

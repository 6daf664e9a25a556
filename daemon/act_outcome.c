/*  =========================================================================
    act_outcome - what an ended call writes and reports (see act_outcome.h).
    ========================================================================= */

#include "act_outcome.h"
#include "actd/act_text.h"
#include "actd/act_wire.h"

static json_t *
s_error_json (const char *code, const char *message)
{
    return json_pack ("{ssss}", "code", code, "message", message);
}

//  The messages the outcome writes, as SEMANTICS.md section 7 says: the
//  chosen alternative on success; on failure the error object on the last
//  alternative when there are two or more. May turn an ok into an error
//  (a bad branch, type_mismatch, bad_path). NULL when an error message
//  must be appended instead; *branch says which alternative was written.
//  An ok with result_text writes that text and sets *texts to the stored
//  texts instead (act_ctx_output_text, *first_seq the first one's _seq).
static json_t *
s_output_messages (act_live_t *call, const char **status, json_t **error,
                   const json_t *result, const char *result_text, size_t result_size,
                   long long *branch, char ***texts, uint64_t *first_seq)
{
    act_expr_t *output = call->call->output;
    act_ctx_t *ctx = call->context->ctx;
    json_t *messages = NULL;
    act_err_t err = { 0 };
    if (streq (*status, "ok")) {
        if (*branch < 0 || (size_t) *branch >= output->nalts) {
            char *message = zsys_sprintf ("the worker chose branch %lld; the output path "
                                          "has %zu", *branch, output->nalts);
            *error = s_error_json (ACT_E_ACTIVITY_FAILED, message);
            zstr_free (&message);
        }
        else
        if (result_text)
            //  The worker's text, validated by act_flow_result: the index
            //  keeps it as text until something reads it
            *texts = act_ctx_output_text (ctx, &output->alts [*branch], result_text,
                                          result_size, call->call->method,
                                          call->call->instance, call->text, call->id,
                                          first_seq, &err);
        else
            messages = act_ctx_output (ctx, &output->alts [*branch], result, call->call->method,
                                       call->call->instance, NULL, call->id, &err);
        if (!messages && !*texts && !*error)
            *error = s_error_json (err.code, err.message);
        if (!messages && !*texts)
            *status = "error";
    }
    if (!streq (*status, "ok") && output->nalts >= 2) {
        *branch = (long long) output->nalts - 1;
        json_t *value = json_pack ("{sO}", "error", *error);
        messages = act_ctx_output (ctx, &output->alts [*branch], value, call->call->method,
                                   call->call->instance, NULL, call->id, &err);
        json_decref (value);
    }
    return messages;
}

//  The stored text of a message of call: the message, then "_call" with
//  the call's own text (as submitted)
static char *
s_message_text (json_t *message, const char *call_text)
{
    char *text = act_json_dump (message);
    char *joined = act_text_splice (text, "_call", call_text);
    free (text);
    return joined;
}

//  What s_write wrote, for the outcome
typedef struct {
    long long branch;           //  The alternative written, -1 for none
    json_int_t seqs [ACT_MAX_OPERANDS + 1];    //  _seq of each message
    size_t nseqs;               //  Number of messages
} s_written_t;

//  Store one message of call, tell its watches, and note its _seq
static void
s_put (act_live_t *call, act_store_t *store, act_watches_t *watches, uint64_t seq,
       const char *text, s_written_t *written)
{
    act_store_put_message (store, call->context->id, seq, text, strlen (text));
    call->context->written = act_store_generation (store);
    if (act_watches_size (watches))             //  No lookup when none is open
        act_watches_message (watches, call->context->id, seq, text);
    if (written->nseqs < sizeof written->seqs / sizeof written->seqs [0])
        written->seqs [written->nseqs++] = (json_int_t) seq;
}

//  Write the call's output into its context and the store; fill written
static void
s_write (act_live_t *call, act_store_t *store, act_watches_t *watches, act_ending_t *ending,
         s_written_t *written)
{
    const char **status = &ending->status;
    json_t **error = &ending->error;
    long long branch = ending->branch;
    char **texts = NULL;
    uint64_t first_seq = 0;
    json_t *messages = s_output_messages (call, status, error, ending->result,
                                          ending->result_text, ending->result_size, &branch,
                                          &texts, &first_seq);
    written->branch = messages || texts? branch: -1;
    written->nseqs = 0;
    if (texts) {
        //  The worker's result, its text nested as it came
        for (size_t i = 0; texts [i]; i++) {
            s_put (call, store, watches, first_seq + i, texts [i], written);
            free (texts [i]);
        }
        free (texts);
        return;
    }
    if (!messages) {
        messages = json_array ();
        json_array_append_new (messages,
                               act_ctx_error (call->context->ctx, *error, NULL, call->id));
    }
    size_t index;
    json_t *message;
    json_array_foreach (messages, index, message) {
        json_int_t seq = json_integer_value (json_object_get (message, "_seq"));
        char *text = s_message_text (message, call->text);
        s_put (call, store, watches, (uint64_t) seq, text, written);
        free (text);
    }
    json_decref (messages);
}

const char *
act_outcome_write (act_live_t *call, act_store_t *store, act_watches_t *watches,
                   act_ending_t *ending, act_buf_t *text)
{
    //  The outcome's text is written by hand, as act_json_dump would lay
    //  out {call_id, branch, written, seqs, status, error, attempts}: a
    //  tree of it cost more than the rest of the outcome
    const char **status = &ending->status;
    json_t **error = &ending->error;
    act_expr_t *output = call->call->output;
    bool with_result = output && streq (*status, "ok") && ending->result_text;
    size_t size = 256 + (with_result? ending->result_size: 0);
    act_buf_clear (text);
    act_buf_reserve (text, size);
    //  The call id (digits) and the status need no escape
    act_buf_add_str (text, "{\"call_id\":");
    act_buf_add_plain (text, call->id, strlen (call->id));
    if (output && !streq (*status, "cancelled")) {
        s_written_t written;
        s_write (call, store, watches, ending, &written);
        if (written.branch >= 0) {
            act_buf_add_str (text, ",\"branch\":");
            act_buf_add_number (text, written.branch);
        }
        act_buf_add_str (text, ",\"written\":[");
        const act_alt_t *alt = written.branch >= 0? &output->alts [written.branch]: NULL;
        for (size_t i = 0; alt && i < alt->nrefs; i++) {
            if (i)
                act_buf_add (text, ",", 1);
            act_buf_add_quoted (text, alt->refs [i].text);
        }
        act_buf_add_str (text, "],\"seqs\":[");
        for (size_t i = 0; i < written.nseqs; i++) {
            if (i)
                act_buf_add (text, ",", 1);
            act_buf_add_number (text, written.seqs [i]);
        }
        act_buf_add (text, "]", 1);
    }
    else
    if (output)
        act_buf_add_str (text, ",\"written\":[],\"seqs\":[]");
    act_buf_add_str (text, ",\"status\":");
    act_buf_add_plain (text, *status, strlen (*status));
    if (*error) {
        char *error_text = act_json_dump (*error);
        act_buf_add_str (text, ",\"error\":");
        act_buf_add_str (text, error_text);
        free (error_text);
    }
    act_buf_add_str (text, ",\"attempts\":");
    act_buf_add_number (text, call->attempts);
    //  The worker's result text last, as act_text_splice would add it;
    //  with_result is read again: s_write may have turned the ok into
    //  an error
    if (with_result && streq (*status, "ok")) {
        act_buf_add_str (text, ",\"result\":");
        act_buf_add (text, ending->result_text, ending->result_size);
    }
    act_buf_add (text, "}", 1);
    return text->data;
}

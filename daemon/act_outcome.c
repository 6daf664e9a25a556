/*  =========================================================================
    act_outcome - what an ended call writes and reports (see act_outcome.h).
    ========================================================================= */

#include "act_outcome.h"

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
//  With result_text, the messages of an ok come without "data": the
//  caller nests that text in them.
static json_t *
s_output_messages (act_live_t *call, const char **status, json_t **error,
                   const json_t *result, const char *result_text, long long *branch)
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
            //  The result is the worker's, parsed for this write only and
            //  dropped after it (act_flow_result): the index may keep it
            messages = act_ctx_output_bare (ctx, &output->alts [*branch], (json_t *) result,
                                            call->call->method, call->call->instance, NULL,
                                            call->id, &err);
        else
            messages = act_ctx_output (ctx, &output->alts [*branch], result, call->call->method,
                                       call->call->instance, NULL, call->id, &err);
        if (!messages && !*error)
            *error = s_error_json (err.code, err.message);
        if (!messages)
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

//  The stored text of a message of call: the message, then "data" (when
//  data_text is given: the display form, made without serializing the
//  value again), then "_call" with the call's own text (as submitted)
static char *
s_message_text (json_t *message, const char *data_text, const char *call_text)
{
    if (data_text)
        json_object_del (message, "data");     //  When it has one
    char *text = act_json_dump (message);
    if (data_text) {
        char *joined = act_text_splice (text, "data", data_text);
        free (text);
        text = joined;
    }
    char *joined = act_text_splice (text, "_call", call_text);
    free (text);
    return joined;
}

//  Write the call's output into its context and the store; fill the
//  outcome's branch, written and seqs
static void
s_write (act_live_t *call, act_store_t *store, act_watches_t *watches, act_ending_t *ending,
         json_t *outcome)
{
    act_expr_t *output = call->call->output;
    const char **status = &ending->status;
    json_t **error = &ending->error;
    long long branch = ending->branch;
    json_t *messages = s_output_messages (call, status, error, ending->result,
                                          ending->result_text, &branch);
    json_t *written = json_array ();
    json_t *seqs = json_array ();
    if (messages) {
        json_object_set_new (outcome, "branch", json_integer (branch));
        for (size_t i = 0; i < output->alts [branch].nrefs; i++)
            json_array_append_new (written, json_string (output->alts [branch].refs [i].text));
    }
    else {
        messages = json_array ();
        json_array_append_new (messages,
                               act_ctx_error (call->context->ctx, *error, NULL, call->id));
    }
    //  The worker's result text is the written value: nest it as it is
    bool spliced = ending->result_text && streq (*status, "ok");
    size_t index;
    json_t *message;
    json_array_foreach (messages, index, message) {
        json_int_t seq = json_integer_value (json_object_get (message, "_seq"));
        char *data = spliced? act_text_nest (&output->alts [branch].refs [index],
                                                   ending->result_text)
                            : NULL;
        char *text = s_message_text (message, data, call->text);
        free (data);
        act_store_put_message (store, call->context->id, (uint64_t) seq, text,
                               strlen (text));
        act_watches_message (watches, call->context->id, (uint64_t) seq, text);
        free (text);
        json_array_append_new (seqs, json_integer (seq));
    }
    json_decref (messages);
    json_object_set_new (outcome, "written", written);
    json_object_set_new (outcome, "seqs", seqs);
}

char *
act_outcome_write (act_live_t *call, act_store_t *store, act_watches_t *watches,
                   act_ending_t *ending)
{
    const char **status = &ending->status;
    json_t **error = &ending->error;
    json_t *outcome = json_pack ("{ss}", "call_id", call->id);
    bool has_output = call->call->output != NULL;
    if (has_output && !streq (*status, "cancelled"))
        s_write (call, store, watches, ending, outcome);
    else
    if (has_output) {
        json_object_set_new (outcome, "written", json_array ());
        json_object_set_new (outcome, "seqs", json_array ());
    }
    json_object_set_new (outcome, "status", json_string (*status));
    if (*error)
        json_object_set (outcome, "error", *error);
    json_object_set_new (outcome, "attempts", json_integer (call->attempts));
    char *text = act_json_dump (outcome);
    json_decref (outcome);
    if (has_output && streq (*status, "ok") && ending->result_text) {
        char *joined = act_text_splice (text, "result", ending->result_text);
        free (text);
        text = joined;
    }
    return text;
}

/*  =========================================================================
    act_outcome - what an ended call writes and reports (see act_outcome.h).
    ========================================================================= */

#include "act_outcome.h"
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
            //  The worker's text, validated by act_flow_result: the index
            //  keeps it as text until something reads it
            messages = act_ctx_output_text (ctx, &output->alts [*branch], result_text,
                                            strlen (result_text), call->call->method,
                                            call->call->instance, NULL, call->id, &err);
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

//  What s_write wrote, for the outcome
typedef struct {
    long long branch;           //  The alternative written, -1 for none
    json_int_t seqs [ACT_MAX_OPERANDS + 1];    //  _seq of each message
    size_t nseqs;               //  Number of messages
} s_written_t;

//  Write the call's output into its context and the store; fill written
static void
s_write (act_live_t *call, act_store_t *store, act_watches_t *watches, act_ending_t *ending,
         s_written_t *written)
{
    act_expr_t *output = call->call->output;
    const char **status = &ending->status;
    json_t **error = &ending->error;
    long long branch = ending->branch;
    json_t *messages = s_output_messages (call, status, error, ending->result,
                                          ending->result_text, &branch);
    written->branch = messages? branch: -1;
    written->nseqs = 0;
    if (!messages) {
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
        if (written->nseqs < sizeof written->seqs / sizeof written->seqs [0])
            written->seqs [written->nseqs++] = seq;
    }
    json_decref (messages);
}

//  A text being built: bytes, length and room
typedef struct {
    char *data;                 //  The bytes, NUL-terminated
    size_t used;                //  Bytes written
    size_t size;                //  Bytes allocated
} s_text_t;

//  Append size bytes to text
static void
s_add (s_text_t *text, const char *bytes, size_t size)
{
    if (text->used + size + 1 > text->size) {
        while (text->used + size + 1 > text->size)
            text->size *= 2;
        text->data = realloc (text->data, text->size);
    }
    memcpy (text->data + text->used, bytes, size);
    text->used += size;
    text->data [text->used] = 0;
}

//  Append a C string to text
static void
s_add_str (s_text_t *text, const char *string)
{
    s_add (text, string, strlen (string));
}

//  Append a string as a JSON string to text
static void
s_add_quoted (s_text_t *text, const char *string)
{
    char *quoted = act_json_quote (string);
    s_add_str (text, quoted);
    free (quoted);
}

//  Append an integer in decimal to text
static void
s_add_number (s_text_t *text, long long number)
{
    char digits [ACT_DECIMAL_MAX];
    s_add (text, digits, act_decimal_write (digits, number));
}

char *
act_outcome_write (act_live_t *call, act_store_t *store, act_watches_t *watches,
                   act_ending_t *ending)
{
    //  The outcome's text is written by hand, as act_json_dump would lay
    //  out {call_id, branch, written, seqs, status, error, attempts}: a
    //  tree of it cost more than the rest of the outcome
    const char **status = &ending->status;
    json_t **error = &ending->error;
    act_expr_t *output = call->call->output;
    s_text_t text = { malloc (256), 0, 256 };
    s_add_str (&text, "{\"call_id\":");
    s_add_quoted (&text, call->id);
    if (output && !streq (*status, "cancelled")) {
        s_written_t written;
        s_write (call, store, watches, ending, &written);
        if (written.branch >= 0) {
            s_add_str (&text, ",\"branch\":");
            s_add_number (&text, written.branch);
        }
        s_add_str (&text, ",\"written\":[");
        const act_alt_t *alt = written.branch >= 0? &output->alts [written.branch]: NULL;
        for (size_t i = 0; alt && i < alt->nrefs; i++) {
            if (i)
                s_add (&text, ",", 1);
            s_add_quoted (&text, alt->refs [i].text);
        }
        s_add_str (&text, "],\"seqs\":[");
        for (size_t i = 0; i < written.nseqs; i++) {
            if (i)
                s_add (&text, ",", 1);
            s_add_number (&text, written.seqs [i]);
        }
        s_add (&text, "]", 1);
    }
    else
    if (output)
        s_add_str (&text, ",\"written\":[],\"seqs\":[]");
    s_add_str (&text, ",\"status\":");
    s_add_quoted (&text, *status);
    if (*error) {
        char *error_text = act_json_dump (*error);
        s_add_str (&text, ",\"error\":");
        s_add_str (&text, error_text);
        free (error_text);
    }
    s_add_str (&text, ",\"attempts\":");
    s_add_number (&text, call->attempts);
    s_add (&text, "}", 1);
    if (output && streq (*status, "ok") && ending->result_text) {
        char *joined = act_text_splice (text.data, "result", ending->result_text);
        free (text.data);
        text.data = joined;
    }
    return text.data;
}

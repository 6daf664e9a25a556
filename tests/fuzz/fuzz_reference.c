/*  =========================================================================
    fuzz_reference - act_expr_parse in both modes, and what parses resolved
    against a small context.

    The input is the expression text (up to its first NUL). Besides the
    sanitizers, it checks what the header promises (act_ref.h, act_ctx.h):
    - a refused text is bad_reference with a message;
    - a parsed expression has at least one alternative, each with at least
      one reference of a valid kind, no more than ACT_MAX_SEGMENTS
      segments, and "-" segments only in output paths;
    - each reference's text parses again, alone, to the same kind and path
      (act_path_code equal), and overlaps itself;
    - act_ctx_has agrees with act_ctx_get, in the global scope and in an
      instance; act_ctx_resolve gives the value of its first alternative
      whose operands are all present;
    - for output paths, act_ctx_output_check never changes the context.
    A broken promise aborts with the input named.
    ========================================================================= */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act.h"
#include "fuzz_ctx.h"

static act_ctx_t *s_ctx;

#define S_CHECK(cond, text) \
    do { if (!(cond)) { \
        fprintf (stderr, "fuzz_reference: %s broken for '%s'\n", #cond, text); \
        abort (); } } while (0)

static void
s_exit (void)
{
    act_ctx_destroy (&s_ctx);
}

//  The context every expression is resolved against
static void
s_context (void)
{
    s_ctx = act_ctx_new ("fuzz");
    static const char *messages [] = {
        "{\"type\": \"data\", \"kind\": \"state\", \"data\": {\"user\": {\"name\": \"Alex\","
            " \"status\": \"active\"}, \"items\": [{\"title\": \"one\"}, {\"title\": \"two\"}],"
            " \"a.b\": {\"c\": 1}, \"007\": \"bond\", \"0\": \"zero\", \"n\": null}}",
        "{\"type\": \"data\", \"data\": {\"user\": {\"name\": \"Dana\"}, \"list\": [1, 2, 3]}}",
        "{\"type\": \"data\", \"kind\": \"user\", \"data\": {\"name\": \"John\", \"age\": 30}}",
        "{\"type\": \"data\", \"kind\": \"state\", \"_instance\": \"i1\","
            " \"data\": {\"user\": {\"name\": \"Ines\"}, \"extra\": [true]}}",
        "{\"type\": \"data\", \"kind\": \"user\", \"_instance\": \"i1\", \"_outputMethod\": \"set\","
            " \"data\": \"replaced\"}",
        "{\"type\": \"text\", \"text\": \"hello\"}",
    };
    fuzz_ctx_seed (s_ctx, "fuzz_reference", messages, sizeof messages / sizeof messages [0]);
    static const struct { const char *path; const char *value; const char *instance; } outputs [] = {
        { ACT_DAGGER "state.items.-", "{\"title\": \"three\"}", NULL },
        { ACT_DAGGER "state.user.tags", "[\"x\"]", NULL },
        { ACT_DAGGER "data.list.1", "20", "i1" },
        { ACT_DAGGER "state[\"weird key\"].x", "\"w\"", NULL },
    };
    for (size_t i = 0; i < sizeof outputs / sizeof outputs [0]; i++) {
        act_err_t err = { 0 };
        act_expr_t *expr = act_expr_parse (outputs [i].path, true, &err);
        json_t *value = json_loads (outputs [i].value, JSON_DECODE_ANY, NULL);
        json_t *call = json_pack ("{ss}", "_tool", "seed");
        json_t *stored = expr? act_ctx_output (s_ctx, &expr->alts [0], value, ACT_SET,
                                               outputs [i].instance, call, "1", &err): NULL;
        if (!stored) {
            fprintf (stderr, "fuzz_reference: seed output %zu refused: %s\n", i, err.message);
            abort ();
        }
        json_decref (stored);
        json_decref (call);
        json_decref (value);
        act_expr_destroy (&expr);
    }
    atexit (s_exit);
}

static void
s_check_ref (const act_ref_t *ref, bool output, const char *text)
{
    S_CHECK (act_kind_valid (ref->kind), text);
    S_CHECK (ref->nsegs <= ACT_MAX_SEGMENTS, text);
    for (size_t i = 0; i < ref->nsegs; i++) {
        //  Never NULL; empty only when quoted (SEMANTICS 2: [""] is the key "")
        S_CHECK (ref->segs [i].key, text);
        S_CHECK (*ref->segs [i].key || (ref->segs [i].type == ACT_SEG_KEY
                                        && strstr (ref->text, "[\"\"]")), text);
        S_CHECK (output || ref->segs [i].type != ACT_SEG_APPEND, text);
    }
    S_CHECK (act_ref_overlaps (ref, ref), text);
    //  Its own text, alone, is the same reference
    act_err_t err = { 0 };
    act_expr_t *again = act_expr_parse (ref->text, output, &err);
    S_CHECK (again != NULL, text);
    S_CHECK (again->nalts == 1 && again->alts [0].nrefs == 1, text);
    const act_ref_t *same = &again->alts [0].refs [0];
    S_CHECK (strcmp (same->kind, ref->kind) == 0, text);
    char *code = act_path_code (ref->segs, ref->nsegs);
    char *same_code = act_path_code (same->segs, same->nsegs);
    S_CHECK (strcmp (code, same_code) == 0, text);
    free (code);
    free (same_code);
    act_expr_destroy (&again);
}

//  act_ctx_resolve as act_ctx.h describes it, from act_ctx_get
static json_t *
s_resolve_model (const act_expr_t *expr, const char *instance)
{
    for (size_t a = 0; a < expr->nalts; a++) {
        json_t *value = NULL;
        bool present = true;
        for (size_t r = 0; r < expr->alts [a].nrefs && present; r++) {
            json_decref (value);
            value = act_ctx_get (s_ctx, &expr->alts [a].refs [r], instance);
            present = value != NULL;
        }
        if (present)
            return value;
        json_decref (value);
    }
    return NULL;
}

static void
s_check_resolve (const act_expr_t *expr, const char *instance, const char *text)
{
    for (size_t a = 0; a < expr->nalts; a++)
        for (size_t r = 0; r < expr->alts [a].nrefs; r++) {
            const act_ref_t *ref = &expr->alts [a].refs [r];
            json_t *value = act_ctx_get (s_ctx, ref, instance);
            S_CHECK (act_ctx_has (s_ctx, ref, instance) == (value != NULL), text);
            json_t *again = act_ctx_get (s_ctx, ref, instance);
            S_CHECK (json_equal (value, again) || (!value && !again), text);
            json_decref (again);
            json_decref (value);
        }
    json_t *value = act_ctx_resolve (s_ctx, expr, instance);
    json_t *model = s_resolve_model (expr, instance);
    S_CHECK ((!value && !model) || json_equal (value, model), text);
    json_decref (model);
    json_decref (value);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (!s_ctx)
        s_context ();
    char *text = strndup ((const char *) data, size);
    (void) act_ref_is_reference (text);
    (void) act_ref_is_escaped (text);
    for (int mode = 0; mode < 2; mode++) {
        bool output = mode == 1;
        act_err_t err = { 0 };
        act_expr_t *expr = act_expr_parse (text, output, &err);
        if (!expr) {
            S_CHECK (err.code && strcmp (err.code, ACT_E_BAD_REFERENCE) == 0, text);
            S_CHECK (err.message [0] != 0, text);
            continue;
        }
        S_CHECK (expr->nalts >= 1 && expr->output == output, text);
        for (size_t a = 0; a < expr->nalts; a++) {
            S_CHECK (expr->alts [a].nrefs >= 1, text);
            for (size_t r = 0; r < expr->alts [a].nrefs; r++)
                s_check_ref (&expr->alts [a].refs [r], output, text);
        }
        if (!output) {
            s_check_resolve (expr, NULL, text);
            s_check_resolve (expr, "i1", text);
        }
        else {
            //  Dry runs: the context must not change
            json_t *before = act_ctx_view (s_ctx);
            uint64_t seq = act_ctx_next_seq (s_ctx);
            json_t *value = json_pack ("{s[i]}", "v", 1);
            for (size_t a = 0; a < expr->nalts; a++)
                for (int method = ACT_SET; method <= ACT_ERASE; method++) {
                    act_err_t check = { 0 };
                    (void) act_ctx_output_check (s_ctx, &expr->alts [a], value,
                                                 (act_method_t) method, a % 2? "i1": NULL,
                                                 &check);
                }
            json_decref (value);
            json_t *after = act_ctx_view (s_ctx);
            S_CHECK (json_equal (before, after), text);
            S_CHECK (act_ctx_next_seq (s_ctx) == seq, text);
            json_decref (before);
            json_decref (after);
        }
        act_expr_destroy (&expr);
    }
    free (text);
    return 0;
}

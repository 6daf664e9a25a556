/*  =========================================================================
    fuzz_methods - a sequence of writes through act_ctx_output and
    act_ctx_append, in the global scope and in instances, checked against
    the fold of SEMANTICS.md section 4, then the view, and a replay.

    The input is lines (fuzz_common.h: fields split on tabs, $ escapes):

        PATH <tab> METHOD <tab> VALUE [<tab> INSTANCE [<tab> BRANCH]]
            a call's output: VALUE (JSON) written with METHOD (set, merge,
            assign, push, concat, erase) at alternative BRANCH (default 0)
            of the output path PATH, in INSTANCE (empty or absent: global)
        A <tab> MESSAGE
            a client's APPEND of MESSAGE (JSON)
        R <tab> EXPRESSION [<tab> INSTANCE]
            a read, compared with the model

    The model is the fold written plainly: the accepted writes in order,
    folded from absent with act_path_write, skipping writes that no longer
    apply, global writes first, then the instance's. After each write it
    checks that the context accepts exactly the single-target writes that
    apply to the fold (with the same error code when both refuse), and that
    every accepted write applied to the fold at that time. At the end every
    (kind, scope) and every written path must read back as the fold says;
    act_ctx_view's data must be the fold of each identity; act_ctx_view_text
    must render; and a fresh context fed the stored messages through
    act_ctx_replay (a restart) must give the same view and the same reads.
    A broken check aborts, printing the line.
    ========================================================================= */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act.h"
#include "fuzz_common.h"

#define S_MAX_WRITES    256         //  Writes kept by the model
#define S_MAX_EXPRS     256         //  Parsed output paths kept

typedef struct {
    const char *kind;               //  Inside an expression or a message
    const char *instance;           //  NULL: global
    const act_seg_t *segs;          //  Path (NULL for a root write)
    size_t nsegs;
    act_method_t method;
    json_t *value;                  //  Owned
} s_write_t;

static struct {
    s_write_t writes [S_MAX_WRITES];
    size_t nwrites;
    act_expr_t *exprs [S_MAX_EXPRS];    //  Output paths the writes point into
    size_t nexprs;
    json_t *messages;               //  Accepted data messages (own kinds)
    json_t *stored;                 //  Every stored message, for the replay
    json_t *kinds;                  //  Kind names seen (object as a set)
    char *instances [S_MAX_WRITES]; //  Instance names seen (any bytes but NUL)
    size_t ninstances;
    act_ctx_t *ctx;
    fuzz_buf_t fields [5];
    const char *line;               //  For messages
    size_t line_size;
} s;

#define S_CHECK(cond) \
    do { if (!(cond)) { \
        fprintf (stderr, "fuzz_methods: %s broken at line '%.*s'\n", #cond, \
                 (int) s.line_size, s.line); \
        abort (); } } while (0)

static bool
s_streq (const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp (a, b) == 0);
}

//  The model's own copy of an instance name (NULL stays NULL)
static const char *
s_intern (const char *instance)
{
    if (!instance)
        return NULL;
    for (size_t i = 0; i < s.ninstances; i++)
        if (strcmp (s.instances [i], instance) == 0)
            return s.instances [i];
    if (s.ninstances == S_MAX_WRITES)
        return NULL;
    s.instances [s.ninstances] = strdup (instance);
    return s.instances [s.ninstances++];
}

//  The fold of kind in scope instance: a new value, or NULL when absent
static json_t *
s_fold (const char *kind, const char *instance)
{
    json_t *doc = NULL;
    for (int pass = 0; pass < (instance? 2: 1); pass++)
        for (size_t i = 0; i < s.nwrites; i++) {
            s_write_t *write = &s.writes [i];
            if (strcmp (write->kind, kind) != 0
            ||  !s_streq (write->instance, pass? instance: NULL))
                continue;
            act_err_t err = { 0 };
            (void) act_path_write (&doc, write->segs, write->nsegs, write->method,
                                   write->value, false, &err);
        }
    return doc;
}

//  Would the write apply now? 0, or -1 with err
static int
s_model_check (const char *kind, const char *instance, const act_seg_t *segs,
               size_t nsegs, act_method_t method, const json_t *value, act_err_t *err)
{
    json_t *doc = s_fold (kind, instance);
    int rc = act_path_write (&doc, segs, nsegs, method, value, true, err);
    json_decref (doc);
    return rc;
}

static void
s_model_add (const char *kind, const char *instance, const act_seg_t *segs,
             size_t nsegs, act_method_t method, const json_t *value)
{
    if (s.nwrites == S_MAX_WRITES)
        return;
    json_object_set_new (s.kinds, kind, json_true ());
    s.writes [s.nwrites++] = (s_write_t) { kind, s_intern (instance), segs, nsegs, method,
                                           json_deep_copy (value) };
}

static void
s_keep_stored (json_t *messages)
{
    if (json_is_array (messages))
        json_array_extend (s.stored, messages);
    else
        json_array_append (s.stored, messages);
}

//  PATH METHOD VALUE [INSTANCE [BRANCH]]
static void
s_output (size_t nfields)
{
    act_err_t err = { 0 };
    act_method_t method;
    if (act_method_parse (s.fields [1].data, &method))
        return;
    json_t *value = act_json_parse (s.fields [2].data, s.fields [2].size, &err);
    if (!value)
        return;
    const char *instance = nfields > 3 && s.fields [3].size? s.fields [3].data: NULL;
    //  Instances as the broker passes them: from JSON, so UTF-8 (a
    //  stored message cannot carry another one)
    if (instance && (strlen (instance) != s.fields [3].size
                 ||  s.fields [3].size > ACT_MAX_INSTANCE
                 ||  !act_utf8_valid (instance, s.fields [3].size, NULL))) {
        json_decref (value);
        return;
    }
    act_expr_t *expr = act_expr_parse (s.fields [0].data, true, &err);
    if (!expr || s.nexprs == S_MAX_EXPRS || s.nwrites + expr->alts [0].nrefs > S_MAX_WRITES) {
        act_expr_destroy (&expr);
        json_decref (value);
        return;
    }
    s.exprs [s.nexprs++] = expr;
    size_t branch = nfields > 4? (size_t) atoi (s.fields [4].data) % expr->nalts: 0;
    const act_alt_t *alt = &expr->alts [branch];
    //  The model's answer, for one target (a fan-out's targets are checked
    //  together, in an order the model does not fix)
    act_err_t model_err = { 0 };
    int model = alt->nrefs == 1
              ? s_model_check (alt->refs [0].kind, instance, alt->refs [0].segs,
                               alt->refs [0].nsegs, method, value, &model_err)
              : 0;
    char *keep_instance = instance? strdup (instance): NULL;
    json_t *call = json_pack ("{ssss}", "_tool", "fuzz", "_outputPath", expr->text);
    int check = act_ctx_output_check (s.ctx, alt, value, method, keep_instance, &err);
    act_err_t out_err = { 0 };
    json_t *messages = act_ctx_output (s.ctx, alt, value, method, keep_instance, call,
                                       "1", &out_err);
    S_CHECK ((check == 0) == (messages != NULL));
    if (alt->nrefs == 1) {
        S_CHECK ((model == 0) == (messages != NULL));
        if (!messages)
            S_CHECK (s_streq (model_err.code, out_err.code));
    }
    if (messages) {
        S_CHECK (json_array_size (messages) == alt->nrefs);
        for (size_t r = 0; r < alt->nrefs; r++) {
            //  Every target applied to the fold when it was written
            act_err_t now = { 0 };
            S_CHECK (s_model_check (alt->refs [r].kind, keep_instance, alt->refs [r].segs,
                                    alt->refs [r].nsegs, method, value, &now) == 0);
            s_model_add (alt->refs [r].kind, keep_instance, alt->refs [r].segs,
                         alt->refs [r].nsegs, method, value);
        }
        s_keep_stored (messages);
    }
    else
        S_CHECK (out_err.code);
    json_decref (messages);
    json_decref (call);
    json_decref (value);
    free (keep_instance);
}

//  A MESSAGE
static void
s_append (void)
{
    act_err_t err = { 0 };
    json_t *message = act_json_parse (s.fields [1].data, s.fields [1].size, &err);
    if (!message)
        return;
    json_t *stored = act_ctx_append (s.ctx, message, &err);
    const char *type = json_string_value (json_object_get (message, "type"));
    bool data = type && strcmp (type, "data") == 0;
    if (stored) {
        S_CHECK (json_integer_value (json_object_get (stored, "_seq")) > 0);
        if (data && s.nwrites < S_MAX_WRITES) {
            //  The model keeps its own copy: kind, instance and value
            json_t *copy = json_deep_copy (message);
            json_array_append_new (s.messages, copy);
            const char *kind = json_string_value (json_object_get (copy, "kind"));
            const char *instance = json_string_value (json_object_get (copy, "_instance"));
            const char *name = json_string_value (json_object_get (copy, "_outputMethod"));
            act_method_t method = ACT_MERGE;
            if (name)
                S_CHECK (act_method_parse (name, &method) == 0);
            if (!kind)
                kind = "data";
            act_err_t now = { 0 };
            S_CHECK (s_model_check (kind, instance, NULL, 0, method,
                                    json_object_get (copy, "data"), &now) == 0);
            s_model_add (kind, instance, NULL, 0, method, json_object_get (copy, "data"));
        }
        s_keep_stored (stored);
        json_decref (stored);
    }
    else {
        S_CHECK (err.code);
        if (err.code && strcmp (err.code, ACT_E_TYPE_MISMATCH) == 0) {
            //  Refused as a mismatch: the fold must refuse it too
            const char *kind = json_string_value (json_object_get (message, "kind"));
            const char *instance = json_string_value (json_object_get (message, "_instance"));
            const char *name = json_string_value (json_object_get (message, "_outputMethod"));
            act_method_t method = ACT_MERGE;
            if (!name || act_method_parse (name, &method) == 0) {
                act_err_t now = { 0 };
                S_CHECK (s_model_check (kind? kind: "data", instance, NULL, 0, method,
                                        json_object_get (message, "data"), &now) != 0);
            }
        }
    }
    json_decref (message);
}

//  The value of ref in instance, in the model; new reference or NULL
static json_t *
s_model_get (const act_ref_t *ref, const char *instance)
{
    json_t *doc = s_fold (ref->kind, instance);
    json_t *value = act_path_get (doc, ref->segs, ref->nsegs);
    json_incref (value);
    json_decref (doc);
    return value;
}

static void
s_compare (act_ctx_t *ctx, const act_ref_t *ref, const char *instance)
{
    json_t *value = act_ctx_get (ctx, ref, instance);
    json_t *model = s_model_get (ref, instance);
    if (!((!value && !model) || (value && model && json_equal (value, model)))) {
        char *got = value? json_dumps (value, JSON_ENCODE_ANY): strdup ("absent");
        char *want = model? json_dumps (model, JSON_ENCODE_ANY): strdup ("absent");
        char *path = act_path_code (ref->segs, ref->nsegs);
        fprintf (stderr, "fuzz_methods: %s [%s] in %s: context %s, fold %s\n", ref->kind,
                 path, instance? instance: "(global)", got, want);
        free (got);
        free (want);
        free (path);
    }
    S_CHECK ((!value && !model) || (value && model && json_equal (value, model)));
    S_CHECK (act_ctx_has (ctx, ref, instance) == (value != NULL));
    json_decref (value);
    json_decref (model);
}

//  R EXPRESSION [INSTANCE]
static void
s_read (size_t nfields)
{
    act_err_t err = { 0 };
    const char *instance = nfields > 2 && s.fields [2].size? s.fields [2].data: NULL;
    act_expr_t *expr = act_expr_parse (s.fields [1].data, false, &err);
    if (!expr)
        return;
    json_t *model = NULL;
    for (size_t a = 0; a < expr->nalts && !model; a++)
        for (size_t r = 0; r < expr->alts [a].nrefs; r++) {
            json_decref (model);
            model = s_model_get (&expr->alts [a].refs [r], instance);
            s_compare (s.ctx, &expr->alts [a].refs [r], instance);
            if (!model)
                break;
        }
    json_t *value = act_ctx_resolve (s.ctx, expr, instance);
    S_CHECK ((!value && !model) || (value && model && json_equal (value, model)));
    json_decref (value);
    json_decref (model);
    act_expr_destroy (&expr);
}

static void
s_line (const char *line, size_t size, void *arg)
{
    s.line = line;
    s.line_size = size;
    size_t nfields = 0;
    const char *field;
    size_t field_size;
    while (nfields < 5 && fuzz_field (line, size, nfields, &field, &field_size)) {
        fuzz_field_decode (field, field_size, &s.fields [nfields], 0, NULL, NULL);
        nfields++;
    }
    if (nfields >= 2 && strcmp (s.fields [0].data, "A") == 0)
        s_append ();
    else
    if (nfields >= 2 && strcmp (s.fields [0].data, "R") == 0)
        s_read (nfields);
    else
    if (nfields >= 3)
        s_output (nfields);
}

//  Every kind in every scope, and every written path (up to its first "-")
static void
s_compare_all (act_ctx_t *ctx)
{
    const char *kind;
    json_t *unused;
    json_object_foreach (s.kinds, kind, unused) {
        act_ref_t root = { (char *) kind, NULL, 0, (char *) "", 0 };
        s_compare (ctx, &root, NULL);
        for (size_t i = 0; i < s.ninstances; i++)
            s_compare (ctx, &root, s.instances [i]);
    }
    for (size_t i = 0; i < s.nwrites; i++) {
        s_write_t *write = &s.writes [i];
        size_t depth = 0;
        while (depth < write->nsegs && write->segs [depth].type != ACT_SEG_APPEND)
            depth++;
        for (size_t d = 1; d <= depth; d++) {
            act_ref_t ref = { (char *) write->kind, (act_seg_t *) write->segs, d, (char *) "", 0 };
            s_compare (ctx, &ref, NULL);
            if (write->instance)
                s_compare (ctx, &ref, write->instance);
        }
    }
}

//  The view's data is the fold of each identity
static void
s_check_view (json_t *view)
{
    size_t index;
    json_t *entry;
    json_array_foreach (view, index, entry) {
        const char *kind = json_string_value (json_object_get (entry, "kind"));
        const char *instance = json_string_value (json_object_get (entry, "_instance"));
        S_CHECK (kind);
        S_CHECK (!json_object_get (entry, "_seq") && !json_object_get (entry, "_outputPath"));
        json_t *model = s_fold (kind, instance);
        json_t *data = json_object_get (entry, "data");
        if (model)
            S_CHECK (data && json_equal (data, model));
        json_decref (model);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    s.ctx = act_ctx_new ("fuzz");
    s.messages = json_array ();
    s.stored = json_array ();
    s.kinds = json_object ();
    fuzz_lines (data, size, s_line, NULL);
    s.line = "(end)";
    s.line_size = 5;

    s_compare_all (s.ctx);
    json_t *view = act_ctx_view (s.ctx);
    s_check_view (view);
    char *text = act_ctx_view_text (s.ctx);
    S_CHECK (text != NULL);
    free (text);

    //  A restart: the stored messages replayed give the same context
    act_ctx_t *again = act_ctx_new ("fuzz");
    size_t index;
    json_t *message;
    json_array_foreach (s.stored, index, message) {
        act_err_t err = { 0 };
        int rc = act_ctx_replay (again, message, &err);
        if (rc)
            fprintf (stderr, "fuzz_methods: replay of stored message %zu refused: %s\n",
                     index, err.message);
        S_CHECK (rc == 0);
    }
    json_t *view_again = act_ctx_view (again);
    S_CHECK (json_equal (view, view_again));
    s_compare_all (again);
    S_CHECK (act_ctx_next_seq (again) == act_ctx_next_seq (s.ctx));
    json_decref (view_again);
    json_decref (view);
    act_ctx_destroy (&again);

    for (size_t i = 0; i < s.nwrites; i++)
        json_decref (s.writes [i].value);
    s.nwrites = 0;
    for (size_t i = 0; i < s.nexprs; i++)
        act_expr_destroy (&s.exprs [i]);
    s.nexprs = 0;
    json_decref (s.messages);
    json_decref (s.stored);
    json_decref (s.kinds);
    for (size_t i = 0; i < s.ninstances; i++)
        free (s.instances [i]);
    s.ninstances = 0;
    act_ctx_destroy (&s.ctx);
    for (int i = 0; i < 5; i++)
        fuzz_buf_free (&s.fields [i]);
    return 0;
}

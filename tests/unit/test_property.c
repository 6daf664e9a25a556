/*  =========================================================================
    test_property - random sequences of writes against a naive model.

    SEMANTICS.md section 4 defines a context's value as a fold: from
    absent, apply every global write of the kind in _seq order, then every
    write of the instance, skipping writes that no longer apply. The model
    is that sentence written out plainly: it keeps the accepted writes and
    folds them from scratch (below), with its own path walk and its own
    merge patch (property_model.h: nothing from libactd), and says which
    writes apply. The library, which keeps an index instead of folding,
    must accept and refuse the same writes with the same codes, and read
    back the same value at every path touched so far, in every scope.

    A failing sequence is shrunk (ops removed while it still fails) and
    printed with its seed; the run goes on and fails at the end. To replay
    one sequence: ACTD_PROPERTY_SEED=<seed> ACTD_PROPERTY_SEQUENCES=1.

    The ops are drawn from a seed by property_gen.h. The model itself is
    checked on the decisions it encodes in test_property_model.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <czmq.h>
#include <jansson.h>
#include "actd/act.h"
#include "property_model.h"
#include "property_gen.h"

#define S_SEED          0x5EEDAC7DULL   //  Default base seed
#define S_SEQUENCES     1500            //  Default number of sequences (the
                                        //  run stays under 20 s with ASan)
#define S_HEAVY         300             //  The same, assign heavy (twice
                                        //  the writes: about as long a run)
#define S_MAX_WRITES    40              //  Writes per sequence: 1 to this
#define S_MAX_TOUCHED   512             //  Distinct read paths per sequence
#define S_REPORTED      10              //  Failing sequences shown, shrunk

//  --------------------------------------------------------------------------
//  The model's list of accepted writes

typedef struct {
    const s_op_t **writes;      //  Accepted ops, in _seq order
    size_t nwrites;             //  How many
    json_t *folds [S_KINDS][S_SCOPES];  //  Cache of s_model_fold
} s_model_t;

//  The fold of SEMANTICS 4, from scratch: absent, then every global write
//  of kind in order, then every write of the instance, each skipped when
//  it does not apply
static json_t *
s_model_fold (const s_model_t *self, int kind, int scope)
{
    json_t *doc = NULL;
    for (int pass = 0; pass < (scope? 2: 1); pass++) {
        int wanted = pass == 0? 0: scope;
        for (size_t i = 0; i < self->nwrites; i++) {
            const s_op_t *op = self->writes [i];
            if (op->kind != kind || op->scope != wanted)
                continue;
            json_t *next = NULL;
            if (s_model_apply (doc, op->path.segs, op->path.depth, op->method,
                               op->value, &next) == NULL) {
                json_decref (doc);
                doc = next;
            }
        }
    }
    return doc;
}

//  Recompute the cached folds a new write of (kind, scope) changes
static void
s_model_refold (s_model_t *self, int kind, int scope)
{
    for (int other = 0; other < S_SCOPES; other++)
        if (scope == 0 || other == scope) {
            json_decref (self->folds [kind][other]);
            self->folds [kind][other] = s_model_fold (self, kind, other);
        }
}


//  --------------------------------------------------------------------------
//  Running a sequence against the library

//  How outputs are written and read back (test_text_writes_match_naive_fold)
static bool s_text_outputs;     //  act_ctx_output_text, the value as JSON text
static bool s_read_seldom;      //  Read back every 7th op and at the end only,
                                //  so that values kept as text meet later writes

//  What a run found first, for the report
typedef struct {
    size_t step;                //  Index of the op after which it failed
    char detail [1024];
} s_failure_t;

static bool
s_failed (s_failure_t *failure, size_t step, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

static bool
s_failed (s_failure_t *failure, size_t step, const char *format, ...)
{
    failure->step = step;
    va_list args;
    va_start (args, format);
    vsnprintf (failure->detail, sizeof failure->detail, format, args);
    va_end (args);
    return false;
}

//  The library's value at a read path (key and index segments only)
static json_t *
s_library_get (act_ctx_t *ctx, const m_path_t *path, const char *instance)
{
    act_seg_t segs [S_MAX_READ];
    for (size_t i = 0; i < path->depth; i++) {
        segs [i].type = path->segs [i].type == M_INDEX? ACT_SEG_INDEX: ACT_SEG_KEY;
        segs [i].key = (char *) path->segs [i].text;
        segs [i].index = path->segs [i].index;
    }
    //  The reference as act_expr_parse would give it, but for its text
    //  (which only error messages use): reads are the hot loop here
    act_ref_t ref;
    ref.kind = (char *) s_kinds [path->kind];
    ref.segs = segs;
    ref.nsegs = path->depth;
    ref.text = (char *) "(read by the property test)";
    ref.offset = 0;
    return act_ctx_get (ctx, &ref, instance);
}

//  The read paths to check: every path touched so far and its prefixes
typedef struct {
    m_path_t paths [S_MAX_TOUCHED];
    size_t count;
} s_touched_t;

static void
s_touch (s_touched_t *self, const m_path_t *path)
{
    for (size_t i = 0; i < self->count; i++)
        if (s_path_equal (&self->paths [i], path))
            return;
    assert_true (self->count < S_MAX_TOUCHED);
    self->paths [self->count++] = *path;
}

//  Touch a written path's prefixes, up to its first "-" (whose position
//  is not a read path: the nodes of the model's documents cover it)
static void
s_touch_written (s_touched_t *self, const m_path_t *path)
{
    m_path_t prefix = *path;
    for (size_t depth = 0; depth <= path->depth; depth++) {
        if (depth > 0 && path->segs [depth - 1].type == M_APPEND)
            break;
        prefix.depth = depth;
        s_touch (self, &prefix);
    }
}

//  Compare the library with the model at one path in one scope
static bool
s_check_path (act_ctx_t *ctx, s_model_t *model, const m_path_t *path, int scope,
              size_t step, s_failure_t *failure)
{
    const json_t *want = s_model_read (model->folds [path->kind][scope],
                                       path->segs, path->depth);
    json_t *got = s_library_get (ctx, path, s_instances [scope]);
    bool same = (!want && !got) || (want && got && json_equal ((json_t *) want, got));
    if (!same) {
        char text [512];
        s_path_text (path, false, text, sizeof text);
        char *want_text = want? json_dumps (want, JSON_ENCODE_ANY | JSON_COMPACT): NULL;
        char *got_text = got? json_dumps (got, JSON_ENCODE_ANY | JSON_COMPACT): NULL;
        char *doc_text = model->folds [path->kind][scope]
            ? json_dumps (model->folds [path->kind][scope], JSON_ENCODE_ANY | JSON_COMPACT)
            : NULL;
        s_failed (failure, step, "act_ctx_get %s in %s%s: got %s, model %s "
                  "(model document of the scope: %s)", text,
                  scope? "instance ": "the global scope", scope? s_instances [scope]: "",
                  got_text? got_text: "absent", want_text? want_text: "absent",
                  doc_text? doc_text: "absent");
        free (want_text);
        free (got_text);
        free (doc_text);
    }
    json_decref (got);
    return same;
}

//  Compare every node of a model document (so that appended elements are
//  read too)
static bool
s_check_nodes (act_ctx_t *ctx, s_model_t *model, const json_t *node, m_path_t *path,
               int scope, size_t step, s_failure_t *failure)
{
    if (!s_check_path (ctx, model, path, scope, step, failure))
        return false;
    if (path->depth == S_MAX_READ)
        return true;
    if (json_is_array (node)) {
        size_t index;
        json_t *member;
        json_array_foreach ((json_t *) node, index, member) {
            path->segs [path->depth++] = s_seg_index (index);
            bool ok = s_check_nodes (ctx, model, member, path, scope, step, failure);
            path->depth--;
            if (!ok)
                return false;
        }
    }
    else
    if (json_is_object (node)) {
        const char *key;
        json_t *member;
        json_object_foreach ((json_t *) node, key, member) {
            //  Keys are "a".."c", or indices written on objects
            char *end;
            unsigned long number = strtoul (key, &end, 10);
            path->segs [path->depth++] = *key >= '0' && *key <= '9' && *end == 0
                                       ? s_seg_index (number): s_seg_key (key);
            bool ok = s_check_nodes (ctx, model, member, path, scope, step, failure);
            path->depth--;
            if (!ok)
                return false;
        }
    }
    return true;
}

//  Append op to the library as a message (with its kind, method and
//  instance as it says); the stored message, or NULL with err set
static json_t *
s_library_append (act_ctx_t *ctx, const s_op_t *op, const char *instance, act_err_t *err)
{
    json_t *message = json_pack ("{s:s, s:O}", "type", "data", "data", op->value);
    if (op->explicit_kind)
        json_object_set_new (message, "kind", json_string (s_kinds [op->kind]));
    if (op->explicit_method)
        json_object_set_new (message, "_outputMethod",
                             json_string (act_method_name (op->method)));
    if (instance)
        json_object_set_new (message, "_instance", json_string (instance));
    json_t *stored = act_ctx_append (ctx, message, err);
    json_decref (message);
    return stored;
}

//  Write op's value to the library as JSON text (act_ctx_output_text) at
//  expr; the stored texts as the messages, for s_run_op's checks, or NULL
//  with err set
static json_t *
s_library_output_text (act_ctx_t *ctx, act_expr_t *expr, const s_op_t *op,
                       const char *instance, act_err_t *err)
{
    char *value = json_dumps (op->value, JSON_ENCODE_ANY | JSON_COMPACT);
    uint64_t first_seq;
    char **texts = act_ctx_output_text (ctx, &expr->alts [0], value, strlen (value),
                                        op->method, instance, NULL, "call-1",
                                        &first_seq, err);
    free (value);
    json_t *stored = NULL;
    if (texts) {
        stored = json_array ();
        for (size_t i = 0; texts [i]; i++) {
            json_array_append_new (stored, json_loads (texts [i], 0, NULL));
            free (texts [i]);
        }
        free (texts);
    }
    return stored;
}

//  Apply one op to the library and to the model; false (with failure set)
//  when they disagree
static bool
s_run_op (act_ctx_t *ctx, s_model_t *model, const s_op_t *op, size_t step,
          s_failure_t *failure)
{
    //  The model decides against the current fold of the op's scope
    json_t *next = NULL;
    const char *want = s_model_apply (model->folds [op->kind][op->scope],
                                      op->path.segs, op->path.depth,
                                      op->method, op->value, &next);
    json_decref (next);

    uint64_t seq = act_ctx_next_seq (ctx);
    act_err_t err = { NULL, "" };
    json_t *stored = NULL;
    const char *instance = s_instances [op->scope];
    if (op->append)
        stored = s_library_append (ctx, op, instance, &err);
    else {
        char text [256];
        s_path_text (&op->path, op->dotted, text, sizeof text);
        act_expr_t *expr = act_expr_parse (text, true, &err);
        if (!expr)
            return s_failed (failure, step, "output path \"%s\" refused: %s: %s",
                             text, err.code? err.code: "(no code)", err.message);
        json_t *call = json_pack ("{s:s, s:s, s:s}", "_tool", "property",
                                  "_outputPath", text,
                                  "_outputMethod", act_method_name (op->method));
        if (instance)
            json_object_set_new (call, "_instance", json_string (instance));
        if (s_text_outputs)
            stored = s_library_output_text (ctx, expr, op, instance, &err);
        else
            stored = act_ctx_output (ctx, &expr->alts [0], op->value, op->method,
                                     instance, call, "call-1", &err);
        json_decref (call);
        act_expr_destroy (&expr);
        if (stored && json_array_size (stored) != 1) {
            json_decref (stored);
            return s_failed (failure, step, "output returned %zu messages, not 1",
                             json_array_size (stored));
        }
    }
    bool accepted = stored != NULL;
    json_decref (stored);

    if (!want && !accepted)
        return s_failed (failure, step, "library refused (%s: %s), model accepted",
                         err.code? err.code: "(no code)", err.message);
    if (want && accepted)
        return s_failed (failure, step, "library accepted, model refused with %s", want);
    if (want && (!err.code || strcmp (err.code, want) != 0))
        return s_failed (failure, step, "library refused with %s (%s), model with %s",
                         err.code? err.code: "(no code)", err.message, want);
    if (act_ctx_next_seq (ctx) != seq + (accepted? 1: 0))
        return s_failed (failure, step, "next_seq went from %llu to %llu",
                         (unsigned long long) seq,
                         (unsigned long long) act_ctx_next_seq (ctx));
    if (accepted) {
        model->writes [model->nwrites++] = op;
        s_model_refold (model, op->kind, op->scope);
    }
    return true;
}

//  Run a sequence of ops on a fresh context, checking after every op.
//  Returns true when the library and the model agree throughout.
static bool
s_run_sequence (const s_op_t *ops, size_t nops, s_failure_t *failure)
{
    act_ctx_t *ctx = act_ctx_new ("property");
    assert_non_null (ctx);
    s_model_t model;
    memset (&model, 0, sizeof model);
    model.writes = calloc (nops + 1, sizeof *model.writes);
    assert_non_null (model.writes);
    //  One table for every run: it is large, and runs do not nest
    static s_touched_t s_table;
    s_touched_t *touched = &s_table;
    touched->count = 0;
    for (int kind = 0; kind < S_KINDS; kind++) {
        m_path_t root = { kind, 0, { { M_KEY, "", 0 } } };
        s_touch (touched, &root);
    }

    bool ok = true;
    for (size_t step = 0; step < nops && ok; step++) {
        const s_op_t *op = &ops [step];
        s_touch_written (touched, &op->path);
        ok = s_run_op (ctx, &model, op, step, failure);
        if (s_read_seldom && step % 7 != 6 && step + 1 < nops)
            continue;
        //  Every touched path, in every scope
        for (size_t i = 0; i < touched->count && ok; i++)
            for (int scope = 0; scope < S_SCOPES && ok; scope++)
                ok = s_check_path (ctx, &model, &touched->paths [i], scope,
                                   step, failure);
        //  Every node of the model's documents of the kind written
        for (int scope = 0; scope < S_SCOPES && ok; scope++) {
            m_path_t root = { op->kind, 0, { { M_KEY, "", 0 } } };
            ok = s_check_nodes (ctx, &model, model.folds [op->kind][scope],
                                &root, scope, step, failure);
        }
    }
    for (int kind = 0; kind < S_KINDS; kind++)
        for (int scope = 0; scope < S_SCOPES; scope++)
            json_decref (model.folds [kind][scope]);
    free (model.writes);
    act_ctx_destroy (&ctx);
    return ok;
}

//  Remove ops from a failing sequence while it still fails, so that the
//  report shows a small reproduction. Returns the new count.
static size_t
s_shrink (s_op_t *ops, size_t nops, s_failure_t *failure)
{
    //  Ops after the failing one are not needed
    for (size_t i = failure->step + 1; i < nops; i++)
        json_decref (ops [i].value);
    nops = failure->step + 1;
    bool shrunk = true;
    while (shrunk) {
        shrunk = false;
        for (size_t drop = 0; drop < nops && nops > 1; drop++) {
            s_op_t dropped = ops [drop];
            memmove (ops + drop, ops + drop + 1, (nops - drop - 1) * sizeof *ops);
            s_failure_t trial;
            if (!s_run_sequence (ops, nops - 1, &trial)) {
                json_decref (dropped.value);
                for (size_t i = trial.step + 1; i < nops - 1; i++)
                    json_decref (ops [i].value);
                nops = trial.step + 1;
                *failure = trial;
                shrunk = true;
                break;
            }
            memmove (ops + drop + 1, ops + drop, (nops - drop - 1) * sizeof *ops);
            ops [drop] = dropped;
        }
    }
    return nops;
}

static uint64_t
s_env (const char *name, uint64_t fallback)
{
    const char *text = getenv (name);
    return text && *text? strtoull (text, NULL, 0): fallback;
}

//  SEMANTICS 3 and 4, and the project's decisions where the spec is
//  silent: random writes through act_ctx_output and act_ctx_append, in
//  the global scope and two instances of two kinds, are accepted or
//  refused as the naive fold says, and read back as the fold says at
//  every touched path and every node, in every scope, after every write.
//  The ops are drawn as gen says.
static void
s_writes_match_naive_fold (const s_gen_t *gen)
{
    uint64_t seed = s_env ("ACTD_PROPERTY_SEED", S_SEED);
    uint64_t sequences = s_env ("ACTD_PROPERTY_SEQUENCES",
                                gen->assign_heavy? S_HEAVY: S_SEQUENCES);
    size_t total_ops = 0;
    uint64_t run = 0, failed = 0;
    for (run = 0; run < sequences; run++) {
        uint64_t rng = seed + run;
        size_t nops = 1 + (size_t) s_below (&rng, S_MAX_WRITES * (gen->assign_heavy? 2: 1));
        s_op_t *ops = calloc (nops, sizeof *ops);
        assert_non_null (ops);
        for (size_t i = 0; i < nops; i++)
            s_random_op (&rng, gen, &ops [i]);
        total_ops += nops;
        s_failure_t failure;
        if (!s_run_sequence (ops, nops, &failure)) {
            //  Report the first failing sequences, shrunk, and go on so
            //  that one run shows every kind of failure
            if (failed++ < S_REPORTED) {
                size_t original = nops;
                nops = s_shrink (ops, nops, &failure);
                print_error ("sequence %llu (ACTD_PROPERTY_SEED=%llu "
                             "ACTD_PROPERTY_SEQUENCES=1, %zu ops, shrunk to %zu) fails:\n",
                             (unsigned long long) run,
                             (unsigned long long) (seed + run), original, nops);
                for (size_t i = 0; i < nops; i++) {
                    char line [1024];
                    s_op_describe (&ops [i], line, sizeof line);
                    print_error ("  %zu. %s\n", i + 1, line);
                }
                print_error ("  after op %zu: %s\n", failure.step + 1, failure.detail);
            }
        }
        for (size_t i = 0; i < nops; i++)
            json_decref (ops [i].value);
        free (ops);
    }
    print_message ("%llu sequences, %zu writes, %llu disagree with the model "
                   "(base seed %llu)\n", (unsigned long long) run, total_ops,
                   (unsigned long long) failed, (unsigned long long) seed);
    assert_int_equal (run, sequences);
    if (failed)
        fail_msg ("%llu of %llu sequences disagree with the model",
                  (unsigned long long) failed, (unsigned long long) sequences);
}

//  How a run makes and checks its sequences: the generator's and the
//  runner's flags (a test's prestate)
typedef struct {
    bool text;                  //  s_text_outputs
    bool seldom;                //  s_read_seldom
    s_gen_t gen;                //  How the ops are drawn
} s_mode_t;

//  Every output given as a tree, read back after every write
static s_mode_t s_plain = { false, false, { false, false } };
//  Every output given as JSON text (act_ctx_output_text: a global set or
//  push keeps it as text until read) and reads only now and then, so that
//  such values meet later writes, fan-outs and instance reads before
//  anything parses them: nothing may differ from the fold
static s_mode_t s_text = { true, true, { false, false } };
//  Sequences made for assigns in instances (assign heavy): an assign
//  above a read path replaces the path's part or leaves it alone, and
//  applies only when its level holds an object or nothing when it folds,
//  which a write beside the path can decide
static s_mode_t s_assigns = { false, false, { true, false } };
//  Long strings concatenated and set (long strings), given as text and
//  read seldom: a concat onto a string of 256 bytes or more keeps the
//  pieces (a rope) until something reads them
static s_mode_t s_long = { true, true, { false, true } };

//  The sequences of the mode *state match the naive fold
static void
test_match_naive_fold (void **state)
{
    const s_mode_t *mode = (const s_mode_t *) *state;
    s_text_outputs = mode->text;
    s_read_seldom = mode->seldom;
    s_writes_match_naive_fold (&mode->gen);
    s_text_outputs = s_read_seldom = false;
}

//  A fan-out whose targets overlap is tried on the context and undone
//  before it is applied; the undo must remove exactly the instance it made
//  for the try and leave every other identity alone (a regression: in an
//  NDEBUG build it freed the context's first identity instead)
static void
test_overlapping_fanout_in_new_instance (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("fanout");
    assert_non_null (ctx);
    act_err_t err = { NULL, "" };
    json_t *message = json_pack ("{s:s, s:s, s:{s:s}}", "type", "data", "kind", "user",
                                 "data", "name", "J");
    json_t *stored = act_ctx_append (ctx, message, &err);
    assert_non_null (stored);
    json_decref (stored);
    json_decref (message);

    act_expr_t *expr = act_expr_parse ("\xe2\x80\xa0s.a && \xe2\x80\xa0s.a", true, &err);
    assert_non_null (expr);
    json_t *value = json_pack ("{s:i}", "v", 1);
    stored = act_ctx_output (ctx, &expr->alts [0], value, ACT_SET, "i9", NULL, "call-1", &err);
    assert_non_null (stored);
    assert_int_equal (json_array_size (stored), 2);
    json_decref (stored);
    json_decref (value);
    act_expr_destroy (&expr);

    //  Describing a message walks every identity: none may be stale
    message = json_pack ("{s:s, s:s, s:{s:i}, s:s}", "type", "data", "kind", "user",
                         "data", "age", 3, "description", "d");
    stored = act_ctx_append (ctx, message, &err);
    assert_non_null (stored);
    json_decref (stored);
    json_decref (message);

    const char *checks [][3] = {
        //  reference, instance, expected JSON ("" = no value)
        { "\xe2\x80\xa0s.a.v", "i9", "1" },
        { "\xe2\x80\xa0s.a.v", NULL, "" },
        { "\xe2\x80\xa0user.name", "i9", "\"J\"" },
        { "\xe2\x80\xa0user.age", "i9", "3" },
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks [0]; i++) {
        act_expr_t *read = act_expr_parse (checks [i][0], false, &err);
        assert_non_null (read);
        json_t *got = act_ctx_get (ctx, &read->alts [0].refs [0], checks [i][1]);
        if (*checks [i][2]) {
            assert_non_null (got);
            char *text = json_dumps (got, JSON_ENCODE_ANY);
            assert_string_equal (text, checks [i][2]);
            free (text);
        }
        else
            assert_null (got);
        json_decref (got);
        act_expr_destroy (&read);
    }
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        { "test_writes_match_naive_fold", test_match_naive_fold, NULL, NULL, &s_plain },
        { "test_text_writes_match_naive_fold", test_match_naive_fold, NULL, NULL, &s_text },
        { "test_instance_assigns_match_naive_fold", test_match_naive_fold, NULL, NULL,
          &s_assigns },
        { "test_long_concats_match_naive_fold", test_match_naive_fold, NULL, NULL, &s_long },
        cmocka_unit_test (test_overlapping_fanout_in_new_instance),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

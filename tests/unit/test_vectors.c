/*  =========================================================================
    test_vectors - the spec's test vectors (SEMANTICS.md, vectors/README.md).

    Every case of tests/vectors/references.json and resolve.json is run and
    checked; a failing case is reported by name and the test goes on, so
    one run lists every failing case. The project's copy of the vectors
    must be the master's (../shared/spec/vectors/) byte for byte.

    tests/vectors/local/ holds cases, in the same formats, that the master
    does not have yet (its README says which); they are run the same way.
    That folder is actd's own: the copy check compares only the master's
    files, so local/ is never compared, and nothing is ever added to the
    copied files themselves.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <dirent.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"

#define S_VECTORS_DIR   ACTD_SOURCE_DIR "/tests/vectors"
#define S_MASTER_DIR    ACTD_SOURCE_DIR "/../shared/spec/vectors"
#define S_LOCAL_DIR     S_VECTORS_DIR "/local"

//  One vector case being run: its name, and how many checks failed in it
typedef struct {
    char name [256];
    int failures;
} s_case_t;

//  Report one failed check of a case, by the case's name
static void
s_case_fail (s_case_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));

static void
s_case_fail (s_case_t *self, const char *format, ...)
{
    char detail [1024];
    va_list args;
    va_start (args, format);
    vsnprintf (detail, sizeof detail, format, args);
    va_end (args);
    print_error ("FAIL [%s]: %s\n", self->name, detail);
    self->failures++;
}

static const char *
s_code (const act_err_t *err)
{
    return err->code? err->code: "(no code)";
}

//  Compact text of a value for messages; "absent" for NULL. Caller frees.
static char *
s_text (const json_t *value)
{
    if (!value)
        return strdup ("absent");
    char *text = json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT);
    return text? text: strdup ("?");
}

//  Equal values, where both absent counts as equal
static bool
s_same (const json_t *left, const json_t *right)
{
    if (!left || !right)
        return left == right;
    return json_equal ((json_t *) left, (json_t *) right);
}

static json_t *
s_load (const char *path)
{
    json_error_t error;
    json_t *cases = json_load_file (path, JSON_REJECT_DUPLICATES, &error);
    if (!cases)
        fail_msg ("cannot load %s: %s (line %d)", path, error.text, error.line);
    assert_true (json_is_array (cases));
    assert_true (json_array_size (cases) > 0);
    return cases;
}


//  --------------------------------------------------------------------------
//  references.json

//  Check one parsed reference against a vector operand {"kind", "path"}
static void
s_check_ref (s_case_t *vc, size_t alt, size_t op, const act_ref_t *ref,
             const json_t *want)
{
    const char *kind = json_string_value (json_object_get (want, "kind"));
    const json_t *path = json_object_get (want, "path");
    if (!kind || !json_is_array (path)) {
        s_case_fail (vc, "alternative %zu operand %zu: malformed vector", alt, op);
        return;
    }
    if (!ref->kind || strcmp (ref->kind, kind) != 0)
        s_case_fail (vc, "alternative %zu operand %zu: kind '%s', expected '%s'",
                     alt, op, ref->kind? ref->kind: "(null)", kind);
    if (ref->nsegs != json_array_size (path)) {
        s_case_fail (vc, "alternative %zu operand %zu: %zu segments, expected %zu",
                     alt, op, ref->nsegs, json_array_size (path));
        return;
    }
    for (size_t i = 0; i < ref->nsegs; i++) {
        const act_seg_t *seg = &ref->segs [i];
        const json_t *expected = json_array_get (path, i);
        const char *key = seg->key? seg->key: "(null)";
        if (json_is_integer (expected)) {
            //  An integer is an index; its key is its decimal text
            char decimal [32];
            snprintf (decimal, sizeof decimal, "%lld",
                      (long long) json_integer_value (expected));
            if (seg->type != ACT_SEG_INDEX
            ||  seg->index != (size_t) json_integer_value (expected)
            ||  strcmp (key, decimal) != 0)
                s_case_fail (vc, "alternative %zu operand %zu segment %zu: "
                             "type %d index %zu key '%s', expected index %s",
                             alt, op, i, (int) seg->type, seg->index, key, decimal);
        }
        else
        if (json_is_string (expected)
        &&  strcmp (json_string_value (expected), "-") == 0) {
            if (seg->type != ACT_SEG_APPEND)
                s_case_fail (vc, "alternative %zu operand %zu segment %zu: "
                             "type %d key '%s', expected the append position",
                             alt, op, i, (int) seg->type, key);
        }
        else
        if (json_is_string (expected)) {
            if (seg->type != ACT_SEG_KEY
            ||  strcmp (key, json_string_value (expected)) != 0)
                s_case_fail (vc, "alternative %zu operand %zu segment %zu: "
                             "type %d key '%s', expected key '%s'",
                             alt, op, i, (int) seg->type, key,
                             json_string_value (expected));
        }
        else
            s_case_fail (vc, "segment %zu: malformed vector", i);
    }
}

//  Run one case of references.json
static void
s_run_reference_case (s_case_t *vc, const json_t *item)
{
    const char *text = json_string_value (json_object_get (item, "expr"));
    const json_t *output = json_object_get (item, "output");
    const json_t *ok = json_object_get (item, "ok");
    if (!text || !json_is_boolean (output) || !json_is_boolean (ok)) {
        s_case_fail (vc, "malformed vector");
        return;
    }
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (text, json_is_true (output), &err);
    if (json_is_false (ok)) {
        //  SEMANTICS 2: a string that does not parse is bad_reference,
        //  with the byte offset named
        if (expr)
            s_case_fail (vc, "parsed, expected bad_reference");
        else
        if (strcmp (s_code (&err), ACT_E_BAD_REFERENCE) != 0)
            s_case_fail (vc, "error %s, expected bad_reference", s_code (&err));
        else
        if (!strstr (err.message, "byte"))
            s_case_fail (vc, "message '%s' names no byte offset", err.message);
        act_expr_destroy (&expr);
        return;
    }
    if (!expr) {
        s_case_fail (vc, "refused (%s: %s), expected to parse",
                     s_code (&err), err.message);
        return;
    }
    const json_t *alternatives = json_object_get (item, "alternatives");
    if (!json_is_array (alternatives))
        s_case_fail (vc, "malformed vector: no alternatives");
    else
    if (expr->output != json_is_true (output))
        s_case_fail (vc, "expr->output is %d", (int) expr->output);
    else
    if (expr->nalts != json_array_size (alternatives))
        s_case_fail (vc, "%zu alternatives, expected %zu",
                     expr->nalts, json_array_size (alternatives));
    else
        for (size_t alt = 0; alt < expr->nalts; alt++) {
            const json_t *operands = json_array_get (alternatives, alt);
            if (expr->alts [alt].nrefs != json_array_size (operands)) {
                s_case_fail (vc, "alternative %zu: %zu operands, expected %zu",
                             alt, expr->alts [alt].nrefs,
                             json_array_size (operands));
                continue;
            }
            for (size_t op = 0; op < expr->alts [alt].nrefs; op++)
                s_check_ref (vc, alt, op, &expr->alts [alt].refs [op],
                             json_array_get (operands, op));
        }
    act_expr_destroy (&expr);
}

//  One case of a vector file: checks it, reporting failures in vc
typedef void (s_case_fn) (s_case_t *vc, const json_t *item);

//  Run every case of the vector file at path with run; label names the
//  file in reports, and each case is named by its index and its field
//  named (the expression, the name). Fails the test when any case fails.
static void
s_run_file (const char *path, const char *label, const char *named, s_case_fn *run)
{
    json_t *cases = s_load (path);
    size_t visited = 0;
    int failed = 0;
    size_t index;
    json_t *item;
    json_array_foreach (cases, index, item) {
        s_case_t vc = { "", 0 };
        const json_t *output = json_object_get (item, "output");
        snprintf (vc.name, sizeof vc.name, "%s #%zu %s\"%s\"", label, index,
                  !output? "": json_is_true (output)? "output ": "parameter ",
                  json_string_value (json_object_get (item, named)));
        run (&vc, item);
        if (vc.failures)
            failed++;
        visited++;
    }
    print_message ("%s: %zu cases, %d failed\n", label, visited, failed);
    assert_int_equal (visited, json_array_size (cases));
    json_decref (cases);
    assert_int_equal (failed, 0);
}

//  SEMANTICS 2 and 5: every references.json case parses (or is refused)
//  exactly as the vector says.
static void
test_reference_vectors (void **state)
{
    s_run_file (S_VECTORS_DIR "/references.json", "references.json", "expr",
                s_run_reference_case);
}

//  The same for the cases the master does not have yet (local/README.md)
static void
test_local_reference_vectors (void **state)
{
    s_run_file (S_LOCAL_DIR "/references.json", "local/references.json", "expr",
                s_run_reference_case);
}


//  --------------------------------------------------------------------------
//  resolve.json

//  The parsed output path of an op, or NULL (reported) when it does not
//  parse or is not one single reference
static act_expr_t *
s_output_expr (s_case_t *vc, size_t step, const char *text)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (text, true, &err);
    if (!expr)
        s_case_fail (vc, "op %zu: output path \"%s\" refused (%s: %s)",
                     step, text, s_code (&err), err.message);
    else
    if (expr->nalts != 1 || expr->alts [0].nrefs != 1) {
        s_case_fail (vc, "op %zu: output path \"%s\" is not one reference", step, text);
        act_expr_destroy (&expr);
    }
    return expr;
}

//  A snapshot of what a refused write must not change: the value at the
//  written reference, the next _seq and the merged view
typedef struct {
    json_t *value;
    json_t *view;
    uint64_t next_seq;
} s_snapshot_t;

static s_snapshot_t
s_snapshot (act_ctx_t *ctx, const act_ref_t *ref, const char *instance)
{
    s_snapshot_t snapshot;
    snapshot.value = act_ctx_get (ctx, ref, instance);
    snapshot.view = act_ctx_view (ctx);
    snapshot.next_seq = act_ctx_next_seq (ctx);
    return snapshot;
}

static void
s_snapshot_check (s_case_t *vc, size_t step, s_snapshot_t *before,
                  act_ctx_t *ctx, const act_ref_t *ref, const char *instance)
{
    s_snapshot_t after = s_snapshot (ctx, ref, instance);
    if (!s_same (before->value, after.value)) {
        char *was = s_text (before->value), *now = s_text (after.value);
        s_case_fail (vc, "op %zu: refused write changed %s from %s to %s",
                     step, ref->text? ref->text: "the target", was, now);
        free (was);
        free (now);
    }
    if (!s_same (before->view, after.view))
        s_case_fail (vc, "op %zu: refused write changed the view", step);
    if (before->next_seq != after.next_seq)
        s_case_fail (vc, "op %zu: refused write moved next_seq from %llu to %llu",
                     step, (unsigned long long) before->next_seq,
                     (unsigned long long) after.next_seq);
    json_decref (before->value);
    json_decref (before->view);
    json_decref (after.value);
    json_decref (after.view);
}

//  {"append": {...}}: a client appends a data message
static void
s_op_append (s_case_t *vc, size_t step, act_ctx_t *ctx, const json_t *op)
{
    const json_t *fields = json_object_get (op, "append");
    if (!json_is_object (fields)) {
        s_case_fail (vc, "op %zu: malformed append", step);
        return;
    }
    const char *expect_error = json_string_value (json_object_get (op, "expect_error"));
    if (!expect_error)
        expect_error = json_string_value (json_object_get (fields, "expect_error"));

    json_t *message = json_pack ("{s:s}", "type", "data");
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) fields, key, value)
        if (strcmp (key, "expect_error") != 0)
            json_object_set (message, key, value);

    //  The root of the message's kind, in its scope, tells whether a
    //  refused append changed anything
    const char *kind = json_string_value (json_object_get (fields, "kind"));
    const char *instance = json_string_value (json_object_get (fields, "_instance"));
    char root [300];
    snprintf (root, sizeof root, ACT_DAGGER "%s", kind? kind: "data");
    act_err_t err = { NULL, "" };
    act_expr_t *root_expr = act_expr_parse (root, false, &err);
    if (!root_expr) {
        s_case_fail (vc, "op %zu: \"%s\" refused (%s)", step, root, s_code (&err));
        json_decref (message);
        return;
    }
    const act_ref_t *root_ref = &root_expr->alts [0].refs [0];
    s_snapshot_t before = s_snapshot (ctx, root_ref, instance);
    uint64_t next_seq = before.next_seq;

    json_t *stored = act_ctx_append (ctx, message, &err);
    if (expect_error) {
        if (stored)
            s_case_fail (vc, "op %zu: append accepted, expected %s", step, expect_error);
        else
        if (strcmp (s_code (&err), expect_error) != 0)
            s_case_fail (vc, "op %zu: append refused with %s (%s), expected %s",
                         step, s_code (&err), err.message, expect_error);
        s_snapshot_check (vc, step, &before, ctx, root_ref, instance);
    }
    else {
        if (!stored)
            s_case_fail (vc, "op %zu: append refused (%s: %s)",
                         step, s_code (&err), err.message);
        else
        if (json_integer_value (json_object_get (stored, "_seq")) != (json_int_t) next_seq)
            s_case_fail (vc, "op %zu: stored _seq is not %llu",
                         step, (unsigned long long) next_seq);
        json_decref (before.value);
        json_decref (before.view);
    }
    json_decref (stored);
    json_decref (message);
    act_expr_destroy (&root_expr);
}

//  {"output": "†...", "value", "method"?, "instance"?}: a call's output
static void
s_op_output (s_case_t *vc, size_t step, act_ctx_t *ctx, const json_t *op)
{
    const char *path = json_string_value (json_object_get (op, "output"));
    const json_t *value = json_object_get (op, "value");
    const char *method_name = json_string_value (json_object_get (op, "method"));
    const char *instance = json_string_value (json_object_get (op, "instance"));
    const char *expect_error = json_string_value (json_object_get (op, "expect_error"));
    if (!path || !value) {
        s_case_fail (vc, "op %zu: malformed output", step);
        return;
    }
    act_method_t method = ACT_SET;
    if (method_name && act_method_parse (method_name, &method) != 0) {
        s_case_fail (vc, "op %zu: method '%s' not known", step, method_name);
        return;
    }
    act_expr_t *expr = s_output_expr (vc, step, path);
    if (!expr)
        return;
    //  The call as a client would have submitted it
    json_t *call = json_pack ("{s:s, s:s}", "_tool", "vector", "_outputPath", path);
    if (method_name)
        json_object_set_new (call, "_outputMethod", json_string (method_name));
    if (instance)
        json_object_set_new (call, "_instance", json_string (instance));

    const act_ref_t *ref = &expr->alts [0].refs [0];
    s_snapshot_t before = s_snapshot (ctx, ref, instance);
    act_err_t err = { NULL, "" };
    json_t *stored = act_ctx_output (ctx, &expr->alts [0], value, method,
                                     instance, call, "call-1", &err);
    if (expect_error) {
        if (stored)
            s_case_fail (vc, "op %zu: output accepted, expected %s", step, expect_error);
        else
        if (strcmp (s_code (&err), expect_error) != 0)
            s_case_fail (vc, "op %zu: output refused with %s (%s), expected %s",
                         step, s_code (&err), err.message, expect_error);
        s_snapshot_check (vc, step, &before, ctx, ref, instance);
    }
    else {
        if (!stored)
            s_case_fail (vc, "op %zu: output to %s refused (%s: %s)",
                         step, path, s_code (&err), err.message);
        else
        if (!json_is_array (stored) || json_array_size (stored) != 1)
            s_case_fail (vc, "op %zu: output did not return one message", step);
        json_decref (before.value);
        json_decref (before.view);
    }
    json_decref (stored);
    json_decref (call);
    act_expr_destroy (&expr);
}

//  {"resolve": expr, "instance"?, "value" | "absent": true}
static void
s_op_resolve (s_case_t *vc, size_t step, act_ctx_t *ctx, const json_t *op)
{
    const char *text = json_string_value (json_object_get (op, "resolve"));
    const char *instance = json_string_value (json_object_get (op, "instance"));
    const json_t *want = json_object_get (op, "value");
    bool absent = json_is_true (json_object_get (op, "absent"));
    if (!text || (!want && !absent) || (want && absent)) {
        s_case_fail (vc, "op %zu: malformed resolve", step);
        return;
    }
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (text, false, &err);
    if (!expr) {
        s_case_fail (vc, "op %zu: \"%s\" refused (%s: %s)",
                     step, text, s_code (&err), err.message);
        return;
    }
    json_t *got = act_ctx_resolve (ctx, expr, instance);
    if (!s_same (got, absent? NULL: want)) {
        char *got_text = s_text (got), *want_text = s_text (absent? NULL: want);
        s_case_fail (vc, "op %zu: %s%s%s resolved to %s, expected %s", step, text,
                     instance? " in instance ": "", instance? instance: "",
                     got_text, want_text);
        free (got_text);
        free (want_text);
    }
    json_decref (got);
    act_expr_destroy (&expr);
}

//  Run one case of resolve.json on a fresh context
static void
s_run_resolve_case (s_case_t *vc, const json_t *item)
{
    const json_t *ops = json_object_get (item, "ops");
    if (!json_is_array (ops)) {
        s_case_fail (vc, "malformed vector: no ops");
        return;
    }
    act_ctx_t *ctx = act_ctx_new ("t");
    if (!ctx) {
        s_case_fail (vc, "act_ctx_new (\"t\") failed");
        return;
    }
    size_t step;
    json_t *op;
    json_array_foreach (ops, step, op) {
        if (json_object_get (op, "append"))
            s_op_append (vc, step, ctx, op);
        else
        if (json_object_get (op, "output"))
            s_op_output (vc, step, ctx, op);
        else
        if (json_object_get (op, "resolve"))
            s_op_resolve (vc, step, ctx, op);
        else
            s_case_fail (vc, "op %zu: unknown operation", step);
    }
    act_ctx_destroy (&ctx);
    if (ctx)
        s_case_fail (vc, "act_ctx_destroy did not null the pointer");
}

//  SEMANTICS 3 and 4: every resolve.json case resolves exactly as the
//  vector says, and refused writes change nothing.
static void
test_resolve_vectors (void **state)
{
    s_run_file (S_VECTORS_DIR "/resolve.json", "resolve.json", "name", s_run_resolve_case);
}

//  The same for the cases the master does not have yet (local/README.md)
static void
test_local_resolve_vectors (void **state)
{
    s_run_file (S_LOCAL_DIR "/resolve.json", "local/resolve.json", "name", s_run_resolve_case);
}


//  --------------------------------------------------------------------------
//  The copy of the vectors

//  Read a whole file; returns a buffer the caller frees, or NULL
static char *
s_slurp (const char *path, size_t *size)
{
    FILE *file = fopen (path, "rb");
    if (!file)
        return NULL;
    size_t capacity = 4096, used = 0;
    char *buffer = malloc (capacity);
    assert_non_null (buffer);
    size_t got;
    while ((got = fread (buffer + used, 1, capacity - used, file)) > 0) {
        used += got;
        if (used == capacity) {
            capacity *= 2;
            buffer = realloc (buffer, capacity);
            assert_non_null (buffer);
        }
    }
    fclose (file);
    *size = used;
    return buffer;
}

//  vectors/README.md: the project's copy must be the master's, byte for
//  byte, for every file of the master folder (which may grow). Only the
//  master's regular files are compared: tests/vectors/local/ (actd's own
//  cases) is not the master's and is left out, even were the master to
//  have a folder of that name.
static void
test_vectors_match_master (void **state)
{
    DIR *dir = opendir (S_MASTER_DIR);
    if (!dir) {
        //  Reported as skipped, not passed: nothing was compared
        print_message ("master copy of the vectors is not present (%s): "
                       "nothing to compare\n", S_MASTER_DIR);
        skip ();
    }
    int compared = 0, failed = 0;
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        if (entry->d_name [0] == '.')
            continue;
        char master [1024], copy [1024];
        snprintf (master, sizeof master, "%s/%s", S_MASTER_DIR, entry->d_name);
        snprintf (copy, sizeof copy, "%s/%s", S_VECTORS_DIR, entry->d_name);
        struct stat info;
        if (stat (master, &info) != 0 || !S_ISREG (info.st_mode))
            continue;
        size_t master_size = 0, copy_size = 0;
        char *master_bytes = s_slurp (master, &master_size);
        char *copy_bytes = s_slurp (copy, &copy_size);
        if (!master_bytes) {
            print_error ("cannot read %s\n", master);
            failed++;
        }
        else
        if (!copy_bytes) {
            print_error ("%s is in the master folder but missing from "
                         "tests/vectors/\n", entry->d_name);
            failed++;
        }
        else {
            size_t common = master_size < copy_size? master_size: copy_size;
            size_t at = 0;
            while (at < common && master_bytes [at] == copy_bytes [at])
                at++;
            if (at < common || master_size != copy_size) {
                print_error ("tests/vectors/%s differs from the master "
                             "(%zu and %zu bytes, first difference at byte %zu): "
                             "copy %s over it\n", entry->d_name,
                             copy_size, master_size, at, master);
                failed++;
            }
        }
        free (master_bytes);
        free (copy_bytes);
        compared++;
    }
    closedir (dir);
    print_message ("compared %d files with the master copy\n", compared);
    assert_true (compared > 0);
    assert_int_equal (failed, 0);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_reference_vectors),
        cmocka_unit_test (test_resolve_vectors),
        cmocka_unit_test (test_local_reference_vectors),
        cmocka_unit_test (test_local_resolve_vectors),
        cmocka_unit_test (test_vectors_match_master),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

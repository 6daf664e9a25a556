/*  =========================================================================
    test_ctx_lazy - outputs given as JSON text (act_ctx_output_text): a
    global set or push keeps the text in the index and parses it when
    something needs it. Each case runs the same writes on two contexts, one given
    trees (act_ctx_output), one given text, and requires the same verdicts,
    error codes and messages, reads and merged view from both.
    (test_property runs random sequences the same way against its model.)
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "actd/act.h"
#include "json_count.h"

#define DAGGER "\xe2\x80\xa0"

//  One write: an output path, a method, the value's text, a scope
typedef struct {
    const char *path;           //  Output path, alternatives and fan-outs
    const char *method;         //  set, merge, push, ...
    const char *value;          //  The value as JSON text
    const char *instance;       //  NULL: global
} s_write_t;

//  The two contexts of a case
typedef struct {
    act_ctx_t *tree;            //  Given values as trees
    act_ctx_t *text;            //  Given values as text
} s_twins_t;

static s_twins_t
s_twins_new (void)
{
    s_twins_t twins = { act_ctx_new ("tree"), act_ctx_new ("text") };
    assert_non_null (twins.tree);
    assert_non_null (twins.text);
    return twins;
}

static void
s_twins_destroy (s_twins_t *twins)
{
    act_ctx_destroy (&twins->tree);
    act_ctx_destroy (&twins->text);
}

//  Apply write to both; both accept it or both refuse it with the same
//  code and message. Returns whether it was accepted
static bool
s_write (s_twins_t *twins, const s_write_t *write)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (write->path, true, &err);
    assert_non_null (expr);
    act_method_t method;
    assert_int_equal (act_method_parse (write->method, &method), 0);
    json_t *value = act_json_parse (write->value, strlen (write->value), &err);
    assert_non_null (value);

    act_err_t tree_err = { NULL, "" };
    json_t *tree = act_ctx_output (twins->tree, &expr->alts [0], value, method,
                                   write->instance, NULL, "c1", &tree_err);
    act_err_t text_err = { NULL, "" };
    uint64_t first_seq = 0;
    const char *call_text = "{\"_tool\":\"t\",\"q\":\"caf\u00e9\"}";
    char **text = act_ctx_output_text (twins->text, &expr->alts [0], write->value,
                                       strlen (write->value), method, write->instance,
                                       call_text, "c1", &first_seq, &text_err);
    assert_int_equal (!tree, !text);
    if (tree) {
        //  Each stored text is the tree's message with "_call" added, both
        //  last, laid out as act_json_dump writes it
        size_t count = 0;
        for (; text [count]; count++) {
            json_t *message = act_json_parse (text [count], strlen (text [count]), &err);
            assert_non_null (message);
            //  The head as act_json_dump writes it; "data" (the text as
            //  given) and "_call" spliced after it
            json_t *head = json_deep_copy (message);
            json_object_del (head, "data");
            json_object_del (head, "_call");
            char *head_text = act_json_dump (head);
            char *data = act_text_nest (&expr->alts [0].refs [count], write->value);
            char *with_data = act_text_splice (head_text, "data", data);
            char *again = act_text_splice (with_data, "_call", call_text);
            assert_string_equal (again, text [count]);
            free (again);
            free (with_data);
            free (data);
            free (head_text);
            json_decref (head);
            json_t *want = json_deep_copy (json_array_get (tree, count));
            json_object_set_new (want, "_call", act_json_parse (call_text, strlen (call_text),
                                                                &err));
            assert_int_equal (json_integer_value (json_object_get (message, "_seq")),
                              first_seq + count);
            json_object_del (want, "_date");
            json_object_del (message, "_date");
            assert_true (json_equal (want, message));
            json_decref (want);
            json_decref (message);
            free (text [count]);
        }
        assert_int_equal (count, json_array_size (tree));
        free (text);
    }
    else {
        assert_string_equal (tree_err.code, text_err.code);
        assert_string_equal (tree_err.message, text_err.message);
    }
    assert_int_equal (act_ctx_next_seq (twins->tree), act_ctx_next_seq (twins->text));
    json_decref (value);
    act_expr_destroy (&expr);
    bool accepted = tree != NULL;
    json_decref (tree);
    return accepted;
}

//  Both contexts read the same at reference (in instance); returns the
//  text context's value as compact JSON, "absent" when it has none (the
//  caller frees it)
static char *
s_read (s_twins_t *twins, const char *reference, const char *instance)
{
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (reference, false, &err);
    assert_non_null (expr);
    bool has_tree = act_ctx_has (twins->tree, &expr->alts [0].refs [0], instance);
    bool has_text = act_ctx_has (twins->text, &expr->alts [0].refs [0], instance);
    assert_int_equal (has_tree, has_text);
    json_t *tree = act_ctx_resolve (twins->tree, expr, instance);
    json_t *text = act_ctx_resolve (twins->text, expr, instance);
    assert_int_equal (!tree, !text);
    assert_int_equal (has_text, text != NULL);
    char *result = text? json_dumps (text, JSON_ENCODE_ANY | JSON_COMPACT): strdup ("absent");
    assert_non_null (result);
    if (tree)
        assert_true (json_equal (tree, text));
    json_decref (tree);
    json_decref (text);
    act_expr_destroy (&expr);
    return result;
}

//  Check that reference reads want (compact JSON, or "absent") in both
static void
s_expect (s_twins_t *twins, const char *reference, const char *instance, const char *want)
{
    char *got = s_read (twins, reference, instance);
    assert_string_equal (got, want);
    free (got);
}

//  Both merged views are the same text
static void
s_same_view (s_twins_t *twins)
{
    char *tree = act_ctx_view_text (twins->tree);
    char *text = act_ctx_view_text (twins->text);
    assert_string_equal (tree, text);
    free (tree);
    free (text);
}

//  A set kept as text reads back as the parse of the text would give it:
//  escapes decoded, an integer too big for 64 bits a double; the view and
//  a whole-kind read see it too
static void
test_set_reads_back (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    s_write_t write = { DAGGER "s.r", "set",
                        "{\"t\":\"caf\\u00e9 \\ud83d\\ude00\",\"n\":123456789012345678901234,"
                        "\"l\":[1,2.5,null,true]}", NULL };
    assert_true (s_write (&twins, &write));
    s_expect (&twins, DAGGER "s.r.t", NULL, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    s_expect (&twins, DAGGER "s.r.l.1", NULL, "2.5");
    s_expect (&twins, DAGGER "s.r.missing", NULL, "absent");
    s_write_t scalar = { DAGGER "s.q", "set", "\"plain\"", NULL };
    assert_true (s_write (&twins, &scalar));
    s_expect (&twins, DAGGER "s.q", NULL, "\"plain\"");
    //  Keys and instances that need escaping in the stored text
    s_write_t escaped = { DAGGER "s[\"q\\\"t\\n\\\\\"].u", "set", "[\"v\"]", NULL };
    assert_true (s_write (&twins, &escaped));
    s_expect (&twins, DAGGER "s[\"q\\\"t\\n\\\\\"].u.0", NULL, "\"v\"");
    s_write_t instance = { DAGGER "s.w", "set", "{}", "in\"st\tx\\" };
    assert_true (s_write (&twins, &instance));
    s_same_view (&twins);
    char *whole = s_read (&twins, DAGGER "s", NULL);
    free (whole);
    s_twins_destroy (&twins);
}

//  Writes that meet a value kept as text: at it, below it, above it,
//  through it, with every method, before anything read it
static void
test_later_writes_meet_text (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    const s_write_t writes [] = {
        { DAGGER "s.a", "set", "[1,{\"x\":1}]", NULL },
        { DAGGER "s.a.k", "set", "1", NULL },           //  Key into an array: bad_path
        { DAGGER "s.a.-", "set", "{\"y\":2}", NULL },   //  Append, itself as text
        { DAGGER "s.a.2.y", "merge", "3", NULL },
        { DAGGER "s.a", "push", "\"p\"", NULL },
        { DAGGER "s.a", "concat", "\"no\"", NULL },     //  type_mismatch
        { DAGGER "s.b", "set", "{\"o\":{\"k\":1}}", NULL },
        { DAGGER "s.b", "merge", "{\"o\":{\"k\":null,\"j\":2}}", NULL },
        { DAGGER "s.c", "set", "{\"z\":1}", NULL },
        { DAGGER "s.c", "assign", "{\"w\":2}", NULL },
        { DAGGER "s.d", "set", "\"str\"", NULL },
        { DAGGER "s.d", "concat", "\"ing\"", NULL },
        { DAGGER "s.e", "set", "{\"gone\":1}", NULL },
        { DAGGER "s.e", "set", "{\"kept\":1}", NULL },   //  Replaces the first
        { DAGGER "s.f", "set", "{\"g\":1}", NULL },
        { DAGGER "s.f.g", "erase", "null", NULL },
        { DAGGER "s.h", "set", "7", NULL },
        { DAGGER "s.h.i", "set", "8", NULL },           //  A scalar becomes an object
        { DAGGER "s.j", "set", "[0]", NULL },
        { DAGGER "s.j.5", "set", "1", NULL },           //  Past the end: bad_path
        { DAGGER "s", "merge", "{\"m\":{\"n\":1}}", NULL },
    };
    size_t accepted = 0;
    for (size_t i = 0; i < sizeof writes / sizeof writes [0]; i++)
        accepted += s_write (&twins, &writes [i]);
    assert_int_equal (accepted, sizeof writes / sizeof writes [0] - 3);
    s_expect (&twins, DAGGER "s.a", NULL, "[1,{\"x\":1},{\"y\":3},\"p\"]");
    s_expect (&twins, DAGGER "s.b", NULL, "{\"o\":{\"j\":2}}");
    s_expect (&twins, DAGGER "s.c", NULL, "{\"z\":1,\"w\":2}");
    s_expect (&twins, DAGGER "s.d", NULL, "\"string\"");
    s_expect (&twins, DAGGER "s.e", NULL, "{\"kept\":1}");
    s_expect (&twins, DAGGER "s.f", NULL, "{}");
    s_expect (&twins, DAGGER "s.h", NULL, "{\"i\":8}");
    s_same_view (&twins);
    s_twins_destroy (&twins);
}

//  Pushes onto a log keep their texts in the array; whatever reads or
//  combines with the array, or an element, sees them parsed
static void
test_pushes_keep_text (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    const s_write_t writes [] = {
        { DAGGER "s.log", "push", "{\"n\":1}", NULL },
        { DAGGER "s.log", "push", "[2]", NULL },
        { DAGGER "s.log.1", "push", "3", NULL },          //  Into a kept element
        { DAGGER "s.log", "push", "\"x\"", NULL },
        { DAGGER "s.log.0.n", "set", "4", NULL },         //  Through a kept element
        { DAGGER "s.log.k", "set", "5", NULL },           //  A key into it: bad_path
        { DAGGER "s.one", "set", "[0]", NULL },
        { DAGGER "s.one", "push", "[1]", NULL },          //  Onto a kept set
        { DAGGER "s.one", "concat", "[{\"c\":2}]", NULL },
        { DAGGER "s.str", "set", "\"s\"", NULL },
        { DAGGER "s.str", "push", "1", NULL },            //  type_mismatch
        { DAGGER "s.tail", "push", "{\"t\":1}", NULL },
        { DAGGER "s.tail", "merge", "{\"m\":1}", NULL },   //  An array becomes an object
    };
    size_t accepted = 0;
    for (size_t i = 0; i < sizeof writes / sizeof writes [0]; i++)
        accepted += s_write (&twins, &writes [i]);
    assert_int_equal (accepted, sizeof writes / sizeof writes [0] - 2);
    s_expect (&twins, DAGGER "s.log.2", NULL, "\"x\"");
    s_expect (&twins, DAGGER "s.log", NULL, "[{\"n\":4},[2,3],\"x\"]");
    s_expect (&twins, DAGGER "s.one", NULL, "[0,[1],{\"c\":2}]");
    s_expect (&twins, DAGGER "s.tail", NULL, "{\"m\":1}");
    s_expect (&twins, DAGGER "s.log.0", "i1", "{\"n\":4}");
    s_same_view (&twins);
    s_twins_destroy (&twins);
}

//  Instances read the global document under their own writes: a value
//  kept as text there is parsed for them; their own outputs are parsed
//  when written
static void
test_instances_see_text (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    const s_write_t writes [] = {
        { DAGGER "s.g", "set", "{\"a\":1,\"b\":[1]}", NULL },
        { DAGGER "s.g.c", "set", "2", "i1" },
        { DAGGER "s.g.b", "push", "2", "i2" },
        { DAGGER "s.g", "set", "{\"a\":9}", NULL },     //  Under both instances
        { DAGGER "s.g.b.k", "set", "1", "i2" },         //  bad_path in i2 only
        { DAGGER "s.i", "set", "[1]", "i1" },
        { DAGGER "s.i", "push", "{\"v\":true}", "i1" },
    };
    for (size_t i = 0; i < sizeof writes / sizeof writes [0]; i++)
        s_write (&twins, &writes [i]);
    s_expect (&twins, DAGGER "s.g", NULL, "{\"a\":9}");
    s_expect (&twins, DAGGER "s.g", "i1", "{\"a\":9,\"c\":2}");
    s_expect (&twins, DAGGER "s.g.a", "i2", "9");
    s_expect (&twins, DAGGER "s.i", "i1", "[1,{\"v\":true}]");
    s_expect (&twins, DAGGER "s.i", "i2", "absent");
    s_same_view (&twins);
    s_twins_destroy (&twins);
}

//  A fan-out writes every target; targets that overlap are tried in turn
//  and undone before they are applied, with the values kept as text
static void
test_fanout_with_text (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    const s_write_t writes [] = {
        { DAGGER "s.a && " DAGGER "s.b", "set", "{\"v\":[1]}", NULL },
        { DAGGER "s.c && " DAGGER "s.c.v", "set", "{\"v\":1}", NULL },
        { DAGGER "s.d && " DAGGER "s.d.-", "set", "[0]", NULL },
        { DAGGER "s.a.v && " DAGGER "s.a.v.k", "set", "[2]", NULL },   //  bad_path
        { DAGGER "t && " DAGGER "t.x", "set", "{\"x\":0}", NULL },
    };
    for (size_t i = 0; i < sizeof writes / sizeof writes [0]; i++)
        s_write (&twins, &writes [i]);
    s_expect (&twins, DAGGER "s.a", NULL, "{\"v\":[1]}");
    s_expect (&twins, DAGGER "s.b.v.0", NULL, "1");
    s_expect (&twins, DAGGER "s.c", NULL, "{\"v\":{\"v\":1}}");
    s_expect (&twins, DAGGER "s.d", NULL, "[0,[0]]");
    s_expect (&twins, DAGGER "t", NULL, "{\"x\":{\"x\":0}}");
    s_same_view (&twins);
    s_twins_destroy (&twins);
}

//  A client's data message over outputs kept as text merges with them
static void
test_append_over_text (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    s_write_t write = { DAGGER "s.a", "set", "{\"k\":1,\"l\":2}", NULL };
    s_write (&twins, &write);
    act_err_t err = { NULL, "" };
    json_t *message = json_pack ("{s:s, s:s, s:{s:{s:n, s:i}}}", "type", "data", "kind", "s",
                                 "data", "a", "k", "m", 3);
    json_t *tree = act_ctx_append (twins.tree, message, &err);
    json_t *text = act_ctx_append (twins.text, message, &err);
    assert_non_null (tree);
    assert_non_null (text);
    s_expect (&twins, DAGGER "s.a", NULL, "{\"l\":2,\"m\":3}");
    s_same_view (&twins);
    json_decref (tree);
    json_decref (text);
    json_decref (message);
    s_twins_destroy (&twins);
}

//  A JSON string of size bytes of letter, as text (the caller frees it)
static char *
s_letters (char letter, size_t size)
{
    char *text = malloc (size + 3);
    assert_non_null (text);
    text [0] = '"';
    memset (text + 1, letter, size);
    strcpy (text + 1 + size, "\"");
    return text;
}

//  Concats onto a string of 256 bytes or more keep their pieces (a rope,
//  act_ctx_lazy.c) until something reads the string: every read, check
//  and write sees the string the concats make, with the errors a string
//  gives, in both contexts
static void
test_concats_onto_a_long_string (void **state)
{
    (void) state;
    s_twins_t twins = s_twins_new ();
    char *base = s_letters ('a', 300);
    s_write_t set = { DAGGER "s.t", "set", base, NULL };
    assert_true (s_write (&twins, &set));
    //  What the string should be: the base, then each piece
    char *want = malloc (300 + 40 * 20 + 16);
    assert_non_null (want);
    strcpy (want, base);
    size_t size = 301;
    for (int i = 0; i < 40; i++) {
        char *piece = s_letters ((char) ('b' + i % 20), 20);
        s_write_t concat = { DAGGER "s.t", "concat", piece, NULL };
        assert_true (s_write (&twins, &concat));
        memcpy (want + size, piece + 1, 20);
        size += 20;
        strcpy (want + size, "\"");
        free (piece);
        if (i == 9 || i == 29) {
            s_expect (&twins, DAGGER "s.t", NULL, want);    //  Read halfway
            s_same_view (&twins);
        }
    }
    s_expect (&twins, DAGGER "s.t", NULL, want);
    //  Writes that meet the pieces before anything reads them: a string's
    //  errors, the same in both contexts
    s_write_t more = { DAGGER "s.t", "concat", "\"!\"", NULL };
    assert_true (s_write (&twins, &more));
    const s_write_t refused [] = {
        { DAGGER "s.t", "concat", "[1]", NULL },            //  type_mismatch
        { DAGGER "s.t", "push", "1", NULL },                //  type_mismatch
        { DAGGER "s.t", "assign", "{\"k\":1}", NULL },    //  type_mismatch
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++)
        assert_false (s_write (&twins, &refused [i]));
    s_write_t concat = { DAGGER "s.t", "concat", "\"?\"", NULL };
    assert_true (s_write (&twins, &concat));
    strcpy (want + size, "!?\"");
    //  An instance reads and writes the global string below its own writes,
    //  before anything joined the pieces
    s_write_t beside = { DAGGER "s.u", "set", "1", "i" };
    assert_true (s_write (&twins, &beside));
    s_write_t mine = { DAGGER "s.t", "concat", "\"x\"", "i" };
    assert_true (s_write (&twins, &mine));
    s_write_t not_mine = { DAGGER "s.t", "push", "1", "i" };
    assert_false (s_write (&twins, &not_mine));
    strcpy (want + size, "!?x\"");
    s_expect (&twins, DAGGER "s.t", "i", want);
    strcpy (want + size, "!?\"");
    s_expect (&twins, DAGGER "s.t", NULL, want);
    s_same_view (&twins);
    //  A fan-out whose targets overlap is tried, undone, then applied: a
    //  piece for each target; one with a target refused changes nothing
    s_write_t fanout = { DAGGER "s.t&&" DAGGER "s.t", "concat", "\"z\"", NULL };
    assert_true (s_write (&twins, &fanout));
    s_write_t list = { DAGGER "s.l", "set", "[]", NULL };
    assert_true (s_write (&twins, &list));
    s_write_t half = { DAGGER "s.t&&" DAGGER "s.l", "concat", "\"y\"", NULL };
    assert_false (s_write (&twins, &half));
    strcpy (want + size, "!?zz\"");
    s_expect (&twins, DAGGER "s.t", NULL, want);
    //  A set through it makes it an object, as through any string
    s_write_t concat_more = { DAGGER "s.t", "concat", "\"w\"", NULL };
    assert_true (s_write (&twins, &concat_more));
    s_write_t through = { DAGGER "s.t.0", "set", "1", NULL };
    assert_true (s_write (&twins, &through));
    s_expect (&twins, DAGGER "s.t", NULL, "{\"0\":1}");
    s_same_view (&twins);
    free (want);
    free (base);
    s_twins_destroy (&twins);
}

//  n concats onto one path cost O(n) of copying, not O(n^2), in the
//  global scope and in an instance: 1,000 concats of 1 KiB, with no read
//  between them, make jansson allocate a few times 1 MB (each concat copied
//  the whole string: some 500 MB)
static void
s_concat_many (const char *instance)
{
    act_ctx_t *ctx = act_ctx_new ("rope");
    assert_non_null (ctx);
    act_err_t err = { NULL, "" };
    act_expr_t *expr = act_expr_parse (DAGGER "s.t", true, &err);
    assert_non_null (expr);
    char *piece = s_letters ('p', 1024);
    unit_json_count_start ();
    for (int i = 0; i < 1000; i++) {
        json_t *value = json_stringn (piece + 1, 1024);
        json_t *messages = act_ctx_output (ctx, &expr->alts [0], value, ACT_CONCAT,
                                           instance, NULL, "c1", &err);
        assert_non_null (messages);
        json_decref (messages);
        json_decref (value);
    }
    size_t bytes = unit_json_count_bytes ();
    unit_json_count_stop ();
    print_message ("1,000 concats of 1 KiB in %s: jansson allocated %zu bytes\n",
                   instance? "an instance": "the global scope", bytes);
    assert_true (bytes < 16 * 1024 * 1024);
    json_t *read = act_ctx_resolve (ctx, expr, instance);
    assert_true (json_is_string (read));
    assert_int_equal (json_string_length (read), 1000 * 1024);
    json_decref (read);
    free (piece);
    act_expr_destroy (&expr);
    act_ctx_destroy (&ctx);
}

static void
test_concats_copy_each_piece_once (void **state)
{
    (void) state;
    s_concat_many (NULL);
    s_concat_many ("i");
}

//  An instance's fold of a path parses the values kept as text that it
//  reads when it is made from the global document, not each time it is
//  continued: pushes in an instance onto a global list of 5,000 items
//  written as text, and reads of it, each look at a few values once the
//  fold is made (each walked the 5,000 items again: an audit, 2,000
//  pushes 4.25 s, 2,000 reads 4.65 s). Counted by act_ctx_visited
static void
test_instance_folds_walk_text_once (void **state)
{
    (void) state;
    act_ctx_t *ctx = act_ctx_new ("walk");
    json_t *list = json_array ();
    for (int i = 0; i < 5000; i++)
        json_array_append_new (list, json_pack ("{si}", "v", i));
    char *list_text = act_json_dump (list);
    json_decref (list);
    act_err_t err = { NULL, "" };
    act_expr_t *items = act_expr_parse (DAGGER "s.items", true, &err);
    act_expr_t *item = act_expr_parse (DAGGER "s.items.0.v", false, &err);
    assert_non_null (items);
    assert_non_null (item);
    uint64_t first_seq;
    char **texts = act_ctx_output_text (ctx, &items->alts [0], list_text, strlen (list_text),
                                        ACT_SET, NULL, NULL, "c1", &first_seq, &err);
    assert_non_null (texts);
    free (texts [0]);
    free (texts);
    free (list_text);
    json_t *value = json_pack ("{si}", "n", 1);
    //  The instance's first write, and the read that makes its fold
    json_decref (act_ctx_output (ctx, &items->alts [0], value, ACT_PUSH, "i", NULL, "c1",
                                 &err));
    json_decref (act_ctx_resolve (ctx, item, "i"));
    assert_true (act_ctx_visited (ctx, "s", "i") >= 5000);
    for (int i = 0; i < 49; i++) {
        json_t *messages = act_ctx_output (ctx, &items->alts [0], value, ACT_PUSH, "i",
                                           NULL, "c1", &err);
        assert_non_null (messages);
        json_decref (messages);
        uint64_t visited = act_ctx_visited (ctx, "s", "i");
        if (visited > 100)
            fail_msg ("push %d in the instance looked at %llu values and writes", i,
                      (unsigned long long) visited);
        json_t *read = act_ctx_resolve (ctx, item, "i");
        assert_int_equal (json_integer_value (read), 0);
        json_decref (read);
        visited = act_ctx_visited (ctx, "s", "i");
        if (visited > 100)
            fail_msg ("read %d in the instance looked at %llu values and writes", i,
                      (unsigned long long) visited);
    }
    json_t *read = act_ctx_resolve (ctx, items, "i");
    assert_int_equal (json_array_size (read), 5050);
    json_decref (read);
    json_decref (value);
    act_expr_destroy (&items);
    act_expr_destroy (&item);
    act_ctx_destroy (&ctx);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_set_reads_back),
        cmocka_unit_test (test_later_writes_meet_text),
        cmocka_unit_test (test_pushes_keep_text),
        cmocka_unit_test (test_instances_see_text),
        cmocka_unit_test (test_fanout_with_text),
        cmocka_unit_test (test_append_over_text),
        cmocka_unit_test (test_concats_onto_a_long_string),
        cmocka_unit_test (test_concats_copy_each_piece_once),
        cmocka_unit_test (test_instance_folds_walk_text_once),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

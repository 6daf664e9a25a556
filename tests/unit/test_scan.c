/*  =========================================================================
    test_scan - act_scan accepts and refuses exactly what act_json_parse
    does, and records what jansson parsed (scan_diff.h, shared with the
    fuzz_scan fuzzer): on every seed of the fuzzer's corpus and on the edge
    cases below, so that the normal suite, without clang, checks it too.
    Then what act_scan.h promises of its records, decode and splice.
    ========================================================================= */

#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "actd/act.h"
#include "actd/act_scan.h"
#include "scan_diff.h"

#define S_CORPUS_DIR    ACTD_SOURCE_DIR "/tests/fuzz/corpus/fuzz_scan"
#define S_BYTES(literal) literal, sizeof (literal) - 1
#define D               ACT_DAGGER
//  2^1024 - 2^970 (the midpoint between DBL_MAX and 2^1024) but its last
//  digit: strtod rounds it, and anything above, to infinity
#define S_OVERFLOW_AT   "179769313486231580793728971405303415079934132710037826936173778980444" \
                        "968292764750946649017977587207096330286416692887910946555547851940402" \
                        "630657488671505820681908902000708383676273854845817711531764475730270" \
                        "069855571366959622842914819860834936475292719074168444365510704342711" \
                        "55969950809304288017790417449779"

static act_scan_t *s_scan;

//  scan_diff on an exact copy of the size bytes at text (AddressSanitizer
//  then sees any read past them); fails the test on a difference, else
//  returns act_json_parse's verdict
static bool
s_diff (const char *name, const char *text, size_t size)
{
    char *copy = malloc (size? size: 1);
    memcpy (copy, text, size);
    bool verdict;
    const char *diff = scan_diff (s_scan, copy, size, &verdict);
    free (copy);
    if (diff)
        fail_msg ("%s: %s", name, diff);
    return verdict;
}

//  Agreement on size bytes at text; the verdict must be accepted
static void
s_agree (const char *text, size_t size, bool accepted)
{
    char name [128];
    snprintf (name, sizeof name, "'%.*s' (%zu bytes)", (int) (size < 80? size: 80), text, size);
    if (s_diff (name, text, size) != accepted)
        fail_msg ("%s: act_json_parse %s it, the test expects otherwise", name,
                  accepted? "refuses": "accepts");
}

//  The fuzzer's seeds: every one agrees, and there are both verdicts
static void
test_scan_agrees_on_seeds (void **state)
{
    DIR *dir = opendir (S_CORPUS_DIR);
    assert_non_null (dir);
    size_t files = 0, accepted = 0;
    struct dirent *entry;
    while ((entry = readdir (dir))) {
        if (entry->d_name [0] == '.')
            continue;
        char path [1024];
        snprintf (path, sizeof path, "%s/%s", S_CORPUS_DIR, entry->d_name);
        FILE *file = fopen (path, "rb");
        assert_non_null (file);
        char *data = malloc (1 << 20);
        size_t size = fread (data, 1, 1 << 20, file);
        fclose (file);
        accepted += s_diff (entry->d_name, data, size);
        free (data);
        files++;
    }
    closedir (dir);
    if (files < 100 || accepted == 0 || accepted == files)
        fail_msg ("%zu seeds (%zu accepted): is the corpus there?", files, accepted);
}

//  jansson 2.14's own rules (act_scan.c names them), one case each
static const struct {
    const char *text;           //  The bytes
    size_t size;                //  Their number
    bool accepted;              //  By act_json_parse
} s_cases [] = {
    //  A NUL byte is refused wherever it is (jansson alone would skip
    //  one right after a number or a literal)
    { S_BYTES ("1\0"), false },
    { S_BYTES ("[1\0,2]"), false },
    { S_BYTES ("{\"a\":true\0}"), false },
    { S_BYTES ("1.5e3\0 "), false },
    { S_BYTES ("null\0"), false },
    { S_BYTES ("1\0\0"), false },
    { S_BYTES ("1 \0"), false },
    { S_BYTES ("[1]\0"), false },
    { S_BYTES ("\"a\"\0"), false },
    { S_BYTES ("\0"), false },
    { S_BYTES ("\"a\0\""), false },
    //  Numbers
    { S_BYTES ("-0"), true },
    { S_BYTES ("-0.0e-0"), true },
    { S_BYTES ("1e400"), false },
    { S_BYTES ("-1e400"), false },
    { S_BYTES ("1e-400"), true },
    { S_BYTES ("0.0e99999999999999999999999"), true },
    { S_BYTES ("0.001e311"), true },
    { S_BYTES ("0.001e312"), false },
    { S_BYTES ("1.7976931348623157e308"), true },
    { S_BYTES ("1.7976931348623158e308"), true },
    { S_BYTES ("1.7976931348623159e308"), false },
    //  Just below and at the least value that rounds to infinity
    { S_BYTES ("-" S_OVERFLOW_AT "1.9"), true },
    { S_BYTES ("-" S_OVERFLOW_AT "2"), false },
    { S_BYTES ("0.00" S_OVERFLOW_AT "19e311"), true },
    { S_BYTES ("0.00" S_OVERFLOW_AT "2e311"), false },
    { S_BYTES ("1e0000000000000000000000000308"), true },
    { S_BYTES ("9223372036854775807"), true },
    //  Integers beyond int64 are doubles (SEMANTICS.md section 1), refused
    //  only past the largest double
    { S_BYTES ("9223372036854775808"), true },
    { S_BYTES ("-9223372036854775808"), true },
    { S_BYTES ("-9223372036854775809"), true },
    { S_BYTES ("10000000000000000000"), true },
    { S_BYTES ("1" S_OVERFLOW_AT "0"), false },
    { S_BYTES ("01"), false },
    { S_BYTES ("-01"), false },
    { S_BYTES ("1."), false },
    { S_BYTES ("1.e5"), false },
    { S_BYTES (".5"), false },
    { S_BYTES ("+1"), false },
    { S_BYTES ("-"), false },
    { S_BYTES ("1e"), false },
    { S_BYTES ("1e+"), false },
    { S_BYTES ("1E+2"), true },
    { S_BYTES ("0x10"), false },
    { S_BYTES ("1-2"), false },
    //  Strings: escapes, surrogates, UTF-8, control characters
    { S_BYTES ("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\""), true },
    { S_BYTES ("\"\\a\""), false },
    { S_BYTES ("\"\\u12\""), false },
    { S_BYTES ("\"\\u0000\""), false },
    { S_BYTES ("{\"\\u0000\":1}"), false },
    { S_BYTES ("\"\\ud83d\\ude00\""), true },
    { S_BYTES ("\"\\ud800\""), false },
    { S_BYTES ("\"\\ud800x\""), false },
    { S_BYTES ("\"\\ud800\\u0041\""), false },
    { S_BYTES ("\"\\ud800\\ud800\""), false },
    { S_BYTES ("\"\\udc00\\ud800\""), false },
    { S_BYTES ("\"\xC0\xAF\""), false },
    { S_BYTES ("\"\xE0\x80\xAF\""), false },
    { S_BYTES ("\"\xED\xA0\x80\""), false },
    { S_BYTES ("\"\xF4\x90\x80\x80\""), false },
    { S_BYTES ("\"\xF0\x9F\x98\x80\x7F\""), true },
    { S_BYTES ("\"\x1F\""), false },
    { S_BYTES ("\"a\nb\""), false },
    { S_BYTES ("\"\t\""), false },
    { S_BYTES ("\"abc"), false },
    { S_BYTES ("\"abcdefghijklmnopqrstuvwxyz\\"), false },
    //  Structure, white space, top-level values
    { S_BYTES (""), false },
    { S_BYTES (" \t\r\n"), false },
    { S_BYTES (" \t\r\n{ \"a\" :\r[ 1 ,\t2 ]\n} \t\r\n"), true },
    { S_BYTES ("\f1"), false },
    { S_BYTES ("\xC2\xA0" "1"), false },
    { S_BYTES ("\xEF\xBB\xBF{}"), false },
    { S_BYTES ("\"" D "state.x\""), true },
    { S_BYTES ("true"), true },
    { S_BYTES ("truex"), false },
    { S_BYTES ("True"), false },
    { S_BYTES ("{} x"), false },
    { S_BYTES ("{\"a\":1,}"), false },
    { S_BYTES ("[1,]"), false },
    { S_BYTES ("[,1]"), false },
    { S_BYTES ("{\"a\" 1}"), false },
    { S_BYTES ("{1:2}"), false },
    { S_BYTES ("[1 2]"), false },
    { S_BYTES ("["), false },
    { S_BYTES ("{\"a\":"), false },
    //  Duplicate keys, decoded, at any depth, in small and large objects
    { S_BYTES ("{\"a\":1,\"\\u0061\":2}"), false },
    { S_BYTES ("{\"x\":[{\"k\":1,\"k\":2}]}"), false },
    { S_BYTES ("{\"k\":{\"k\":{\"k\":1}},\"j\":1}"), true },
    { S_BYTES ("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,"
               "\"\\u0065\":10}"), false },
    { S_BYTES ("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,"
               "\"\\u00e9\":10,\"\xC3\xA9\\u0000\":11}"), false },
    { S_BYTES ("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,"
               "\"\\u00e9\":10,\"\xC3\xA9\":11}"), false },
    { S_BYTES ("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,"
               "\"ab\":10,\"ba\":11}"), true },
    //  Dagger strings: values only, decoded
    { S_BYTES ("{\"" D "k\":\"\\u2020v\",\"l\":[\"" D "\",\"x" D "\",{\"m\":\"" D D "\"}]}"),
      true },
};

//  jansson 2.14's own rules, one case each, with act_json_parse's verdict
static void
test_scan_agrees_on_edge_cases (void **state)
{
    for (size_t i = 0; i < sizeof s_cases / sizeof s_cases [0]; i++)
        s_agree (s_cases [i].text, s_cases [i].size, s_cases [i].accepted);
}

//  depth copies of open, then inner, then depth copies of close
static char *
s_nest (const char *open, const char *inner, const char *close, size_t depth)
{
    size_t size = depth * (strlen (open) + strlen (close)) + strlen (inner) + 1;
    char *text = malloc (size);
    text [0] = 0;
    for (size_t i = 0; i < depth; i++)
        strcat (text, open);
    strcat (text, inner);
    for (size_t i = 0; i < depth; i++)
        strcat (text, close);
    return text;
}

//  act_json.h: ACT_MAX_JSON_DEPTH containers are accepted, one more is not
static void
test_scan_agrees_on_depth (void **state)
{
    static const struct {
        const char *open, *inner, *close;
        size_t step, inner_depth;   //  Containers in open, in inner
    } shapes [] = {
        { "[", "", "]", 1, 0 },
        { "[", "\"" D "deep\"", "]", 1, 0 },
        { "{\"a\":", "1", "}", 1, 0 },
        { "{\"k\":1,\"k2\":", "[]", ",\"k3\":2}", 1, 1 },
        { "[{\"a\":", "{}", "}]", 2, 1 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes [0]; i++)
        for (size_t steps = 28; steps <= ACT_MAX_JSON_DEPTH + 1; steps++) {
            char *text = s_nest (shapes [i].open, shapes [i].inner, shapes [i].close, steps);
            size_t depth = steps * shapes [i].step + shapes [i].inner_depth;
            s_agree (text, strlen (text), depth <= ACT_MAX_JSON_DEPTH);
            free (text);
        }
    char *unclosed = s_nest ("[", "", "", 10000);
    s_agree (unclosed, strlen (unclosed), false);
    free (unclosed);
}

//  The README's call: its members and its two references
static void
test_scan_records_a_call (void **state)
{
    const char *text = "{\"_tool\": \"summarize\", \"text\": \"" D "input.doc\", "
                       "\"_outputPath\" : \"" D "state.summary\" }";
    act_err_t err = { 0 };
    assert_int_equal (act_scan (s_scan, text, strlen (text), &err), 0);
    assert_int_equal (act_scan_type (s_scan), JSON_OBJECT);
    size_t count;
    const act_scan_member_t *members = act_scan_members (s_scan, &count);
    assert_int_equal (count, 3);
    assert_memory_equal (text + members [0].key, "\"_tool\"", members [0].key_size);
    assert_memory_equal (text + members [0].value, "\"summarize\"", members [0].value_size);
    assert_memory_equal (text + members [2].key, "\"_outputPath\"", members [2].key_size);
    assert_ptr_equal (act_scan_find (s_scan, text, "_outputPath"), &members [2]);
    assert_null (act_scan_find (s_scan, text, "_output"));
    const act_scan_string_t *daggers = act_scan_daggers (s_scan, &count);
    assert_int_equal (count, 2);
    assert_int_equal (daggers [0].member, 1);
    assert_int_equal (daggers [0].depth, 1);
    assert_false (daggers [0].escaped);
    assert_memory_equal (text + daggers [0].offset, "\"" D "input.doc\"", daggers [0].size);
    assert_int_equal (daggers [1].member, 2);
    //  Nested, escaped, in an array at the top: no member
    text = "[{\"a\": [\"\\u2020x\", \"y\"]}, \"" D "\"]";
    assert_int_equal (act_scan (s_scan, text, strlen (text), &err), 0);
    daggers = act_scan_daggers (s_scan, &count);
    assert_int_equal (count, 2);
    assert_int_equal (daggers [0].depth, 3);
    assert_int_equal (daggers [0].member, -1);
    assert_true (daggers [0].escaped);
    char decoded [16];
    assert_int_equal (act_scan_decode (text + daggers [0].offset, daggers [0].size, decoded), 4);
    assert_string_equal (decoded, D "x");
    assert_int_equal (daggers [1].depth, 1);
    act_scan_members (s_scan, &count);
    assert_int_equal (count, 0);
    //  A refusal leaves no records
    text = "{\"a\": \"" D "x\", \"b\": }";
    assert_int_equal (act_scan (s_scan, text, strlen (text), &err), -1);
    assert_string_equal (err.code, ACT_E_BAD_JSON);
    act_scan_daggers (s_scan, &count);
    assert_int_equal (count, 0);
    act_scan_members (s_scan, &count);
    assert_int_equal (count, 0);
}

//  act_scan_decode: every escape, and garbage read within bounds
static void
test_scan_decode (void **state)
{
    char out [64];
    const char *token = "\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00z\"";
    size_t length = act_scan_decode (token, strlen (token), out);
    const char *want = "a\"\\/\b\f\n\r\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z";
    assert_int_equal (length, strlen (want));
    assert_string_equal (out, want);
    //  Not from a scan: cut escapes are copied, nothing is read past size
    static const char *garbage [] = { "\"\\u12\"", "\"\\", "\"\\x\"", "\"\\ud800\"", "\"\"" };
    for (size_t i = 0; i < sizeof garbage / sizeof garbage [0]; i++) {
        size_t size = strlen (garbage [i]);
        char *copy = malloc (size), *decoded = malloc (size - 1);
        memcpy (copy, garbage [i], size);
        assert_true (act_scan_decode (copy, size, decoded) <= size - 2);
        free (copy);
        free (decoded);
    }
    assert_int_equal (act_scan_decode ("\"", 1, out), 0);
}

//  act_scan_splice: references replaced in one allocation; bad edits refused
static void
test_scan_splice (void **state)
{
    const char *text = "{\"_tool\":\"t\",\"a\":\"" D "state.x\",\"b\":[\"" D "state.y\"]}";
    act_err_t err = { 0 };
    assert_int_equal (act_scan (s_scan, text, strlen (text), &err), 0);
    size_t count;
    const act_scan_string_t *daggers = act_scan_daggers (s_scan, &count);
    assert_int_equal (count, 2);
    act_scan_edit_t edits [] = {
        { daggers [0].offset, daggers [0].size, "{\"v\":1}", 7 },
        { daggers [1].offset, daggers [1].size, "2", 1 },
    };
    size_t size;
    char *spliced = act_scan_splice (text, strlen (text), edits, 2, &size);
    assert_string_equal (spliced, "{\"_tool\":\"t\",\"a\":{\"v\":1},\"b\":[2]}");
    assert_int_equal (size, strlen (spliced));
    free (spliced);
    //  No edit: a copy; an insertion at the end
    spliced = act_scan_splice (text, strlen (text), NULL, 0, NULL);
    assert_string_equal (spliced, text);
    free (spliced);
    act_scan_edit_t insert = { 3, 0, "xy", 2 };
    spliced = act_scan_splice ("abc", 3, &insert, 1, &size);
    assert_string_equal (spliced, "abcxy");
    free (spliced);
    //  Out of order, overlapping, out of bounds, no text
    act_scan_edit_t reversed [] = { edits [1], edits [0] };
    assert_null (act_scan_splice (text, strlen (text), reversed, 2, NULL));
    act_scan_edit_t overlapping [] = { { 0, 5, "", 0 }, { 4, 1, "", 0 } };
    assert_null (act_scan_splice (text, strlen (text), overlapping, 2, NULL));
    act_scan_edit_t outside = { 2, 5, "", 0 };
    assert_null (act_scan_splice ("abc", 3, &outside, 1, NULL));
    act_scan_edit_t no_text = { 0, 1, NULL, 3 };
    assert_null (act_scan_splice ("abc", 3, &no_text, 1, NULL));
}

//  Past every array's first size: members, references, open keys, scratch
static void
test_scan_grows (void **state)
{
    size_t members = 3000;
    char *text = malloc (members * 64 + 64);
    size_t used = (size_t) sprintf (text, "{");
    for (size_t i = 0; i < members; i++)
        used += (size_t) sprintf (text + used, "%s\"k\\u00e9%zu\":[\"" D "s.%zu\",{\"n%zu\":1}]",
                                  i? ",": "", i, i, i);
    used += (size_t) sprintf (text + used, "}");
    s_agree (text, used, true);
    size_t count;
    act_scan_daggers (s_scan, &count);
    assert_int_equal (count, members);
    //  The same with one duplicate, far apart, escaped differently
    used = (size_t) sprintf (text, "{\"k\\u00e97\":0");
    for (size_t i = 0; i < members; i++)
        used += (size_t) sprintf (text + used, ",\"k\xC3\xA9%zu\":%zu", i + 5, i);
    used += (size_t) sprintf (text + used, "}");
    s_agree (text, used, false);
    //  A long escaped key (the scratch buffer grows), twice in a large object
    char *key = malloc (2000 * 6 + 1);
    for (size_t i = 0; i < 2000; i++)
        memcpy (key + i * 6, "\\u00e9", 6);
    key [2000 * 6] = 0;
    used = (size_t) sprintf (text, "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,"
                                   "\"h\":8,\"i\":9,\"%s\":1,\"%s\":2}", key, key);
    s_agree (text, used, false);
    free (key);
    free (text);
}

//  act_scan_numbers_dumped: true exactly when every number is written as
//  act_json_dump writes it, which for these compact texts means the text
//  written again (act_json_redump) is the text itself
static void
test_scan_numbers_dumped (void **state)
{
    struct {
        const char *text;
        bool dumped;
    } cases [] = {
        { "{\"a\":1,\"b\":-2,\"c\":0.1,\"d\":\"1E2\",\"e\":[1.0,-0.5]}", true },
        { "[1e+16,-1.5e-07,9223372036854775807,-9223372036854775808,0]", true },
        { "1E2", false },               //  100.0
        { "[0.10]", false },            //  0.1
        { "{\"z\":-0}", false },        //  0
        { "1e16", false },              //  1e+16
        { "[0.10000000000000001]", false },
        { "18446744073709551616", false },  //  Beyond int64: 1.8446744073709552e+19
        { "-0.0", true },
        { "\"-0\"", true }
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        const char *text = cases [i].text;
        act_err_t err = { 0 };
        assert_int_equal (act_scan (s_scan, text, strlen (text), &err), 0);
        if (act_scan_numbers_dumped (s_scan) != cases [i].dumped)
            fail_msg ("%s: numbers_dumped %d", text, !cases [i].dumped);
        char *written = act_json_redump (text, strlen (text));
        assert_non_null (written);
        if ((strcmp (written, text) == 0) != cases [i].dumped)
            fail_msg ("%s written again as %s", text, written);
        free (written);
    }
    //  A refused text leaves nothing to judge, and the next scan starts afresh
    act_err_t err = { 0 };
    assert_int_equal (act_scan (s_scan, "[1E2,", 5, &err), -1);
    assert_int_equal (act_scan (s_scan, "[2]", 3, &err), 0);
    assert_true (act_scan_numbers_dumped (s_scan));
    assert_null (act_json_redump ("[1,", 3));
}

static int
s_setup (void **state)
{
    s_scan = act_scan_new ();
    return s_scan? 0: -1;
}

static int
s_teardown (void **state)
{
    act_scan_destroy (&s_scan);
    act_scan_destroy (&s_scan);     //  Safe twice
    return 0;
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_scan_agrees_on_seeds),
        cmocka_unit_test (test_scan_agrees_on_edge_cases),
        cmocka_unit_test (test_scan_agrees_on_depth),
        cmocka_unit_test (test_scan_records_a_call),
        cmocka_unit_test (test_scan_decode),
        cmocka_unit_test (test_scan_splice),
        cmocka_unit_test (test_scan_grows),
        cmocka_unit_test (test_scan_numbers_dumped),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}

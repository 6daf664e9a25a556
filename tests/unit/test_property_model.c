/*  =========================================================================
    test_property_model - the naive model of the property tests
    (property_model.h) on its own: the decisions it encodes, in a few
    fixed cases, so that a wrong model cannot agree with a wrong library
    unnoticed (test_property runs the library against it).
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
#include "property_model.h"

//  The model itself, on the decisions it encodes: a few fixed cases, so
//  that a wrong model cannot agree with a wrong library unnoticed.
static void
test_model_decisions (void **state)
{
    json_error_t error;
    json_t *doc = json_loads ("{\"l\":[1,{\"x\":1}],\"o\":{\"k\":1},\"s\":\"str\"}",
                              0, &error);
    assert_non_null (doc);
    json_t *one = json_integer (1);
    json_t *object = json_pack ("{s:n, s:i}", "k", "n", 2);
    json_t *result = NULL;
    m_seg_t l_len [] = { s_seg_key ("l"), s_seg_index (2) };
    m_seg_t l_past [] = { s_seg_key ("l"), s_seg_index (3) };
    m_seg_t l_key [] = { s_seg_key ("l"), s_seg_key ("a") };
    m_seg_t o_dash [] = { s_seg_key ("o"), s_seg_append () };
    m_seg_t new_dash [] = { s_seg_key ("n"), s_seg_append () };
    m_seg_t l_elem [] = { s_seg_key ("l"), s_seg_index (0) };
    m_seg_t l_dash_x [] = { s_seg_key ("l"), s_seg_append (), s_seg_key ("x") };
    m_seg_t o_k [] = { s_seg_key ("o"), s_seg_key ("k") };
    m_seg_t s_a [] = { s_seg_key ("s"), s_seg_index (0) };

    //  index = length appends; index > length, a key or "-" elsewhere is bad_path
    assert_null (s_model_apply (doc, l_len, 2, ACT_SET, one, &result));
    assert_int_equal (json_array_size (json_object_get (result, "l")), 3);
    json_decref (result);
    assert_string_equal (s_model_apply (doc, l_past, 2, ACT_SET, one, &result), ACT_E_BAD_PATH);
    assert_string_equal (s_model_apply (doc, l_key, 2, ACT_SET, one, &result), ACT_E_BAD_PATH);
    assert_string_equal (s_model_apply (doc, o_dash, 2, ACT_SET, one, &result), ACT_E_BAD_PATH);
    assert_string_equal (s_model_apply (doc, new_dash, 2, ACT_PUSH, one, &result), ACT_E_BAD_PATH);
    //  erase: an array element is bad_path, an absent path is a no-op
    assert_string_equal (s_model_apply (doc, l_elem, 2, ACT_ERASE, one, &result), ACT_E_BAD_PATH);
    assert_null (s_model_apply (doc, l_dash_x, 3, ACT_ERASE, one, &result));
    assert_true (json_equal (doc, result));
    json_decref (result);
    assert_null (s_model_apply (doc, o_k, 2, ACT_ERASE, one, &result));
    assert_int_equal (json_object_size (json_object_get (result, "o")), 0);
    json_decref (result);
    //  a scalar parent becomes an object; index 0 on it is the key "0"
    assert_null (s_model_apply (doc, s_a, 2, ACT_SET, one, &result));
    assert_true (json_equal (json_object_get (json_object_get (result, "s"), "0"), one));
    json_decref (result);
    //  merge deletes with null; assign stores null
    assert_null (s_model_apply (doc, o_k, 1, ACT_MERGE, object, &result));
    {
        json_t *want = json_pack ("{s:i}", "n", 2);
        assert_true (json_equal (json_object_get (result, "o"), want));
        json_decref (want);
    }
    json_decref (result);
    assert_null (s_model_apply (doc, o_k, 1, ACT_ASSIGN, object, &result));
    {
        json_t *want = json_pack ("{s:n, s:i}", "k", "n", 2);
        assert_true (json_equal (json_object_get (result, "o"), want));
        json_decref (want);
    }
    json_decref (result);
    //  V-side mismatch first, then T-side
    assert_string_equal (s_model_apply (doc, o_k, 1, ACT_ASSIGN, one, &result),
                         ACT_E_TYPE_MISMATCH);
    assert_string_equal (s_model_apply (doc, o_k, 1, ACT_PUSH, one, &result),
                         ACT_E_TYPE_MISMATCH);
    json_decref (one);
    json_decref (object);
    json_decref (doc);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_model_decisions),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}

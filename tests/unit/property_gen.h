/*  =========================================================================
    property_gen - the random writes test_property runs: the kinds, scopes
    and keys they use, a path read or written (its reference text), one
    operation (an act_ctx_append or an act_ctx_output of a value by a
    method), drawn from a seeded generator and described for a report.
    The generator's flags (s_gen_t) make the sequences of each mode.

    A seed gives the same ops everywhere (unit_support.h's splitmix64): a
    failing sequence printed with its seed replays as it failed.

    Include after <cmocka.h> and <czmq.h>.
    ========================================================================= */

#ifndef PROPERTY_GEN_H_INCLUDED
#define PROPERTY_GEN_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "actd/act.h"
#include "property_model.h"
#include "unit_support.h"

#define S_MAX_DEPTH     4               //  Segments in a written path
#define S_MAX_READ      12              //  Segments in a path read back

#define S_KINDS         2
#define S_SCOPES        3               //  Global, then two instances
static const char *const s_kinds [S_KINDS] = { "data", "state" };
static const char *const s_instances [S_SCOPES] = { NULL, "i1", "i2" };
static const char *const s_keys [] = { "a", "b", "c" };

//  A number in [0, bound), bound > 0
static inline int
s_below (uint64_t *rng, int bound)
{
    return (int) unit_below (rng, (uint64_t) bound);
}


//  --------------------------------------------------------------------------
//  A path read or written: a kind, then the model's own segments

typedef struct {
    int kind;                   //  Index into s_kinds
    size_t depth;               //  Segments used
    m_seg_t segs [S_MAX_READ];  //  The segments, the first depth of them
} m_path_t;

//  The reference text of a path, "†state.a[2].-"; dotted tells whether
//  indices are written .2 (true) or [2]
static inline void
s_path_text (const m_path_t *path, bool dotted, char *buffer, size_t size)
{
    int used = snprintf (buffer, size, ACT_DAGGER "%s", s_kinds [path->kind]);
    for (size_t i = 0; i < path->depth && used < (int) size; i++) {
        const m_seg_t *seg = &path->segs [i];
        if (seg->type == M_INDEX && !dotted)
            used += snprintf (buffer + used, size - used, "[%s]", seg->text);
        else
            used += snprintf (buffer + used, size - used, ".%s", seg->text);
    }
}

//  Whether two paths are the same kind and segments
static inline bool
s_path_equal (const m_path_t *left, const m_path_t *right)
{
    if (left->kind != right->kind || left->depth != right->depth)
        return false;
    for (size_t i = 0; i < left->depth; i++)
        if (left->segs [i].type != right->segs [i].type
        ||  strcmp (left->segs [i].text, right->segs [i].text) != 0)
            return false;
    return true;
}


//  --------------------------------------------------------------------------
//  One operation of a sequence

typedef struct {
    bool append;                //  act_ctx_append (root) or act_ctx_output
    int kind;                   //  Index into s_kinds
    int scope;                  //  0: global, else s_instances [scope]
    m_path_t path;              //  path.kind == kind
    act_method_t method;        //  How the value is written
    bool explicit_method;       //  Appends: _outputMethod given
    bool explicit_kind;         //  Appends: kind given
    bool dotted;                //  Indices written .2 rather than [2]
    json_t *value;              //  Owned
} s_op_t;

//  How the generator draws ops: the sequences of a mode
typedef struct {
    bool assign_heavy;          //  Mostly instance writes, many assigns, paths
                                //  mostly of keys, twice as many writes
                                //  (test_instance_assigns_match_naive_fold)
    bool long_strings;          //  Concats and sets of strings of 100 bytes or
                                //  more (test_long_concats_match_naive_fold)
} s_gen_t;


//  --------------------------------------------------------------------------
//  Generating ops

//  A string of 100 to 199 bytes of one letter
static inline json_t *
s_long_string (uint64_t *rng)
{
    char text [200];
    size_t size = 100 + (size_t) s_below (rng, 100);
    memset (text, 'a' + (int) s_below (rng, 26), size);
    return json_stringn (text, size);
}

//  A value of any type, nested budget levels deep at the most
static inline json_t *
s_random_value (uint64_t *rng, int budget)
{
    int choice = s_below (rng, budget > 0? 10: 5);
    switch (choice) {
        case 0: return json_null ();
        case 1: return json_boolean (s_below (rng, 2));
        case 2: return json_integer (s_below (rng, 10));
        case 3: {
            static const char *strings [] = { "x", "yz", "" };
            return json_string (strings [s_below (rng, 3)]);
        }
        case 4: return json_integer (s_below (rng, 3));
        case 5:
        case 6: {
            json_t *array = json_array ();
            int size = s_below (rng, 3);
            for (int i = 0; i < size; i++)
                json_array_append_new (array, s_random_value (rng, budget - 1));
            return array;
        }
        default: {
            json_t *object = json_object ();
            int size = s_below (rng, 4);
            for (int i = 0; i < size; i++)
                json_object_set_new (object, s_keys [s_below (rng, 3)],
                                     s_random_value (rng, budget - 1));
            return object;
        }
    }
}

//  Draw one op as gen says. Assign heavy: assigns above a read path meet
//  many writes beside it and global writes that turn their level into a
//  scalar or an array. Long strings: concats meet strings of 256 bytes and
//  more, which the context keeps as ropes (act_ctx_lazy.c)
static inline void
s_random_op (uint64_t *rng, const s_gen_t *gen, s_op_t *op)
{
    memset (op, 0, sizeof *op);
    op->kind = s_below (rng, S_KINDS);
    op->scope = s_below (rng, 5) < (gen->assign_heavy? 1: 3)? 0: 1 + s_below (rng, 2);
    op->append = s_below (rng, 4) == 0;
    op->method = (act_method_t) s_below (rng, 6);
    if (gen->assign_heavy && op->scope && s_below (rng, 3) == 0)
        op->method = ACT_ASSIGN;
    //  Long strings: mostly concats and sets, on few paths, so that
    //  strings grow past 256 bytes and meet other writes
    int few = gen->long_strings? (int) s_below (rng, 6): -1;
    if (few >= 0 && few < 4)
        op->method = few < 3? ACT_CONCAT: ACT_SET;
    op->path.kind = op->kind;
    op->dotted = s_below (rng, 2);
    if (op->append) {
        op->path.depth = 0;
        op->explicit_method = op->method != ACT_MERGE || s_below (rng, 2);
        op->explicit_kind = op->kind != 0 || s_below (rng, 2);
    }
    else {
        static const size_t depths [] = { 0, 1, 1, 1, 2, 2, 2, 3, 3, S_MAX_DEPTH };
        op->path.depth = depths [s_below (rng, 10)];
        for (size_t i = 0; i < op->path.depth; i++) {
            int choice = s_below (rng, 20);
            if (gen->assign_heavy && choice >= 9 && s_below (rng, 3))
                choice %= 9;    //  Two in three indices or "-" become keys
            op->path.segs [i] = choice < 9? s_seg_key (s_keys [choice % 3])
                              : choice < 17? s_seg_index ((size_t) (choice - 9) % 4)
                              : s_seg_append ();
        }
        if (few >= 0 && few < 4) {
            op->scope = s_below (rng, 4) == 0? op->scope: 0;
            op->path.depth = s_below (rng, 4) == 0? 2: 1;
            for (size_t i = 0; i < op->path.depth; i++)
                op->path.segs [i] = s_seg_key (s_keys [0]);
        }
    }
    //  Most assign and concat values are of the type the method needs, so
    //  that their writes are more often refused for the target's type
    //  than for their own
    op->value = NULL;
    if (op->method == ACT_ASSIGN && s_below (rng, 4) > 0)
        while (!json_is_object (op->value)) {
            json_decref (op->value);
            op->value = s_random_value (rng, 2);
        }
    else
    if (gen->long_strings && (op->method == ACT_CONCAT || op->method == ACT_SET)
    &&  s_below (rng, 4) > 0)
        op->value = s_long_string (rng);
    else
    if (op->method == ACT_CONCAT && s_below (rng, 4) > 0)
        op->value = s_below (rng, 2)
                  ? json_string (s_below (rng, 2)? "x": "yz")
                  : json_pack ("[i, s]", s_below (rng, 10), "x");
    else
        op->value = s_random_value (rng, 2);
}

//  The op as a line of a report: the call and its arguments
static inline void
s_op_describe (const s_op_t *op, char *buffer, size_t size)
{
    char *value = json_dumps (op->value, JSON_ENCODE_ANY | JSON_COMPACT);
    if (op->append) {
        json_t *message = json_pack ("{s:s}", "type", "data");
        if (op->explicit_kind)
            json_object_set_new (message, "kind", json_string (s_kinds [op->kind]));
        if (op->scope)
            json_object_set_new (message, "_instance",
                                 json_string (s_instances [op->scope]));
        json_object_set (message, "data", op->value);
        if (op->explicit_method)
            json_object_set_new (message, "_outputMethod",
                                 json_string (act_method_name (op->method)));
        char *text = json_dumps (message, JSON_COMPACT);
        snprintf (buffer, size, "act_ctx_append %s", text);
        free (text);
        json_decref (message);
    }
    else {
        char path [256];
        s_path_text (&op->path, op->dotted, path, sizeof path);
        snprintf (buffer, size, "act_ctx_output \"%s\" %s %s%s%s", path,
                  act_method_name (op->method), value,
                  op->scope? " instance ": "", op->scope? s_instances [op->scope]: "");
    }
    free (value);
}

#endif

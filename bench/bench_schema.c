/*  =========================================================================
    bench_schema - nanoseconds per validation of a 10-parameter call
    against a typical tool schema (PROTOCOL.md section 2.1: every CALL and
    PLAN of a tool is validated when submitted and again when dispatched).

    Prints the cost of a valid call, of an invalid one (its message is
    written), and of compiling the schema; as a baseline, the cost of
    looking up the call's 10 parameters with json_object_get, the least
    any validation must do. Each validation is timed on both readers: the
    tree (act_schema_valid, as at dispatch), and the call's JSON text read
    in place (act_schema_valid_text, as at submit), beside what the text
    would cost through a tree (act_json_parse, then act_schema_valid).

    bench_schema [--seconds S]
    ========================================================================= */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "actd/act.h"

static const char *s_schema_text =
    "{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\","
    " \"type\": \"object\","
    " \"properties\": {"
    "   \"query\":    {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 500},"
    "   \"language\": {\"type\": \"string\", \"pattern\": \"^[a-z]{2}(-[A-Z]{2})?$\"},"
    "   \"limit\":    {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100},"
    "   \"offset\":   {\"type\": \"integer\", \"minimum\": 0},"
    "   \"sort\":     {\"enum\": [\"relevance\", \"date\", \"title\"]},"
    "   \"safe\":     {\"type\": \"boolean\"},"
    "   \"score\":    {\"type\": \"number\", \"exclusiveMinimum\": 0, \"maximum\": 1},"
    "   \"tags\":     {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 10,"
    "                  \"uniqueItems\": true},"
    "   \"since\":    {\"type\": \"string\", \"format\": \"date\"},"
    "   \"filter\":   {\"type\": \"object\", \"properties\": {"
    "                    \"site\": {\"type\": \"string\"}, \"max_age\": {\"type\": \"integer\"}},"
    "                  \"additionalProperties\": false}"
    " },"
    " \"required\": [\"query\", \"limit\"],"
    " \"additionalProperties\": false}";

static const char *s_call_text =
    "{\"query\": \"zeromq broker durability\", \"language\": \"en-GB\", \"limit\": 20,"
    " \"offset\": 40, \"sort\": \"date\", \"safe\": true, \"score\": 0.5,"
    " \"tags\": [\"c\", \"zeromq\", \"agents\"], \"since\": \"2026-01-01\","
    " \"filter\": {\"site\": \"example.com\", \"max_age\": 30}}";

static double
s_now (void)
{
    struct timespec now;
    clock_gettime (CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

static json_t *
s_parse (const char *text)
{
    json_error_t error;
    json_t *json = json_loads (text, 0, &error);
    if (!json) {
        fprintf (stderr, "bench_schema: %s\n", error.text);
        exit (1);
    }
    return json;
}

//  How a validation reads the call
typedef enum {
    S_TREE,                     //  act_schema_valid on the tree
    S_TEXT,                     //  act_schema_valid_text on the text
    S_PARSED                    //  act_json_parse of the text, then act_schema_valid
} s_reader_t;

//  One validation of call (text: its JSON text) as reader reads it
static bool
s_validate (act_schema_t *schema, const json_t *call, const char *text, s_reader_t reader,
            act_err_t *err)
{
    if (reader == S_TREE)
        return act_schema_valid (schema, call, err);
    if (reader == S_TEXT)
        return act_schema_valid_text (schema, text, strlen (text), err);
    json_t *tree = act_json_parse (text, strlen (text), err);
    bool valid = tree && act_schema_valid (schema, tree, err);
    json_decref (tree);
    return valid;
}

//  Validate call against schema for about seconds; ns per validation
static double
s_time_valid (act_schema_t *schema, const json_t *call, s_reader_t reader, bool expected,
              double seconds)
{
    long count = 0;
    double start = s_now (), elapsed;
    act_err_t err = { 0 };
    char *text = act_json_dump (call);
    if (!text)
        exit (1);
    do {
        for (int round = 0; round < 1000; round++)
            if (s_validate (schema, call, text, reader, &err) != expected) {
                fprintf (stderr, "bench_schema: unexpected outcome: %s\n", err.message);
                exit (1);
            }
        count += 1000;
        elapsed = s_now () - start;
    } while (elapsed < seconds);
    free (text);
    return elapsed * 1e9 / count;
}

static double
s_time_lookups (const json_t *call, double seconds)
{
    static const char *names [] = {
        "query", "language", "limit", "offset", "sort", "safe", "score", "tags", "since", "filter"
    };
    long count = 0, found = 0;
    double start = s_now (), elapsed;
    do {
        for (int round = 0; round < 1000; round++)
            for (int name = 0; name < 10; name++)
                found += json_object_get (call, names [name]) != NULL;
        count += 1000;
        elapsed = s_now () - start;
    } while (elapsed < seconds);
    if (found != count * 10)
        exit (1);
    return elapsed * 1e9 / count;
}

static double
s_time_compile (const json_t *json, double seconds)
{
    long count = 0;
    double start = s_now (), elapsed;
    do {
        act_schema_t *schema = act_schema_new (json, NULL);
        if (!schema)
            exit (1);
        act_schema_destroy (&schema);
        count++;
        elapsed = s_now () - start;
    } while (elapsed < seconds);
    return elapsed * 1e9 / count;
}

int
main (int argc, char *argv [])
{
    double seconds = 1;
    static struct option options [] = {
        { "seconds", required_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "h", options, NULL)) != -1) {
        if (option == 's' && atof (optarg) > 0)
            seconds = atof (optarg);
        else {
            fprintf (option == 'h'? stdout: stderr,
                     "usage: bench_schema [--seconds S]   (S per figure, default 1)\n");
            return option == 'h'? 0: 2;
        }
    }
    json_t *json = s_parse (s_schema_text);
    act_err_t err = { 0 };
    act_schema_t *schema = act_schema_new (json, &err);
    if (!schema) {
        fprintf (stderr, "bench_schema: %s\n", err.message);
        return 1;
    }
    json_t *call = s_parse (s_call_text);
    json_t *bad = json_deep_copy (call);
    json_object_set_new (json_object_get (bad, "filter"), "max_age", json_string ("30"));

    double lookups = s_time_lookups (call, seconds);
    double valid = s_time_valid (schema, call, S_TREE, true, seconds);
    double invalid = s_time_valid (schema, bad, S_TREE, false, seconds);
    double valid_text = s_time_valid (schema, call, S_TEXT, true, seconds);
    double invalid_text = s_time_valid (schema, bad, S_TEXT, false, seconds);
    double valid_parsed = s_time_valid (schema, call, S_PARSED, true, seconds);
    double compile = s_time_compile (json, seconds);
    printf ("10 x json_object_get (baseline)   %8.0f ns\n", lookups);
    printf ("valid 10-parameter call, tree     %8.0f ns   (%.1fx baseline)\n",
            valid, valid / lookups);
    printf ("valid call, text in place         %8.0f ns   (%.1fx baseline)\n",
            valid_text, valid_text / lookups);
    printf ("valid call, text parsed to a tree %8.0f ns   (%.1fx baseline)\n",
            valid_parsed, valid_parsed / lookups);
    printf ("invalid call (last parameter)     %8.0f ns   (tree; message written)\n", invalid);
    printf ("invalid call, text in place       %8.0f ns   (message written)\n", invalid_text);
    printf ("compile the schema                %8.0f ns\n", compile);

    json_decref (bad);
    json_decref (call);
    act_schema_destroy (&schema);
    json_decref (json);
    return 0;
}

/*  =========================================================================
    client_prescribed - act_client_call and act_client_plan with wait, for
    calls without _outputPath to a tool that prescribes one, for
    tests/integration/test_client_prescribed.py.

    client_prescribed ENDPOINT

    The broker's worker serves "summarize" (outputPath {"const":
    "\u2020state.summary"}) and "note" (no outputPath). Prints one JSON
    object: the outcome or call id of each step, and what the client kept
    of TOOLS' answers (its "until"s) around them, so the test can tell
    whether TOOLS was asked again. Exits 0 when every request was answered.
    ========================================================================= */

#include "actd/act_client.h"
#include "actd/act_json.h"
#include "act_client_int.h"

//  Requests that failed (a step {"error": code})
static int s_failed;

//  When the kept answer for activity expires (0: none kept)
static json_int_t
s_until (act_client_t *client, const char *activity)
{
    return json_integer_value (json_array_get (json_object_get (client->prescribed, activity), 0));
}

//  One act_client_call: {"id", "outcome"} (outcome null when none was
//  awaited), or {"error": code} when it failed
static json_t *
s_call (act_client_t *client, const char *call, bool wait)
{
    char *id = NULL;
    json_t *outcome = NULL;
    act_err_t err = { NULL, "" };
    if (act_client_call (client, "c-presc", call, wait, &id, &outcome, &err)) {
        s_failed++;
        return json_pack ("{ss}", "error", err.code? err.code: "?");
    }
    json_t *step = json_pack ("{sssO}", "id", id? id: "", "outcome",
                              outcome? outcome: json_null ());
    free (id);
    json_decref (outcome);
    return step;
}

int
main (int argc, char *argv [])
{
    if (argc != 2) {
        fprintf (stderr, "usage: client_prescribed ENDPOINT\n");
        return 2;
    }
    act_client_t *client = act_client_new (argv [1]);
    if (!client)
        return 2;
    const char *summarize = "{\"_tool\":\"summarize\",\"text\":\"x\"}";
    json_t *report = json_object ();
    json_object_set_new (report, "first", s_call (client, summarize, true));
    json_int_t until = s_until (client, "summarize");
    json_object_set_new (report, "second", s_call (client, summarize, true));
    //  A second TOOLS would have kept a later answer
    json_object_set_new (report, "kept", json_boolean (until && s_until (client, "summarize")
                                                       == until));
    json_object_set_new (report, "no_wait", s_call (client, summarize, false));
    json_object_set_new (report, "note", s_call (client, "{\"_tool\":\"note\"}", true));
    json_object_set_new (report, "asked", json_pack ("[bb]", s_until (client, "summarize") != 0,
                                                     s_until (client, "note") != 0));
    //  Once expired, TOOLS is asked again
    json_array_set_new (json_object_get (client->prescribed, "summarize"), 0, json_integer (0));
    json_object_set_new (report, "expired", s_call (client, summarize, true));
    json_object_set_new (report, "asked_again", json_boolean (s_until (client, "summarize")
                                                              > until));
    json_t *ids = NULL;
    json_t *outcomes = NULL;
    act_err_t err = { NULL, "" };
    if (act_client_plan (client, "c-presc", "[{\"_tool\":\"summarize\",\"text\":\"p\"},"
                         "{\"_tool\":\"note\"}]", true, &ids, &outcomes, &err) == 0)
        json_object_set_new (report, "plan", json_pack ("{soso}", "ids", ids,
                                                        "outcomes", outcomes));
    else {
        s_failed++;
        json_object_set_new (report, "plan", json_pack ("{ss}", "error",
                                                        err.code? err.code: "?"));
    }
    char *text = act_json_dump (report);
    printf ("%s\n", text);
    free (text);
    json_decref (report);
    act_client_destroy (&client);
    return s_failed? 1: 0;
}

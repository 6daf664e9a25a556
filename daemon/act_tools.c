/*  =========================================================================
    act_tools - the registry of tools (see act_tools.h).
    ========================================================================= */

#include "act_tools.h"
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

//  One activity's declared tool, compiled
typedef struct {
    json_t *declaration;        //  As the READY declared it (for TOOLS and the log)
    act_schema_t *params;       //  Compiled params schema; NULL: any params
    char *output_const;         //  Prescribed _outputPath; NULL: none
    pcre2_code *output_regex;   //  outputPath.pattern, whole-match; NULL: none
    char *pattern_text;         //  RE as declared, for messages
    uint64_t version;           //  Its number among the tools recorded (from 1)
} s_tool_t;

struct _act_tools_t {
    act_settings_t *settings;   //  strict_activities, max_unserved_activities,
                                //  named activities (borrowed)
    act_pool_t *pool;           //  Workers of each activity (borrowed)
    zhashx_t *tools;            //  Activity -> s_tool_t, the latest declared
    zhashx_t *named;            //  Activities a READY named that the pool
                                //  keeps (value unused)
    uint64_t versions;          //  Tools recorded so far
    pcre2_match_data *match;    //  For output patterns (one match at a time)
    pcre2_match_context *limits;    //  Their backtracking limit, as act_schema's
};

static void
s_tool_destroy (s_tool_t **tool_p)
{
    s_tool_t *tool = *tool_p;
    if (tool) {
        json_decref (tool->declaration);
        act_schema_destroy (&tool->params);
        pcre2_code_free (tool->output_regex);
        free (tool->output_const);
        free (tool->pattern_text);
        free (tool);
        *tool_p = NULL;
    }
}

static void
s_tool_destructor (void **item)
{
    s_tool_destroy ((s_tool_t **) item);
}

//  The pool forgets activity (act_pool_idle): no worker serves it, so
//  none connected declares its tool; its name and tool go with it
static void
s_forgotten (void *arg, const char *activity)
{
    act_tools_t *self = (act_tools_t *) arg;
    zhashx_delete (self->tools, activity);
    zhashx_delete (self->named, activity);
}

act_tools_t *
act_tools_new (act_settings_t *settings, act_pool_t *pool)
{
    act_tools_t *self = (act_tools_t *) calloc (1, sizeof (act_tools_t));
    if (!self)
        return NULL;
    self->settings = settings;
    self->pool = pool;
    self->tools = zhashx_new ();
    zhashx_set_destructor (self->tools, s_tool_destructor);
    self->named = zhashx_new ();
    self->match = pcre2_match_data_create (1, NULL);
    self->limits = pcre2_match_context_create (NULL);
    if (!self->match || !self->limits)
        act_tools_destroy (&self);
    else {
        pcre2_set_match_limit (self->limits, 1000000);
        act_pool_on_forget (pool, s_forgotten, self);
    }
    return self;
}

void
act_tools_destroy (act_tools_t **self_p)
{
    if (self_p && *self_p) {
        act_tools_t *self = *self_p;
        act_pool_on_forget (self->pool, NULL, NULL);
        zhashx_destroy (&self->tools);
        zhashx_destroy (&self->named);
        pcre2_match_data_free (self->match);
        pcre2_match_context_free (self->limits);
        free (self);
        *self_p = NULL;
    }
}


//  --------------------------------------------------------------------------
//  Declarations, at READY

//  outputPath: {"const": "<output path>"} or {"pattern": "<regex>"}
static int
s_compile_output (s_tool_t *tool, const char *activity, const json_t *output, act_err_t *err)
{
    const json_t *constant = json_object_get (output, "const");
    const json_t *pattern = json_object_get (output, "pattern");
    if (!json_is_object (output) || json_object_size (output) != 1 || !(constant || pattern)
    ||  !json_is_string (constant? constant: pattern))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: outputPath must be "
                            "{\"const\": \"<output path>\"} or {\"pattern\": \"<regex>\"}",
                            activity);
    act_err_t why = { 0 };
    if (constant) {
        act_expr_t *expr = act_expr_parse (json_string_value (constant), true, &why);
        if (!expr)
            return act_err_set (err, ACT_E_BAD_ARGUMENT,
                                "tool %.64s: outputPath.const is not an output path: %s",
                                activity, why.message);
        act_expr_destroy (&expr);
        tool->output_const = strdup (json_string_value (constant));
        return 0;
    }
    //  A pattern JSON Schema's "pattern" takes (ECMA-262 escapes only:
    //  act_schema judges it, as for params), compiled with the same options
    //  but anchored at both ends: PROTOCOL.md 2.1 has the whole _outputPath
    //  match, where JSON Schema searches. (So the seeds' "^†" takes no
    //  output path at all; "^†.*" any. A search would let an unanchored
    //  "†notes\\.[a-z]+" take "†secrets.x || †notes.a".)
    const char *text = json_string_value (pattern);
    json_t *schema = json_pack ("{ssss}", "type", "string", "pattern", text);
    act_schema_t *checked = act_schema_new (schema, &why);
    json_decref (schema);
    if (!checked)
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: outputPath.pattern: %s",
                            activity, why.message);
    act_schema_destroy (&checked);
    int code;
    PCRE2_SIZE offset;
    tool->output_regex = pcre2_compile ((PCRE2_SPTR) text, json_string_length (pattern),
                                        PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY
                                        | PCRE2_ANCHORED | PCRE2_ENDANCHORED,
                                        &code, &offset, NULL);
    if (!tool->output_regex)
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: outputPath.pattern: "
                            "cannot be compiled at offset %zu", activity, (size_t) offset);
    tool->pattern_text = strdup (text);
    return 0;
}

//  Check and compile one tool description. Returns it, or NULL with err.
static s_tool_t *
s_tool_new (const char *activity, const json_t *names, const json_t *description,
            act_err_t *err)
{
    size_t index;
    const json_t *name;
    bool listed = false;
    json_array_foreach (names, index, name)
        listed = listed || streq (json_string_value (name), activity);
    if (!listed) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "tools names %.64s, which is not one of "
                     "its activities", activity);
        return NULL;
    }
    if (!json_is_object (description)) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: a tool description is an object",
                     activity);
        return NULL;
    }
    s_tool_t *tool = (s_tool_t *) calloc (1, sizeof (s_tool_t));
    tool->declaration = json_deep_copy (description);
    const char *key;
    json_t *value;
    act_err_t why = { 0 };
    json_object_foreach ((json_t *) description, key, value) {
        if (streq (key, "description")) {
            if (!json_is_string (value))
                act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: description is a string",
                             activity);
        }
        else
        if (streq (key, "params")) {
            tool->params = act_schema_new (value, &why);
            if (!tool->params)
                act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: params: %s", activity,
                             why.message);
        }
        else
        if (streq (key, "outputPath"))
            s_compile_output (tool, activity, value, err);
        else
            act_err_set (err, ACT_E_BAD_ARGUMENT, "tool %.64s: unknown field \"%.64s\" (a "
                         "tool has description, params and outputPath)", activity, key);
        if (err->code) {
            s_tool_destroy (&tool);
            break;
        }
    }
    return tool;
}

//  Record tool as activity's, logging a change of declaration with why
static void
s_tool_record (act_tools_t *self, const char *activity, s_tool_t *tool, const char *why)
{
    s_tool_t *old = (s_tool_t *) zhashx_lookup (self->tools, activity);
    if (old && !json_equal (old->declaration, tool->declaration)) {
        char *before = act_json_dump (old->declaration);
        char *after = act_json_dump (tool->declaration);
        act_log (LOG_NOTICE, "tool %s: %s: was %.400s, now %.400s", activity, why,
                 before, after);
        free (before);
        free (after);
    }
    tool->version = ++self->versions;
    zhashx_update (self->tools, activity, tool);
}

int
act_tools_declare (act_tools_t *self, const json_t *names, const json_t *tools,
                   const char *worker, act_err_t *err)
{
    act_err_clear (err);        //  A tool is refused when err is set after it
    if (tools && !json_is_object (tools))
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "tools is an object: {\"<activity>\": {tool description}}");
    size_t count = tools? json_object_size (tools): 0;
    s_tool_t **compiled = (s_tool_t **) calloc (count + 1, sizeof (s_tool_t *));
    const char **activities = (const char **) calloc (count + 1, sizeof (char *));
    size_t done = 0;
    const char *activity;
    json_t *description;
    if (tools)
        json_object_foreach ((json_t *) tools, activity, description) {
            compiled [done] = s_tool_new (activity, names, description, err);
            if (!compiled [done])
                break;
            activities [done++] = activity;
        }
    if (done < count)
        for (size_t i = 0; i < done; i++)
            s_tool_destroy (&compiled [i]);
    else {
        char *why = zsys_sprintf ("worker %s declares it differently; the latest READY "
                                  "wins", worker);
        for (size_t i = 0; i < done; i++)
            s_tool_record (self, activities [i], compiled [i], why);
        zstr_free (&why);
        size_t index;
        const json_t *name;
        json_array_foreach (names, index, name)
            zhashx_update (self->named, json_string_value (name), (void *) self);
    }
    free (compiled);
    free (activities);
    return done < count? -1: 0;
}

//  The tool of activity that the latest READY of a connected worker other
//  than gone declared (borrowed), with that worker; NULL: none did
static const json_t *
s_latest_declared (act_tools_t *self, const char *activity, act_worker_t *gone,
                   act_worker_t **declarer)
{
    const json_t *latest = NULL;
    *declarer = NULL;
    for (act_worker_t *worker = act_pool_first (self->pool); worker;
         worker = act_pool_next (self->pool)) {
        const json_t *declared = json_object_get (worker->tools, activity);
        if (worker != gone && declared && (!*declarer || worker->joined > (*declarer)->joined)) {
            latest = declared;
            *declarer = worker;
        }
    }
    return latest;
}

void
act_tools_left (act_tools_t *self, act_worker_t *worker)
{
    const char *activity;
    json_t *declared;
    json_object_foreach (worker->tools, activity, declared) {
        s_tool_t *now = (s_tool_t *) zhashx_lookup (self->tools, activity);
        act_worker_t *declarer;
        const json_t *latest = s_latest_declared (self, activity, worker, &declarer);
        //  Only when its declaration is in force, and another connected
        //  worker declared another (it compiled at that one's READY)
        if (!now || !json_equal (now->declaration, declared)
        ||  !latest || json_equal (latest, declared))
            continue;
        act_err_t err = { 0 };
        json_t *names = json_pack ("[s]", activity);
        s_tool_t *tool = s_tool_new (activity, names, latest, &err);
        json_decref (names);
        if (!tool)
            continue;
        char *why = zsys_sprintf ("worker %s, whose READY declared it, left; the declaration "
                                  "of worker %s, the latest READY of those connected, applies "
                                  "again", worker->name, declarer->name);
        s_tool_record (self, activity, tool, why);
        zstr_free (&why);
    }
}

bool
act_tools_named (act_tools_t *self, const char *activity)
{
    return zhashx_lookup (self->named, activity) != NULL;
}


//  --------------------------------------------------------------------------
//  Calls, at submit and at dispatch

int
act_tools_prescribe (act_tools_t *self, act_call_t **call_p, act_err_t *err)
{
    act_call_t *call = *call_p;
    if (zhashx_size (self->tools) == 0 || call->output)
        return 0;
    s_tool_t *tool = (s_tool_t *) zhashx_lookup (self->tools, call->tool);
    if (!tool || !tool->output_const)
        return 0;
    //  Rare: the call is made again from its tree with the path added
    json_t *json = act_call_json (call);
    json_t *changed = json? json_copy (json): NULL;
    if (!changed)
        return act_err_set (err, ACT_E_INTERNAL, "out of memory");
    json_object_set_new (changed, "_outputPath", json_string (tool->output_const));
    act_call_t *prescribed = act_call_parse (changed, err);
    json_decref (changed);
    if (!prescribed)
        return -1;
    act_call_destroy (call_p);
    *call_p = prescribed;
    return 1;
}

//  The call's _outputPath against the tool's prescribed one or pattern
static int
s_check_output (act_tools_t *self, s_tool_t *tool, const act_call_t *call, act_err_t *err)
{
    const char *path = call->output? call->output->text: NULL;
    if (tool->output_const && path && !streq (path, tool->output_const))
        return act_err_set (err, ACT_E_BAD_CALL, "tool %.64s prescribes \"_outputPath\" "
                            "'%.64s', not '%.64s'", call->tool, tool->output_const, path);
    if (!tool->output_regex)
        return 0;
    int rc = path? pcre2_match (tool->output_regex, (PCRE2_SPTR) path, strlen (path), 0, 0,
                                self->match, self->limits)
                 : PCRE2_ERROR_NOMATCH;
    if (rc >= 0)
        return 0;
    if (rc != PCRE2_ERROR_NOMATCH)
        return act_err_set (err, ACT_E_BAD_CALL, "tool %.64s: its \"_outputPath\" pattern "
                            "could not be matched against '%.64s' (error %d)", call->tool,
                            path, rc);
    return act_err_set (err, ACT_E_BAD_CALL, "tool %.64s takes an \"_outputPath\" that "
                        "matches '%.64s' as a whole%s%.64s", call->tool, tool->pattern_text,
                        path? ", not ": " (the call has none)", path? path: "");
}

int
act_tools_admit (act_tools_t *self, act_call_t *call, act_activity_t *activity,
                 uint64_t *checked, act_err_t *err)
{
    *checked = 0;
    if (self->settings->strict_activities && zlistx_size (activity->workers) == 0
    &&  !act_tools_named (self, call->tool)
    &&  !zhashx_lookup (self->settings->activities, call->tool))
        return act_err_set (err, ACT_E_UNKNOWN_ACTIVITY, "no worker serves or has served "
                            "activity %.64s, and the configuration does not name it "
                            "(strict_activities)", call->tool);
    if (!act_pool_admit (self->pool, activity, true))
        return act_err_set (err, ACT_E_BUSY, "activity %.64s: no worker serves or has "
                            "served it, the configuration does not name it, and %lld such "
                            "activities have calls already (max_unserved_activities)",
                            call->tool, self->settings->max_unserved_activities);
    s_tool_t *tool = zhashx_size (self->tools)
                   ? (s_tool_t *) zhashx_lookup (self->tools, call->tool): NULL;
    if (!tool)
        return 0;
    if (s_check_output (self, tool, call, err))
        return -1;
    if (!tool->params)
        return 0;
    //  Read from the call's text (with references, a copy of it): no tree.
    //  A reference's value is unknown until dispatch: the call is refused
    //  now only when no value would make it valid (a member missing or not
    //  allowed, a type wrong beside the reference...), and checked whole
    //  once resolved (*checked stays 0)
    act_err_t why = { 0 };
    bool valid = call->nrefs? act_schema_valid_unresolved (tool->params, call, &why)
                            : act_schema_valid_call (tool->params, call, &why);
    if (!valid)
        return act_err_set (err, why.code,
                            "params of %.64s: %s", call->tool, why.message);
    if (!call->nrefs)
        *checked = tool->version;
    return 0;
}

bool
act_tools_checks (act_tools_t *self, const char *activity, uint64_t checked)
{
    s_tool_t *tool = zhashx_size (self->tools)
                   ? (s_tool_t *) zhashx_lookup (self->tools, activity): NULL;
    return tool && tool->params && tool->version != checked;
}

int
act_tools_check_params (act_tools_t *self, const char *activity, const json_t *params,
                        uint64_t checked, act_err_t *err)
{
    s_tool_t *tool = zhashx_size (self->tools)
                   ? (s_tool_t *) zhashx_lookup (self->tools, activity): NULL;
    act_err_t why = { 0 };
    if (!tool || !tool->params || tool->version == checked
    ||  act_schema_valid (tool->params, params, &why))
        return 0;
    return act_err_set (err, ACT_E_BAD_PARAMS, "params of %.64s: %s", activity, why.message);
}


//  --------------------------------------------------------------------------
//  TOOLS

//  Connected workers serving activity
static size_t
s_workers (act_tools_t *self, const char *activity)
{
    size_t count = 0;
    for (act_worker_t *worker = act_pool_first (self->pool); worker;
         worker = act_pool_next (self->pool))
        for (act_activity_t *served = zlistx_first (worker->activities); served;
             served = zlistx_next (worker->activities))
            if (streq (served->name, activity)) {
                count++;
                break;
            }
    return count;
}

//  One activity's entry of TOOLS
static json_t *
s_tool_json (act_tools_t *self, const char *activity)
{
    s_tool_t *tool = (s_tool_t *) zhashx_lookup (self->tools, activity);
    json_t *entry = tool? json_deep_copy (tool->declaration): json_object ();
    json_object_set_new (entry, "workers", json_integer ((json_int_t) s_workers (self,
                                                                              activity)));
    return entry;
}

json_t *
act_tools_json (act_tools_t *self, const char *activity)
{
    json_t *body = json_object ();
    if (activity) {
        if (act_tools_named (self, activity))
            json_object_set_new (body, activity, s_tool_json (self, activity));
        return body;
    }
    for (void *item = zhashx_first (self->named); item; item = zhashx_next (self->named)) {
        const char *name = (const char *) zhashx_cursor (self->named);
        json_object_set_new (body, name, s_tool_json (self, name));
    }
    return body;
}

/*  =========================================================================
    actctl_tools - `actctl tools [ACTIVITY] [--format F]`: the tools the
    workers declared (TOOLS, PROTOCOL.md section 2.1), as a list people
    read, or in the shape a model API takes its tools in:

    json       TOOLS' answer as it is
    mcp        an MCP tools/list result: {"tools": [{name, description,
               inputSchema}]}
    openai     OpenAI's tools array: [{"type": "function", "function":
               {name, description, parameters}}]
    anthropic  Anthropic's tools array: [{name, description, input_schema}]

    A tool without params takes any object ({"type": "object"}): every
    model API wants an object schema. Tools come in byte order of name.
    OpenAI and Anthropic refuse a whole request when one tool's name is
    not 1 to 64 of [A-Za-z0-9_-], while activity names may hold any byte:
    such a tool is left out of those two formats, with a warning, rather
    than printed where it would make every tool unusable.
    ========================================================================= */

#include "actctl.h"

//  The formats --format takes
static const char *s_formats [] = { "json", "mcp", "openai", "anthropic" };

//  The input schema a model API gets for tool: its params when they are
//  an object schema, else {"type": "object"} (a new reference)
static json_t *
s_input_schema (const json_t *tool)
{
    json_t *params = json_object_get (tool, "params");
    if (json_is_object (params) && json_object_size (params))
        return json_deep_copy (params);
    return json_pack ("{s:s}", "type", "object");
}

//  One tool in format (mcp, openai or anthropic); a new object
static json_t *
s_model_tool (const char *format, const char *name, const json_t *tool)
{
    json_t *entry = json_object ();
    json_object_set_new (entry, "name", json_string (name));
    json_t *description = json_object_get (tool, "description");
    if (json_is_string (description))
        json_object_set (entry, "description", description);
    const char *key = streq (format, "mcp")? "inputSchema"
                    : streq (format, "openai")? "parameters": "input_schema";
    json_object_set_new (entry, key, s_input_schema (tool));
    if (streq (format, "openai"))
        return json_pack ("{s:s, s:o}", "type", "function", "function", entry);
    return entry;
}

//  The names of tools' keys, sorted (a new zlist of borrowed strings)
static zlist_t *
s_names (const json_t *tools)
{
    zlist_t *names = zlist_new ();
    const char *name;
    json_t *tool;
    json_object_foreach ((json_t *) tools, name, tool)
        zlist_append (names, (void *) name);
    zlist_sort (names, (zlist_compare_fn *) strcmp);
    return names;
}

//  Whether format's model API takes name as a tool name (OpenAI's and
//  Anthropic's rule: 1 to 64 of [A-Za-z0-9_-]; MCP sets none)
static bool
s_name_taken (const char *format, const char *name)
{
    if (streq (format, "mcp"))
        return true;
    size_t length = strlen (name);
    return length >= 1 && length <= 64
        && strspn (name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789_-") == length;
}

//  tools in format (mcp, openai or anthropic): a new JSON value; a tool
//  whose name the format's API refuses is left out, with a warning
static json_t *
s_for_models (const char *format, const json_t *tools)
{
    json_t *list = json_array ();
    zlist_t *names = s_names (tools);
    for (const char *name = zlist_first (names); name; name = zlist_next (names)) {
        if (s_name_taken (format, name))
            json_array_append_new (list, s_model_tool (format, name,
                                                       json_object_get (tools, name)));
        else
            fprintf (stderr, "actctl: tool %.80s left out: %s takes tool names of 1 to 64 "
                     "characters of A-Z, a-z, 0-9, '_' and '-'\n", name,
                     streq (format, "openai")? "OpenAI": "Anthropic");
    }
    zlist_destroy (&names);
    if (streq (format, "mcp"))
        return json_pack ("{s:o}", "tools", list);
    return list;
}

//  The list people read: a line per tool, its params and output path below
static void
s_print_list (const json_t *tools)
{
    zlist_t *names = s_names (tools);
    for (const char *name = zlist_first (names); name; name = zlist_next (names)) {
        const json_t *tool = json_object_get (tools, name);
        json_int_t workers = json_integer_value (json_object_get (tool, "workers"));
        const char *description = json_string_value (json_object_get (tool, "description"));
        printf ("%s (%" JSON_INTEGER_FORMAT " worker%s)%s%s\n", name, workers,
                actctl_plural (workers), description? ": ": "", description? description: "");
        const char *keys [] = { "params", "outputPath" };
        const char *labels [] = { "params", "output path" };
        for (size_t index = 0; index < 2; index++)
            if (json_object_get (tool, keys [index])) {
                char *text = act_json_dump (json_object_get (tool, keys [index]));
                printf ("    %s: %s\n", labels [index], text);
                free (text);
            }
    }
    if (!json_object_size (tools))
        printf ("no tools declared\n");
    zlist_destroy (&names);
}

int
actctl_tools (act_client_t *client, actctl_options_t *options, char **args, int nargs)
{
    const char *format = options->format;
    bool known = !format;
    for (size_t index = 0; format && index < sizeof s_formats / sizeof s_formats [0]; index++)
        known |= streq (format, s_formats [index]);
    if (!known) {
        fprintf (stderr, "actctl: --format is json, mcp, openai or anthropic, not %s\n", format);
        return 2;
    }
    act_err_t err = { 0 };
    json_t *tools = actctl_expect (act_client_tools (client, nargs? args [0]: NULL, &err),
                                   JSON_OBJECT, "TOOLS", &err);
    if (!tools)
        return actctl_fail (options, &err);
    if (!format && !options->json)
        s_print_list (tools);
    else
    if (!format || streq (format, "json"))
        actctl_print_json (tools);
    else {
        json_t *converted = s_for_models (format, tools);
        actctl_print_json (converted);
        json_decref (converted);
    }
    json_decref (tools);
    return 0;
}

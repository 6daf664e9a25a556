/*  =========================================================================
    act_http_metrics - GET /metrics: actd's STATS in the Prometheus text
    format 0.0.4 (see act_http_metrics.h and docs/http.md for the names).
    Durations are in seconds, as Prometheus names them; the histograms'
    bounds come from STATS (milliseconds) and are divided by 1000.
    ========================================================================= */

#include "act_http_metrics.h"

#define S_STATS_MS      5000    //  STATS waits this long at most (else actd_up 0)

//  Write one family's HELP and TYPE lines
static void
s_family (FILE *out, const char *name, const char *type, const char *help)
{
    fprintf (out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

//  A label value escaped as the text format wants (\\, \", \n)
static void
s_label (FILE *out, const char *value)
{
    fputc ('"', out);
    for (const char *c = value; *c; c++)
        if (*c == '\\' || *c == '"')
            fprintf (out, "\\%c", *c);
        else
        if (*c == '\n')
            fputs ("\\n", out);
        else
            fputc (*c, out);
    fputc ('"', out);
}

//  One sample: name{label="value"} number (label NULL: none)
static void
s_sample (FILE *out, const char *name, const char *label, const char *value, json_t *number)
{
    fputs (name, out);
    if (label) {
        fprintf (out, "{%s=", label);
        s_label (out, value);
        fputc ('}', out);
    }
    if (json_is_integer (number))
        fprintf (out, " %" JSON_INTEGER_FORMAT "\n", json_integer_value (number));
    else
        fprintf (out, " %.15g\n", json_number_value (number));
}

//  A family of one unlabelled sample
static void
s_single (FILE *out, const char *name, const char *type, const char *help, json_t *number)
{
    s_family (out, name, type, help);
    s_sample (out, name, NULL, NULL, number);
}

//  The samples of one histogram of STATS ({"le", "counts", "count",
//  "sum"}), scale dividing its bounds and sum (1000: ms to seconds)
static void
s_histogram (FILE *out, const char *name, const char *label, const char *value,
             json_t *hist, double scale)
{
    json_t *bounds = json_object_get (hist, "le");
    json_t *counts = json_object_get (hist, "counts");
    for (size_t i = 0; i < json_array_size (bounds) && i < json_array_size (counts); i++) {
        json_t *bound = json_array_get (bounds, i);
        fprintf (out, "%s_bucket{", name);
        if (label) {
            fprintf (out, "%s=", label);
            s_label (out, value);
            fputc (',', out);
        }
        if (json_is_number (bound))
            fprintf (out, "le=\"%g\"} ", json_number_value (bound) / scale);
        else
            fputs ("le=\"+Inf\"} ", out);
        fprintf (out, "%" JSON_INTEGER_FORMAT "\n",
                 json_integer_value (json_array_get (counts, i)));
    }
    for (int part = 0; part < 2; part++) {
        fprintf (out, "%s_%s", name, part? "count": "sum");
        if (label) {
            fprintf (out, "{%s=", label);
            s_label (out, value);
            fputc ('}', out);
        }
        if (part)
            fprintf (out, " %" JSON_INTEGER_FORMAT "\n",
                     json_integer_value (json_object_get (hist, "count")));
        else
            fprintf (out, " %.15g\n", json_number_value (json_object_get (hist, "sum")) / scale);
    }
}

//  A family of one sample read from a member of one of STATS' objects
typedef struct {
    const char *object;         //  STATS' member holding it ("unserved")
    const char *member;         //  Its member there ("activities")
    const char *name;           //  The family's name
    const char *type;           //  "gauge" or "counter"
    const char *help;           //  Its HELP text
} s_family_t;

//  The families of the bounds on activities: those no worker serves
//  that have calls, those workers serve, and what one READY may name
static const s_family_t s_bounds [] = {
    { "unserved", "activities", "actd_unserved_activities", "gauge",
      "Activities no worker serves or has served, and the config does not name, "
      "with calls now" },
    { "unserved", "max", "actd_unserved_activities_max", "gauge",
      "server/max_unserved_activities: past it a call to one more is busy" },
    { "unserved", "refused", "actd_unserved_refused_total", "counter",
      "Calls refused busy for server/max_unserved_activities since actd started" },
    { "served", "activities", "actd_served_activities", "gauge",
      "Activities connected workers serve now" },
    { "served", "max", "actd_served_activities_max", "gauge",
      "server/max_served_activities: past it a READY naming more is busy" },
    { "served", "refused", "actd_served_refused_total", "counter",
      "READYs refused busy for server/max_served_activities since actd started" },
    { "served", "max_per_worker", "actd_worker_activities_max", "gauge",
      "server/max_worker_activities: a READY naming more is refused" },
    { "served", "refused_per_worker", "actd_worker_activities_refused_total", "counter",
      "READYs refused for server/max_worker_activities since actd started" },
};

//  The families of s_bounds whose object STATS has (an actd before them
//  has none: nothing is written for it)
static void
s_bound_families (FILE *out, json_t *stats)
{
    for (size_t i = 0; i < sizeof s_bounds / sizeof s_bounds [0]; i++) {
        json_t *object = json_object_get (stats, s_bounds [i].object);
        if (object)
            s_single (out, s_bounds [i].name, s_bounds [i].type, s_bounds [i].help,
                      json_object_get (object, s_bounds [i].member));
    }
}

//  The families labelled by activity
static void
s_activities (FILE *out, json_t *activities)
{
    const char *name;
    json_t *activity;
    const struct { const char *metric, *field, *help; } gauges [] = {
        { "actd_activity_workers", "workers", "Workers serving the activity now" },
        { "actd_activity_queued", "queued", "Calls of the activity in its queue now" },
        { "actd_activity_running", "running", "Calls of the activity running now" }
    };
    for (size_t i = 0; i < sizeof gauges / sizeof gauges [0]; i++) {
        s_family (out, gauges [i].metric, "gauge", gauges [i].help);
        json_object_foreach (activities, name, activity)
            s_sample (out, gauges [i].metric, "activity", name,
                      json_object_get (activity, gauges [i].field));
    }
    s_family (out, "actd_activity_calls_total", "counter",
              "Calls of the activity ended since actd started, by outcome");
    json_object_foreach (activities, name, activity) {
        const char *status;
        json_t *count;
        json_object_foreach (json_object_get (activity, "outcomes"), status, count) {
            fputs ("actd_activity_calls_total{activity=", out);
            s_label (out, name);
            fprintf (out, ",outcome=\"%s\"} %" JSON_INTEGER_FORMAT "\n", status,
                     json_integer_value (count));
        }
    }
    const struct { const char *metric, *field, *help; } histograms [] = {
        { "actd_activity_queue_seconds", "queue", "Wait in the queue before each dispatch" },
        { "actd_activity_run_seconds", "run", "Each attempt, from dispatch to its end" },
        { "actd_activity_total_seconds", "total", "Each call, from acceptance to its end" }
    };
    for (size_t i = 0; i < sizeof histograms / sizeof histograms [0]; i++) {
        s_family (out, histograms [i].metric, "histogram", histograms [i].help);
        json_object_foreach (activities, name, activity)
            s_histogram (out, histograms [i].metric, "activity", name,
                         json_object_get (json_object_get (activity, "latency_ms"),
                                          histograms [i].field), 1000);
    }
}

//  The workers' labels, one a worker of STATS' "workers" (in the order
//  they joined): its name, unique as a series must be. Worker names need
//  not be unique: the first worker of a name has it, the next ones have
//  "NAME#2", "NAME#3"... skipping any name a worker has or a label took
//  (a worker named "w#2" keeps its name, and the second "w" is "w#3"), so
//  no two series are one, and the same workers get the same labels at
//  each scrape.
static json_t *
s_worker_labels (json_t *workers)
{
    json_t *labels = json_array ();
    json_t *taken = json_object ();     //  Names and labels -> true
    size_t index;
    json_t *worker;
    json_array_foreach (workers, index, worker) {
        const char *name = json_string_value (json_object_get (worker, "name"));
        json_object_set_new (taken, name? name: "", json_true ());
    }
    //  Names given to a worker already -> the next suffix to try (each
    //  tried once: thousands of workers of one name stay cheap)
    json_t *named = json_object ();
    json_array_foreach (workers, index, worker) {
        const char *name = json_string_value (json_object_get (worker, "name"));
        name = name? name: "";
        json_int_t suffix = json_integer_value (json_object_get (named, name));
        char *label = strdup (name);
        while (suffix && json_object_get (taken, label)) {
            free (label);
            label = zsys_sprintf ("%s#%" JSON_INTEGER_FORMAT, name, suffix++);
        }
        json_object_set_new (named, name, json_integer (suffix? suffix: 2));
        json_object_set_new (taken, label, json_true ());
        json_array_append_new (labels, json_string_nocheck (label));
        free (label);
    }
    json_decref (named);
    json_decref (taken);
    return labels;
}

//  The families labelled by worker, and the count of workers
static void
s_workers (FILE *out, json_t *workers)
{
    json_t *count = json_integer ((json_int_t) json_array_size (workers));
    s_single (out, "actd_workers", "gauge", "Workers connected now", count);
    json_decref (count);
    const struct { const char *metric, *field, *help; } gauges [] = {
        { "actd_worker_capacity", "capacity", "Tasks the worker takes at once" },
        { "actd_worker_running", "running", "Tasks the worker holds now" }
    };
    json_t *labels = s_worker_labels (workers);
    size_t index;
    json_t *worker;
    for (size_t i = 0; i < sizeof gauges / sizeof gauges [0]; i++) {
        s_family (out, gauges [i].metric, "gauge", gauges [i].help);
        json_array_foreach (workers, index, worker)
            s_sample (out, gauges [i].metric, "worker",
                      json_string_value (json_array_get (labels, index)),
                      json_object_get (worker, gauges [i].field));
    }
    json_decref (labels);
}

//  The families of the calls and of the store
static void
s_totals (FILE *out, json_t *stats)
{
    json_t *calls = json_object_get (stats, "calls");
    s_single (out, "actd_calls_accepted_total", "counter",
              "Calls accepted, over the life of the store",
              json_object_get (calls, "accepted"));
    s_family (out, "actd_calls_ended_total", "counter",
              "Calls ended, by outcome, over the life of the store");
    const char *ended [] = { "ok", "error", "timeout", "skipped", "cancelled" };
    for (size_t i = 0; i < sizeof ended / sizeof ended [0]; i++)
        s_sample (out, "actd_calls_ended_total", "outcome", ended [i],
                  json_object_get (calls, ended [i]));
    s_family (out, "actd_calls", "gauge", "Live calls, by state");
    const char *live [] = { "running", "queued", "waiting" };
    for (size_t i = 0; i < sizeof live / sizeof live [0]; i++)
        s_sample (out, "actd_calls", "state", live [i], json_object_get (calls, live [i]));
    json_t *store = json_object_get (stats, "store");
    s_single (out, "actd_store_commits_total", "counter", "Store commits since actd started",
              json_object_get (store, "commits"));
    s_single (out, "actd_store_writes_total", "counter",
              "Writes the store commits carried since actd started",
              json_object_get (store, "writes"));
    if (json_object_get (store, "commit_ms")) {
        s_family (out, "actd_store_commit_seconds", "histogram", "Time each commit took");
        s_histogram (out, "actd_store_commit_seconds", NULL, NULL,
                     json_object_get (store, "commit_ms"), 1000);
    }
    if (json_object_get (store, "batch")) {
        s_family (out, "actd_store_batch_writes", "histogram", "Writes each commit carried");
        s_histogram (out, "actd_store_batch_writes", NULL, NULL,
                     json_object_get (store, "batch"), 1);
    }
}

char *
act_http_metrics_text (json_t *stats)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream (&text, &size);
    if (!out)
        return NULL;
    json_t *up = json_integer (stats? 1: 0);
    s_single (out, "actd_up", "gauge", "1 when actd answered STATS", up);
    json_decref (up);
    if (stats) {
        json_t *uptime = json_real (json_number_value (json_object_get (stats, "uptime_ms"))
                                    / 1000.0);
        s_single (out, "actd_uptime_seconds", "gauge", "Since actd started", uptime);
        json_decref (uptime);
        s_single (out, "actd_contexts", "gauge", "Contexts in the store",
                  json_object_get (stats, "contexts"));
        s_single (out, "actd_messages", "gauge", "Messages in the store",
                  json_object_get (stats, "messages"));
        if (json_object_get (stats, "deleted"))
            s_single (out, "actd_contexts_deleted_total", "counter",
                      "Contexts deleted, over the life of the store",
                      json_object_get (stats, "deleted"));
        s_totals (out, stats);
        s_bound_families (out, stats);
        s_activities (out, json_object_get (stats, "activities"));
        s_workers (out, json_object_get (stats, "workers"));
    }
    fclose (out);
    return text;
}

enum MHD_Result
act_http_metrics_handle (act_http_req_t *req)
{
    //  A down actd is reported as actd_up 0 well within Prometheus'
    //  default scrape timeout (10 s), whatever request_timeout_ms is
    int timeout = req->config->request_timeout_ms < S_STATS_MS? req->config->request_timeout_ms
                                                              : S_STATS_MS;
    act_reply_t *reply = act_http_broker_ask (req->broker, timeout, "STATS", NULL);
    //  A refusal (STATS needs the admin right) is an error; silence, or
    //  no connection to actd (unreachable), is actd_up 0, which is what a
    //  scrape of a down actd should say
    char *code = reply && streq (reply->verb, "ERROR")? act_reply_arg (reply, 0): NULL;
    bool away = code && streq (code, ACT_CLIENT_UNREACHABLE);
    free (code);
    if (reply && streq (reply->verb, "ERROR") && !away)
        return act_http_req_reply (req, reply, 500);
    char *text = reply && streq (reply->verb, "VALUE")? act_reply_arg (reply, 0): NULL;
    json_t *stats = text? json_loads (text, 0, NULL): NULL;
    free (text);
    act_reply_destroy (&reply);
    char *body = act_http_metrics_text (stats);
    json_decref (stats);
    if (!body)
        return act_http_req_error (req, ACT_E_INTERNAL, "out of memory");
    enum MHD_Result rc = act_http_req_send (req, 200, "text/plain; version=0.0.4; charset=utf-8",
                                            body, strlen (body));
    free (body);
    return rc;
}

/*  =========================================================================
    actd-example-worker - a worker on the C library, serving:

      upper    {"text": s}  -> s in upper case
      echo     params       -> params
      weather  {"city": s}  -> branch 0 {"city", "sky": "sunny"} when s has
                               an even length, else branch 1 (rainy)
      sleep    {"ms": n}    -> {"slept": n} after n ms (0 to INT_MAX, else
                               FAIL bad_params), answered from a timer: the
                               loop keeps heartbeating meanwhile

    actd-example-worker [--endpoint EP] [--name NAME] [--capacity N]
                        [--heartbeat-ms N] [--curve-server KEY --curve-cert FILE]
    ========================================================================= */

#include <ctype.h>
#include <getopt.h>
#include "actd/act_worker.h"
#include "actd/act_wire.h"

static void
s_upper (act_task_t *task, void *arg)
{
    const char *text = json_string_value (json_object_get (act_task_params (task), "text"));
    if (!text) {
        act_task_fail (task, "bad_params", "upper needs {\"text\": string}", false);
        return;
    }
    char *upper = strdup (text);
    for (char *c = upper; *c; c++)
        *c = (char) toupper ((unsigned char) *c);
    json_t *result = json_string (upper);
    act_task_result (task, result, 0);
    json_decref (result);
    free (upper);
}

static void
s_echo (act_task_t *task, void *arg)
{
    act_task_result (task, act_task_params (task), 0);
}

static void
s_weather (act_task_t *task, void *arg)
{
    const char *city = json_string_value (json_object_get (act_task_params (task), "city"));
    if (!city) {
        act_task_fail (task, "bad_params", "weather needs {\"city\": string}", false);
        return;
    }
    bool sunny = strlen (city) % 2 == 0;
    json_t *result = json_pack ("{ssss}", "city", city, "sky", sunny? "sunny": "rainy");
    act_task_result (task, result, sunny? 0: 1);
    json_decref (result);
}

static void
s_woke (act_worker_t *worker, void *arg)
{
    act_task_t *task = (act_task_t *) arg;
    json_t *result = json_pack ("{sO}", "slept", json_object_get (act_task_params (task), "ms"));
    act_task_result (task, result, 0);
    json_decref (result);
}

static void
s_sleep (act_task_t *task, void *arg)
{
    json_t *ms = json_object_get (act_task_params (task), "ms");
    if (!json_is_integer (ms) || json_integer_value (ms) < 0
    ||  json_integer_value (ms) > INT_MAX) {
        //  The timer takes an int: a larger ms would wrap (3000000000: at once)
        act_task_fail (task, "bad_params", "sleep needs {\"ms\": integer from 0 to 2147483647}",
                       false);
        return;
    }
    act_worker_timer (act_task_worker (task), (int) json_integer_value (ms), s_woke, task);
}

int
main (int argc, char *argv [])
{
    const char *endpoint = ACT_WORKER_ENDPOINT;
    const char *name = "example-c";
    const char *curve_server = NULL, *curve_cert = NULL;
    uint64_t capacity = 8, heartbeat = 1000;
    bool numbers = true;        //  Every number given was one
    static struct option options [] = {
        { "endpoint", required_argument, 0, 'e' },
        { "name", required_argument, 0, 'n' },
        { "capacity", required_argument, 0, 'c' },
        { "heartbeat-ms", required_argument, 0, 'b' },
        { "curve-server", required_argument, 0, 's' },
        { "curve-cert", required_argument, 0, 'k' },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1) {
        if (option == 'e')
            endpoint = optarg;
        else
        if (option == 'n')
            name = optarg;
        else
        if (option == 'c')
            numbers &= act_decimal_parse (optarg, strlen (optarg), 100000, &capacity);
        else
        if (option == 'b')
            numbers &= act_decimal_parse (optarg, strlen (optarg), INT_MAX, &heartbeat);
        else
        if (option == 's')
            curve_server = optarg;
        else
        if (option == 'k')
            curve_cert = optarg;
        else {
            fprintf (option == 'h'? stdout: stderr,
                     "usage: actd-example-worker [--endpoint EP] [--name NAME] "
                     "[--capacity N] [--heartbeat-ms N] "
                     "[--curve-server KEY --curve-cert FILE]\n");
            return option == 'h'? 0: 2;
        }
    }
    if (!numbers || capacity < 1 || heartbeat < 10) {
        fprintf (stderr, "actd-example-worker: --capacity takes a whole number of 1 to 100000, "
                         "--heartbeat-ms one of 10 to %d\n", INT_MAX);
        return 2;
    }
    if (!curve_server != !curve_cert) {
        fprintf (stderr, "actd-example-worker: --curve-server and --curve-cert go together\n");
        return 2;
    }
    act_worker_t *worker = act_worker_new (endpoint, name);
    if (!worker) {
        fprintf (stderr, "actd-example-worker: --name takes 1 to %d bytes\n",
                 ACT_WORKER_MAX_NAME);
        return 2;
    }
    int rc = curve_server? act_worker_set_curve (worker, curve_server, curve_cert): 0;
    if (rc == -2)
        fprintf (stderr, "actd-example-worker: --curve-server: '%s' is not a CURVE public "
                         "key (40 characters of Z85, as actctl keygen prints it)\n",
                 curve_server);
    else
    if (rc)
        fprintf (stderr, "actd-example-worker: cannot load the certificate %s\n", curve_cert);
    if (rc) {
        act_worker_destroy (&worker);
        return 2;
    }
    act_worker_set_capacity (worker, (size_t) capacity);
    act_worker_set_heartbeat (worker, (int) heartbeat, 3);
    act_worker_serve (worker, "upper", s_upper, NULL);
    act_worker_serve (worker, "echo", s_echo, NULL);
    act_worker_serve (worker, "weather", s_weather, NULL);
    act_worker_serve (worker, "sleep", s_sleep, NULL);
    zsys_info ("actd-example-worker %s serving upper, echo, weather, sleep at %s",
               name, endpoint);
    rc = act_worker_run (worker);
    act_worker_destroy (&worker);
    return rc;
}

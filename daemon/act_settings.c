/*  =========================================================================
    act_settings - defaults and the config file.

    The config file is in CZMQ's ZPL format (zconfig), read and parsed by
    act_settings_file, which knows the line of each item; here each value
    is checked, and a problem is reported with the line it came from.

    A section or a setting may be given more than once: each is read in
    the file's order, a later value overriding an earlier one, so that a
    section given twice reads as one section holding both (the defaults
    sections first, wherever they are: the activities start from them).
    ========================================================================= */

#include <math.h>
#include <syslog.h>
#include "act_settings.h"
#include "act_settings_file.h"

static void
s_activity_destroy (void **item)
{
    free (*item);
    *item = NULL;
}

static void
s_tenant_destroy (void **item)
{
    act_tenant_settings_t *tenant = (act_tenant_settings_t *) *item;
    free (tenant->name);
    free (tenant->prefix);
    free (tenant->keys);
    free (tenant);
    *item = NULL;
}

static void
s_group_destroy (void **item)
{
    act_group_settings_t *group = (act_group_settings_t *) *item;
    free (group->name);
    zlistx_destroy (&group->patterns);
    free (group->keys);
    free (group);
    *item = NULL;
}

act_settings_t *
act_settings_new (void)
{
    act_settings_t *self = calloc (1, sizeof *self);
    self->client_endpoint = strdup ("tcp://127.0.0.1:5555");
    self->worker_endpoint = strdup ("tcp://127.0.0.1:5556");
    self->store = strdup ("actd.db");
    self->sync = ACT_SYNC_FULL;
    self->early_tasks = true;
    self->hold_us = 1000;
    self->io_batch = true;
    self->heartbeat_ms = 1000;
    self->liveness = 3;
    self->mdp_heartbeat_ms = 2500;
    self->max_watches = 10000;
    self->ipc_mode = 0600;
    self->retain_ms = 0;
    self->max_message_bytes = 1048576;
    self->max_reply_bytes = 8388608;
    self->max_client_bytes = 64 * 1024 * 1024;
    self->max_worker_bytes = 64 * 1024 * 1024;
    self->max_queued_calls = 1000000;
    self->max_unserved_activities = 1024;
    self->max_worker_activities = 1024;
    self->max_served_activities = 4096;
    self->shutdown_grace_ms = 10000;
    self->context_idle_ms = 60000;
    self->max_contexts = 10000;
    self->lease_ms = 10000;
    self->store_timeout_ms = 3000;
    self->log_level = LOG_INFO;
    self->log_syslog = true;
    self->defaults = (act_activity_settings_t) {
        300000, { 3, 1000, 2.0, 60000 }, 100000, 60000
    };
    self->activities = zhashx_new ();
    zhashx_set_destructor (self->activities, s_activity_destroy);
    self->tenants = zlistx_new ();
    zlistx_set_destructor (self->tenants, s_tenant_destroy);
    self->worker_groups = zlistx_new ();
    zlistx_set_destructor (self->worker_groups, s_group_destroy);
    return self;
}

void
act_settings_destroy (act_settings_t **self_p)
{
    if (self_p && *self_p) {
        act_settings_t *self = *self_p;
        free (self->client_endpoint);
        free (self->worker_endpoint);
        free (self->store);
        free (self->server_key);
        free (self->client_keys);
        free (self->worker_keys);
        free (self->config_file);
        free (self->broker_id);
        free (self->advertise);
        zhashx_destroy (&self->activities);
        zlistx_destroy (&self->tenants);
        zlistx_destroy (&self->worker_groups);
        free (self);
        *self_p = NULL;
    }
}

const act_activity_settings_t *
act_settings_activity (act_settings_t *self, const char *name)
{
    act_activity_settings_t *own = zhashx_lookup (self->activities, name);
    return own? own: &self->defaults;
}


//  --------------------------------------------------------------------------
//  Values

typedef struct {
    act_settings_file_t *file;  //  The parsed file: the line of each item
    const char *path;           //  The file's name, for messages
    char *message;              //  Where the first error goes
    size_t size;                //  Its size
    int rc;                     //  -1 once an error was found
} s_reader_t;

//  Report problem with the setting at path, given by item (the first
//  problem found is the one reported)
static void
s_error (s_reader_t *reader, zconfig_t *item, const char *path, const char *problem)
{
    if (reader->rc == 0)
        snprintf (reader->message, reader->size, "%s line %d: %s: %s", reader->path,
                  act_settings_file_line (reader->file, item), path, problem);
    reader->rc = -1;
}

//  A setting has a value, not settings of its own: false (and an error
//  naming the first one) if item has any
static bool
s_leaf (s_reader_t *reader, zconfig_t *item, const char *path)
{
    zconfig_t *child = zconfig_child (item);
    if (!child)
        return true;
    char *inner = zsys_sprintf ("%s/%s", path, zconfig_name (child));
    s_error (reader, child, inner, "unknown setting");
    zstr_free (&inner);
    return false;
}

//  A section has settings, not a value: false (and an error naming it)
//  if item has one ("defaults = 5" once passed for an empty section)
static bool
s_section (s_reader_t *reader, zconfig_t *item, const char *path)
{
    const char *value = zconfig_value (item);
    if (!value || !*value)
        return true;
    s_error (reader, item, path, "a section takes no value");
    return false;
}

//  An integer setting, from least to most (the maxima keep every sum and
//  product actd makes of its settings far from overflowing)
static void
s_integer (s_reader_t *reader, zconfig_t *item, const char *path, long long least,
           long long most, long long *target)
{
    if (!s_leaf (reader, item, path))
        return;
    const char *text = zconfig_value (item);
    char *end;
    errno = 0;
    long long value = text? strtoll (text, &end, 10): 0;
    char problem [160];
    if (!text || !*text || *end || (errno && value != LLONG_MAX) || value < least)
        snprintf (problem, sizeof problem, "'%.64s' is not an integer of at least %lld",
                  text? text: "", least);
    else
    if (errno || value > most)
        snprintf (problem, sizeof problem, "'%.64s' is above the maximum of %lld", text, most);
    else {
        *target = value;
        return;
    }
    s_error (reader, item, path, problem);
}

//  A boolean setting: 1/true/yes or 0/false/no
static void
s_boolean (s_reader_t *reader, zconfig_t *item, const char *path, bool *target)
{
    if (!s_leaf (reader, item, path))
        return;
    const char *text = zconfig_value (item);
    if (text && (streq (text, "1") || streq (text, "true") || streq (text, "yes")))
        *target = true;
    else
    if (text && (streq (text, "0") || streq (text, "false") || streq (text, "no")))
        *target = false;
    else
        s_error (reader, item, path, "must be 1 or 0");
}

//  A string setting, not empty; it replaces what target held
static void
s_string (s_reader_t *reader, zconfig_t *item, const char *path, char **target)
{
    if (!s_leaf (reader, item, path))
        return;
    const char *text = zconfig_value (item);
    if (!text || !*text)
        s_error (reader, item, path, "must not be empty");
    else {
        free (*target);
        *target = strdup (text);
    }
}

//  Read the settings of a "defaults/retry" or "activities/NAME/retry"
//  section (path)
static void
s_retry (s_reader_t *reader, zconfig_t *section, const char *path, act_retry_t *target)
{
    for (zconfig_t *field = zconfig_child (section); field; field = zconfig_next (field)) {
        const char *key = zconfig_name (field);
        char *inner = zsys_sprintf ("%s/%s", path, key);
        if (streq (key, "max_attempts"))
            s_integer (reader, field, inner, 1, ACT_SETTINGS_MAX_COUNT, &target->max_attempts);
        else
        if (streq (key, "initial_ms"))
            s_integer (reader, field, inner, 0, ACT_SETTINGS_MAX_MS, &target->initial_ms);
        else
        if (streq (key, "max_ms"))
            s_integer (reader, field, inner, 0, ACT_SETTINGS_MAX_MS, &target->max_ms);
        else
        if (streq (key, "backoff") && s_leaf (reader, field, inner)) {
            //  strtod takes "nan" and "inf" too
            const char *text = zconfig_value (field);
            char *end;
            double value = text? strtod (text, &end): 0;
            if (!text || !*text || *end || !isfinite (value) || value < 1.0)
                s_error (reader, field, inner, "must be a number of at least 1");
            else
                target->backoff = value;
        }
        else
        if (!streq (key, "backoff"))
            s_error (reader, field, inner, "unknown setting");
        zstr_free (&inner);
    }
}

//  Read the settings of a "defaults" or "activities/NAME" section
static void
s_activity (s_reader_t *reader, zconfig_t *section, const char *prefix,
            act_activity_settings_t *target)
{
    for (zconfig_t *item = zconfig_child (section); item; item = zconfig_next (item)) {
        const char *name = zconfig_name (item);
        char *path = zsys_sprintf ("%s/%s", prefix, name);
        if (streq (name, "timeout_ms"))
            s_integer (reader, item, path, 1, ACT_SETTINGS_MAX_MS, &target->timeout_ms);
        else
        if (streq (name, "max_queue"))
            s_integer (reader, item, path, 1, ACT_SETTINGS_MAX_COUNT, &target->max_queue);
        else
        if (streq (name, "schedule_timeout_ms"))
            s_integer (reader, item, path, 1, ACT_SETTINGS_MAX_MS,
                       &target->schedule_timeout_ms);
        else
        if (streq (name, "retry")) {
            if (s_section (reader, item, path))
                s_retry (reader, item, path, &target->retry);
        }
        else
            s_error (reader, item, path, "unknown setting");
        zstr_free (&path);
    }
}

//  store/sync: full or normal
static void
s_sync (s_reader_t *reader, zconfig_t *item, const char *path, act_sync_t *target)
{
    if (!s_leaf (reader, item, path))
        return;
    const char *text = zconfig_value (item);
    if (text && streq (text, "full"))
        *target = ACT_SYNC_FULL;
    else
    if (text && streq (text, "normal"))
        *target = ACT_SYNC_NORMAL;
    else
        s_error (reader, item, path, "must be full or normal");
}

//  log/level: one of the names act_log_level_parse knows
static void
s_log_level (s_reader_t *reader, zconfig_t *item, const char *path, int *target)
{
    if (!s_leaf (reader, item, path))
        return;
    int level = act_log_level_parse (zconfig_value (item));
    if (level < 0)
        s_error (reader, item, path, "must be error, warning, notice, info or debug");
    else
        *target = level;
}

//  server/ipc_mode: octal permissions, at most 0777
static void
s_mode (s_reader_t *reader, zconfig_t *item, const char *path, int *target)
{
    if (!s_leaf (reader, item, path))
        return;
    const char *text = zconfig_value (item);
    char *end;
    long value = text? strtol (text, &end, 8): -1;
    if (!text || !*text || *end || value < 0 || value > 0777)
        s_error (reader, item, path, "must be octal permissions such as 0660");
    else
        *target = (int) value;
}

//  How a plain setting's value is read
typedef enum {
    S_STRING,                   //  Not empty (char *)
    S_INTEGER,                  //  From least to most (long long)
    S_BOOLEAN,                  //  1/0, true/false, yes/no (bool)
    S_MODE,                     //  Octal permissions (int)
    S_SYNC,                     //  full or normal (act_sync_t)
    S_LEVEL                     //  A syslog level's name (int)
} s_kind_t;

//  A setting of the server, store, log or security section, as Redis's
//  config table has them: one line each, so that adding one is one line
//  (and its field, default and documentation)
typedef struct {
    const char *path;           //  "section/name"
    s_kind_t kind;              //  How its value is read
    long long least;            //  S_INTEGER's range
    long long most;
    size_t offset;              //  Its field in act_settings_t
} s_setting_t;

#define S_FIELD(field) offsetof (act_settings_t, field)
static const s_setting_t s_settings [] = {
    { "server/client_endpoint", S_STRING, 0, 0, S_FIELD (client_endpoint) },
    { "server/worker_endpoint", S_STRING, 0, 0, S_FIELD (worker_endpoint) },
    { "server/heartbeat_ms", S_INTEGER, 10, ACT_SETTINGS_MAX_MS, S_FIELD (heartbeat_ms) },
    { "server/liveness", S_INTEGER, 1, ACT_SETTINGS_MAX_LIVENESS, S_FIELD (liveness) },
    { "server/mdp_heartbeat_ms", S_INTEGER, 10, ACT_SETTINGS_MAX_MS, S_FIELD (mdp_heartbeat_ms) },
    { "server/ipc_mode", S_MODE, 0, 0, S_FIELD (ipc_mode) },
    { "server/max_watches", S_INTEGER, 0, ACT_SETTINGS_MAX_COUNT, S_FIELD (max_watches) },
    { "server/max_message_bytes", S_INTEGER, 1024, ACT_SETTINGS_MAX_BYTES,
      S_FIELD (max_message_bytes) },
    { "server/max_reply_bytes", S_INTEGER, 1024, ACT_SETTINGS_MAX_BYTES,
      S_FIELD (max_reply_bytes) },
    { "server/max_client_bytes", S_INTEGER, 65536, ACT_SETTINGS_MAX_CLIENT_BYTES,
      S_FIELD (max_client_bytes) },
    { "server/max_worker_bytes", S_INTEGER, 65536, ACT_SETTINGS_MAX_CLIENT_BYTES,
      S_FIELD (max_worker_bytes) },
    { "server/max_queued_calls", S_INTEGER, 1, ACT_SETTINGS_MAX_COUNT,
      S_FIELD (max_queued_calls) },
    { "server/strict_activities", S_BOOLEAN, 0, 0, S_FIELD (strict_activities) },
    { "server/max_unserved_activities", S_INTEGER, 0, ACT_SETTINGS_MAX_COUNT,
      S_FIELD (max_unserved_activities) },
    { "server/max_worker_activities", S_INTEGER, 1, ACT_SETTINGS_MAX_COUNT,
      S_FIELD (max_worker_activities) },
    { "server/max_served_activities", S_INTEGER, 1, ACT_SETTINGS_MAX_COUNT,
      S_FIELD (max_served_activities) },
    { "server/io_batch", S_BOOLEAN, 0, 0, S_FIELD (io_batch) },
    { "server/shutdown_grace_ms", S_INTEGER, 0, ACT_SETTINGS_MAX_MS, S_FIELD (shutdown_grace_ms) },
    { "server/broker_id", S_STRING, 0, 0, S_FIELD (broker_id) },
    { "server/advertise", S_STRING, 0, 0, S_FIELD (advertise) },
    { "server/lease_ms", S_INTEGER, 100, ACT_SETTINGS_MAX_MS, S_FIELD (lease_ms) },
    { "server/context_idle_ms", S_INTEGER, 0, ACT_SETTINGS_MAX_MS, S_FIELD (context_idle_ms) },
    { "server/max_contexts", S_INTEGER, 1, ACT_SETTINGS_MAX_COUNT, S_FIELD (max_contexts) },
    { "store/path", S_STRING, 0, 0, S_FIELD (store) },
    { "store/sync", S_SYNC, 0, 0, S_FIELD (sync) },
    { "store/early_tasks", S_BOOLEAN, 0, 0, S_FIELD (early_tasks) },
    { "store/hold_us", S_INTEGER, 0, ACT_SETTINGS_MAX_HOLD_US, S_FIELD (hold_us) },
    { "store/retain_ms", S_INTEGER, 0, ACT_SETTINGS_MAX_RETAIN_MS, S_FIELD (retain_ms) },
    { "store/timeout_ms", S_INTEGER, 100, ACT_SETTINGS_MAX_MS, S_FIELD (store_timeout_ms) },
    { "log/level", S_LEVEL, 0, 0, S_FIELD (log_level) },
    { "log/syslog", S_BOOLEAN, 0, 0, S_FIELD (log_syslog) },
    { "log/stderr", S_BOOLEAN, 0, 0, S_FIELD (log_stderr) },
    { "security/server_key", S_STRING, 0, 0, S_FIELD (server_key) },
    { "security/client_keys", S_STRING, 0, 0, S_FIELD (client_keys) },
    { "security/worker_keys", S_STRING, 0, 0, S_FIELD (worker_keys) },
    { "security/allow_plain_tcp", S_BOOLEAN, 0, 0, S_FIELD (allow_plain_tcp) },
};

//  Read the plain setting at full (item) into self; false when no
//  setting has that path
static bool
s_plain_setting (s_reader_t *reader, act_settings_t *self, zconfig_t *item, const char *full)
{
    const s_setting_t *setting = NULL;
    for (size_t i = 0; i < sizeof s_settings / sizeof s_settings [0] && !setting; i++)
        if (streq (full, s_settings [i].path))
            setting = &s_settings [i];
    if (!setting)
        return false;
    void *field = (char *) self + setting->offset;
    switch (setting->kind) {
        case S_STRING:  s_string (reader, item, full, (char **) field); break;
        case S_INTEGER: s_integer (reader, item, full, setting->least, setting->most,
                                   (long long *) field); break;
        case S_BOOLEAN: s_boolean (reader, item, full, (bool *) field); break;
        case S_MODE:    s_mode (reader, item, full, (int *) field); break;
        case S_SYNC:    s_sync (reader, item, full, (act_sync_t *) field); break;
        case S_LEVEL:   s_log_level (reader, item, full, (int *) field); break;
    }
    return true;
}

//  True for the name of a section of plain settings
static bool
s_known_section (const char *section)
{
    return streq (section, "server") || streq (section, "store") || streq (section, "log")
        || streq (section, "security");
}

//  Read a section other than defaults, activities, tenants and workers:
//  an unknown setting is an error, named by its section when it has
//  settings of its own
static void
s_plain_section (s_reader_t *reader, act_settings_t *self, zconfig_t *section)
{
    const char *name = zconfig_name (section);
    for (zconfig_t *item = zconfig_child (section); item; item = zconfig_next (item)) {
        char *full = zsys_sprintf ("%s/%s", name, zconfig_name (item));
        if (!s_plain_setting (reader, self, item, full)) {
            if (zconfig_child (item))
                s_error (reader, section, name, "unknown setting");
            else
                s_error (reader, item, full, "unknown setting");
        }
        zstr_free (&full);
    }
    //  A known section with nothing in it (its settings all commented
    //  out, as etc/actd.cfg shows them) takes the defaults; an unknown
    //  one is an error, empty or not
    if (!zconfig_child (section) && !s_known_section (name))
        s_error (reader, section, name, "unknown section");
}

//  Read an activities section: each activity starts from the defaults,
//  or goes on from what an earlier section of the same name set
static void
s_activities (s_reader_t *reader, act_settings_t *self, zconfig_t *section)
{
    for (zconfig_t *activity = zconfig_child (section); activity;
         activity = zconfig_next (activity)) {
        char *prefix = zsys_sprintf ("activities/%s", zconfig_name (activity));
        act_activity_settings_t *own = zhashx_lookup (self->activities,
                                                      zconfig_name (activity));
        if (!own) {
            own = malloc (sizeof *own);
            *own = self->defaults;
            zhashx_insert (self->activities, zconfig_name (activity), own);
        }
        if (s_section (reader, activity, prefix))
            s_activity (reader, activity, prefix, own);
        zstr_free (&prefix);
    }
}

//  A comma-separated list ("a, b-*"): its items trimmed, in a new list
//  of strings; NULL when an item is empty
static zlistx_t *
s_list (const char *text)
{
    zlistx_t *list = zlistx_new ();
    zlistx_set_destructor (list, (czmq_destructor *) zstr_free);
    const char *item = text? text: "";
    while (list) {
        size_t length = strcspn (item, ",");
        const char *end = item + length;
        while (item < end && isspace ((unsigned char) *item))
            item++;
        while (end > item && isspace ((unsigned char) end [-1]))
            end--;
        if (end == item)
            zlistx_destroy (&list);
        else
            zlistx_add_end (list, strndup (item, (size_t) (end - item)));
        if (!list || !item [strcspn (item, ",")])
            break;
        item += strcspn (item, ",") + 1;
    }
    return list;
}

int
act_settings_rights (const char *text)
{
    zlistx_t *names = s_list (text);
    int rights = names? 0: -1;
    for (char *word = names? zlistx_first (names): NULL; word; word = zlistx_next (names))
        if (streq (word, "read"))
            rights |= ACT_RIGHT_READ;
        else
        if (streq (word, "write"))
            rights |= ACT_RIGHT_WRITE;
        else
        if (streq (word, "admin"))
            rights |= ACT_RIGHT_ADMIN;
        else
            rights = -1;
    zlistx_destroy (&names);
    return rights < 0? -1: rights;
}

//  The tenant named name, or NULL
static act_tenant_settings_t *
s_tenant_named (act_settings_t *self, const char *name)
{
    act_tenant_settings_t *tenant = zlistx_first (self->tenants);
    while (tenant && !streq (tenant->name, name))
        tenant = zlistx_next (self->tenants);
    return tenant;
}

//  The worker group named name, or NULL
static act_group_settings_t *
s_group_named (act_settings_t *self, const char *name)
{
    act_group_settings_t *group = zlistx_first (self->worker_groups);
    while (group && !streq (group->name, name))
        group = zlistx_next (self->worker_groups);
    return group;
}

//  Read one tenants/NAME section, into the tenant of that name when an
//  earlier section made it
static void
s_tenant (s_reader_t *reader, act_settings_t *self, zconfig_t *section)
{
    act_tenant_settings_t *tenant = s_tenant_named (self, zconfig_name (section));
    if (!tenant) {
        tenant = calloc (1, sizeof *tenant);
        tenant->name = strdup (zconfig_name (section));
        tenant->rights = -1;
        zlistx_add_end (self->tenants, tenant);
    }
    char *prefix = zsys_sprintf ("tenants/%s", tenant->name);
    for (zconfig_t *item = zconfig_child (section); item; item = zconfig_next (item)) {
        char *path = zsys_sprintf ("%s/%s", prefix, zconfig_name (item));
        const char *text = zconfig_value (item);
        if (streq (zconfig_name (item), "prefix")) {
            s_string (reader, item, path, &tenant->prefix);
            if (tenant->prefix && (strlen (tenant->prefix) > ACT_MAX_CONTEXT_ID
                               ||  !act_ctx_id_valid (tenant->prefix)))
                s_error (reader, item, path,
                         "must be the start of a context id ([A-Za-z0-9._:@/-])");
        }
        else
        if (streq (zconfig_name (item), "keys"))
            s_string (reader, item, path, &tenant->keys);
        else
        if (streq (zconfig_name (item), "rights") && s_leaf (reader, item, path)
        &&  (tenant->rights = act_settings_rights (text)) < 0)
            s_error (reader, item, path, "must be read, write or admin, comma separated");
        else
        if (!streq (zconfig_name (item), "rights"))
            s_error (reader, item, path, "unknown setting");
        zstr_free (&path);
    }
    zstr_free (&prefix);
}

//  Read one workers/NAME section, into the group of that name when an
//  earlier section made it
static void
s_group (s_reader_t *reader, act_settings_t *self, zconfig_t *section)
{
    act_group_settings_t *group = s_group_named (self, zconfig_name (section));
    if (!group) {
        group = calloc (1, sizeof *group);
        group->name = strdup (zconfig_name (section));
        zlistx_add_end (self->worker_groups, group);
    }
    char *prefix = zsys_sprintf ("workers/%s", group->name);
    for (zconfig_t *item = zconfig_child (section); item; item = zconfig_next (item)) {
        char *path = zsys_sprintf ("%s/%s", prefix, zconfig_name (item));
        if (streq (zconfig_name (item), "keys"))
            s_string (reader, item, path, &group->keys);
        else
        if (streq (zconfig_name (item), "activities") && s_leaf (reader, item, path)) {
            zlistx_destroy (&group->patterns);
            if (!(group->patterns = s_list (zconfig_value (item))))
                s_error (reader, item, path,
                         "must be activity names or patterns, comma separated");
        }
        else
        if (!streq (zconfig_name (item), "activities"))
            s_error (reader, item, path, "unknown setting");
        zstr_free (&path);
    }
    zstr_free (&prefix);
}

//  Read a tenants or workers section (kind): each tenant or group in it
static void
s_members (s_reader_t *reader, act_settings_t *self, zconfig_t *section, const char *kind)
{
    for (zconfig_t *item = zconfig_child (section); item; item = zconfig_next (item)) {
        char *path = zsys_sprintf ("%s/%s", kind, zconfig_name (item));
        if (s_section (reader, item, path)) {
            if (streq (kind, "tenants"))
                s_tenant (reader, self, item);
            else
                s_group (reader, self, item);
        }
        zstr_free (&path);
    }
}

//  The first section kind/name of the file, for the line of a tenant or
//  a group that lacks a setting
static zconfig_t *
s_first_member (zconfig_t *root, const char *kind, const char *name)
{
    for (zconfig_t *section = zconfig_child (root); section; section = zconfig_next (section))
        for (zconfig_t *item = streq (zconfig_name (section), kind)? zconfig_child (section): NULL;
             item; item = zconfig_next (item))
            if (streq (zconfig_name (item), name))
                return item;
    return NULL;
}

//  Once every section is read: each tenant and worker group has what it
//  needs (its settings may be spread over sections of the same name)
static void
s_complete (s_reader_t *reader, act_settings_t *self, zconfig_t *root)
{
    for (act_tenant_settings_t *tenant = zlistx_first (self->tenants); tenant;
         tenant = zlistx_next (self->tenants))
        if (!tenant->prefix || !tenant->keys || tenant->rights < 0) {
            char *path = zsys_sprintf ("tenants/%s", tenant->name);
            s_error (reader, s_first_member (root, "tenants", tenant->name), path,
                     "a tenant needs prefix, rights and keys");
            zstr_free (&path);
        }
    for (act_group_settings_t *group = zlistx_first (self->worker_groups); group;
         group = zlistx_next (self->worker_groups))
        if (!group->patterns || !group->keys) {
            char *path = zsys_sprintf ("workers/%s", group->name);
            s_error (reader, s_first_member (root, "workers", group->name), path,
                     "a worker group needs activities and keys");
            zstr_free (&path);
        }
}

//  Read every section of the parsed file into self
static void
s_sections (s_reader_t *reader, act_settings_t *self, zconfig_t *root)
{
    //  Every defaults section first, whatever its place in the file: the
    //  activities start from them
    for (zconfig_t *section = zconfig_child (root); section; section = zconfig_next (section))
        if (streq (zconfig_name (section), "defaults") && s_section (reader, section, "defaults"))
            s_activity (reader, section, "defaults", &self->defaults);
    for (zconfig_t *section = zconfig_child (root); section;
         section = zconfig_next (section)) {
        const char *name = zconfig_name (section);
        if (streq (name, "defaults") || !s_section (reader, section, name))
            continue;
        if (streq (name, "activities"))
            s_activities (reader, self, section);
        else
        if (streq (name, "tenants") || streq (name, "workers"))
            s_members (reader, self, section, name);
        else
            s_plain_section (reader, self, section);
    }
    s_complete (reader, self, root);
}

int
act_settings_load (act_settings_t *self, const char *path, char *message, size_t size)
{
    act_settings_file_t *file = act_settings_file_load (path, message, size);
    if (!file)
        return -1;
    s_reader_t reader = { file, path, message, size, 0 };
    s_sections (&reader, self, act_settings_file_root (file));
    act_settings_file_destroy (&file);
    if (reader.rc == 0) {
        free (self->config_file);
        self->config_file = strdup (path);
    }
    return reader.rc;
}

/*  =========================================================================
    act_settings_file - a config file in ZPL for act_settings (see
    act_settings_file.h).

    The file is read line by line first, to check its shape as zconfig
    will read it and to note the line of every name, in order; zconfig
    then parses the same text, making one item per such line, in the same
    order: walking its tree depth first pairs each item with its line.
    ========================================================================= */

#include "act_settings_file.h"

struct _act_settings_file_t {
    zconfig_t *root;            //  The parsed tree
    int *numbers;               //  Line of each name, in file order
    size_t count;               //  Names in numbers
    size_t capacity;            //  Room in numbers
    zhashx_t *lines;            //  Item ("%p") -> line number
};

//  The whole file, or NULL with message saying why it cannot be read
static char *
s_read_file (const char *path, char *message, size_t size)
{
    FILE *file = fopen (path, "r");
    if (!file) {
        snprintf (message, size, "cannot read %s: %s", path, strerror (errno));
        return NULL;
    }
    char *text = NULL;
    size_t length = 0;
    FILE *copy = open_memstream (&text, &length);
    char buffer [4096];
    size_t got;
    while ((got = fread (buffer, 1, sizeof buffer, file)) > 0)
        fwrite (buffer, 1, got, copy);
    bool failed = ferror (file);
    int error = errno;
    fclose (file);
    fclose (copy);
    if (failed) {
        snprintf (message, size, "cannot read %s: %s", path, strerror (error));
        zstr_free (&text);
    }
    return text;
}

//  What zconfig accepts after a name: nothing, a comment, or "= value",
//  a quoted value closed on its line and followed by a comment at most.
//  Returns NULL, or what is wrong.
static const char *
s_rest_problem (const char *rest)
{
    while (isspace ((unsigned char) *rest))
        rest++;
    if (*rest == 0 || *rest == '#')
        return NULL;
    if (*rest != '=')
        return "expected 'name = value' or a section name";
    rest++;
    while (isspace ((unsigned char) *rest))
        rest++;
    if (*rest == '"' || *rest == '\'') {
        const char *end = strchr (rest + 1, *rest);
        if (!end)
            return "a quoted value needs its closing quote on the same line";
        for (end++; isspace ((unsigned char) *end); end++)
            ;
        if (*end && *end != '#')
            return "only a comment may follow a quoted value";
    }
    return NULL;
}

//  Note line number as the line of the next name
static void
s_note (act_settings_file_t *self, int number)
{
    if (self->count == self->capacity) {
        self->capacity = self->capacity? 2 * self->capacity: 64;
        self->numbers = realloc (self->numbers, self->capacity * sizeof (int));
    }
    self->numbers [self->count++] = number;
}

//  What is wrong with one line (without its end), indented indent spaces
//  at depth levels of which the first open ones are open; NULL if nothing
static const char *
s_line_problem (const char *line, size_t indent, const bool *open, char *problem,
                size_t size)
{
    if (line [indent] == '\t' || indent % 4)
        return "indent with multiples of 4 spaces";
    size_t depth = indent / 4;
    if (depth >= 16 || (depth > 0 && !open [depth - 1]))
        return "indented deeper than its section";
    const char *name = line + indent;
    size_t span = strcspn (name, " \t=#");
    for (size_t i = 0; i < span; i++)
        if (!isalnum ((unsigned char) name [i]) && !strchr ("_-.$/", name [i])) {
            snprintf (problem, size, "'%.*s' is not a setting name", (int) span, name);
            return problem;
        }
    return span? s_rest_problem (name + span): "a setting name is expected";
}

//  Check the shape of text (the file at path) line by line, as zconfig
//  will read it, and note the line of every name. Returns 0, or -1 with
//  message naming the bad line.
static int
s_index_lines (act_settings_file_t *self, const char *path, const char *text,
               char *message, size_t size)
{
    bool open [16] = { false };
    char buffer [1025], problem [128];
    int number = 0;
    for (const char *line = text; *line; ) {
        number++;
        size_t length = strcspn (line, "\n");
        const char *next = line [length]? line + length + 1: line + length;
        if (length >= sizeof buffer) {
            snprintf (message, size, "%s line %d: longer than %zu characters",
                      path, number, sizeof buffer - 1);
            return -1;
        }
        memcpy (buffer, line, length);
        buffer [length] = 0;
        line = next;
        //  zconfig trims trailing white space, then counts leading spaces
        while (length && isspace ((unsigned char) buffer [length - 1]))
            buffer [--length] = 0;
        size_t indent = 0;
        while (buffer [indent] == ' ')
            indent++;
        if (buffer [indent] == 0 || (buffer [indent] == '#' && indent % 4 == 0))
            continue;               //  Blank, or a comment
        const char *wrong = s_line_problem (buffer, indent, open, problem, sizeof problem);
        if (wrong) {
            snprintf (message, size, "%s line %d: %s", path, number, wrong);
            return -1;
        }
        for (size_t depth = indent / 4; depth < 16; depth++)
            open [depth] = false;
        open [indent / 4] = true;
        s_note (self, number);
    }
    return 0;
}

//  Pair item and the items below it, depth first, with the noted lines
//  from *index on
static void
s_pair (act_settings_file_t *self, zconfig_t *item, size_t *index)
{
    for (; item; item = zconfig_next (item)) {
        char key [32];
        snprintf (key, sizeof key, "%p", (void *) item);
        if (*index < self->count)
            zhashx_insert (self->lines, key, (void *) (intptr_t) self->numbers [(*index)++]);
        s_pair (self, zconfig_child (item), index);
    }
}

act_settings_file_t *
act_settings_file_load (const char *path, char *message, size_t size)
{
    char *text = s_read_file (path, message, size);
    if (!text)
        return NULL;
    act_settings_file_t *self = calloc (1, sizeof *self);
    self->lines = zhashx_new ();
    if (s_index_lines (self, path, text, message, size) == 0) {
        //  From the text: zconfig_load leaks its zfile when a file does not
        //  parse
        self->root = zconfig_str_load (text);
        if (!self->root)
            snprintf (message, size, "%s: not a valid ZPL file", path);
    }
    zstr_free (&text);
    if (!self->root) {
        act_settings_file_destroy (&self);
        return NULL;
    }
    size_t index = 0;
    s_pair (self, zconfig_child (self->root), &index);
    return self;
}

void
act_settings_file_destroy (act_settings_file_t **self_p)
{
    if (self_p && *self_p) {
        act_settings_file_t *self = *self_p;
        zconfig_destroy (&self->root);
        zhashx_destroy (&self->lines);
        free (self->numbers);
        free (self);
        *self_p = NULL;
    }
}

zconfig_t *
act_settings_file_root (act_settings_file_t *self)
{
    return self->root;
}

int
act_settings_file_line (act_settings_file_t *self, zconfig_t *item)
{
    char key [32];
    snprintf (key, sizeof key, "%p", (void *) item);
    return (int) (intptr_t) zhashx_lookup (self->lines, key);
}

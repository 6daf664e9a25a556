/*  =========================================================================
    act_settings_file - a config file in ZPL for act_settings: read, its
    shape checked line by line, parsed by zconfig, and the line each item
    of the tree came from.

    zconfig keeps no line numbers, and an operator fixing a file wants
    one: each setting's value is checked against the tree, and a problem
    is reported with the line of that very item (a name given twice has
    two lines).
    ========================================================================= */

#ifndef ACT_SETTINGS_FILE_H_INCLUDED
#define ACT_SETTINGS_FILE_H_INCLUDED

#include <czmq.h>

typedef struct _act_settings_file_t act_settings_file_t;

//  Read and parse the file at path. Returns it, or NULL with message
//  (size bytes) saying why: it cannot be read, or which line is not in
//  the shape zconfig reads, or that zconfig refused it.
act_settings_file_t *act_settings_file_load (const char *path, char *message, size_t size);

//  Destroy the file, its tree with it, and null the pointer; safe on NULL.
void act_settings_file_destroy (act_settings_file_t **self_p);

//  The parsed tree: the sections are the root's children (owned by self).
zconfig_t *act_settings_file_root (act_settings_file_t *self);

//  The line (from 1) item was on, or 0 when item is not of this tree.
int act_settings_file_line (act_settings_file_t *self, zconfig_t *item);

#endif

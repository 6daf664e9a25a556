#!/bin/sh
# Writes to stdout without end.
exec yes "endless output"

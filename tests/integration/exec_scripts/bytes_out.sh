#!/bin/sh
# Writes printf-escaped $1 to stdout.
printf "$1"

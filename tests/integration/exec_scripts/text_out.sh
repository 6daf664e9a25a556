#!/bin/sh
# Prints plain text (not JSON): the result is it as a JSON string.
echo "hello world"
printf 'tab\there "quoted"\n'

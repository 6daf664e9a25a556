#!/bin/sh
# Prints a JSON text with white space around it; reads nothing.
printf '  {"answer": [1, 2, {"x": "y"}], "text": "caf\303\251"}  \n\n'

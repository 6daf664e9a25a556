#!/bin/sh
# Sleeps 2 seconds, then succeeds.
sleep 2
echo '{"slept": 2}'

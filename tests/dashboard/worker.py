"""The dashboard test's worker (the actd Python package): a small trip
planner. search and summarize answer after a short while; slow runs until
it is cancelled (so the page has a call running to show).

Usage: python3 worker.py WORKER_ENDPOINT
"""

import sys
import time

import actd

worker = actd.Worker(sys.argv[1], capacity=8, name="dash-worker")


@worker.activity("search")
def search(params, task):
    time.sleep(0.15)
    what = params.get("what", "hotels")
    return ["%s %s %d" % (params["city"], what, n) for n in range(1, 4)]


@worker.activity("summarize")
def summarize(params, task):
    time.sleep(0.2)
    return "%d hotels, %d sights" % (len(params["hotels"]), len(params["sights"]))


@worker.activity("slow")
def slow(params, task):
    task.progress({"step": "reviewing"})
    task.wait_cancelled(120)
    return "reviewed"


worker.run()

"""actd-http's /metrics (docs/http.md, Metrics): checked by promtool and
against a known workload on an actd of its own, and the series of the
activity bounds. Split from test_http.py, whose helpers it uses."""

import json
import subprocess
import unittest

import zmq

from harness import Actd, Fail, Worker, wait_for
from test_http import STATE, ActdHttp


class MetricsTest(unittest.TestCase):
    """/metrics after a known workload, on an actd of its own."""

    def test_metrics_count_a_known_workload(self):
        actd = Actd().start()
        worker = Worker(actd.worker_endpoint, ["count_ok", "count_fail"], self.handle,
                        capacity=8, name="metrics-worker")
        worker.start()
        #  A second worker of the same name: each has a series of its own
        twin = Worker(actd.worker_endpoint, ["idle"], self.handle, capacity=2,
                      name="metrics-worker")
        twin.start()
        server = None
        try:
            worker.ready.wait(5)
            twin.ready.wait(5)
            server = ActdHttp(actd.client_endpoint)
            wait_for(lambda: len(server.json("GET", "/v1/stats")["workers"]) == 2,
                     "both workers to register")
            ok, failed = 5, 3
            for n in range(ok):
                outcome = server.json("POST", "/v1/contexts/m/calls?wait=1",
                                      {"_tool": "count_ok", "_outputPath": STATE + ".o%d" % n})
                self.assertEqual(outcome["status"], "ok")
            for n in range(failed):
                outcome = server.json("POST", "/v1/contexts/m/calls?wait=1",
                                      {"_tool": "count_fail", "_outputPath": STATE + ".f%d" % n})
                self.assertEqual(outcome["status"], "error")
            #  Two calls no worker serves: the queue depth
            for n in range(2):
                server.json("POST", "/v1/contexts/m/calls", {"_tool": "unserved"}, status=202)
            #  A READY naming more than max_worker_activities: refused
            refused = zmq.Context.instance().socket(zmq.DEALER)
            refused.setsockopt(zmq.LINGER, 0)
            refused.connect(actd.worker_endpoint)
            refused.send_multipart([b"ACTW01", b"READY", json.dumps(
                {"activities": ["many-%04d" % n for n in range(1025)]}).encode()])
            self.assertTrue(refused.poll(10000))
            self.assertEqual(refused.recv_multipart()[1], b"DISCONNECT")
            refused.close()
            status, headers, text = server.request("GET", "/metrics")
            self.assertEqual(status, 200)
            self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            checked = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                                     capture_output=True)
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr + text)
            samples = self.samples(text)
            self.assertEqual(samples['actd_activity_calls_total{activity="count_ok",outcome="ok"}'],
                             ok)
            self.assertEqual(samples['actd_activity_calls_total{activity="count_ok",outcome="error"}'],
                             0)
            self.assertEqual(
                samples['actd_activity_calls_total{activity="count_fail",outcome="error"}'], failed)
            self.assertEqual(samples['actd_calls_accepted_total'], ok + failed + 2)
            self.assertEqual(samples['actd_calls_ended_total{outcome="ok"}'], ok)
            self.assertEqual(samples['actd_calls_ended_total{outcome="error"}'], failed)
            self.assertEqual(samples['actd_activity_total_seconds_count{activity="count_ok"}'], ok)
            self.assertEqual(
                samples['actd_activity_run_seconds_bucket{activity="count_fail",le="+Inf"}'],
                failed)
            self.assertEqual(samples['actd_activity_workers{activity="count_ok"}'], 1)
            self.assertEqual(samples['actd_activity_running{activity="count_ok"}'], 0)
            self.assertEqual(samples['actd_activity_queued{activity="count_ok"}'], 0)
            self.assertEqual(samples['actd_activity_queued{activity="unserved"}'], 2)
            self.assertEqual((samples['actd_unserved_activities'],
                              samples['actd_unserved_activities_max'],
                              samples['actd_unserved_refused_total']), (1, 1024, 0))
            #  count_ok, count_fail and idle; the READY of 1025 names refused
            self.assertEqual((samples['actd_served_activities'],
                              samples['actd_served_activities_max'],
                              samples['actd_served_refused_total'],
                              samples['actd_worker_activities_max'],
                              samples['actd_worker_activities_refused_total']),
                             (3, 4096, 0, 1024, 1))
            self.assertEqual(samples['actd_calls{state="queued"}'], 2)
            #  Each call was dispatched once: one queue wait each
            self.assertEqual(
                samples['actd_activity_queue_seconds_count{activity="count_ok"}'], ok)
            self.assertEqual(
                samples['actd_activity_queue_seconds_bucket{activity="count_fail",le="+Inf"}'],
                failed)
            self.assertEqual(samples['actd_workers'], 2)
            self.assertEqual(sorted([samples['actd_worker_capacity{worker="metrics-worker"}'],
                                     samples['actd_worker_capacity{worker="metrics-worker#2"}']]),
                             [2, 8])
            self.assertEqual(samples['actd_contexts'], 1)
            #  Each call appended its output or its error
            self.assertEqual(samples['actd_messages'], ok + failed)
            self.assertGreaterEqual(samples['actd_store_commits_total'], 1)
            self.assertEqual(samples['actd_store_commit_seconds_count'],
                             samples['actd_store_commits_total'])
            #  Timed to the microsecond: a commit of a SQLite file takes some
            self.assertGreater(samples['actd_store_commit_seconds_sum'], 0)
            self.assertEqual(samples['actd_store_batch_writes_sum'],
                             samples['actd_store_writes_total'])
            self.assertEqual(samples['actd_up'], 1)
        finally:
            if server:
                server.finish()
            worker.stop()
            twin.stop()
            actd.finish()

    def test_worker_series_are_unique_and_follow_the_join_order(self):
        """Workers of one name are NAME, NAME#2, ... in the order they
        joined, skipping the names workers have: before, a worker named
        "twin#2" and the second "twin" made two series of one name, and
        the suffixes followed actd's hash table, not the workers."""
        actd = Actd().start()
        workers = []
        server = None
        try:
            server = ActdHttp(actd.client_endpoint)
            #  Capacity n + 1 tells the n-th worker to join apart
            names = ["twin"] * 5 + ["twin#2", "twin"]
            for n, name in enumerate(names):
                worker = Worker(actd.worker_endpoint, ["idle"], self.handle, capacity=n + 1,
                                name=name)
                worker.start()
                workers.append(worker)
                wait_for(lambda: len(server.json("GET", "/v1/stats")["workers"]) == n + 1,
                         "worker %d to register" % n)
            texts = [server.request("GET", "/metrics")[2] for _ in range(3)]
            for text in texts:
                checked = subprocess.run(["promtool", "check", "metrics"], input=text,
                                         text=True, capture_output=True)
                self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
                series = [line.rpartition(" ")[0] for line in text.splitlines()
                          if line.startswith("actd_worker_capacity{")]
                self.assertEqual(len(series), len(names))
                self.assertEqual(len(set(series)), len(series), series)
            #  The same labels at each scrape
            capacities = [[line for line in text.splitlines()
                           if line.startswith("actd_worker_capacity{")] for text in texts]
            self.assertEqual(capacities[1:], capacities[:1] * 2)
            capacity = {key[len('actd_worker_capacity{worker="'):-2]: value
                        for key, value in self.samples(texts[0]).items()
                        if key.startswith("actd_worker_capacity{")}
            self.assertEqual(capacity, {"twin": 1, "twin#3": 2, "twin#4": 3, "twin#5": 4,
                                        "twin#6": 5, "twin#2": 6, "twin#7": 7})
        finally:
            if server:
                server.finish()
            for worker in workers:
                worker.stop()
            actd.finish()

    @staticmethod
    def handle(activity, params, meta):
        if activity == "count_fail":
            raise Fail("counted failure", code="activity_failed", retryable=False)
        return {"ok": True}

    @staticmethod
    def samples(text):
        """Sample name with labels -> value."""
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values


class UnservedMetricsTest(unittest.TestCase):
    """/metrics lists at most server/max_unserved_activities activities
    that nobody serves with calls, and counts the calls refused past them:
    calls to 20,000 names nobody served made a /metrics of 66 MB (883k
    series, 2.7 s a scrape; from an audit of the logs and metrics)."""

    def test_metrics_list_no_more_activities_nobody_serves_than_the_bound(self):
        actd = Actd().start()
        client = actd.client()
        server = None
        try:
            names = ["nobody-%04d" % n for n in range(1024)]
            reply = client.request("PLAN", "u", json.dumps([{"_tool": name} for name in names]),
                                   timeout=60)
            self.assertEqual(reply[0], "ACCEPTED", reply)
            server = ActdHttp(actd.client_endpoint)
            statuses = [server.request("POST", "/v1/contexts/u/calls",
                                       {"_tool": "more-%03d" % n})[0] for n in range(100)]
            self.assertEqual(statuses, [429] * 100)
            status, _, text = server.request("GET", "/metrics")
            self.assertEqual(status, 200)
            checked = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                                     capture_output=True)
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
            samples = MetricsTest.samples(text)
            queued = [name for name in samples if name.startswith("actd_activity_queued{")]
            self.assertEqual(sorted(queued), ['actd_activity_queued{activity="%s"}' % name
                                              for name in names])
            self.assertEqual((samples['actd_unserved_activities'],
                              samples['actd_unserved_activities_max'],
                              samples['actd_unserved_refused_total']), (1024, 1024, 100))
        finally:
            if server:
                server.finish()
            client.close()
            actd.finish()

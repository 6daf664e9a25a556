"""Operations of the store (docs/operations.md): actd refuses at start a
store it cannot connect to, refuses rows that do not read, answers
internal when a lookup fails (never "absent"), and a running store can be
copied with sqlite3's .backup. Split from test_operations.py, whose
helpers it uses.
"""

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

from harness import Actd, Worker, find_binary, wait_for
from test_operations import DAGGER, sqlite_store


class StoreConnectTest(unittest.TestCase):
    """A PostgreSQL server that accepts the connection and never answers
    (a listening socket nobody accepts from) does not hang actd: the
    connection gives up after 5 s (libpq's connect_timeout; without one
    libpq waits for ever), or after the URL's own connect_timeout."""

    def start_failing(self, url):
        silent = socket.socket()
        self.addCleanup(silent.close)
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        started = time.time()
        done = subprocess.run([find_binary("actd"), "--db", url % silent.getsockname()[1],
                               "--client-endpoint", "tcp://127.0.0.1:0",
                               "--worker-endpoint", "tcp://127.0.0.1:0"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("cannot connect to PostgreSQL", done.stderr)
        self.assertIn("timeout expired", done.stderr)
        return time.time() - started

    def test_a_silent_server_fails_the_start_after_5_s(self):
        self.assertGreaterEqual(self.start_failing("postgresql://actd@127.0.0.1:%d/actd"), 5)

    def test_the_urls_connect_timeout_comes_first(self):
        elapsed = self.start_failing(
            "postgresql://actd@127.0.0.1:%d/actd?connect_timeout=2")
        self.assertGreaterEqual(elapsed, 2)
        self.assertLess(elapsed, 5)


class StoreRowsTest(unittest.TestCase):
    """The store's rows are data from a file: one that does not read is
    logged and refused, it never stops actd (rows edited with sqlite3
    while actd is stopped, as a damaged or hand-edited store would be)."""

    def edit(self, actd, *statements):
        """Stop actd, run statements on its store, start it again."""
        self.assertEqual(actd.stop(), 0, actd.log()[-2000:])
        with sqlite3.connect(actd.store) as db:
            for statement in statements:
                db.execute(statement)
        actd.start()

    def ended_call(self, actd, end_row):
        """A call with an _id and an output path, ended ok, then its row of
        ends replaced by end_row (state, outcome: SQL literals) while actd is
        stopped; its id."""
        worker = Worker(actd.worker_endpoint, ["t"], lambda *task: "done")
        worker.start()
        worker.ready.wait(10)
        client = actd.client()
        call_id, outcome = client.call("c", {"_tool": "t", "_id": "k",
                                             "_outputPath": DAGGER + "s.x"})
        self.assertEqual(outcome["status"], "ok")
        client.close()
        worker.stop()
        self.edit(actd, "INSERT OR REPLACE INTO ends (id, state, attempts, outcome, progress) "
                        "VALUES (%s, %s, 1, %s, NULL)" % ((call_id,) + end_row))
        return call_id

    def test_an_ended_call_whose_state_does_not_read(self):
        with Actd(store=sqlite_store(self)) as actd:
            call_id = self.ended_call(actd, ("NULL", "NULL"))
            client = actd.client()
            reply = client.request("STATUS", call_id)
            self.assertEqual(reply[:2], ["ERROR", "internal"], reply)
            self.assertIn("does not read", reply[2])
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()

    def test_a_repeated_id_whose_stored_outcome_does_not_read(self):
        with Actd(store=sqlite_store(self)) as actd:
            call_id = self.ended_call(actd, ("'ok'", "'not json'"))
            client = actd.client()
            rid = client.send("CALL", "c", {"_tool": "t", "_id": "k",
                                            "_outputPath": DAGGER + "s.x"})
            self.assertEqual(client.wait(rid, "ACCEPTED")[1], call_id)
            wait_for(lambda: "does not read: no DONE for its repeat" in actd.log(),
                     "the log line")
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()

    def test_a_stored_context_id_that_is_not_valid(self):
        with Actd(store=sqlite_store(self)) as actd:
            client = actd.client()
            self.assertEqual(client.request("APPEND", "c", {"type": "note"})[0], "OK")
            #  A call that waits for a worker: recovered at the next start
            self.assertEqual(client.request("CALL", "c", {"_tool": "nobody"})[0], "ACCEPTED")
            client.close()
            self.edit(actd, *["UPDATE %s SET %s = 'bad id' WHERE %s = 'c'" % (table, column, column)
                              for table, column in (("contexts", "id"), ("messages", "context"),
                                                    ("calls", "context"), ("live", "context"),
                                                    ("call_blocks", "context"))])
            wait_for(lambda: "a stored context id is not valid (bad id)" in actd.log(),
                     "the log line")
            client = actd.client()
            self.assertEqual(client.request("PING"), ["PONG"])
            client.close()


class StoreReadErrorTest(unittest.TestCase):
    """PROTOCOL.md 3 (internal): a lookup the store could not answer is
    refused with internal and changes nothing, never taken for "absent"
    (not_found, a new _id, a new APPEND key). The read error is made by
    renaming, with sqlite3 while actd runs, the table the lookup reads
    (SQLite then fails the statement: no such table), then naming it back."""

    def setUp(self):
        self.actd = Actd(store=sqlite_store(self)).start()
        self.addCleanup(self.actd.cleanup)
        self.worker = Worker(self.actd.worker_endpoint, ["t"],
                             lambda activity, params, meta: params)
        self.worker.start()
        self.addCleanup(self.worker.stop)
        self.worker.ready.wait(10)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)

    def tearDown(self):
        self.assertEqual(self.actd.stop(), 0, self.actd.log()[-2000:])

    def rename(self, table, name):
        db = sqlite3.connect(self.actd.store, timeout=10)
        try:
            db.execute("ALTER TABLE %s RENAME TO %s" % (table, name))
            db.commit()
        finally:
            db.close()

    def unreadable(self, table, *request):
        """The reply to request while table cannot be read, and the reply
        to the same request once it can"""
        self.rename(table, table + "_away")
        try:
            refused = self.client.request(*request)
        finally:
            self.rename(table + "_away", table)
        return refused, self.client.request(*request)

    def assert_nothing_written(self):
        """No write was tried while the table was away: none failed"""
        self.assertNotIn("store commit failed", self.actd.log())

    def test_status_of_an_ended_call_that_does_not_read(self):
        call_id, outcome = self.client.call("c", {"_tool": "t", "_outputPath": DAGGER + "s.x"})
        self.assertEqual(outcome["status"], "ok")
        refused, served = self.unreadable("calls", "STATUS", call_id)
        self.assertEqual(refused[:2], ["ERROR", "internal"], refused)
        self.assertEqual(served[0], "VALUE", served)
        self.assertEqual(json.loads(served[1])["state"], "ok")
        self.assert_nothing_written()

    def test_a_repeated_id_that_does_not_read_runs_nothing_again(self):
        call = {"_tool": "t", "_id": "k", "_outputPath": DAGGER + "s.x"}
        call_id, outcome = self.client.call("c", call)
        self.assertEqual(outcome["status"], "ok")
        refused, served = self.unreadable("calls", "CALL", "c", call)
        time.sleep(0.5)             #  A TASK sent meanwhile would be in by now
        self.assertEqual((refused[:2], served[:2], len(self.worker.tasks)),
                         (["ERROR", "internal"], ["ACCEPTED", call_id], 1))
        self.assert_nothing_written()

    def test_a_repeated_append_key_that_does_not_read_appends_nothing(self):
        message = {"type": "data", "kind": "input", "data": {"n": 1}}
        first = self.client.request("APPEND", "c", message, "k")
        self.assertEqual(first[0], "OK", first)
        refused, served = self.unreadable("append_keys", "APPEND", "c", message, "k")
        self.assertEqual(refused[:2], ["ERROR", "internal"], refused)
        self.assertEqual(served, first)
        self.assertEqual([m["data"] for m in self.client.value("HISTORY", "c", "1", "10")],
                         [{"n": 1}])
        self.assert_nothing_written()


class StoreBackupTest(unittest.TestCase):
    """docs/operations.md: back up a running store with sqlite3 .backup."""

    def test_backup_of_a_running_store_restores(self):
        backup_dir = tempfile.mkdtemp(prefix="actd-backup-")
        self.addCleanup(shutil.rmtree, backup_dir, True)
        backup = os.path.join(backup_dir, "copy.db")

        def pragmas(path):
            return subprocess.run(["sqlite3", path, "PRAGMA user_version; PRAGMA integrity_check;"],
                                  capture_output=True, text=True, timeout=60).stdout.split()
        with Actd(store=sqlite_store(self)) as actd:
            client = actd.client()
            self.assertEqual(client.request("APPEND", "c", {"type": "data", "kind": "user",
                                                            "data": {"name": "Alex"}}),
                             ["OK", '{"seq":1}'])
            done = subprocess.run(["sqlite3", actd.store, ".backup '%s'" % backup],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual((done.returncode, done.stderr), (0, ""))
            version = pragmas(actd.store)[0]
            client.close()
        #  The copy has the schema version of the original, and is sound
        self.assertEqual(pragmas(backup), [version, "ok"])
        with Actd(store=backup) as restored:
            client = restored.client()
            self.assertEqual(client.resolve("c", DAGGER + "user.name"), "Alex")
            client.close()


if __name__ == "__main__":
    unittest.main()

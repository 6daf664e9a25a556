"""The first start after an upgrade (docs/operations.md, section 6,
"Upgrades"): a store of an older schema is migrated before READY=1, and a
migration that copies a table (4 -> 5 copies every message) takes as long
as the store is big. Meanwhile actd tells systemd how it goes:
EXTEND_TIMEOUT_USEC= and STATUS= before READY=1, or systemd would kill it
at TimeoutStartSec= and start it again, in a loop. Afterwards the pages of
the old copy go back to the file system when the file has auto_vacuum
INCREMENTAL (they stayed: the file kept double its size), and are logged
as kept when it has NONE.

ACTD_TEST_PROGRESS_MS=0 makes actd report at each look at the clock
(every few thousand SQLite instructions) instead of every 5 s, so that
reports from within a statement come with a small store: nothing is
timed. Helpers from test_operations.py.
"""

import os
import re
import sqlite3
import subprocess
import unittest

import pg
from harness import DAGGER, Actd, Worker
from test_operations import NotifySocket, sqlite_store

#  Schema version 4 as actd wrote it before version 5 (messages clustered
#  by context, in a table WITHOUT ROWID): a fixture, not to be changed
#  with the migrations. A file it made had auto_vacuum INCREMENTAL.
SCHEMA_V4 = """
    CREATE TABLE contexts (id TEXT PRIMARY KEY, created TEXT NOT NULL,
      messages INTEGER NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0,
      updated TEXT) WITHOUT ROWID;
    CREATE TABLE messages (context TEXT NOT NULL, seq INTEGER NOT NULL,
      body TEXT NOT NULL, PRIMARY KEY (context, seq)) WITHOUT ROWID;
    CREATE TABLE calls (id INTEGER PRIMARY KEY, context TEXT NOT NULL,
      state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, call TEXT NOT NULL,
      idem TEXT, outcome TEXT, progress TEXT, client TEXT, request TEXT,
      ended INTEGER NOT NULL DEFAULT 0);
    CREATE UNIQUE INDEX calls_by_key ON calls (context, idem) WHERE idem IS NOT NULL;
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX calls_pending_by_context ON calls (context, id) WHERE ended = 0;
    CREATE INDEX contexts_by_updated ON contexts (updated) WHERE updated IS NOT NULL;
    CREATE INDEX contexts_by_created ON contexts (created) WHERE updated IS NULL;
    CREATE INDEX calls_by_context ON calls (context);
    CREATE TABLE append_keys (context TEXT NOT NULL, key TEXT NOT NULL,
      seq INTEGER NOT NULL, PRIMARY KEY (context, key)) WITHOUT ROWID;
    INSERT INTO counters VALUES ('contexts', 0), ('messages', 0), ('accepted', 0),
      ('ok', 0), ('error', 0), ('timeout', 0), ('skipped', 0), ('cancelled', 0),
      ('deleted', 0);
    PRAGMA user_version = 4;
"""

CONTEXTS = 10
PER_CONTEXT = 300           # 3,000 messages of ~500 bytes: ~400 pages copied
DATE = "2026-01-01T00:00:00.000Z"


def make_v4_store(path, auto_vacuum):
    """A schema-4 store at path with CONTEXTS contexts of PER_CONTEXT
    messages each, written in turns (as a busy broker did); auto_vacuum
    INCREMENTAL (as actd made files from version 4 on) or NONE (a file
    made before version 4, migrated since)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA auto_vacuum = %s" % auto_vacuum)
        db.execute("PRAGMA journal_mode = WAL")
        db.executescript(SCHEMA_V4)
        db.execute("BEGIN")
        for c in range(CONTEXTS):
            db.execute("INSERT INTO contexts VALUES (?, ?, ?, ?, ?)",
                       ("up%d" % c, DATE, PER_CONTEXT, PER_CONTEXT, DATE))
        for seq in range(1, PER_CONTEXT + 1):
            for c in range(CONTEXTS):
                body = ('{"type":"data","kind":"input","data":{"x":"%s"},"_seq":%d,"_date":"%s"}'
                        % ("%03d" % c * 140, seq, DATE))
                db.execute("INSERT INTO messages VALUES (?, ?, ?)", ("up%d" % c, seq, body))
        db.execute("UPDATE counters SET value = ? WHERE name = 'messages'",
                   (CONTEXTS * PER_CONTEXT,))
        db.execute("UPDATE counters SET value = ? WHERE name = 'contexts'", (CONTEXTS,))
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint (TRUNCATE)")
    finally:
        db.close()


def pragma(path, name):
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA " + name).fetchone()[0]
    finally:
        db.close()


def fields(message):
    return dict(line.split("=", 1) for line in message.split("\n") if "=" in line)


class UpgradeTest(unittest.TestCase):
    """A schema-4 store opened by this actd under a fake NOTIFY_SOCKET."""

    def setUp(self):
        self.notify = NotifySocket()
        self.addCleanup(self.notify.close)
        self.store = sqlite_store(self)

    def start(self):
        """Start actd on self.store; returns (actd, the datagrams it sent
        up to READY=1, as dicts of their fields)."""
        actd = Actd(store=self.store, env={"NOTIFY_SOCKET": self.notify.path,
                                           "ACTD_TEST_PROGRESS_MS": "0"})
        self.addCleanup(actd.cleanup)
        actd.start(wait=False)
        self.notify.next("READY=1")
        actd.wait_ready()
        return actd, [fields(m) for m in self.notify.messages]

    def check_progress(self, sent):
        """Before READY=1 (the last datagram): EXTEND_TIMEOUT_USEC= with a
        STATUS= saying what the store does, the copy of the messages told
        from within its statement too (more than before it alone)."""
        self.assertIn("READY", sent[-1])
        before = sent[:-1]
        self.assertTrue(before, "nothing sent before READY=1")
        for message in before:
            self.assertGreater(int(message["EXTEND_TIMEOUT_USEC"]), 0, message)
            self.assertTrue(message["STATUS"].startswith("opening the store: "), message)
        statuses = [m["STATUS"] for m in before]
        copy = [s for s in statuses
                if s.startswith("opening the store: migrating to schema 5: INSERT INTO messages_by_row")]
        self.assertGreater(len(copy), 1, statuses)
        self.assertTrue(any("migrating to schema 10: " in s for s in statuses), statuses)
        return statuses

    def check_messages(self, actd):
        """Every message is still there, in _seq order, after the copy."""
        client = actd.client()
        try:
            for c in (0, CONTEXTS - 1):
                history = client.value("HISTORY", "up%d" % c, "1", str(PER_CONTEXT + 1))
                self.assertEqual([m["_seq"] for m in history], list(range(1, PER_CONTEXT + 1)))
        finally:
            client.close()

    def test_incremental_file_gives_the_old_copy_back(self):
        make_v4_store(self.store, "INCREMENTAL")
        size = os.path.getsize(self.store)
        actd, sent = self.start()
        statuses = self.check_progress(sent)
        #  The free pages go back before READY=1, told as well
        self.assertTrue(any(s.startswith("opening the store: giving back ") for s in statuses),
                        statuses)
        self.check_messages(actd)
        log = actd.log()
        self.assertRegex(log, r"N: actd .* store .*: schema migrated from version 4 to 10 in ")
        #  Each step of an upgrade is logged
        self.assertEqual(re.findall(r"schema migrated to version (\d+)", log),
                         ["5", "6", "7", "8", "9", "10"], log)
        self.assertNotIn("created with schema", log)
        self.assertRegex(log, r"N: actd .* store .*: \d+ free pages \(\d+ MiB\) given back "
                              r"to the file system in ")
        self.assertEqual(actd.stop(), 0, log)
        self.assertEqual(pragma(self.store, "user_version"), 10)
        #  The old copy's pages (about 400) are not kept: the file is not
        #  twice its size
        self.assertLess(pragma(self.store, "freelist_count"), 16)
        self.assertLess(os.path.getsize(self.store), size * 1.5)

    def test_a_file_with_auto_vacuum_none_keeps_the_pages(self):
        make_v4_store(self.store, "NONE")
        actd, sent = self.start()
        self.check_progress(sent)
        self.check_messages(actd)
        self.assertRegex(actd.log(), r"N: actd .* store .*: \d+ free pages \(\d+ MiB\) stay in "
                                     r"the file for new writes: it has auto_vacuum NONE")
        self.assertEqual(actd.stop(), 0, actd.log())
        #  Kept on the free list, for new writes (docs/operations.md says
        #  how to convert the file)
        self.assertGreater(pragma(self.store, "freelist_count"), 100)

    def test_a_new_store_sends_only_ready(self):
        actd, sent = self.start()
        self.assertEqual(len(sent), 1, sent)
        self.assertIn("READY", sent[0])
        log = actd.log()
        self.assertNotIn("migrating", log)
        #  One line for a new file, not one per step it went through
        self.assertNotIn("migrated", log)
        self.assertEqual(len(re.findall(r"store .*: created with schema version 10\n", log)), 1, log)


class NewPostgresStoreTest(unittest.TestCase):

    def test_a_new_database_logs_one_line_and_a_second_start_none(self):
        url = pg.database()
        for start, created in ((1, 1), (2, 0)):
            actd = Actd(store=url)
            self.addCleanup(actd.cleanup)
            actd.start()
            log = actd.log()
            self.assertEqual(actd.stop(), 0, log)
            self.assertNotIn("migrated", log)
            self.assertEqual(len(re.findall(r"store .*: created with schema version \d+\n", log)),
                             created, "start %d:\n%s" % (start, log))


    def test_a_version_2_database_with_a_pending_call_is_migrated(self):
        """Version 3 (a call's resume state, a new table) on a database
        an older actd left at version 2 with a call not ended: migrated
        before actd serves, and the call runs."""
        url = pg.database()
        actd = Actd(store=url)
        self.addCleanup(actd.cleanup)
        actd.start()
        client = actd.client()
        self.addCleanup(client.close)
        call_id, _ = client.call("old", {"_tool": "gen", "_outputPath": DAGGER + "a.v"},
                                 wait_done=False)
        self.assertEqual(actd.stop(), 0, actd.log())
        psql = [pg._bin("psql"), url, "-v", "ON_ERROR_STOP=1", "-c"]
        subprocess.run(psql + ["DROP TABLE resume; UPDATE actd_meta SET value = '2'"
                               " WHERE key = 'schema_version'"], check=True,
                       capture_output=True, timeout=60)
        actd.start()
        self.assertEqual(re.findall(r"schema migrated to version (\d+)", actd.log()), ["3"])
        worker = Worker(actd.worker_endpoint, ["gen"], lambda activity, params, meta: 1)
        worker.start()
        self.addCleanup(worker.stop)
        client = actd.client()
        self.addCleanup(client.close)
        self.assertEqual(client.wait_status(call_id, ["ok", "error", "skipped"])["state"], "ok")
        self.assertEqual(actd.stop(), 0, actd.log())

    def test_the_password_in_the_url_is_not_logged(self):
        """The ready line gave the store's URL as written, password and
        all, at each start (an audit of the logs)."""
        url = pg.database().replace("postgres@", "postgres:TopSecretPw@", 1)
        actd = Actd(store=url + "?password=TopSecretPw")
        self.addCleanup(actd.cleanup)
        actd.start()
        self.assertEqual(actd.stop(), 0, actd.log())
        self.assertIn("store postgresql://postgres:***@", actd.log())
        self.assertIn("?password=***", actd.log())
        self.assertNotIn("TopSecretPw", actd.log())

    def test_a_migration_waits_until_no_other_broker_runs(self):
        """A broker of an older actd still running on the database would
        go on writing by the old schema (it never reads the version
        again): an upgrade audit saw CONTEXTS counts wrong for good and
        retention delete live contexts. So a migration is refused while
        another broker renewed its heartbeat within the lease; one that
        stopped (its heartbeat '-infinity') is no obstacle."""
        url = pg.database()
        actd = Actd(store=url)
        self.addCleanup(actd.cleanup)
        actd.start()
        self.assertEqual(actd.stop(), 0, actd.log())
        psql = [pg._bin("psql"), url, "-v", "ON_ERROR_STOP=1", "-At", "-c"]

        def sql(text):
            return subprocess.run(psql + [text], check=True, capture_output=True, text=True,
                                  timeout=60).stdout.strip()
        sql("DROP TABLE resume; UPDATE actd_meta SET value = '2' WHERE key = 'schema_version';"
            " INSERT INTO brokers VALUES ('old-host/tcp://10.0.0.9:5555', 'tcp://10.0.0.9:5555',"
            " now ())")
        actd.start(wait=False)
        self.assertEqual(actd.process.wait(60), 1, actd.log())
        self.assertRegex(actd.log(), r"cannot start: store .* has schema version 2, and broker "
                         r"old-host/tcp://10\.0\.0\.9:5555 \(and 0 more\) renewed its "
                         r"heartbeat \d+ ms ago: it may run an older actd")
        self.assertEqual(sql("SELECT value FROM actd_meta WHERE key = 'schema_version'"), "2")
        #  Stopped, it left '-infinity': the migration goes ahead, said at notice
        sql("UPDATE brokers SET heartbeat = '-infinity' WHERE id LIKE 'old-host/%'")
        actd.start()
        self.assertRegex(actd.log(), r"N: actd .*schema version 2, migrating it to version 3 "
                         r"before serving")
        self.assertRegex(actd.log(), r"N: actd .*schema migrated from version 2 to 3 in ")
        self.assertEqual(sql("SELECT value FROM actd_meta WHERE key = 'schema_version'"), "3")
        self.assertEqual(actd.stop(), 0, actd.log())


if __name__ == "__main__":
    unittest.main()

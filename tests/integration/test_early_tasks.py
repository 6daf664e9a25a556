"""A call's first attempt leaves for its worker while the commit that
stores it runs (issue 21): the worker's time and the commit's overlap.
Only for the first attempt of a call accepted in this run whose
parameters read nothing that is not durable (no reference, or none of
its context's messages waiting for a commit); every other TASK (a call
of a context written in a batch not committed yet, a retry, a recovered
call) waits for the commit that counts its attempt, and no reply to a
client leaves before its commit. With store/early_tasks = 0 every TASK
waits.

The commit is held in flight by pausing the PostgreSQL server behind
actd (SIGSTOP), so what leaves before it is seen from outside, with no
timing involved: a TASK that arrives while the database is stopped left
before its commit. (A new call needs no statement of its own then: its id
comes from the block of ids the broker holds.)
"""

import json
import os
import time
import unittest

from harness import DAGGER, Actd, Client, NoAnswer, Worker, wait_for
from pg import Paused

#  Neither the lease nor a statement timeout runs out in a pause
CONFIG = "server\n    lease_ms = 60000\nstore\n    timeout_ms = 60000\n"


def new_actd(server, store_settings=""):
    """An actd on a fresh database of server, with the config above and
    store_settings (lines of the store section)."""
    actd = Actd(store=server.database())
    with open(os.path.join(actd.dir, "actd.cfg"), "w") as handle:
        handle.write(CONFIG + store_settings)
    actd.args = ["--config", os.path.join(actd.dir, "actd.cfg")]
    return actd


def task_ids(worker):
    return [task[0] for task in worker.tasks]


class PausedStoreCase(unittest.TestCase):
    """An actd on PostgreSQL, with store_settings in its config."""

    store_settings = ""

    def setUp(self):
        import pg
        self.server = pg.server()
        self.actd = new_actd(self.server, self.store_settings)
        try:
            self.actd.start()
        except Exception:
            self.actd.cleanup()
            raise

    def tearDown(self):
        self.actd.cleanup()

    def warm_up(self, client, worker, context):
        """Once worker has registered, one call of context run to its end.
        A first call takes a block of call ids from the database
        (PostgreSQL's sequence): the calls after it need none."""
        wait_for(lambda: len(json.loads(client.request("STATS")[1])["workers"]) == 1,
                 "the worker registered", 30)
        warm = client.send("CALL", context, {"_tool": "hold", "_outputPath": DAGGER + "w"})
        wait_for(lambda: len(worker.tasks) == 1, "the first call's TASK", 30)
        worker.send_result(worker.tasks.pop()[0], 0)
        self.assertEqual(client.wait(warm, "DONE", timeout=30)[0], "DONE")


class EarlyTasks(PausedStoreCase):

    def test_a_first_attempt_leaves_before_its_commit_unless_it_reads_what_is_not(self):
        client = self.actd.client()
        worker = Worker(self.actd.worker_endpoint, ["hold"], lambda *task: NoAnswer,
                        capacity=10)
        worker.start()
        try:
            reply = client.request("APPEND", "early", {"type": "data", "kind": "input",
                                                       "data": {"x": 41}})
            self.assertEqual(reply[0], "OK", reply)
            self.warm_up(client, worker, "early")
            with Paused(self.server):
                plain = client.send("CALL", "early", {
                    "_tool": "hold", "n": 1, "_outputPath": DAGGER + "state.a"})
                #  Its TASK arrives while its commit cannot end
                wait_for(lambda: len(worker.tasks) == 1, "the plain call's TASK", 30)
                task, activity, params, meta = worker.tasks[0]
                self.assertEqual((activity, params, meta["attempt"]), ("hold", {"n": 1}, 1))
                #  A reference to what is stored: sent too
                durable = client.send("CALL", "early", {
                    "_tool": "hold", "v": DAGGER + "input.x",
                    "_outputPath": DAGGER + "state.b"})
                wait_for(lambda: len(worker.tasks) == 2, "the durable reference's TASK", 30)
                self.assertEqual(worker.tasks[1][2], {"v": 41})
                #  A message appended now is not durable before the commit
                #  after this one: a call of that context waits for it,
                #  whatever it reads
                appended = client.send("APPEND", "early", {"type": "data", "kind": "input",
                                                           "data": {"y": 7}})
                fresh = client.send("CALL", "early", {
                    "_tool": "hold", "v": DAGGER + "input.y",
                    "_outputPath": DAGGER + "state.c"})
                #  No reply (ACCEPTED and OK promise a commit), and the call
                #  is not sent
                self.assertFalse(client.socket.poll(2000), "a reply during the pause")
                self.assertEqual(len(worker.tasks), 2, worker.tasks)
            replies = [client.wait(rid, timeout=60) for rid in (plain, durable, appended, fresh)]
            self.assertEqual([reply[0] for reply in replies],
                             ["ACCEPTED", "ACCEPTED", "OK", "ACCEPTED"], replies)
            self.assertEqual(task.split(".")[0], replies[0][1])
            wait_for(lambda: len(worker.tasks) == 3, "the last call's TASK", 60)
            self.assertEqual(worker.tasks[2][2], {"v": 7})
            for task, activity, params, meta in list(worker.tasks):
                worker.send_result(task, {"echo": params})
            for rid, reply, params in ((plain, replies[0], {"n": 1}),
                                       (durable, replies[1], {"v": 41}),
                                       (fresh, replies[3], {"v": 7})):
                done = client.wait(rid, "DONE", timeout=60)
                outcome = json.loads(done[2])
                self.assertEqual((done[1], outcome["status"], outcome["attempts"],
                                  outcome["result"]), (reply[1], "ok", 1, {"echo": params}))
            self.assertEqual(client.resolve("early", DAGGER + "state.a"), {"echo": {"n": 1}})
        finally:
            worker.stop()
            client.close()

    def test_a_crash_before_the_commit_runs_the_call_again_or_never_acknowledged_it(self):
        client = Client(self.actd.client_endpoint, identity=b"early-client")
        #  Stored and acknowledged with no worker to run it: queued
        stored = client.send("CALL", "crash", {
            "_tool": "hold", "n": 1, "_outputPath": DAGGER + "state.a"})
        reply = client.wait(stored, timeout=30)
        self.assertEqual(reply[0], "ACCEPTED", reply)
        stored_id = reply[1]
        holder = Worker(self.actd.worker_endpoint, ["hold"], lambda *task: NoAnswer,
                        capacity=10, name="holder")
        try:
            with Paused(self.server):
                #  Its first attempt goes as the worker arrives, and a new
                #  call's too: neither attempt is stored yet
                holder.start()
                wait_for(lambda: len(holder.tasks) == 1, "the stored call's TASK", 30)
                client.send("CALL", "crash", {
                    "_tool": "hold", "n": 2, "_outputPath": DAGGER + "state.b"})
                wait_for(lambda: len(holder.tasks) == 2, "the new call's TASK", 30)
                self.assertFalse(client.socket.poll(500), "a reply during the pause")
                self.actd.kill()
        finally:
            holder.stop()
        first, second = holder.tasks
        self.assertEqual((first[0], first[3]["attempt"]), (stored_id + ".1", 1))
        self.assertEqual(second[2], {"n": 2})
        new_id = second[0].split(".")[0]
        client.close()

        self.actd.start()
        client = Client(self.actd.client_endpoint, identity=b"early-client")
        after = Worker(self.actd.worker_endpoint, ["hold"], lambda a, params, m: params,
                       name="after")
        try:
            #  Recovered, its TASK waits for the commit that counts the
            #  attempt: a call whose run crashes actd cannot run for ever
            self.assertEqual(client.wait_status(stored_id, ["queued"], timeout=60)["attempts"],
                             0)
            with Paused(self.server):
                after.start()
                wait_for(lambda: after.ready.is_set(), "the worker's READY", 30)
                time.sleep(2)
                self.assertEqual(after.tasks, [])
            #  The acknowledged call runs again, its lost attempt not counted
            status = client.wait_status(stored_id, ["ok", "error", "timeout", "skipped",
                                                    "cancelled"], timeout=60)
            self.assertEqual((status["state"], status["attempts"]), ("ok", 1), status)
            self.assertEqual(status["outcome"]["result"], {"n": 1})
            self.assertEqual([task[0] for task in after.tasks], [stored_id + ".1"])
            #  The call never acknowledged was never stored: the client,
            #  told nothing, sends it again if it wants it
            reply = client.request("STATUS", new_id)
            self.assertEqual(reply[:2], ["ERROR", "not_found"], reply)
            self.assertEqual(client.resolve("crash", DAGGER + "state.a"), {"n": 1})
        finally:
            after.stop()
            client.close()
        self.assertEqual(self.actd.stop(), 0)


class NoEarlyTasks(PausedStoreCase):
    """store/early_tasks = 0: every TASK waits for the commit that stores
    its call, so a worker never sees a call that is not stored."""

    store_settings = "    early_tasks = 0\n"

    def test_a_first_attempt_waits_for_its_commit(self):
        client = self.actd.client()
        worker = Worker(self.actd.worker_endpoint, ["hold"], lambda *task: NoAnswer,
                        capacity=10)
        worker.start()
        try:
            self.assertIs(json.loads(client.request("STATS")[1])["store"]["early_tasks"], False)
            self.warm_up(client, worker, "late")
            with Paused(self.server):
                plain = client.send("CALL", "late", {
                    "_tool": "hold", "n": 1, "_outputPath": DAGGER + "state.a"})
                #  The plain call EarlyTasks sees at once: here neither its
                #  TASK nor its ACCEPTED comes during the pause
                self.assertFalse(client.socket.poll(2000), "a reply during the pause")
                self.assertEqual(worker.tasks, [])
            reply = client.wait(plain, timeout=60)
            self.assertEqual(reply[0], "ACCEPTED", reply)
            wait_for(lambda: len(worker.tasks) == 1, "the TASK after the commit", 60)
            task, activity, params, meta = worker.tasks[0]
            self.assertEqual((task, params, meta["attempt"]), (reply[1] + ".1", {"n": 1}, 1))
            worker.send_result(task, "done")
            outcome = json.loads(client.wait(plain, "DONE", timeout=60)[2])
            self.assertEqual((outcome["status"], outcome["result"]), ("ok", "done"))
        finally:
            worker.stop()
            client.close()


if __name__ == "__main__":
    unittest.main()

"""A C worker's failure over 1 MiB (actd's default max_message_bytes):
actd reads a FAIL over it as no body, a retryable activity_failed, 'the
activity failed'. act_task_fail sends it as its code and retryable, its
message cut to 64 KiB (ACT_WORKER_MAX_FAIL_MESSAGE); one that fits is sent
whole. Driven through tests/helpers/worker_fail.c against a real actd."""

import subprocess
import unittest

from harness import DAGGER, Actd, end_process, find_binary, wait_for

RETRY = {"max_attempts": 3, "initial_ms": 10}


class WorkerFailTest(unittest.TestCase):

    def setUp(self):
        self.actd = Actd().start()
        self.addCleanup(self.actd.cleanup)
        self.worker = subprocess.Popen([find_binary("worker_fail"), self.actd.worker_endpoint],
                                       stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.worker.stdout.close)
        self.addCleanup(end_process, self.worker)
        self.client = self.actd.client()
        self.addCleanup(self.client.close)
        wait_for(lambda: self.client.value("STATS")["workers"], "the C worker to join")

    def failed_call(self, text, repeat):
        """The outcome of a c-fail call, and the attempts its worker ran."""
        _, outcome = self.client.call("ctx-fail", {
            "_tool": "c-fail", "_outputPath": DAGGER + "out", "_retry": RETRY,
            "text": text, "repeat": repeat}, timeout=60)
        end_process(self.worker)
        return outcome, self.worker.stdout.read().split()

    def test_a_failure_over_a_mib_keeps_its_code_and_is_not_retried(self):
        # 2 MiB of text: the whole FAIL was read as {}, retried three times
        outcome, runs = self.failed_call("\u00e9", 1 << 20)
        error = outcome["error"]
        self.assertEqual((outcome["status"], error["code"], outcome["attempts"]),
                         ("error", "w_huge", 1), error["message"][:80])
        self.assertEqual(runs, ["run", "1"])
        self.assertTrue(error["message"].startswith("\u00e9\u00e9"), error["message"][:40])
        self.assertEqual(error["message"][32768:],
                         "... (cut: the failure was 2097200 bytes)")
        self.assertEqual(self.actd.stop(), 0, self.actd.log())

    def test_the_cut_ends_at_a_character(self):
        # 65,536 bytes end inside the 21,846th euro sign (3 bytes each)
        outcome, runs = self.failed_call("\u20ac", 700000)
        self.assertEqual((outcome["error"]["code"], outcome["attempts"], runs),
                         ("w_huge", 1, ["run", "1"]))
        self.assertEqual(outcome["error"]["message"],
                         "\u20ac" * 21845 + "... (cut: the failure was 2100048 bytes)")
        self.assertEqual(self.actd.stop(), 0, self.actd.log())

    def test_a_message_that_is_not_utf8_is_sent_with_its_bad_bytes_as_question_marks(self):
        # jansson refused the FAIL's body: the worker crashed in zmsg_addstr
        _, outcome = self.client.call("ctx-fail", {
            "_tool": "c-fail", "_outputPath": DAGGER + "out", "_retry": RETRY,
            "text": "caf\u00e9 ", "repeat": 1, "tail": " end"}, timeout=60)
        self.assertEqual((outcome["error"]["code"], outcome["error"]["message"],
                          outcome["attempts"]), ("w_huge", "caf\u00e9 ?? end", 1))
        self.assertIsNone(self.worker.poll(), "the worker is still there")
        self.assertEqual(self.actd.stop(), 0, self.actd.log())

    def test_progress_that_is_not_utf8_is_sent_with_its_bad_bytes_as_question_marks(self):
        # actd refused the PROGRESS's body and ignored it: STATUS showed
        # none. Details json_pack refused (NULL) aborted the worker
        call_id, outcome = self.client.call("ctx-fail", {
            "_tool": "c-fail", "_outputPath": DAGGER + "out", "_retry": RETRY,
            "text": "failed", "repeat": 1, "progress": "caf\u00e9 "}, timeout=60)
        self.assertEqual((outcome["error"]["code"], outcome["attempts"]), ("w_huge", 1))
        self.assertEqual(self.client.status(call_id).get("progress"),
                         {"caf\u00e9 ??": "caf\u00e9 ??"})
        self.assertIsNone(self.worker.poll(), "the worker is still there")
        end_process(self.worker)
        self.assertEqual(self.worker.stdout.read().split(), ["progress", "-1", "run", "1"])
        self.assertEqual(self.actd.stop(), 0, self.actd.log())

    def test_a_failure_that_fits_is_sent_whole(self):
        outcome, runs = self.failed_call("a", (1 << 20) - 100)
        error = outcome["error"]
        self.assertEqual((outcome["status"], error["code"], outcome["attempts"]),
                         ("error", "w_huge", 1))
        self.assertEqual(runs, ["run", "1"])
        self.assertEqual(error["message"], "a" * ((1 << 20) - 100))
        self.assertEqual(self.actd.stop(), 0, self.actd.log())


if __name__ == "__main__":
    unittest.main()

"""actd.aio.AsyncClient against the real actd: many calls awaited at once,
and the rest of the client API as coroutines."""

import asyncio
import unittest
from typing import Any, List

from support import TIMEOUT, BrokerTest

import actd
import actd.aio


class AsyncClientTest(BrokerTest):
    """One actd and one Python worker serving "upper" and "echo"."""

    worker_name = "aio-test-worker"

    def run_async(self, coroutine: Any) -> Any:
        return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT * 3))

    def test_200_concurrent_calls(self) -> None:
        async def main() -> List[actd.Outcome]:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                outcomes = await asyncio.gather(*(
                    client.call("a-many", {"_tool": "upper", "text": "w%d" % n,
                                           "_outputPath": "†out.n%d" % n}, timeout=TIMEOUT * 2)
                    for n in range(200)))
                self.assertEqual(client.pending, 0)
                return list(outcomes)

        outcomes = self.run_async(main())
        self.assertEqual([(o.status, o.result, o.written) for o in outcomes],
                         [("ok", "W%d" % n, ["†out.n%d" % n]) for n in range(200)])
        self.assertEqual(len({o.call_id for o in outcomes}), 200)
        self.assertEqual(self.client.resolve("a-many", "†out.n199"), "W199")

    def test_submit_plan_and_wait(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                handle = await client.submit("a-submit", {"_tool": "echo", "n": 1,
                                                          "_outputPath": "†one"})
                self.assertTrue(handle.has_output)
                outcome = await handle
                self.assertEqual((outcome.status, outcome.result), ("ok", {"n": 1}))
                self.assertEqual(await handle.accepted(), outcome.call_id)

                forgotten = await client.call("a-submit", {"_tool": "echo", "n": 2})
                self.assertIsInstance(forgotten, str)
                self.assertEqual((await client.wait(forgotten, timeout=TIMEOUT)).status, "ok")

                results = await client.plan("a-submit", [
                    {"_tool": "upper", "text": "p", "_outputPath": "†plan.a"},
                    {"_tool": "upper", "text": "†plan.a", "_outputPath": "†plan.b"},
                    {"_tool": "echo", "n": 3}], timeout=TIMEOUT)
                self.assertEqual([r.result if isinstance(r, actd.Outcome) else type(r)
                                  for r in results], ["P", "P", str])
                ids = await client.plan("a-submit", [{"_tool": "echo", "n": 4}], wait=False)
                self.assertEqual(len(ids), 1)
                self.assertEqual((await client.status(ids[0])).call_id, ids[0])

        self.run_async(main())

    def test_context_methods(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                self.assertEqual(await client.append("a-ctx", {"type": "data", "kind": "user",
                                                               "data": {"name": "ada"}}), 1)
                for n in range(4):
                    await client.append("a-ctx", {"type": "text", "n": n})
                self.assertEqual(await client.resolve("a-ctx", "†user.name"), "ada")
                with self.assertRaises(actd.NotFound):
                    await client.resolve("a-ctx", "†user.age")
                self.assertEqual(await client.view("a-ctx"), [
                    {"type": "data", "kind": "user", "data": {"name": "ada"}}])
                self.assertEqual(await client.view("a-ctx", format="text"),
                                 '## Data: \u00b6user\n{\n  "name": "ada"\n}\n')
                page = [m["_seq"] async for m in client.history("a-ctx", from_seq=2, limit=2)]
                self.assertEqual(page, [2, 3])
                seqs = [m["_seq"] async for m in client.history("a-ctx", page_size=2)]
                self.assertEqual(seqs, [1, 2, 3, 4, 5])
                with self.assertWarns(DeprecationWarning):
                    old = client.iter_history("a-ctx", from_seq=4, page_size=1)
                self.assertEqual([m["_seq"] async for m in old], [4, 5])

        self.run_async(main())

    def test_calls_by_id_and_broker_methods(self) -> None:
        async def main() -> None:
            async with actd.aio.AsyncClient(self.broker.client_endpoint) as client:
                self.assertGreaterEqual(await client.ping(), 0.0)
                stats = await client.stats()
                self.assertEqual([w["lang"] for w in stats["workers"]
                                  if w["name"] == "aio-test-worker"], ["python"])
                handle = await client.submit("a-ids", {"_tool": "nobody-serves-this",
                                                       "_outputPath": "†never"})
                call_id = await handle.accepted()
                self.assertEqual((await client.status(call_id)).state, "queued")
                await client.cancel(call_id)
                outcome = await handle.outcome(TIMEOUT)
                self.assertEqual((outcome.status, outcome.code), ("cancelled", "cancelled"))
                with self.assertRaises(actd.NotFound) as raised:
                    await client.status("987654321")
                self.assertEqual(raised.exception.code, "not_found")
                with self.assertRaises(actd.BadCall) as refused:
                    await client.call("a-ids", {"no_tool": 1})
                self.assertEqual(refused.exception.code, "bad_call")
                self.assertEqual(client.pending, 0)

        self.run_async(main())


if __name__ == "__main__":
    unittest.main()

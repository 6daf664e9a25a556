"""WATCH gives each message byte for byte as HISTORY gives it, whatever
bytes it was stored from: a stored text already in reply form (compact,
escaped as actd writes) goes as it is, any other (spaced, escaped
otherwise, numbers written otherwise) is read and written again, both in
the replay of what is stored and live (PROTOCOL.md section 2: "the message
as HISTORY returns it").
"""

import unittest

from harness import Actd

#  APPEND bodies as a client may write them
TEXTS = [
    '{"type":"data","kind":"input","data":{"a":1}}',
    '{ "type" : "data", "kind":"input",\n "data": {"b" : [1, 2 ,3]} }',
    '{"type":"data","kind":"input","data":{"c":"\\u00e9\\/x\\u0041"}}',
    '{"type":"data","kind":"input","data":{"d":1.50,"e":1E2,"f":-0.0}}',
    '{"type":"data","kind":"input","data":{"g":"caf\u00e9 \\"quoted\\" \\t"}}',
]


def message_text(event):
    """The message's own text inside an EVENT body {"seq":N,"message":...}."""
    head = event.index('"message":') + len('"message":')
    assert event.endswith("}"), event
    return event[head:-1]


class WatchTexts(unittest.TestCase):

    def test_replay_and_live_events_match_history_byte_for_byte(self):
        with Actd() as actd:
            client, live, replay = actd.client(), actd.client(), actd.client()
            live_rid = live.send("WATCH", "texts", "0")
            self.assertEqual(live.request("PING"), ["PONG"])   # the watch is open
            for text in TEXTS:
                rid = client.next_id()
                client.send_raw(["ACTC01", "APPEND", rid, "texts", text])
                self.assertEqual(client.wait(rid)[0], "OK")
            history = client.request("HISTORY", "texts", "1", "100")
            self.assertEqual(history[0], "VALUE", history)
            replay_rid = replay.send("WATCH", "texts", "1")
            for watcher, rid in ((live, live_rid), (replay, replay_rid)):
                events = [watcher.wait(rid, "EVENT", timeout=30)[1] for _ in TEXTS]
                self.assertEqual([event.split(",", 1)[0] for event in events],
                                 ['{"seq":%d' % seq for seq in range(1, len(TEXTS) + 1)])
                self.assertEqual("[" + ",".join(message_text(e) for e in events) + "]",
                                 history[1])
            client.close()
            live.close()
            replay.close()


if __name__ == "__main__":
    unittest.main()

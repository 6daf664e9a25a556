"""A worker message framed wrong is told so (PROTOCOL.md section 2: any
message other than READY from a worker that has not sent READY gets
DISCONNECT), in the framing it came in, not dropped in silence, where the
worker would wait for ever: an ACT/1 header with no command, ACT/1 after
an empty frame (a REQ socket's envelope), a Majordomo header with no
command. A message with no worker protocol header at all is still
dropped (logged): there is no framing to answer in."""

import json
import unittest

import zmq

from harness import Actd, wait_for


class FramingTest(unittest.TestCase):

    def setUp(self):
        self.actd = Actd().start()
        self.addCleanup(self.actd.cleanup)
        self.sockets = []

    def tearDown(self):
        for socket in self.sockets:
            socket.close(0)
        self.assertEqual(self.actd.stop(), 0, self.actd.log())

    def worker(self, kind=zmq.DEALER):
        socket = zmq.Context.instance().socket(kind)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(self.actd.worker_endpoint)
        self.sockets.append(socket)
        return socket

    def reply(self, socket, timeout=10):
        self.assertTrue(socket.poll(timeout * 1000), "no reply")
        return socket.recv_multipart()

    def test_an_actw_header_alone_gets_disconnect(self):
        socket = self.worker()
        socket.send_multipart([b"ACTW01"])
        self.assertEqual(self.reply(socket),
                         [b"ACTW01", b"DISCONNECT", b"a message with no command"])

    def test_a_registered_worker_sending_no_command_is_disconnected(self):
        socket = self.worker()
        #  Right after its READY (read first: one connection keeps order),
        #  before any liveness could judge it
        socket.send_multipart([b"ACTW01", b"READY", json.dumps(
            {"activities": ["x"], "name": "w-framing"}).encode()])
        socket.send_multipart([b"ACTW01"])
        frames = self.reply(socket)
        while frames[:2] == [b"ACTW01", b"HEARTBEAT"]:
            frames = self.reply(socket)
        self.assertEqual(frames, [b"ACTW01", b"DISCONNECT", b"a message with no command"])
        #  It was registered (named in the log by its name) and is gone
        wait_for(lambda: "worker w-framing: a message with no command" in self.actd.log(),
                 "the log line naming the worker")
        client = self.actd.client()
        self.addCleanup(client.close)
        self.assertEqual(client.value("STATS")["workers"], [])

    def test_actw_from_a_req_socket_gets_disconnect_it_can_read(self):
        socket = self.worker(zmq.REQ)
        socket.send_multipart([b"ACTW01", b"READY", json.dumps({"activities": ["x"]}).encode()])
        #  A REQ socket takes the reply without the empty frame
        self.assertEqual(self.reply(socket),
                         [b"ACTW01", b"DISCONNECT",
                          b"an ACT/1 message has no empty frame first (a REQ socket: use DEALER)"])

    def test_a_majordomo_header_alone_gets_its_disconnect(self):
        for header, expected in (([b"MDPW02"], [b"MDPW02", b"\x06"]),
                                 ([b"", b"MDPW01"], [b"", b"MDPW01", b"\x05"])):
            socket = self.worker()
            socket.send_multipart(header)
            self.assertEqual(self.reply(socket), expected, header)

    def test_a_majordomo_service_name_not_utf8_is_refused(self):
        """Its READY joined a worker serving no activity at all (logged
        "activities (null)"): the name could not become a JSON string.
        It is refused as a bad service name, as an empty one is."""
        socket = self.worker()
        socket.send_multipart([b"MDPW02", b"\x01", b"ocr-\xff\xfe"])
        frames = self.reply(socket)
        while frames[:2] == [b"MDPW02", b"\x05"]:          # heartbeats (18/MDP)
            frames = self.reply(socket)
        self.assertEqual(frames, [b"MDPW02", b"\x06"])
        client = self.actd.client()
        self.addCleanup(client.close)
        self.assertEqual(client.value("STATS")["workers"], [])
        self.assertNotIn("activities (null)", self.actd.log())

    def test_no_worker_header_is_dropped_and_logged(self):
        socket = self.worker()
        socket.send_multipart([b"HELLO", b"READY"])
        self.assertFalse(socket.poll(500), "a message without a header was answered")
        #  The log says so (once per peer a while: the first is there)
        wait_for(lambda: "message without a worker protocol header" in self.actd.log(),
                 "the log line")


if __name__ == "__main__":
    unittest.main()

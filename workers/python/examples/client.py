#!/usr/bin/env python3
"""An actd client using the example worker's activities.

    /usr/bin/python3 workers/python/examples/client.py --endpoint tcp://127.0.0.1:5555

With $ACTD_SERVER_KEY (the broker's public key) and $ACTD_CERT (this
client's certificate file) it speaks CURVE.
"""

import argparse
import os
import sys

try:
    import actd
except ImportError:     # Run from a source checkout: use the package beside this file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import actd


def main() -> None:
    parser = argparse.ArgumentParser(description="actd example client")
    parser.add_argument("--endpoint", default=None,
                        help="the broker's client endpoint, or a comma-separated list "
                        "(default $ACTD_ENDPOINT, else %s)" % actd.DEFAULT_CLIENT_ENDPOINT)
    parser.add_argument("--context", default="example", help="the context id to use")
    args = parser.parse_args()
    context = args.context

    with actd.Client(args.endpoint) as client:
        client.ping()

        # Some data in the context, then a call that reads it by reference
        # and writes its result to the context.
        client.append(context, {"type": "data", "kind": "user", "data": {"name": "ada"}})
        outcome = client.call(context, {"_tool": "upper", "text": "†user.name",
                                        "_outputPath": "†user.shout"})
        print("upper:", outcome.status, outcome.result)

        # Alternative outcomes: the worker names the branch it took.
        for city in ("Oslo", "Paris"):
            outcome = client.call(context, {"_tool": "weather", "city": city,
                                            "_outputPath": "†sunny.%s || †rainy.%s" % (city, city)})
            print("weather:", city, "branch", outcome.branch, "wrote", outcome.written)

        # Pipelined calls: submit many, then wait for each.
        handles = [client.submit(context, {"_tool": "echo", "n": n,
                                           "_outputPath": "†echoes", "_outputMethod": "push"})
                   for n in range(5)]
        for handle in handles:
            handle.outcome(timeout=30).raise_for_error()
        print("echoes:", client.resolve(context, "†echoes"))

        # A fire-and-forget call: only its call id comes back.
        call_id = client.call(context, {"_tool": "echo", "note": "not stored"})
        print("fire-and-forget call", call_id, "ended", client.wait(call_id, timeout=30).status)

        print("user:", client.resolve(context, "†user"))
        try:
            client.resolve(context, "†user.age")
        except actd.NotFound as error:
            print("absent:", error.message)
        print(client.view(context, format="text"))


if __name__ == "__main__":
    main()

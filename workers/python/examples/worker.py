#!/usr/bin/env python3
"""An actd worker serving three activities: "upper", "echo" and "weather".

    /usr/bin/python3 workers/python/examples/worker.py --endpoint tcp://127.0.0.1:5556

Stops on Ctrl-C or SIGTERM. With $ACTD_SERVER_KEY (the broker's public key)
and $ACTD_CERT (this worker's certificate file) it speaks CURVE.
"""

import argparse
import logging
import os
import sys
from typing import Any, Dict

try:
    import actd
except ImportError:     # Run from a source checkout: use the package beside this file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import actd


def main() -> None:
    parser = argparse.ArgumentParser(description="actd example worker")
    parser.add_argument("--endpoint", default=None,
                        help="the broker's worker endpoint, or a comma-separated list "
                        "(default $ACTD_WORKER_ENDPOINT, else %s)" % actd.DEFAULT_WORKER_ENDPOINT)
    parser.add_argument("--capacity", type=int, default=4, help="tasks run at once")
    parser.add_argument("--heartbeat-ms", type=int, default=1000,
                        help="the broker's heartbeat_ms (default %(default)s)")
    parser.add_argument("--liveness", type=int, default=3,
                        help="the broker's liveness (default %(default)s)")
    parser.add_argument("--name", default=None, help="the name shown in STATS")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    worker = actd.Worker(args.endpoint, capacity=args.capacity, name=args.name,
                         heartbeat_ms=args.heartbeat_ms, liveness=args.liveness)

    @worker.activity("upper")
    def upper(params: Dict[str, Any], task: actd.Task) -> str:
        """{"text": s} -> s in upper case."""
        return str(params["text"]).upper()

    @worker.activity("echo")
    def echo(params: Dict[str, Any], task: actd.Task) -> Dict[str, Any]:
        """Returns the parameters as received (references resolved)."""
        return params

    @worker.activity("weather")
    def weather(params: Dict[str, Any], task: actd.Task) -> actd.Branch:
        """{"city": s} -> sunny (branch 0) when len(s) is even, else rainy (branch 1)."""
        city = params.get("city")
        if not isinstance(city, str):
            raise actd.ActivityError("city must be a string", code="bad_city", retryable=False)
        if len(city) % 2 == 0:
            return actd.Branch(0, {"city": city, "sky": "sunny"})
        return actd.Branch(1, {"city": city, "sky": "rainy"})

    worker.run()


if __name__ == "__main__":
    main()

"""actd: Python worker and client for the actd activity broker (ACT/1).

* :class:`Worker` serves activities: ``@worker.activity("name")`` (or
  bare ``@worker.activity``: the function's name) on a function or an
  ``async def`` ``(params, task) -> result``, then ``worker.run()``.
* A handler's tool (description, params schema, output path) is declared
  in ``READY``; ``Client.tools()`` reads the registry (``TOOLS``).
* :class:`Client` submits calls and reads contexts (thread-safe);
  :class:`actd.aio.AsyncClient` does the same with asyncio.

The protocol is in PROTOCOL.md and the data model in SEMANTICS.md of the
actd project. Only dependency: pyzmq.
"""

import logging

from .client import CallHandle, Client, PlanHandle
from .errors import (ActdError, ActivityError, BadArgument, BadCall, BadContext, BadFrame,
                     BadJson, BadMethod, BadReference, Busy, CallFailed, Closed, Disconnected,
                     Internal,
                     Moved, NotFound, ProtocolError, Timeout, TooLarge, TypeMismatch, Unauthorized,
                     UnknownActivity, UnknownCommand, UnresolvedReference, error_for)
from .types import (DEFAULT_CLIENT_ENDPOINT, DEFAULT_WORKER_ENDPOINT, ENDED_STATES, Branch,
                    Outcome, Status)
from .worker import Handler, Task, Worker

__version__ = "0.1.0"

__all__ = [
    "Worker", "Task", "Handler", "Branch", "Client", "CallHandle", "PlanHandle",
    "Outcome", "Status", "ENDED_STATES", "DEFAULT_CLIENT_ENDPOINT", "DEFAULT_WORKER_ENDPOINT",
    "ActdError", "ActivityError", "BadArgument", "BadCall", "BadContext", "BadFrame", "BadJson",
    "BadMethod", "BadReference", "Busy", "CallFailed", "Closed", "Disconnected", "Internal",
    "Moved", "NotFound",
    "ProtocolError", "Timeout", "TooLarge", "TypeMismatch", "Unauthorized", "UnknownActivity",
    "UnknownCommand",
    "UnresolvedReference", "error_for", "__version__",
]

logging.getLogger("actd").addHandler(logging.NullHandler())

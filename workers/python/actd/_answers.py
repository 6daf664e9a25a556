"""What a worker answers a task with: the RESULT of a handler's value or
the FAIL of an error (docs/protocol.md sections 3.4 and 3.5), each within
actd's max_message_bytes.

A frame over max_message_bytes is refused by actd; one over
``4 × max_message_bytes + 65536`` bytes is not even read: libzmq drops the
worker's connection, and every task running on it fails worker_lost. So
the worker sends no frame over the limit it is given.
"""

import json
import logging
from typing import TYPE_CHECKING, Any, Dict, List

from .types import Branch

if TYPE_CHECKING:
    from .worker import Task

log = logging.getLogger("actd.worker")

_HEADER = b"ACTW01"

#: actd's default max_message_bytes: the default of the worker's.
MAX_MESSAGE_BYTES = 1048576
#: The old name of the limit of a FAIL body (now the worker's
#: max_message_bytes), kept for code that imports it.
MAX_FAIL_BYTES = MAX_MESSAGE_BYTES
#: A FAIL body over the limit is sent as its code, retryable and first
#: MAX_FAIL_MESSAGE bytes of its message (fewer when the limit is small).
MAX_FAIL_MESSAGE = 65536


def _json(value: Any, errors: str = "strict") -> bytes:
    """Strict JSON (no NaN or Infinity, which the broker would refuse).
    A lone surrogate (os.fsdecode's for a file name's bytes that are not
    UTF-8), in a key or a string, cannot be encoded: UnicodeEncodeError, or
    with errors="replace" each such character sent as "?"."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8", errors)


def _describe(error: BaseException) -> str:
    """What the agent reads of a handler's exception: its type and text, as
    a traceback's last line says (``KeyError: 'city'``)."""
    text = str(error)
    return "%s: %s" % (type(error).__name__, text) if text else type(error).__name__


def _text(text: str) -> str:
    """text with each character UTF-8 cannot carry (a lone surrogate) as "?"."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _fail(task_id: bytes, message: str, code: str, retryable: bool) -> List[bytes]:
    """The FAIL frames of a failure of the worker's own (a short body)."""
    return [_HEADER, b"FAIL", task_id, _json(
        {"message": message, "code": code, "retryable": retryable}, "replace")]


def _result(task: "Task", value: Any, limit: int, name: str) -> List[bytes]:
    """The RESULT of a handler's value, or the FAIL of one that is not
    retried: a value JSON cannot carry (a set, bytes, NaN), as actd does
    not retry a RESULT that is not JSON (docs/protocol.md section 3.4), or
    one over limit bytes (see :func:`_oversized`). Each attempt would run
    the handler again to return the same."""
    branch = [str(value.index).encode()] if isinstance(value, Branch) else []
    try:
        body = _json(value.value if isinstance(value, Branch) else value)
    except (TypeError, ValueError) as error:
        # A lone surrogate is data that cannot be sent, not one to change
        # to "?": named as the Node worker names it
        why = ("it holds a lone surrogate (%s), which UTF-8 cannot carry"
               % error.object[error.start].encode("unicode_escape").decode()
               if isinstance(error, UnicodeEncodeError) else str(error))
        log.warning("worker %s: task %s (%s): the result is not JSON: %s", name, task.id,
                    task.activity, why)
        return _fail(task.id.encode(), "the result is not JSON: %s" % why, "activity_failed",
                     False)
    if len(body) > limit:
        return _oversized(task, len(body), limit, name)
    return [_HEADER, b"RESULT", task.id.encode(), body] + branch


def _oversized(task: "Task", size: int, limit: int, name: str) -> List[bytes]:
    """What answers a result of size bytes, over limit: RESULT ``null``
    for a fire-and-forget call (actd throws its result away unread, and
    any body frees the slot), else a FAIL activity_failed not retried, the
    message actd's own would be but for the size."""
    log.warning("worker %s: task %s (%s): the result is %d bytes, over max_message_bytes (%d): "
                "%s", name, task.id, task.activity, size, limit,
                "sent as null (the call is fire-and-forget)" if task.discard else "failed")
    if task.discard:
        return [_HEADER, b"RESULT", task.id.encode(), b"null"]
    return _fail(task.id.encode(), "the result is %d bytes, over max_message_bytes (%d)"
                 % (size, limit), "activity_failed", False)


def _failure(task: "Task", body: Dict[str, Any], limit: int) -> List[bytes]:
    """The FAIL of an error object, each lone surrogate of its message, code
    and details' strings and keys sent as "?". Details JSON cannot carry are
    left out; one over limit bytes keeps its code and retryable, its message
    cut (see :func:`_cut`), its details left out: actd reads a FAIL over its
    max_message_bytes as ``{}``, retried as activity_failed."""
    # A str that is not Unicode text (os.fsdecode's surrogates for a file
    # name's bytes that are not UTF-8, in an OSError's message) cannot be
    # sent: each such character is sent as "?"
    code = _text(str(body.get("code") or "activity_failed"))
    message = _text(str(body.get("message", "")))
    retryable = body.get("retryable", True) is not False
    try:
        text = _json(body, "replace")
    except (TypeError, ValueError):
        text = _json({"message": message, "code": code, "retryable": retryable})
    if len(text) > limit:
        text = _cut(message, code, retryable, len(text), limit)
    return [_HEADER, b"FAIL", task.id.encode(), text]


def _cut(message: str, code: str, retryable: bool, size: int, limit: int) -> bytes:
    """The body of a failure of size bytes, over limit: its code, retryable
    and the first MAX_FAIL_MESSAGE bytes of its message, fewer while the
    body is still over limit (a small limit, escapes). Over limit only when
    its code alone is."""
    keep = MAX_FAIL_MESSAGE
    encoded = message.encode("utf-8")
    while True:
        cut = encoded[:keep].decode("utf-8", "ignore")
        text = _json({"message": "%s... (cut: the failure was %d bytes)" % (cut, size),
                      "code": code, "retryable": retryable})
        if len(text) <= limit or keep == 0:
            return text
        # Each byte cut takes at least one off the body: a step or two
        keep = max(0, min(keep - 1, keep - (len(text) - limit)))

"""Exceptions of the actd package.

Two families:

* :class:`ActdError` and its subclasses: a request the broker refused with
  an ``ERROR`` reply (one subclass per code of PROTOCOL.md section 3), or a
  client-side failure (:class:`Timeout`, :class:`Closed`,
  :class:`Disconnected`, :class:`ProtocolError`). Each carries ``.code`` and ``.message``.
* :class:`ActivityError`: raised by an activity handler to answer ``FAIL``
  with its own error code, message and details.
"""

from typing import Any, Dict, Optional, Type

__all__ = [
    "ActdError", "BadFrame", "UnknownCommand", "BadJson", "BadContext", "BadCall",
    "BadReference", "BadMethod", "BadArgument", "TypeMismatch", "UnresolvedReference",
    "NotFound", "TooLarge", "Busy", "Unauthorized", "Internal", "Moved",
    "Timeout", "Closed", "Disconnected", "ProtocolError", "CallFailed", "ActivityError",
    "error_for",
]


class ActdError(Exception):
    """An error about a request to actd.

    ``code`` is the ASCII token of the broker's ``ERROR`` reply (for example
    ``"bad_call"``) or, for client-side failures, ``"timeout"``, ``"closed"``,
    ``"disconnected"`` or ``"protocol"``; ``message`` is the human-readable text.
    """

    #: The code this class stands for (subclasses set it).
    default_code: str = "error"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        """Create the error with its message and code (the class's code by default)."""
        self.code: str = code if code is not None else self.default_code
        self.message: str = message
        super().__init__("%s: %s" % (self.code, message))


class BadFrame(ActdError):
    """``bad_frame``: wrong number of frames, wrong protocol header."""
    default_code = "bad_frame"


class UnknownCommand(ActdError):
    """``unknown_command``: a command not in the protocol's table."""
    default_code = "unknown_command"


class BadJson(ActdError):
    """``bad_json``: a json frame does not parse, or is not valid UTF-8."""
    default_code = "bad_json"


class BadContext(ActdError):
    """``bad_context``: context id empty, too long, or with a forbidden byte."""
    default_code = "bad_context"


class BadCall(ActdError):
    """``bad_call``: not an object, no ``_tool``, a meta-property of the wrong type."""
    default_code = "bad_call"


class BadReference(ActdError):
    """``bad_reference``: a reference or expression does not parse."""
    default_code = "bad_reference"


class BadMethod(ActdError):
    """``bad_method``: ``_outputMethod`` is not one of the six methods."""
    default_code = "bad_method"


class BadArgument(ActdError):
    """``bad_argument``: a malformed non-JSON argument, or a bad field in an appended message."""
    default_code = "bad_argument"


class TypeMismatch(ActdError):
    """``type_mismatch``: an ``APPEND`` whose method cannot apply to the current value."""
    default_code = "type_mismatch"


class UnresolvedReference(ActdError):
    """``unresolved_reference``: a referenced value is absent and no pending call can produce it."""
    default_code = "unresolved_reference"


class NotFound(ActdError):
    """``not_found``: no such call, context or value (``resolve`` of an absent value).
    Also raised for the outcome of an accepted call whose ``DONE`` was lost
    with its connection when ``STATUS`` no longer knows the call (its
    context was deleted, or the broker came back without its store)."""
    default_code = "not_found"


class TooLarge(ActdError):
    """``too_large``: a frame over the broker's ``max_message_bytes``."""
    default_code = "too_large"


class Busy(ActdError):
    """``busy``: the activity's queue is full, or actd is shutting down."""
    default_code = "busy"


class Unauthorized(ActdError):
    """``unauthorized``: the peer's CURVE key is not allowed."""
    default_code = "unauthorized"


class UnknownActivity(ActdError):
    """``unknown_activity``: strict activities (``server/strict_activities``)
    and no worker has declared the activity."""
    default_code = "unknown_activity"


class Internal(ActdError):
    """``internal``: a bug in actd (it logs the details)."""
    default_code = "internal"


class Moved(ActdError):
    """``moved``: another broker sharing the store owns the context; the
    message is that broker's client endpoint (also in :attr:`endpoint`).
    The client follows ``moved`` replies by itself and raises this only
    when it has followed too many (:data:`actd._wire.MAX_HOPS`), or when
    the reply names no broker (a broker cut off from its store that knows
    no other, docs/protocol.md section 12) and no other is known: then
    :attr:`endpoint` is empty and the error's text says so."""
    default_code = "moved"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        """Create the error; a moved naming no broker says what that means."""
        super().__init__(message, code)
        if not message:
            Exception.__init__(self, "%s: the broker no longer serves the context (cut off from its store) and named no other broker" % self.code)

    @property
    def endpoint(self) -> str:
        """The client endpoint of the broker that owns the context."""
        return self.message


class Timeout(ActdError, TimeoutError):
    """No reply (or no ``DONE``) arrived within the time the caller allowed.

    Raised by the client, not the broker; the request may still be carried
    out (ask with :meth:`actd.Client.status` when you have a call id).
    """
    default_code = "timeout"


class Closed(ActdError):
    """The client was closed while the request was pending."""
    default_code = "closed"


class Disconnected(ActdError):
    """``disconnected``: made by the client, not the broker. The connection
    to the broker dropped (it restarted, or was silent past the ZMTP
    heartbeat timeout of 10 s) before the reply came: the request may or
    may not have been carried out, and its reply, if any, is lost. Also
    raised for the ``DONE`` of an accepted call awaited on that connection
    when the client does not follow calls (``status_poll=None``): ask
    :meth:`actd.Client.status`."""
    default_code = "disconnected"


class ProtocolError(ActdError):
    """actd answered something this library does not understand."""
    default_code = "protocol"


class CallFailed(ActdError):
    """A call ended with an outcome other than ``ok``.

    Raised by :meth:`actd.Outcome.raise_for_error`; ``code`` and
    ``message`` come from the outcome's error object and ``outcome`` is the
    whole :class:`actd.Outcome`.
    """
    default_code = "activity_failed"

    def __init__(self, message: str, code: Optional[str] = None, outcome: Any = None) -> None:
        """Create the error from an outcome's error code and message."""
        super().__init__(message, code)
        self.outcome: Any = outcome


_BY_CODE: Dict[str, Type[ActdError]] = {
    cls.default_code: cls
    for cls in (BadFrame, UnknownCommand, BadJson, BadContext, BadCall, BadReference,
                BadMethod, BadArgument, TypeMismatch, UnresolvedReference, NotFound,
                TooLarge, Busy, Unauthorized, UnknownActivity, Internal, Moved, Disconnected)
}


def error_for(code: str, message: str) -> ActdError:
    """The exception for an ``ERROR`` reply: the subclass for ``code``, or
    :class:`ActdError` itself for a code this version does not know."""
    cls = _BY_CODE.get(code, ActdError)
    return cls(message, code)


class ActivityError(Exception):
    """Raise in an activity handler to answer ``FAIL``.

    ``code`` becomes the call's error code (``activity_failed`` when None);
    ``retryable=False`` tells actd not to try again; keyword ``details`` are
    extra fields of the error object (kept by actd in the outcome's error
    and in the error written to the output path)::

        raise actd.ActivityError("no such city", code="bad_city",
                                 retryable=False, city=name)
    """

    def __init__(self, message: str, code: Optional[str] = None, retryable: bool = True,
                 **details: Any) -> None:
        """Create the error that the worker reports with ``FAIL``."""
        super().__init__(message)
        self.message: str = message
        self.code: Optional[str] = code
        self.retryable: bool = retryable
        self.details: Dict[str, Any] = details

    def body(self) -> Dict[str, Any]:
        """The ``FAIL`` error object: ``{"message", "code"?, "retryable", ...details}``."""
        body: Dict[str, Any] = dict(self.details)
        body["message"] = self.message
        if self.code is not None:
            body["code"] = self.code
        body["retryable"] = self.retryable
        return body

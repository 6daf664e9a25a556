"""What clients and workers share about their connections: which brokers
(``endpoints``, else the environment) and CURVE, and the DEALER socket
opened with them.

CURVE takes what the C library takes (``act_client_set_curve``,
``actctl --curve-server KEY --curve-cert FILE``): the broker's public key
(Z85 text) and a certificate file as ``actctl keygen`` writes it (CZMQ's
zcert, in ZPL).
"""

import os
import re
import warnings
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import zmq
import zmq.utils.monitor

from ._wire import HANDSHAKE_FAILED, REFUSED

#: The client endpoints when none are given (as for actctl): one, or a
#: comma-separated list.
ENDPOINT_VARIABLE = "ACTD_ENDPOINT"
#: The worker endpoints when none are given.
WORKER_ENDPOINT_VARIABLE = "ACTD_WORKER_ENDPOINT"
#: The broker's CURVE public key (Z85) when ``curve_server`` is not given.
SERVER_KEY_VARIABLE = "ACTD_SERVER_KEY"
#: This peer's certificate file when ``curve_cert`` is not given.
CERT_VARIABLE = "ACTD_CERT"

Endpoints = Union[str, Sequence[str]]


def endpoint_list(endpoints: Endpoints) -> List[str]:
    """A client's or a worker's endpoints: a non-empty sequence of distinct
    strings, or one string, split at commas and spaces as the C library
    does (``"tcp://a:5555,tcp://b:5555"``)."""
    if isinstance(endpoints, str):
        listed = [item for item in re.split(r"[,\s]+", endpoints) if item]
    else:
        listed = list(endpoints)
    if not listed:
        raise ValueError("at least one endpoint is needed")
    for endpoint in listed:
        if not isinstance(endpoint, str) or not endpoint:
            raise ValueError("an endpoint is a non-empty string, not %r" % (endpoint,))
    if len(set(listed)) != len(listed):
        raise ValueError("an endpoint is listed twice: %r" % (listed,))
    return listed


def endpoints_option(endpoints: Optional[Endpoints], endpoint: Optional[Endpoints],
                     variable: str, default: str) -> List[str]:
    """The endpoints a client or worker was given: ``endpoints``, or the
    deprecated ``endpoint=``, else ``$variable``, else ``default``."""
    if endpoint is not None:
        # stacklevel 3: the warning names the caller's Client(...) line
        warnings.warn("endpoint= is deprecated: use endpoints= (a string or a list)",
                      DeprecationWarning, stacklevel=3)
        if endpoints is not None:
            raise TypeError("give endpoints= or endpoint=, not both")
        endpoints = endpoint
    if endpoints is None:
        endpoints = os.environ.get(variable) or default
    return endpoint_list(endpoints)


class Curve(NamedTuple):
    """The CURVE keys of a socket, all Z85 text."""

    server: str         # The broker's public key
    public: str         # This peer's
    secret: str


def _zpl(path: str) -> Dict[str, str]:
    """The values of a ZPL file (CZMQ's zconfig text: four spaces of indent
    per level, ``name = value``, ``#`` comments) by their path, such as
    ``curve/public-key``."""
    values: Dict[str, str] = {}
    section: List[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            depth = (len(line) - len(line.lstrip(" "))) // 4
            name, _, value = stripped.partition("=")
            del section[depth:]
            section.append(name.strip())
            value = value.strip()
            # Z85 has '#' among its characters: a quoted value ends at its
            # closing quote only
            quoted = re.match(r"""(["'])(.*?)\1""", value)
            values["/".join(section)] = (quoted.group(2) if quoted
                                         else value.split("#")[0].strip())
    return values


def load_certificate(path: str) -> Tuple[str, str]:
    """The (public, secret) keys of a certificate file as ``actctl keygen``
    writes it. As CZMQ's ``zcert_load``, ``NAME.key`` stands for
    ``NAME.key_secret`` when that file exists."""
    if os.path.exists(path + "_secret"):
        path += "_secret"
    values = _zpl(path)
    public = values.get("curve/public-key", "")
    secret = values.get("curve/secret-key", "")
    if len(public) != 40:
        raise ValueError("%s has no curve/public-key (40 characters of Z85)" % path)
    if len(secret) != 40:
        raise ValueError("%s has no curve/secret-key: give the certificate's _secret file"
                         % path)
    return public, secret


def curve_option(server: Optional[str], cert: Optional[str]) -> Optional[Curve]:
    """The CURVE keys from ``curve_server`` and ``curve_cert`` (each
    defaults to its environment variable), or None for plain TCP."""
    server = os.environ.get(SERVER_KEY_VARIABLE) if server is None else server
    cert = os.environ.get(CERT_VARIABLE) if cert is None else cert
    if not server and not cert:
        return None
    if not server or not cert:
        # Half of CURVE would silently talk in plain text
        raise ValueError("curve_server ($%s) and curve_cert ($%s) go together"
                         % (SERVER_KEY_VARIABLE, CERT_VARIABLE))
    if len(server) != 40:
        raise ValueError("curve_server is the broker's public key: 40 characters of Z85")
    public, secret = load_certificate(cert)
    return Curve(server, public, secret)


#: ZMTP heartbeat interval of a client's DEALER (ms), as in the C library.
HEARTBEAT_IVL = 1000
#: A client's connection silent this long (ms) drops, as in the C library.
HEARTBEAT_TIMEOUT = 10000


def dealer(context: Any, endpoint: str, curve: Optional[Curve],
           heartbeat: bool = False) -> Any:
    """A DEALER socket of ``context`` (``zmq`` or ``zmq.asyncio``), linger 0,
    no send high-water mark, with the CURVE keys when given, connected to ``endpoint``; closed again
    if the connect fails. With ``heartbeat`` (clients), ZMTP heartbeats
    drop a connection to a broker silent for :data:`HEARTBEAT_TIMEOUT`."""
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if endpoint.startswith("tcp://["):
        # An IPv6 address: libzmq connects to none without IPv6 on (not
        # set for host names: localhost could then resolve to ::1 where
        # the broker listens on 127.0.0.1)
        sock.setsockopt(zmq.IPV6, 1)
    monitor = None
    if heartbeat:
        # A broker that dies without closing the connection (its machine
        # went away, or it is stopped) is noticed: the connection drops,
        # and the client fails the requests it lost (see ``disconnects``).
        # Generous, as in C: a dropped connection loses the replies in
        # flight on it, and a loaded broker may answer late
        sock.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_IVL)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT)
        # Monitored before it connects, so that no event is missed
        # (:func:`disconnects` returns the same monitor socket later)
        monitor = disconnects(sock)
    # No send high-water mark, as in the C library: past libzmq's default
    # of 1000 queued messages a non-blocking send to a broker that reads
    # slowly fails, and a worker's result would be dropped
    sock.setsockopt(zmq.SNDHWM, 0)
    try:
        if curve is not None:
            sock.curve_serverkey = curve.server.encode("ascii")
            sock.curve_publickey = curve.public.encode("ascii")
            sock.curve_secretkey = curve.secret.encode("ascii")
        sock.connect(endpoint)
    except zmq.ZMQError:
        if monitor is not None:
            stop_monitor(sock, monitor)
        sock.close(0)
        raise
    return sock


def disconnects(sock: Any) -> Any:
    """A PAIR socket (of ``sock``'s class) that receives ``sock``'s
    connection events (``zmq_socket_monitor``): read each with
    ``recv_multipart`` and pass it to :func:`link_event`. Stop with
    :func:`stop_monitor`. The same socket each time (pyzmq keeps it)."""
    return sock.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED
                                   | zmq.EVENT_CONNECT_RETRIED | _HANDSHAKE_FAILED)


#: The monitor events of a handshake that failed (CURVE keys that do not match)
_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)



def link_event(frames: List[bytes]) -> Union[bool, str, None]:
    """What a monitor message says: True when a connection came up (its
    handshake succeeded), False when one dropped, :data:`REFUSED` or
    :data:`HANDSHAKE_FAILED` when an attempt failed so, None for anything
    else. Only a drop after a handshake loses requests: libzmq writes
    nothing to a connection before (a handshake that fails, say a plain
    client to a CURVE broker, also ends in a drop)."""
    try:
        event: int = zmq.utils.monitor.parse_monitor_message(frames)["event"]
    except (ValueError, KeyError, TypeError):
        return None
    if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
        return True
    if event == zmq.EVENT_DISCONNECTED:
        return False
    if event == zmq.EVENT_CONNECT_RETRIED:
        return REFUSED
    if event & _HANDSHAKE_FAILED:
        return HANDSHAKE_FAILED
    return None


def stop_monitor(sock: Any, monitor: Any) -> None:
    """Stop monitoring ``sock`` (before closing it) and close ``monitor``."""
    try:
        sock.disable_monitor()
    except zmq.ZMQError:
        pass
    monitor.close(0)

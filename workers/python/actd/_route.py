"""Which broker a request about a context goes to first: rendezvous
hashing over the endpoints, computed as the C and Node libraries compute
it, so that every client sends a context's requests to the same broker."""

from typing import List, Sequence

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = (1 << 64) - 1


def score(endpoint: str, context: str) -> int:
    """The rendezvous score of ``endpoint`` for ``context``: FNV-1a, 64
    bits, of the UTF-8 bytes of ``endpoint + "\\n" + context``, then
    MurmurHash3's 64-bit finalizer (``fmix64``), as the C library computes
    it. The finalizer matters: FNV-1a alone barely mixes the last bytes into
    the high bits, so contexts named alike (``run-1``, ``run-2``, ...) would
    mostly rank the brokers the same way."""
    value = _FNV_OFFSET
    for byte in (endpoint + "\n" + context).encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    value ^= value >> 33
    value = (value * 0xff51afd7ed558ccd) & _MASK
    value ^= value >> 33
    value = (value * 0xc4ceb9fe1a85ec53) & _MASK
    value ^= value >> 33
    return value


def rendezvous(endpoints: Sequence[str], context: str) -> List[str]:
    """``endpoints`` in the order requests about ``context`` try them: the
    highest :func:`score` first, ties broken by the smaller endpoint."""
    return sorted(endpoints, key=lambda endpoint: (-score(endpoint, context), endpoint))

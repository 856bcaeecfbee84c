"""A study on a Dask cluster: connect to a running scheduler within a deadline, or say why not.

``distributed.Client(address, timeout=...)`` alone does not bound every way a connection can
fail: a server that accepts the connection and never answers holds it forever, an HTTP server's
reply is read as a message of exabytes (``MemoryError``), and a scheme without its transport
(``ucx://`` without ``distributed-ucxx``) raises ``TypeError``. :func:`connect` first asks the
address who it is (Dask's ``identity`` call) on a private event loop, the whole exchange bounded
by ``asyncio.wait_for``; only a scheduler that answers in time gets a ``Client``. Every failure
is an InputError: ``cannot connect to the scheduler at ADDRESS: <why>``.

Importing this module loads no Dask.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from planner.errors import InputError

if TYPE_CHECKING:
    from distributed import Client

#: How long :func:`connect` waits for the scheduler, in seconds, from the first byte to a Client.
DASK_CONNECT_S = 20.0
#: What a Dask scheduler calls itself in its ``identity`` reply.
SCHEDULER = "Scheduler"
#: Shortest time left for the Client once the scheduler has answered, in seconds.
MIN_CLIENT_S = 1.0
#: Longest part of an error message quoted.
MAX_REASON_CHARS = 160


async def _identity(address: str, timeout_s: float, connection_args: dict[str, Any]) -> str:
    """What the server at ``address`` says it is (``Scheduler``, ``Worker``, ...)."""
    from distributed.comm import connect as comm_connect

    comm = await comm_connect(address, timeout=timeout_s, **connection_args)
    try:
        await comm.write({"op": "identity", "reply": True})
        reply = await comm.read()
    finally:
        comm.abort()
    kind = reply.get("type") if isinstance(reply, dict) else None
    return str(kind) if kind else "server that does not say what it is"


def _bounded_identity(address: str, timeout_s: float, connection_args: dict[str, Any]) -> str:
    """:func:`_identity` on a fresh event loop, cancelled after ``timeout_s``."""
    return asyncio.run(asyncio.wait_for(_identity(address, timeout_s, connection_args), timeout_s))


def _reason(exc: BaseException, timeout_s: float, address: str = "") -> str:
    if isinstance(exc, TimeoutError):  # before OSError, its base class
        return f"no answer within {timeout_s:g} s (is a Dask scheduler listening there?)"
    if isinstance(exc, MemoryError):
        return (
            "what answers there does not speak Dask's protocol (an HTTP server, such as the "
            "dashboard's port?)"
        )
    text = str(exc)[:MAX_REASON_CHARS]
    if isinstance(exc, OSError | ValueError):
        return text or type(exc).__name__
    if isinstance(exc, TypeError | NotImplementedError | ImportError) and "://" in address:
        # A scheme Dask knows whose transport is not installed (ucx:// needs distributed-ucxx).
        scheme = address.split("://", 1)[0]
        return (
            f"this installation of Dask cannot connect over {scheme}:// (its transport is not "
            f"installed: {type(exc).__name__}: {text})"
        )
    return f"{type(exc).__name__}: {text}"


def connect(address: str, timeout_s: float = DASK_CONNECT_S) -> Client:
    """A ``distributed.Client`` of the scheduler at ``address``, connected within ``timeout_s``.

    Raises InputError (``cannot connect to the scheduler at ADDRESS: ...``) when nothing answers
    in time, when what answers is not a Dask scheduler (an HTTP server, a Dask worker), or when
    the address or its scheme cannot be used. TLS settings come from Dask's configuration, as
    ``Client``'s do.
    """
    from distributed import Client
    from distributed.security import Security

    shown = address[:80]
    start = time.monotonic()
    args = Security().get_connection_args("client")
    # A thread of its own: asyncio.run needs a thread without a running event loop.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dask-connect") as pool:
        try:
            kind = pool.submit(_bounded_identity, address, timeout_s, args).result()
        except Exception as exc:
            raise InputError(
                f"cannot connect to the scheduler at {shown}: {_reason(exc, timeout_s, address)}"
            ) from None
    if kind != SCHEDULER:
        raise InputError(
            f"cannot connect to the scheduler at {shown}: what answers there is a Dask {kind}, "
            "not a scheduler (give the scheduler's address, e.g. tcp://host:8786)"
        )
    left_s = max(MIN_CLIENT_S, timeout_s - (time.monotonic() - start))
    try:
        return Client(address, timeout=left_s)
    except Exception as exc:
        raise InputError(
            f"cannot connect to the scheduler at {shown}: {_reason(exc, left_s, address)}"
        ) from None

"""Joining an existing Ray cluster (`sweep run --address` / ``RAY_ADDRESS``): the token, and one
line saying what failed when the driver cannot join.

What Ray (2.5x, 2.60 here) expects, read in ``ray/_private/authentication/
authentication_token_setup.py`` and ``ray/_private/worker.py`` (`ray.init`):

* ``ray start --head`` with ``RAY_AUTH_MODE`` unset turns token authentication on when a token
  is available (`maybe_enable_token_auth_if_token_available`) -- and any earlier local
  ``ray.init()`` on the machine wrote one to ``~/.ray/auth_token`` (`enable_token_auth_by_default`,
  then `ensure_token_if_auth_enabled(create_token_if_missing=True)`).
* A driver finds the token in ``RAY_AUTH_TOKEN``, in the file ``RAY_AUTH_TOKEN_PATH`` names, or in
  ``~/.ray/auth_token`` -- but `ray.init` only turns token mode on by itself for a cluster it
  finds (``address`` None or "auto"), never for an explicit address: a driver given
  ``--address`` sends no token, and the GCS answers ``InvalidAuthToken`` (Ray retries 20 times,
  then raises ConnectionError).

So `use_available_token` does for an explicit address what Ray does for a cluster it finds: with
``RAY_AUTH_MODE`` unset and a token available, token mode (a cluster without authentication
ignores the token). `check_reachable` asks the address once before `ray.init` (which retries for
20-40 s and prints a line per attempt) and raises `ExecutionError` with one line: nothing
listening there, no or the wrong token, not a Ray cluster; `connect_failed` turns what `ray.init`
itself raises (a Ray or Python version mismatch) into one line too.
"""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Iterator

from sweep.common.errors import ExecutionError

__all__ = ["use_available_token", "check_reachable", "connect_failed", "gcs_answers", "TOKEN_HELP"]

#: How to give the driver the cluster's token (Ray's places, in its order) or do without one.
TOKEN_HELP = ("copy the token of the head machine (its ~/.ray/auth_token, or `ray get-auth-token` "
              "there) to ~/.ray/auth_token here, or set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH); "
              "or, on a trusted network, start every node with RAY_AUTH_MODE=disabled")

#: Seconds to wait for a TCP connection to the cluster's address.
CONNECT_TIMEOUT_S = 5.0


def use_available_token() -> None:
    """With ``RAY_AUTH_MODE`` unset and a token available (``RAY_AUTH_TOKEN``,
    ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``), turn Ray's token authentication on for
    this process, as `ray.init` does for a cluster it finds itself. An explicit
    ``RAY_AUTH_MODE`` is left as it is. (Ray logs its "Token authentication is enabled" notice;
    the executor filters it.)"""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available)
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


@contextlib.contextmanager
def _stderr_muted() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null meanwhile: Ray's C++ client logs each failed attempt
    there (``gcs_client.cc: Failed to get cluster ID ...``); the error raised says it once."""
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def check_reachable(address: str) -> None:
    """Ask the Ray cluster at ``address`` (HOST:PORT) for its id, once, before `ray.init`.

    Raises:
        ExecutionError: one line: what failed (address malformed, nothing listening, no or the
            wrong token, not a Ray cluster) and how to fix it.
    """
    if "://" in address or address == "auto":  # Ray Client or "find it": Ray's own checks
        return
    host, _, port_text = address.rpartition(":")
    if not host or not port_text.isdigit():
        raise ExecutionError(f"Ray address {address!r}: expected HOST:PORT (the address `ray start "
                             "--head` printed), in --address or RAY_ADDRESS")
    port = int(port_text)
    try:
        answer = _http2_settings(host.strip("[]"), port)
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise ExecutionError(f"cannot reach a Ray cluster at {address} ({why}): check --address / "
                             f"RAY_ADDRESS, or start one there with `ray start --head --port {port}`"
                             ) from None
    if answer is None or len(answer) < 9 or answer[3] != 0x04:
        what = (f"accepts connections but says nothing in {CONNECT_TIMEOUT_S:g} s" if answer is None
                else "answers, but not as a gRPC server")
        raise ExecutionError(f"{address} {what}: not a Ray cluster's GCS (or a hung one); check --address / "
                             "RAY_ADDRESS (the GCS port `ray start --head` printed)")
    from ray._raylet import GcsClient
    from ray.exceptions import AuthenticationError
    try:
        with _stderr_muted():
            GcsClient(address=address).cluster_id
    except AuthenticationError:
        raise ExecutionError(f"the Ray cluster at {address} refused this driver: it requires token "
                             f"authentication and {_token_state()}; {TOKEN_HELP}") from None
    except Exception as e:  # noqa: BLE001 - any other answer: not a Ray GCS there
        raise ExecutionError(f"{address} does not answer as a Ray cluster ({_one_line(e)}): check "
                             "--address / RAY_ADDRESS (the GCS port `ray start --head` printed)"
                             ) from None


#: The client's opening of an HTTP/2 connection (RFC 9113 section 3.4): the preface, then an empty
#: SETTINGS frame (length 0, type 0x4, no flags, stream 0).
_HTTP2_OPENING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _http2_settings(host: str, port: int) -> bytes | None:
    """The first frame header (9 bytes) a server at ``host:port`` sends after the HTTP/2 opening,
    or None if it says nothing within `CONNECT_TIMEOUT_S`. A gRPC server (Ray's GCS) answers at
    once with its SETTINGS frame (type 0x4 in byte 3), before any authentication; `ray.init`
    would instead wait 40 s on a port that accepts and never answers.

    Raises:
        OSError: nothing listening, the name does not resolve, or the connection timed out.
    """
    with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as s:
        s.sendall(_HTTP2_OPENING)
        head = b""
        try:
            while len(head) < 9:
                chunk = s.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
        except socket.timeout:
            return None
        return head


def gcs_answers(address: str, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to the GCS at ``address`` (``host:port``) opens within ``timeout``
    seconds: while it does the head node is up; a run whose driver keeps waiting on a cluster whose
    head is gone would otherwise hang until Ray's own reconnect timeout (60 s) aborts it."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def connect_failed(address: str, e: BaseException) -> ExecutionError:
    """What `ray.init(address=...)` raised, as one line with how to fix it."""
    text = _one_line(e)
    if "version mismatch" in text.lower():
        return ExecutionError(f"cannot join the Ray cluster at {address}: {text}; the driver and every "
                              "node need the same Ray and Python versions (and the same dse-sweep)")
    return ExecutionError(f"cannot join the Ray cluster at {address}: {text}")


def _token_state() -> str:
    """Whether this driver has a token at all (then it is not the cluster's)."""
    try:
        from ray._raylet import AuthenticationTokenLoader
        has = AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True)
    except Exception:  # noqa: BLE001 - cannot tell
        return "this driver's token (if any) is not accepted"
    if has and os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return "RAY_AUTH_MODE=disabled here keeps this driver from sending its token (unset it)"
    return "this driver's token is not the cluster's" if has else "this driver has no token"


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__

"""What a server viz started offers its clients: one interface, declared once.

`record_request`, `run_load` and `sweep_rates` take either a URL (any OpenAI-compatible
server) or a server object viz started (`EmbeddedServer`, `LlamaCppServer`). From an object
they also take what only a server on this machine can give: its label, a note on its state
and log when a request fails, how it was run, the CPU its processes used, and — where the
server records them — its own per-request timestamps and scheduler passes.

    server = server_handle(url)   # the object, or None for a URL string
    label = server.label if server else ""
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, runtime_checkable


@runtime_checkable
class ServerHandle(Protocol):
    """A server viz started. A server that records nothing returns {} from `server_timings`
    and None from `schedule`."""

    @property
    def url(self) -> str:  # the OpenAI API root, e.g. http://127.0.0.1:8000/v1
        ...

    @property
    def label(self) -> str:  # how it serves, in a few words (legends, run labels)
        ...

    @property
    def alive(self) -> bool: ...

    def failure_note(self, short: bool = False, settle_s: float = 0.0) -> str:
        """For an error message: whether it still runs (waiting up to `settle_s` for an exit
        under way to show), and its log."""

    def info(self) -> Any:
        """How it was run (a `viz.serve.ServerInfo`), kept in every load run."""

    def cpu_seconds(self) -> float:
        """CPU seconds its processes have used so far."""

    def server_timings(self) -> dict[str, dict[str, Any]]:
        """request id → its own timestamps ({} when it records none)."""

    def schedule(
        self,
        start: Optional[float] = None,
        end: Optional[float] = None,
        origin: Optional[float] = None,
        label: str = "",
    ) -> Any:
        """Its scheduler's passes between start and end (None when it records none)."""


def server_handle(url: Any) -> Optional[ServerHandle]:
    """`url` itself when it is a server viz started, None for a URL string. Anything else is
    left to `check_url`, which names the fix."""
    return url if isinstance(url, ServerHandle) and not isinstance(url, str) else None

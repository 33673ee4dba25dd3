"""Helpers for the viz.serve tests: the fault-injecting server, and "is that process gone?"."""

import time
from pathlib import Path

import psutil

from viz.serve.server import ManagedProcess, free_port

FAULT_SERVER = Path(__file__).with_name("serve_fault_server.py")


def fault_server(log_dir: Path, name: str = "fault") -> ManagedProcess:
    """tests/serve_fault_server.py on a free port, tied to this process like the real server."""
    port = free_port()
    return ManagedProcess(
        ["--script", str(FAULT_SERVER), "--", "--port", str(port)],
        host="127.0.0.1",
        port=port,
        log_path=log_dir / f"{name}.log",
        startup_timeout_s=150,
        what="fault server",
    )


def gone(pid: int, timeout_s: float = 10.0) -> bool:
    """True once `pid` no longer runs (a zombie waiting to be reaped counts as gone)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False

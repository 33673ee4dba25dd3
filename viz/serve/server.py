"""An embedded `transformers serve`: the default model behind an OpenAI-compatible API, on
this machine, started and stopped by viz.

    with viz.serve.EmbeddedServer(continuous_batching=True) as server:
        rec = viz.serve.record_request(server, "Hello")
    # the server process is gone here, whatever happened inside the block

What it does, in order: picks a free port on 127.0.0.1; starts `transformers serve <the
default model's local folder>` offline (HF_HUB_OFFLINE=1) in its own process group, through
`viz.serve.worker` (which kills the server if this process dies: a kernel restart leaves no
server behind); writes its log to a file; waits for `/health` and `/v1/models` (with a time
limit, and the log's last lines in the error if it exits); sends one warm-up request (the
first continuous-batching request pays a one-off set-up of a few seconds); and on `stop()` /
leaving the `with` block / an exception / Ctrl-C / interpreter exit, ends the process group
(SIGTERM, then SIGKILL).

Threads: the server's environment sets OMP_WAIT_POLICY=PASSIVE (unless you set it), so
torch's CPU threads sleep rather than spin while they wait for work. The server shares a few
cores with the notebook and whatever else runs; spinning threads then steal each other's
time. Measured on the project's 2-core machine with other jobs running: 396 → 95 ms per token.

Memory: continuous batching reserves its whole KV cache up front. transformers' defaults
size it for a GPU (≈3.5 GiB of KV on a CPU, 7 GiB resident in all); the defaults here —
pages of 16 tokens, 64 pages (1,024 tokens of KV, 47 MB for the default model in float32),
128 tokens per step — keep the server near 1.0 GB (measured: 1,027 MiB after 8 streams), so
a Binder session (2 GB) holds it and a notebook kernel together. They are the flags
`--cb-block-size 16 --cb-num-blocks 64 --cb-max-batch-tokens 128` (`block-size` is the
command line's name for the page size).

Introduced in lesson 09 (Serving many users).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from viz import checks
from viz.runtime import cpu_features, cpu_name
from viz.serve.client import ServeError, is_loopback, record_request
from viz.serve.probes import read_json_lines
from viz.serve.scheduler import Schedule, schedule_from_lines

DTYPES = ("float32", "bfloat16", "float16", "auto")
# Continuous batching on a CPU: small enough for Binder's 2 GB (see the module docstring).
PAGE_SIZE = 16
NUM_PAGES = 64
MAX_BATCH_TOKENS = 128
_LIVE: "weakref.WeakSet[ManagedProcess]" = weakref.WeakSet()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _kill_group(pid: int) -> None:
    """SIGKILL a process group (used at garbage collection / exit as a last resort)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tree_sum(pid: int, read) -> float:
    """The sum of `read(process)` over a process and all its descendants alive now (0 if it is
    gone); a process that ends while it is read counts 0."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += read(p)
        except (OSError, psutil.NoSuchProcess):
            pass
    return total


def process_tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants now (0 if it is gone)."""
    return int(_tree_sum(pid, lambda p: p.memory_info().rss))


def _peak_rss(p) -> int:
    text = Path(f"/proc/{p.pid}/status").read_text()
    m = re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else p.memory_info().rss


def process_tree_peak(pid: int) -> int:
    """The sum of each process's peak resident memory (Linux VmHWM) over a process tree: an
    upper bound of the tree's peak. Falls back to the current RSS where VmHWM is missing."""
    return int(_tree_sum(pid, _peak_rss))


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and all its descendants alive now
    (0 if it is gone). The difference of two readings is the CPU a server used in between."""
    return float(_tree_sum(pid, lambda p: sum(p.cpu_times()[:2])))


class PortTaken(ServeError):
    """The server could not bind its port (another process took it after it was chosen)."""


class ManagedProcess:
    """A server process in its own process group, tied to this process by
    `viz.serve.worker`, with its log in a file and a readiness check on an HTTP path.

    worker_args: what follows `python -m viz.serve.worker --parent-pid PID`, e.g.
    ["--serve", "--", ...transformers serve args] or ["--script", FILE, "--", ...].
    run_prefix: make a temporary run folder (`run_dir`) named so, for the log (unless
        `log_path` is given) and what the server writes; a clean `stop()` removes it, a server
        that failed keeps it for its error message. None: no run folder (give `log_path`).
    port: the port to listen on; 0: `launch` chooses a free one (and chooses again if it is
        taken before the server binds it), where a port the caller chose is tried once.
    warmup: `launch` sends one short request once the server is ready.

    The engines (`EmbeddedServer`, `LlamaCppServer`) `launch` with their command and add a
    check of their own (`after_start`); a plain `start()` runs `worker_args` on `port`.
    """

    def __init__(
        self,
        worker_args: list[str],
        *,
        host: str,
        port: int,
        log_path: Optional[Path] = None,
        env: Optional[dict[str, str]] = None,
        ready_path: str = "/health",
        startup_timeout_s: float = 180.0,
        what: str = "server",
        run_prefix: Optional[str] = None,
        warmup: bool = False,
    ):
        self.run_dir: Optional[Path] = (
            Path(tempfile.mkdtemp(prefix=run_prefix)) if run_prefix else None
        )
        if log_path is None:
            if self.run_dir is None:
                raise ValueError("give log_path, or run_prefix for a run folder to hold the log")
            log_path = self.run_dir / "server.log"
        self.worker_args = list(worker_args)
        self.host, self.port = host, port
        self.fixed_port, self.warmup = bool(port), bool(warmup)  # the caller chose the port
        self.log_path = Path(log_path)
        self.env = env
        self.ready_path = ready_path
        self.startup_timeout_s = startup_timeout_s
        self.what = what
        self.proc: Optional[subprocess.Popen] = None
        self._log = None
        self._finalizer = None
        self.failed = False  # start() failed: its log is kept for the error message

    # ---- state --------------------------------------------------------------------------
    @property
    def root_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI API root, e.g. http://127.0.0.1:8000/v1 — what clients are given."""
        return self.root_url + "/v1"

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> Optional[int]:
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def failure_note(self, short: bool = False, settle_s: float = 0.0) -> str:
        """For an error message: whether the server is still running, and its log (its last
        lines too unless `short`). settle_s: if it still runs, wait up to this long for it to
        exit first (a process that dies closes its connections a moment before it can be seen
        to have exited; a client that saw the connection break may ask in between)."""
        if settle_s > 0 and self.alive:
            try:
                self.proc.wait(timeout=settle_s)
            except subprocess.TimeoutExpired:
                pass  # still running
        if self.alive:
            return f" [the {self.what} is still running; its log: {self.log_path}]"
        if short:
            return (
                f" [the {self.what} process has exited (code {self.returncode}); its log: "
                f"{self.log_path}]"
            )
        return (
            f" [the {self.what} process has exited (code {self.returncode}); its log, "
            f"{self.log_path}, ends with:\n{self.log_tail(8)}]"
        )

    # ---- life cycle ---------------------------------------------------------------------
    def launch(self, worker_args: Callable[[], list[str]]) -> "ManagedProcess":
        """Start with `worker_args()` (made after the port is chosen), then `after_start`
        (a warm-up request when `warmup`, and a subclass's own check). A free port can be
        taken between choosing it and binding it: choose again, three tries in all; a port
        the caller chose (`port` not 0) is tried once. If anything fails, the process is
        stopped, its run folder kept, and the error raised."""
        if self.alive:
            return self
        for attempt in range(3):
            if not self.fixed_port:
                self.port = free_port(self.host)
            self.worker_args = worker_args()
            try:
                ManagedProcess.start(self)
                break
            except PortTaken:
                if self.fixed_port or attempt == 2:
                    raise
        with self._stopped_on_failure():
            self.after_start()
        return self

    @contextlib.contextmanager
    def _stopped_on_failure(self) -> Iterator[None]:
        """Anything raised inside stops the process, marks it failed (its run folder and log
        are kept for the error message) and goes on up."""
        try:
            yield
        except BaseException:
            self.failed = True
            self.stop()
            raise

    def after_start(self) -> None:
        """Once the ready path answers: one short request when `warmup` (the first request
        pays one-off set-up). Subclasses add their own checks before it."""
        if self.warmup:
            record_request(self, "Hello!", max_tokens=4)

    def start(self) -> "ManagedProcess":
        if self.alive:
            return self
        self.failed = False  # a new try (an earlier one may have met a taken port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        cmd = [
            sys.executable,
            "-m",
            "viz.serve.worker",
            "--parent-pid",
            str(os.getpid()),
            *self.worker_args,
        ]
        self._log.write(f"$ {' '.join(cmd)}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            start_new_session=True,
        )  # its own process group
        self._finalizer = weakref.finalize(self, _kill_group, self.proc.pid)
        _LIVE.add(self)
        with self._stopped_on_failure():
            self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = self.root_url + self.ready_path
        while True:
            code = self.proc.poll()
            if code is not None:
                tail = self.log_tail()
                taken = "address already in use" in tail.lower()
                hint = (
                    f" (port {self.port} is taken: choose another port, or leave port=None)"
                    if taken
                    else ""
                )
                raise (PortTaken if taken else ServeError)(
                    f"the {self.what} exited with code {code} while starting{hint}; the end of "
                    f"its log ({self.log_path}):\n{tail}",
                    "server",
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ServeError(
                    f"the {self.what} did not answer {url} within "
                    f"{self.startup_timeout_s:g} s: the machine may be busy (raise "
                    f"startup_timeout_s); its log is {self.log_path}",
                    "timeout",
                )
            time.sleep(0.2)

    def stop(self, timeout_s: float = 10.0) -> None:
        """End the whole process group: SIGTERM, then SIGKILL after `timeout_s`. Idempotent.
        The run folder (log, what the server wrote) is removed when the server was running
        normally — stopped by us, nothing to investigate; a server that failed to start or had
        exited by itself keeps it, and errors name its log."""
        was_running = self.alive
        proc = self.proc
        if proc is not None and proc.poll() is None:
            for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc is not None:
            _kill_group(proc.pid)  # anything the server itself started
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._log is not None:
            self._log.close()
            self._log = None
        _LIVE.discard(self)
        if was_running and not self.failed and self.run_dir is not None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.run_dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- memory -------------------------------------------------------------------------
    def rss_bytes(self) -> int:
        """Resident memory of the server's processes now."""
        return process_tree_rss(self.pid) if self.alive else 0

    def peak_rss_bytes(self) -> int:
        """Peak resident memory of the server's processes so far (Linux: VmHWM)."""
        return process_tree_peak(self.pid) if self.alive else 0

    def cpu_seconds(self) -> float:
        """CPU seconds the server's processes have used so far (user + system, every core)."""
        return process_tree_cpu_s(self.pid) if self.alive else 0.0

    # ---- what a plain process gives its clients (viz.serve.protocol.ServerHandle) ----------
    @property
    def label(self) -> str:
        return ""

    def info(self) -> Optional["ServerInfo"]:
        return None

    def server_timings(self) -> dict[str, dict[str, Any]]:
        return {}

    def schedule(
        self,
        start: Optional[float] = None,
        end: Optional[float] = None,
        origin: Optional[float] = None,
        label: str = "",
    ) -> Optional[Schedule]:
        return None


@atexit.register
def _stop_all() -> None:
    for p in list(_LIVE):
        try:
            p.stop(timeout_s=3)
        except Exception:
            pass


@dataclass
class ServerInfo:
    """How an embedded server was run (kept in every load run made against it)."""

    software: str  # "transformers serve 5.24.0"
    model: str  # the model's name
    continuous_batching: bool
    device: str
    dtype: str
    page_size: Optional[int]  # tokens per KV page (continuous batching only)
    num_pages: Optional[int]  # pages in the KV cache
    max_batch_tokens: Optional[int]  # token budget of one step
    recorded: bool  # the server recorded its own timestamps and scheduler steps
    # the machine it ran on (this one: viz starts it on loopback): `viz.runtime.cpu_features`
    cpu: str = ""
    cpu_features: list[str] = field(default_factory=list)


class EmbeddedServer(ManagedProcess):
    """`transformers serve` on the default model (or a local model folder), offline, on
    127.0.0.1. See the module docstring. Lesson 09.

    continuous_batching: True serves requests together (continuous batching with a paged KV
        cache); False serves them one at a time, in arrival order.
    page_size, num_pages, max_batch_tokens: continuous batching's memory and step budget.
    record: also record, inside the server, each request's server-side timestamps and every
        scheduler step (`viz.serve.scheduler`; needs a supported transformers version).
    warmup: send one short request once ready (continuous batching sets itself up then).
    """

    def __init__(
        self,
        model: Optional[str] = None,
        *,
        continuous_batching: bool = True,
        device: str = "cpu",
        dtype: str = "float32",
        page_size: int = PAGE_SIZE,
        num_pages: int = NUM_PAGES,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        host: str = "127.0.0.1",
        port: Optional[int] = None,
        record: bool = False,
        warmup: bool = True,
        log_path: Optional[str] = None,
        startup_timeout_s: float = 180.0,
        allow_remote: bool = False,
    ):
        from viz import default_model

        if model is None:
            folder = default_model.default_model_path()  # ValueError naming `make model`
            name = default_model.DEFAULT_MODEL
        else:
            folder = Path(str(model)).expanduser()
            if not (folder / "config.json").is_file():
                raise ServeError(
                    f"unknown model {model!r}: the embedded server runs offline "
                    "and needs a local transformers model folder (with "
                    "config.json); leave model out for the default model"
                )
            name = folder.name
        checks.one_of("dtype", dtype, DTYPES, error=ServeError)
        if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?|mps", device):
            raise ServeError(
                f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto', not {device!r}"
            )
        if device.startswith("cuda") or device == "mps":
            from viz.runtime import resolve_device

            resolve_device(device.split(":")[0])  # ValueError if it is not on this machine
        for label, v in (
            ("page_size", page_size),
            ("num_pages", num_pages),
            ("max_batch_tokens", max_batch_tokens),
        ):
            checks.whole(label, v, 1, error=ServeError)
        if page_size < 4:
            raise ServeError("page_size must be at least 4 tokens (transformers' minimum)")
        if not allow_remote and not is_loopback(host):
            raise ServeError(
                f"refusing to listen on {host}: the embedded server is for this "
                "machine (127.0.0.1); pass allow_remote=True to expose it"
            )
        self.model_folder, self.model_name = Path(folder), name
        self.continuous_batching = bool(continuous_batching)
        self.device, self.dtype = device, dtype
        self.page_size, self.num_pages = page_size, num_pages
        self.max_batch_tokens = max_batch_tokens
        self.record = bool(record)
        super().__init__(
            [],
            host=host,
            port=port or 0,
            log_path=Path(log_path) if log_path else None,
            startup_timeout_s=startup_timeout_s,
            what="transformers server",
            run_prefix="viz-serve-",
            warmup=warmup,
        )
        # the probes' files, in the run folder beside the log
        self.record_dir = self.run_dir / "record" if self.record else None

    # ---- what it is ---------------------------------------------------------------------
    @property
    def label(self) -> str:
        """How it serves, in two or three words (legends, run labels)."""
        return "continuous batching" if self.continuous_batching else "one request at a time"

    @property
    def sizing(self) -> str:
        """Continuous batching's memory and step budget, in words ("" without it)."""
        if not self.continuous_batching:
            return ""
        return (
            f"pages of {self.page_size} tokens × {self.num_pages}, "
            f"{self.max_batch_tokens} tokens per step"
        )

    def info(self) -> ServerInfo:
        import transformers

        cb = self.continuous_batching
        return ServerInfo(
            software=f"transformers serve {transformers.__version__}",
            model=self.model_name,
            continuous_batching=cb,
            device=self.device,
            dtype=self.dtype,
            page_size=self.page_size if cb else None,
            num_pages=self.num_pages if cb else None,
            max_batch_tokens=self.max_batch_tokens if cb else None,
            recorded=self.record,
            cpu=cpu_name(),
            cpu_features=cpu_features(),
        )

    def command(self) -> list[str]:
        """The `transformers serve` arguments (what you would type after `transformers serve`)."""
        args = [
            str(self.model_folder),
            "--device",
            self.device,
            "--dtype",
            self.dtype,
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        if self.continuous_batching:
            args += [
                "--continuous-batching",
                "--cb-block-size",
                str(self.page_size),
                "--cb-num-blocks",
                str(self.num_pages),
                "--cb-max-batch-tokens",
                str(self.max_batch_tokens),
            ]
        return args

    def __repr__(self) -> str:
        state = f"running at {self.url}" if self.alive else "stopped"
        how = f"{self.label}: {self.sizing}" if self.sizing else self.label
        return f"EmbeddedServer({self.model_name}, {how}, {state})"

    # ---- life cycle ---------------------------------------------------------------------
    def start(self) -> "EmbeddedServer":
        if self.alive:
            return self
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
        }
        # torch's CPU threads sleep instead of spinning while they wait (see the docstring)
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.env = env
        head = ["--record", str(self.record_dir)] if self.record else []
        self.launch(lambda: head + ["--serve", "--", *self.command()])
        return self

    def after_start(self) -> None:
        """The server lists the model it was given, then the warm-up request."""
        with urllib.request.urlopen(self.root_url + "/v1/models", timeout=10) as r:
            ids = [m.get("id") for m in json.loads(r.read()).get("data", [])]
        if str(self.model_folder) not in ids:
            raise ServeError(
                f"the server started but lists {ids}, not {self.model_folder}: "
                f"see its log {self.log_path}",
                "server",
            )
        super().after_start()

    # ---- what the server recorded (record=True) -------------------------------------------
    def server_timings(self) -> dict[str, dict[str, Any]]:
        """request id → the server's own timestamps (absolute monotonic clock)."""
        if self.record_dir is None:
            return {}
        return {d["id"]: d for d in read_json_lines(self.record_dir / "requests.jsonl")}

    def schedule(
        self,
        start: Optional[float] = None,
        end: Optional[float] = None,
        origin: Optional[float] = None,
        label: str = "",
    ) -> Optional[Schedule]:
        """The scheduler steps the server recorded between `start` and `end` (absolute
        monotonic clock), timed from `origin`; None if nothing was recorded."""
        if self.record_dir is None:
            return None
        lines = read_json_lines(self.record_dir / "steps.jsonl")
        lines = [
            d
            for d in lines
            if (start is None or d["start"] >= start) and (end is None or d["start"] <= end)
        ]
        if not lines:
            return None
        return schedule_from_lines(
            lines[0]["header"], lines, origin if origin is not None else lines[0]["start"], label
        )


def serve(model: Optional[str] = None, **kwargs) -> EmbeddedServer:
    """Start an `EmbeddedServer` and return it, running (stop it with `.stop()`, or use
    `with EmbeddedServer(...) as server:`). Lesson 09."""
    return EmbeddedServer(model, **kwargs).start()

"""No server outlives what started it: an exception in the `with` block, Ctrl-C in a
notebook (a kernel interrupt), a kernel restart, the parent killed outright. And a server
that cannot start says why.

The lifecycle is viz.serve's ManagedProcess, the same class EmbeddedServer is; these tests
run it on the small fault server (a second to start) instead of the model (test_serve_real.py
checks the real server's own stop).
"""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from queue import Empty

import pytest

from serve_support import FAULT_SERVER, fault_server, gone
from viz.serve import EmbeddedServer, ServeError
from viz.serve.server import ManagedProcess, free_port

ROOT = Path(__file__).resolve().parent.parent


def test_an_exception_inside_the_block_stops_the_server(tmp_path):
    with pytest.raises(RuntimeError, match="something went wrong in the user's code"):
        with fault_server(tmp_path) as server:
            pid = server.pid
            assert server.alive and server.rss_bytes() > 0
            raise RuntimeError("something went wrong in the user's code")
    assert gone(pid)
    assert not server.alive
    server.stop()  # idempotent


def test_killing_the_parent_outright_kills_the_server(tmp_path):
    """The parent gets SIGKILL (no cleanup code runs): the worker's watchdog notices."""
    code = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT / "tests")!r})
        from serve_support import fault_server
        server = fault_server(Path({str(tmp_path)!r})).start()
        print(server.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    pid = int(proc.stdout.split()[0])
    # the watchdog looks every 0.25 s; 15 s leaves room for a busy machine
    assert gone(pid, timeout_s=15), f"server {pid} outlived its killed parent"


def _kernel():
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def _wait_for(kc, msg_id: str, path: Path, log: Path, timeout_s: float = 180) -> str:
    """What the cell `msg_id` wrote to `path`; fails with the cell's error and the server's
    log if the cell ended without writing it or nothing came within `timeout_s` (the machine
    may be busy: a server's start imports torch, and a Binder build may be running beside)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        try:
            msg = kc.get_shell_msg(timeout=0.2)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id and not (
            path.is_file() and path.read_text().strip()
        ):
            content = msg["content"]
            raise AssertionError(
                f"the cell ended ({content.get('status')}) without writing "
                f"{path}: {content.get('ename')}: {content.get('evalue')}\n"
                f"server log:\n{_tail(log)}"
            )
    raise AssertionError(
        f"the kernel wrote nothing to {path} within {timeout_s:g} s; server log:\n{_tail(log)}"
    )


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.is_file() else "(no log)"


def _reply(kc, msg_id: str, ename: str) -> None:
    """Wait for the kernel's answer to `msg_id` and check it ended with `ename`."""
    while True:
        msg = kc.get_shell_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id:
            assert msg["content"].get("ename") == ename, msg["content"]
            return


def test_a_kernel_interrupt_and_a_kernel_restart_leave_no_server(tmp_path):
    km, kc = _kernel()
    try:
        # 1. Ctrl-C (interrupt) while a cell waits inside the `with` block. (stop_on_error=False:
        # otherwise ipykernel aborts requests that reach it just after this cell's error, and
        # the next cell, sent as soon as the reply arrives, can be one of them.)
        pid_file = tmp_path / "pid1"
        first = kc.execute(
            stop_on_error=False,
            code=textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            sys.path.insert(0, {str(ROOT / "tests")!r})
            from serve_support import fault_server
            with fault_server(Path({str(tmp_path)!r}), "interrupted") as server:
                Path({str(pid_file)!r}).write_text(str(server.pid))
                time.sleep(120)
        """),
        )
        pid1 = int(_wait_for(kc, first, pid_file, tmp_path / "interrupted.log"))
        assert not gone(pid1, timeout_s=0.2)
        km.interrupt_kernel()
        assert gone(pid1), "the server survived a kernel interrupt"
        _reply(kc, first, "KeyboardInterrupt")

        # 2. a server started without `with`, then the kernel is restarted (killed)
        pid_file = tmp_path / "pid2"
        second = kc.execute(
            textwrap.dedent(f"""
            server = fault_server(Path({str(tmp_path)!r}), "restarted").start()
            Path({str(pid_file)!r}).write_text(str(server.pid))
        """)
        )
        pid2 = int(_wait_for(kc, second, pid_file, tmp_path / "restarted.log"))
        assert not gone(pid2, timeout_s=0.2)
        km.restart_kernel(now=True)
        assert gone(pid2), "the server survived a kernel restart"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_server_that_exits_while_starting_shows_its_log(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import sys\nprint('cannot load the model: out of memory')\nsys.exit(7)\n")
    port = free_port()
    p = ManagedProcess(
        ["--script", str(script)], host="127.0.0.1", port=port, log_path=tmp_path / "broken.log"
    )
    with pytest.raises(
        ServeError,
        match=r"exited with code 7 while starting; the end of its "
        r"log .*\n(.*\n)*cannot load the model: out of memory",
    ):
        p.start()
    assert not p.alive


def test_a_server_that_never_answers_is_given_up_and_stopped(tmp_path):
    script = tmp_path / "silent.py"
    script.write_text("import time\ntime.sleep(60)\n")
    p = ManagedProcess(
        ["--script", str(script)],
        host="127.0.0.1",
        port=free_port(),
        log_path=tmp_path / "silent.log",
        startup_timeout_s=1.5,
    )
    start = time.monotonic()
    with pytest.raises(
        ServeError,
        match=r"did not answer http://127.0.0.1:\d+/health within "
        r"1.5 s: the machine may be busy",
    ):
        p.start()
    assert time.monotonic() - start < 20
    assert gone(p.pid)


def test_the_worker_refuses_to_run_for_a_parent_that_is_not_its_own(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "viz.serve.worker",
            "--parent-pid",
            "1",
            "--script",
            str(FAULT_SERVER),
            "--",
            "--port",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 1 and "parent 1 already gone" in proc.stderr


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(model="/no/such/folder"),
            r"unknown model '/no/such/folder': the embedded server "
            r"runs offline and needs a local transformers model folder",
        ),
        (dict(dtype="int3"), r"dtype must be one of"),
        (dict(device="tpu"), r"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'"),
        (dict(page_size=0), r"page_size must be a whole number >= 1, not 0"),
        (dict(page_size=2), r"page_size must be at least 4 tokens"),
        (dict(num_pages=-1), r"num_pages must be a whole number >= 1"),
        (dict(max_batch_tokens=1.5), r"max_batch_tokens must be a whole number >= 1"),
        (dict(host="0.0.0.0"), r"refusing to listen on 0.0.0.0: .*allow_remote=True"),
    ],
)
def test_bad_server_settings_are_refused_before_starting(kwargs, message, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    kwargs = {"model": str(folder), **kwargs}
    with pytest.raises(ServeError, match=message):
        EmbeddedServer(**kwargs)


def test_cuda_that_is_not_there_is_refused(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal cannot be shown here")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"CUDA is not available on this machine"):
        EmbeddedServer(str(folder), device="cuda")


# ---- launch: a port taken between choosing and binding, a warm-up that fails ---------------
TAKEN_THEN_SERVES = """import pathlib, runpy, sys
count = pathlib.Path({count!r})
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
if n < {taken}:
    print("OSError: [Errno 98] error while attempting to bind: address already in use")
    sys.exit(1)
sys.argv = [{server!r}, *sys.argv[1:]]
runpy.run_path({server!r}, run_name="__main__")
"""


def taken_then_serves(tmp_path, taken: int):
    """A script that fails `taken` times as a server whose port is taken, then serves."""
    count = tmp_path / "tries"
    script = tmp_path / "taken.py"
    script.write_text(
        TAKEN_THEN_SERVES.format(count=str(count), taken=taken, server=str(FAULT_SERVER))
    )
    return script, count


def test_launch_chooses_another_port_when_one_is_taken_and_a_clean_stop_removes_the_run(tmp_path):
    script, count = taken_then_serves(tmp_path, taken=2)
    p = ManagedProcess(
        [],
        host="127.0.0.1",
        port=0,
        run_prefix="viz-test-",
        startup_timeout_s=150,
        what="fault server",
    )
    run_dir, ports = p.run_dir, []

    def args():
        ports.append(p.port)
        return ["--script", str(script), "--", "--port", str(p.port)]

    with p.launch(args):
        assert p.alive and count.read_text() == "3" and len(ports) == 3
        assert p.log_path.parent == run_dir and run_dir.is_dir()
    assert gone(p.pid) and not run_dir.exists() and p.run_dir is None


def test_a_fixed_port_that_is_taken_is_tried_once_and_the_run_is_kept(tmp_path):
    from viz.serve.server import PortTaken

    script, count = taken_then_serves(tmp_path, taken=1)
    p = ManagedProcess(
        [], host="127.0.0.1", port=free_port(), run_prefix="viz-test-", what="fault server"
    )  # a port the caller chose
    with pytest.raises(
        PortTaken,
        match=r"port \d+ is taken: choose another port, or leave "
        r"port=None",
    ):
        p.launch(lambda: ["--script", str(script), "--", "--port", str(p.port)])
    assert count.read_text() == "1" and p.failed and not p.alive
    assert "address already in use" in p.log_path.read_text()  # kept for the error message
    shutil.rmtree(p.run_dir)


def test_a_failed_warm_up_stops_the_server_and_keeps_its_log(tmp_path, monkeypatch):
    import viz.serve.server as server_module

    def refuse(*args, **kwargs):
        raise ServeError("the warm-up request failed")

    monkeypatch.setattr(server_module, "record_request", refuse)
    script, _ = taken_then_serves(tmp_path, taken=0)
    p = ManagedProcess(
        [],
        host="127.0.0.1",
        port=0,
        run_prefix="viz-test-",
        warmup=True,
        startup_timeout_s=150,
        what="fault server",
    )
    with pytest.raises(ServeError, match="the warm-up request failed"):
        p.launch(lambda: ["--script", str(script), "--", "--port", str(p.port)])
    assert p.failed and gone(p.pid) and p.log_path.is_file()
    shutil.rmtree(p.run_dir)


def test_a_plain_process_needs_a_log_path_or_a_run_folder():
    with pytest.raises(ValueError, match="give log_path, or run_prefix"):
        ManagedProcess([], host="127.0.0.1", port=0)

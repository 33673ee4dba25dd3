"""One file per machine: where this machine's measured figures are saved, and reading them back.

The peaks (`viz.perf.machine.peaks`) and the fixed cost per step
(`viz.perf.machine.fixed_costs`) are each measured once per machine and saved as a viz
document in a file of their own folder of `measurements_dir()`:

    <measurements_dir>/peaks/cpu-2-threads-269e848c95be.json
    <measurements_dir>/fixed-cost/cpu-2-threads-269e848c95be.json

**Keyed on what decides the result.** The name holds the device, the thread count and a hash
of `machine_key`: the CPU model, its instruction-set features and the ones torch uses
(`viz.runtime.cpu_features`, `cpu_capability`: `ATEN_CPU_CAPABILITY=avx2` makes an AVX-512
machine measure as an AVX2 one), the thread count, the CPU count and the torch version.
Change any and the figure is measured again; two CPUs sold under one name ("AMD EPYC") with
different features do not share a file. A file is reused only where the document inside says
the same (`same_machine`), and each process keeps what it read or measured, so a lesson's
cells all see one set of figures (`MachineCache`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import torch

from viz import checks
from viz.documents import Document
from viz.runtime import cpu_capability, cpu_features, device_name, resolve_device


def machine_key(
    device: Union[str, torch.device] = "cpu", threads: Optional[int] = None
) -> dict[str, Any]:
    """What a measurement on `device` with `threads` depends on: a cached figure is reused
    only where every item is the same."""
    dev = resolve_device(device)
    cpu = dev.type == "cpu"  # a GPU's speed does not depend on its host's instructions
    return {
        "device": dev.type,
        "device_name": device_name(dev),
        "cpu_count": os.cpu_count() or 0,
        "threads": checks.threads(threads) or torch.get_num_threads(),
        "torch_version": torch.__version__,
        "cpu_features": cpu_features() if cpu else [],
        "cpu_capability": cpu_capability() if cpu else "",
    }


def measurements_dir() -> Path:
    """Where this machine's measured figures are cached: $VIZ_MEASURE_DIR, else the viz cache
    folder (`viz.default_model.cache_dir()`, beside the model). The test suite points it at an
    empty folder, so every run measures as a new learner's first lesson does."""
    from viz.default_model import cache_dir

    env = os.environ.get("VIZ_MEASURE_DIR")
    return Path(env).expanduser() if env else cache_dir()


def cache_file(
    folder: str, device: Union[str, torch.device] = "cpu", threads: Optional[int] = None
) -> Path:
    """`<measurements_dir>/<folder>/<device>-<threads>-threads-<hash of machine_key>.json`."""
    key = machine_key(device, threads)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return measurements_dir() / folder / f"{key['device']}-{key['threads']}-threads-{digest}.json"


def same_machine(
    document: Any, device: Union[str, torch.device] = "cpu", threads: Optional[int] = None
) -> bool:
    """True if `document` (with the fields of `machine_key`) was measured on this machine as it
    is now: same CPU and features, threads, CPU count and torch."""
    key = machine_key(device, threads)
    return all(getattr(document, k, None) == v for k, v in key.items())


@dataclass
class MachineCache:
    """One kind of per-machine document: its file in `measurements_dir()`, read back only on
    the machine that measured it, and what this process already read or measured."""

    folder: str  # the folder of measurements_dir() its files live in, e.g. "peaks"
    kind: type[Document]  # the document saved there, e.g. MachinePeaks
    remembered: dict[str, Document] = field(default_factory=dict)  # path → this process's

    def path(self, device: Union[str, torch.device] = "cpu", threads: Optional[int] = None) -> Path:
        """The file for `device` measured with `threads` (None: torch's current count)."""
        return cache_file(self.folder, device, threads)

    def in_process(self, file: Path) -> Optional[Document]:
        """What this process already read from or saved to `file` (None: nothing yet)."""
        return self.remembered.get(str(file))

    def read(
        self, file: Path, device: Union[str, torch.device], threads: int
    ) -> Optional[Document]:
        """The document in `file` if it was measured on this machine as it is now; None if
        there is no file, it is unreadable or from another version (measure again), or it was
        measured on another machine (`same_machine`)."""
        if not file.is_file():
            return None
        try:
            document = self.kind.load(file)
        except ValueError:
            return None
        return document if same_machine(document, device, threads) else None

    def remember(self, file: Path, document: Document) -> Document:
        """Keep `document` as this process's for `file`: later calls get the same object."""
        self.remembered[str(file)] = document
        return document

    def write(self, file: Path, document: Document) -> Document:
        """Save `document` in `file` (atomically, `Document.save`) and remember it."""
        document.save(file)
        return self.remember(file, document)

    def forget(self) -> None:
        """Forget what this process read or measured (tests; a learner never needs it)."""
        self.remembered.clear()

"""Fewer bytes, read by a kernel that reads them: one model, one prompt, several weight formats.

A batch-1 decode step reads every weight once (lesson 08), so halving the bytes per weight
should nearly halve the step — *if* the kernel reads the smaller format directly. This module
measures that on the learner's machine, token for token:

- **transformers (viz)**: the default model in float32 (4 bytes a weight) and bfloat16 (2),
  decoded by `viz.record` (torch's kernels, torch's per-operation overhead).
- **llama.cpp** (the `llama-cpp-python` package, no server): the same weights as GGUF files in
  F32, F16, Q8_0 (8.5 bits a weight) and Q4_1 (5 bits), decoded one token per `eval` with
  greedy argmax (no sampler, no repeat penalty). It runs in a child process, one per file
  written and per format decoded (`viz.perf.engine_child`, ~0.2 s to start, outside the timed
  steps): a native crash there (SIGILL from a build for another CPU) is an `EngineCrash` here,
  and `measure_formats` records it in `FormatRun.failures` and goes on with the other rows.

All of them hold *the same values*. The default model ships only as a Q4_1 GGUF file (viz's
float32 model is that file dequantized); `gguf_file` writes the F32, F16 and Q8_0 files from it
with llama.cpp's own quantizer (`llama_model_quantize`, ~1 s each, kept in the viz cache). So
F32 and F16 carry Q4_1's values exactly (float16 holds them, with rare roundings); Q8_0 rounds
them once more. What changes between rows is **the bytes and the kernel**, never the model.

Each row times `new_tokens - 1` decode steps `repeats` times (after a warm-up) and keeps the
greedy tokens; `same_tokens` counts how many agree with transformers float32's before the
first difference. llama.cpp's quantized kernels (Q8_0, Q4_1) quantize the *activations* to 8
bits too, so their logits differ by a little, and greedy text departs where two tokens were
nearly tied. That is the price measured here; what 4-bit weights cost against the model's
original bfloat16 weights cannot be measured offline (those weights are not shipped).

    run = viz.perf.measure_formats(lm)        # ~15 s on 2 cores
    print(run)                                # tokens/s, bytes per token, achieved GB/s
    viz.views.formats_figure(run, peaks)      # on the learner's memory wall (lesson 08's)

Measured here (2-core AMD EPYC with avx512_bf16, torch 2.13, 2 threads, 2026-12-03 07:23
UTC, `make notebooks NB=11`: `measure_formats(new_tokens=24, repeats=2)`, step medians):
transformers float32 54.0 ms, bfloat16 24.4 ms; llama.cpp F32 16.1 ms, F16 10.2 ms, Q8_0
8.5 ms, Q4_1 8.7 ms. On the same bytes (F32) llama.cpp ran ×3.35 faster, and below ~150 MB the
step stopped shrinking with the bytes (Q8_0 → Q4_1 ×1.02). Lesson 12 (Fewer bytes) measures it on
the learner's machine. Where llama.cpp is not installed (Binder: building it takes ~9 minutes)
the lesson shows the shipped reference instead, all six rows from one machine and labelled as
such (`viz.perf.load_reference("cpu-formats")`, written by `benchmarks/remedies.py`; its
`source` says where and when, `read_bytes_per_s` that machine's read bandwidth).
"""

from __future__ import annotations

import math
import os
import re
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Optional, Sequence

from viz.documents import Document
from viz.provenance import environment_from_loose, loose_names, unknown_environment
from viz.perf import engine_child
from viz.perf.engine_child import TIMEOUT_S, EngineCrash
from viz.perf.prefix import common_prefix
from viz import checks
from viz.runtime import using_threads
from viz.spread import Spread
from viz.trace import Environment

LLAMA_FORMATS = ("F32", "F16", "Q8_0", "Q4_1")  # GGUF weight formats llama.cpp reads here
TORCH_FORMATS = ("float32", "bfloat16")  # dtypes viz loads the model in
FORMATS = TORCH_FORMATS + LLAMA_FORMATS
PROMPT = "Explain why the sky is blue."
# A torch dtype whose fastest of its first WARM_STEPS decode steps takes this many times
# float32's is not timed further: bfloat16 on a CPU without bfloat16 instructions (AVX2 only)
# can be tens of times slower. (Its very first step alone is no guide: it was 403 ms against a
# 33 ms warm step for bfloat16 on a 2-core EPYC, 2026-12-05.)
TOO_SLOW = 4.0
WARM_STEPS = 3


@dataclass
class FormatPoint:
    """One weight format decoded by one engine: what a step reads and how long it took."""

    engine: str  # "transformers" or "llama.cpp"
    format: str  # "float32", "bfloat16", "F32", "F16", "Q8_0" or "Q4_1"
    weight_bytes: int  # bytes of weights one decode step reads (every tensor once)
    bytes_per_weight: float  # weight_bytes ÷ the model's parameters
    step: Spread  # one decode step (forward pass, or llama.cpp eval of one token)
    token_ids: list[int] = field(default_factory=list)  # the greedy tokens, the first included
    same_tokens: int = 0  # of them, how many equal the reference's before the first difference
    note: str = ""  # e.g. why it was not timed further

    @property
    def label(self) -> str:
        return f"{self.engine} {self.format}"

    @property
    def tokens_per_s(self) -> float:
        return 1.0 / self.step.median

    @property
    def achieved_bytes_per_s(self) -> Spread:
        """Weight bytes ÷ the step: the bandwidth the step achieved, fixed costs included."""
        return self.step.rate(self.weight_bytes)


@dataclass
class FormatFailure:
    """A format whose engine crashed (`EngineCrash`): no timing, the other rows measured."""

    engine: str  # "llama.cpp"
    format: str  # "F32", "F16", "Q8_0" or "Q4_1"
    error: str  # the crash in one sentence: engine, signal (or exit code, timeout), doing what
    advice: str = ""  # the likely cause and the fix (`make engines`)
    stderr: str = ""  # the child's last lines on stderr, if any

    @property
    def label(self) -> str:
        return f"{self.engine} {self.format}"


FORMATS_SOURCE = "measured by viz.perf.measure_formats"
# What schema 1's `machine` text said: "AMD EPYC (2 CPUs, torch kernels AVX512), measured
# 2026-12-03 13:11 UTC".
_MACHINE_TEXT = re.compile(
    r"(?P<name>.*) \((?P<cpus>\d+) CPUs, torch kernels (?P<cap>.*)\), "
    r"measured (?P<when>.*)"
)


def _formats_v1_to_v2(data: dict) -> dict:
    """Schema 1: the threads were a loose field and the machine and time free text
    (`_MACHINE_TEXT`); they move into `environment` (`viz.provenance`), whose source is a
    shipped reference's own `source`, else what measured it. A text of another shape is kept
    whole as the device's name."""
    data = dict(data)
    text = data.pop("machine", "")
    found = _MACHINE_TEXT.fullmatch(text)
    env = (
        {"device_name": found["name"], "cpu_capability": found["cap"], "measured_at": found["when"]}
        if found
        else {"device_name": text}
    )
    return environment_from_loose(
        data,
        ("threads",),
        data.get("source") or FORMATS_SOURCE,
        device="cpu",
        dtype="float32",
        **env,
    )


@loose_names("threads")
@dataclass
class FormatRun(Document):
    """Formats side by side (`measure_formats`); lesson 12.

    Where, when and with what is `environment` (`viz.provenance`; `run.threads` reads its
    threads, as before)."""

    KIND: ClassVar[str] = "llm-inference-formats"
    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: _formats_v1_to_v2}
    WHAT: ClassVar[str] = "format comparison"
    AGAIN: ClassVar[str] = "measure it again with viz.perf.measure_formats(lm)"

    model: str  # the model's name
    n_params: int
    prompt: str
    chat: bool
    new_tokens: int  # greedy tokens made per run (steps timed per run: one fewer)
    repeats: int
    reference: str  # the label the others' tokens are compared with
    points: list[FormatPoint] = field(default_factory=list)
    # a shipped reference (viz/data/cpu-formats.json, benchmarks/remedies.py) says where and how
    # it was measured, and that machine's measured read bandwidth; "" and 0.0: measured here
    source: str = ""
    read_bytes_per_s: float = 0.0
    # formats whose engine crashed: not in `points` (nothing was timed), said in str() and table()
    failures: list[FormatFailure] = field(default_factory=list)
    # The CPU, its threads (torch's, during the run), torch and its kernels' instructions, when
    # (ISO UTC) and by what: `viz.provenance`.
    environment: Environment = field(default_factory=unknown_environment)

    def point(self, label: str) -> Optional[FormatPoint]:
        """The row whose label ("llama.cpp Q4_1") or format ("Q4_1") is `label`."""
        return next((p for p in self.points if label in (p.label, p.format)), None)

    def table(self) -> list[dict]:
        rows = []
        for p in self.points:
            rows.append(
                {
                    "engine": p.engine,
                    "format": p.format,
                    "bytes_per_weight": round(p.bytes_per_weight, 2),
                    "weight_mb": round(p.weight_bytes / 1e6, 1),
                    "step_ms": round(p.step.median * 1e3, 2),
                    "step_ms_low": round(p.step.low * 1e3, 2),
                    "step_ms_high": round(p.step.high * 1e3, 2),
                    "tokens_per_s": round(p.tokens_per_s, 1),
                    "achieved_gb_per_s": round(p.achieved_bytes_per_s.median / 1e9, 1),
                    "same_tokens": p.same_tokens,
                    "note": p.note,
                }
            )
        for f in self.failures:  # a row without numbers: the crash is its note
            rows.append(
                {
                    "engine": f.engine,
                    "format": f.format,
                    "bytes_per_weight": None,
                    "weight_mb": None,
                    "step_ms": None,
                    "step_ms_low": None,
                    "step_ms_high": None,
                    "tokens_per_s": None,
                    "achieved_gb_per_s": None,
                    "same_tokens": None,
                    "note": f"failed: {f.error}",
                }
            )
        return rows

    def __str__(self) -> str:
        head = (
            f"{self.model}, {self.new_tokens} greedy tokens × {self.repeats} runs, "
            f"{self.threads} threads; step: median (middle half of the steps)"
        )
        lines = [
            head,
            f"{'engine':>13} {'format':>9} {'bytes/weight':>12} {'MB/token':>9} "
            f"{'step ms':>20} {'tokens/s':>9} {'GB/s':>6} {'same tokens':>12}",
        ]
        for p in self.points:
            same = (
                "reference"
                if p.label == self.reference
                else f"{p.same_tokens} of {len(p.token_ids)}"
            )
            lines.append(
                f"{p.engine:>13} {p.format:>9} {p.bytes_per_weight:>12.2f} "
                f"{p.weight_bytes / 1e6:>9.0f} {p.step.text(1e3, '', 2, runs=False):>20} "
                f"{p.tokens_per_s:>9.1f} {p.achieved_bytes_per_s.median / 1e9:>6.1f} "
                f"{same:>12}" + (f"  ({p.note})" if p.note else "")
            )
        for f in self.failures:
            lines.append(f"{f.engine:>13} {f.format:>9} failed: {f.error}")
        for advice in dict.fromkeys(f.advice for f in self.failures if f.advice):
            lines.append(f"  {advice}")
        if self.source:
            lines.append(f"reference, not measured here: {self.source}")
        return "\n".join(lines)


def available_formats() -> tuple[str, ...]:
    """FORMATS where llama.cpp (llama-cpp-python) is installed, else TORCH_FORMATS (Binder)."""
    from viz.serve.client import ServeError
    from viz.serve.llamacpp import check_installed

    try:
        check_installed()
    except ServeError:
        return TORCH_FORMATS
    return FORMATS


# ---- GGUF files in each format, made from the shipped Q4_1 file -------------------------------
def _check_llama_cpp() -> None:
    """A ServeError naming `make setup` when llama-cpp-python is missing (checked here, before
    a child is started; it is never imported in this process)."""
    from viz.serve.llamacpp import check_installed

    check_installed()


def gguf_file(
    fmt: str,
    source: Optional[str] = None,
    folder: Optional[str] = None,
    *,
    timeout_s: float = TIMEOUT_S,
) -> Path:
    """The default model's GGUF file in `fmt` (one of LLAMA_FORMATS): the shipped Q4_1 file
    itself, or one written from it once by llama.cpp's quantizer (kept in the viz cache, or in
    `folder`), in a child process (`EngineCrash` if it dies). The file is written under a
    temporary name and renamed, so a failed or interrupted write leaves nothing half-made
    behind."""
    from viz import default_model

    if fmt not in LLAMA_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(LLAMA_FORMATS)}, not {fmt!r}")
    src = Path(source) if source else default_model.default_gguf_path()
    if not src.is_file():
        raise ValueError(
            f"no GGUF file at {src}: leave source out for the default model "
            "(`make model` fetches it)"
        )
    if fmt == "Q4_1" and source is None:
        return src
    out_dir = Path(folder) if folder else default_model.cache_dir() / "formats"
    out = out_dir / f"{src.stem.split('.')[0]}.{fmt}.gguf"
    if out.is_file() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    _check_llama_cpp()
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".{os.getpid()}.part")
    try:
        engine_child.call(
            "quantize",
            {"src": str(src), "dst": str(tmp), "ftype": fmt},
            doing=f"writing {out.name} ({fmt}) from {src.name}",
            timeout_s=timeout_s,
        )
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


# GGUF metadata value types (the spec's numbering) and the bytes of each fixed-size one
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_weight_bytes(path: str | os.PathLike) -> int:
    """Bytes of every tensor in a GGUF file (its weights, without the header and vocabulary).

    Reads only the header: it skips the metadata (the vocabulary's ~100,000 strings) and sums
    each tensor's elements ÷ its type's block size × the block's bytes. (gguf's `GGUFReader`
    gives the same sum, tested, but builds every metadata field first: ~4 s a file here.)"""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24 or head[:4] != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file (no GGUF magic at its start)")
        version, n_tensors, n_kv = struct.unpack("<IQQ", head[4:])
        if version < 2:
            raise ValueError(
                f"{path} is GGUF version {version}: convert it with a current "
                "llama.cpp (versions 2 and 3 are read)"
            )

        def take(fmt: str):
            size = struct.calcsize(fmt)
            data = f.read(size)
            if len(data) < size:
                raise ValueError(f"{path} ends inside its header: the file is cut short")
            return struct.unpack(fmt, data)

        def skip_value(kind: int) -> None:
            if kind == _GGUF_STRING:
                f.seek(take("<Q")[0], os.SEEK_CUR)
            elif kind == _GGUF_ARRAY:
                item, count = take("<IQ")
                if item in _GGUF_SIZES:
                    f.seek(_GGUF_SIZES[item] * count, os.SEEK_CUR)
                else:
                    for _ in range(count):
                        skip_value(item)
            elif kind in _GGUF_SIZES:
                f.seek(_GGUF_SIZES[kind], os.SEEK_CUR)
            else:
                raise ValueError(f"{path}: unknown GGUF metadata type {kind}")

        for _ in range(n_kv):
            f.seek(take("<Q")[0], os.SEEK_CUR)  # the key
            skip_value(take("<I")[0])
        total = 0
        for _ in range(n_tensors):
            f.seek(take("<Q")[0], os.SEEK_CUR)  # the tensor's name
            dims = take(f"<{take('<I')[0]}Q")
            kind, _offset = take("<IQ")
            block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
            total += math.prod(dims) // block * block_bytes
        return int(total)


# ---- decoding ------------------------------------------------------------------------------------
def llama_greedy(
    path: str | os.PathLike,
    prompt_ids: Sequence[int],
    new_tokens: int,
    *,
    repeats: int = 3,
    threads: Optional[int] = None,
    timeout_s: float = TIMEOUT_S,
) -> tuple[list[int], list[float]]:
    """Greedy decode with llama.cpp in a child process (`engine_child.greedy`, which times each
    step there): the prompt in one `eval`, then one token per `eval`, the next token the argmax
    of the last logits (no sampler). Returns the tokens (of the last run) and every timed step
    of `repeats` runs, after one warm-up run. Raises `EngineCrash` when llama.cpp dies (SIGILL,
    SIGSEGV, out of memory), exits non-zero or runs past `timeout_s`."""
    _check_llama_cpp()
    path = Path(path)
    args = {
        "path": str(path),
        "prompt_ids": [int(t) for t in prompt_ids],
        "new_tokens": int(new_tokens),
        "repeats": int(repeats),
        "threads": int(threads or os.cpu_count() or 1),
    }
    out = engine_child.call("greedy", args, doing=f"decoding {path.name}", timeout_s=timeout_s)
    return out["tokens"], out["steps_s"]


def _torch_point(
    lm, prompt: str, chat: bool, new_tokens: int, repeats: int, limit_s: Optional[float]
):
    """(trace of the last run, timed steps, note) for a LoadedModel via viz.record."""
    from viz.record import record

    def go(n):
        return record(
            lm, prompt, chat=chat, max_new_tokens=n, stop_at_eos=False, embeddings=False, log_top=1
        )

    # warm-up, and WARM_STEPS timed steps to decide whether to go on: by the fastest of them,
    # since a freshly made model's first step is slow on any CPU (kernels chosen, pages touched)
    first = go(WARM_STEPS + 1)
    warm = [s.forward_s for s in first.steps[1:]]
    if limit_s is not None and min(warm) > limit_s:
        return (
            first,
            warm,
            (
                f"the fastest of its first {len(warm)} steps took "
                f"{min(warm) * 1e3:,.0f} ms, over {TOO_SLOW:g}× float32's: not "
                "timed further (no fast kernel for this dtype on this CPU)"
            ),
        )
    times, trace = [], first
    for _ in range(repeats):
        trace = go(new_tokens)
        times += [s.forward_s for s in trace.steps[1:]]
    return trace, times, ""


def _bfloat16_copy(lm):
    """A model other than the default (no file to load it from again): its weights rounded to
    bfloat16 in a copy, with its tokenizer."""
    import copy

    import torch

    from viz.load import wrap

    model = copy.deepcopy(lm.model).to(torch.bfloat16)
    return wrap(
        model,
        lm.tokenizer,
        name=lm.spec.name,
        device=lm.device,
        source=lm.source,
        random_weights=lm.spec.random_weights,
    )


def measure_formats(
    lm=None,
    formats: Sequence[str] = FORMATS,
    *,
    prompt: str = PROMPT,
    chat: bool = True,
    new_tokens: int = 24,
    repeats: int = 3,
    threads: Optional[int] = None,
    gguf_folder: Optional[str] = None,
    progress: bool = False,
    timeout_s: float = TIMEOUT_S,
) -> FormatRun:
    """Decode the same prompt in each format and engine (module docstring).

    lm: the default model in float32 on the CPU, or None: then it is loaded here and let go
        before the bfloat16 model is made and llama.cpp's files are read, so no two of them
        sit in memory together (the F32 file is as big as the model; making the bfloat16
        model reads the float32 one: together they would not fit Binder's 2 GB). Another
        model (float32, on the CPU) has its own rows only: float32, and bfloat16 made by
        rounding a copy of its weights.
    formats: any of FORMATS; "float32" is always measured first (the reference).
    new_tokens: greedy tokens per run (new_tokens - 1 decode steps timed); repeats: runs each.
    timeout_s: the longest each llama.cpp child process may run (writing a file, or decoding).

    A llama.cpp format whose child process crashes (`EngineCrash`: SIGILL from a build for
    another CPU, out of memory) is not a row of `points` but a `FormatFailure` in `failures`,
    and the other formats are measured all the same.
    """
    from viz.load import load_model
    from viz.runtime import release_memory

    _check_formats(formats, new_tokens, repeats, threads)
    own = lm is None
    lm = load_model(device="cpu") if own else lm
    _check_model(lm, formats)
    n_params, name = lm.spec.n_params, lm.spec.name
    points: list[FormatPoint] = []
    failures: list[FormatFailure] = []
    how = (prompt, chat, new_tokens, repeats)
    with using_threads(threads) as n_threads:
        ref, ref_ids = _reference_point(lm, how, progress, points)
        if own:  # let the float32 model go before the next one is made (Binder's 2 GB)
            del lm
            release_memory()
        if "bfloat16" in formats:  # lm: None where it was let go just above
            _bfloat16_point(None if own else lm, name, n_params, how, ref_ids, progress, points)
        _llama_points(
            formats,
            ref.prompt_ids,
            ref_ids,
            n_params,
            new_tokens,
            repeats,
            n_threads,
            gguf_folder,
            timeout_s,
            progress,
            points,
            failures,
        )
    env = _reference_environment(n_threads)
    return FormatRun(
        model=name,
        n_params=n_params,
        prompt=prompt,
        chat=chat,
        new_tokens=new_tokens,
        repeats=repeats,
        reference="transformers float32",
        points=points,
        failures=failures,
        environment=env,
    )


def _check_model(lm, formats: Sequence[str]) -> None:
    """`measure_formats`'s checks of the model: float32 on the CPU, and the default model
    wherever llama.cpp's rows are asked for."""
    if lm.spec.dtype != "float32" or str(lm.device) != "cpu":
        raise ValueError(
            "give the model in float32 on the CPU (viz.load_model(device='cpu')): "
            "its float32 row is the reference the others are compared with"
        )
    name = lm.spec.name
    from viz.default_model import DEFAULT_MODEL

    if name != DEFAULT_MODEL and any(f in LLAMA_FORMATS for f in formats):
        raise ValueError(
            f"llama.cpp's rows are the default model's GGUF files, not {name}'s: "
            f"give formats=('float32', 'bfloat16') for this model, or lm=None"
        )


def _reference_point(
    lm, how: tuple, progress: bool, points: list[FormatPoint]
) -> tuple[object, list[int]]:
    """The float32 row (the reference), appended to `points`: (its last trace, its token ids).
    how: (prompt, chat, new_tokens, repeats), as `measure_formats` was given them."""
    ref, times, _ = _torch_point(lm, *how, None)
    ref_ids = [s.token_id for s in ref.steps]
    points.append(
        FormatPoint(
            "transformers",
            "float32",
            lm.spec.weight_bytes,
            4.0,
            Spread.of(times),
            ref_ids,
            len(ref_ids),
        )
    )
    if progress:
        print(f"  transformers float32: {Spread.of(times).text(1e3, 'ms', 1)}", flush=True)
    return ref, ref_ids


def _bfloat16_point(
    lm,
    name: str,
    n_params: int,
    how: tuple,
    ref_ids: list[int],
    progress: bool,
    points: list[FormatPoint],
) -> None:
    """The bfloat16 row, appended to `points`: the default model (`name`) loaded from its file,
    else a rounded copy of `lm`'s weights; let go again once timed. how: as `_reference_point`."""
    from viz.default_model import DEFAULT_MODEL
    from viz.load import load_model
    from viz.runtime import release_memory

    b16 = (
        load_model(device="cpu", dtype="bfloat16") if name == DEFAULT_MODEL else _bfloat16_copy(lm)
    )  # the default model from its file, else lm's copy
    try:
        trace, times, note = _torch_point(b16, *how, TOO_SLOW * points[0].step.median)
        ids = [s.token_id for s in trace.steps]
        points.append(
            FormatPoint(
                "transformers",
                "bfloat16",
                b16.spec.weight_bytes,
                b16.spec.weight_bytes / n_params,
                Spread.of(times),
                ids,
                common_prefix(ids, ref_ids),
                note,
            )
        )
    finally:
        del b16
        release_memory()
    if progress:
        print(f"  transformers bfloat16: {points[-1].step.text(1e3, 'ms', 1)}", flush=True)


def _reference_environment(n_threads: int) -> Environment:
    """The run's environment: the reference's, float32 on the CPU (`_check_model`), with the
    threads the measurements ran with."""
    from viz.runtime import environment, resolve_device

    return replace(
        environment(resolve_device("cpu"), "float32", source=FORMATS_SOURCE), threads=n_threads
    )


def _check_formats(
    formats: Sequence[str], new_tokens: int, repeats: int, threads: Optional[int]
) -> None:
    """`measure_formats`'s argument checks (the model's are its own)."""
    checks.whole("new_tokens", new_tokens, 3)
    checks.whole("repeats", repeats, 1)
    checks.threads(threads)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"formats must be some of {', '.join(FORMATS)}, not {list(formats)!r}")


def _llama_points(
    formats: Sequence[str],
    prompt_ids: list[int],
    ref_ids: list[int],
    n_params: int,
    new_tokens: int,
    repeats: int,
    n_threads: int,
    gguf_folder: Optional[str],
    timeout_s: float,
    progress: bool,
    points: list[FormatPoint],
    failures: list[FormatFailure],
) -> None:
    """llama.cpp's rows, each of its formats in `formats` in turn: appended to `points`, or,
    where its child process crashed, to `failures` (and on with the next)."""
    for fmt in (f for f in LLAMA_FORMATS if f in formats):
        try:
            path = gguf_file(fmt, folder=gguf_folder, timeout_s=timeout_s)
            ids, times = llama_greedy(
                path,
                prompt_ids,
                new_tokens,
                repeats=repeats,
                threads=n_threads,
                timeout_s=timeout_s,
            )
        except EngineCrash as e:  # this format's child died: say so, go on with the next
            failures.append(FormatFailure("llama.cpp", fmt, e.summary, e.advice, e.stderr_tail))
            if progress:
                print(f"  llama.cpp {fmt}: failed: {e.summary}", flush=True)
            continue
        wb = gguf_weight_bytes(path)
        points.append(
            FormatPoint(
                "llama.cpp",
                fmt,
                wb,
                wb / n_params,
                Spread.of(times),
                ids,
                common_prefix(ids, ref_ids),
            )
        )
        if progress:
            print(f"  llama.cpp {fmt}: {points[-1].step.text(1e3, 'ms', 1)}", flush=True)

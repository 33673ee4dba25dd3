"""The memory wall across hardware generations: vendors' datasheet figures, side by side.

Decode at batch 1 reads every weight once per token, so its ceiling is bandwidth ÷ bytes per
token, whatever the arithmetic. Across GPU generations the arithmetic (FLOP/s) grew much
faster than the memory bandwidth: the **ridge** (FLOP/s ÷ bytes/s, the arithmetic intensity
a kernel needs to use the arithmetic at all) moved up, and batch-1 decode, at ~1 FLOP per
byte, sits ever further below it. This module holds the figures to show it:

- `DATASHEETS` — NVIDIA data-centre GPUs from V100 (2017) to B200 (2024), and a few CPUs,
  each figure with the document it comes from. GPU FLOP/s are the **dense** Tensor Core
  figures: NVIDIA's datasheets since A100 print the 2:4-sparsity figure first (twice the
  dense one), so it is halved here and the note says so. A CPU's vendor quotes no FLOP/s, so
  its figure is **computed** from the datasheet (cores × clock × FLOP per cycle) and marked
  `computed`.
- `generations_table` / `generations_text` — the rows with their ridge and decode ceiling for
  the default model (SmolLM2-135M, bytes counted by `viz.perf.counts.decode_cost`), plus, given
  `viz.perf.machine_peaks()`, one row *measured* on this machine.
- `growth("V100", "B200")` — how many times arithmetic, bandwidth and ridge grew between two.

Every figure here is a peak from a datasheet, not a measurement: nothing reaches it in
practice (lesson 08 measures how far this machine gets). The H100 row reads its figures from
`H100_SXM` (here), the datasheet dict lessons 03, 06 and 13 already use.

    from viz.perf.machine import datasheets
    print(datasheets.generations_text(perf.machine_peaks()))
    g = datasheets.growth("V100", "B200")   # g["flops_ratio"], g["bandwidth_ratio"], ...
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

from viz import checks
from viz.perf.configs import config_spec
from viz.perf.counts import decode_cost
from viz.perf.machine.peaks import MachinePeaks
from viz.provenance import shown_utc

# The model whose bytes per token the table's ceilings divide by (the default model's shape),
# the dtypes shown, and the tokens in the sequence when a step is counted (as `computed_wall`).
DEFAULT_MODEL = "smollm2-135m"
CEILING_DTYPES = ("float32", "bfloat16")
CONTEXT_TOKENS = 32

# An H100 SXM5 80 GB from NVIDIA's datasheet (not measured here): HBM3 3.35 TB/s, and
# 1,979 TFLOPS bfloat16 Tensor Core *with sparsity*, i.e. 989 TFLOPS dense.
H100_SXM = {
    "device_name": "NVIDIA H100 SXM5 80 GB",
    "bytes_per_s": 3.35e12,
    "flops_per_s": {"bfloat16": 989e12},
    "source": "NVIDIA H100 Tensor Core GPU datasheet: HBM3 3.35 TB/s; bfloat16 Tensor Core "
    "1,979 TFLOPS with sparsity = 989 TFLOPS dense",
}


@dataclass(frozen=True)
class Datasheet:
    """One device's two peaks as its vendor publishes them (or as computed from its datasheet)."""

    key: str  # short name to look it up by, e.g. "H100" (`datasheet`, `growth`)
    name: str  # e.g. "NVIDIA H100 SXM5 80 GB"
    kind: str  # "gpu" or "cpu"
    year: int  # first shipped (the note says when announcement and shipping differ)
    memory: str  # capacity and kind, e.g. "80 GB HBM3"
    bytes_per_s: float  # peak memory bandwidth, bytes/s
    flops_per_s: float  # peak arithmetic in `flops_format`, FLOP/s (dense: no sparsity)
    flops_format: str  # which arithmetic, e.g. "bfloat16 dense Tensor Core"
    source: str  # the document(s) the figures come from: title, URL
    note: str = ""  # how the figures were read off (halved, divided, computed) and caveats
    computed: bool = False  # True: a figure worked out from the datasheet's parts, not printed

    @property
    def ridge(self) -> float:
        """FLOP per byte where the two peaks meet: flops_per_s ÷ bytes_per_s. A kernel doing
        fewer FLOPs per byte it reads cannot use the arithmetic (batch-1 decode: ~1)."""
        return self.flops_per_s / self.bytes_per_s

    def decode_tokens_per_s(self, weight_bytes: float) -> float:
        """The memory-bound ceiling of batch-1 decode: bytes_per_s ÷ the bytes one step reads
        (`weight_bytes`: the weights, plus the KV cache if you count it). No real step is this
        fast: it is the bound the datasheet allows, with no fixed cost and perfect streaming."""
        return self.bytes_per_s / checks.positive(
            "weight_bytes", weight_bytes, noun="a finite number"
        )


def _h100() -> Datasheet:
    return Datasheet(
        key="H100",
        name=H100_SXM["device_name"],
        kind="gpu",
        year=2022,
        memory="80 GB HBM3",
        bytes_per_s=H100_SXM["bytes_per_s"],
        flops_per_s=H100_SXM["flops_per_s"]["bfloat16"],
        flops_format="bfloat16 dense Tensor Core",
        source="NVIDIA H100 Tensor Core GPU datasheet, "
        "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
        # "viz.perf.wall.H100_SXM": H100_SXM's home before viz/perf/machine/, kept because
        # lesson 12's saved output prints this note (viz.perf.H100_SXM is the same dict)
        note="the datasheet prints 1,979 TFLOPS bfloat16 'with sparsity': dense is half, 989 "
        "(the figures of viz.perf.wall.H100_SXM); HBM3 3.35 TB/s",
    )


DATASHEETS: tuple[Datasheet, ...] = (
    Datasheet(
        key="V100",
        name="NVIDIA V100 SXM2",
        kind="gpu",
        year=2017,
        memory="16 or 32 GB HBM2",
        bytes_per_s=900e9,
        flops_per_s=125e12,
        flops_format="float16 Tensor Core",
        source="NVIDIA V100 Tensor Core GPU datasheet, https://images.nvidia.com/content/"
        "technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf",
        note="125 TFLOPS 'deep learning' (float16 products, float32 sums) for the SXM2 "
        "board; Volta has no bfloat16 and no sparsity, so this is the dense float16 "
        "figure; HBM2 900 GB/s",
    ),
    Datasheet(
        key="A100",
        name="NVIDIA A100 SXM4 80 GB",
        kind="gpu",
        year=2020,
        memory="80 GB HBM2e",
        bytes_per_s=2039e9,
        flops_per_s=312e12,
        flops_format="bfloat16 dense Tensor Core",
        source="NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/"
        "en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-"
        "r4-web.pdf",
        note="bfloat16 Tensor Core '312 TFLOPS | 624 TFLOPS*', * with sparsity: 312 is dense; "
        "2,039 GB/s is the 80 GB SXM board (the 40 GB board of 2020 has 1,555 GB/s)",
    ),
    _h100(),
    Datasheet(
        key="H200",
        name="NVIDIA H200 SXM 141 GB",
        kind="gpu",
        year=2024,
        memory="141 GB HBM3e",
        bytes_per_s=4.8e12,
        flops_per_s=989e12,
        flops_format="bfloat16 dense Tensor Core",
        source="NVIDIA H200 Tensor Core GPU datasheet, https://nvdam.widen.net/s/nb5zzzsjdf/"
        "hpc-datasheet-sc23-h200-datasheet-3002446 (and "
        "https://www.nvidia.com/en-us/data-center/h200/)",
        note="the H100's chip with faster memory: 1,979 TFLOPS bfloat16 with sparsity, 989 "
        "dense, as the H100; HBM3e 4.8 TB/s. Announced November 2023, shipped 2024",
    ),
    Datasheet(
        key="B200",
        name="NVIDIA B200 (HGX B200, 1,000 W)",
        kind="gpu",
        year=2024,
        memory="180 GB HBM3e (192 GB on the package)",
        bytes_per_s=8e12,
        flops_per_s=2.25e15,
        flops_format="bfloat16 dense Tensor Core",
        source="NVIDIA HGX platform page, HGX B200 column, "
        "https://www.nvidia.com/en-us/data-center/hgx/ ; NVIDIA DGX B200 datasheet, "
        "https://resources.nvidia.com/en-us-dgx-systems/dgx-b200-datasheet",
        note="NVIDIA quotes 8-GPU boards, not one GPU: HGX B200 'FP16/BF16 Tensor Core 36 "
        "PFLOPS', footnoted 'Specification in Sparse. Dense is ½ sparse spec shown', so "
        "36 ÷ 8 GPUs ÷ 2 = 2.25 PFLOP/s dense per GPU (cross-check: DGX B200's 72 PFLOPS "
        "FP8 training ÷ 8 ÷ 2 = 4.5 dense FP8 = 2 × bfloat16). Bandwidth: DGX B200 64 TB/s "
        "÷ 8 = 8 TB/s; 1,440 GB ÷ 8 = 180 GB. The B200 inside a GB200 NVL72 runs at "
        "higher power (2.5 PFLOP/s dense bfloat16): not this row. Announced March 2024, "
        "DGX B200 shipped from late 2024. Read from quotations of the two NVIDIA pages, "
        "not from the pages themselves",
    ),
    Datasheet(
        key="EPYC 9654",
        name="AMD EPYC 9654 (Genoa, one socket)",
        kind="cpu",
        year=2022,
        memory="12 channels DDR5-4800",
        bytes_per_s=12 * 8 * 4800e6,
        flops_per_s=96 * 2.4e9 * 32,
        flops_format="float32 FMA (AVX-512), computed",
        source="AMD EPYC 9654 product page, https://www.amd.com/en/products/processors/server/"
        "epyc/4th-generation-9004-and-8004-series/amd-epyc-9654.html",
        note="computed, not quoted by AMD: bandwidth = 12 channels × 8 bytes × 4.8 GT/s = "
        "460.8 GB/s; FLOP/s = 96 cores × 2.4 GHz base × 32 float32 FLOP per cycle (Zen 4: "
        "two 256-bit FMA pipes; a 512-bit instruction runs as two halves) = 7.37 TFLOP/s "
        "(11.4 at the 3.7 GHz boost, which all 96 cores do not hold). Its bfloat16 "
        "(AVX-512 BF16) rate per cycle is not in AMD's datasheet: not counted",
        computed=True,
    ),
    Datasheet(
        key="Xeon 8480+",
        name="Intel Xeon Platinum 8480+ (Sapphire Rapids, one socket)",
        kind="cpu",
        year=2023,
        memory="8 channels DDR5-4800",
        bytes_per_s=8 * 8 * 4800e6,
        flops_per_s=56 * 2.0e9 * 1024,
        flops_format="bfloat16 AMX, computed",
        source="Intel Xeon Platinum 8480+ specifications, https://www.intel.com/content/www/us/"
        "en/products/sku/231746/intel-xeon-platinum-8480-processor-105m-cache-2-00-ghz/"
        "specifications.html ; Intel, 'Accelerate AI Workloads with Intel AMX' "
        "(1,024 bfloat16 operations per cycle per core)",
        note="computed, not quoted by Intel: bandwidth = 8 channels × 8 bytes × 4.8 GT/s = "
        "307.2 GB/s; FLOP/s = 56 cores × 2.0 GHz base × 1,024 bfloat16 FLOP per cycle "
        "(AMX tile multiply) = 115 TFLOP/s, an upper estimate: Intel publishes no clock "
        "for AMX under load. The AMX white paper's URL was not confirmed here",
        computed=True,
    ),
    Datasheet(
        key="Ryzen 7840U",
        name="AMD Ryzen 7 7840U laptop, dual-channel DDR5-5600",
        kind="cpu",
        year=2023,
        memory="2 channels DDR5-5600 (128 bits)",
        bytes_per_s=2 * 8 * 5600e6,
        flops_per_s=8 * 3.3e9 * 32,
        flops_format="float32 FMA (AVX-512), computed",
        source="AMD Ryzen 7 7840U specifications, https://www.amd.com/en/products/processors/"
        "laptop/ryzen/7000-series/amd-ryzen-7-7840u.html",
        note="computed: bandwidth = 2 channels × 8 bytes × 5.6 GT/s = 89.6 GB/s (the chip also "
        "takes LPDDR5x-7500, 120 GB/s, in laptops built with it); FLOP/s = 8 Zen 4 cores × "
        "3.3 GHz base × 32 float32 FLOP per cycle = 845 GFLOP/s",
        computed=True,
    ),
)


def datasheet(name: str) -> Datasheet:
    """The row of `DATASHEETS` whose key or name is `name` (any case), e.g. "B200"."""
    want = str(name).strip().lower()
    for d in DATASHEETS:
        if want in (d.key.lower(), d.name.lower()):
            return d
    raise ValueError(
        f"no datasheet named {name!r}: the known ones are {', '.join(d.key for d in DATASHEETS)}"
    )


def growth(first: str = "V100", last: str = "B200") -> dict[str, Any]:
    """How many times arithmetic, bandwidth and ridge grew from `first` to `last`.

    Ratios of the datasheet figures (last ÷ first): "from V100 to B200 arithmetic grew ×18,
    bandwidth ×8.9", so the ridge doubled. Each keeps its own format (V100's is float16, it has
    no bfloat16): `formats` says which. Unknown names raise a ValueError naming the known ones.
    """
    a, b = datasheet(first), datasheet(last)
    out = {
        "first": a.key,
        "last": b.key,
        "years": [a.year, b.year],
        "formats": [a.flops_format, b.flops_format],
        "flops_ratio": b.flops_per_s / a.flops_per_s,
        "bandwidth_ratio": b.bytes_per_s / a.bytes_per_s,
        "ridge_ratio": b.ridge / a.ridge,
        "ridges": [a.ridge, b.ridge],
    }
    out["text"] = (
        f"from {a.key} ({a.year}) to {b.key} ({b.year}) arithmetic grew "
        f"×{out['flops_ratio']:.1f}, bandwidth ×{out['bandwidth_ratio']:.1f}: the "
        f"ridge moved ×{out['ridge_ratio']:.1f}, from {a.ridge:,.0f} to "
        f"{b.ridge:,.0f} FLOP per byte (datasheet peaks)"
    )
    return out


def step_bytes(
    model: str = DEFAULT_MODEL, dtype: str = "float32", context_tokens: int = CONTEXT_TOKENS
) -> int:
    """Bytes one batch-1 decode step of `model` reads in `dtype`: its weights once (of an
    untied embedding table only the new token's row) plus the KV cache at `context_tokens`
    (`viz.perf.counts.decode_cost` of `config_spec(model)`)."""
    return int(decode_cost(config_spec(model, dtype=dtype), context_tokens).bytes)


def decode_intensity(
    model: str = DEFAULT_MODEL, dtype: str = "float32", context_tokens: int = CONTEXT_TOKENS
) -> float:
    """FLOPs per byte of one batch-1 decode step (`decode_cost`): 2 FLOPs per weight over its
    bytes, about 0.5 in float32 and 1 in bfloat16, compared with each row's `ridge`."""
    return decode_cost(config_spec(model, dtype=dtype), context_tokens).intensity


def _row(d: Datasheet, figures: str, per_token: dict[str, int]) -> dict[str, Any]:
    row = asdict(d)
    row.update(
        figures=figures,
        ridge=d.ridge,
        ceiling_tokens_per_s={dt: d.decode_tokens_per_s(b) for dt, b in per_token.items()},
    )
    return row


def measured_row(
    peaks: MachinePeaks, dtype: str = "float32", *, per_token: Optional[dict[str, int]] = None
) -> dict[str, Any]:
    """This machine's row: its measured read bandwidth and matmul FLOP/s in `dtype`
    (`viz.perf.machine_peaks()`), in the form of `generations_table`'s rows."""
    if not isinstance(peaks, MachinePeaks):
        raise ValueError(
            f"peaks must be viz.perf.MachinePeaks (from viz.perf.machine_peaks()), "
            f"not {type(peaks).__name__}"
        )
    flops = peaks.flops(dtype)  # a dtype not measured fails here, naming those that were
    m = peaks.matmul[dtype]
    d = Datasheet(
        key="this machine",
        name=f"this machine (measured): {peaks.device_name}",
        kind="gpu" if peaks.device in ("cuda", "mps") else "cpu",
        year=int(peaks.measured_at[:4]) if peaks.measured_at[:4].isdigit() else 0,
        memory="",
        bytes_per_s=peaks.bytes_per_s,
        flops_per_s=flops,
        flops_format=f"{dtype} matmul, measured",
        source=f"viz.perf.machine_peaks(), measured {shown_utc(peaks.measured_at)}",
        note=f"read bandwidth: median of {peaks.read.repeats} reads of a "
        f"{peaks.read.buffer_bytes / 1e6:,.0f} MB buffer; FLOP/s: median {m.n}×{m.n} "
        f"product in {dtype}",
    )
    return _row(d, "measured", per_token or _per_token())


def _per_token(model: str = DEFAULT_MODEL, context_tokens: int = CONTEXT_TOKENS) -> dict[str, int]:
    return {dt: step_bytes(model, dt, context_tokens) for dt in CEILING_DTYPES}


def generations_table(
    peaks: Optional[MachinePeaks] = None,
    dtype: str = "float32",
    *,
    model: str = DEFAULT_MODEL,
    context_tokens: int = CONTEXT_TOKENS,
) -> list[dict[str, Any]]:
    """The datasheet rows, each a dict: its `Datasheet` fields, `figures` ("datasheet",
    "computed from the datasheet" or "measured"), `ridge` (FLOP per byte) and
    `ceiling_tokens_per_s` ({dtype: bandwidth ÷ bytes per decode step of `model`} for float32
    and bfloat16, `step_bytes`). With `peaks` (`viz.perf.machine_peaks()`), a last row measured
    on this machine, its FLOP/s those of `dtype`'s matmul.
    """
    per_token = _per_token(model, context_tokens)
    rows = [
        _row(d, "computed from the datasheet" if d.computed else "datasheet", per_token)
        for d in DATASHEETS
    ]
    if peaks is not None:
        rows.append(measured_row(peaks, dtype, per_token=per_token))
    return rows


def _si(value: float, unit: str) -> str:
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if value >= scale:
            return f"{value / scale:,.3g} {prefix}{unit}"
    return f"{value:,.3g} {unit}"


def generations_text(
    peaks: Optional[MachinePeaks] = None,
    dtype: str = "float32",
    *,
    model: str = DEFAULT_MODEL,
    context_tokens: int = CONTEXT_TOKENS,
    rows: Optional[Sequence[dict[str, Any]]] = None,
) -> str:
    """`generations_table` as a text table, the growth from V100 to B200 and each row's source
    below it. rows: a table made already (else made from `peaks`, `dtype`, `model`)."""
    rows = (
        list(rows)
        if rows is not None
        else generations_table(peaks, dtype, model=model, context_tokens=context_tokens)
    )
    per_token = _per_token(model, context_tokens)
    head = (
        f"{'':<13} {'year':>4}  {'peak FLOP/s':>12}  {'format':<31} {'bandwidth':>10}  "
        f"{'ridge':>7}  {'fp32 tok/s':>10}  {'bf16 tok/s':>10}  figures"
    )
    lines = [
        f"Peaks by generation, and the batch-1 decode ceiling of {model} (bandwidth ÷ "
        f"{per_token['float32'] / 1e6:,.0f} MB per token in float32, "
        f"{per_token['bfloat16'] / 1e6:,.0f} MB in bfloat16; weights + KV cache at "
        f"{context_tokens} tokens):",
        head,
        "-" * len(head),
    ]
    for r in rows:
        c = r["ceiling_tokens_per_s"]
        lines.append(
            f"{r['key']:<13} {r['year'] or '':>4}  {_si(r['flops_per_s'], 'FLOP/s'):>12}  "
            f"{r['flops_format']:<31} {_si(r['bytes_per_s'], 'B/s'):>10}  "
            f"{r['ridge']:>7,.0f}  {c.get('float32', 0):>10,.0f}  "
            f"{c.get('bfloat16', 0):>10,.0f}  {r['figures']}"
        )
    keys = {r["key"] for r in rows}
    if {"V100", "B200"} <= keys:
        lines += ["", growth("V100", "B200")["text"] + "."]
    intensity = {dt: decode_intensity(model, dt, context_tokens) for dt in CEILING_DTYPES}
    above = [r["key"] for r in rows if r["ridge"] <= max(intensity.values())]
    lines += [
        "",
        f"ridge = peak FLOP/s ÷ bandwidth (FLOP per byte). A batch-1 decode step of "
        f"{model} does {intensity['float32']:.2f} FLOP per byte in float32, "
        f"{intensity['bfloat16']:.2f} in bfloat16: "
        + (
            "below every ridge here: on all of them its arithmetic waits on memory, not the "
            "other way round (a fixed cost per step can still dominate: lesson 08)."
            if not above
            else f"at or above the ridge of {', '.join(above)} only."
        ),
        "tok/s = the memory-bound ceiling, bandwidth ÷ bytes per token: no fixed cost, "
        "perfect streaming (no real step reaches it).",
        "",
        "Sources:",
    ]
    lines += [
        f"  {r['key']}: {r['source']}" + (f" ({r['note']})" if r["note"] else "") for r in rows
    ]
    return "\n".join(lines)

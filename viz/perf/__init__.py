"""The performance lab: sweeps, a measured roofline, batched decode and models built by config.

    from viz import perf
    sweep = perf.prompt_length_sweep(lm, [8, 16, 32, 64], progress=False)   # lesson 03
    roof = perf.measure_roofline(lm, batch_sizes=[1, 4, 16], progress=False)  # lesson 06
    print(sweep); print(roof)

| module | its one job |
|---|---|
| `counts.py` | FLOPs and bytes of a forward pass, from the model's shape |
| `machine/` | this machine's peaks, bandwidth and fixed cost, measured once, cached; datasheets |
| `roofline.py` | measured passes under those peaks: intensity, MFU, MBU |
| `batch.py` | the decode loop with a batch dimension |
| `sweeps.py` | prompt length, context length, cache on/off and batch size sweeps |
| `table.py` | `Sweep`, the table every sweep returns, and its JSON |
| `configs.py` | random-weight models from published architecture configs |
| `reference.py` | the traces and sweeps shipped in `viz/data/` |
| `regime.py` | the rule that names a step's regime, and its verdict with the margin |
| `wall_point.py` | one decode step timed, with the bytes and FLOPs it counts: a point of the wall |
| `wall.py` | the memory wall: step time vs bytes, the floors, the fit |
| `speculative.py` | prompt-lookup decoding measured against plain decode |
| `early_exit.py` | early-exit self-speculative decoding: the model's first layers draft, measured |
| `context.py` | long contexts: prefill split into attention and the rest, decode up to 8k |
| `kv_quant.py` | transformers' quantized KV cache (fp8, quanto int4/int2) on the long-context wall: bytes, step, agreement |
| `prefix.py` | prefix caching in this process: a cached prefix, a chat that re-sends history |
| `words.py` | tokens per word, measured with the model's tokenizer (answer length → tokens) |
| `formats.py` | one model in six weight formats, transformers and llama.cpp, timed token for token |
| `engine_child.py` | llama.cpp in a child process: a native crash there is an `EngineCrash` here |
| `profile.py` | one decode step taken apart with torch.profiler: products, attention, norms, small ops, gaps |
| `compiled.py` | a decode step compiled (torch.compile, static cache) against eager, with the compile's cost |
| `gpu.py` | the GPU reference shipped in `viz/data/` (an H200, measured once), judged by the same rule |
| `cost.py` | $ per million tokens (output, input, cached input) from a measured throughput and a price |
| `energy.py` | energy per token from RAPL or NVML, where the machine exposes a counter |
"""

from viz.perf.counts import (
    activation_bytes,
    decode_cost,
    knee_context,
    prefill_cost,
)
from viz.perf.machine import (
    H100_SXM,
    Bandwidth,
    MachinePeaks,
    Matmul,
    Peaks,
    bandwidth_by_size,
    cached_peaks,
    datasheet,
    fixed_cost,
    generations_table,
    generations_text,
    growth,
    kernel_spread,
    linear_seconds,
    linear_spread,
    machine_overhead,
    machine_peaks,
    measure_matmul,
    measure_overhead,
    measure_peaks,
    narrow_config,
    peaks_from_machine,
    peaks_path,
    time_kernel,
    yardsticks,
)
from viz.perf.roofline import (
    Roofline,
    RooflinePoint,
    floors_verdict,
    measure_roofline,
    pass_regime,
    pass_verdict,
    prefill_points,
)
from viz.perf.batch import (
    BatchRun,
    generate_batch,
)
from viz.perf.sweeps import (
    batch_size_sweep,
    cache_sweep,
    context_length_sweep,
    prompt_length_sweep,
    prompt_of_length,
)
from viz.perf.table import (
    Sweep,
)
from viz.perf.configs import (
    BYTE_VOCAB,
    config_names,
    config_spec,
    from_config,
)
from viz.perf.reference import (
    list_references,
    load_reference,
)
from viz.perf.regime import (
    REGIMES,
    TOO_CLOSE,
    Verdict,
    regime,
    verdict,
)
from viz.perf.wall_point import (
    measure_point,
)
from viz.perf.wall import (
    REMEDIES,
    WallRun,
    best_of,
    bytes_whatif,
    computed_wall,
    measure_wall,
    streaming_rate,
)
from viz.perf.speculative import (
    LOOKUP_PROMPTS,
    LOOKUP_WHY,
    LookupComparison,
    compare_prompt_lookup,
)
from viz.perf.early_exit import (
    EARLY_EXIT_WORDS,
    best_lens_draft,
    compare_early_exit,
    draft_bytes_share,
    early_exit_generate,
    lens_draft_grid,
    lens_drafts,
)
from viz.perf.context import (
    attention_crossover,
    kv_fit,
    long_decode_sweep,
    long_prefill_sweep,
    measured_crossover,
    synthetic_check,
)
from viz.perf.kv_quant import (
    KVQuant,
    kv_quant_agreement,
    kv_quant_bytes,
    kv_quant_row,
    kv_quant_sweep,
    kv_quant_verdicts,
)
from viz.perf.prefix import (
    chat_turns,
    common_prefix,
    prefix_cache_sweep,
)
from viz.perf.words import (
    SAMPLE_PARAGRAPH,
    tokens_per_word,
)
from viz.perf.formats import (
    FORMATS,
    LLAMA_FORMATS,
    FormatRun,
    available_formats,
    gguf_file,
    measure_formats,
)
from viz.perf.engine_child import (
    EngineCrash,
)
from viz.perf.profile import (
    profile_decode_step,
)
from viz.perf.compiled import (
    CompiledStep,
    compiler_missing,
    measure_compiled_step,
)
from viz.perf.gpu import (
    GPU_MODELS,
    NOT_JUDGED,
    GraphStep,
    busy_fixed_cost,
    busy_knee,
    busy_roofline,
    busy_rows,
    eager_walls,
    gpu_fixed_cost,
    gpu_peaks,
    gpu_provenance,
    gpu_reference,
    gpu_wall,
    graph_steps,
    kernel_time_bound,
    prefill_rows,
    ridge_batch,
)
from viz.perf.cost import (
    EXAMPLE_PRICES,
    Cost,
    cost,
    per_million,
)
from viz.perf.energy import (
    energy_counter,
    energy_meter,
)

# not a perf module (so not in the table): viz.runtime's, for the lessons that free memory
# between two models (lessons 12 and 13)
from viz.runtime import (
    release_memory,
)

__all__ = [
    "activation_bytes",
    "decode_cost",
    "knee_context",
    "prefill_cost",
    "H100_SXM",
    "Bandwidth",
    "MachinePeaks",
    "Matmul",
    "Peaks",
    "bandwidth_by_size",
    "cached_peaks",
    "datasheet",
    "fixed_cost",
    "generations_table",
    "generations_text",
    "growth",
    "kernel_spread",
    "linear_seconds",
    "linear_spread",
    "machine_overhead",
    "machine_peaks",
    "measure_matmul",
    "measure_overhead",
    "measure_peaks",
    "narrow_config",
    "peaks_from_machine",
    "peaks_path",
    "time_kernel",
    "yardsticks",
    "Roofline",
    "RooflinePoint",
    "floors_verdict",
    "measure_roofline",
    "pass_regime",
    "pass_verdict",
    "prefill_points",
    "BatchRun",
    "generate_batch",
    "batch_size_sweep",
    "cache_sweep",
    "context_length_sweep",
    "prompt_length_sweep",
    "prompt_of_length",
    "Sweep",
    "BYTE_VOCAB",
    "config_names",
    "config_spec",
    "from_config",
    "list_references",
    "load_reference",
    "REGIMES",
    "TOO_CLOSE",
    "Verdict",
    "regime",
    "verdict",
    "measure_point",
    "REMEDIES",
    "WallRun",
    "best_of",
    "bytes_whatif",
    "computed_wall",
    "measure_wall",
    "streaming_rate",
    "LOOKUP_PROMPTS",
    "LOOKUP_WHY",
    "LookupComparison",
    "compare_prompt_lookup",
    "EARLY_EXIT_WORDS",
    "best_lens_draft",
    "compare_early_exit",
    "draft_bytes_share",
    "early_exit_generate",
    "lens_draft_grid",
    "lens_drafts",
    "attention_crossover",
    "kv_fit",
    "long_decode_sweep",
    "long_prefill_sweep",
    "measured_crossover",
    "synthetic_check",
    "KVQuant",
    "kv_quant_agreement",
    "kv_quant_bytes",
    "kv_quant_row",
    "kv_quant_sweep",
    "kv_quant_verdicts",
    "chat_turns",
    "common_prefix",
    "prefix_cache_sweep",
    "SAMPLE_PARAGRAPH",
    "tokens_per_word",
    "FORMATS",
    "LLAMA_FORMATS",
    "FormatRun",
    "available_formats",
    "gguf_file",
    "measure_formats",
    "EngineCrash",
    "profile_decode_step",
    "CompiledStep",
    "compiler_missing",
    "measure_compiled_step",
    "GPU_MODELS",
    "NOT_JUDGED",
    "GraphStep",
    "busy_fixed_cost",
    "busy_knee",
    "busy_roofline",
    "busy_rows",
    "eager_walls",
    "gpu_fixed_cost",
    "gpu_peaks",
    "gpu_provenance",
    "gpu_reference",
    "gpu_wall",
    "graph_steps",
    "kernel_time_bound",
    "prefill_rows",
    "ridge_batch",
    "EXAMPLE_PRICES",
    "Cost",
    "cost",
    "per_million",
    "energy_counter",
    "energy_meter",
    "release_memory",
]

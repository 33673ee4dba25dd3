"""Many users at once: a real server, its clients, and what happens inside it (lessons 09 to 11).

    from viz import serve
    with serve.EmbeddedServer(continuous_batching=True, record=True) as server:
        one = serve.record_request(server, "What is the capital of France?")
        run = serve.run_load(server, concurrency=4, n_requests=8,
                             workload=serve.Workload.synthetic(prompt_tokens=64, output_tokens=32))
    print(run.summary())

- `client`: record one streaming request to any OpenAI-compatible server (`record_request`
  → `StreamRecord`), with the errors (`ServeError`) that name the fix; `protocol`: what a
  server viz started offers its clients (`ServerHandle`), taken wherever a URL is.
- `server`: `EmbeddedServer` / `serve()`: `transformers serve` on the default model, offline,
  started and stopped cleanly (`worker` ties it to this process).
- `llamacpp`: `LlamaCppServer`: llama.cpp's OpenAI server on the default model's own Q4_1
  GGUF file (a second real engine; one request at a time).
- `loadgen`: `run_load`: N concurrent streams or seeded Poisson arrivals, bounded in count
  and time → a `LoadRun` document; `driver` sends the requests.
- `workload`: what a run sends, as engineers state it (`Workload.synthetic(64, 32)`: 64 tokens
  in, 32 out; a JSONL file; chats re-sending their history; the shipped prompts); `Lengths`:
  fixed, uniform or normal; `items`: one request as built before a run; `synthetic` builds
  and checks them, `jsonl` reads a file, `engines` knows which length fields each engine
  accepts; `limits`: where a workload meets the step budget and the KV pool (`limits(run)`).
- `metrics`: TTFT, ITL, TPOT, E2E and goodput, defined once (`summarize`, `SLO`); a run's ITL
  taken apart with the server's record (`itl_breakdown`); a measured ratio put in ranges
  with its margin (`band`). `loadgen.throughput_ratio`: two runs' throughputs, with a spread.
- `scheduler`: the continuous-batching loop step by step (`record_schedule` → `Schedule`),
  pinned to `SUPPORTED_TRANSFORMERS`; `probes`: what records it inside the serving process
  (`StepRecorder`, `RequestProbe`).
- `sweep`: `sweep_rates`: one at a time, then all at once, then Poisson rates between, repeated,
  stopped where the server saturates → a `LoadSweep` document (medians with intervals).
- `prefix`: the engine's prefix sharing on and off, per request: tokens reused, hit rate,
  the engine's time to first token (`measure_prefix_sharing` → `PrefixSharing`; lesson 11).

Views: `viz.views` (request_timeline_figure, serving_tradeoff_figure, itl_distribution_figure,
schedule_figure, page_table_figure, rate_sweep_figure, pareto_figure). Command line
(viz/cli.py): `python -m viz serve`, `python -m viz request`, `python -m viz load`.
"""

from viz.serve.client import ServeError, StreamRecord, Target, Timeouts, check_url, record_request
from viz.serve.server import EmbeddedServer, ServerInfo, serve
from viz.serve.llamacpp import LlamaCppServer
from viz.serve.loadgen import (
    LoadRun,
    LoadSettings,
    Prompt,
    arrival_times,
    load_prompts,
    run_load,
    sweep_load,
    throughput_ratio,
)
from viz.serve.workload import Lengths, Workload
from viz.serve.limits import LIMITS, Limits, limits
from viz.serve.metrics import (
    ITL_PARTS,
    REQUEST_METRICS,
    SLO,
    Band,
    ITLBreakdown,
    LoadSummary,
    RequestRecord,
    ServerTiming,
    StaticBatchWaste,
    band,
    decode_pass_time,
    itl_breakdown,
    request_metrics,
    request_metrics_text,
    static_batching_waste,
    summarize,
)
from viz.serve.scheduler import (
    SUPPORTED_TRANSFORMERS,
    Schedule,
    SchedulerStep,
    UnsupportedTransformers,
    check_transformers_version,
)
from viz.serve.probes import RequestProbe, StepRecorder, record_schedule
from viz.serve.sweep import (
    MISSES,
    FirstMiss,
    LoadSweep,
    SweepPoint,
    derived_slo,
    queue_growth,
    sweep_rates,
)
from viz.serve.prefix import PrefixSharing, RequestPrefix, measure_prefix_sharing

__all__ = [
    "ServeError",
    "StreamRecord",
    "Target",
    "Timeouts",
    "check_url",
    "record_request",
    "EmbeddedServer",
    "ServerInfo",
    "serve",
    "LlamaCppServer",
    "LoadRun",
    "LoadSettings",
    "Prompt",
    "arrival_times",
    "load_prompts",
    "run_load",
    "sweep_load",
    "throughput_ratio",
    "Lengths",
    "Workload",
    "LIMITS",
    "Limits",
    "limits",
    "ITL_PARTS",
    "REQUEST_METRICS",
    "SLO",
    "Band",
    "ITLBreakdown",
    "LoadSummary",
    "RequestRecord",
    "ServerTiming",
    "StaticBatchWaste",
    "band",
    "decode_pass_time",
    "itl_breakdown",
    "request_metrics",
    "request_metrics_text",
    "static_batching_waste",
    "summarize",
    "SUPPORTED_TRANSFORMERS",
    "Schedule",
    "SchedulerStep",
    "UnsupportedTransformers",
    "check_transformers_version",
    "RequestProbe",
    "StepRecorder",
    "record_schedule",
    "MISSES",
    "FirstMiss",
    "LoadSweep",
    "SweepPoint",
    "derived_slo",
    "queue_growth",
    "sweep_rates",
    "PrefixSharing",
    "RequestPrefix",
    "measure_prefix_sharing",
]

# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · Continuous batching and pages
#
# In [06 · Batching](06_batching.ipynb) B copies of one prompt started and ended together, each
# step limited as [08 · The memory wall](08_memory_wall.ipynb) showed. A real server's requests
# come at any time, of any length, and none should wait for a batch to fill or its longest
# answer to end.
#
# Here you time a real server, `transformers serve` with the course model, as users see it;
# watch its scheduler fill each forward pass (**continuous batching**); see where each
# request's KV cache lives (**paged attention**); and measure what serving many at once buys and
# costs.

# %%
import os
import resource
import statistics
import time

import viz
from viz import perf, serve, views

# %% [markdown]
# `serve.serve(...)` starts the server offline on `127.0.0.1` and warms it up; `record=True`
# also logs every scheduler step.

# %% tags=["nbval-ignore-output"]
began = time.perf_counter()
server = serve.serve(continuous_batching=True, record=True)
print(server)
print(f"ready after {time.perf_counter() - began:.1f} s; "
      f"server resident memory: {server.rss_bytes() / 2**20:,.0f} MiB")

# %% [markdown]
# ## See it: one request, as its user sees it
#
# `record_request` sends one chat message over HTTP and notes when each piece of the answer
# arrives.

# %% tags=["nbval-ignore-output"]
one = serve.record_request(server, "What is the capital of France?", max_tokens=16)
print(one.summary())

# %% [markdown]
# `viz.serve.metrics` defines these as vLLM's and GuideLLM's benchmarks do: **TTFT** now holds
# the network and any queue besides lesson 03's prefill; **E2E**, end to end, runs to the last
# piece; **TPOT** is lesson 04's decode step seen from outside; and **ITL**, inter-token
# latency, is each gap between two pieces of text.

# %% [markdown]
# ## See it: a workload, stated the way engineers state it
#
# "128 tokens in, 16 out, 4 streams": prompts of about 128 tokens, answers of 16, and 4 users
# each sending a new request once answered. `serve.Workload.synthetic` cuts them from lesson
# 01's paragraph, varying around 128 like real prompts.
#
# ✏️ **Change the workload** and rerun the lesson from here to see where it meets the server's
# limits.

# %%
PROMPT_TOKENS, OUTPUT_TOKENS, STREAMS = 128, 16, 4  # ← tokens in, tokens out, streams
workload = serve.Workload.synthetic(
    prompt_tokens=serve.Lengths.normal(PROMPT_TOKENS, PROMPT_TOKENS // 3),
    output_tokens=OUTPUT_TOKENS)
print(f"workload: {workload}, {STREAMS} streams")

# %% [markdown]
# `run_load` keeps that many requests in flight until twice as many are done. `transformers
# serve` cannot hold the model to `max_tokens`, so answers may end earlier, at the end of text.
# Times are percentiles over the requests: **p50** is the median request, **p90** the time 90 %
# of them beat, **p99** 99 %. The last line, lesson 10's **goodput**, counts the requests that
# met a **service-level objective** (SLO): a limit on TTFT and one on TPOT, here examples.
#
# This server has two limits. Each forward pass carries at most 128 tokens (the **step
# budget**), and the keys and values of all requests share a pool of 1,024 tokens (the **KV
# pool**: 64 pages of 16 tokens, explained below). A prompt that does not fit a pass waits, in
# part, for the next; a request whose pages do not fit the pool waits for pages. Prompts gain
# about 30 tokens from the chat template.
#
# ✏️ **Predict**, before the run: for the workload you set above, which limit will hold
# requests back in more passes: "the step budget", "the KV pool", or "neither"?

# %%
prediction_limit = None  # ← one of serve.LIMITS: "the step budget", "the KV pool", "neither"

# %% tags=["nbval-ignore-output"]
run = serve.run_load(server, concurrency=STREAMS, n_requests=2 * STREAMS, workload=workload,
                     max_duration_s=60, progress=False)
print(run.summary())
lengths = [r.prompt_tokens for r in run.requests if r.prompt_tokens]
print(f"prompts of {min(lengths)} to {max(lengths)} tokens (the chat template included)")

# %% [markdown]
# The legend below the table gives each benchmark's names. A short answer to a long prompt has
# a normalized TPOT (the wait for the first token included) far above its TPOT.

# %% tags=["nbval-ignore-output"]
print(serve.request_metrics_text(run.requests))

# %% [markdown]
# One row per request: **grey** waiting (network, tokenization, room in the server), **blue**
# prefill, **orange** decoding, a tick per piece of text received. Ticks aligned across rows
# came from one forward pass.

# %% tags=["nbval-ignore-output"]
views.request_timeline_figure(run)

# %% [markdown]
# ## Understand it: what static batching wastes
#
# Lesson 06's batching is *static*: a batch starts together, prompts are padded to the longest,
# and every row stays until the longest answer ends. With these requests' real lengths, as many
# at a time as there were streams:

# %% tags=["nbval-ignore-output"]
waste = run.static_batching_waste(batch_size=STREAMS)
print(f"useful token slots {waste.useful_slots}, padding {waste.padding_slots}, "
      f"finished rows waiting for the longest answer {waste.idle_slots}")
print(f"static batching would waste {waste.wasted_fraction:.0%} of its slots")

# %% [markdown]
# **Continuous batching** wastes neither kind: before each forward pass, finished requests
# leave, waiting ones join if there is room, and prompts are packed end to end, unpadded. A
# pass is limited by the step budget (the dashed line below) and free pages; a prompt longer
# than the budget left is split over passes (**chunked prefill**), so decoding requests still
# get a token every pass, though a pass with a chunk takes longer.
#
# Columns are passes, rows requests: light blue a prompt chunk, blue its last (yielding the
# first token), orange a decode token, grey waiting; above, tokens per pass and free pages.

# %% tags=["nbval-ignore-output"]
names = views.request_names(run)
views.schedule_figure(run.schedule, names)

# %% [markdown]
# The first passes in words. A request is named by its number and its prompt's own length
# ("#0 81 in": 81 tokens of text, 111 with the chat template). Its prefill skips its first
# page: 16 tokens of the system message that begins every prompt, cached once and shared.

# %% tags=["nbval-ignore-output"]
for step in run.schedule.steps[:10]:
    parts = [f"{names.get(e.request_id, '?')} {e.phase} {e.query_tokens}" for e in step.batch]
    waiting = f"  | waiting: {len(step.waiting)}" if step.waiting else ""
    print(f"pass {step.index:>2}: " + ", ".join(parts) + waiting)

# %% [markdown]
# ## Understand it: the KV cache in pages
#
# A request's keys and values (lesson 05) grow a token at a time, to a length nobody knows in
# advance. One contiguous block each would have to hold the model's whole context, 8,192 tokens
# here. Instead the cache is cut into **pages** of 16 tokens: a request gets a page when it
# needs one, its **page table** lists its pages in order, and attention reads them through it
# (**paged attention**). Pages are freed when a request ends.
#
# Move the slider: squares are pages, coloured by request, grey when free; ◆ marks the shared
# system-message page.

# %% tags=["nbval-ignore-output"]
views.page_table_figure(run.schedule, names)

# %% [markdown]
# At the busiest pass, how many token slots did the pages hold, against a block per request of
# its whole context or its prompt plus answer limit? Page tables, like blocks, count a shared
# page once per request (memory stores it once).

# %% tags=["nbval-ignore-output"]
steps = range(len(run.schedule.steps))
busiest = max(steps, key=lambda i: views.page_table_data(run.schedule, i)["used_pages"])
pages = views.page_table_data(run.schedule, busiest)
held, n = sum(pages["tokens"].values()), len(pages["tokens"])
spec = perf.config_spec("smollm2-135m", dtype=server.dtype)  # the server's model, as it runs
blocks = {"page tables": pages["slots"], "whole context": n * spec.context_length,
          "prompt + answer limit": sum(run.schedule.prompt_tokens[r.request_id] + r.max_tokens
                                       for r in run.requests if r.request_id in pages["tokens"])}
print(f"pass {busiest}: {n} requests hold {held} tokens; their page tables list "
      f"{pages['slots'] // run.schedule.page_size} pages, {pages['used_pages']} of them distinct "
      f"({len(pages['shared'])} shared by several requests, stored once)")
for how, slots in blocks.items():
    print(f"  {how:>21}: {slots:6,} token slots, {1 - held / slots:4.0%} of them unused")
print(f"answers that ran to their limit: {sum(r.finish_reason == 'length' for r in run.requests)}"
      f" of {len(run.requests)}")

# %% [markdown]
# A prompt + answer-limit block comes as close as the answers come to their limits (last
# line), so pages help most where limits are generous or unknown. Their cost: a partly empty
# last page (at most 15 slots), attention gathering through the page table, and a pool
# reserved at start — here:

# %%
kv = run.schedule.total_pages * run.schedule.bytes_per_page
per_token = run.schedule.bytes_per_page // run.schedule.page_size
print(f"{run.schedule.total_pages} pages of {run.schedule.page_size} tokens, "
      f"{run.schedule.bytes_per_page:,} bytes each: {kv / 1e6:.1f} MB of KV cache")
print(f"room for {run.schedule.total_pages * run.schedule.page_size:,} tokens in all; "
      f"one block of the whole context: {spec.context_length * per_token / 1e6:.0f} MB")

# %% [markdown]
# ## Measure it: your workload against the step budget and the KV pool
#
# The run's record says, pass by pass, why requests waited: passes full to the step budget, or
# passes with budget to spare whose requests waited for pages. It checks your prediction:

# %% tags=["nbval-ignore-output"]
held_back = serve.limits(run)  # the run's demand, then why requests waited, pass by pass
print(held_back)
viz.compare_prediction(prediction_limit, held_back, options=list(serve.LIMITS),
                       hint="multiply: streams × prompt tokens against the tokens of one pass, "
                            "streams × (prompt + answer) against the pool's tokens")

# %% [markdown]
# Try `PROMPT_TOKENS, OUTPUT_TOKENS, STREAMS = 256, 24, 8`: the pool (1,024 tokens) holds three
# or four such requests; the rest wait for pages though passes have room. With `32, 24, 2`
# neither limit bites. `serve.serve(num_pages=..., max_batch_tokens=...)` sizes both.

# %% [markdown]
# ## Measure it: one at a time against continuous batching
#
# One workload, 64 tokens in and 12 out, goes at 1 and 8 streams to this server, then to one
# that serves **one request at a time** (`continuous_batching=False`).
#
# ✏️ **Predict before you measure.** At 8 streams, how many times more tokens per second (all
# requests together) will continuous batching make than the one-at-a-time server?
#
# ✏️ **And its price**: with continuous batching, how many times longer will a request wait
# between two of its tokens at 8 streams than alone (median ITL, 8 streams ÷ 1 stream)?

# %%
prediction_ratio = None  # ← "under 1.5×", "1.5× to 4×" or "more than 4×"
prediction_itl = None  # ← a number: median ITL at 8 streams ÷ at 1 stream

# %% tags=["nbval-ignore-output"]
short = serve.Workload.synthetic(prompt_tokens=64, output_tokens=12)
loads = dict(concurrencies=[1, 8], requests_per_stream=1, min_requests=1, workload=short,
             max_duration_s=60, progress=False)
batched = serve.sweep_load(server, **loads)
print(f"workload: {short}")
for r in batched:
    print(f"continuous batching, {r.load_label}: {r.summary().output_tokens_per_s:.1f} tokens/s")
itl = [viz.Spread.of([g for q in r.requests if q.ok for g in q.itl_s]) for r in batched]
itl_ratio = itl[-1] / itl[0]  # the median ratio, and the worst case of the gaps' middle halves
print(f"median ITL: 1 stream {itl[0].text(1e3, 'ms', runs=False)}, 8 streams "
      f"{itl[-1].text(1e3, 'ms', runs=False)}: ×{itl_ratio.median:.1f} "
      f"({itl_ratio.low:.1f}–{itl_ratio.high:.1f})")

# %%
viz.compare_prediction(prediction_itl, itl_ratio.median, rel_tol=0.25,
                       hint="start from what 4 streams did to a request's gaps (the 4-stream "
                            "run at the top, its ITL p50, against the one request alone), "
                            "then scale by how "
                            "lesson 06's decode step changed from B=4 to B=8")

# %% [markdown]
# The one-at-a-time server, same loads (the first server stops first, to fit a Binder
# session's 2 GB):

# %% tags=["nbval-ignore-output"]
server_peak = server.peak_rss_bytes()
server.stop()
single = serve.serve(continuous_batching=False)
alone = serve.sweep_load(single, **loads)
single_peak = single.peak_rss_bytes()
single.stop()
for r in alone:
    print(f"one at a time, {r.load_label}: {r.summary().output_tokens_per_s:.1f} tokens/s")

# %% [markdown]
# The ratio's spread comes from each server's middle half of TPOTs; where it crosses a boundary
# between answers, either answer counts.

# %% tags=["nbval-ignore-output"]
ratio = serve.throughput_ratio(batched[-1], alone[-1])  # 8 streams: batched ÷ one at a time
measured_ratio = serve.band(ratio, [1.5, 4], ["under 1.5×", "1.5× to 4×", "more than 4×"])
print(f"at 8 streams continuous batching made ×{ratio.median:.1f} ({ratio.low:.1f}–"
      f"{ratio.high:.1f}) the tokens per second: {measured_ratio}")
viz.compare_prediction(prediction_ratio, measured_ratio,
                       options=["under 1.5×", "1.5× to 4×", "more than 4×"],
                       hint="one at a time, a pass makes one token; batched, 8 share each "
                            "pass, but that pass takes longer: divide 8 by how much longer "
                            "(the wait per token above)")

# %% [markdown]
# ## Measure it: a second engine, llama.cpp
#
# llama.cpp's server (`llama-cpp-python`) makes the other trade: the model's 4-bit GGUF file
# (97 MB of weights against 538 MB in float32), kernels computing on 4-bit weights directly,
# and **one request at a time**. The same two loads:
#
# ✏️ **Predict.** At 8 streams, will llama.cpp make "fewer", "about as many" or "more" tokens
# per second than `transformers serve` with continuous batching?

# %%
prediction_engine = None  # ← "fewer", "about as many" or "more"

# %% tags=["nbval-ignore-output"]
try:
    llama = serve.LlamaCppServer().start()
except serve.ServeError as e:  # Binder has no llama.cpp: it compiles for minutes
    llama, llama_runs = None, None
    print(e)
if llama is not None:
    llama_runs = serve.sweep_load(llama, **loads)
    llama_peak = llama.peak_rss_bytes()
    llama.stop()
    for r in llama_runs:
        s = r.summary()
        print(f"llama.cpp, {r.load_label}: {s.output_tokens_per_s:.1f} tokens/s, TTFT p50 "
              f"{s.ttft_s['p50'] * 1e3:.0f} ms, TPOT p50 {s.tpot_s['p50'] * 1e3:.0f} ms")
    print(f"llama.cpp's server peak {llama_peak / 2**20:,.0f} MiB")

# %% tags=["nbval-ignore-output"]
feedback = None  # the check's verdict, shown at the end of the cell
if llama_runs is not None:
    engine_ratio = serve.throughput_ratio(llama_runs[-1], batched[-1])  # 8 streams
    measured_engine = serve.band(engine_ratio, [0.8, 1.25], ["fewer", "about as many", "more"])
    print(f"at 8 streams llama.cpp made ×{engine_ratio.median:.2f} ({engine_ratio.low:.2f}–"
          f"{engine_ratio.high:.2f}) the tokens per second of continuous batching: "
          f"{measured_engine}")
    feedback = viz.compare_prediction(prediction_engine, measured_engine,
                                      options=["fewer", "about as many", "more"],
                                      hint="one reads 6 times fewer bytes per step, the other "
                                           "makes 8 tokens per step: compare its 1-stream speed "
                                           "with the batch's")
else:
    print("llama.cpp is not installed here: this check needs it (see the message above)")
feedback

# %% [markdown]
# Up is each user's speed (tokens per second while their answer streams), across is
# everybody's; a point per load, a line per engine and setting. Fewer bytes per token move a
# line up, batching moves it right (more users, each slower).

# %% tags=["nbval-ignore-output"]
views.pareto_figure([alone, batched] + ([llama_runs] if llama_runs else []))

# %% [markdown]
# ## Understand it: where the extra wait went
#
# Gaps between tokens at 8 streams, both transformers servers (one at a time, the gaps are a lone
# request's; the wait is in the queue, before the first token):

# %% tags=["nbval-ignore-output"]
views.itl_distribution_figure([alone[-1], batched[-1]])

# %% [markdown]
# The server timed every pass, and a gap ends with the pass that made its later token, so
# `itl_breakdown()` splits the mean ITL into three parts that sum to it:
#
# - **decode passes**: the gap when a pass only decodes (a pass of 8 carries 8 tokens);
# - **passes with prompt chunks**: their share of the gaps × their extra length (every
#   decoding request waits for them);
# - **on the way to the client**: HTTP streaming to this notebook, which shares the CPU with the
#   server. Only the delay's growth counts (a steady delay adds nothing to the gaps), so it can
#   dip slightly below zero.
#
# ✏️ **Predict.** Which part of the mean ITL grew the most from 1 stream to 8?

# %%
prediction_where = None  # ← one of serve.ITL_PARTS, copied exactly (the three parts above)

# %% tags=["nbval-ignore-output"]
alone_1, crowd = batched[0].itl_breakdown(), batched[-1].itl_breakdown()
print(alone_1, crowd, sep="\n")
growth = crowd.growth_from(alone_1)  # seconds per part; they sum to the mean ITL's growth
grew_most = max(growth, key=growth.get)
print("from 1 stream to 8: " + ", ".join(f"{k} {round(v * 1e3, 1) + 0:+.1f} ms"  # no -0.0
                                         for k, v in growth.items()))

# %%
viz.compare_prediction(prediction_where, grew_most, options=list(serve.ITL_PARTS),
                       hint="count passes: when 8 requests arrive at once, how many passes can "
                            "carry their prompts, and how many decode their answers?")

# %% [markdown]
# Below: the server's decode pass of 8 against a pass of 1 (lesson 06's "wait per token" at
# B=8), what its longer contexts add (lessons 05–06's counts), and each side's CPU use:

# %% tags=["nbval-ignore-output"]
pass_ratio = crowd.decode_gap / alone_1.decode_gap  # medians, and the worst case of the spreads
b = round(crowd.decode_batch)
ctx = round(statistics.mean(e.cached_tokens + 1 for s in batched[-1].schedule.steps
                            if all(x.phase == "decode" for x in s.batch) for e in s.batch))
here, l06 = perf.decode_cost(spec, ctx, b), perf.decode_cost(spec, 16, b)  # ctx: per request
print(f"a decode pass of {b} requests took ×{pass_ratio.median:.2f} ({pass_ratio.low:.2f}–"
      f"{pass_ratio.high:.2f}×) a pass of 1, inside the server")
print(f"{ctx} tokens of context per request: {here.kv_bytes / 1e6:.0f} MB of keys and values "
      f"per pass, ×{here.bytes / l06.bytes:.2f} the bytes and ×{here.flops / l06.flops:.2f} "
      f"the FLOPs of lesson 06's pass of {b} (counted, not timed)")
print(f"cores kept busy: this notebook {crowd.client_cores:.2f}, the server "
      f"{crowd.server_cores:.2f}, of {os.cpu_count()}")

# %% [markdown]
# Where the server's pass ratio grew more than lesson 06's, three things differ: **the
# context** (prompts against lesson 06's 16 tokens, counted above); **the code path** (one flat
# sequence of tokens, attention reading keys and values through page tables); **the process**
# (threads streaming tokens over HTTP on this notebook's cores).
#
# Measured: each server, run alone, fits with this notebook in a Binder session (about 2 GB):

# %% tags=["nbval-ignore-output"]
kernel_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
peaks = {"continuous batching": server_peak, "one at a time": single_peak}
if llama_runs is not None:
    peaks["llama.cpp"] = llama_peak
total = kernel_peak + max(peaks.values())  # one server ran at a time
print(f"kernel peak {kernel_peak / 2**20:,.0f} MiB; server peaks: "
      + ", ".join(f"{k} {v / 2**20:,.0f} MiB" for k, v in peaks.items()))
print(f"together at most {total / 2**20:,.0f} MiB: "
      f"{'within' if total < 2e9 else 'over'} 2 GB")

# %% [markdown]
# ## Understand it: lesson 06's step, the engine's pass, the server's pass
#
# With both servers stopped, this notebook can time lesson 06's static decode loop and
# transformers' continuous-batching engine (the server's code path without HTTP) at the
# server's context: 8 copies of such a prompt, each against a batch of 1.
#
# ✏️ **Predict.** Which multiplies the pass of 8 more: "the code path" (the engine here ÷
# lesson 06's loop) or "the process" (the HTTP server ÷ the engine here)?

# %%
prediction_path = None  # ← "the code path" or "the process"

# %% tags=["nbval-ignore-output"]
lm = viz.load_model()
ordinary = perf.batch_size_sweep(lm, [1, 8], prompt_tokens=ctx, max_new_tokens=8,
                                 progress=False)
step = dict(zip(ordinary.column("batch_size"), ordinary.spread("decode_step_s")))
ids = lm.tokenizer(perf.prompt_of_length(lm.tokenizer, ctx))["input_ids"]
engine, schedules = {}, {}
for b in (1, 8):  # the engine in this process: b copies of the prompt, decoded together
    schedules[b], _ = serve.record_schedule(lm.model, [list(ids)] * b, max_new_tokens=12,
                                            max_batch_tokens=128, num_blocks=64)
    engine[b] = serve.decode_pass_time(schedules[b], b)
ratios = {"lesson 06's decode loop, this notebook": step[8] / step[1],
          "the continuous-batching engine, this notebook": engine[8] / engine[1],
          "the HTTP server (measured above)": pass_ratio}
print(f"a pass of 8 ÷ a pass of 1, {ctx} tokens of context each:")
for where, r in ratios.items():
    print(f"  {where:>47}: ×{r.median:.2f} ({r.low:.2f}–{r.high:.2f})")
path, process = engine[8] / engine[1] / (step[8] / step[1]), pass_ratio / (engine[8] / engine[1])
print(f"the code path multiplies it by ×{path.median:.2f} ({path.low:.2f}–{path.high:.2f}), "
      f"the process by ×{process.median:.2f} ({process.low:.2f}–{process.high:.2f})")

# %%
larger = (viz.Band(path, viz.TOO_CLOSE, ("the code path", "the process"))
          if path.overlaps(process) else
          viz.Band(path, "the code path" if path.median > process.median else "the process"))
viz.compare_prediction(prediction_path, larger, options=["the code path", "the process"],
                       hint="the process: do the server's HTTP threads take a core from the "
                            "model's two threads on this machine? The code path: attention "
                            "through page tables over one flat sequence, against lesson 06's "
                            "static batch (where spreads overlap, either answer counts)")

# %% [markdown]
# Which adds more varies by machine and run: the code path where the engine's flat sequence
# costs more than lesson 06's static batch; the process where the HTTP server's threads compete
# with the model for two cores; neither where spreads overlap near ×1.0. A factor clearly
# below ×1 would mean a pass of 1 already carried a cost that a pass of 8 shares (such as the
# engine's scheduling work). Either way the 8-stream ITL is accounted for: lesson 06's step times
# the code path and the process, plus prompt chunks and the way to the client.

# %% [markdown]
# ### Your turn: the scheduler at the load you choose
#
# The slider sends the engine (the server's scheduler without HTTP) that many copies of the
# prompt above at once, 12 tokens out each, and draws its passes like the chart at the top (a
# few seconds each; 8 is already recorded). With 64 pages of 16 tokens, how many such requests
# fit the pool at once, and what do the others do meanwhile?

# %% tags=["nbval-ignore-output"]
import ipywidgets as widgets

from viz.views import LinkedView


def scheduler_at(values):
    b = values["requests"]
    if b not in schedules:  # a real run of the scheduler, in this process
        schedules[b], _ = serve.record_schedule(lm.model, [list(ids)] * b, max_new_tokens=12,
                                                max_batch_tokens=128, num_blocks=64)
    return views.schedule_figure(schedules[b])


requests_slider = widgets.SelectionSlider(options=[1, 2, 4, 8, 12, 16], value=8,
                                          description="requests", continuous_update=False)
LinkedView({"requests": requests_slider}, [requests_slider], scheduler_at)

# %% [markdown]
# ## Where next
#
# [10 · Load-testing a server →](10_load_testing.ipynb): random arrivals, a rate sweep past
# what the server can take, and what a token costs.
# [11 · Long contexts](11_long_context.ipynb) shows shared pages like these saving the prefill
# of what prompts share.

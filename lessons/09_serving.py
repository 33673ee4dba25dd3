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
# # 09 · Serving many users
#
# In [06 · Batching](06_batching.ipynb) a batch was B copies of one prompt that started
# together and ended together, and [08 · The memory wall](08_memory_wall.ipynb) showed what
# limits each decode step. A real server sees something else: people send requests whenever
# they like, with short and long prompts, asking for short and long answers. A request should
# not wait for a batch to fill up, nor for the longest answer in it to end.
#
# This lesson starts a real server on your machine — `transformers serve`, the same program
# you would run yourself, with the course model — and talks to it the way any application
# does: over HTTP, one token at a time as it streams in. You will time requests as their
# users see them, watch the server's scheduler decide, step by step, who goes into each
# forward pass (**continuous batching**), and see where each request's KV cache lives
# (**paged attention**).

# %%
import resource

import viz
from viz import serve, views

# %% [markdown]
# `serve.serve(...)` starts the server on `127.0.0.1` (this machine only), offline, waits until
# it answers, and sends it one warm-up request. `record=True` asks it to also write down its
# own timestamps and every step of its scheduler (about ten seconds to start on the 2-core
# machine the course was made on).

# %% tags=["nbval-ignore-output"]
server = serve.serve(continuous_batching=True, record=True)
print(server)
print(f"server resident memory: {server.rss_bytes() / 2**20:,.0f} MiB")

# %% [markdown]
# ## See it: one request, as its user sees it
#
# `record_request` sends one chat message and notes the moment each piece of the answer
# arrives. (It works with any server that speaks the OpenAI API; the end of the lesson points
# it at others.)

# %% tags=["nbval-ignore-output"]
one = serve.record_request(server, "What is the capital of France?", max_tokens=16)
print(one.summary())

# %% [markdown]
# Four numbers describe how a streamed answer feels. They are defined once, in
# `viz.serve.metrics`, as vLLM's and GuideLLM's benchmarks define them:
#
# - **TTFT**, time to first token: from sending the request to the first piece of text. It
#   holds the network, any queue, and the prefill of lesson 03.
# - **ITL**, inter-token latency: each gap between two pieces of text.
# - **TPOT**, time per output token: (E2E − TTFT) ÷ (tokens − 1), the average pace after the
#   first token — lesson 04's decode step, seen from outside.
# - **E2E**, end to end: from sending to the last piece.

# %% [markdown]
# ## See it: eight requests, four at a time
#
# `run_load` keeps 4 requests in flight (when one ends, the next starts) until 8 are done.
# The prompts come from a small set shipped with the course, from 36 to 270 tokens long,
# each with its own answer limit (capped here at 24 tokens to keep the lesson short).

# %% tags=["nbval-ignore-output"]
run = serve.run_load(server, concurrency=4, n_requests=8, max_tokens=24, max_duration_s=60,
                     progress=False)
print(run.summary())

# %% [markdown]
# One row per request: **grey** while it waits (on the network, for tokenization, for room
# in the server), **blue** for its prefill, **orange** while it decodes, and a tick for each
# piece of text that reached the client. Look for ticks of different rows that line up: one
# forward pass produced a token for each of them at the same moment.

# %% tags=["nbval-ignore-output"]
views.request_timeline_figure(run)

# %% [markdown]
# ## Understand it: what static batching wastes
#
# Lesson 06's batching is *static*: a batch starts together, every prompt is padded to the
# longest one, and every row stays in the batch until the longest answer is done. With the
# prompt and answer lengths these 8 requests really had, 4 at a time:

# %% tags=["nbval-ignore-output"]
waste = run.static_batching_waste(batch_size=4)
print(f"useful token slots {waste.useful_slots}, padding {waste.padding_slots}, "
      f"finished rows waiting for the longest answer {waste.idle_slots}")
print(f"static batching would waste {waste.wasted_fraction:.0%} of its slots")

# %% [markdown]
# **Continuous batching** wastes neither kind. Before every forward pass the scheduler looks
# at who is there: a request that just finished leaves at once, a waiting one joins as soon
# as there is room, and prompts are packed one after another with no padding. Two budgets
# limit each pass: a number of tokens (the dashed line below) and free KV-cache pages. A
# prompt longer than what is left of the token budget is split into chunks over several
# passes (**chunked prefill**), so decoding requests never wait for a whole long prompt: they
# go on getting a token every pass, though a pass that carries a chunk is a slower one (it
# shows in the ITL's p99 above).
#
# The server recorded every pass. Columns are passes, rows are requests: light blue is a chunk
# of a prompt, blue the prompt's last chunk (it yields the first token), orange one decode
# token, grey waiting. Above: tokens per pass against the budget, and the free pages.

# %% tags=["nbval-ignore-output"]
names = views.request_names(run)
views.schedule_figure(run.schedule, names)

# %% [markdown]
# The same record in words, the first passes of the run: who is in each one, and how many
# tokens each brings.

# %% tags=["nbval-ignore-output"]
for step in run.schedule.steps[:10]:
    parts = [f"{names.get(e.request_id, '?')} {e.phase} {e.query_tokens}" for e in step.batch]
    waiting = f"  | waiting: {len(step.waiting)}" if step.waiting else ""
    print(f"pass {step.index:>2}: " + ", ".join(parts) + waiting)

# %% [markdown]
# ## Understand it: the KV cache in pages
#
# Every running request needs its keys and values (lesson 05) for every token so far, and
# answers grow one token at a time to a length nobody knows in advance. Reserving one
# contiguous block per request for its longest possible length (the model's whole context,
# 8,192 tokens here, unless the server is told a smaller limit) wastes most of it. Instead,
# the cache is cut into **pages** of 16 tokens; a request gets a page when it needs one, and
# keeps a **page table** saying which pages hold its tokens, in order. Attention reads the
# pages through that table. Pages are freed the moment a request ends.
#
# Move the slider: each square is a page, coloured by the request holding it, grey when
# free. A ◆ marks a page that several requests share: every prompt here begins with the same
# system message from the chat template, so its first pages are computed once and reused
# (in the list of passes above, a prompt that brings fewer tokens than it has found the rest
# already there).

# %% tags=["nbval-ignore-output"]
views.page_table_figure(run.schedule, names)

# %% [markdown]
# At the busiest pass of the run, what did pages cost, against reserving for each request
# room for its whole prompt plus its answer limit?

# %% tags=["nbval-ignore-output"]
steps = range(len(run.schedule.steps))
busiest = max(steps, key=lambda i: views.page_table_data(run.schedule, i)["used_pages"])
pages = views.page_table_data(run.schedule, busiest)
limit = {r.request_id: r.max_tokens for r in run.requests}
reserved = sum(run.schedule.prompt_tokens[rid] + limit[rid] for rid in pages["tokens"])
entries = pages["slots"] // run.schedule.page_size  # pages in the requests' page tables
print(f"pass {busiest}: {len(pages['tokens'])} requests hold {sum(pages['tokens'].values())} "
      f"tokens through {entries} page-table entries ({pages['slots']} slots, "
      f"{pages['wasted_slots']} of them unused at the ends of pages)")
print(f"those entries point to {pages['used_pages']} distinct pages: a page of a shared "
      f"prefix is listed by several requests but stored once ({len(pages['shared'])} here)")
print(f"reserving each request's prompt + answer limit would hold {reserved} token slots")

# %% [markdown]
# What pages cost: the last page of each request is partly empty (at most 15 slots), the
# attention kernel must gather keys and values through the page table instead of reading
# one block, and the whole pool is reserved when the server starts — here:

# %%
kv = run.schedule.total_pages * run.schedule.bytes_per_page
print(f"{run.schedule.total_pages} pages of {run.schedule.page_size} tokens, "
      f"{run.schedule.bytes_per_page:,} bytes each: {kv / 1e6:.1f} MB of KV cache")
print(f"room for {run.schedule.total_pages * run.schedule.page_size:,} tokens in all")

# %% [markdown]
# ## Measure it: one at a time against continuous batching
#
# Now the comparison that matters to whoever runs a server. The same requests go to the
# server at 1, 4 and 8 streams, and then to a second server that serves **one request at a
# time** (`continuous_batching=False`: the others queue).
#
# ✏️ **Predict before you measure.** At 8 streams, how many times more tokens per second (all
# requests together) will continuous batching make than the one-at-a-time server?

# %%
prediction_ratio = None  # ← "under 1.5×", "1.5× to 4×" or "more than 4×"

# %% tags=["nbval-ignore-output"]
loads = dict(concurrencies=[1, 4, 8], requests_per_stream=1, min_requests=1, max_tokens=12,
             max_duration_s=60, progress=False)
batched = serve.sweep_load(server, **loads)
for r in batched:
    print(f"continuous batching, {r.load_label}: {r.summary().output_tokens_per_s:.1f} tokens/s")

# %% [markdown]
# Then requests that arrive at random moments, 2 per second on average (a Poisson process:
# the same seed gives the same arrival times), judged by a **service-level objective**: the
# first token within 1 s, then a token at least every 150 ms on average. **Goodput** counts
# the requests per second that met it (DistServe's measure).

# %% tags=["nbval-ignore-output"]
slo = serve.SLO(ttft_s=1.0, tpot_s=0.150)
arrivals = dict(rate=2.0, n_requests=8, max_tokens=12, seed=1, slo=slo, max_duration_s=60,
                progress=False)
random_batched = serve.run_load(server, **arrivals)
print(random_batched.summary())
server_peak = server.peak_rss_bytes()
server.stop()

# %% [markdown]
# ✏️ **Predict again.** With the same 8 random arrivals, how many of them will the
# one-at-a-time server serve within the objective, compared with continuous batching?

# %%
prediction_goodput = None  # ← "fewer", "about as many" or "more"

# %% [markdown]
# The one-at-a-time server, with exactly the same loads (the first server was stopped to
# stay within a Binder session's 2 GB):

# %% tags=["nbval-ignore-output"]
single = serve.serve(continuous_batching=False, record=True)
alone = serve.sweep_load(single, **loads)
random_alone = serve.run_load(single, **arrivals)
single_peak = single.peak_rss_bytes()
single.stop()
print(random_alone.summary())

# %% [markdown]
# Throughput against latency: each point is one load; up is everybody's tokens per second,
# across is the time each request waits per token.

# %% tags=["nbval-ignore-output"]
views.serving_tradeoff_figure(alone + batched)

# %% tags=["nbval-ignore-output"]
ratio = batched[-1].summary().output_tokens_per_s / alone[-1].summary().output_tokens_per_s
measured_ratio = "under 1.5×" if ratio < 1.5 else "1.5× to 4×" if ratio <= 4 else "more than 4×"
print(f"at 8 streams continuous batching made {ratio:.1f}× the tokens per second")
viz.compare_prediction(prediction_ratio, measured_ratio,
                       options=["under 1.5×", "1.5× to 4×", "more than 4×"],
                       hint="one-at-a-time decodes one request per weight read; lesson 06")

# %% [markdown]
# The price is on the other axis. Each request's tokens come more slowly with continuous
# batching, because each forward pass carries the work of everyone in the batch. The gaps
# between tokens at 8 streams, both servers:

# %% tags=["nbval-ignore-output"]
views.itl_distribution_figure([alone[-1], batched[-1]])

# %% [markdown]
# And the objective, with random arrivals:

# %% tags=["nbval-ignore-output"]
met = {"one at a time": random_alone.summary().n_met_slo,
       "continuous batching": random_batched.summary().n_met_slo}
print(f"met the objective ({slo}): {met}")
gap = met["one at a time"] - met["continuous batching"]  # of 8 requests
measured_goodput = "about as many" if abs(gap) <= 1 else "more" if gap > 0 else "fewer"
viz.compare_prediction(prediction_goodput, measured_goodput,
                       options=["fewer", "about as many", "more"],
                       hint="the objective has two limits: which one does queueing break, "
                            "and which one does a crowded pass break? (within 1 of 8 counts "
                            "as about as many)")

# %% [markdown]
# A server can miss the objective in two ways. One at a time, requests queue behind each
# other, so a request's TTFT grows with its place in the queue; with continuous batching,
# every pass carries the whole batch, so each request's TPOT grows instead. Which limit did
# each server's requests break, on your machine? (A fast enough machine meets both with
# either server; a slow one can miss both.)

# %% tags=["nbval-ignore-output"]
for name, r in [("one at a time", random_alone), ("continuous batching", random_batched)]:
    done = [q for q in r.requests if q.ok]
    late = sum(q.ttft_s > slo.ttft_s for q in done)
    slow = sum(q.tpot_s is not None and q.tpot_s > slo.tpot_s for q in done)
    print(f"{name:>20}: {len(done)} completed; first token too late {late}, "
          f"tokens too slow {slow}, met both {r.summary().n_met_slo}")

# %% [markdown]
# The one-at-a-time timeline shows the queue: requests wait (grey) behind each other, whatever
# their own size.

# %% tags=["nbval-ignore-output"]
views.request_timeline_figure(random_alone)

# %% [markdown]
# Both servers and this notebook fit in a Binder session (about 2 GB), measured:

# %% tags=["nbval-ignore-output"]
kernel_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
total = kernel_peak + max(server_peak, single_peak)
print(f"kernel peak {kernel_peak / 2**20:,.0f} MiB; server peak {server_peak / 2**20:,.0f} MiB "
      f"(continuous batching), {single_peak / 2**20:,.0f} MiB (one at a time)")
print(f"together at most {total / 2**20:,.0f} MiB: "
      f"{'within' if total < 2e9 else 'over'} 2 GB")

# %% [markdown]
# ## Past one machine
#
# Everything above used one client and one server on your machine. The same client speaks to
# the servers people deploy — vLLM, SGLang, llama.cpp's server, Ollama, TGI — because they
# all offer the same OpenAI-compatible streaming API, and vLLM and SGLang schedule with
# continuous batching over a paged KV cache, as here, with GPU kernels. To measure one, start
# it (on a GPU machine for vLLM and SGLang):
#
# ```bash
# vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --port 8000          # API at http://HOST:8000/v1
# python -m sglang.launch_server --model-path HuggingFaceTB/SmolLM2-135M-Instruct --port 30000
# llama-server -m SmolLM2-135M-Instruct.Q4_1.gguf --port 8080         # llama.cpp, CPU or GPU
# ollama pull smollm2:135m && ollama serve                             # API at http://HOST:11434/v1
# ```
#
# and point this lesson's code at it. viz refuses machines other than this one unless you
# say so with `allow_remote=True`:
#
# ```python
# runs = serve.sweep_load("http://gpu-box:8000/v1", allow_remote=True,
#                         concurrencies=[1, 8, 64], requests_per_stream=4)
# views.serving_tradeoff_figure(runs)
# ```
#
# or from a terminal: `python -m viz load http://gpu-box:8000/v1 --allow-remote
# --concurrency 64 --n-requests 256 -o vllm-64.json`. No GPU was available where this course
# was written, so it ships no measurements from one: the commands are shown, not run. Your
# own numbers, saved with `-o`, are the reference.

# %% [markdown]
# ## Check yourself
#
# Your two predictions were checked where you made them. Three more: the first two apply a
# definition to numbers printed just above them (work them out by hand before you run the
# answer), the third predicts a measurement.
#
# **1.** One request of the 4-stream run, as measured:

# %% tags=["nbval-ignore-output"]
r = next(x for x in run.requests if x.ok and x.n_output_tokens > 1)
print(f"{r.prompt_name}: TTFT {r.ttft_s * 1000:.1f} ms, E2E {r.e2e_s * 1000:.1f} ms, "
      f"{r.n_output_tokens} tokens")

# %% [markdown]
# ✏️ What was its TPOT (the mean time between its tokens after the first), in ms?

# %%
prediction_tpot = None  # ← replace None with milliseconds, then run the next two cells

# %% tags=["nbval-ignore-output"]
measured_tpot = r.tpot_s * 1000
print(f"TPOT {measured_tpot:.1f} ms")

# %%
viz.compare_prediction(prediction_tpot, measured_tpot, unit="ms", rel_tol=0.02,
                       hint="the first token ends TTFT; the others share what is left of E2E")

# %% [markdown]
# **2.** At one pass of the run, the summary request held this many tokens in the cache:

# %% tags=["nbval-ignore-output"]
held = [(s.index, e) for s in run.schedule.steps for e in s.batch
        if names.get(e.request_id, "").endswith("summary")][-1]
print(f"pass {held[0]}: {held[1].cached_tokens + held[1].query_tokens} tokens")

# %% [markdown]
# ✏️ How many pages of 16 tokens did it hold?

# %%
prediction_pages = None  # ← replace None with a number of pages

# %% tags=["nbval-ignore-output"]
measured_pages = len(held[1].pages)
print(f"pages held: {measured_pages}")

# %%
viz.compare_prediction(prediction_pages, measured_pages, rel_tol=0.01,
                       hint="a page is given out whole, when the first token that needs it comes")

# %% [markdown]
# **3.** With continuous batching, 8 streams share each pass instead of 1. ✏️ How many times
# longer will a request wait between two of its tokens (median ITL, 8 streams ÷ 1 stream)?

# %%
prediction_itl = None  # ← "under 2×", "2× to 6×" or "more than 6×"

# %% tags=["nbval-ignore-output"]
itl_ratio = batched[-1].summary().itl_s["p50"] / batched[0].summary().itl_s["p50"]
measured_itl = "under 2×" if itl_ratio < 2 else "2× to 6×" if itl_ratio <= 6 else "more than 6×"
print(f"median ITL: 1 stream {batched[0].summary().itl_s['p50'] * 1e3:.0f} ms, 8 streams "
      f"{batched[-1].summary().itl_s['p50'] * 1e3:.0f} ms ({itl_ratio:.1f}×)")

# %%
viz.compare_prediction(prediction_itl, measured_itl,
                       options=["under 2×", "2× to 6×", "more than 6×"],
                       hint="8× would mean no gain at all; one weight read gives every request in "
                            "the pass its next token (lesson 06)")

# %% [markdown]
# ## Where next
#
# This is the last lesson of the course. From here: [06 · Batching](06_batching.ipynb) and
# [08 · The memory wall](08_memory_wall.ipynb) explain what each forward pass of a server
# costs; the `viz.serve` functions measure any OpenAI-compatible server you can reach.

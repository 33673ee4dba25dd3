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
# forward pass (**continuous batching**), see where each request's KV cache lives
# (**paged attention**), and measure what serving many at once buys and costs against serving
# one at a time. [10 · Load-testing a server](10_load_testing.ipynb) then loads it the way
# engineers do.

# %%
import os
import resource
import statistics
import time

import viz
from viz import perf, serve, views

# %% [markdown]
# `serve.serve(...)` starts the server on `127.0.0.1` (this machine only), offline, waits until
# it answers, and sends it one warm-up request. `record=True` asks it to also write down its
# own timestamps and every step of its scheduler (it takes some seconds: the cell prints how
# many).

# %% tags=["nbval-ignore-output"]
began = time.perf_counter()
server = serve.serve(continuous_batching=True, record=True)
print(server)
print(f"ready after {time.perf_counter() - began:.1f} s; "
      f"server resident memory: {server.rss_bytes() / 2**20:,.0f} MiB")

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
#
# A run's summary also counts the requests that met an objective (a first token within 1 s,
# then a token every 150 ms at most, on average): lesson 10 explains that count, **goodput**,
# and sets the objective from your own machine's figures.

# %% [markdown]
# ## See it: a workload, stated the way engineers state it
#
# Whoever load-tests a server says first what the load is: "128 tokens in, 24 out, 4 streams"
# — prompts of about 128 tokens, answers of 24, and 4 users each sending their next request as
# soon as the last one is answered. `serve.Workload.synthetic` builds such prompts from real
# text (lesson 01's paragraph) with the model's own tokenizer, to the exact token; here their
# lengths vary around 128 (a normal distribution, seeded), as real prompts do.
#
# ✏️ **Change the workload** — the prompt length, the answer length, the streams — and run
# the lesson from here again: the sections below show where it meets the server's limits.

# %%
PROMPT_TOKENS, OUTPUT_TOKENS, STREAMS = 128, 24, 4  # ← tokens in, tokens out, streams
workload = serve.Workload.synthetic(
    prompt_tokens=serve.Lengths.normal(PROMPT_TOKENS, PROMPT_TOKENS // 3),
    output_tokens=OUTPUT_TOKENS)
print(f"workload: {workload}, {STREAMS} streams")

# %% [markdown]
# `run_load` keeps that many requests in flight (when one ends, the next starts) until twice as
# many are done. The server counts each prompt with the chat template around it (~30 tokens
# more). It sends each answer's length as `max_tokens`; `transformers serve` accepts nothing
# that would hold the model to it, so an answer may end earlier, at the model's end of text —
# the summary says how many did.

# %% tags=["nbval-ignore-output"]
run = serve.run_load(server, concurrency=STREAMS, n_requests=2 * STREAMS, workload=workload,
                     max_duration_s=60, progress=False)
print(run.summary())
lengths = [r.prompt_tokens for r in run.requests if r.prompt_tokens]
print(f"prompts of {min(lengths)} to {max(lengths)} tokens (the chat template included)")

# %% [markdown]
# The same eight requests, every metric side by side. Benchmarks name these differently, and
# numbers that look alike can mean different things: GuideLLM's "time per output token"
# includes the wait for the first token (the *normalized* column here), its "inter-token
# latency" is the TPOT column, and vLLM's ITL is every gap pooled over all requests.
# A short answer with a long prompt shows it best: its normalized TPOT is far above its TPOT.

# %% tags=["nbval-ignore-output"]
print(serve.request_metrics_text(run.requests))

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
# prompt and answer lengths these requests really had, as many at a time as there were
# streams:

# %% tags=["nbval-ignore-output"]
waste = run.static_batching_waste(batch_size=STREAMS)
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
# go on getting a token every pass, though a pass that carries a chunk takes longer (timed
# later in the lesson).
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
# answers grow one token at a time to a length nobody knows in advance. A server could
# reserve one contiguous block per request for its longest possible length: the model's whole
# context, 8,192 tokens here, unless the server is told a smaller limit. Instead, the cache is
# cut into **pages** of 16 tokens; a request gets a page when it needs one, and keeps a
# **page table** saying which pages hold its tokens, in order. Attention reads the pages
# through that table. Pages are freed the moment a request ends.
#
# Move the slider: each square is a page, coloured by the request holding it, grey when
# free. A ◆ marks a page that several requests share: every prompt here begins with the same
# system message from the chat template, so its first pages are computed once and reused
# (in the list of passes above, a prompt that brings fewer tokens than it has found the rest
# already there).

# %% tags=["nbval-ignore-output"]
views.page_table_figure(run.schedule, names)

# %% [markdown]
# At the busiest pass of the run, how many token slots did the pages hold, against a block
# per request of its whole context, or of its prompt plus its answer limit? Each request
# counts its own tokens, the shared prefix included, so its page table lists a shared page as
# a block would hold its own copy: the three rows compare alike. In memory, a shared page is
# stored once (the first line counts the distinct pages too).

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
# A block of the whole context leaves almost all of it unused: these requests hold a few
# hundred tokens at most, against 8,192. A block of prompt + answer limit comes as close
# to the pages as the answers come to their limits (the last line counts those that reached
# theirs): a server that knows only generous limits, or none, gains the most from pages. What
# pages cost: the last page of each request is partly empty (at most 15 slots; larger pages
# make shorter tables but leave more empty), the attention kernel must gather keys and values
# through the page table instead of reading one block, and the whole pool is reserved when
# the server starts — here:

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
# Two budgets limit every pass: its tokens (128 here) and the KV pool (64 pages of 16
# tokens). A prompt longer than what is left of a pass's budget waits for the next pass, in
# part or whole: with the workload as it ships, a prompt is ~155 tokens with its template,
# more than a whole pass. And every request holds its prompt and its answer in pages:
# 4 × (155 + 24) tokens fit the pool of 1,024; 8 streams of 256-token prompts would not, and
# requests would then wait for pages while the pass still has room.
#
# ✏️ **Predict.** For the workload you set above, which limit held requests back in more
# passes: "the step budget", "the KV pool", or "neither"?

# %%
prediction_limit = None  # ← one of serve.LIMITS: "the step budget", "the KV pool", "neither"

# %% tags=["nbval-ignore-output"]
held_back = serve.limits(run)  # the run's demand, then why requests waited, pass by pass
print(held_back)
viz.compare_prediction(prediction_limit, held_back, options=list(serve.LIMITS),
                       hint="multiply: streams × prompt tokens against the tokens of one pass, "
                            "streams × (prompt + answer) against the pool's tokens")

# %% [markdown]
# Try `PROMPT_TOKENS, OUTPUT_TOKENS, STREAMS = 256, 24, 8` in the workload cell: the pool
# (1,024 tokens) then holds three or four such requests at once, and the others wait for a
# request to end and free its pages, though passes have room. With `32, 24, 2` neither limit
# bites. A server's sizing is a workload decision: `serve.serve(num_pages=...,
# max_batch_tokens=...)` sets both.

# %% [markdown]
# ## Measure it: one at a time against continuous batching
#
# Now the comparison that matters to whoever runs a server. One workload, 64 tokens in and 12
# out (short answers keep the lesson short), goes to the server at 1, 4 and 8 streams, and then
# to a second server that serves **one request at a time** (`continuous_batching=False`: the
# others queue).
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
loads = dict(concurrencies=[1, 4, 8], requests_per_stream=1, min_requests=1, workload=short,
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
                       hint="start from what 4 streams did to a request's gaps (the first run, "
                            "against the one request alone), then scale by how "
                            "lesson 06's decode step grew from B=4 to B=8")

# %% [markdown]
# The one-at-a-time server, with exactly the same loads (the first server is stopped first, to
# stay within a Binder session's 2 GB):

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
# A run's tokens per second is one figure; its spread below comes from its requests' paces
# (the middle half of each server's TPOTs), and where it reaches across a boundary of the
# three answers, either side counts.

# %% tags=["nbval-ignore-output"]
ratio = serve.throughput_ratio(batched[-1], alone[-1])  # 8 streams: batched ÷ one at a time
measured_ratio = serve.band(ratio, [1.5, 4], ["under 1.5×", "1.5× to 4×", "more than 4×"])
print(f"at 8 streams continuous batching made ×{ratio.median:.1f} ({ratio.low:.1f}–"
      f"{ratio.high:.1f}) the tokens per second: {measured_ratio}")
viz.compare_prediction(prediction_ratio, measured_ratio,
                       options=["under 1.5×", "1.5× to 4×", "more than 4×"],
                       hint="one-at-a-time decodes one request per weight read; lesson 06")

# %% [markdown]
# ## Measure it: a second engine, llama.cpp
#
# A different engine makes the other trade. llama.cpp's server (the `llama-cpp-python`
# package) serves the model's own 4-bit file, the GGUF this course's model comes in (98 MB of
# weights against 538 MB in float32), with kernels that compute on the 4-bit weights directly;
# its Python server runs **one request at a time**, as the second `transformers serve` did.
# The same three loads:
#
# ✏️ **Predict.** At 8 streams, will llama.cpp (one at a time, 4-bit weights) make "fewer",
# "about as many" or "more" tokens per second than `transformers serve` with continuous
# batching (8 at a time, float32)?

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
if llama_runs is not None:
    engine_ratio = serve.throughput_ratio(llama_runs[-1], batched[-1])  # 8 streams
    measured_engine = serve.band(engine_ratio, [0.8, 1.25], ["fewer", "about as many", "more"])
    print(f"at 8 streams llama.cpp made ×{engine_ratio.median:.2f} ({engine_ratio.low:.2f}–"
          f"{engine_ratio.high:.2f}) the tokens per second of continuous batching: "
          f"{measured_engine}")
    viz.compare_prediction(prediction_engine, measured_engine,
                           options=["fewer", "about as many", "more"],
                           hint="one reads 6 times fewer bytes per step, the other makes 8 "
                                "tokens per step: compare its 1-stream speed with the batch's")
else:
    print("llama.cpp is not installed here: this check needs it (see the message above)")

# %% [markdown]
# And the trade-off in one picture, as engineers read it: up is each user's speed (tokens per
# second while their answer streams), across is everybody's together, one point per load (the
# 1, 4 and 8 streams above), one line per engine and setting. A line that lies up and to the
# right of another's serves both its users and its owner better. Fewer bytes per token move a
# line up (every user is faster); batching moves it right (more users at once, each slower).

# %% tags=["nbval-ignore-output"]
views.pareto_figure([alone, batched] + ([llama_runs] if llama_runs else []))

# %% [markdown]
# ## Understand it: where the extra wait went
#
# The gaps between tokens at 8 streams, both servers (one at a time, a request's gaps are
# those of a request alone; its wait is in the queue, before its first token):

# %% tags=["nbval-ignore-output"]
views.itl_distribution_figure([alone[-1], batched[-1]])

# %% [markdown]
# Each gap between two tokens of a request ends with the pass that made the later token. The
# server timed every pass and every token, so `itl_breakdown()` takes a run's mean ITL apart
# into three parts that add up to it:
#
# - **decode passes**: the gap when the pass gives every decoding request its next token and
#   nothing else (a pass of 8 carries 8 tokens where a pass of 1 carries one);
# - **passes with prompt chunks**: what passes that also prefill part of a new prompt add
#   (their share of the gaps × how much longer they are), since every decoding request waits
#   for them;
# - **on the way to the client**: each token is streamed out over HTTP and read by this
#   notebook, which shares the CPU with the server. A delay that stays the same adds nothing
#   to the gaps, so only its growth counts (the delay itself is printed beside it); being a
#   difference between two clocks' gaps, it can come out slightly below zero.
#
# A request whose tokens reached the client two in one piece is left out (the first line
# says so).
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
# Lesson 06 timed a batch of 8 too: 8 copies of one prompt, 16 tokens of context, on the
# model's ordinary code path in the notebook's own process; its "wait per token" at B=8
# compares that step with a step of 1. Here is the server's decode pass of 8 against its pass
# of 1, what its requests' longer contexts add by the counts of lessons 05–06, and how busy
# each side kept the CPU during the 8-stream run:

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
# Compare that pass ratio with lesson 06's wait per token at B=8 on your machine. Where the
# server's pass grew more, three things differ from lesson 06:
#
# - **the context**: the server's requests hold their prompts, lesson 06's 16 tokens; the
#   counts above say how many more bytes and FLOPs that makes;
# - **the code path**: continuous batching runs the requests as one flat sequence of tokens,
#   whose attention reads each request's keys and values through its page table;
# - **the process**: the server's other threads stream every token out over HTTP while it
#   computes, on the same cores as this notebook (the last line says how busy each kept them).
#
# Every server (one at a time) and this notebook fit in a Binder session (about 2 GB), measured:

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
# With both servers stopped there is room for the model in this notebook, so the three can be
# timed apart at the server's context: lesson 06's decode loop (a padded batch of 8 copies of
# a prompt that long), then transformers' continuous-batching engine run in this notebook —
# the server's code path without its HTTP process — on 8 copies of it, each against its own
# batch of 1.
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
engine = {}
for b in (1, 8):  # the engine in this process: b copies of the prompt, decoded together
    schedule_b, _ = serve.record_schedule(lm.model, [list(ids)] * b, max_new_tokens=12,
                                          max_batch_tokens=128, num_blocks=64)
    engine[b] = serve.decode_pass_time(schedule_b, b)
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
                       hint="compare each pair's ratio; where their spreads overlap, either "
                            "answer counts")

# %% [markdown]
# Which of the two adds more differs from machine to machine and from run to run: where the
# engine's flat sequence and its page tables cost more than lesson 06's padded batch, the code
# path shows a ratio above ×1; where the HTTP process's own threads compete with the model for
# two cores, the process does. Ratios near ×1.0 with overlapping spreads, as can happen, mean
# neither added much at 8 streams. Your numbers above say which it was on yours. Either way the server's ITL at
# 8 streams is accounted for: the decode passes (lesson 06's step, times what the code path and
# the process add), the passes with prompt chunks, and the way to the client, as printed.

# %% [markdown]
# ## Where next
#
# [10 · Load-testing a server →](10_load_testing.ipynb): requests that arrive at random, a
# rate sweep up to where the server cannot keep up, an objective set from your machine's
# figures, and what a token costs. From there, [11 · Long contexts](11_long_context.ipynb)
# shows pages like the ones shared above saving the prefill of whatever prompts have in common.

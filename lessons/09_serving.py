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
# A run of many requests adds **goodput** (DistServe's measure): the requests per second that
# met a **service-level objective**, a first token within some limit and then a token at least
# that often on average (TTFT ≤ a limit and TPOT ≤ another). Until the objective is set from
# your own machine's figures later on, the summaries use TTFT ≤ 1 s and TPOT ≤ 150 ms.

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
# part or whole: with the workload as it ships, a prompt is ~158 tokens with its template,
# more than a whole pass. And every request holds its prompt and its answer in pages:
# 4 × (158 + 24) tokens fit the pool of 1,024; 8 streams of 256-token prompts would not, and
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
# ## Measure it: a rate sweep, up to where the server can't keep up
#
# Engineers who load-test a server sweep the **request rate**. First one request at a time:
# what a user alone gets. Then every request at once: the most requests per second the server
# can complete. Then requests arriving at random moments (a Poisson process, seeded: the same
# seed gives the same arrival times) at rates between the two, the lowest first, until the
# server **saturates**: requests arrive faster than they finish, so each one waits for the work
# of all those before it, and the wait for a first token grows through the run. The sweep keeps
# that rate and stops (`sweep_rates`' docstring gives the rule).
#
# Serving figures on a shared machine move by tens of percent from one run to the next, so
# each load runs 3 times. A figure below is the median of the 3, and in brackets its
# confidence interval: with 3 runs, the lowest and the highest, which enclose the true median
# with probability 75 %.
#
# The objective now comes from your machine: twice what a request alone takes (the p90 TTFT
# and the p90 TPOT of the one-at-a-time load). A fixed objective would be met by every request
# on a fast machine and by none on a slow one; this one is met alone, so the sweep shows what
# company does to it.
#
# ✏️ **Predict.** As the rate rises, which limit will the continuous-batching server's
# requests break first: the first token too late ("TTFT"), the tokens too slow ("TPOT"),
# "both at once", or "neither"?

# %%
prediction_first_miss = None  # ← one of serve.MISSES: "TTFT", "TPOT", "both at once", "neither"

# %% tags=["nbval-ignore-output"]
sweep = serve.sweep_rates(server, n_requests=4, n_rates=2, repeats=3, workload=short,
                          max_duration_s=60, budget_s=120, progress=False)
print(sweep)

# %% tags=["nbval-ignore-output"]
first_miss = sweep.first_miss()
print(first_miss)
viz.compare_prediction(prediction_first_miss, first_miss, options=list(serve.MISSES),
                       hint="with continuous batching a new request joins the very next pass; "
                            "what does each pass then carry, compared with a pass of one?")

# %% [markdown]
# Then 8 requests arriving at random, 2 per second on average, judged by that objective.
#
# ✏️ **Predict again.** Of these 8 random arrivals, how many will the one-at-a-time server
# serve within the objective, compared with continuous batching?

# %%
prediction_goodput = None  # ← "fewer", "about as many" or "more"

# %% tags=["nbval-ignore-output"]
slo = sweep.slo  # twice a request alone: derived from the sweep's one-at-a-time load
arrivals = dict(rate=2.0, n_requests=8, workload=short, seed=1, slo=slo, max_duration_s=60,
                progress=False)
random_batched = serve.run_load(server, **arrivals)
print(random_batched.summary())
server_peak = server.peak_rss_bytes()
server.stop()

# %% [markdown]
# The one-at-a-time server, with exactly the same loads (the first server was stopped to
# stay within a Binder session's 2 GB):

# %% tags=["nbval-ignore-output"]
single = serve.serve(continuous_batching=False, record=True)
alone = serve.sweep_load(single, **loads)
random_alone = serve.run_load(single, **arrivals)
single_sweep = serve.sweep_rates(single, n_requests=4, n_rates=1, workload=short, slo=slo,
                                 max_duration_s=60, budget_s=60, progress=False)
single_peak = single.peak_rss_bytes()
single.stop()
print(random_alone.summary())
print(single_sweep)

# %% [markdown]
# Both sweeps on one chart, against the requests per second each load completed. Where the
# solid goodput line leaves the dotted throughput line, requests start to miss the objective;
# ✕ marks a saturated rate. (The one-at-a-time sweep ran each load once: it has no bars.)

# %% tags=["nbval-ignore-output"]
views.rate_sweep_figure([sweep, single_sweep])

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
# every pass carries the whole batch, so each request's TPOT can grow instead. Which limit did
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
# ## Measure it: what a token costs
#
# Whoever runs a server pays for the machine by the hour, whether it computes or waits. Shared
# over the tokens it makes in that hour, a token costs
#
#     $ per million tokens = price per hour ÷ (tokens per second × 3,600) × 1,000,000
#
# The price per hour is yours to type: what your machine costs you. `perf.EXAMPLE_PRICES` holds
# two examples to start from, with where they come from — examples, not today's prices.

# %%
price = perf.EXAMPLE_PRICES["cpu-vm"].per_hour  # ← type your machine's $ per hour instead
for name, example in perf.EXAMPLE_PRICES.items():
    print(f"{name}: ${example.per_hour:.2f} an hour for {example.machine} "
          f"(an example: {example.source}; {example.as_of})")

# %% [markdown]
# Providers price a prompt's tokens (**input**) apart from the answer's (**output**). The
# server recorded every pass, so the two can be timed apart: a pass that carried prompt chunks
# and nothing else computed a whole prompt at once (lesson 03), while each pass of the answer
# made one token per request (lesson 04). The output price below is *all-in*: the run's every
# second — prefills, idle moments, HTTP — shared over its answers' tokens.
#
# ✏️ **Predict.** At 1 stream, how many times cheaper than an output token will an input token
# be on this server?

# %%
prediction_input = None  # ← "under 10×", "10× to 100×" or "more than 100×"

# %% tags=["nbval-ignore-output"]
bill = perf.cost(batched, price)  # the continuous-batching runs at 1, 4 and 8 streams
print(bill)

# %% tags=["nbval-ignore-output"]
one = bill.rows[0]  # 1 stream
cheaper = one.output_per_mtok / one.input_per_mtok  # medians, and the worst case of spreads
measured_input = viz.band(cheaper, [10, 100], ["under 10×", "10× to 100×", "more than 100×"])
print(f"at 1 stream an input token cost ×{cheaper.median:.0f} ({cheaper.low:.0f}–"
      f"{cheaper.high:.0f}) less than an output token: {measured_input}")
viz.compare_prediction(prediction_input, measured_input,
                       options=["under 10×", "10× to 100×", "more than 100×"],
                       hint="compare the prefill speed of lesson 03 (prompt tokens per second) "
                            "with the tokens per second a stream decodes")

# %% [markdown]
# Batching's bargain, priced. Above: $ per million tokens against the requests decoded
# together — the server's loads, lesson 06's loop as timed above (`ordinary`), and the shipped
# references: this course's CPU, and an H200 serving Llama-3.1-8B at the H200's example price.
# Below: what each setting costs each user, the time between two of their tokens. Moving right,
# a token gets cheaper and each user waits longer for it.

# %% tags=["nbval-ignore-output"]
mine = perf.cost(ordinary, price)
h200 = perf.cost(perf.gpu_reference("busy-sweep", "llama-3.1-8b"), perf.EXAMPLE_PRICES["h200"],
                 prefill=perf.gpu_reference("prompt-sweep", "llama-3.1-8b"))
cpu = perf.cost(perf.load_reference("cpu-batch-sweep"), price)
for c in (mine, cpu, h200):
    print(f"{c.name}: {c.verdict()}")
views.cost_figure(bill, mine, cpu, h200)

# %% [markdown]
# Money is one cost of a token; energy is another. Where the machine exposes an energy
# counter — RAPL on Intel and recent AMD CPUs, NVML on NVIDIA GPUs — `perf.energy_meter`
# reads it around a measurement. Most cloud VMs expose none: then the cell says so, and no
# number is made up.

# %% tags=["nbval-ignore-output"]
prompt = perf.prompt_of_length(lm.tokenizer, ctx)
with perf.energy_meter("cpu") as meter:  # "cuda" on an NVIDIA GPU (pip install nvidia-ml-py)
    perf.generate_batch(lm, [prompt] * 4, 8)  # 4 requests, 8 tokens each
print(meter.energy.text(tokens=4 * 8))

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
# sweep = serve.sweep_rates("http://gpu-box:8000/v1", allow_remote=True, n_requests=200,
#                           n_rates=6, repeats=3, out="vllm-sweep.json")
# views.rate_sweep_figure(sweep)
# ```
#
# or from a terminal: `python -m viz load http://gpu-box:8000/v1 --allow-remote --sweep
# --n-requests 200 --repeats 3 -o vllm-sweep.json`, then `python -m viz report
# vllm-sweep.json` for one HTML file that opens offline. The GPU this course was lent once
# (the GPU reference of lessons 03, 04, 06, 07, 08 and 11) ran its measurements in one process, with no server, so the course
# ships no server measured on a GPU: the commands are shown, not run. Your own numbers, saved
# with `-o`, are the reference.

# %% [markdown]
# ## Where next
#
# [10 · Long contexts and prefix caching →](10_long_context.ipynb): when the prompt is
# thousands of tokens long, attention and the KV cache set the pace, and pages like the ones
# shared above save the prefill of whatever prompts have in common. From there:
# [06 · Batching](06_batching.ipynb) and [08 · The memory wall](08_memory_wall.ipynb) explain
# what each forward pass of a server costs; the `viz.serve` functions measure any
# OpenAI-compatible server you can reach.

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
# # 10 · Load-testing a server
#
# [09 · Continuous batching and pages](09_continuous_batching.ipynb) sent a server a few
# requests at a time and watched its scheduler. Whoever runs a server asks other questions:
# how many requests a second can it take before users notice, what do they notice first, and
# what does each token cost? This lesson answers them the way engineers who load-test a server
# do — requests that arrive at random, a sweep of the **request rate** up to where the server
# cannot keep up, an objective for every request, set from your own machine's figures — and
# then puts a price on a token.

# %%
import resource
import time

import ipywidgets as widgets

import viz
from viz import perf, serve, views
from viz.views import LinkedView

# %% [markdown]
# As in lesson 09, `serve.serve(...)` starts the server offline on `127.0.0.1` and warms it up;
# `record=True` also logs every scheduler step, which the end of the lesson uses to price a
# prompt's tokens apart from an answer's.

# %% tags=["nbval-ignore-output"]
began = time.perf_counter()
server = serve.serve(continuous_batching=True, record=True)
print(server)
print(f"ready after {time.perf_counter() - began:.1f} s; "
      f"server resident memory: {server.rss_bytes() / 2**20:,.0f} MiB")

# %% [markdown]
# ## See it: an objective, and the requests that meet it
#
# A run of many requests is judged by its **goodput** (DistServe's measure): the requests per
# second that met a **service-level objective** (SLO): a first token within one limit, then
# the next tokens no further apart, on average, than another (TTFT ≤ a limit and TPOT ≤
# another). One run, 4 requests at once, each 64 tokens in and 8 out, judged by an objective
# picked for now (TTFT ≤ 1 s and TPOT ≤ 150 ms):

# %% tags=["nbval-ignore-output"]
short = serve.Workload.synthetic(prompt_tokens=64, output_tokens=8)  # short answers, a quick sweep
print(serve.run_load(server, concurrency=4, n_requests=4, workload=short, max_duration_s=60,
                     progress=False).summary())

# %% [markdown]
# ## Measure it: a rate sweep, up to where the server can't keep up
#
# Engineers who load-test a server sweep the **request rate**. First one request at a time:
# what a user alone gets. Then every request at once: the most requests per second the server
# can complete. Then requests arriving at random moments (a Poisson process, seeded: the same
# seed gives the same arrival times) at a rate halfway between the two (`n_rates=1`; a longer
# sweep runs several rates, the lowest first). A server **saturates** at a rate when requests
# arrive faster than they finish, so each one waits for the work of all those before it, and
# the wait for a first token grows through the run; a sweep keeps that rate and stops. The
# table's last column, **queue**, is that growth: seconds of TTFT gained per second of
# arrivals (0: the server keeps up; over 0.25 the rate counts as saturated, ✕ in the figure
# below; "n/a" for the two loads that do not arrive at a rate). The rate stays below what the
# all-at-once load completed, so it may well not saturate (queue near 0, no ✕); then the
# all-at-once row is where the server's limit shows. A run of a few requests also completes
# fewer per second than it is offered: the clock runs until the last answer ends, after the
# last arrival.
#
# Serving figures on a shared machine move by tens of percent from one run to the next, so
# each load runs 3 times. A figure below is the median of the 3, and in brackets its
# confidence interval: with 3 runs, the lowest and the highest, which enclose the true median
# with probability 75 %.
#
# The objective now comes from your machine: twice what a request alone takes (the p90 TTFT
# and p90 TPOT of the one-at-a-time load, its requests pooled, so not exactly twice the
# table's p90 columns). A fixed objective would be met by every request on a fast machine and
# by none on a slow one; this one is met alone, so the sweep shows what company does to it.
#
# ✏️ **Predict.** As the rate rises, which limit will the continuous-batching server's
# requests break first: the first token too late ("TTFT"), the tokens too slow ("TPOT"),
# "both at once", or "neither"? "First" is judged at the lightest load where any request
# missed: the limit more of its requests missed, "both at once" where as many missed each, too
# close to call where the two counts differ by one.

# %%
prediction_first_miss = None  # ← one of serve.MISSES: "TTFT", "TPOT", "both at once", "neither"

# %% tags=["nbval-ignore-output"]
with perf.energy_meter("cpu") as meter:  # read at the end of the lesson, where a counter exists
    sweep = serve.sweep_rates(server, n_requests=4, n_rates=1, repeats=3, workload=short,
                              max_duration_s=60, budget_s=120, progress=False)  # ~30 s
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
# The one-at-a-time server, with the same random arrivals and its own sweep (the first server
# was stopped to stay within a Binder session's 2 GB):

# %% tags=["nbval-ignore-output"]
single = serve.serve(continuous_batching=False)
random_alone = serve.run_load(single, **arrivals)
single_sweep = serve.sweep_rates(single, n_requests=4, n_rates=1, workload=short, slo=slo,
                                 max_duration_s=60, budget_s=60, progress=False)
single_peak = single.peak_rss_bytes()
single.stop()
print(random_alone.summary())
print(single_sweep)

# %% [markdown]
# Both sweeps on one chart, against the requests per second each load completed (a line joins
# its points along that axis; hover one for its load: a saturated load can complete fewer
# requests per second than a lighter one). Where the
# solid goodput line leaves the dotted throughput line, requests start to miss the objective;
# ✕ marks a saturated rate. (The one-at-a-time sweep ran each load once: it has no bars.)

# %% tags=["nbval-ignore-output"]
views.rate_sweep_figure([sweep, single_sweep])

# %% [markdown]
# ✏️ **Move the slider** through the continuous-batching server's loads, from one request at a
# time to all at once: the first run of each, one row per request as in lesson 09 (grey:
# waiting, blue: prefill, orange: decoding, a tick per piece of text). As the rate rises,
# where does the grey go — before the first token, or between the ticks?

# %% tags=["nbval-ignore-output"]
by_load = {p.label: p.runs[0] for p in sweep.by_load()}
load = widgets.SelectionSlider(options=list(by_load), value=list(by_load)[-1],
                               description="load", layout={"width": "420px"})
LinkedView({"load": load}, [load], lambda v: views.request_timeline_figure(by_load[v["load"]]))

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
# ## Understand it: two ways to miss the objective
#
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
# made one token per request (lesson 04). The output price is *all-in* (the bill's header says
# how), so prefill passes count in both prices, and the ratio below is above what the decode
# passes alone would give. Priced here: every load of the continuous-batching server's
# rate sweep (each the median of its 3 runs), from one request at a time to all at once. The
# bill's TTFT and TPOT pool every request of a load's runs, so they can differ from the sweep
# table's p50 columns.
#
# ✏️ **Predict.** One request at a time, how many times cheaper than an output token will an
# input token be on this server?

# %%
prediction_input = None  # ← "under 10×", "10× to 100×" or "more than 100×"

# %% tags=["nbval-ignore-output"]
bill = perf.cost(sweep, price)  # every load of the rate sweep, lightest first
print(bill)

# %% tags=["nbval-ignore-output"]
one = bill.rows[0]  # one request at a time
cheaper = one.output_per_mtok / one.input_per_mtok  # medians, and the worst case of spreads
measured_input = viz.band(cheaper, [10, 100], ["under 10×", "10× to 100×", "more than 100×"])
print(f"one at a time an input token cost ×{cheaper.median:.0f} ({cheaper.low:.0f}–"
      f"{cheaper.high:.0f}) less than an output token: {measured_input}")
viz.compare_prediction(prediction_input, measured_input,
                       options=["under 10×", "10× to 100×", "more than 100×"],
                       hint="compare the prefill speed of lesson 03 (prompt tokens per second) "
                            "with the tokens per second a stream decodes")

# %% [markdown]
# Batching's bargain, priced. Above: $ per million tokens against the requests in flight
# together — the server's loads above, and the shipped references: lesson 06's loop on this
# course's CPU, and an H200 decoding batches of Llama-3.1-8B at the H200's example price.
# Below: what each setting costs each user, the time between two of their tokens. Moving right,
# each user waits longer for a token; the token gets cheaper where the requests really overlap
# (a load with little company can cost more per token than one request at a time: compare
# each point's $ per million).

# %% tags=["nbval-ignore-output"]
h200 = perf.cost(perf.gpu_reference("busy-sweep", "llama-3.1-8b"), perf.EXAMPLE_PRICES["h200"],
                 prefill=perf.gpu_reference("prompt-sweep", "llama-3.1-8b"))
cpu = perf.cost(perf.load_reference("cpu-batch-sweep"), price)
for c in (cpu, h200):
    print(f"{c.name}: {c.verdict()}")
views.cost_figure(bill, cpu, h200)

# %% [markdown]
# Money is one cost of a token; energy is another. Where the machine exposes an energy
# counter — RAPL on Intel and recent AMD CPUs, NVML on NVIDIA GPUs — `perf.energy_meter`
# reads it around a measurement: here, the continuous-batching server's whole rate sweep, and
# the energy the whole machine (server and client) spent per answer token the sweep made.
# Most cloud VMs expose no counter: then the cell says so, and no number is made up.

# %% tags=["nbval-ignore-output"]
made = sum(q.output_tokens or 0 for r in sweep.runs for q in r.requests if q.ok)
print(meter.energy.text(tokens=made))

# %% [markdown]
# Both servers (one at a time) and this notebook fit in a Binder session (about 2 GB), measured:

# %% tags=["nbval-ignore-output"]
kernel_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
total = kernel_peak + max(server_peak, single_peak)  # one server ran at a time
print(f"kernel peak {kernel_peak / 2**20:,.0f} MiB; server peaks: continuous batching "
      f"{server_peak / 2**20:,.0f} MiB, one at a time {single_peak / 2**20:,.0f} MiB")
print(f"together at most {total / 2**20:,.0f} MiB: "
      f"{'within' if total < 2e9 else 'over'} 2 GB")

# %% [markdown]
# ## Your turn: what your own request costs
#
# Both servers are stopped, so this notebook can hold the model itself and record one request
# alone, as the one-at-a-time server served it (lesson 04's loop, no HTTP). Type a prompt and
# press Enter: it is recorded with a reply of 24 tokens and priced at your `price` an hour, its
# prompt at its time to the first token, its answer at the gaps between its tokens
# (`perf.cost` of the recorded reply: the two bills add up to the reply's whole time).
#
# ✏️ **Predict.** Paste a paragraph in front of the question: which of its two prices per
# million tokens will move more, the input's or the output's?

# %% tags=["nbval-ignore-output"]
lm = viz.load_model(device="cpu")  # the model in this notebook, now that no server holds it


def my_request(prompt):
    reply = viz.record(lm, prompt, max_new_tokens=24, stop_at_eos=False, embeddings=False)
    return str(perf.cost(reply, price))


views.LinkedText(my_request, value="How much does one token cost to make?",
                 description="your prompt (Enter to run)", pause_s=None)

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
# (the GPU reference of lessons 03, 04, 06, 07, 08, 10 and 13) ran its measurements in one
# process, with no server, so the course
# ships no server measured on a GPU: the commands are shown, not run. Your own numbers, saved
# with `-o`, are the reference.

# %% [markdown]
# ## Where next
#
# [11 · Long contexts and prefix caching →](11_long_context.ipynb): when the prompt is
# thousands of tokens long, attention and the KV cache set the pace, and pages like lesson 09's
# save the prefill of whatever prompts have in common. From there:
# [06 · Batching](06_batching.ipynb) and [08 · The memory wall](08_memory_wall.ipynb) explain
# what each forward pass of a server costs; the `viz.serve` functions measure any
# OpenAI-compatible server you can reach.

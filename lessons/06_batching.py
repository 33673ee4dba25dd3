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
# # 06 · Batching and the throughput/latency trade-off
#
# Lesson 04 found the weak spot of decode: to make **one** token, a step reads **every**
# weight from memory and does only a little arithmetic with each. The arithmetic units spend
# most of the step waiting for bytes.
#
# A server has a way out: answer several people at once. If B requests each need their next
# token, one step can read the weights once and use them B times. This is **batching**. This
# lesson measures what it buys (tokens per second for everyone together) and what it costs
# (a longer wait for each person), then places both phases on a chart of this machine's limits.

# %%
import ipywidgets as widgets

import viz
from viz import perf
from viz.views import palette
from viz.views import roofline_figure
from viz.views import sweep_figure, throughput_latency_figure
from viz.views import LinkedView

lm = viz.load_model()
spec = lm.spec

# %% [markdown]
# ## See it: more requests per step
#
# `perf.batch_size_sweep` runs the decode loop of lesson 04 with a batch dimension: B copies of
# one prompt, a few new tokens each, with B = 1, 2, 4 and 8. It takes a few seconds.

# %% tags=["nbval-ignore-output"]
sweep = perf.batch_size_sweep(lm, [1, 2, 4, 8], max_new_tokens=8, progress=False)
sweep_figure(sweep)

# %% [markdown]
# Left: **throughput**, the tokens per second of all requests together. Right: **latency**,
# how long each request waits for its next token. Compare how far each one climbs from a
# batch of 1 to a batch of 8. Unless something else kept your machine busy during the sweep,
# the throughput gains far more than each request loses: that gap is why servers batch.
#
# Move the slider to pick a batch size: its point is circled on the trade-off curve (each
# request's wait across, everyone's tokens per second up).

# %%
rows = {r["batch_size"]: r for r in sweep.rows()}


def pick(values):
    r = rows[values["batch"]]
    fig = throughput_latency_figure(sweep)
    fig.add_scatter(x=[r["decode_step_s"] * 1e3], y=[r["aggregate_decode_tokens_per_s"]],
                    mode="markers", marker={"size": 22, "color": palette.CHOSEN, "symbol": "circle-open",
                                            "line": {"width": 3}}, name="chosen")
    fig.update_layout(title=f"batch of {values['batch']}: each request waits "
                            f"{r['decode_step_s'] * 1e3:.0f} ms per token; all together make "
                            f"{r['aggregate_decode_tokens_per_s']:.1f} tokens/s")
    return fig


# %% tags=["nbval-ignore-output"]
batch = widgets.SelectionSlider(options=list(rows), value=1, description="batch")
LinkedView({"batch": batch}, [batch], pick)

# %% [markdown]
# The same numbers as ratios to a batch of one:

# %% tags=["nbval-ignore-output"]
one = rows[1]
for b, r in rows.items():
    print(f"B={b}: throughput ×{r['aggregate_decode_tokens_per_s'] / one['aggregate_decode_tokens_per_s']:.1f}, "
          f"each request's wait per token ×{r['decode_step_s'] / one['decode_step_s']:.1f}")

# %% [markdown]
# ## Understand it: one weight read serves B tokens
#
# Count the work of one decode step. Every weight takes part in one multiply and one add per
# token, so a step does about 2 × parameters × B FLOPs. The weights are read once whatever B
# is. Arithmetic per byte (the **arithmetic intensity**) therefore grows with B. By hand, and
# by the library's full count (`perf.decode_cost`, which also counts the KV cache):

# %%
ctx = sweep.rows()[0]["decode_context_tokens"]  # tokens in each sequence mid-sweep
print(f"decode step with {ctx} tokens of context:")
for b in (1, 2, 4, 8, 16, 64, 256):
    cost = perf.decode_cost(spec, ctx, batch=b)
    by_hand = 2 * spec.n_params * b / spec.weight_bytes
    print(f"B={b:>3}: {cost.flops / 1e9:6.1f} GFLOP, {cost.bytes / 1e6:5.0f} MB moved → "
          f"{cost.intensity:5.1f} FLOP/byte (by hand {by_hand:5.1f})")

# %% [markdown]
# The FLOPs grow B-fold while the bytes hardly move, so the intensity rises in step with B
# (half a FLOP per byte per request here: 2 FLOPs per weight, 4 bytes per float32 weight). At
# large B the library's count falls behind the by-hand one: each request brings its own KV
# cache, and those bytes do grow with B. Keep that in mind for the end of the lesson.

# %% [markdown]
# ## Measure it: prefill and decode on this machine's roofline
#
# How much arithmetic per byte does it take to keep this machine busy? As in lessons 03 and
# 04, measure its two ceilings: the fastest matrix product (FLOP/s) and the fastest memory
# copy (bytes/s).

# %% tags=["nbval-ignore-output"]
peaks = perf.measure_peaks(copy_bytes=128 << 20)  # 128 MiB: far bigger than any CPU cache
print(f"{peaks.device_name}: {peaks.flops_per_s / 1e9:.1f} GFLOP/s, {peaks.bytes_per_s / 1e9:.1f} GB/s")
print(f"ridge point: {peaks.ridge_intensity:.1f} FLOP/byte")

# %% [markdown]
# The **ridge point** divides the two: the FLOPs this machine can do in the time it moves one
# byte. A pass with less arithmetic per byte than that waits on memory (memory-bound); a pass
# with more waits on the arithmetic units (compute-bound).
#
# Now place real passes under those ceilings: a short reply (prefill + decode), two longer
# prompts (prefill only), and the batch sweep's decode steps.

# %% tags=["nbval-ignore-output"]
my_prompt = "Explain in one sentence why the sky is blue."  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=8, stop_at_eos=False)
prompts = perf.prompt_length_sweep(lm, [32, 128], repeats=1, progress=False)
roof = perf.measure_roofline(lm, peaks=peaks, trace=trace, batch=sweep, prompt_sweep=prompts,
                             label="this machine")
roofline_figure(roof)

# %% [markdown]
# The black line is the roof: nothing can sit above it. Hover over a point for its time,
# **MFU** (model FLOPs utilisation: achieved FLOP/s ÷ peak) and **MBU** (model bandwidth
# utilisation: achieved bytes/s ÷ peak). The same in a table:

# %% tags=["nbval-ignore-output"]
print(roof)

# %% [markdown]
# Where each point sits across the chart does not depend on the machine: it is counted
# FLOPs ÷ counted bytes. Compare these with the ridge printed above.

# %%
for p in roof.points:
    print(f"{p.label:<12} {p.intensity:6.1f} FLOP/byte")

# %% [markdown]
# Prefill reuses each weight for every prompt token, so the longer the prompt, the further
# right it sits; decode at batch 1 sits far to the left, and each doubling of the batch moves
# it right. Read in the
# table whether a pass reached its roof: decode's MBU is the figure to watch (bytes are its
# limit), prefill's MFU (arithmetic is its limit).
#
# For comparison, the same chart measured on the project's own 2-core CPU and shipped with the
# course (dashed):

# %% tags=["nbval-ignore-output"]
roofline_figure(roof, perf.load_reference("cpu-roofline"))

# %% [markdown]
# ## Where this leads: the memory wall
#
# Batching raised decode's intensity because the weights were shared. The KV cache is not
# shared: every request reads its own. At a realistic context of 2,048 tokens:

# %%
for b in (1, 8, 64, 256, 1024):
    cost = perf.decode_cost(spec, 2048, batch=b)
    print(f"B={b:>4}: {cost.intensity:4.1f} FLOP/byte, KV cache {cost.kv_bytes / cost.bytes:4.0%} "
          f"of the bytes moved, {cost.kv_bytes / 1e9:6.2f} GB of KV cache")

# %% [markdown]
# The intensity stalls at a few FLOPs per byte, however large the batch: past a point each
# extra request brings as many bytes (its cache) as FLOPs. Decode stays limited by **bytes
# moved**, and the caches compete with the weights for memory bandwidth and for space. Memory
# bandwidth has also been growing more slowly than arithmetic from one hardware generation to
# the next, so the ridge keeps moving right, away from decode. That gap is called **the memory
# wall**, and it is the next topic after this course: the tricks that fight it (smaller
# numbers per weight, smaller caches, smarter batching) all aim at moving fewer bytes per token.

# %% [markdown]
# ## Check yourself

# %%
from viz import check, multiple_choice

# %% [markdown]
# **1.** Past the ridge, a bigger batch stops being almost free: each step gets longer in
# proportion to B, so throughput stops growing much. Using the ridge you measured and the
# intensity of decode at B = 1 (table in *Understand it*), at about which batch size does
# decode reach the ridge on this machine?

# %%
answer_1 = None  # ← replace None with a batch size
check(answer_1, peaks.ridge_intensity / perf.decode_cost(spec, ctx, batch=1).intensity,
      rel_tol=0.25, hint="intensity grows about in proportion to B: ridge ÷ intensity at B = 1")

# %% [markdown]
# **2.** Compute by hand the arithmetic intensity of a decode step with a batch of 32
# (2 FLOPs per weight per token; every weight read once; ignore the KV cache).

# %%
answer_2 = None  # ← replace None with FLOPs per byte
check(answer_2, perf.decode_cost(spec, ctx, batch=32).intensity, rel_tol=0.1, unit="FLOP/byte",
      hint="2 × parameters × 32 FLOPs ÷ weight bytes")

# %% [markdown]
# **3.** A server puts your request in a batch of 8 instead of running it alone. What
# happens to the time you wait for each token of your own reply?

# %%
answer_3 = None  # ← replace None with one of the options, copied exactly
multiple_choice(answer_3, ["it gets shorter", "it stays exactly the same", "it gets longer"],
                correct="it gets longer",
                why="each step does B requests' arithmetic, so it takes longer; the server "
                    "makes more tokens per second in total, but yours arrive more slowly.")

# %% [markdown]
# ## Next
#
# [07 · Capstone →](07_capstone.ipynb): your own prompt through the whole pipeline, on one
# dashboard, beside a recorded reference.

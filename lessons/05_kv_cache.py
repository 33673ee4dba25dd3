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
# # 05 · The KV cache
#
# In lesson 04 every decode step fed the model a **single** token, yet the model still wrote
# text that follows from everything before it. How can one token "see" the whole text? Because
# each pass leaves something behind for the next one: the **KV cache**.
#
# Inside every layer, attention (lesson 03) compares the newest token's **query** (what it
# looks for) with the **key** of every token so far (what that token offers) and takes a
# weighted mix of their **values** (what they hand over). Keys and values of old tokens never
# change, so instead of recomputing them at every step the model stores them. This lesson looks
# at that store: what it holds, how fast it grows, and what it saves.

# %%
import numpy as np
import torch

import viz
from viz import compare_prediction, perf, views
from viz.views import sweep_figure

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
spec = lm.spec
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the very first pass pays set-up costs

# %% [markdown]
# ## See it: the cache grows by the same amount with every token
#
# Record a short reply (type your own prompt). After each step, `viz.record` reads the size
# of the cache's tensors, layer by layer; with `attention=True` it also keeps where each
# step's query looked (used further down).

# %%
my_prompt = "The library was quiet until"  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=16, attention=True)
print(trace.generated_text)
print(trace.generated_ids)

# %% [markdown]
# Each bar is the cache after one step, stacked by layer (layer 0 at the bottom). The black
# line is the formula worked out below; the grey dashed line is what the same model would
# hold without grouped-query attention (GQA, explained below). Hover over a bar to read one layer.

# %%
views.kv_figure(trace)

# %% [markdown]
# ## Understand it: what is stored, token by token
#
# Let's build a cache by hand with the same two functions `viz.record` uses
# ([viz/record.py](../viz/record.py) writes the whole loop out). First the prefill: one pass
# over the prompt fills every layer with the prompt's keys and values.

# %%
forward = viz.last_logits(lm.model)  # input ids + cache → scores of the next token
cache = viz.new_cache(lm.model)  # empty: nothing stored yet
n = len(trace.prompt_ids)
with torch.inference_mode():
    logits = forward(torch.tensor([trace.prompt_ids]), cache)  # prefill
keys, values = viz.cache_layers(cache)[0]  # layer 0
print("layer 0 keys:  ", tuple(keys.shape))
print("layer 0 values:", tuple(values.shape))

# %% [markdown]
# The shape reads **(batch, KV heads, tokens, head size)**: one request, this model's KV
# heads, one row per prompt token, and a vector of `head_dim` numbers per head. Every layer
# holds one such pair.
#
# Now one decode step: feed only the token the prefill chose. The pass computes the key and
# value of that **one** token and appends them; the rows already there are kept as they were.

# %%
before = keys.clone()
with torch.inference_mode():
    forward(torch.tensor([[trace.steps[0].token_id]]), cache)  # one token in
after = viz.cache_layers(cache)[0][0]  # layer 0's keys
print("layer 0 keys after one step:", tuple(after.shape))
print("old rows untouched:", torch.equal(after[:, :, :n], before))

# %% [markdown]
# Would recomputing give anything different? Run the whole sequence (prompt + that token)
# through a fresh cache, as a model without a cache must at every step, and compare all 30
# layers' keys and values with the ones we built step by step:

# %%
fresh = viz.new_cache(lm.model)
with torch.inference_mode():
    forward(torch.tensor([trace.prompt_ids + [trace.steps[0].token_id]]), fresh)
same = all(torch.allclose(k1, k2, atol=1e-4) and torch.allclose(v1, v2, atol=1e-4)
           for (k1, v1), (k2, v2) in zip(viz.cache_layers(cache), viz.cache_layers(fresh)))
print("recomputed keys and values equal the cached ones:", same)

# %% [markdown]
# So the cache changes *how much work* a step does, not *what* it computes.
#
# How many bytes does the whole cache grow by with each new token? It follows from the shape
# above: K and V (2) × layers × KV heads × head size × bytes per number (4 in `float32`).

# %%
per_token = 2 * spec.n_layers * spec.n_kv_heads * spec.head_dim * spec.bytes_per_element
print(f"2 × {spec.n_layers} layers × {spec.n_kv_heads} KV heads × {spec.head_dim} × "
      f"{spec.bytes_per_element} bytes = {per_token:,} bytes per token")
tensors = sum(t.numel() * t.element_size() for layer in viz.cache_layers(cache) for t in layer)
print(f"the tensors hold {tensors:,} bytes for {n + 1} tokens; formula: {per_token * (n + 1):,}")
print("the library's figure agrees:", tensors == spec.kv_bytes(n + 1) == trace.steps[1].kv_bytes)

# %% [markdown]
# ### Grouped-query attention: fewer keys and values to keep
#
# This model has more query heads than KV heads: groups of query heads share one key/value
# head. Queries are used once and thrown away; only keys and values are stored, so sharing
# them shrinks the cache by the ratio of the two.

# %%
without_gqa = spec.kv_bytes(1, n_kv_heads=spec.n_heads)
print(f"{spec.n_heads} query heads share {spec.n_kv_heads} KV heads")
print(f"per token: {spec.kv_bytes(1):,} bytes with GQA, {without_gqa:,} without "
      f"({without_gqa / spec.kv_bytes(1):g}× more)")

# %% [markdown]
# ### Where a step looks
#
# A decode step's attention weights (lesson 03), which add up to 1, say where its query looked
# among the cached keys. `trace` kept them (mean over the query heads, for every step and
# layer), and `views.attention_figure` draws one layer: top, one step's weight on each position
# (prompt tokens blue, generated ones orange); below, every step as a row. Drag the slider or
# press ▶ (it runs in the page: no Python needed).
#
# **Predict.** Step 10 is a decode step, fed one token. Which positions does its query spread
# its weights over, in layer 15?

# %%
SEEN = ["the prompt's positions only", "the last few positions only",
        "every earlier position, but not its own", "every position so far, its own included"]
prediction_positions = None  # ← your guess: one of SEEN, copied exactly

# %%
views.attention_figure(trace, layer=15)

# %%
seen = views.attention_data(trace, 10, layer=15)
print(f"step 10, layer 15: the query of {seen.query} weighed {len(seen.mean)} positions "
      f"(weights adding up to {sum(seen.mean):.2f}); the cache held {trace.steps[10].seq_len}, "
      f"the prompt {n}")
for position, token, weight in seen.top(3):
    print(f"    position {position:2} {token:12} weight {weight:.2f}")
k, held = len(seen.mean), trace.steps[10].seq_len
seen_verdict = (SEEN[3] if k == held else SEEN[2] if k == held - 1 else
                SEEN[0] if k == n else SEEN[1])

# %%
compare_prediction(prediction_positions, seen_verdict, options=SEEN,
                   hint="when is the key of the token fed in at step 10 computed: before or "
                        "after its query meets the cache?")

# %% [markdown]
# Every position so far, its own included: the pass computes the new token's key and value,
# appends them to the cache, and only then compares the query with every key. Where the weight
# lands differs from layer to layer and step to step, but no step skips a position. Check it
# for all the steps and all 30 layers, and count what a step must read for that (the same
# bytes the cache holds):

# %%
looked = [views.attention_data(trace, s.index, layer) for s in trace.steps
          for layer in range(spec.n_layers)]
print("every step, every layer weighed every cached position:",
      all(len(a.mean) == trace.steps[a.step].seq_len for a in looked))
last_step = trace.steps[-1]
print(f"the last step read the keys and values of {last_step.seq_len} tokens: "
      f"{spec.kv_bytes(last_step.seq_len):,} bytes, and each later step reads more")

# %% [markdown]
# Try other layers, or one head alone instead of the mean over heads (this one needs a running
# notebook, its Jupyter kernel):

# %%
views.attention_widget(trace, layer=15)

# %% [markdown]
# ## Measure it: growth per step, and the cache on vs off
#
# The bytes read from the live tensors after each step, against the formula, and how much each
# step added:

# %%
formula = [spec.kv_bytes(s.seq_len) for s in trace.steps]
added = np.diff(trace.kv_bytes)  # measured: bytes the live tensors grew by, step to step
print("tensors == formula at every step:", trace.kv_bytes == formula)
print("bytes added per step:", sorted(set(added.tolist())))

# %% [markdown]
# Now switch the cache off: every step must feed the **whole** sequence again, and the model
# recomputes every key and value.

# %%
off = viz.record(lm, my_prompt, max_new_tokens=16, use_cache=False)
print("same tokens:", off.generated_ids == trace.generated_ids)
print("tokens fed per step, cache on: ", [s.input_tokens for s in trace.steps])
print("tokens fed per step, cache off:", [s.input_tokens for s in off.steps])

# %% [markdown]
# The same text: the cache is not an approximation. The difference is the work. Count it,
# from the model's shape (so these numbers are the same on every machine): FLOPs of each step
# with and without the cache, and the bytes it moves, in two parts.
#
# - **weights + KV**: what `perf.decode_cost(...).bytes` and `perf.prefill_cost(...).bytes`
#   count: every weight once, and the cache's keys and values;
# - **activations**: the numbers passed from one operation to the next inside the pass, which
#   those counts leave out. `perf.activation_bytes` estimates them as if every operation read
#   its inputs from memory and wrote its output back (with the attention scores kept on chip,
#   as PyTorch's fused attention, which this model uses, can do).

# %%
print(f"{'tokens':>6} {'GFLOP on':>9} {'off':>7} {'weights+KV MB on':>17} {'off':>6} "
      f"{'activations MB on':>18} {'off':>6}")
for seq in (8, 32, 128, 512, 2048):
    on_cost, off_cost = perf.decode_cost(spec, seq), perf.prefill_cost(spec, seq)
    act_on = perf.activation_bytes(spec, 1, seq, scores=False)  # one new token
    act_off = perf.activation_bytes(spec, seq, seq, scores=False)  # the whole text again
    print(f"{seq:>6} {on_cost.flops / 1e9:9.2f} {off_cost.flops / 1e9:7.1f} "
          f"{on_cost.bytes / 1e6:17.0f} {off_cost.bytes / 1e6:6.0f} {act_on / 1e6:18.1f} "
          f"{act_off / 1e6:6.0f}")

# %% [markdown]
# An independent analytic model, LLM-Viewer, counts the same kind of traffic with the scores
# written out; for a 64-token prefill of this model it finds about 148 MB, 28% on top of the
# weights. The library's count, printed next with the scores written out too, comes out higher
# because it counts more generously in three places: a residual add reads two inputs (not
# one), the MLP's gating works at the MLP's width (not the model's), and the queries that
# meet the keys count as activations. [viz/perf/counts.py](../viz/perf/counts.py) reconciles
# the two counts in its docstring, and [tests/test_perf_claims.py](../tests/test_perf_claims.py)
# checks it term by term:

# %%
act_64 = perf.activation_bytes(spec, 64, 64)  # scores written out, as in LLM-Viewer's count
print(f"64-token prefill: activations {act_64 / 1e6:.0f} MB = "
      f"{act_64 / spec.weight_bytes:.0%} of the {spec.weight_bytes / 1e6:.0f} MB of weights")

# %% [markdown]
# Read the table column by column. The work of a cached step barely grows, while an uncached
# step's work grows with the text: writing N tokens costs about N²/2 token-passes instead of
# N. The weights and KV bytes are almost the same either way: both passes read every weight
# once (lesson 04). The activations are not: a cached step passes one token's numbers from
# operation to operation (a few MB), an uncached step the whole text's, and past a few hundred
# tokens that traffic outgrows the weights. It is an upper estimate of what reaches main
# memory: a tensor that fits in the processor's cache may be read back from there (lesson 08).
#
# **Predict.** Now time it. At the end of a 24-token reply (about 30 tokens of text), how many
# times longer than a cached step will a step without the cache take?

# %%
prediction_slowdown = None  # ← your guess: uncached step time ÷ cached step time

# %% [markdown]
# `perf.cache_sweep` records the same reply both ways, step by step (it takes a few seconds).

# %% tags=["nbval-ignore-output"]
sweep = perf.cache_sweep(lm, my_prompt, max_new_tokens=24, progress=False)
print("same tokens in the sweep:", sweep.settings["same_tokens"])
sweep_figure(sweep)

# %% [markdown]
# Left: the time of each step; middle: the time since the request; right: the counted work.
# The counted gap at a few points of the sweep (the same on every machine), then the measured
# one on yours:

# %%
rows = sweep.rows()
for r in rows[1::6] + rows[-1:]:
    print(f"{r['seq_len']:>3} tokens: a step without the cache does "
          f"{r['uncached_flops'] / r['cached_flops']:4.1f}× the FLOPs")

# %% tags=["nbval-ignore-output"]
for r in rows[1::6] + rows[-1:]:
    print(f"{r['seq_len']:>3} tokens: a step without the cache takes "
          f"{r['uncached_step_s'] / r['cached_step_s']:4.1f}× the time")
cached = viz.Spread.of([r["cached_step_s"] for r in rows[-6:]])  # the last 6 steps
uncached = viz.Spread.of([r["uncached_step_s"] for r in rows[-6:]])
slowdown = uncached / cached  # with the spread of both
print(f"last 6 steps: {uncached.text(1e3, 'ms')} without the cache, {cached.text(1e3, 'ms')} "
      f"with it: ×{slowdown.median:.1f} (×{slowdown.low:.1f}–{slowdown.high:.1f})")
flop_gap = float(np.median([r["uncached_flops"] / r["cached_flops"] for r in rows[-6:]]))
print(f"for ×{flop_gap:.0f} the FLOPs: " + ("the time grew far less than the FLOPs"
      if slowdown.high < flop_gap / 2 else "the time grew about as much as the FLOPs"))

# %%
compare_prediction(prediction_slowdown, slowdown.median, rel_tol=0.5,
                   hint="the uncached step does the cached step's work plus the extra "
                        "arithmetic; what does the cached step's time consist of (lesson 04)?")

# %% [markdown]
# Compare the time gap with the FLOP gap printed before it. Where did the extra arithmetic
# go? It was *added* to a cached step whose own time is mostly not arithmetic. Put numbers
# on both, with the machine's peaks and fixed cost per step (measured once per machine and
# reused by every lesson, `perf.machine_peaks()` and `perf.fixed_cost(30)`):

# %% tags=["nbval-ignore-output"]
machine, peaks = perf.machine_peaks(), perf.cached_peaks()  # measured once, then reused
fixed = perf.fixed_cost(spec.n_layers)  # a step of a 30-layer model with almost no weights
print(machine.status)
print(perf.yardsticks())
step_bytes = float(np.median([perf.decode_cost(spec, r["seq_len"]).bytes for r in rows[-6:]]))
if (cached - fixed).low > 0:  # time left to read the bytes in, beyond both spreads
    stream = perf.streaming_rate(step_bytes, cached, fixed)  # bytes ÷ (step − fixed cost)
    print(f"cached step {cached.text(1e3, 'ms')} = fixed cost {fixed.text(1e3, 'ms')} + "
          f"{step_bytes / 1e6:.0f} MB of weights and KV streamed at {stream.text(1e-9, 'GB/s')} "
          f"(one large matrix-vector product: {machine.matvec['float32'].spread.text(1e-9, 'GB/s')})")
else:  # a busy machine can stretch the fixed cost's measurement over the step's
    print(f"cached step {cached.text(1e3, 'ms')}, fixed cost {fixed.text(1e3, 'ms')}: too close "
          "to call, no rate to read off (measure again when the machine is quiet)")
cached_flops = float(np.median([r["cached_flops"] for r in rows[-6:]]))
print(f"its arithmetic at the peak would take {cached_flops / peaks.flops_per_s * 1e3:.1f} ms")

# %% tags=["nbval-ignore-output"]
def extra_flops_at(tokens):  # what an uncached step does beyond a cached one
    return perf.prefill_cost(spec, tokens).flops - perf.decode_cost(spec, tokens).flops


extra_s, extra_rate = uncached - cached, None
extra_flops = float(np.median([extra_flops_at(r["seq_len"]) for r in rows[-6:]]))
if extra_s.low > 0:
    extra_rate = extra_s.rate(extra_flops)  # FLOP/s of the extra arithmetic
    print(f"without the cache: {extra_s.text(1e3, 'ms')} more for {extra_flops / 1e9:.1f} GFLOP "
          f"more: {extra_rate.text(1e-9, 'GFLOP/s')} if all the extra time were arithmetic, "
          f"{extra_rate.median / peaks.flops_per_s:.0%} of the peak "
          f"{peaks.flops_spread.text(1e-9, 'GFLOP/s')}")

# %% [markdown]
# The first cell splits the cached step as lesson 04 did: a fixed cost, then the weights
# streaming in at the rate printed (below one large matrix-vector product's, as lesson 04
# found), while its arithmetic at the peak would take the sliver printed last. An uncached step
# replaces the one-token pass with a pass over the whole text: a matrix of tokens multiplied by
# each weight it reads. Such a pass costs more than a one-token pass before its arithmetic
# grows (lesson 03's *a*, the part of a pass paid once), so in the table the time ratio grows
# far less than the FLOP ratio, and the rate printed last, which counts all the extra time as
# arithmetic, is below what the arithmetic alone reaches. The time gap cannot stay small: the
# extra FLOPs grow with the text while the cached step's bytes grow by only 46,080 per token
# (above; lesson 04 timed it).
#
# **Predict.** At 512 tokens of text, will the extra arithmetic (extra FLOPs ÷ extra time) run
# faster or slower than it just did at about 30? The next cell times both kinds of step, three times: a 512-token
# prompt's prefill does exactly the work of an uncached step at that length, and the decode
# steps after it are cached steps.

# %%
SPEED = ["more than 20 % faster than at about 30 tokens",
         "within 20 % of its speed at about 30 tokens",
         "more than 20 % slower than at about 30 tokens"]
prediction_512 = None  # ← your guess: one of SPEED, copied exactly

# %% tags=["nbval-ignore-output"]
text_512 = perf.prompt_of_length(lm.tokenizer, 512)
runs = [viz.record(lm, text_512, max_new_tokens=4, stop_at_eos=False, embeddings=False)
        for _ in range(3)]
uncached_512 = viz.Spread.of([r.timing.prefill_forward_s for r in runs])  # the whole text again
cached_512 = viz.Spread.of([s.forward_s for r in runs for s in r.steps[1:]])  # one new token
slowdown_512 = uncached_512 / cached_512
print(f"512 tokens: {uncached_512.text(1e3, 'ms')} without the cache, "
      f"{cached_512.text(1e3, 'ms')} with it: ×{slowdown_512.median:.0f} "
      f"(×{slowdown_512.low:.0f}–{slowdown_512.high:.0f})")

# %% tags=["nbval-ignore-output"]
rate_512 = (uncached_512 - cached_512).rate(extra_flops_at(512))  # FLOP/s of the extra
ref = extra_rate if extra_rate is not None else peaks.flops_spread  # the peak if ~30 was noise
print(f"the extra arithmetic at 512 tokens: {rate_512.text(1e-9, 'GFLOP/s')}; at about 30: "
      + (extra_rate.text(1e-9, 'GFLOP/s') if extra_rate is not None else "lost in the noise"))
speed = viz.band(rate_512 / ref, [0.8, 1.2], SPEED[::-1])  # with both rates' spreads
print(f"at 512 ÷ at about 30: ×{speed.value.median:.2f} "
      f"(×{speed.value.low:.2f}–{speed.value.high:.2f}) → {speed}")

# %%
compare_prediction(prediction_512, speed, options=SPEED,
                   hint="lesson 03's sweep: did its extra tokens run slower, as fast, or "
                        "faster per token as the prompts grew? More rows per weight read can "
                        "fill the kernel better until it nears the peak printed above, while "
                        "attention's share grows with the text: which wins from 30 to 512?")

# %% [markdown]
# And a real chat runs to thousands of tokens. At 2,048, an estimate (not a measurement):
# the cached step as just measured, plus the extra FLOPs counted at 2,048 tokens at the speed
# the extra arithmetic ran at 512:

# %% tags=["nbval-ignore-output"]
estimate = cached_512.median + extra_flops_at(2048) / rate_512.median
print(f"2,048 tokens: about {estimate:.1f} s per token without the cache, "
      f"×{estimate / cached_512.median:.0f} a cached step at 512 "
      f"({extra_flops_at(2048) / 1e9:.0f} GFLOP more per step)")

# %% [markdown]
# ## Scale it up: the price is memory
#
# The cache trades memory for speed, and the memory grows with every token. Drag the slider to
# a longer text: a prompt of that many tokens is prefilled (a few seconds at the longest) and
# its cache measured from the tensors themselves, beside the count for this model, the count
# for the same model without GQA, and its weights. (Up to 2,048 tokens: a longer prefill takes
# long on a CPU; the count for 8,192 comes next.)

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import palette
from viz.views import LinkedView

cached = {}  # tokens → the cache's bytes, read from the tensors after a prefill that long


# %%
def kv_at(values):
    t = values["tokens"]
    if t not in cached:  # a real prefill of t tokens on this machine, its cache measured
        filled = viz.record(lm, perf.prompt_of_length(lm.tokenizer, t), chat=False,
                            max_new_tokens=1, embeddings=False)
        cached[t] = filled.steps[0].kv_bytes
    names = ["KV cache, measured", "KV cache, counted (GQA)", "counted without GQA", "weights"]
    sizes = [cached[t], spec.kv_bytes(t), spec.kv_bytes(t, n_kv_heads=spec.n_heads),
             spec.weight_bytes]
    fig = go.Figure(go.Bar(x=names, y=[s / 1e6 for s in sizes],
                           marker_color=[palette.DECODE, palette.DECODE, palette.MUTED,
                                         palette.ACCENT]))
    shape = (1, spec.n_kv_heads, t, spec.head_dim)
    fig.update_layout(title=f"{t:,} tokens: each layer holds K and V of shape {shape}",
                      yaxis_title="MB", yaxis_range=[0, 1200], height=340)
    return fig


# %%
slider = widgets.IntSlider(value=1024, min=256, max=2048, step=256, description="tokens",
                           continuous_update=False, layout={"width": "500px"})
LinkedView({"tokens": slider}, [slider], kv_at)

# %% [markdown]
# At this model's longest text (8,192 tokens) the cache holds 8,192 × 46,080 bytes = 377 MB,
# 70 % of the weights' 538 MB. Bigger models
# need bigger caches too. `perf.config_spec` reads the shape of Llama-3.1-8B from its
# published config (no model is built, nothing is downloaded), so we can do its arithmetic:

# %%
big = perf.config_spec("llama-3.1-8b")
for m in (spec, big):
    kv = m.kv_bytes(8192)
    print(f"{m.name}: {m.n_heads} query / {m.n_kv_heads} KV heads, {m.dtype}, "
          f"{m.kv_bytes_per_token():,} bytes per token")
    print(f"    KV cache at 8,192 tokens {kv / 1e9:.2f} GB, weights {m.weight_bytes / 1e9:.2f} GB: "
          f"{m.weight_bytes / kv:.1f} such conversations weigh as much as the model")

# %% [markdown]
# That is **per conversation**. The weights are stored once however many people a server
# answers, but each conversation keeps its own cache. So how many 8,192-token conversations
# fit on a device? What its memory leaves free, divided by one conversation's cache. In a 2 GB
# Binder session (the free online service that runs these notebooks), what is free is what
# this notebook's process (Python, PyTorch, the weights, this lesson's traces) leaves, measured
# now; on an 80 GB GPU only the weights are taken out, so that count is an upper bound:

# %% tags=["nbval-ignore-output"]
import psutil

held = psutil.Process().memory_info().rss  # this notebook's process, weights included
for m, free, what in ((spec, 2e9 - held, f"2 GB minus this notebook's {held / 1e9:.1f} GB"),
                      (big, 80e9 - big.weight_bytes, "80 GB minus the weights, at most")):
    fits = max(0, int(free // m.kv_bytes(8192)))
    print(f"{m.name}, {what}: {fits} conversations of 8,192 tokens "
          f"(their caches {fits * m.kv_bytes(8192) / 1e9:.1f} GB)")

# %% [markdown]
# Once a device holds more conversations than the number printed earlier (the conversations
# that weigh as much as the model), their caches outweigh the weights. And the number that fit
# caps how many requests a server can batch together at that length: lesson 06 batches
# requests, and its last section counts this cap for its batches.

# %% [markdown]
# ## Next
#
# [06 · Batching and the throughput/latency trade-off →](06_batching.ipynb): a decode step
# reads every weight for one token; serving several requests at once shares that reading, at
# a price.

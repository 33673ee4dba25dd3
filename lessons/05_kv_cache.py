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
# Inside every layer, attention works like a lookup. Each token owns a **key** (what it offers
# to be found by) and a **value** (what it hands over when found). The newest token brings a
# **query**, compares it with the keys of all earlier tokens, and takes a weighted mix of their
# values. Keys and values of old tokens never change, so instead of recomputing them at every
# step the model stores them. This lesson looks at that store: what it holds, how fast it
# grows, and what it saves.

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
# hold without grouped-query attention. Hover over a bar to read one layer.

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
# **Predict.** Layer 0 holds keys and values of the shape printed above, in `float32`
# (4 bytes per number), and the model has 30 such layers. By how many bytes does the whole
# cache grow with each new token? (It is measured from the live tensors below.)

# %%
prediction_per_token = None  # ← your guess, in bytes

# %% [markdown]
# The size follows from the shape: K and V (2) × layers × KV heads × head size × bytes per
# number, per token.

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
# ### Every step reads the whole cache
#
# Lesson 03 drew a decode step: the new token's **query** is compared with the **key** of every
# position in the cache, its own included; a softmax turns those scores into weights that add
# up to 1, and the step takes that mix of the **values**. The weights say where the step
# looked. `trace` kept them (mean over the query heads, for every step and layer), and
# `views.attention_figure` draws one layer: top, one step's weight on each position (prompt
# tokens blue, generated ones orange); below, every step as a row, each one position longer
# than the row above. Drag the slider or press ▶ (no kernel needed).
#
# **Predict.** Step 10 is a decode step. Over how many positions does its query spread its
# weights, in any one layer? (Layer 0's keys after the prefill, printed above, have one row
# per prompt token.)

# %%
prediction_positions = None  # ← your guess: a whole number of positions

# %%
views.attention_figure(trace, layer=15)

# %%
seen = views.attention_data(trace, 10, layer=15)
print(f"step 10, layer 15: the query of {seen.query} weighed {len(seen.mean)} positions "
      f"(weights adding up to {sum(seen.mean):.2f}); the cache held {trace.steps[10].seq_len}")
for position, token, weight in seen.top(3):
    print(f"    position {position:2} {token:12} weight {weight:.2f}")

# %%
compare_prediction(prediction_positions, len(seen.mean), unit="positions", rel_tol=0,
                   hint="the prompt's tokens, plus one token for each step before step 10 "
                        "(the last of them is the one fed in at step 10)")

# %% [markdown]
# Where the weight lands differs from layer to layer and step to step, but no step skips a
# position: every query is compared with every key. Check it for all the steps and all 30
# layers, and count what a step must read for that (the same bytes the cache holds):

# %%
looked = [views.attention_data(trace, s.index, layer) for s in trace.steps
          for layer in range(spec.n_layers)]
print("every step, every layer weighed every cached position:",
      all(len(a.mean) == trace.steps[a.step].seq_len for a in looked))
last_step = trace.steps[-1]
print(f"the last step read the keys and values of {last_step.seq_len} tokens: "
      f"{spec.kv_bytes(last_step.seq_len):,} bytes, and each later step reads more")

# %% [markdown]
# Try other layers, or one head alone instead of the mean over heads (this one needs the
# kernel):

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

# %%
compare_prediction(prediction_per_token, int(added[-1]), unit="bytes", rel_tol=0.01,
                   hint="2 (K and V) × layers × KV heads × head size × 4 bytes")

# %% [markdown]
# **Predict.** Now switch the cache off: every step must feed the **whole** sequence again,
# and the model recomputes every key and value. With the same prompt and the same greedy
# choice, what happens to the text?

# %%
TEXTS = ["identical, token for token", "the same start, then different",
         "different from the first token on"]
prediction_text = None  # ← your guess: one of TEXTS, copied exactly

# %%
off = viz.record(lm, my_prompt, max_new_tokens=16, use_cache=False)
print("same tokens:", off.generated_ids == trace.generated_ids)
print("tokens fed per step, cache on: ", [s.input_tokens for s in trace.steps])
print("tokens fed per step, cache off:", [s.input_tokens for s in off.steps])
same = [a == b for a, b in zip(off.generated_ids, trace.generated_ids)]
text_verdict = TEXTS[0] if all(same) else TEXTS[1] if same[0] else TEXTS[2]

# %%
compare_prediction(prediction_text, text_verdict, options=TEXTS,
                   hint="does a cached key or value differ from a recomputed one (see above)?")

# %% [markdown]
# Identical text: the cache is not an approximation. The difference is the work. Count it,
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
# meet the keys count as activations (`perf.activation_bytes`' docstring reconciles the two
# counts exactly):

# %%
act_64 = perf.activation_bytes(spec, 64, 64)  # scores written out, as in LLM-Viewer's count
print(f"64-token prefill: activations {act_64 / 1e6:.0f} MB = "
      f"{act_64 / spec.weight_bytes:.0%} of the {spec.weight_bytes / 1e6:.0f} MB of weights")

# %% [markdown]
# Read the table column by column. The work of a cached step barely grows, while an uncached
# step's work grows with the text: writing N tokens costs about N²/2 token-passes instead of
# N. The weights and KV bytes are almost the same either way: both passes read every weight
# once (lesson 04 took a step apart and found that reading, plus a fixed cost). The
# activations are not: a cached step passes one token's numbers from operation to operation
# (a few MB), an uncached step the whole text's, and past a few hundred tokens that traffic
# outgrows the weights. It is an upper estimate of what reaches main memory: a processor's
# cache (tens of MB) can hold a short text's activations between two operations.
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
print(f"whole reply: {rows[-1]['cached_elapsed_s']:.2f} s with the cache, "
      f"{rows[-1]['uncached_elapsed_s']:.2f} s without")
last = {k: float(np.median([r[k] for r in rows[-6:]])) for k in rows[-1]}  # last 6 steps
slowdown = last["uncached_step_s"] / last["cached_step_s"]
print(f"last 6 steps, medians: {slowdown:.1f}× the time")

# %%
compare_prediction(prediction_slowdown, slowdown, rel_tol=0.5,
                   hint="the uncached step does the cached step's work plus the extra "
                        "arithmetic; what does the cached step's time consist of (lesson 04)?")

# %% [markdown]
# The time gap is far smaller than the FLOP gap. Where did the extra arithmetic go? It was not
# hidden: it was *added* to a cached step whose own time is mostly not arithmetic. Put numbers
# on both (medians of the last 6 steps; the read speed from `perf.cached_peaks()`):

# %% tags=["nbval-ignore-output"]
peaks = perf.cached_peaks()
extra_s = last["uncached_step_s"] - last["cached_step_s"]
extra_flops = last["uncached_flops"] - last["cached_flops"]
print(f"cached step {last['cached_step_s'] * 1e3:.1f} ms; reading its weights at "
      f"{peaks.bytes_per_s / 1e9:.1f} GB/s takes {spec.weight_bytes / peaks.bytes_per_s * 1e3:.1f} ms "
      f"(the rest: lesson 04's fixed cost and slower streaming)")
print(f"without the cache: {extra_s * 1e3:.1f} ms more, for {extra_flops / 1e9:.1f} GFLOP more "
      f"= {extra_flops / extra_s / 1e9:.1f} GFLOP/s, {extra_flops / extra_s / peaks.flops_per_s:.0%}"
      f" of the peak")
cached_rate = last["cached_flops"] / last["cached_step_s"]
print(f"the cached step's own arithmetic: {cached_rate / 1e9:.1f} GFLOP/s, "
      f"{cached_rate / peaks.flops_per_s:.0%} of the peak")

# %% [markdown]
# Compare the two shares of the peak: the extra arithmetic runs far nearer it than the cached
# step's own, because an uncached step multiplies a whole matrix of tokens by each weight it
# reads, the efficient kind of product lesson 03 measured. And the time ratio is (cached step + extra) ÷ cached
# step: the cached step's own time is large and mostly not arithmetic (a fixed cost and the
# weights streaming in, lesson 04), so twenty times the FLOPs come out as a small multiple of
# the time. It cannot stay small: the extra FLOPs grow with the text while the cached step's
# time stays put, so every step without the cache gets slower as the reply grows (lesson 03's
# prompt-length sweep is exactly the cost of one uncached step at each length). Real chats
# run to thousands of tokens: without the cache, decode would crawl.

# %% [markdown]
# ## Scale it up: the price is memory
#
# The cache trades memory for speed, and the memory grows with every token. Drag the slider to
# a longer text: the cache of this model, the same model without GQA, and its weights.

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import palette
from viz.views import LinkedView

# %%
def kv_at(values):
    t = values["tokens"]
    names = ["KV cache (GQA)", "KV cache without GQA", "weights"]
    sizes = [spec.kv_bytes(t), spec.kv_bytes(t, n_kv_heads=spec.n_heads), spec.weight_bytes]
    fig = go.Figure(go.Bar(x=names, y=[s / 1e6 for s in sizes], marker_color=[palette.DECODE, palette.MUTED, palette.ACCENT]))
    shape = (1, spec.n_kv_heads, t, spec.head_dim)
    fig.update_layout(title=f"{t:,} tokens: each layer holds K and V of shape {shape}",
                      yaxis_title="MB", yaxis_range=[0, 1200], height=340)
    return fig


# %%
slider = widgets.IntSlider(value=1024, min=256, max=spec.context_length, step=256,
                           description="tokens", layout={"width": "500px"})
LinkedView({"tokens": slider}, [slider], kv_at)

# %% [markdown]
# At this model's longest text the cache approaches the size of the weights. Bigger models
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
# fit on a device? Its memory, minus the weights once, divided by one conversation's cache.
#
# **Predict.** How many fit on an 80 GB GPU beside Llama-3.1-8B's weights?

# %%
prediction_requests = None  # ← your guess: a whole number of conversations

# %%
fits = {}
for m, memory in ((spec, 2e9), (big, 80e9)):  # a 2 GB Binder session; an 80 GB GPU
    per_request = m.kv_bytes(8192)
    fits[m.name] = int((memory - m.weight_bytes) // per_request)
    print(f"{m.name} in {memory / 1e9:.0f} GB: {fits[m.name]} conversations of 8,192 tokens; "
          f"their caches {fits[m.name] * per_request / 1e9:.1f} GB, the weights "
          f"{m.weight_bytes / 1e9:.1f} GB")

# %%
compare_prediction(prediction_requests, fits[big.name], unit="conversations", rel_tol=0.1,
                   hint="(80 GB − the weights) ÷ one conversation's cache, both printed above")

# %% [markdown]
# Once a device holds more conversations than the number printed earlier (the conversations
# that weigh as much as the model), their caches outweigh the weights: the memory left after
# the weights, divided by the cache per conversation, decides
# how many requests a server can batch together (lesson 06).

# %% [markdown]
# ## Next
#
# [06 · Batching and the throughput/latency trade-off →](06_batching.ipynb): a decode step
# reads every weight for one token; serving several requests at once shares that reading, at
# a price.

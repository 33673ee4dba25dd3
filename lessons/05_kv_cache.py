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
from viz import perf, views
from viz.views import sweep_figure

lm = viz.load_model()
spec = lm.spec

# %% [markdown]
# ## See it: the cache grows by the same amount with every token
#
# Record a short reply (type your own prompt). After each step, `viz.record` reads the size
# of the cache's tensors, layer by layer.

# %%
my_prompt = "The library was quiet until"  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=16)
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
# So the cache changes *how much work* a step does, not *what* it computes. Its size follows
# from the shape: K and V (2) × layers × KV heads × head size × bytes per number, per token.

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
# ## Measure it: growth per step, and the cache on vs off
#
# The bytes read from the live tensors after each step, against the formula, and how much each
# step added:

# %%
formula = [spec.kv_bytes(s.seq_len) for s in trace.steps]
print("tensors == formula at every step:", trace.kv_bytes == formula)
print("bytes added per step:", sorted(set(np.diff(trace.kv_bytes).tolist())))

# %% [markdown]
# Now switch the cache off. Every step must then feed the **whole** sequence again, and the
# model recomputes every key and value. Same prompt, same greedy choice:

# %%
off = viz.record(lm, my_prompt, max_new_tokens=16, use_cache=False)
print("same tokens:", off.generated_ids == trace.generated_ids)
print("tokens fed per step, cache on: ", [s.input_tokens for s in trace.steps])
print("tokens fed per step, cache off:", [s.input_tokens for s in off.steps])

# %% [markdown]
# Identical text: the cache is not an approximation. The difference is the work. Count it:
# FLOPs of each step with and without the cache (from the model's shape, so these numbers are
# the same on every machine).

# %%
print(f"{'tokens':>6} {'GFLOP on':>9} {'GFLOP off':>10} {'ratio':>6} {'MB read on':>11} {'off':>6}")
for seq in (8, 32, 128, 512, 2048):
    on_cost, off_cost = perf.decode_cost(spec, seq), perf.prefill_cost(spec, seq)
    print(f"{seq:>6} {on_cost.flops / 1e9:9.2f} {off_cost.flops / 1e9:10.1f} "
          f"{off_cost.flops / on_cost.flops:5.0f}× {on_cost.bytes / 1e6:11.0f} {off_cost.bytes / 1e6:6.0f}")

# %% [markdown]
# Two things to read in this table. The work of a cached step barely grows, while an uncached
# step's work grows with the text: writing N tokens costs about N²/2 token-passes instead of N.
# But the bytes read from memory are almost the same either way: both passes read every weight
# once (lesson 04 showed that a decode step is limited by exactly that reading).
#
# Now time it on this machine. `perf.cache_sweep` records the same reply both ways, step by
# step (it takes a few seconds).

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

# %% [markdown]
# Compare the two lists. At a few dozen tokens the time gap is likely far smaller than the
# FLOP gap: the extra arithmetic partly hides behind the weight reading that both passes share.
# It cannot hide for long. In the table, the uncached step's FLOPs keep climbing with the
# text while its bytes stay put, so the arithmetic takes over and every step gets slower as
# the reply grows (lesson 03's prompt-length sweep is exactly the cost of one uncached step at
# each length). Real chats run to thousands of tokens: without the cache, decode would crawl.

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
# answers, but each conversation keeps its own cache. Lesson 06 puts several requests in one
# batch, and there the caches, not the weights, soon decide how many fit on a device.

# %% [markdown]
# ## Check yourself

# %%
from viz import check, multiple_choice

# %% [markdown]
# **1.** Using the formula (K and V × layers × KV heads × head size × bytes), how many bytes
# does this model's KV cache hold for a text of 1,000 tokens?

# %%
answer_1 = None  # ← replace None with a number of bytes
check(answer_1, spec.kv_bytes(1000), rel_tol=0.01, unit="bytes",
      hint="bytes per token (printed in 'Understand it') times 1,000")

# %% [markdown]
# **2.** Llama-3.1-8B (printed above) has 32 query heads and 8 KV heads. How many times
# bigger would its cache be without grouped-query attention?

# %%
answer_2 = None  # ← replace None with a number
check(answer_2, big.kv_bytes(1, n_kv_heads=big.n_heads) / big.kv_bytes(1), rel_tol=0.01,
      hint="without GQA there is one KV head per query head")

# %% [markdown]
# **3.** What does the KV cache give up in exchange for faster decoding?

# %%
answer_3 = None  # ← replace None with one of the options, copied exactly
multiple_choice(answer_3, ["accuracy: the text changes", "memory: bytes that grow with every token",
                           "nothing at all"],
                correct="memory: bytes that grow with every token",
                why="the tokens were identical with the cache on and off, and the cache grew by "
                    "the same number of bytes at every step.")

# %% [markdown]
# ## Next
#
# [06 · Batching and the throughput/latency trade-off →](06_batching.ipynb): decode leaves the
# arithmetic units idle; serving several requests at once puts them to work, at a price.

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
# # 04 · Decode
#
# The prefill (lesson 03) read the whole prompt in one pass and chose the first token of the
# reply. Everything after that is **decode**: the model writes the rest of the reply one token
# per forward pass, and each pass needs the token chosen by the pass before it.
#
# In this lesson you will step through a real reply with the explorer, write the decode loop
# yourself in a few lines, time each step on your machine, and find out why a step costs what
# it does: it is not the arithmetic, it is reading the model's weights from memory.

# %%
import numpy as np
import torch

import viz
from viz import perf, views

lm = viz.load_model()
spec = lm.spec
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the very first pass pays set-up costs

# %% [markdown]
# Ask your own question if you like. The prompt is wrapped in the model's chat template
# (`chat=True`), so the model answers as an assistant; the reply is greedy (the most likely
# token every time), so it is the same on every run.

# %%
my_prompt = "What is a language model?"  # ← try your own
trace = viz.record(lm, my_prompt, chat=True, max_new_tokens=20)
print(trace.generated_text)

# %% [markdown]
# ## See it: the reply, step by step
#
# Press **▶ play**, or drag the slider under the figure. At each step:
#
# - **top**: the text so far, the new token in bold vermillion;
# - **left**: the candidates the model scored at that step, and the one it chose;
# - **right**: the KV cache (the keys and values of every token so far, lesson 05), which
#   grows by one token per step, and the step's latency: how long the reader waited for it.
#
# Step 0 is the prefill: it reads the whole prompt, so its latency bar is usually the
# tallest. Every other step is one decode pass.

# %% tags=["nbval-ignore-output"]
views.explorer_figure(trace)

# %% [markdown]
# The same steps as text. Every decode step is fed exactly one token: the one chosen just
# before it.

# %%
for s in trace.steps[:6]:
    print(f"step {s.index} ({s.phase:7}): fed {s.input_tokens:2} token(s), "
          f"chose {s.token_text!r:14} with probability {s.prob:.2f}")

# %% [markdown]
# ## Understand it: the loop, written out
#
# Decode is a loop of four moves: **predict** (a forward pass scores every possible next
# token), **choose** (here greedy: take the highest score), **append** (add the token to the
# reply) and **feed back** (the new token is the next pass's only input). The cache keeps the
# keys and values of every token seen so far, so a pass needs only the newest token.

# %%
from transformers import DynamicCache


def greedy_reply(prompt_ids, n_tokens):
    cache = DynamicCache(config=lm.model.config)  # empty; each pass appends its keys/values
    with torch.inference_mode():
        logits = lm.model(torch.tensor([prompt_ids]), cache=cache).logits[0, -1]  # prefill
        reply = [int(logits.argmax())]  # choose the first token
        while len(reply) < n_tokens:
            newest = torch.tensor([[reply[-1]]])  # feed back: only the newest token goes in
            logits = lm.model(newest, cache=cache).logits[0, -1]  # predict: scores for the next
            reply.append(int(logits.argmax()))  # choose (greedy) and append
    return reply


# %% [markdown]
# Run it for four tokens and compare with what `viz.record` chose. The library's loop, with
# timing and everything it records, is in [`viz/record.py`](../viz/record.py) (step 4; in a
# cell, `viz.record??` shows it).

# %%
mine = greedy_reply(trace.prompt_ids, 4)
print("by hand:   ", mine, repr(lm.tokenizer.decode(mine)))
print("viz.record:", trace.generated_ids[:4])
print("same tokens:", mine == trace.generated_ids[:4])

# %% [markdown]
# ### Why decode cannot be done in parallel
#
# The prefill could process all its tokens at once because they were all known in advance.
# In decode, the input of step *n* **is** the output of step *n − 1*: until it is chosen, there
# is nothing to feed. And each choice steers everything after it. Suppose step 0 had picked
# its runner-up instead of its favourite:

# %%
runner_up = trace.steps[0].top_ids[1]
other = [runner_up] + greedy_reply(trace.prompt_ids + [runner_up], 5)
print("favourite first:", repr(lm.tokenizer.decode(trace.generated_ids[:6])))
print("runner-up first:", repr(lm.tokenizer.decode(other)))

# %% [markdown]
# A different first token, a different reply: no step can be computed before the one it
# follows.
#
# ## Measure it: how fast does it write?
#
# The explorer's latency panel, as numbers. **TPOT** (time per output token) is the average
# gap between two tokens after the first; its inverse is the streaming speed in tokens per
# second.

# %%
gaps = trace.inter_token_latencies_s
print(f"TTFT (the prefill)  {trace.ttft_s * 1000:.1f} ms")
print(f"decode steps        fastest {min(gaps) * 1000:.1f} ms, median "
      f"{np.median(gaps) * 1000:.1f} ms, slowest {max(gaps) * 1000:.1f} ms")
print(f"TPOT                {trace.tpot_s * 1000:.1f} ms")
print(f"decode speed        {trace.decode_tokens_per_s:.1f} tokens/s")
print("TPOT is the mean gap:", np.isclose(trace.tpot_s, np.mean(gaps)),
      "| tokens/s = 1 / TPOT:", np.isclose(trace.decode_tokens_per_s, 1 / trace.tpot_s))

# %% [markdown]
# The same on a time axis, with the summary card: one prefill bar, then a row of decode steps
# of roughly equal length. Hover for each one's duration.

# %% tags=["nbval-ignore-output"]
display(views.summary_html(trace))
views.timeline_figure(trace)

# %% [markdown]
# ### Where the time goes: bytes, not arithmetic
#
# One decode step pushes **one** token through every layer. Each weight is used once: a
# multiply and an add, 2 FLOPs per parameter. But to use a weight, the processor must first
# fetch it from memory, and each weight is `spec.bytes_per_element` bytes. On top of that the
# step reads the KV cache. `perf.decode_cost` counts both for the reply's last step:

# %%
cost = perf.decode_cost(spec, trace.steps[-1].seq_len)
print(f"one decode step with {cost.context_tokens} tokens in the sequence:")
print(f"  weights read    {spec.weight_bytes:>13,} bytes")
print(f"  KV cache read   {cost.kv_bytes:>13,} bytes")
print(f"  arithmetic      {cost.flops:>13,} FLOPs")
print(f"  intensity       {cost.intensity:13.2f} FLOP per byte")

# %% [markdown]
# About half a FLOP for every byte fetched: 2 FLOPs per parameter, 4 bytes per parameter.
# Lesson 03 found the *ridge point* of a machine: the intensity below which memory, not
# arithmetic, sets the pace. Measure it on this machine and compare:

# %% tags=["nbval-ignore-output"]
peaks = perf.measure_peaks(copy_bytes=128 << 20)
print(f"peak arithmetic {peaks.flops_per_s / 1e9:.1f} GFLOP/s, "
      f"peak memory {peaks.bytes_per_s / 1e9:.1f} GB/s")
print(f"ridge point {peaks.ridge_intensity:.1f} FLOP per byte; "
      f"a decode step {cost.intensity:.2f} FLOP per byte")

# %% [markdown]
# A decode step sits far below the ridge: it is **memory-bound**. Another way to see it: the
# shortest time a step could possibly take is set by whichever job is slower at this
# machine's peaks, fetching the bytes or doing the FLOPs.

# %%
memory_floor = cost.bytes / peaks.bytes_per_s
compute_floor = cost.flops / peaks.flops_per_s
print(f"moving the bytes at peak speed   {memory_floor * 1000:.1f} ms")
print(f"doing the FLOPs at peak speed    {compute_floor * 1000:.1f} ms")
print(f"measured TPOT                    {trace.tpot_s * 1000:.1f} ms")
print("fetching the weights takes longer than the arithmetic:", memory_floor > compute_floor)

# %% [markdown]
# So during decode the arithmetic units spend most of each step waiting for weights to arrive.
# The measured TPOT is above the memory floor (a real step also has many small operations,
# Python overhead, and memory traffic below peak), but no implementation could beat the floor
# without moving fewer bytes per token. That is why batching (lesson 06) helps: one weight
# read can serve many requests at once.
#
# ### Does a longer context slow each step?
#
# Each step also reads the KV cache, which grows with the text. `perf.context_length_sweep`
# prefills prompts of several lengths, then times a few decode steps after each.

# %% tags=["nbval-ignore-output"]
from viz.views import sweep_figure

context = perf.context_length_sweep(lm, [16, 64, 256], max_new_tokens=5, progress=False)
sweep_figure(context, peaks=peaks)

# %%
for c, kv, step in zip(context.column("context_tokens"), context.column("kv_bytes"),
                       context.column("decode_step_s")):
    print(f"{c:4} tokens of context: KV cache {kv / 1e6:5.1f} MB = "
          f"{kv / spec.weight_bytes:5.1%} of the weights; step {step * 1000:.1f} ms")
print(f"the cache would match the weights at {spec.weight_bytes / spec.kv_bytes_per_token():,.0f}"
      f" tokens; the model reads at most {spec.context_length:,}")

# %% [markdown]
# Across this sweep the cache stays a few percent of the weights, so the bytes a step reads
# hardly change, and neither (noise aside) does the step time: compare the step times above.
# For this small model the cache would only rival the weights beyond the longest text it
# accepts (last line above). How the cache grows, and what it saves, is lesson 05's story.
#
# ### How long is a long answer?
#
# A 500-word answer is about 700 tokens (lesson 01 measured tokens per word). It costs one
# prefill, then one decode step for each token after the first. Drag the slider to see what
# an answer of any length would cost on this machine, from your own TTFT and TPOT.

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import plotly_layout
from viz.views import palette
from viz.views import LinkedView


def answer_time(values):
    n = values["answer tokens"]
    total = trace.ttft_s + (n - 1) * trace.tpot_s  # one prefill, then n - 1 decode steps
    fig = go.Figure([go.Bar(y=["answer"], x=[trace.ttft_s], orientation="h",
                            marker_color=palette.PREFILL, name="TTFT (prefill)"),
                     go.Bar(y=["answer"], x=[(n - 1) * trace.tpot_s], orientation="h",
                            marker_color=palette.DECODE, name=f"{n - 1} decode steps × TPOT")])
    return fig.update_layout(**plotly_layout(f"{n} tokens: about {total:.1f} s", height=240,
                                             barmode="stack", xaxis={"title": "seconds"}))


# %%
answer_tokens = widgets.IntSlider(value=100, min=1, max=2000, description="answer tokens",
                                  style={"description_width": "initial"})
LinkedView({"answer tokens": answer_tokens}, [answer_tokens], answer_time)

# %% [markdown]
# ## Check yourself
#
# Replace `None` with your answer and run the cell: it tells you whether you are right.

# %%
from viz import check, multiple_choice

# %% [markdown]
# **1.** From your TTFT and TPOT above, how many seconds would a 500-word answer (700 tokens)
# take on this machine?

# %%
answer_1 = None  # ← replace None with your estimate, in seconds
check(answer_1, expected=trace.ttft_s + 699 * trace.tpot_s, rel_tol=0.05, unit="s",
      hint="TTFT once, then one TPOT for each of the other 699 tokens (TPOT in seconds)")

# %% [markdown]
# **2.** On a GPU this model usually runs in bfloat16: 2 bytes per number instead of 4. By
# hand, from the parameter count, estimate the arithmetic intensity (FLOP per byte) of one
# decode step then, ignoring the KV cache.

# %%
import dataclasses

answer_2 = None  # ← replace None with FLOPs per byte
half = dataclasses.replace(spec, dtype="bfloat16", weight_bytes=spec.n_params * 2)
check(answer_2, expected=perf.decode_cost(half, cost.context_tokens).intensity, rel_tol=0.05,
      unit="FLOP per byte", hint="2 FLOPs per parameter ÷ bytes per parameter")

# %% [markdown]
# **3.** What limits how fast this model decodes on your machine?

# %%
answer_3 = None  # ← replace None with one of the options, copied exactly
options = ["the arithmetic units (FLOP/s)", "memory bandwidth (bytes/s)",
           "the tokenizer", "the length of the prompt"]
multiple_choice(answer_3, options, correct=options[1],
                why="each step fetches every weight for one token, about half a FLOP per byte, "
                    "far below the ridge point: the arithmetic units wait for memory.",
                hint="compare a decode step's FLOP per byte with the ridge point above.")

# %% [markdown]
# ## Next
#
# [05 · The KV cache →](05_kv_cache.ipynb): what the cache in the explorer holds, why decode
# would be far slower without it, and what it costs in memory.

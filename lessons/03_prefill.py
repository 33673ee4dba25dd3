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
# # 03 · Prefill
#
# Before a model can write a single word, it has to read your prompt. It does that in
# **one** forward pass over all the prompt's tokens together: the *prefill*. The pass ends
# with a score for every possible next token, so the first token of the reply is chosen
# straight away. The wait until that first token appears is called the **time to first
# token (TTFT)**.
#
# In this lesson you will see the prompt go in all at once, check that one pass over N tokens
# gives exactly what N separate passes would, measure how TTFT grows with the prompt's length
# on your machine, and count the arithmetic that keeps the processor busy while it happens.

# %%
import time

import numpy as np
import torch

import viz
from viz import perf, views

lm = viz.load_model()
spec = lm.spec
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the very first pass pays set-up costs

# %% [markdown]
# Type your own prompt here if you like (keep it short: a few dozen tokens at most, so the
# cells below stay quick). It is fed to the model as plain text, not as a chat.

# %%
my_prompt = "The capital of France is Paris. The capital of Italy is"  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=8)
print(f"{len(trace.prompt_tokens)} prompt tokens → {trace.generated_text!r}")

# %% [markdown]
# ## See it: the whole prompt in one pass
#
# Each step of the recording says how many tokens its forward pass was fed
# (`step.input_tokens`). Step 0, the prefill, takes the whole prompt; every later step takes a
# single token (that is decode, the next lesson).

# %%
for s in trace.steps[:4]:
    print(f"step {s.index} ({s.phase:7}): fed {s.input_tokens:2} tokens, "
          f"sequence now {s.seq_len:2} tokens, chose {s.token_text!r}")

# %% [markdown]
# On a time axis (top): a grey sliver for tokenizing the text, the blue bar for the prefill
# pass, and a vertical line where the first token appears: the TTFT. The orange bars after it
# are decode steps, one token each. Below, each step's latency. Hover over a bar for its
# duration on your machine.

# %% tags=["nbval-ignore-output"]
display(views.summary_html(trace))
views.timeline_figure(trace)

# %% [markdown]
# ### Drag the prompt length
#
# What does a longer prompt cost? Move the slider: each new position builds a prompt of
# exactly that many tokens, runs a real prefill on your machine and adds a point to the
# chart. The big dot is the prompt you chose last.

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import plotly_layout
from viz.views import palette
from viz.views import LinkedView

measured = {}  # prompt tokens → a one-token recording of that length


# %%
def prefill_chart(values):
    n = values["prompt tokens"]
    if n not in measured:  # a real prefill of exactly n tokens, on this machine
        measured[n] = viz.record(lm, perf.prompt_of_length(lm.tokenizer, n), max_new_tokens=1,
                                 embeddings=False)
    xs = sorted(measured)
    fig = go.Figure(go.Scatter(x=xs, y=[measured[k].ttft_s * 1000 for k in xs], mode="markers",
                               marker={"color": palette.PREFILL, "size": 9}, name="measured"))
    fig.add_scatter(x=[n], y=[measured[n].ttft_s * 1000], marker={"color": palette.CHOSEN, "size": 15},
                    name="your choice")
    return fig.update_layout(**plotly_layout(
        f"{n} prompt tokens: TTFT {measured[n].ttft_s * 1000:.0f} ms", height=350,
        xaxis={"title": "prompt tokens", "rangemode": "tozero"},
        yaxis={"title": "TTFT (ms)", "rangemode": "tozero"}))


# %%
length = widgets.IntSlider(value=64, min=8, max=256, step=8, description="prompt tokens",
                           continuous_update=False, style={"description_width": "initial"})
LinkedView({"prompt tokens": length}, [length], prefill_chart)

# %% [markdown]
# ## Understand it: one pass, every position at once
#
# Inside the model, a prompt of N tokens is a matrix with N rows, one per token. Every layer
# multiplies that whole matrix by its weights in one go. Attention is *causal*: the row of
# token *k* may only look at tokens 0 … *k*, never ahead. So the row of token *k* ends up
# exactly as it would if the prompt had stopped at token *k*.
#
# Let's check that claim. First one forward pass over the whole prompt, keeping the scores
# (logits) at every position; then N separate passes, each over a prompt one token longer
# than the last, keeping only each one's final position.

# %%
ids, clock = torch.tensor([trace.prompt_ids]), time.perf_counter
with torch.inference_mode():
    t0 = clock()
    together = lm.model(ids).logits[0]  # ONE pass: a row of scores per position
    t1 = clock()
    apart = torch.stack([lm.model(ids[:, :k]).logits[0, -1]  # N passes, growing by one
                         for k in range(1, ids.shape[1] + 1)])
    t2 = clock()
print(f"one pass  {tuple(together.shape)} in {(t1 - t0) * 1000:.0f} ms")
print(f"N passes  {tuple(apart.shape)} in {(t2 - t1) * 1000:.0f} ms")
print("same scores at every position:", torch.allclose(together, apart, atol=1e-3))

# %% [markdown]
# Same scores at every position, from one pass instead of N: compare the two times. The N
# passes repeat work (the first tokens are processed again in every pass) and read all the
# weights N times; the single pass reads them once for all the rows.
#
# Only the **last** row matters for the reply: it scores the token that comes after the whole
# prompt. It should be exactly what the recording saw at step 0:

# %%
last, step0 = together[-1].numpy(), trace.steps[0]
print("same top-20 scores as the trace:", np.allclose(last[step0.top_ids], step0.top_logits,
                                                      atol=1e-3))
print("its best token:", repr(lm.tokenizer.decode(int(last.argmax()))),
      "| the trace chose:", repr(step0.token_text))

# %% [markdown]
# The other rows are not wasted: while computing them each layer stores the token's keys and
# values, which decode will reuse (lesson 05). `viz.record` asks the model for the last row's
# scores only (`logits_to_keep=1`), as Hugging Face's `generate` does; the prefill is written
# out in [`viz/record.py`](../viz/record.py), step 2 (in a cell, `viz.record??` shows it).

# %% [markdown]
# ## Measure it: what TTFT is made of
#
# `trace.timing` splits the time to first token into its parts.

# %%
t = trace.timing
parts = {"tokenize": t.tokenize_s, "prefill forward pass": t.prefill_forward_s,
         "choose the first token": t.prefill_sample_s}
for name, seconds in parts.items():
    print(f"{name:24} {seconds * 1000:.2f} ms")
print(f"{'TTFT':24} {t.ttft_s * 1000:.2f} ms")
print("largest part:", max(parts, key=parts.get))

# %% [markdown]
# The forward pass is nearly all of it: turning text into ids and picking one token are cheap
# next to pushing every prompt token through all the model's layers.
#
# ### TTFT against prompt length
#
# `perf.prompt_length_sweep` records a one-token reply to prompts of several exact lengths
# (after one warm-up run) and tabulates TTFT, prefill tokens per second and arithmetic speed.

# %% tags=["nbval-ignore-output"]
sweep = perf.prompt_length_sweep(lm, [16, 32, 64, 128], repeats=2, progress=False)
print(sweep)

# %% [markdown]
# Solid lines are yours; dashed lines are a reference measured on a quiet 2-core CPU when the
# course was built (`perf.load_reference("cpu-prompt-sweep")`).

# %% tags=["nbval-ignore-output"]
from viz.views import sweep_figure

sweep_figure(sweep, perf.load_reference("cpu-prompt-sweep"))

# %% [markdown]
# Two things to read off the panels. **Left:** TTFT goes up with the prompt's length: more
# tokens, more work. **Middle:** yet the prefill usually gets through *more tokens per
# second* the longer the prompt is. A pass over 16 tokens and a pass over 128 both read every
# weight of the model from memory once; the longer one does 8 times as much arithmetic with
# each weight it has fetched. (If your points zig-zag, something else was using the CPU while
# they were measured: run the cell again.)
#
# A straight line through your points, TTFT ≈ *a* + *b* · tokens, gives a rule of thumb for
# this machine:

# %% tags=["nbval-ignore-output"]
tokens, ttft = np.array(sweep.column("prompt_tokens")), sweep.column("ttft_s")
b, a = np.polyfit(tokens, ttft, 1)  # slope b, intercept a (seconds)
print(f"a = {a * 1000:.1f} ms (fixed cost)   b = {b * 1000:.2f} ms per prompt token")
speed = sweep.column("prefill_tokens_per_s")
print(f"prefill speed: {speed[0]:.1f} tokens/s at {tokens[0]} tokens, "
      f"{speed[-1]:.1f} tokens/s at {tokens[-1]} tokens")

# %% [markdown]
# ### Why prefill keeps the arithmetic units busy
#
# Nearly all of a forward pass is matrix products: each weight of a layer is multiplied by
# each token's numbers once and added to a sum, 2 floating-point operations (FLOPs) per weight
# per token. The embedding table is not multiplied (a token just picks its row), and the
# output head scores only the last position. So a prefill of *n* tokens costs about
#
# $$\text{FLOPs} \approx 2 \times \text{non-embedding parameters} \times n .$$
#
# `perf.prefill_cost` counts them exactly from the model's shape, attention included. For
# prompts up to a few hundred tokens the rule of thumb is within a few percent (attention's
# share grows with the prompt's length):

# %%
non_embedding = spec.n_params - spec.vocab_size * spec.hidden_size
print(f"non-embedding parameters: {non_embedding:,}")
for n in (16, 128, 256):
    exact = perf.prefill_cost(spec, n).flops
    print(f"{n:4} tokens: rule {2 * non_embedding * n / 1e9:6.1f} GFLOP, "
          f"counted {exact / 1e9:6.1f} GFLOP")

# %% [markdown]
# And the bytes it must move? Every weight is read from memory once per pass, whatever the
# prompt's length; only the few per-token extras (embedding rows, keys and values) grow with
# it. `perf.prefill_cost` counts those too. Dividing FLOPs by bytes gives the **arithmetic
# intensity**: how much arithmetic the processor gets to do for each byte it fetches.

# %%
print(f"{'tokens':>6} {'GFLOP':>8} {'MB moved':>9} {'FLOP per byte':>14}")
for n in (1, 8, 64, 512):
    c = perf.prefill_cost(spec, n)
    print(f"{n:6} {c.flops / 1e9:8.2f} {c.bytes / 1e6:9.1f} {c.intensity:14.1f}")

# %% [markdown]
# The bytes barely move while the FLOPs grow with the tokens, so the intensity grows in step
# with the prompt's length. Whether that keeps the arithmetic
# units busy depends on the machine: `perf.measure_peaks` times a large matrix product (the
# most FLOP/s this machine does) and a large memory copy (the most bytes/s it moves). Their
# ratio, the **ridge point**, is the intensity at which both limits are hit at once. A pass
# below it waits for memory; a pass above it waits for arithmetic: it is *compute-bound*. (A
# very short prompt may land below the ridge: with few tokens, each fetched weight is used too
# few times to keep the arithmetic busy.)

# %% tags=["nbval-ignore-output"]
peaks = perf.measure_peaks(copy_bytes=128 << 20)
print(f"peak arithmetic {peaks.flops_per_s / 1e9:.1f} GFLOP/s, "
      f"peak memory {peaks.bytes_per_s / 1e9:.1f} GB/s")
print(f"ridge point: {peaks.ridge_intensity:.1f} FLOP per byte")
for n in sweep.column("prompt_tokens"):
    above = perf.prefill_cost(spec, n).intensity > peaks.ridge_intensity
    print(f"prefill of {n:3} tokens: {'compute' if above else 'memory'}-bound")

# %% [markdown]
# How close did the sweep's prefills come to the arithmetic ceiling? The last panel of this
# figure is the sweep's achieved GFLOP/s, with the measured peak as a dashed line.

# %% tags=["nbval-ignore-output"]
for n, achieved in zip(sweep.column("prompt_tokens"), sweep.column("achieved_flops_per_s")):
    print(f"{n:3} tokens: {achieved / 1e9:5.1f} GFLOP/s = {achieved / peaks.flops_per_s:4.0%} "
          "of the peak")
sweep_figure(sweep, peaks=peaks)

# %% [markdown]
# Read the percentages above. They usually climb with the prompt's length, because each
# weight fetched from memory serves more tokens (a whole model is more than one big, tidy
# matrix product, so it seldom gets all the way to the peak). That is the sense in which
# prefill is compute-bound: above the ridge point the arithmetic units set the pace, and a
# longer prompt keeps them busier. Lesson 06 draws both phases on one chart, the roofline.

# %% [markdown]
# ## Check yourself
#
# Replace `None` with your answer and run the cell: it tells you whether you are right.

# %%
from viz import check, multiple_choice

# %% [markdown]
# **1.** Using the line fitted above (*a* and *b*), predict the TTFT, in seconds, of a prompt
# twice as long as the longest one in your sweep.

# %%
answer_1 = None  # ← replace None with your prediction, in seconds
check(answer_1, expected=float(a + b * 2 * tokens[-1]), rel_tol=0.15, unit="s",
      hint=f"a + b × {2 * tokens[-1]}, with a and b in seconds (divide the ms above by 1000)")

# %% [markdown]
# Now measure it for real and compare with the line's prediction (run it after answering):

# %%
long = viz.record(lm, perf.prompt_of_length(lm.tokenizer, int(2 * tokens[-1])),
                  max_new_tokens=1, embeddings=False)
print(f"predicted {(a + b * 2 * tokens[-1]) * 1000:.0f} ms, measured {long.ttft_s * 1000:.0f} ms")

# %% [markdown]
# **2.** How many FLOPs does a prefill of a 100-token prompt take on this model? Use the rule
# of thumb with the non-embedding parameter count printed above.

# %%
answer_2 = None  # ← replace None with a number of FLOPs, e.g. 1.5e9
check(answer_2, expected=perf.prefill_cost(spec, 100).flops, rel_tol=0.05, unit="FLOPs",
      hint="2 × non-embedding parameters × 100 tokens")

# %% [markdown]
# **3.** What does TTFT measure?

# %%
answer_3 = None  # ← replace None with one of the options, copied exactly
options = ["the time to load the model",
           "the time from sending the prompt until the first token of the reply is chosen",
           "the time to write the whole reply",
           "the average time of one decode step"]
multiple_choice(answer_3, options, correct=options[1],
                why="tokenizing, the one prefill pass over the prompt and choosing a token: "
                    "all before the reader sees anything.",
                hint="look at where the vertical line sits in the timeline above.")

# %% [markdown]
# ## Next
#
# [04 · Decode →](04_decode.ipynb): after the first token, the model writes one token per
# pass, and a very different limit takes over.

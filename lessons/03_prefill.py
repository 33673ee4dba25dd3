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
# on your machine, and count the arithmetic it does and the bytes it reads, to find which of
# the two limits it on your machine, and on a GPU.

# %%
import time

import numpy as np
import torch

import viz
from viz import perf, views

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
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
# On a time axis (top): a grey bar for tokenizing the text, a blue bar for the prefill
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
# ## Understand it: one layer, drawn
#
# What does one pass compute? The model is a stack of 30 identical layers, and a layer is
# mostly six matrix products. A prompt of N tokens enters a layer as a matrix **X** with N
# rows, one per token (each row a token's vector, lesson 01). In the layer's **attention**
# half, X is multiplied by three weight matrices into each token's **query** (what it looks
# for), **key** (what it offers to be found by) and **value** (what it hands over). Each query
# is compared with the keys (`scores = Q·Kᵀ`), a softmax turns each row of scores into weights
# that add up to 1 (lesson 02's softmax), and those weights mix the values; a fourth weight
# matrix, **W_o**, joins the heads' mixed values ("attention out" in the figure). Positions
# enter here (lesson 01: queries and keys are rotated by their positions). The layer's **MLP**
# half is two more products: the input meets two weight matrices side by side (*gate* and
# *up*), an element-wise step (SiLU) combines them, and a third matrix (*down*) brings the
# result back to the model's width.
#
# The figure draws one layer to this model's real shapes (sides on a log scale, so that a
# single row still shows). Left, the prefill of your prompt: every product is matrix ×
# matrix, and each weight read from memory is used once per prompt token. Right, one step of
# decode (the next lesson): a single new token, so the weight products become vector ×
# matrix, each weight used once per read. Its one query meets the keys and values of every
# token before it, which the model kept from earlier passes instead of computing them again:
# that store, orange here, is the **KV cache** of lesson 05.

# %%
views.layer_diagram_figure(spec, len(trace.prompt_tokens), trace.steps[-1].seq_len)

# %% [markdown]
# The same products counted: arithmetic per layer, and how many FLOPs each byte of weights
# read from memory pays for. Keep the two ratios in mind; the end of this lesson and the next
# one are about them.

# %%
layer = views.layer_diagram_data(spec, len(trace.prompt_tokens), trace.steps[-1].seq_len)
for phase in ("prefill", "decode"):
    print(f"{phase:7}: {layer.flops(phase) / 1e6:5.1f} MFLOP per layer, "
          f"{layer.flops(phase) / layer.weight_bytes():.2f} FLOP per byte of weights read")

# %% [markdown]
# ### One pass, every position at once
#
# In the prefill, every layer multiplies the whole matrix of N rows by its weights in one go.
# Attention is *causal*: the row of token *k* may only look at tokens 0 … *k*, never ahead. So
# the row of token *k* ends up exactly as it would if the prompt had stopped at token *k*.
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
# `trace.timing` splits the time to first token into three parts: turning the text into ids,
# the prefill forward pass, and choosing the first token.
#
# **Predict.** Which of the three is the largest?

# %%
PARTS = ["tokenize", "prefill forward pass", "choose the first token"]
prediction_largest = None  # ← your guess: one of PARTS, copied exactly

# %%
t = trace.timing
parts = dict(zip(PARTS, (t.tokenize_s, t.prefill_forward_s, t.prefill_sample_s)))
for name, seconds in parts.items():
    print(f"{name:24} {seconds * 1000:.2f} ms")
print(f"{'TTFT':24} {t.ttft_s * 1000:.2f} ms")
largest = max(parts, key=parts.get)
print("largest part:", largest)

# %%
from viz import compare_prediction

compare_prediction(prediction_largest, largest, options=PARTS,
                   hint="how much work does each part do: a dictionary look-up, a pass "
                        "through the model, a pick among scores?")

# %% [markdown]
# Turning text into ids and picking one token are cheap next to pushing every prompt token
# through all the model's layers.
#
# ### TTFT against prompt length
#
# `perf.prompt_length_sweep` records a one-token reply to prompts of several exact lengths
# (after one warm-up run; medians of 2 repeats) and tabulates TTFT, prefill tokens per second
# and arithmetic speed.

# %% tags=["nbval-ignore-output"]
sweep = perf.prompt_length_sweep(lm, [16, 32, 64, 128], repeats=2, progress=False)
print(sweep)

# %% [markdown]
# Solid lines are yours. Dashed lines are a reference shipped with the course
# (`perf.load_reference("cpu-prompt-sweep")`), recorded on the project's own machine; its label
# says how (threads, and how busy that shared machine was):

# %%
reference = perf.load_reference("cpu-prompt-sweep")
print(reference.label)

# %% tags=["nbval-ignore-output"]
from viz.views import sweep_figure

sweep_figure(sweep, reference)

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
print(f"a = {a * 1000:.1f} ms (paid by every prompt)   b = {b * 1000:.2f} ms per prompt token")
speed = sweep.column("prefill_tokens_per_s")
print(f"prefill speed: {speed[0]:.1f} tokens/s at {tokens[0]} tokens, "
      f"{speed[-1]:.1f} tokens/s at {tokens[-1]} tokens")

# %% [markdown]
# ### What *a* is made of
#
# Even a prompt of a few tokens waits about *a*. Two costs of a pass do not grow with the
# prompt's length; measure each:
#
# - **a fixed cost per pass**: Python and PyTorch starting hundreds of small operations, 30
#   layers deep. `perf.measure_overhead` times a model of the same depth whose layers are only
#   64 numbers wide (almost nothing to read or compute): its time per pass *is* that cost;
# - **reading every weight once**. At this machine's memory read speed, measured once and
#   cached by `perf.cached_peaks()` (it prints when and how), that is the shortest it can
#   take. But a prompt is several rows, and the kernel that multiplies several rows by a
#   weight matrix may read it more slowly than a plain read: time the largest weight matrix,
#   the output head, multiplied by 2 rows (`perf.linear_seconds`), for the speed that kernel
#   streams weights at.

# %% tags=["nbval-ignore-output"]
peaks = perf.cached_peaks()
floor, _ = perf.measure_overhead([spec.n_layers], spec.dtype, max_new_tokens=8, repeats=1)
fixed_s = floor.at(spec.n_layers)  # one pass of a 30-layer model with almost no weights
head = lm.model.lm_head.weight
head_rate = head.numel() * head.element_size() / perf.linear_seconds(head, 2)  # bytes/s
print(peaks.how)

# %% tags=["nbval-ignore-output"]
read_s, slow_read_s = spec.weight_bytes / peaks.bytes_per_s, spec.weight_bytes / head_rate
print(f"a                                              {a * 1e3:6.1f} ms")
print(f"fixed cost per pass (30 layers, 64 wide)       {fixed_s * 1e3:6.1f} ms")
if a > fixed_s:
    print(f"a − fixed cost, if it is all weight reading    {(a - fixed_s) * 1e3:6.1f} ms: "
          f"{spec.weight_bytes / (a - fixed_s) / 1e9:.1f} GB/s")
print(f"the weights at a plain read's {peaks.bytes_per_s / 1e9:.1f} GB/s       {read_s * 1e3:6.1f} ms")
print(f"the weights at a 2-row product's {head_rate / 1e9:.1f} GB/s     {slow_read_s * 1e3:6.1f} ms")

# %% [markdown]
# Read it from the top. Take the fixed cost away from *a*, suppose the rest is spent reading
# every weight once, and compare the speed that implies with the two measured ones: a plain
# read of one big block, and the output head multiplied by 2 rows. A prompt's matrix products
# are neither: 200-odd matrices of other shapes, multiplied by 16 to 128 rows. *a* is the
# price of one pass through the model, paid by a prompt of any length: the fixed cost, plus
# the rest. If the implied speed of that rest is well under a plain read's, as on the run this
# notebook was saved from, the weights were streamed in by kernels that read more slowly than
# the memory can deliver. (A line through four noisy points can put *a* anywhere, even below
# the fixed cost: then no speed is printed; run the sweep again.)
#
# The slope *b* is the other half: each extra prompt token adds its own arithmetic, about
# 2 FLOPs per weight. Divide that arithmetic by *b* for the speed the processor really
# computes at, and compare it with its peak (the fastest large matrix product, from the
# same cached measurement):

# %% tags=["nbval-ignore-output"]
per_token = (perf.prefill_cost(spec, 128).flops - perf.prefill_cost(spec, 64).flops) / 64
print(f"each extra token: {per_token / 1e9:.2f} GFLOP in {b * 1e3:.2f} ms = "
      f"{per_token / b / 1e9:.1f} GFLOP/s, {per_token / b / peaks.flops_per_s:.0%} of the "
      f"peak {peaks.flops_per_s / 1e9:.1f} GFLOP/s")

# %% [markdown]
# **Predict.** Using the line (*a* and *b*, in seconds), what TTFT, in seconds, do you expect
# for a prompt twice as long as the longest one in your sweep? It is measured next.

# %%
prediction_long = None  # ← your guess, in seconds

# %%
long = viz.record(lm, perf.prompt_of_length(lm.tokenizer, int(2 * tokens[-1])),
                  max_new_tokens=1, embeddings=False)
print(f"{len(long.prompt_tokens)} tokens: TTFT {long.ttft_s * 1000:.0f} ms")

# %%
compare_prediction(prediction_long, long.ttft_s, unit="s", rel_tol=0.25,
                   hint="a + b × tokens, with a and b in seconds (the figures above are in ms)")

# %% [markdown]
# ### What limits a prefill: the arithmetic or the reading?
#
# Nearly all of a forward pass is matrix products: each weight of a layer is multiplied by
# each token's numbers once and added to a sum, 2 floating-point operations (FLOPs) per weight
# per token. The embedding table is not multiplied (a token just picks its row), and the
# output head scores only the last position. So a prefill of *n* tokens costs about
#
# $$\text{FLOPs} \approx 2 \times \text{non-embedding parameters} \times n .$$

# %%
non_embedding = spec.n_params - spec.vocab_size * spec.hidden_size
print(f"non-embedding parameters: {non_embedding:,}")

# %% [markdown]
# **Predict.** With that rule, how many FLOPs does a prefill of a 100-token prompt take?

# %%
prediction_flops = None  # ← your guess, a number of FLOPs (e.g. 1.5e9)

# %% [markdown]
# `perf.prefill_cost` counts them exactly from the model's shape, attention included. For
# prompts up to a few hundred tokens the rule of thumb is within a few percent (attention's
# share grows with the prompt's length):

# %%
counted = {n: perf.prefill_cost(spec, n).flops for n in (16, 100, 128, 256)}
for n, exact in counted.items():
    print(f"{n:4} tokens: rule {2 * non_embedding * n / 1e9:6.1f} GFLOP, "
          f"counted {exact / 1e9:6.1f} GFLOP")

# %%
compare_prediction(prediction_flops, counted[100], unit="FLOPs", rel_tol=0.05,
                   hint="2 × non-embedding parameters × tokens")

# %% [markdown]
# And the bytes it must move? Every weight is read from memory once per pass, whatever the
# prompt's length; only the few per-token extras (embedding rows, keys and values) grow with
# it. `perf.prefill_cost` counts those too. Dividing FLOPs by bytes gives the **arithmetic
# intensity**: how much arithmetic the processor gets to do for each byte it fetches.

# %%
print(f"{'tokens':>6} {'GFLOP':>8} {'MB moved':>9} {'FLOP per byte':>14}")
for n in (1, 8, 64, 128, 512):
    c = perf.prefill_cost(spec, n)
    print(f"{n:6} {c.flops / 1e9:8.2f} {c.bytes / 1e6:9.1f} {c.intensity:14.1f}")

# %% [markdown]
# The bytes barely move while the FLOPs grow with the tokens, so the intensity grows in step
# with the prompt's length. Which limit a pass meets first follows from three measured times
# (the rule `perf.regime`, used by every lesson from here on):
#
# - the **memory floor**: its bytes ÷ the read speed (the shortest time the reading allows);
# - the **compute floor**: its FLOPs ÷ the peak FLOP/s (the shortest time the arithmetic
#   allows);
# - the **fixed cost** per pass, measured above.
#
# A pass is *overhead-bound* if the fixed cost is at least half its measured time; otherwise
# *compute-bound* if its compute floor is at least its memory floor, else *memory-bound*.
# The rule on each prefill of your sweep (`perf.pass_regime`, with the comparison that decided
# it):

# %% tags=["nbval-ignore-output"]
for n, seconds in zip(sweep.column("prompt_tokens"), sweep.column("prefill_forward_s")):
    c = perf.prefill_cost(spec, n)
    print(f"prefill of {n:3} tokens: "
          + perf.pass_regime(c.flops, c.bytes, seconds, peaks, fixed_s, explain=True))

# %% [markdown]
# And how close did those prefills come to the arithmetic ceiling? The last panel of this
# figure is the sweep's achieved GFLOP/s, the peak a dashed line:

# %% tags=["nbval-ignore-output"]
for n, achieved in zip(sweep.column("prompt_tokens"), sweep.column("achieved_flops_per_s")):
    print(f"{n:3} tokens: {achieved / 1e9:5.1f} GFLOP/s = {achieved / peaks.flops_per_s:4.0%} "
          "of the peak")
sweep_figure(sweep, peaks=peaks)

# %% [markdown]
# Read the two together. A verdict of the rule is a comparison of floors: "compute-bound"
# means the arithmetic would need longer than the reading, at this machine's peaks (and the
# fixed cost is under half the pass). It does not mean the arithmetic units ran flat out: the
# whole passes reach only the percentages printed above, even where each *extra* token (the
# slope *b*) came near the peak. The gap is *a*: the fixed cost and the slower reading of
# *What a is made of*, paid once per pass whatever its length; it weighs less as a longer
# prompt gives each fetched weight more work.
#
# ### The same prefill on a GPU
#
# Where the line between the two regimes falls depends on the machine. The **ridge point**,
# peak FLOP/s ÷ read speed, is the intensity at which the two floors are equal. This
# machine's comes from its cached measurement; an NVIDIA H100's is **computed** from its
# published datasheet (`perf.H100_SXM`: 989 TFLOP/s of bfloat16 arithmetic, 3.35 TB/s of
# memory), not measured here. GPUs serve in bfloat16 (2 bytes per number), so the GPU column
# uses the same model shape in bfloat16:

# %% tags=["nbval-ignore-output"]
gpu = perf.H100_SXM
gpu_ridge = gpu["flops_per_s"]["bfloat16"] / gpu["bytes_per_s"]
print(f"this machine ({peaks.dtype}, measured):  ridge {peaks.ridge_intensity:6.1f} FLOP per byte")
print(f"{gpu['device_name']} (bfloat16, COMPUTED): ridge {gpu_ridge:6.1f} FLOP per byte")

# %% [markdown]
# **Predict.** By the same rule (and no fixed cost, which the datasheet does not give), what
# is a 128-token prefill on the H100?

# %%
prediction_gpu_regime = None  # ← your guess: "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
def by_floors(cost, flops_per_s, bytes_per_s):
    """The rule on a computed pass: its floors only (no fixed cost: none is published)."""
    memory, compute = cost.bytes / bytes_per_s, cost.flops / flops_per_s
    return perf.regime(max(memory, compute), memory, compute, 0.0)


bf16 = perf.config_spec("smollm2-135m", dtype="bfloat16")  # this model's shape, 2 bytes each
here, there = {}, {}
for n in (16, 128, 512, 2048):
    here[n] = by_floors(perf.prefill_cost(spec, n), peaks.flops_per_s, peaks.bytes_per_s)
    there[n] = by_floors(perf.prefill_cost(bf16, n), gpu["flops_per_s"]["bfloat16"],
                         gpu["bytes_per_s"])
    print(f"prefill of {n:4} tokens: here {here[n]:13}  H100 (computed) {there[n]}")

# %%
compare_prediction(prediction_gpu_regime, there[128], options=["memory-bound", "compute-bound"],
                   hint="compare a 128-token prefill's intensity in bfloat16 (from the "
                        "float32 table above: half the bytes) with the H100's ridge")

# %% [markdown]
# The same pass can sit on either side of the line: a machine whose arithmetic is fast
# compared with its memory (a GPU) needs far longer prompts before prefill's arithmetic, not
# its reading, sets the pace. "Prefill is compute-bound" is a statement about a prompt length
# *and* a machine, which is why this course prints the rule's verdict on your numbers instead
# of asserting it. Lesson 06 draws both phases on one chart, the roofline.
#
# ## Next
#
# [04 · Decode →](04_decode.ipynb): after the first token, the model writes one token per
# pass, and a very different limit takes over.

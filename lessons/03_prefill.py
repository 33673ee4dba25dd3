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
# gives what N separate passes would (the same up to rounding), measure how TTFT grows with
# the prompt's length on your machine, and count the arithmetic it does and the bytes it
# reads, to find which of the two limits it on your machine, and on a GPU.

# %%
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
# duration on your machine. The card and the bars are this one run, with no spread.

# %% tags=["nbval-ignore-output"]
display(views.summary_html(trace))
views.timeline_figure(trace)

# %% [markdown]
# ### Drag the prompt length
#
# What does a longer prompt cost? Move the slider: each new position builds a prompt of
# exactly that many tokens, runs a real prefill on your machine and adds a point to the
# chart. The big dot is the prompt you chose last. Each point is a single run, with no spread:
# a moment when something else used the CPU shows as a point off the curve (the sweep below
# repeats each length).

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
length = widgets.IntSlider(value=64, min=8, max=192, step=8, description="prompt tokens",
                           continuous_update=False, style={"description_width": "initial"})
LinkedView({"prompt tokens": length}, [length], prefill_chart)

# %% [markdown]
# ## Understand it: one layer, drawn
#
# What does one pass compute? The model is a stack of 30 identical layers, and a layer is
# mostly matrix products: seven with weight matrices, two more inside attention. A prompt of N
# tokens enters a layer as a matrix **X** with N rows, one per token (each row a token's
# vector, lesson 01). In the layer's **attention** half, X is multiplied by three weight
# matrices into each token's **query** (what it looks for), **key** (what it offers to be found
# by) and **value** (what it hands over). Each query is compared with the keys
# (`scores = Q·Kᵀ`), a softmax turns each row of scores into weights that add up to 1 (lesson 02's
# softmax), and those weights mix the values; a fourth weight matrix, **W_o**, joins the heads'
# mixed values ("attention out" in the figure). Positions enter here (lesson 01: queries and
# keys are rotated by their positions). The layer's **MLP** half is three more products: the
# input meets two weight matrices side by side (*gate* and *up*), an element-wise step (SiLU)
# combines them, and a third matrix (*down*) brings the result back to the model's width.
#
# The figure draws one layer to this model's real shapes (sides on a log scale, so that a
# single row still shows). Left, the prefill of your prompt: every product is matrix ×
# matrix, and each weight read from memory is used once per prompt token. Right, one step of
# decode (the next lesson): a single new token, so the weight products become vector ×
# matrix, each weight used once per read. Its one query meets the keys and values of the
# tokens before it, which the model kept from earlier passes instead of computing them again:
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
# the row of token *k* ends up as it would if the prompt had stopped at token *k* (the same
# numbers, up to rounding).
#
# Let's check that claim. First one forward pass over the whole prompt, keeping the scores
# (logits) at every position; then N separate passes, each over a prompt one token longer
# than the last, keeping only each one's final position.

# %%
ids, n = torch.tensor([trace.prompt_ids]), len(trace.prompt_ids)
with torch.inference_mode():
    together = lm.model(ids).logits[0]  # ONE pass: a row of scores per position
    apart = torch.stack([lm.model(ids[:, :k]).logits[0, -1]  # N passes, growing by one
                         for k in range(1, n + 1)])
print(f"one pass: {tuple(together.shape)};  N passes: {tuple(apart.shape)}")
print("same scores at every position, up to rounding:", torch.allclose(together, apart, atol=1e-3))

# %% [markdown]
# Same scores at every position, from one pass instead of N. The N passes repeat work (the
# first tokens go through the layers again in every pass), and each reads all the weights.
#
# **Predict.** How many times as long as the one pass will the N passes take? (N is your
# prompt's length: the first number printed above.)

# %%
prediction_passes = None  # ← your guess: (time of the N passes) ÷ (time of the one pass)

# %% tags=["nbval-ignore-output"]
with torch.inference_mode():  # perf.kernel_spread: runs after a warm-up, their median and spread
    one = perf.kernel_spread(lambda: lm.model(ids), repeats=5)
    many = perf.kernel_spread(lambda: [lm.model(ids[:, :k]) for k in range(1, n + 1)], repeats=2)
passes_x, rows_x = many / one, (n + 1) / 2  # N passes ÷ one; their token rows ÷ the one pass's
print(f"one pass {one.text(1e3, 'ms')};  {n} passes {many.text(1e3, 'ms')}: "
      f"{passes_x.text(unit='times')}")
print(f"they push {rows_x:.1f}× as many token rows through the layers and read the weights {n}× "
      f"as often: the time is nearer the " + ("passes'" if passes_x.median > (n * rows_x) ** 0.5
                                              else "token rows'") + " ratio")

# %%
from viz import compare_prediction

compare_prediction(prediction_passes, passes_x.median, rel_tol=0.25,
                   hint="count, for each way, the passes and the token rows that go through the "
                        "layers; then ask which of the two a short pass's time follows")

# %% [markdown]
# A ratio near N says a short pass pays much of its time whatever its length; the sweep below
# measures that part.
#
# Only the **last** row matters for the reply: it scores the token that comes after the whole
# prompt. It should be what the recording saw at step 0, up to rounding:

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
# `trace.timing` splits the time to first token into three parts (of this one run): turning
# the text into ids, the prefill forward pass, and choosing the first token.

# %%
PARTS = ["tokenize", "prefill forward pass", "choose the first token"]
t = trace.timing
parts = dict(zip(PARTS, (t.tokenize_s, t.prefill_forward_s, t.prefill_sample_s)))
for name, seconds in parts.items():
    print(f"{name:24} {seconds * 1000:.2f} ms")
print(f"{'TTFT':24} {t.ttft_s * 1000:.2f} ms")
largest = max(parts, key=parts.get)
print("largest part:", largest)

# %% [markdown]
# Turning text into ids and picking one token are cheap next to pushing every prompt token
# through all the model's layers.
#
# ### TTFT against prompt length
#
# `perf.prompt_length_sweep` records a one-token reply to prompts of several exact lengths
# (after one warm-up run; 3 runs of each, interleaved) and tabulates the medians: TTFT, the
# prefill pass, prefill tokens per second and arithmetic speed.

# %% tags=["nbval-ignore-output"]
sweep = perf.prompt_length_sweep(lm, [16, 32, 64, 128], repeats=3, progress=False)
print(sweep)

# %% [markdown]
# Solid lines are yours; each point's bar is its **spread**, the range the middle half of its
# runs fell in. Dashed lines are a reference shipped with the course
# (`perf.load_reference("cpu-prompt-sweep")`), recorded on the project's own machine; its label
# says how (threads, and how busy that shared machine was):

# %%
reference = perf.load_reference("cpu-prompt-sweep")
print(reference.label)

# %% tags=["nbval-ignore-output"]
from viz.views import sweep_figure

sweep_figure(sweep, reference)

# %% [markdown]
# **Left:** TTFT goes up with the prompt's length: more tokens, more work. **Middle:** the
# prefill's speed in prompt tokens per second, shortest against longest prompt, with their
# spreads (if your points zig-zag, something else was using the CPU: run the sweep again):

# %% tags=["nbval-ignore-output"]
tokens = [int(n) for n in sweep.column("prompt_tokens")]
forward = sweep.spread("prefill_forward_s")  # per length: the median pass and its spread
speed = [s.rate(n) for n, s in zip(tokens, forward)]  # prompt tokens per second
print(f"{tokens[0]} tokens: {speed[0].text(1, 'tokens/s')};  "
      f"{tokens[-1]} tokens: {speed[-1].text(1, 'tokens/s')}")
print("the longer prompt went through faster per token, beyond the spreads"
      if speed[-1].low > speed[0].high else "the same speed within the spreads"
      if speed[-1].overlaps(speed[0]) else "the longer prompt went through more slowly")

# %% [markdown]
# A straight line through the points, TTFT ≈ *a* + *b* · tokens, splits each pass into a part
# paid once per pass whatever its length (*a*) and a part paid per token (*b*). Where *a* is a
# large share of a pass, a longer prompt shares it among more tokens, and goes through faster
# per token. The line is fitted to the medians by least squares, which makes *a* a weighted
# sum of the points' TTFTs (weights above 0 for short prompts, below 0 for long ones); *a*'s
# spread is the lowest and highest sum the points' spreads allow:

# %%
ttft = sweep.spread("ttft_s")  # per length: the median TTFT and its spread
fit = np.linalg.pinv(np.vander(tokens, 2))  # least squares: (b, a) = fit @ the TTFTs


def line_at(n):
    """The line's TTFT at n tokens, with the lowest and highest the points' spreads allow."""
    w = fit[1] + n * fit[0]  # each point's weight in the line's value at n
    med = sum(wi * s.median for wi, s in zip(w, ttft))
    low, high = (sum(wi * (s.low if (wi > 0) == down else s.high) for wi, s in zip(w, ttft))
                 for down in (True, False))
    return viz.Spread(med, min(low, med), max(high, med), ttft[0].runs, derived=True)


# %% tags=["nbval-ignore-output"]
a, b = line_at(0), line_at(1).median - line_at(0).median  # intercept (Spread), slope (s/token)
print(f"a = {a.text(1e3, 'ms')}: paid by every prompt;  b = {b * 1000:.2f} ms per prompt token")
for n, s in zip(tokens, ttft):
    print(f"{n:4} tokens: TTFT {s.text(1e3, 'ms')}, a is {a.median / s.median:4.0%} of it")
if a.median <= 0:
    print("a ≤ 0: four noisy points put the line too low; run the sweep again")

# %% [markdown]
# ### What limits a prefill: the arithmetic or the reading?
#
# Nearly all of a forward pass is matrix products: each weight of a layer is multiplied by
# each token's numbers once and added to a sum, 2 floating-point operations (FLOPs) per weight
# per token. The embedding table is not multiplied (a token just picks its row), and the
# output head scores only the last position. So a prefill of *n* tokens costs about
#
# $$\text{FLOPs} \approx 2 \times \text{non-embedding parameters} \times n .$$
#
# `perf.prefill_cost` counts them exactly from the model's shape, attention included; for
# prompts up to a few hundred tokens the rule of thumb is within a few percent (attention's
# share grows with the prompt's length):

# %%
non_embedding = spec.n_params - spec.vocab_size * spec.hidden_size
print(f"non-embedding parameters: {non_embedding:,}")
for n in (16, 128, 256):
    print(f"{n:4} tokens: rule {2 * non_embedding * n / 1e9:6.1f} GFLOP, "
          f"counted {perf.prefill_cost(spec, n).flops / 1e9:6.1f} GFLOP")

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
# (the rule `perf.pass_verdict`, used by every lesson from here on):
#
# - the **memory floor**: its bytes ÷ this machine's read speed (the shortest time the reading
#   allows);
# - the **compute floor**: its FLOPs ÷ its peak FLOP/s, the speed of a large matrix product
#   (the shortest time the arithmetic allows);
# - the **fixed cost** per pass: a model of the same depth whose layers are only 64 numbers
#   wide, which has almost nothing to read or compute (`perf.fixed_cost`).
#
# A pass is *overhead-bound* if the fixed cost is at least half its measured time; otherwise
# *compute-bound* if its compute floor is at least its memory floor, else *memory-bound*. The
# peaks and the fixed cost are measured once per machine (a few seconds, the first time a
# lesson asks) and reused, each with its spread; where the spreads straddle one of the rule's
# lines, it says **too close to call**.
#
# **Predict.** What will the rule say about the 16-token prefill of your sweep?

# %%
prediction_regime = None  # ← your guess: "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
machine = perf.machine_peaks()  # measured the first time on this machine, then reused
peaks = perf.cached_peaks()  # the same peaks in float32: the two roofs, with their spreads
fixed = perf.fixed_cost(spec.n_layers)  # one pass of a 30-layer model with almost no weights
print(machine.status)
print(perf.yardsticks())  # the peaks and the fixed cost, as every lesson prints them
verdicts = {n: perf.pass_verdict(perf.prefill_cost(spec, n).flops, perf.prefill_cost(spec, n).bytes,
                                 s, peaks, fixed) for n, s in zip(tokens, forward)}
print("compute- or memory-bound names the longer floor; MFU and MBU, how near each roof it came:")
for n, v in verdicts.items():
    print(f"prefill of {n:3} tokens: {v.regime:17}  MFU {v.mfu:4.0%}  MBU {v.mbu:4.0%}  "
          f"fixed cost {v.fixed_share.median:4.0%} of the pass")
verdict = verdicts[tokens[0]]
print(f"{tokens[0]} tokens:", verdict)

# %%
compare_prediction(prediction_regime, verdict, options=list(perf.REGIMES),
                   hint="compare the fixed cost with half the pass, then the two floors: "
                        "FLOPs ÷ peak FLOP/s against bytes ÷ read speed")

# %% [markdown]
# Read the word with the percentages beside it. **MFU** (model FLOPs utilisation) is the
# share of the pass its arithmetic would take at the peak, **MBU** (model bandwidth
# utilisation) the share its reading would take at full read speed. A verdict compares the two
# floors, the *ideal* times; it does not say that the arithmetic units ran flat out. Where
# both shares are well under half, the printed verdict says so and names the rest: the fixed
# cost, and kernels running below the roofs. Much of that rest is paid once per pass (the
# line's *a*); the slope below says how near the peak the per-token arithmetic runs. The
# two ways of taking the shortest pass apart, side by side:

# %% tags=["nbval-ignore-output"]
larger = max(verdict.mfu, verdict.mbu)  # the longer floor's share of the pass
rest = max(0.0, 1 - verdict.fixed_share.median - larger)
t0 = forward[0].median
print(f"{tokens[0]}-token pass {t0 * 1e3:.1f} ms: the line's a is {a.median / t0:.0%} of it "
      f"({a.low / t0:.0%}–{a.high / t0:.0%}), b × {tokens[0]} tokens {b * tokens[0] / t0:.0%}")
print(f"the rule: fixed cost {verdict.fixed_share.median:.0%}, the longer floor "
      f"({'arithmetic' if verdict.mfu >= verdict.mbu else 'reading'}) {larger:.0%}, "
      f"the rest {rest:.0%}")
print("most of this pass is a, paid once per pass whatever its length" if a.low > t0 / 2 else
      "the per-token part is most of this pass already" if a.high < t0 / 2 else
      "a is about half of this pass, within its spread")

# %% [markdown]
# The per-token part (*b* × tokens) is each token's arithmetic; *a* holds the fixed cost and
# much of the rest, the part of a pass no floor accounts for. So the rising speed per token
# and the verdict tell one story: what a pass pays once is shared by more tokens as the prompt
# grows, and the verdict's word only says which *floor* is the longer one.
#
# ### What *a* is made of
#
# A hypothesis: most of *a* − fixed cost is the layers' weight products themselves, whose
# kernels take nearly as long on a few rows as on many. Each layer multiplies by seven weight
# matrices (q, k, v, o, gate, up, down). Time those products alone (`perf.kernel_spread`, 5
# runs), on 2 rows (the fewest a matrix-matrix kernel takes) and on as many rows as the
# sweep's shortest prompt has tokens, and set them beside *a* − fixed cost:

# %%
mats = [m.weight for m in lm.model.model.layers.modules() if isinstance(m, torch.nn.Linear)]
mat_bytes = sum(w.numel() * w.element_size() for w in mats)  # the layers' weights, in bytes


def products(rows):
    """The layers' weight products alone, on `rows` input rows: seconds, with spread."""
    xs = {w.shape[1]: torch.ones(rows, w.shape[1]) for w in mats}
    with torch.inference_mode():
        return perf.kernel_spread(lambda: [torch.nn.functional.linear(xs[w.shape[1]], w)
                                           for w in mats], repeats=5)


# %% tags=["nbval-ignore-output"]
prod = {r: products(r) for r in (2, tokens[0])}
print(f"a − fixed cost {(a - fixed).text(1e3, 'ms')}; the {len(mats)} matrices' "
      f"{mat_bytes / 1e6:.0f} MB at a plain read {peaks.bytes_spread.rate(mat_bytes).text(1e3, 'ms')}")
for r, s in prod.items():
    print(f"  their products on {r:2} rows {s.text(1e3, 'ms')}: the weights streamed at "
          f"{s.rate(mat_bytes).text(1e-9, 'GB/s')}")
rest_a = (a - fixed).median  # what a leaves once the fixed cost is set aside
flat, share = prod[2].median / prod[tokens[0]].median, prod[2].median / max(rest_a, 1e-9)
over = prod[2].low > (a - fixed).high  # more than all of a − fixed cost, beyond the spreads
print(f"2 rows take {flat:.0%} of {tokens[0]} rows' time, and {share:.0%} of a − fixed cost"
      + (" (over 100 % only inside the spreads: about all of it)" if share > 1 and not over
         else "") + ": " + (
    "more than all of it, beyond both spreads: too noisy here to say (run the cell again)"
    if over else
    "the hypothesis holds here" if flat > 0.7 and share > 0.7 else
    "the products cost about as much on 2 rows, but the rest of a is elsewhere" if flat > 0.7
    else "the products cost far less on 2 rows: not what a pass pays whatever its length"))

# %% [markdown]
# The rule's memory floor counts the weights at a plain read's speed; the rates above are what
# the products' kernels reach on a few rows. Where the last line says the hypothesis holds,
# that gap is much of the verdict's "kernels running below the roofs", paid however few the
# tokens.
#
# The slope is the other half: each extra token adds its own arithmetic. The cleanest
# reading of it is the sweep's last step: from 64 to 128 tokens, the extra FLOPs ÷ the extra
# time, against the peak. Both are medians with spreads:

# %% tags=["nbval-ignore-output"]
extra_s = forward[-1] - forward[-2]  # the pass's extra time for the extra tokens, with spread
extra = perf.prefill_cost(spec, tokens[-1]).flops - perf.prefill_cost(spec, tokens[-2]).flops
if extra_s.low > 0:
    slope = extra_s.rate(extra)  # FLOP/s of the extra tokens
    print(f"{tokens[-2]} → {tokens[-1]} tokens: {extra / 1e9:.1f} GFLOP more in "
          f"{extra_s.text(1e3, 'ms')}: {slope.text(1e-9, 'GFLOP/s')}")
    print(f"{slope.median / peaks.flops_per_s:.0%} of the peak {peaks.flops_spread.text(1e-9, 'GFLOP/s')}: "
          + ("the same as the peak within their spreads" if slope.overlaps(peaks.flops_spread)
             else "above the peak, beyond both spreads" if slope.low > peaks.flops_spread.high
             else "below the peak, beyond both spreads"))
else:
    print("the spreads of the two longest prompts overlap too much to time the extra tokens: "
          "run the sweep again")

# %% [markdown]
# So a prefill is two costs: *a*, paid once per pass, and each token's arithmetic, at the
# speed the last line names. A slope can even come out above the "peak": the peak is the
# median speed of one square matrix product (sized to time in a few seconds), with its own
# spread, not a limit no kernel can pass, and a product of another shape can run faster.
# Lesson 06 draws its roof at the same medians.
#
# **Predict.** The next cell records a prompt twice as long as your sweep's longest (beyond
# the slider's reach), three times. Compared with the line *a* + *b* · tokens, with the spread
# *a*'s spread allows, its TTFT will be...

# %%
LINE = ["shorter than the line (by over 10 %)", "within 10 % of the line",
        "longer than the line (by over 10 %)"]
prediction_line = None  # ← your guess: one of LINE, copied exactly

# %% tags=["nbval-ignore-output"]
n_long = 2 * tokens[-1]
prompt_long = perf.prompt_of_length(lm.tokenizer, n_long)
long = viz.Spread.of([viz.record(lm, prompt_long, max_new_tokens=1, embeddings=False).ttft_s
                      for _ in range(3)])
line = line_at(n_long)  # the line's TTFT there, with its spread
line_verdict = viz.band(long / line, [0.9, 1.1], LINE)  # with both figures' spreads
print(f"{n_long} tokens: TTFT {long.text(1e3, 'ms')}; the line says {line.text(1e3, 'ms')}: "
      f"{long.median / line.median - 1:+.0%} against it → {line_verdict}")
print({LINE[0]: "faster per token than the line: longer products ran nearer the peak",
       LINE[1]: "the line still holds at twice the longest length it was fitted on",
       LINE[2]: "something grows faster than the tokens: attention's work, for one (each "
                "token's query meets every earlier key; lesson 11 times it)",
       perf.TOO_CLOSE: "about 10 % from the line, inside the spreads: too close to call"
       }[line_verdict.word])

# %%
compare_prediction(prediction_line, line_verdict, options=LINE,
                   hint="the line assumes a part paid once per pass and a part in proportion to "
                        "the tokens: list which parts of a pass could grow faster or slower than "
                        "that at twice the length")

# %% [markdown]
# A line is a rule of thumb over the lengths it was fitted on: the last line above says how
# this one fared beyond them.
#
# ### The same prefill on a GPU
#
# Where the line between the two regimes falls depends on the machine. The **ridge point**,
# peak FLOP/s ÷ read speed, is the intensity at which the two floors are equal. This
# machine's comes from its measured peaks; an NVIDIA H100's is **computed** from its
# published datasheet (`perf.H100_SXM`: 989 TFLOP/s of bfloat16 arithmetic, 3.35 TB/s of
# memory), not measured here. GPUs serve in bfloat16 (2 bytes per number), so the GPU column
# uses the same model shape in bfloat16. The rule on each pass's floors alone (no fixed cost:
# the datasheet gives none; this machine's floors with their spreads):

# %% tags=["nbval-ignore-output"]
gpu = perf.H100_SXM
gpu_flops, gpu_bytes = gpu["flops_per_s"]["bfloat16"], gpu["bytes_per_s"]
print(f"ridge: this machine (float32, measured) {peaks.ridge_intensity:.1f} FLOP per byte; "
      f"{gpu['device_name']} (bfloat16, COMPUTED) {gpu_flops / gpu_bytes:.0f}")

# %% tags=["nbval-ignore-output"]
bf16 = perf.config_spec("smollm2-135m", dtype="bfloat16")  # this model's shape, 2 bytes each
here, there = {}, {}
for n in (1, 8, 16, 128, 512, 2048):  # the rule on each pass's floors (perf.floors_verdict)
    mine = perf.prefill_cost(spec, n)
    here[n] = perf.floors_verdict(mine, peaks.flops_spread, peaks.bytes_spread).regime
    there[n] = perf.floors_verdict(perf.prefill_cost(bf16, n), gpu_flops, gpu_bytes).regime
    print(f"prefill of {n:4} tokens: here {here[n]:17}  H100 (computed) {there[n]}")
differ = [n for n in here if here[n] != there[n]]
print(f"the two machines disagree at {', '.join(map(str, differ))} tokens" if differ else
      "the two machines agree at every length here")

# %% [markdown]
# A machine whose arithmetic is fast compared with its memory (the H100's ridge, printed
# above, is in the hundreds) needs far longer prompts before the arithmetic, not the reading,
# is the longer floor; the "here" column shows from which length it is on yours (the ridge is
# a ratio: slower arithmetic or faster memory lowers it, and the arithmetic becomes the longer
# floor at shorter prompts). "Prefill is compute-bound" is a statement about a prompt length *and* a
# machine, which is why this course prints the rule's verdict on your numbers instead of
# asserting it. Lesson 06 draws both phases on one chart, the roofline.
#
# ### The same prefill on a GPU, measured once
#
# The course also ships prompt sweeps measured on an NVIDIA H200 (`perf.gpu_reference`;
# models built from their configs with random weights, so the times are real and the text is
# not), judged by the same rule with the H200's measured peaks and its host's fixed cost: a
# prefill is timed by the wall clock, which on a GPU includes the host's Python launching the
# kernels, so its fixed cost is the host's too (a model as deep, 64 wide, timed the same way in
# the memory-wall run, minutes apart).
#
# **Predict.** For an 8-billion-weight model (Llama-3.1-8B's shape) on the H200, from which
# prompt length does the rule call prefill compute-bound outright (not "too close to call")?

# %%
GPU_FROM = ["128 tokens", "512 or 1,024 tokens", "2,048 or 4,096 tokens", "none up to 4,096"]
prediction_gpu_from = None  # ← your guess: one of GPU_FROM, copied exactly

# %%
print(perf.gpu_provenance())
gpu_rows = perf.prefill_rows(perf.gpu_reference("prompt-sweep", "llama-3.1-8b"))
sheet = perf.datasheet("H200")  # the same GPU computed from its datasheet, no fixed cost
for r in gpu_rows:
    computed = perf.floors_verdict(r.cost, sheet.flops_per_s, sheet.bytes_per_s).regime
    print(f"{r.tokens:5} tokens: {r.seconds.median * 1e3:6.1f} ms, MFU {r.mfu:4.0%}, measured "
          f"{r.verdict.regime:17} datasheet {computed}")
first = next((r.tokens for r in gpu_rows if r.verdict.regime == "compute-bound"), None)
gpu_from = (GPU_FROM[3] if first is None else GPU_FROM[0] if first <= 128 else
            GPU_FROM[1] if first <= 1024 else GPU_FROM[2])

# %%
compare_prediction(prediction_gpu_from, gpu_from, options=GPU_FROM,
                   hint="a prefill is overhead-bound while the fixed cost is at least half of "
                        "it: compare the host's fixed cost with each prefill's time")

# %%
print(f"the host's fixed cost for the 8B's depth (a model as deep, 64 wide, eager): "
      f"{gpu_rows[0].verdict.fixed.text(1e3, 'ms')}")
small = perf.prefill_rows(perf.gpu_reference("prompt-sweep"))  # the course model's shape
print(f"{perf.GPU_MODELS[0]}: {min(r.seconds.median for r in small) * 1e3:.0f} to "
      f"{max(r.seconds.median for r in small) * 1e3:.0f} ms from {small[0].tokens} to "
      f"{small[-1].tokens:,} tokens, MFU at most {max(r.mfu for r in small):.0%}")

# %% [markdown]
# Where the measured GPU differs from its datasheet: the datasheet has no host. On the H200
# the host launches every layer's kernels one by one, and for the 8B those launches outlast
# the arithmetic of short prompts; only from a few thousand tokens is the arithmetic the
# longer part, at the MFU printed: a figure of the GPU, whatever the host was doing. For the
# course model's shape the arithmetic never catches up within 4,096 tokens: every prefill took
# about the same time, the host's launches', a figure of that host in that minute.
#
# ## Next
#
# [04 · Decode →](04_decode.ipynb): after the first token, the model writes one token per
# pass, and a very different limit takes over.

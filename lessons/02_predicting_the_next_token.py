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
# # 02 · Predicting the next token
#
# Training built the model's weights once, from a mountain of text. **Inference** is what
# happens every time you use it: the weights stay fixed and the model is simply run forward on
# your text. Each forward pass answers one question: *what comes next?* It gives a score to
# every token in the vocabulary, turns the scores into probabilities, and one token is picked.
#
# In one line, for the token that follows position $t$, given the tokens up to it:
#
# $$p(x_{t+1} \mid x_{\le t}) = \mathrm{softmax}(W\,h_t)$$
#
# where $h_t$ is the model's final vector at position $t$, the last one read, and $W$ is its
# output matrix.
# This lesson computes that line by hand on the real model, then looks at how the pick is made.

# %%
import numpy as np

import viz
from viz import compare_prediction, perf, views

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the very first pass pays set-up costs
lm

# %% [markdown]
# A prompt to continue (any text works; `chat=False`, so the model simply continues it). With
# the default settings `viz.record` always picks the most likely token (*greedy*):

# %%
my_prompt = "The capital of France is"  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=10)
print(repr(trace.generated_text))

# %% [markdown]
# ## See it: the candidates at every step
#
# Each bar is a candidate for the next token, with its probability; the chosen token is
# vermillion, and the grey bar gathers all the tokens not shown. Drag the slider (or press ▶) to
# move through the steps: step 0 is the pass over the prompt, each later step adds one token.

# %% tags=["nbval-ignore-output"]
views.distribution_figure(trace, limit=10)

# %% [markdown]
# The same numbers as text, the three most likely candidates at each step:

# %%
for s in trace.steps:
    top3 = ",  ".join(f"{t!r} {p:.2f}" for t, p in zip(s.top_texts[:3], s.top_probs[:3]))
    print(f"step {s.index:>2}: chose {s.token_text!r:<10} p = {s.prob:.2f}   top 3: {top3}")

# %% [markdown]
# ## Understand it: softmax(W h) by hand
#
# Let us redo step 0 ourselves. First $h_t$: run the body of the model (its 30 layers and the
# final normalisation, everything except the output layer) over the prompt, and keep the vector
# of the last position. Then $W$, the output layer's weights: one row per vocabulary token.

# %%
import torch

ids = torch.tensor([trace.prompt_ids])
with torch.inference_mode():
    h = lm.model.model(ids).last_hidden_state[0, -1]  # h_t: the last position's final vector
W = lm.model.lm_head.weight.detach()  # the output matrix: one row per vocabulary token
print("h:", tuple(h.shape), "   W:", tuple(W.shape))

# %% [markdown]
# $W\,h$ is one dot product per row of $W$: a score, or *logit*, for every token. Softmax turns
# scores into probabilities: raise $e$ to each score, then divide by the total, so that every
# probability is positive and they add up to 1. (Subtracting the largest score first changes
# nothing in the result and keeps the exponentials from overflowing.)

# %%
with torch.inference_mode():
    logits = W @ h  # one score per token of the vocabulary
    e = torch.exp(logits - logits.max())
    probs = e / e.sum()  # softmax over the whole vocabulary
print(f"{logits.numel():,} scores → {probs.numel():,} probabilities, adding up to {probs.sum():.4f}")

# %% [markdown]
# Now compare with what `viz.record` wrote down during the real run: the
# `trace.steps[0].top_*` lists hold its 20 most likely tokens, their scores and probabilities.

# %%
s0 = trace.steps[0]
best = torch.topk(logits, len(s0.top_ids))
print("same candidates, same order:", best.indices.tolist() == s0.top_ids)
print("same scores:                ", np.allclose(best.values, s0.top_logits, atol=1e-3))
print("same probabilities:         ", np.allclose(probs[best.indices], s0.top_probs, atol=1e-5))
print("greedy choice = top score:  ", int(logits.argmax()) == s0.token_id)

# %% [markdown]
# That is all the model does at the end of a forward pass. (`viz.record` gets the same logits
# from `lm.model(...)` directly: see `viz.last_logits` and the loop in `viz/record.py`.)
#
# The softmax runs over the **whole** vocabulary, not only the likely tokens. How is the
# probability shared out?

# %%
top_mass = probs[best.indices].sum().item()
print(f"the {len(best.indices)} most likely tokens hold {top_mass:.1%} of the probability")
print(f"the other {probs.numel() - len(best.indices):,} tokens hold {1 - top_mass:.1%}")
print(f"tokens with at least 0.1% each: {(probs >= 0.001).sum().item()}")

# %% [markdown]
# One more thing about $W$ in this model: it is the embedding table of lesson 01, the very same
# tensor in memory (the weights are *tied*):

# %%
print(W.data_ptr() == lm.model.get_input_embeddings().weight.data_ptr())

# %% [markdown]
# So a token's score is the dot product of $h_t$ with that token's own embedding row: the
# model's last vector scores highest the tokens whose rows point the same way.
#
# ## Choosing: greedy, temperature, top-k, top-p
#
# The probabilities are the model's; the *choice* is a rule we add on top:
#
# - **greedy** (temperature 0): always the most likely token;
# - **temperature** $T$: divide every score by $T$ before the softmax; below 1 the favourites get
#   even more of the probability, above 1 it spreads out;
# - **top-k**: only the $k$ highest-scoring tokens may be picked;
# - **top-p** (nucleus): only the smallest set of most likely tokens whose probabilities add
#   up to at least $p$.
#
# `viz.sampling_distribution` applies these rules to a vector of scores; it is the
# function `viz.record` samples with. We try it on step 0's full 49,152 scores:

# %%
from viz import sampling_distribution

top_at = {}  # temperature → the favourite's probability
for T in (0.0, 0.5, 1.0, 1.5):
    q = sampling_distribution(logits, T)
    top_at[T] = q.max().item()
    print(f"temperature {T}: top token {top_at[T]:.3f}, tokens with at least 0.1%: "
          f"{(q >= 0.001).sum().item()}")

# %% [markdown]
# Top-k and top-p on step 0's scores, at temperature 1:

# %%
can_pick = {}  # (top_k, top_p) → tokens that can still be picked
for k, p in ((None, None), (5, None), (None, 0.9), (None, 0.5)):
    q = sampling_distribution(logits, 1.0, top_k=k, top_p=p)
    can_pick[k, p] = (q > 0).sum().item()
    print(f"top_k={k}, top_p={p}: tokens that can still be picked = {can_pick[k, p]:,}")

# %% [markdown]
# **Predict.** Take now the step of the reply whose chosen token had the lowest probability
# (the smallest `p` in the table of *See it*). At temperature 0.5, what probability will its
# favourite have? And at temperature 1 with `top_p=0.9`, how many tokens can still be picked
# there?

# %%
HALF = ["under 0.1", "between 0.1 and 0.5", "over 0.5"]
TOP_P = ["fewer than 20", "between 20 and 500", "more than 500"]
prediction_top_at_half = None  # ← your guess: one of HALF, copied exactly
prediction_top_p = None  # ← your guess: one of TOP_P, copied exactly

# %%
least = min(trace.steps, key=lambda s: s.prob)  # the least likely choice of the reply
read_then = torch.tensor([trace.prompt_ids + trace.generated_ids[:least.index]])
with torch.inference_mode():
    logits_then = lm.model(read_then).logits[0, -1]  # that step's 49,152 scores, again
half = sampling_distribution(logits_then, 0.5).max().item()  # its favourite at T = 0.5
kept = (sampling_distribution(logits_then, 1.0, top_p=0.9) > 0).sum().item()
print(f"step {least.index} (chose {least.token_text!r}, p = {least.prob:.2f}): at temperature 0.5 "
      f"p = {half:.2f}; top_p=0.9 keeps {kept:,} tokens (step 0: {can_pick[None, 0.9]:,})")
half_verdict = viz.band(half, [0.1, 0.5], HALF)  # the range the favourite lands in
top_p_verdict = TOP_P[0] if kept < 20 else TOP_P[1] if kept <= 500 else TOP_P[2]

# %%
compare_prediction(prediction_top_at_half, half_verdict, options=HALF,
                   hint="at T = 0.5 each probability is squared, then all 49,152 squares are "
                        "scaled to add up to 1. For the default prompt, the ten bars at that "
                        "step (See it's slider) square to about 0.005 together, the favourite's 0.04² = 0.0016 of "
                        "it; the other tokens' squares, each tiny, add about a third more")

# %%
compare_prediction(prediction_top_p, top_p_verdict, options=TOP_P,
                   hint="top-p keeps the most likely tokens until they hold 0.9: for the "
                        "default prompt, at that step the ten likeliest held about a fifth together (the slider of "
                        "See it: the grey bar is the rest); further down the list most tokens "
                        "hold under 0.1 % each: how many does it take to gather the other 0.7?")

# %% [markdown]
# One setting, very different cuts: top-p follows the shape of each step's distribution,
# where a top-k keeps the same number of tokens at every step.

# %% [markdown]
# ### What if?
#
# Try the rules on every step of the trace with the sliders: pick a step, then change the
# temperature, top-k (0 = off) and top-p (1 = off). The outlined bars are the recorded
# probabilities (temperature 1), the filled bars what the sampler would draw from with your
# setting; a token the setting removes turns grey. This view needs no model: it re-shapes the
# 20 scores the trace recorded per step. The grey bar at the bottom stands for all the other
# tokens of the vocabulary together; their share is known exactly, because the trace also kept
# the softmax's total. So at temperature 1 (with a top-p too, when its cut falls among the
# 20), at temperature 0 and with a top-k of 20 or less, every number drawn is the sampler's
# own. Any other setting would need the scores the trace did not keep: the view then shares
# the probability among the 20 recorded tokens only, each bar is an upper bound, and the note
# under the chart says so.

# %%
views.whatif_widget(trace)

# %% [markdown]
# ## Why the top token is not always picked
#
# With a temperature above 0 the choice is a random draw: a token with probability 0.3 is
# picked about 3 times in 10. Ask the same question three times, with three seeds for the
# random number generator. For each run, the *rank* of each chosen token is printed too (0 = the
# most likely one):

# %%
runs = {seed: viz.record(lm, my_prompt, max_new_tokens=6, temperature=0.8, seed=seed)
        for seed in (1, 2, 3)}
for seed, run in runs.items():
    print(f"seed {seed}: {run.generated_text!r}")
    print(f"        ranks of the chosen tokens: {[s.rank for s in run.steps]}")

# %% [markdown]
# Every rank above 0 is a step where the draw did not land on the favourite. Once one token
# differs, everything after it is predicted from a different text, so the runs drift apart.
# This is why a chat assistant, which usually samples, can reply differently when asked twice.
#
# The draws come from a random number generator started from `seed`. The same seed gives the
# same draws, so the same text, token for token:

# %%
again = viz.record(lm, my_prompt, max_new_tokens=6, temperature=0.8, seed=1)
print(repr(again.generated_text))
print("identical to seed 1:", again.generated_ids == runs[1].generated_ids)

# %% [markdown]
# ## Measure it: how sure was the model at each step?
#
# The **entropy** of a distribution measures its uncertainty, in bits:
# $H = -\sum_x p(x) \log_2 p(x)$, over the whole vocabulary. 0 bits means certain; 1 bit is as
# unsure as a fair coin; $n$ bits is as unsure as a fair pick among $2^n$ tokens. By hand for
# step 0, next to the value `viz.record` recorded:

# %%
H = -(torch.xlogy(probs, probs).sum() / np.log(2)).item()  # xlogy: 0 · log 0 counts as 0
print(f"step 0: {H:.3f} bits by hand, {s0.entropy_bits:.3f} bits recorded")

# %% [markdown]
# The entropy of every step of the greedy reply (hover a bar for its value):

# %% tags=["nbval-ignore-output"]
import plotly.graph_objects as go

entropy = go.Bar(x=[f"{s.index}: {s.token_text!r}" for s in trace.steps],
                 y=[s.entropy_bits for s in trace.steps], marker_color="#0072B2")
go.Figure(entropy, layout=dict(title="Uncertainty of the next token at each step", height=340,
                               xaxis_title="step: chosen token", yaxis_title="entropy (bits)"))

# %%
sure = min(trace.steps, key=lambda s: s.entropy_bits)
unsure = max(trace.steps, key=lambda s: s.entropy_bits)
for name, s in (("most sure", sure), ("least sure", unsure)):
    print(f"{name:<11} step {s.index}: {s.entropy_bits:.2f} bits, chose {s.token_text!r} "
          f"with p = {s.prob:.2f}")

# %% [markdown]
# Entropy counts the whole tail, not only the favourite, so the most sure step need not be the
# one whose choice had the highest `p`. It is the room a step leaves the sampler: at 0 bits
# every draw would be the favourite; each bit more doubles the number of tokens the draws
# spread over, and runs can part ways there.
#
# Last, the cost. Each step of `viz.record` timed its forward pass and its choice
# separately. The forward pass works through every weight of the model to produce the scores;
# the choice only reads the scores: thousands of times fewer numbers.
#
# **Predict.** How many times longer than choosing a token (at temperature 0.8, as in the
# sampled runs) does one forward pass take? The pass touches a few thousand times as many
# numbers (printed below); is its time in proportion?

# %%
COST = ["under 100 times", "100 to 1,000 times", "over 1,000 times"]
prediction_cost_ratio = None  # ← your guess: one of COST, copied exactly

# %% [markdown]
# The timings on this machine: the decode passes of the greedy reply, and the choices of the
# three sampled runs. Each is printed as the **median** of its runs with its **spread**, the
# range the middle half of the runs fell in (a quarter of them were faster, a quarter slower):
# where two spreads overlap, these runs cannot tell the two figures apart. Every timing from
# here on is printed this way (`viz.Spread`).

# %% tags=["nbval-ignore-output"]
forward = trace.decode_step_spread  # the decode passes of the greedy reply (warm)
choose = viz.Spread.of(s.sample_s for run in runs.values() for s in run.steps)  # T = 0.8
cost_ratio = forward / choose  # its spread runs from the lowest to the highest ratio the two allow
print(f"one forward pass:  {forward.text(1e3, 'ms')}   uses all {lm.spec.n_params:,} weights")
print(f"choosing a token:  {choose.text(1e3, 'ms', digits=2)}   looks at {logits.numel():,} scores")
print(f"numbers touched, forward / choice: {lm.spec.n_params / logits.numel():,.0f} times")
print(f"time, forward / choice:            {cost_ratio.text(unit='times', digits=0)}")
cost_verdict = viz.band(cost_ratio, [100, 1000], COST)  # where the ratio's spread lies

# %%
compare_prediction(prediction_cost_ratio, cost_verdict, options=COST,
                   hint="time is not always in proportion to the numbers touched: what does "
                        "each of the two do with every number it reads, and what does it pay "
                        "whatever their count?")

# %% [markdown]
# Why is the ratio of times not the ratio of numbers? Take each time apart. First this
# machine's **peaks**, the fastest it reads memory (GB/s) and multiplies matrices (GFLOP/s:
# billions of floating-point operations, a multiply or an add, per second), measured once per
# machine (`perf.machine_peaks()`: a few seconds the first time a lesson asks, then saved, and
# checked the first time a session reuses them, unless the whole course is executed in one run,
# as for the saved copy: the first line says which happened), and the **fixed cost**
# of a pass: the time of a model with the same 30 layers but almost no weights
# (`perf.fixed_cost`, measured once too; lesson 03 explains it). If the measurement prints a
# note about bfloat16 (a 16-bit number format that some CPUs multiply far more slowly than
# float32), it describes this CPU for later: this model runs in float32, and lesson 08 returns
# to it.

# %% tags=["nbval-ignore-output"]
peaks = perf.machine_peaks()  # measured the first time on this machine, then reused
roof = perf.cached_peaks()  # the same peaks in float32, the model's dtype
fixed = perf.fixed_cost(lm.spec.n_layers)  # seconds per pass, with its spread
print(peaks.status)
print(perf.yardsticks())  # the three figures every verdict in the course divides by

# %% [markdown]
# Then the pieces of a sampled choice, each timed on its own over the same 49,152 scores
# (`perf.kernel_spread`: 30 calls after a warm-up, their median and middle half):

# %%
probs_08 = sampling_distribution(logits, 0.8)
pieces = {"one argmax (a greedy choice)": lambda: logits.argmax(),
          "divide by T, softmax": lambda: sampling_distribution(logits, 0.8),
          "the random draw": lambda: torch.multinomial(probs_08, 1)}
piece_s = {name: perf.kernel_spread(fn, repeats=30) for name, fn in pieces.items()}

# %% tags=["nbval-ignore-output"]
read = roof.bytes_spread.rate(lm.spec.weight_bytes)  # every weight read once, at the read peak
left = forward - read - fixed
print(f"forward pass {forward.text(1e3, 'ms')}:")
print(f"    {lm.spec.weight_bytes / 1e6:.0f} MB of weights at the read peak  {read.text(1e3, 'ms')}")
print(f"    the fixed cost of a 30-layer pass     {fixed.text(1e3, 'ms')}")
print(f"    what is left                          {left.text(1e3, 'ms')}")
print("    what is left is more than either: the weights streaming in more slowly than a plain "
      "read, and the work between reads (lesson 04 takes it apart)"
      if left.low > max(read.high, fixed.high) else
      "    what is left: the weights streaming in more slowly than a plain read, and the work "
      "between reads (lesson 04 takes it apart)"
      if left.low > 0 else "    the first two account for the whole pass, within the spreads")

# %% tags=["nbval-ignore-output"]
score_read = roof.bytes_spread.rate(logits.numel() * logits.element_size())  # at the peak
print(f"choice {choose.text(1e3, 'ms', digits=2)}; reading its scores at the read peak: "
      f"{score_read.text(1e6, 'µs')}; its pieces:")
for name, t in piece_s.items():
    print(f"    {name:30} {t.text(1e6, 'µs', digits=0)}: "
          f"{t.median / score_read.median:,.0f} times the read")

# %% [markdown]
# Neither time is in proportion to the numbers it touches. A forward pass must bring every
# weight from memory (the first line: the least that takes here), pays a fixed cost on top,
# whatever its weights (the second), and spends what is left on everything else it does
# (lessons 03 and 04 take that apart). A choice reads few bytes: the multiples say how much
# longer than that read each of its pieces takes. (Timed alone, the pieces add up to less
# than the choice inside `viz.record`, which also does some Python around them.) The three go over the same 49,152 numbers,
# yet their times differ: what a piece does with the numbers, not how many it reads, sets its
# time.

# %% [markdown]
# ## Next
#
# [03 · Prefill →](03_prefill.ipynb): step 0 read the whole prompt in one forward pass. What that
# pass costs, and what limits it.

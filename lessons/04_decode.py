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
# yourself in a few lines, time each step on your machine, and take a step's time apart:
# reading the model's weights from memory, a fixed cost paid by every step, and a little
# arithmetic.

# %%
import numpy as np
import torch

import viz
from viz import compare_prediction, perf, views

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
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
# The explorer opens at step 1, the first decode pass. Step 0, one notch to the left, is the
# prefill: it reads the whole prompt, so its latency bar is usually the tallest. Every other
# step is one decode pass.

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
# ### Where the time goes: bytes, arithmetic or a fixed cost?
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
# As in lesson 03, three measured times bound a step from below:
#
# - the **memory floor**: the step's bytes ÷ this machine's read speed (`perf.cached_peaks()`,
#   measured once and reused by every lesson);
# - the **compute floor**: its FLOPs ÷ the peak FLOP/s of a large matrix product;
# - the **fixed cost** per step: a model of the same depth whose layers are only 64 numbers
#   wide (`perf.measure_overhead`), which has almost nothing to read or compute.
#
# The rule (`perf.pass_regime`) names what limits the step: *overhead-bound* if the fixed cost
# is at least half of it, else *compute-bound* if the compute floor is at least the memory
# floor, else *memory-bound*.
#
# **Predict.** What will the rule say about a decode step on your machine?

# %%
prediction_regime = None  # ← your guess: "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
peaks = perf.cached_peaks()
floor, _ = perf.measure_overhead([spec.n_layers], spec.dtype, max_new_tokens=8, repeats=1)
fixed_s = floor.at(spec.n_layers)  # one step of a 30-layer model with almost no weights
step_s = float(np.median([s.forward_s for s in trace.steps[1:]]))  # a decode forward pass
memory_floor, compute_floor = cost.bytes / peaks.bytes_per_s, cost.flops / peaks.flops_per_s
print(f"measured decode step (median forward pass)   {step_s * 1e3:6.1f} ms")
print(f"memory floor: {cost.bytes / 1e6:.0f} MB at {peaks.bytes_per_s / 1e9:.1f} GB/s     "
      f"{memory_floor * 1e3:6.1f} ms")
print(f"compute floor: {cost.flops / 1e9:.2f} GFLOP at {peaks.flops_per_s / 1e9:.1f} GFLOP/s "
      f"{compute_floor * 1e3:6.1f} ms")
print(f"fixed cost per step (30 layers, 64 wide)     {fixed_s * 1e3:6.1f} ms")
print("the rule:", perf.pass_regime(cost.flops, cost.bytes, step_s, peaks, fixed_s, explain=True))

# %%
decode_regime = perf.pass_regime(cost.flops, cost.bytes, step_s, peaks, fixed_s)
compare_prediction(prediction_regime, decode_regime, options=list(perf.REGIMES),
                   hint="compare the fixed cost with half the step, then the two floors")

# %% [markdown]
# Now name what lies between the floors and the measured step. Take the fixed cost away, and
# suppose the time left was all spent bringing in the bytes: the bandwidth that implies is the
# **achieved** bandwidth. Set it beside the **peak** a plain read reaches, and beside the speed
# of the very kernel a decode step runs for each weight matrix, a matrix-vector product,
# measured on one large matrix (`perf.machine_peaks().matvec`, from the same cached
# measurement):

# %% tags=["nbval-ignore-output"]
achieved = cost.bytes / (step_s - fixed_s)  # bytes ÷ (step − fixed cost)
print(f"step − fixed cost = {(step_s - fixed_s) * 1e3:.1f} ms for {cost.bytes / 1e6:.0f} MB: "
      f"achieved {achieved / 1e9:.1f} GB/s")
print(f"peak (a plain read of one big block): {peaks.bytes_per_s / 1e9:.1f} GB/s, "
      f"so the weights stream at {achieved / peaks.bytes_per_s:.0%} of it")
print(f"one large matrix-vector product reads at "
      f"{perf.machine_peaks().matvec.bytes_per_s / 1e9:.1f} GB/s")
print(f"the arithmetic, at the peak FLOP/s, would be {compute_floor / step_s:.0%} of the step")
print(f"on this machine a decode step is {decode_regime}")

# %% [markdown]
# So a decode step is three things: a **fixed cost** that every step pays whatever the model's
# size (Python, and hundreds of small operations per step), the **weights streaming in** at an
# achieved bandwidth below what a plain read reaches (compare it with the matrix-vector
# kernel's own speed: the model's 200-odd matrices are each far smaller than that test
# matrix, and each is a kernel of its own), and a sliver of **arithmetic**. No implementation can beat the memory floor without moving fewer bytes per
# token; the fixed cost and the gap between achieved and peak bandwidth are what separates a
# real step from that floor.
#
# [08 · The memory wall](08_memory_wall.ipynb) measures those two numbers across models from
# tens of millions to billions of weights and with fewer bytes per weight, and fits
# TPOT = fixed cost + bytes ÷ achieved bandwidth. Lesson 06 shows the other way out: one weight
# read serving several requests at once.
#
# **Predict.** On a GPU this model usually runs in bfloat16: 2 bytes per number instead of 4.
# Estimate, by hand, the arithmetic intensity (FLOP per byte) of one decode step then.

# %%
prediction_bf16 = None  # ← your guess: FLOPs per byte

# %%
bf16 = perf.config_spec("smollm2-135m", dtype="bfloat16")  # this model's shape, 2 bytes each
bf16_cost = perf.decode_cost(bf16, cost.context_tokens)
print(f"float32:  {cost.bytes / 1e6:5.0f} MB per step, {cost.intensity:.2f} FLOP per byte")
print(f"bfloat16: {bf16_cost.bytes / 1e6:5.0f} MB per step, {bf16_cost.intensity:.2f} FLOP per byte")

# %%
compare_prediction(prediction_bf16, bf16_cost.intensity, rel_tol=0.1,
                   hint="the FLOPs of a step do not change with the number format; its bytes "
                        "do (the KV cache is small)")

# %% [markdown]
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
# How many tokens is a 500-word answer? Lesson 01 measured the tokens per word of a paragraph
# of everyday English; `perf.tokens_per_word` measures the same paragraph again with this
# model's tokenizer:

# %%
ratio = perf.tokens_per_word(lm.tokenizer)
answer_tokens = round(500 * ratio)
print(f"{ratio:.2f} tokens per word: a 500-word answer is about {answer_tokens} tokens")

# %% [markdown]
# (A rule of thumb often quoted says 700; text full of numbers, names or code would come
# closer to it, lesson 01 showed why.) An answer costs one prefill, then one decode step for
# each token after the first.
#
# **Predict.** From your TTFT and TPOT above, how many seconds would that 500-word answer take
# on this machine?

# %%
prediction_answer_s = None  # ← your guess, in seconds

# %%
answer_s = trace.ttft_s + (answer_tokens - 1) * trace.tpot_s  # one prefill, then decode steps
print(f"{answer_tokens} tokens: TTFT + {answer_tokens - 1} × TPOT = {answer_s:.1f} s")

# %%
compare_prediction(prediction_answer_s, answer_s, unit="s", rel_tol=0.1,
                   hint="TTFT once, then one TPOT (in seconds) for each token after the first")

# %% [markdown]
# Drag the slider to see what an answer of any length would cost on this machine, from your
# own TTFT and TPOT.

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
length = widgets.IntSlider(value=answer_tokens, min=1, max=2000, description="answer tokens",
                           style={"description_width": "initial"})
LinkedView({"answer tokens": length}, [length], answer_time)

# %% [markdown]
# ## Next
#
# [05 · The KV cache →](05_kv_cache.ipynb): what the cache in the explorer holds, why decode
# would be far slower without it, and what it costs in memory.

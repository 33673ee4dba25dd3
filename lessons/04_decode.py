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
# You will step through a real reply with the explorer, write the decode loop yourself, time
# each step on your machine, and take a step's time apart: reading the weights from memory, a
# fixed cost paid by every step, and a little arithmetic.

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
# prefill: it reads the whole prompt, so its latency bar is usually the tallest.

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
# reply) and **feed back** (the new token is the next pass's only input). The cache keeps every
# earlier token's keys and values, so a pass needs only the newest token.

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
# its timing and records, is in [`viz/record.py`](../viz/record.py) (step 4; in a cell,
# `viz.record??` shows it).

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
# **TPOT** (time per output token) is the average gap between two tokens after the first; its
# inverse is the decode speed in tokens per second.

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
# The same on a time axis (as in lesson 03), with the summary card: this one run, with no
# spread. The card's prefill speed divides the prompt's tokens by the prefill pass alone, not
# by the whole TTFT.

# %% tags=["nbval-ignore-output"]
display(views.summary_html(trace))
views.timeline_figure(trace)

# %% [markdown]
# ### Where the time goes: bytes, arithmetic or a fixed cost?
#
# One decode step pushes **one** token through every layer: 2 FLOPs per parameter, as in
# lesson 03. But each weight must first be fetched from memory, `spec.bytes_per_element`
# bytes of it, and the step also reads the KV cache. `perf.decode_cost` counts both for the
# reply's last step:

# %%
cost = perf.decode_cost(spec, trace.steps[-1].seq_len)
print(f"one decode step with {cost.context_tokens} tokens in the sequence:")
print(f"  weights read    {spec.weight_bytes:>13,} bytes")
print(f"  KV cache read   {cost.kv_bytes:>13,} bytes")
print(f"  arithmetic      {cost.flops:>13,} FLOPs")
print(f"  intensity       {cost.intensity:13.2f} FLOP per byte")

# %% [markdown]
# About half a FLOP for every byte fetched: 2 FLOPs per parameter, 4 bytes per parameter.
# Lesson 03's rule (`perf.pass_verdict`) judges a decode step as it judged a prefill:
# *overhead-bound* if the **fixed cost** is at least half the step, else *compute-bound* if the
# **compute floor** (FLOPs ÷ peak FLOP/s) is at least the **memory floor** (bytes ÷ read
# speed), else *memory-bound*; **too close to call** where the spreads straddle a line.
#
# **Predict.** What will the rule say about a decode step on your machine?

# %%
prediction_regime = None  # ← your guess: "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
peaks = perf.machine_peaks()  # measured the first time on this machine, then reused
roof = perf.cached_peaks()  # the same peaks, in float32: the two roofs
fixed = perf.fixed_cost(spec.n_layers)  # one step of a 30-layer model with almost no weights
step = trace.decode_step_spread  # the reply's decode forward passes: median and middle half
print(peaks.status)
print(perf.yardsticks())
print(f"decode step (forward pass)   {step.text(1e3, 'ms')}")
print(f"fixed cost per step          {fixed.text(1e3, 'ms')}")
print(f"memory floor  {cost.bytes / 1e6:.0f} MB at {roof.bytes_spread.text(1e-9, 'GB/s')}: "
      f"{roof.bytes_spread.rate(cost.bytes).text(1e3, 'ms')}")
print(f"compute floor {cost.flops / 1e9:.2f} GFLOP at {roof.flops_spread.text(1e-9, 'GFLOP/s')}: "
      f"{roof.flops_spread.rate(cost.flops).text(1e3, 'ms')}")
verdict = perf.pass_verdict(cost.flops, cost.bytes, step, roof, fixed)
print(verdict)

# %%
compare_prediction(prediction_regime, verdict, options=list(perf.REGIMES),
                   hint="compare the fixed cost with half the step, then the two floors")

# %% [markdown]
# Now take the step apart. Suppose the time left after the fixed cost was all spent bringing
# in the bytes: that gives the weights' **streaming rate**, bytes ÷ (step − fixed cost)
# (`perf.streaming_rate`). Set it beside the **peak** of a plain read of one large block, and
# beside the kernel a decode step runs for each weight matrix, a matrix-vector product,
# measured on one large matrix.
#
# **Predict.** The weights' streaming rate in a decode step will be...

# %%
STREAM = ["more than 20 % faster than one large matrix-vector product",
          "within 20 % of one large matrix-vector product",
          "more than 20 % slower than one large matrix-vector product"]
prediction_stream = None  # ← your guess: one of STREAM, copied exactly

# %% tags=["nbval-ignore-output"]
matvec, stream = peaks.matvec["float32"], None
if (step - fixed).low > 0:  # time left to read the bytes in, beyond both spreads
    rate = perf.streaming_rate(cost.bytes, step, fixed)
    print(f"step − fixed cost: {(step - fixed).text(1e3, 'ms')} for {cost.bytes / 1e6:.0f} MB: "
          f"streamed at {rate.text(1e-9, 'GB/s')}")
    print(f"a plain read of one large block: {roof.bytes_spread.text(1e-9, 'GB/s')}: "
          f"the weights streamed at {rate.median / roof.bytes_per_s:.0%} of it")
    print(f"one matrix-vector product of a {matvec.buffer_bytes / 1e6:.0f} MB matrix: "
          f"{matvec.spread.text(1e-9, 'GB/s')}")
    vs_matvec = rate.median / matvec.bytes_per_s - 1  # the step's rate against the kernel's
    stream = (STREAM[1] if matvec.spread.overlaps(rate) or abs(vs_matvec) <= 0.2 else
              STREAM[0] if vs_matvec > 0 else STREAM[2])
else:  # a busy machine can stretch the fixed cost's measurement over the step's
    print(f"step {step.text(1e3, 'ms')}, fixed cost {fixed.text(1e3, 'ms')}: too close to "
          "call, no rate to read off (measure again when the machine is quiet)")

# %%
compare_prediction(prediction_stream, stream, options=STREAM,
                   hint="compare what the test kernel streams (one large matrix, in one call) "
                        "with what a step streams: how many matrices, how large, in how many "
                        "calls, and what else runs between them") if stream else \
    print("no streaming rate measured this time: nothing to compare")

# %% tags=["nbval-ignore-output"]
sizes = sorted(m.weight.numel() * m.weight.element_size() for m in lm.model.modules()
               if isinstance(m, torch.nn.Linear))  # the step's weight matrices, in bytes
print(f"the step's {len(sizes)} matrices: the largest (the output head) {sizes[-1] / 1e6:.0f} MB, "
      f"the next {sizes[-2] / 1e6:.1f} MB, each a call of its own")
print(f"the fixed cost is {verdict.fixed_share.median:.0%} of the step; the arithmetic at the "
      f"peak would be {verdict.mfu:.0%}")

# %% [markdown]
# So a decode step is three things: a **fixed cost** that every step pays whatever the model's
# width, the **weights streaming in** at the rate compared above (the step's matrices are
# smaller than the test matrix, each a kernel of its own), and a sliver of **arithmetic**. No
# implementation can get far below the memory floor without moving fewer bytes per token; the
# fixed cost and the gap between the streaming rate and the peak separate a real step from it.
#
# [08 · The memory wall](08_memory_wall.ipynb) measures those two numbers across model sizes
# and number formats, and fits a line, TPOT ≈ a + bytes ÷ streaming rate (its intercept a is
# not the fixed cost). Lesson 06 shows the other way out: one weight read serving several
# requests at once. On a GPU this model usually runs in bfloat16, 2 bytes per number: the same
# FLOPs for half the weight bytes, so twice the intensity:

# %%
bf16 = perf.config_spec("smollm2-135m", dtype="bfloat16")  # this model's shape, 2 bytes each
bf16_cost = perf.decode_cost(bf16, cost.context_tokens)
print(f"float32:  {cost.bytes / 1e6:5.0f} MB per step, {cost.intensity:.2f} FLOP per byte")
print(f"bfloat16: {bf16_cost.bytes / 1e6:5.0f} MB per step, {bf16_cost.intensity:.2f} FLOP per byte")

# %% [markdown]
# Whether half the bytes make a step faster depends on a kernel that reads bfloat16 as fast as
# float32: lesson 08 measures it on your machine.
#
# ### The same step on a GPU, measured once
#
# The course ships what one NVIDIA H200 measured (`perf.gpu_reference`; random weights, as in
# lesson 03). On a GPU the wall clock alone misleads: the host's Python launches each of the
# step's small GPU programs (**kernels**) one after another, and the GPU runs each in
# microseconds. So the reference holds the GPU's **busy time**, the sum of the step's kernels'
# own durations (`torch.profiler`), and the same step replayed as a **CUDA graph**: all its
# kernels launched at once, with no Python between them (lesson 13 measures that remedy).
#
# **Predict.** For an 8-billion-weight model (Llama-3.1-8B's shape, 16 GB in bfloat16), one
# request: the GPU's busy time in the eager step is what share of the step replayed as a CUDA
# graph?

# %%
BUSY = ["under 20 %", "between 20 % and 80 %", "over 80 %"]
prediction_busy = None  # ← your guess: one of BUSY, copied exactly

# %%
print(perf.gpu_provenance())
for g in perf.graph_steps():  # the course model's shape, then the 8B; batch 1
    print(f"{g.model}: {g.kernels:,} kernels; GPU busy {g.busy.text(1e3, 'ms', 2)}, CUDA-graph "
          f"step {g.graph.text(1e3, 'ms', 2)}: busy = {1 / g.graph_over_busy.median:.0%} of it; "
          f"memory floor {g.memory_floor.median * 1e3:.2f} ms (MBU {g.mbu:.0%} of the graph step)")
share = 1 / g.graph_over_busy.median  # the 8B's
busy = BUSY[0] if share < 0.2 else BUSY[1] if share <= 0.8 else BUSY[2]

# %%
compare_prediction(prediction_busy, busy, options=BUSY,
                   hint="with no Python between the launches, what is left of a step besides "
                        "its kernels' own work? (then: the busy time ÷ the CUDA-graph step)")

# %% [markdown]
# With the launches out of the way, a step takes about what its kernels take. The eager step's
# wall time is the host's, and the host drifted: the same eager step, as each shipped file
# timed it (the memory-wall run, which lesson 08 reads, also timed the host's launch cost on
# a model as deep, 64 wide; the "compiled-step" runs and the "static cache", a cache allocated
# once for every position, are lesson 13's):

# %%
walls = perf.eager_walls("llama-3.1-8b")
for what, wall, host in walls:
    print(f"{what:34} eager wall {wall.text(1e3, 'ms')}" +
          (f"; the host's launch cost beside it {host.text(1e3, 'ms')}" if host else ""))
medians = [wall.median for _, wall, _ in walls]
print(f"the slowest ÷ the fastest: ×{max(medians) / min(medians):.1f}")

# %% [markdown]
# The same step, several times apart from one minute to the next (the last line): a figure of
# the host's state, not the GPU's, which is why the course compares GPUs by the busy time and
# the CUDA-graph step. The 8B's graph step is within a factor of two of its memory floor (the
# MBU above): on the GPU too, a large model's decode step is its weights streaming in, at a few
# terabytes a second instead of your machine's tens of gigabytes. For the course model's shape
# even the GPU's own time is far above its memory floor: a thousand kernels of a couple of
# microseconds each outlast reading 270 MB. Is that the GPU's **fixed cost**? This run did not
# measure one (a model as deep and tiny wide, timed the same way), but it bounds it: no
# kernel's fixed part can be longer than the course model's shape's kernels took on average
# (`perf.kernel_time_bound`). So the rule still judges a step where that bound is under half
# its busy time:

# %%
for name in perf.GPU_MODELS:
    print(f"{name}, batch 1: {perf.busy_rows(perf.gpu_reference('busy-sweep', name))[0].line()}")

# %% [markdown]
# Where the bound cannot rule the fixed cost out, the step is **not judged**, instead of
# being called memory-bound at a few per cent of the bandwidth. (These lines' MBU is of the
# busy time; the one further up, of the graph step.)
#
# ### Does a longer context slow each step?
#
# Each step also reads the KV cache, which grows with the text: 46,080 bytes per token here
# (lesson 05 derives it). `perf.context_length_sweep` prefills prompts
# of 16 and 256 tokens, then times the decode steps after each.
#
# **Predict.** Compared with a step after 16 tokens of context, a step after 256 tokens will
# be...

# %%
CONTEXT = ["faster, by 10 % or more", "within 10 %", "slower, by 10 % or more"]
prediction_context = None  # ← your guess: one of CONTEXT, copied exactly

# %% tags=["nbval-ignore-output"]
from viz.views import sweep_figure

context = perf.context_length_sweep(lm, [16, 256], max_new_tokens=8, repeats=3, progress=False)
short, long = context.spread("decode_forward_s")
for c, kv, s in zip(context.column("context_tokens"), context.column("kv_bytes"),
                    context.spread("decode_forward_s")):
    print(f"{c:4} tokens of context: KV cache after the last step {kv / 1e6:5.1f} MB = "
          f"{kv / spec.weight_bytes:5.1%} of the weights; step {s.text(1e3, 'ms')}")
slower = long.median / short.median - 1
context_verdict = viz.band(long / short, [0.9, 1.10], CONTEXT)  # with both steps' spreads
print(f"256 against 16 tokens: {slower:+.0%} on the medians → {context_verdict}")
sweep_figure(context, peaks=roof)

# %%
compare_prediction(prediction_context, context_verdict, options=CONTEXT,
                   hint="how many bytes does the longer cache add to a step that reads the "
                        "weights, and what share of the step's bytes is that?")

# %%
print(f"the cache would match the weights at {spec.weight_bytes / spec.kv_bytes_per_token():,.0f}"
      f" tokens; the model reads at most {spec.context_length:,}")

# %% [markdown]
# At these lengths the cache adds a few percent to a step's bytes, so whatever the step times
# above show beyond that is not the bytes: the machine's noise (the spreads say how
# much) or attention's own arithmetic, which lesson 11 times apart. For this small model the
# cache would only match the weights beyond the longest text it accepts (last line above).
#
# ### How long is a long answer?
#
# How many tokens is a 500-word answer? `perf.tokens_per_word` measures lesson 01's paragraph
# of everyday English with this model's tokenizer:

# %%
ratio = perf.tokens_per_word(lm.tokenizer)
answer_tokens = round(500 * ratio)
print(f"{ratio:.2f} tokens per word: a 500-word answer is about {answer_tokens} tokens")

# %% [markdown]
# (A common rule of thumb for English is about 700; text full of numbers, names or code comes
# closer, as lesson 01 showed.) An answer costs one prefill, then one decode step for each token
# after the first, so your TTFT and TPOT predict any length:

# %%
print(f"a 500-word answer, {answer_tokens} tokens: about "
      f"{trace.ttft_s + (answer_tokens - 1) * trace.tpot_s:.1f} s "
      f"(TTFT {trace.ttft_s * 1e3:.0f} ms + {answer_tokens - 1} × TPOT {trace.tpot_s * 1e3:.1f} ms)")

# %% [markdown]
# Test the prediction: drag the slider, and your question is answered again at that length
# (the end-of-reply token ignored), timed on this machine beside what the two numbers predict
# (a few seconds; the longest about a quarter of a minute).

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import plotly_layout
from viz.views import palette
from viz.views import LinkedView

answers = {}  # answer tokens → the reply recorded at that length


def answer_time(values):
    n = values["answer tokens"]
    if n not in answers:  # a real reply of n tokens, on this machine
        answers[n] = viz.record(lm, trace.prompt, chat=trace.settings.chat,  # as above
                                max_new_tokens=n, stop_at_eos=False, embeddings=False)
    got = answers[n]
    predicted = trace.ttft_s + (n - 1) * trace.tpot_s  # one prefill, then n - 1 decode steps
    measured = got.timing.end_to_end_s
    rows = ["predicted", "measured"]
    fig = go.Figure([go.Bar(y=rows, x=[trace.ttft_s, got.ttft_s], orientation="h",
                            marker_color=palette.PREFILL, name="TTFT (prefill)"),
                     go.Bar(y=rows, x=[predicted - trace.ttft_s, measured - got.ttft_s],
                            orientation="h", marker_color=palette.DECODE,
                            name=f"{n - 1} decode steps")])
    return fig.update_layout(**plotly_layout(
        f"{n} tokens: predicted {predicted:.2f} s, measured {measured:.2f} s "
        f"({measured / predicted - 1:+.0%})", height=260, barmode="stack",
        xaxis={"title": "seconds"}, yaxis={"automargin": True}, margin={"l": 100}))


# %%
length = widgets.SelectionSlider(options=[16, 32, 64, 128, 256], value=16,
                                 description="answer tokens", continuous_update=False,
                                 style={"description_width": "initial"})
LinkedView({"answer tokens": length}, [length], answer_time)

# %% [markdown]
# ## Check yourself
#
# The slider tested the prediction on your short question. Test it on a long prompt: the next
# cell records a 60-token reply (the end-of-reply token ignored) to a prompt of 1,000 tokens of
# plain text.
#
# **Predict.** How many seconds will the whole reply take, from the request to its last token?

# %%
prediction_long = None  # ← your guess, in seconds

# %% tags=["nbval-ignore-output"]
long_prompt = perf.prompt_of_length(lm.tokenizer, 1000)
reply = viz.record(lm, long_prompt, max_new_tokens=60, stop_at_eos=False, embeddings=False)
measured_long = reply.timing.end_to_end_s
print(f"1,000-token prompt, 60 tokens: {measured_long:.2f} s (TTFT {reply.ttft_s * 1e3:.0f} ms, "
      f"TPOT {reply.tpot_s * 1e3:.1f} ms)")
print(f"your question above: TTFT {trace.ttft_s * 1e3:.0f} ms, TPOT {trace.tpot_s * 1e3:.1f} ms")

# %%
compare_prediction(prediction_long, measured_long, unit="s", rel_tol=0.25,
                   hint="the prefill from lesson 03's line (its printed a + b × prompt tokens), "
                        "then one decode step for each token after the first, each reading a "
                        "cache 1,000 tokens long")

# %% [markdown]
# Where your prediction missed, the two lines above say which part did: the prefill of a long
# prompt (lesson 03's line, far beyond the lengths it was fitted on), or the decode steps with
# a longer cache to read.
#
# ## Next
#
# [05 · The KV cache →](05_kv_cache.ipynb): what the cache in the explorer holds, why decode
# would be far slower without it, and what it costs in memory.

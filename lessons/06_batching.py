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
# # 06 · Batching and the throughput/latency trade-off
#
# Lesson 04 took a decode step apart: to make **one** token, a step reads **every** weight from
# memory, pays a fixed cost, and does only a little arithmetic with each weight it reads.
#
# A server has a way to share that cost: answer several people at once. If B requests each
# need their next token, one step can read the weights once and use them B times. This is
# **batching**. This lesson measures what it buys (tokens per second for everyone together)
# and what it costs (a longer wait for each person), then places both phases on a chart of
# this machine's limits.

# %%
import ipywidgets as widgets
import numpy as np

import viz
from viz import compare_prediction, perf, views
from viz.views import roofline_figure
from viz.views import sweep_figure, throughput_latency_figure
from viz.views import LinkedView

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
spec = lm.spec

# %% [markdown]
# ## See it: more requests per step
#
# `perf.batch_size_sweep` runs the decode loop of lesson 04 with a batch dimension: B copies of
# one prompt, 8 new tokens each, with B = 1, 2, 4, 8 and 16 (after a warm-up run; it takes a
# few seconds).
#
# **Predict.** A batch of 16 makes 16 tokens per step where a batch of 1 makes one. How many
# times more tokens per second, all requests together, will the batch of 16 make?

# %%
prediction_gain_16 = None  # ← your guess: throughput at B=16 ÷ throughput at B=1

# %% tags=["nbval-ignore-output"]
sweep = perf.batch_size_sweep(lm, [1, 2, 4, 8, 16], max_new_tokens=8, progress=False)
sweep_figure(sweep)

# %% [markdown]
# Left: **throughput**, the tokens per second of all requests together. Right: **latency**,
# how long each request waits for its next token. The same numbers as ratios to a batch of
# one, and what they add up to:

# %% tags=["nbval-ignore-output"]
rows = {r["batch_size"]: r for r in sweep.rows()}
gain = {b: r["aggregate_decode_tokens_per_s"] / rows[1]["aggregate_decode_tokens_per_s"]
        for b, r in rows.items()}  # everyone's tokens per second, relative to B=1
wait = {b: r["decode_step_s"] / rows[1]["decode_step_s"] for b, r in rows.items()}
for b in rows:
    verdict = "the baseline" if b == 1 else "throughput grew more" if gain[b] > wait[b] \
        else "the wait grew as much or more"
    print(f"B={b:>2}: throughput ×{gain[b]:4.1f}, each request's wait per token ×{wait[b]:4.1f}"
          f"  → {verdict}")
pays = [b for b in rows if b > 1 and gain[b] > wait[b]]
print(f"throughput outgrew the wait from B={pays[0]}" if pays else "throughput never outgrew the wait")

# %%
compare_prediction(prediction_gain_16, gain[16], rel_tol=0.25,
                   hint="16 tokens per step, but does a step of 16 take as long as a step of 1?")

# %% [markdown]
# Read the last column. Batching pays where the throughput grows by more than each request's
# wait: the last line says from which batch size that happened in your sweep. (A single pair
# of numbers can be spoilt by another program using the processor; run the sweep again if the
# ratios zig-zag.)
#
# The same sweep as one curve, the trade-off a server chooses on: each request's wait per
# token across, everyone's tokens per second up, one point per batch size.

# %% tags=["nbval-ignore-output"]
throughput_latency_figure(sweep)

# %% [markdown]
# What does a batch look like from the inside? Pick a batch size with the slider: each row is
# one request of that batch (the sweep's prompt and 8 new tokens each, run now with
# `perf.generate_batch`). The blue bar is the prefill, which ends with every request's first
# token; each orange tick is a decode step handing every request its next token at the same
# moment. The grey bars show when each request would have finished had the requests been
# served one after another instead, each as fast as a batch of 1.

# %%
runs = {}  # batch size → one batch of that size, 8 new tokens per request


def batch_run(b):
    if b not in runs:
        prompts = [sweep.settings["prompt"]] * b  # the sweep's prompt, b times
        runs[b] = perf.generate_batch(lm, prompts, sweep.settings["max_new_tokens"])
    return runs[b]


# %% tags=["nbval-ignore-output"]
batch = widgets.SelectionSlider(options=list(rows), value=8, description="batch")
LinkedView({"batch": batch}, [batch],
           lambda v: views.batch_timeline_figure(batch_run(v["batch"]), batch_run(1)))

# %% [markdown]
# Each request's last token, batched and one after another, for the batches you have picked so
# far (pick more, then run this cell again):

# %% tags=["nbval-ignore-output"]
for b in sorted(runs):
    t = views.batch_timeline_data(runs[b], runs[1])
    alone = t.one_after_another_ms()  # when each request would be done, one after another
    print(f"B={b:>2}: all done at {t.end_ms:5.0f} ms; one after another, the first at "
          f"{alone[0]:5.0f} ms, the last at {alone[-1]:5.0f} ms")

# %% [markdown]
# **Predict.** A server puts your request in a batch of 8 instead of running it alone. What
# happens to the time you wait for each token of your own reply?

# %%
WAITS = ["it gets shorter", "it stays about the same (within 10%)", "it gets longer"]
prediction_wait = None  # ← your guess: one of WAITS, copied exactly

# %% tags=["nbval-ignore-output"]
wait_8 = WAITS[0] if wait[8] < 0.9 else WAITS[1] if wait[8] <= 1.1 else WAITS[2]
print(f"B=8: each request's wait per token ×{wait[8]:.2f} → {wait_8}")

# %%
compare_prediction(prediction_wait, wait_8, options=WAITS,
                   hint="read the latency panel, or think about what a step of 8 has to do "
                        "that a step of 1 does not")

# %% [markdown]
# If your wait column grew, why, when the weights are read once either way? Look at it from
# B=1 to B=2: the arithmetic doubles, but it was a small part of a step (lesson 04). Time
# the largest weight matrix, the output head, multiplied by 1, 2, 4 and 16 rows
# (`perf.linear_seconds`, the kernel every weight matrix of a step runs):

# %% tags=["nbval-ignore-output"]
head = lm.model.lm_head.weight
head_bytes = head.numel() * head.element_size()
head_s = {n: perf.linear_seconds(head, n) for n in (1, 2, 4, 16)}
for n, t in head_s.items():
    print(f"{n:2} row(s): {t * 1e3:5.1f} ms = {head_bytes / t / 1e9:5.1f} GB/s of weights, "
          f"{2 * n * head.numel() / t / 1e9:5.1f} GFLOP/s")
print(f"2 rows ÷ 1 row: ×{head_s[2] / head_s[1]:.1f} the time; the sweep's step, B=2 ÷ B=1: "
      f"×{wait[2]:.1f}")

# %% [markdown]
# One row is a *matrix-vector* product; two or more rows take a *matrix-matrix* kernel, a
# different piece of code. Compare the GB/s of 1 and 2 rows. Where the matrix-matrix kernel
# streams the weights more slowly, the step jumps as soon as the batch leaves 1: the kernel
# changed, not the amount of arithmetic that matters. Past that jump, each extra request adds
# its own arithmetic, its own KV cache to read and its own activations, and the last line
# compares the jump with the sweep's. The kernel's speed can change again with the number of
# rows: where 4 rows take less time than 2 in the head timings above, a batch of 4 can step
# faster than a batch of 2 (compare the sweep's wait column).
#
# ## Understand it: one weight read serves B tokens
#
# Count the work of one decode step. Every weight takes part in one multiply and one add per
# token, so a step does about 2 × parameters × B FLOPs. The weights are read once whatever B
# is. Arithmetic per byte (the **arithmetic intensity**) therefore grows with B.
#
# **Predict.** By hand, what is the arithmetic intensity of a decode step with a batch of 32
# (2 FLOPs per weight per token; every weight read once; ignore the KV cache)?

# %%
prediction_intensity_32 = None  # ← your guess: FLOPs per byte

# %% [markdown]
# By hand, and by the library's full count (`perf.decode_cost`, which also counts the KV
# cache):

# %%
ctx = rows[1]["decode_context_tokens"]  # tokens in each sequence mid-sweep
intensity = {}
print(f"decode step with {ctx} tokens of context:")
for b in (1, 2, 4, 8, 16, 32, 64, 256):
    cost = perf.decode_cost(spec, ctx, batch=b)
    intensity[b] = cost.intensity
    by_hand = 2 * spec.n_params * b / spec.weight_bytes
    print(f"B={b:>3}: {cost.flops / 1e9:6.1f} GFLOP, {cost.bytes / 1e6:5.0f} MB moved → "
          f"{cost.intensity:5.1f} FLOP/byte (by hand {by_hand:5.1f})")

# %%
compare_prediction(prediction_intensity_32, intensity[32], rel_tol=0.1,
                   hint="2 × parameters × 32 FLOPs ÷ weight bytes (4 bytes per parameter)")

# %% [markdown]
# The FLOPs grow B-fold while the bytes hardly move, so the intensity rises in step with B
# (half a FLOP per byte per request here: 2 FLOPs per weight, 4 bytes per float32 weight). At
# large B the library's count falls behind the by-hand one: each request brings its own KV
# cache, and those bytes do grow with B. Keep that in mind for the end of the lesson.

# %% [markdown]
# ## Measure it: prefill and decode on this machine's roofline
#
# How much arithmetic per byte does it take to keep this machine's arithmetic units busy? Use
# the two ceilings lessons 03 and 04 used, measured once on this machine and cached
# (`perf.cached_peaks()`): the fastest large matrix product (FLOP/s) and the read speed of
# memory (bytes/s).

# %% tags=["nbval-ignore-output"]
peaks = perf.cached_peaks()
print(f"{peaks.device_name}: {peaks.flops_per_s / 1e9:.1f} GFLOP/s, {peaks.bytes_per_s / 1e9:.1f} GB/s")
print(f"ridge point: {peaks.ridge_intensity:.1f} FLOP/byte")
print(peaks.how)

# %% [markdown]
# The **ridge point** divides the two: the FLOPs this machine can do in the time it reads one
# byte. Where a pass's intensity is below it, its memory floor (bytes ÷ read speed) is longer
# than its compute floor (FLOPs ÷ peak); above it, the other way round. The rule of lessons
# 03 and 04 adds the fixed cost per step, measured again here.
#
# Now place real passes under those ceilings: a short reply (prefill + decode), two longer
# prompts (prefill only), and the batch sweep's decode steps.

# %% tags=["nbval-ignore-output"]
my_prompt = "Explain in one sentence why the sky is blue."  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=8, stop_at_eos=False)
prompts = perf.prompt_length_sweep(lm, [32, 128], repeats=1, progress=False)
roof = perf.measure_roofline(lm, peaks=peaks, trace=trace, batch=sweep, prompt_sweep=prompts,
                             label="this machine")
roofline_figure(roof)

# %% [markdown]
# The black line is the roof: nothing can sit above it. Hover over a point for its time,
# **MFU** (model FLOPs utilisation: achieved FLOP/s ÷ peak) and **MBU** (model bandwidth
# utilisation: achieved bytes/s ÷ peak). Each pass with the rule's verdict (the fixed cost
# measured with a 30-layer model 64 wide, as in lesson 04):

# %% tags=["nbval-ignore-output"]
floor, _ = perf.measure_overhead([spec.n_layers], spec.dtype, max_new_tokens=8, repeats=1)
fixed_s = floor.at(spec.n_layers)
verdicts = {p.label: perf.pass_regime(p.flops, p.bytes, p.seconds, peaks, fixed_s)
            for p in roof.points}
print(f"fixed cost per step {fixed_s * 1e3:.1f} ms")
for p in roof.points:
    print(f"{p.label:<12} {p.seconds * 1e3:7.1f} ms  {p.intensity:6.1f} FLOP/byte  "
          f"MFU {roof.mfu(p):4.0%}  MBU {roof.mbu(p):4.0%}  {verdicts[p.label]}")

# %% [markdown]
# What an MBU means, on the batch-1 decode step:

# %% tags=["nbval-ignore-output"]
one = roof.points[[p.label for p in roof.points].index("decode B=1")]
print(f"decode B=1 moved {one.bytes / 1e6:.0f} MB in {one.seconds * 1e3:.1f} ms: "
      f"{one.achieved_bytes_per_s / 1e9:.1f} GB/s, MBU {roof.mbu(one):.0%}")
print(f"at the full read speed those bytes would take {one.bytes / peaks.bytes_per_s * 1e3:.1f} ms:"
      f" {1 - roof.mbu(one):.0%} of the step went to something other than reading at full speed")

# %% [markdown]
# An MBU of, say, 25% means the step moved its bytes at a quarter of the speed this machine
# reads one big block, so three quarters of its time went elsewhere: the fixed cost, kernels that
# stream more slowly than a plain read (the 1-row and 2-row timings above), and a little
# arithmetic. MFU reads the same way for FLOPs. Neither is "how busy the memory was": they
# compare the counted work with the time it took.
#
# Where each point sits across the chart does not depend on the machine: it is counted FLOPs
# ÷ counted bytes. Prefill reuses each weight for every prompt token, so the longer the
# prompt, the further right it sits; decode at batch 1 sits far to the left, and each doubling
# of the batch moves it right.
#
# ### The knee, measured
#
# Where decode's intensity reaches the ridge, its compute floor passes its memory floor: the
# batch size at which the rule's verdict turns. Past it, a step whose time were its floors
# would grow in proportion to B. From the ridge and the intensity at B=1:

# %% tags=["nbval-ignore-output"]
knee = peaks.ridge_intensity / intensity[1]
print(f"ridge {peaks.ridge_intensity:.1f} ÷ {intensity[1]:.2f} FLOP/byte at B=1: "
      f"the floors cross at B ≈ {knee:.0f}")
for b in rows:
    print(f"B={b:>2}: step {rows[b]['decode_step_s'] * 1e3:6.1f} ms  "
          f"compute floor {perf.decode_cost(spec, ctx, b).flops / peaks.flops_per_s * 1e3:6.1f} ms  "
          f"rule: {verdicts[f'decode B={b}']}")

# %% [markdown]
# **Predict.** From B=8 to B=16 the arithmetic doubles. How many times longer will each step
# take?

# %%
prediction_step_16 = None  # ← your guess: step time at B=16 ÷ step time at B=8

# %% tags=["nbval-ignore-output"]
step_16 = rows[16]["decode_step_s"] / rows[8]["decode_step_s"]
print(f"B=16 ÷ B=8: ×{step_16:.2f} the step time, for ×2 the arithmetic")
print(f"the compute floor reaches the B=16 step at B ≈ "
      f"{rows[16]['decode_step_s'] * peaks.flops_per_s / perf.decode_cost(spec, ctx).flops:.0f}")

# %%
compare_prediction(prediction_step_16, step_16, rel_tol=0.2,
                   hint="compare each step with its compute floor in the table above")

# %% [markdown]
# Past the batch size where the floors cross (printed above), the rule calls a step
# compute-bound: its compute floor is now the longer floor. The measured step need not grow in
# proportion to B there: a step whose time is mostly fixed cost and slow streaming has room to
# absorb more arithmetic. Its time grows in proportion to B only once the arithmetic itself
# fills the step, near the batch size printed last. If that lies beyond B=16, your sweep
# shows no clear knee, and the ratio you just measured says so.
#
# For comparison, the same chart recorded on the project's own machine and shipped with the
# course (dashed), recorded by `benchmarks/perf_lab.py`; where and how:

# %%
reference = perf.load_reference("cpu-roofline")
env = reference.environment
print(f"{reference.label}: {env.device_name} ({env.device}), {env.threads} threads, "
      f"{env.dtype}, torch {env.torch_version}, transformers {env.transformers_version}")

# %% tags=["nbval-ignore-output"]
roofline_figure(roof, reference)

# %% [markdown]
# ## Where this leads: the memory wall
#
# Batching raised decode's intensity because the weights were shared. The KV cache is not
# shared: every request reads its own. At a realistic context of 2,048 tokens, and with the
# rule on each step's floors (no fixed cost) on this machine and on an NVIDIA H100
# (**computed** from its datasheet, `perf.H100_SXM`, in bfloat16; not measured):

# %% tags=["nbval-ignore-output"]
gpu, bf16 = perf.H100_SXM, perf.config_spec("smollm2-135m", dtype="bfloat16")


def by_floors(cost, flops_per_s, bytes_per_s):
    memory, compute = cost.bytes / bytes_per_s, cost.flops / flops_per_s
    return perf.regime(max(memory, compute), memory, compute, 0.0)


for b in (1, 8, 64, 256, 1024):
    cost, gpu_cost = perf.decode_cost(spec, 2048, batch=b), perf.decode_cost(bf16, 2048, batch=b)
    print(f"B={b:>4}: {cost.intensity:4.1f} FLOP/byte, KV cache {cost.kv_bytes / cost.bytes:4.0%} "
          f"of the bytes; here {by_floors(cost, peaks.flops_per_s, peaks.bytes_per_s):13}  "
          f"H100 {by_floors(gpu_cost, gpu['flops_per_s']['bfloat16'], gpu['bytes_per_s'])}")

# %% [markdown]
# The intensity stalls at a few FLOPs per byte, however large the batch: past a point each
# extra request brings as many bytes (its cache) as FLOPs. Whether that is above or below the
# ridge depends on the machine: a processor whose ridge sits below the stall can cross it (the
# "here" column turns compute-bound), one whose ridge sits above it never does at this
# context. The two ridges:

# %% tags=["nbval-ignore-output"]
gpu_ridge = gpu["flops_per_s"]["bfloat16"] / gpu["bytes_per_s"]
print(f"this machine: {peaks.ridge_intensity:.1f} FLOP/byte (measured); H100 in bfloat16: "
      f"{gpu_ridge:.0f} FLOP/byte (computed), {gpu_ridge / peaks.ridge_intensity:.0f}× higher")

# %% [markdown]
# Memory bandwidth has also been growing more slowly than arithmetic from one hardware
# generation to the next, so ridges keep moving right, away from decode. That gap is called
# **the memory wall**: the tricks that fight it (fewer bytes per weight, smaller caches,
# smarter batching) all aim at moving fewer bytes per token. Lesson 08 measures it.
#
# ## Next
#
# [07 · Capstone →](07_capstone.ipynb): your own prompt through the whole pipeline, on one
# dashboard, beside a recorded reference.

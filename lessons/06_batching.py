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
# A decode step (lesson 04) reads **every** weight from memory to make **one** token, pays a
# fixed cost, and does little arithmetic with each weight it reads.
#
# A server can share that cost: if B requests each need their next token, one step reads the
# weights once and uses them B times. This is **batching**. This lesson measures what it buys
# (tokens per second for everyone together) and what it costs (a longer wait for each person),
# then places both phases on a chart of this machine's limits.

# %%
import ipywidgets as widgets

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
# `perf.batch_size_sweep` runs lesson 04's decode loop on B copies of one prompt, 8 new tokens
# each, for B = 1, 2, 4, 8 and 16 (after a warm-up; a few seconds).
#
# **Predict.** A batch of 16 makes 16 tokens per step where a batch of 1 makes one. How many
# times more tokens per second, all requests together, will the batch of 16 make?

# %%
GAIN_16 = ["under ×2: a step of 16 costs nearly 16 steps of 1",
           "×2 to ×12: the step grows, by much less than 16 times",
           "×12 or more: a step of 16 costs about what a step of 1 does"]
prediction_gain_16 = None  # ← your guess: one of GAIN_16, copied exactly

# %% tags=["nbval-ignore-output"]
sweep = perf.batch_size_sweep(lm, [1, 2, 4, 8, 16], max_new_tokens=8, progress=False)
sweep_figure(sweep)

# %% [markdown]
# Left: **throughput**, the tokens per second of all requests together. Right: **latency**, how
# long each request waits for its next token. Each point is the median of the batch's 7 decode
# steps, its bar the middle half. As ratios to a batch of one, with their spreads:

# %% tags=["nbval-ignore-output"]
step = dict(zip(sweep.column("batch_size"), sweep.spread("decode_step_s")))  # B → Spread (s)
wait = {b: s / step[1] for b, s in step.items()}  # each request's wait per token, ÷ B=1
gain = {b: viz.Spread.exact(b) / w for b, w in wait.items()}  # everyone's tokens/s, ÷ B=1
for b in step:
    word = ("the baseline" if b == 1 else "gain > wait" if gain[b].low > wait[b].high
            else "too close to call" if gain[b].overlaps(wait[b]) else "gain < wait")
    print(f"B={b:>2}: throughput ×{gain[b].median:4.1f} ({gain[b].low:.1f}–{gain[b].high:.1f}), "
          f"each request's wait ×{wait[b].median:4.2f} ({wait[b].low:.2f}–{wait[b].high:.2f})  → {word}")
pays = [b for b in step if b > 1 and gain[b].low > wait[b].high]
print(f"throughput outgrew the wait from B={pays[0]}" if pays else "throughput never outgrew the wait")
gained = viz.band(gain[16], [2, 12], GAIN_16)  # with the spread of the B=16 gain
print("→", gained)

# %%
compare_prediction(prediction_gain_16, gained, options=GAIN_16,
                   hint="16 tokens per step, but does a step of 16 take as long as a step of 1? "
                        "(lesson 04: part of a step is paid per step, part grows with the rows)")

# %% [markdown]
# When does batching pay? This lesson weighs the throughput's gain against the growth of each
# request's wait, beyond their spreads ("gain > wait"). A "gain < wait" batch may still make
# more tokens per second than a batch of one; it only costs each request more than it buys
# everyone.
#
# The same sweep as one curve, the trade-off a server chooses on: wait per token across,
# everyone's tokens per second up.

# %% tags=["nbval-ignore-output"]
throughput_latency_figure(sweep)

# %% [markdown]
# Inside a batch: pick a batch size; each row is one request (the sweep's prompt and 8 new
# tokens, run with `perf.generate_batch`). The blue bar is the prefill, ending with every
# request's first token; each orange tick is a decode step giving every request its next token.
# Grey bars: when each request would have finished if served one after another, each as fast as
# a batch of 1.

# %%
runs = {}  # batch size → one batch of that size, 8 new tokens per request


def batch_run(b):
    if b not in runs:
        prompts = [sweep.settings["prompt"]] * b  # the sweep's prompt, b times
        runs[b] = perf.generate_batch(lm, prompts, sweep.settings["max_new_tokens"])
    return runs[b]


# %% tags=["nbval-ignore-output"]
batch = widgets.SelectionSlider(options=list(step), value=8, description="batch")
LinkedView({"batch": batch}, [batch],
           lambda v: views.batch_timeline_figure(batch_run(v["batch"]), batch_run(1)))

# %% [markdown]
# Each request's last token, batched and one after another, for the batches picked so far (pick
# more, then run this cell again):

# %% tags=["nbval-ignore-output"]
for b in sorted(runs):
    t = views.batch_timeline_data(runs[b], runs[1])
    alone = t.one_after_another_ms()  # when each request would be done, one after another
    print(f"B={b:>2}: all done at {t.end_ms:5.0f} ms; one after another, the first at "
          f"{alone[0]:5.0f} ms, the last at {alone[-1]:5.0f} ms")

# %% [markdown]
# If each request's wait grew, why, with the weights read once either way? From B=1 to B=2 the
# arithmetic doubles, but it was a small part of a step (lesson 04). Time the kernel every
# weight matrix runs, on the largest, the output head, with 1, 2, 4 and 16 rows
# (`perf.linear_spread`, 5 runs each).
#
# **Predict.** Multiplied by 2 rows instead of 1, the output head's product will take...

# %%
ROWS = ["less time than 1 row (by over 10 %)", "about the same (within 10 %)",
        "longer than 1 row (by over 10 %)"]
prediction_rows = None  # ← your guess: one of ROWS, copied exactly

# %% tags=["nbval-ignore-output"]
head = lm.model.lm_head.weight
head_bytes = head.numel() * head.element_size()
head_s = {n: perf.linear_spread(head, n, repeats=5)
          for n in (1, 2, 4, 16)}
for n, t in head_s.items():
    print(f"{n:2} row(s): {t.text(1e3, 'ms')} = {head_bytes / t.median / 1e9:5.1f} GB/s of "
          f"weights, {2 * n * head.numel() / t.median / 1e9:5.1f} GFLOP/s")
two = head_s[2] / head_s[1]
rows_verdict = (ROWS[1] if two.low <= 1.1 and two.high >= 0.9 else ROWS[0] if two.median < 1
                else ROWS[2])  # "about the same" wherever the spread reaches within 10 %
print(f"2 rows ÷ 1 row: ×{two.median:.2f} (×{two.low:.2f}–{two.high:.2f}) → {rows_verdict}; "
      f"the sweep's step, B=2 ÷ B=1: ×{wait[2].median:.2f}")

# %%
compare_prediction(prediction_rows, rows_verdict, options=ROWS,
                   hint="twice the arithmetic, the same weights read; but is the arithmetic "
                        "what a one-row product's time is made of, and is it the same kernel? "
                        "(compare the GB/s printed for 1 and 2 rows)")

# %% [markdown]
# One row is a *matrix-vector* product; two or more take another kernel, *matrix-matrix*. Where
# it streams the weights more slowly (compare the GB/s of 1 and 2 rows), the step jumps as soon
# as the batch leaves 1: the kernel changed, not the amount of arithmetic. Past that jump, each
# extra request adds its own arithmetic, KV cache and activations, and the head is only one
# product of many in a step (the sweep's wait column shows whole steps).
#
# ## Understand it: one weight read serves B tokens
#
# Each weight does one multiply and one add per token, so a decode step does about
# 2 × parameters × B FLOPs, yet reads the weights once whatever B is. Its **arithmetic
# intensity** (lesson 03) therefore grows with B. By hand (the weights only) and by the
# library's full count (`perf.decode_cost`, with the KV cache):

# %%
ctx = sweep.column("decode_context_tokens")[0]  # tokens in each sequence mid-sweep
intensity = {}
print(f"decode step with {ctx} tokens of context:")
for b in (1, 2, 4, 8, 16, 32, 64, 256):
    cost = perf.decode_cost(spec, ctx, batch=b)
    intensity[b] = cost.intensity
    by_hand = 2 * spec.n_params * b / spec.weight_bytes
    print(f"B={b:>3}: {cost.flops / 1e9:6.1f} GFLOP, {cost.bytes / 1e6:5.0f} MB moved → "
          f"{cost.intensity:5.1f} FLOP/byte (by hand {by_hand:5.1f})")

# %% [markdown]
# The FLOPs grow B-fold while the bytes hardly move: half a FLOP per byte per request here
# (2 FLOPs per weight, 4 bytes per float32 weight). At large B the full count falls behind:
# each request's own KV cache adds bytes (more at the end).

# %% [markdown]
# ## Measure it: prefill and decode on this machine's roofline
#
# How much arithmetic per byte keeps this machine's arithmetic units busy? Take its two ceilings
# from lesson 02 (`perf.machine_peaks()`, `perf.cached_peaks()`): a large matrix
# product's FLOP/s and memory's read speed in bytes/s. Their ratio is the **ridge point**
# (lesson 03): below it, a pass's memory floor outlasts its compute floor; above it, the
# reverse. The rule of lessons 03 and 04 adds the fixed cost per step (`perf.fixed_cost`).
#
# **Predict.** What will the rule say about the decode step of the batch of 16, on your machine?

# %%
prediction_regime_16 = None  # ← your guess: "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
machine = perf.machine_peaks()  # measured the first time on this machine, then reused
peaks = perf.cached_peaks()  # the same peaks in float32: the two roofs, with their spreads
fixed = perf.fixed_cost(spec.n_layers)  # a step of a 30-layer model with almost no weights
ridge = peaks.flops_spread / peaks.bytes_spread  # FLOP per byte, with the spread of both
print(machine.status)
print(perf.yardsticks())  # the peaks and the fixed cost, as every lesson prints them
print(f"ridge point: {ridge.median:.1f} FLOP/byte ({ridge.low:.1f}–{ridge.high:.1f})")

# %% [markdown]
# Now place real passes under those ceilings on a **roofline**: arithmetic intensity
# (FLOP per byte) across, FLOP/s achieved up. A pass that reads at full speed achieves
# intensity × read speed: the sloped roof, on the left. No pass computes faster than the peak
# FLOP/s: the flat roof, on the right. The two meet at the ridge point. The passes: a short
# reply (prefill + decode), two longer prompts (prefill only, 3 runs each), and the batch
# sweep's decode steps.

# %% tags=["nbval-ignore-output"]
my_prompt = "Explain in one sentence why the sky is blue."  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=8, stop_at_eos=False)
prompts = perf.prompt_length_sweep(lm, [32, 128], repeats=3, progress=False)
roof = perf.measure_roofline(lm, peaks=peaks, trace=trace, batch=sweep, prompt_sweep=prompts,
                             label="this machine")
roofline_figure(roof)

# %% [markdown]
# Hover over a point for its time, **MFU** and **MBU** (lesson 03). Each pass with the rule's
# verdict (the short reply's prefill is a single run):

# %% tags=["nbval-ignore-output"]
timed = {"prefill": viz.Spread.exact(trace.timing.prefill_forward_s),  # one run
         "decode": trace.decode_step_spread}
timed |= {f"decode B={b}": s for b, s in zip(step, sweep.spread("decode_forward_s"))}
timed |= {f"prefill {n}": s for n, s in zip(prompts.column("prompt_tokens"),
                                            prompts.spread("prefill_forward_s"))}
verdicts = {p.label: perf.pass_verdict(p.flops, p.bytes, timed[p.label], peaks, fixed)
            for p in roof.points}
for p in roof.points:
    v = verdicts[p.label]
    print(f"{p.label:<12} {v.step.text(1e3, 'ms', runs=False):>24} {p.intensity:5.1f} FLOP/byte"
          f"  MFU {v.mfu:4.0%}  MBU {v.mbu:4.0%}  {v.regime}")
print("decode B=16:", verdicts["decode B=16"])

# %%
compare_prediction(prediction_regime_16, verdicts["decode B=16"], options=list(perf.REGIMES),
                   hint="the rule's questions in their order (lesson 03): which floor does "
                        "the batch make longer, and does the fixed cost shrink with it?")

# %% [markdown]
# The black line is the roof, at the two peaks' medians. No pass can beat the machine, but the
# roof is a measurement with a spread, and a kernel of another shape than the peak's can be
# faster. Your points above the roof, if any:

# %% tags=["nbval-ignore-output"]
for p in roof.points:
    over = p.achieved_flops_per_s / roof.attainable_flops_per_s(p.intensity)
    best = min(peaks.flops_spread.high, p.intensity * peaks.bytes_spread.high)  # roof, high end
    if over > 1:
        print(f"{p.label}: {over - 1:.0%} above the roof, "
              + ("within the peaks' spreads" if p.achieved_flops_per_s <= best else
                 "beyond the peaks' spreads"))
print(f"{sum(p.achieved_flops_per_s > roof.attainable_flops_per_s(p.intensity) for p in roof.points)}"
      f" of {len(roof.points)} points above the roof")

# %% [markdown]
# What an MBU means, on the batch-1 decode step:

# %% tags=["nbval-ignore-output"]
one = roof.points[[p.label for p in roof.points].index("decode B=1")]
print(f"decode B=1 moved {one.bytes / 1e6:.0f} MB in {one.seconds * 1e3:.1f} ms: "
      f"{one.achieved_bytes_per_s / 1e9:.1f} GB/s, MBU {roof.mbu(one):.0%}")
print(f"at the full read speed those bytes would take {one.bytes / peaks.bytes_per_s * 1e3:.1f} ms:"
      f" {1 - roof.mbu(one):.0%} of the step went to something other than reading at full speed")

# %% [markdown]
# The rest of the step went elsewhere: the fixed cost, slower kernels (like the 1-row and 2-row
# timings above), a little arithmetic. MBU and MFU compare counted work with the time it took,
# not "how busy the memory was".
#
# A point's place across the chart, counted FLOPs ÷ counted bytes, is the same on any machine:
# prefill reuses each weight for every prompt token, so longer prompts sit further right; decode
# at batch 1 sits far left, each doubling of the batch moving it right.
#
# ### Where the verdict turns, and where a knee would be
#
# Where decode's intensity reaches the ridge, its compute floor passes its memory floor and the
# rule's verdict turns from memory-bound to compute-bound: a statement about floors. A **knee**
# in the measured steps is another thing: the batch size past which each step grows in
# proportion to B, because the arithmetic now fills it. Both, from your numbers:

# %% tags=["nbval-ignore-output"]
print(f"the floors cross at B ≈ {ridge.median / intensity[1]:.0f} "
      f"({ridge.low / intensity[1]:.0f}–{ridge.high / intensity[1]:.0f}, from the ridge's spread)")
for b in step:
    v = verdicts[f"decode B={b}"]
    print(f"B={b:>2}: step {v.step.text(1e3, 'ms', runs=False):>22}  compute floor "
          f"{v.compute_floor.text(1e3, 'ms', runs=False):>20}  {v.regime}")
turned = [b for b in step if verdicts[f"decode B={b}"].regime == "compute-bound"]
close = [b for b in step if verdicts[f"decode B={b}"].close]
print((f"compute-bound from B={turned[0]}" if turned else "no batch here is compute-bound beyond "
       "the spreads") + (f"; too close to call at B={', '.join(map(str, close))}" if close else ""))

# %% tags=["nbval-ignore-output"]
grow = verdicts["decode B=16"].step / verdicts["decode B=8"].step
print(f"B=8 → B=16: the step ×{grow.median:.2f} (×{grow.low:.2f}–{grow.high:.2f}) for ×2 the "
      "arithmetic: " + ("nearly in proportion, a knee at or before B=8" if grow.low >= 1.8
                        else "far from in proportion: no knee up to B=16"))
fill = verdicts["decode B=16"].step.median * peaks.flops_per_s / perf.decode_cost(spec, ctx).flops
print(f"the arithmetic at the peak would fill the B=16 step at B ≈ {fill:.0f}")

# %% [markdown]
# Past the crossing the rule says compute-bound, yet the step need not grow in proportion to B:
# fixed cost and slow streaming leave room to absorb more arithmetic, up to near the batch size
# printed last (if the peak held there).
#
# **Predict.** The next cell runs batches of 16 and 32 again, side by side. How many times
# longer will a step of 32 take than a step of 16?

# %%
STEP_32 = ["under ×1.2: the step absorbs the extra arithmetic",
           "×1.2 to ×1.8: the step grows, by less than the arithmetic",
           "×1.8 or more: the step grows almost in proportion to B"]
prediction_step_32 = None  # ← your guess: one of STEP_32, copied exactly

# %% tags=["nbval-ignore-output"]
again = perf.batch_size_sweep(lm, [16, 32], max_new_tokens=8, progress=False)
s16, s32 = again.spread("decode_forward_s")
step_32 = s32 / s16
c32 = perf.decode_cost(spec, ctx, batch=32)
v32 = perf.pass_verdict(c32.flops, c32.bytes, s32, peaks, fixed)
print(f"B=16 {s16.text(1e3, 'ms')}, B=32 {s32.text(1e3, 'ms')}: ×{step_32.median:.2f} "
      f"(×{step_32.low:.2f}–{step_32.high:.2f}) for ×2 the arithmetic; B=32 is {v32.regime}, "
      f"MFU {v32.mfu:.0%}")
grew = viz.band(step_32, [1.2, 1.8], STEP_32)  # with both steps' spreads
print("→", grew)

# %%
compare_prediction(prediction_step_32, grew, options=STEP_32,
                   hint="how much did the step grow from B=8 to B=16 (printed above), and does "
                        "the step of 16 leave more room for arithmetic than the step of 8 did?")

# %% [markdown]
# The step of 16 just timed need not match the first sweep's: the machine's speed wanders
# between sweeps, so take ratios within one sweep.
#
# For comparison, the same chart recorded on the project's own machine by
# `benchmarks/perf_lab.py` (dashed); where and how:

# %%
reference = perf.load_reference("cpu-roofline")
env = reference.environment
print(f"{reference.label}: {env.device_name} ({env.device}), {env.threads} threads, "
      f"{env.dtype}, torch {env.torch_version}, transformers {env.transformers_version}")

# %% tags=["nbval-ignore-output"]
roofline_figure(roof, reference)

# %% [markdown]
# ### Where the verdict turns on a GPU, measured once
#
# A CPU's ridge is low, a few to a few tens of FLOP per byte, so its floors cross at small
# batches. A GPU's ridge is in the hundreds: the crossing needs a large model and large batches.
# The course ships an H200's batch sweep of Llama-3.1-8B's shape (random weights, bfloat16),
# timed by wall clock and by busy time (lesson 04).
#
# **Predict.** In bfloat16 each weight is 2 bytes and does 2 FLOPs per request, so a decode step
# of B requests does about B FLOPs per byte of weights it reads. The H200's ridge is about 180
# FLOP per byte as measured (206 from its datasheet). The rule, applied to the GPU's busy time
# at each batch (no launch gaps, so no host fixed cost), names the first compute-bound batch of
# the sweep (1, 16, 64, 256, 512, 1,024). Where is it?

# %%
KNEE = ["at 16 or below", "above 16, at 256 or below", "above 256, at 1,024 or below",
        "none: memory-bound up to 1,024"]
prediction_knee = None  # ← your guess: one of KNEE, copied exactly

# %% [markdown]
# Where the floors cross, counted from the H200's measured and datasheet peaks (the busy times
# after it say whether the verdict turns there):

# %%
gpu_sweep = perf.gpu_reference("busy-sweep", "llama-3.1-8b")
big, h200, sheet = gpu_sweep.model, perf.gpu_peaks(), perf.datasheet("H200")
context = gpu_sweep.column("context_tokens")[0]
counted = perf.ridge_batch(big, h200.flops_per_s, h200.bytes_per_s, context)
print(f"{big.name}: {big.weight_bytes / 1e9:.1f} GB of weights, of which a step reads "
      f"{perf.decode_cost(big, context).weight_bytes / 1e9:.1f} GB (all but the embedding "
      f"table, whose new rows only it reads); {context} tokens per request")
for what, flops, read in (("measured", h200.flops_per_s, h200.bytes_per_s),
                          ("datasheet", sheet.flops_per_s, sheet.bytes_per_s)):
    print(f"H200 {what:9}: {flops / 1e12:4.0f} TFLOP/s, {read / 1e12:.2f} TB/s, ridge "
          f"{flops / read:3.0f} FLOP/byte: floors cross at B="
          f"{perf.ridge_batch(big, flops, read, context)}; no crossing past "
          f"{perf.knee_context(big, flops / read):,.0f} tokens per request")

# %% [markdown]
# The crossing exists only for short requests: reading one token of a request's own cache buys
# only a few FLOPs, so past the context printed last (`perf.knee_context`) no batch, however large,
# reaches the ridge. The rule on the busy time, batch by batch:

# %%
rows = perf.busy_rows(gpu_sweep)
for r in rows:
    print(f"B={r.batch:>5}: wall {r.wall.median * 1e3:5.0f} ms, GPU busy {r.busy.median * 1e3:5.1f} "
          f"ms, MBU {r.mbu:4.0%}, MFU {r.mfu:4.0%}, {r.verdict.regime}")
last_memory, first_compute = perf.busy_knee(rows)
knee = (KNEE[3] if first_compute is None else KNEE[0] if first_compute <= 16
        else KNEE[1] if first_compute <= 256 else KNEE[2])
print(f"measured: memory-bound up to B={last_memory}, compute-bound from B={first_compute}")

# %%
compare_prediction(prediction_knee, knee, options=KNEE,
                   hint="the counted crossing above is where the floors cross; the busy time sits "
                        "above both floors, so look for the batch where the compute floor "
                        "becomes the larger one")

# %% [markdown]
# The GPU's own time turns where the counting puts the crossing: nearly flat while the weights
# dominate (each extra request rides on the same 15 GB read), then growing with the batch (a
# knee). The wall clock shows no knee: every batch took around a tenth of a second, the host
# launching the same kernels for 1 request or 1,024. The busy time's roofline, under the H200's
# measured roofs:

# %%
roofline_figure(perf.busy_roofline(gpu_sweep))

# %% [markdown]
# A datasheet's crossing (B=232 above) cannot say that the wall time was mostly launches: a
# datasheet has no host (lesson 13 measures the remedy, a CUDA graph, on the same GPU).
#
# ## Where this leads: the memory wall
#
# Batching raised decode's intensity because the weights were shared; the KV cache is not: every
# request reads its own. At a realistic 2,048 tokens, the rule on each step's floors alone (no
# fixed cost), on this machine (with the peaks' spreads) and on an NVIDIA H100 (**computed**
# from its datasheet, `perf.H100_SXM`, in bfloat16), with the batch's caches' size on the H100:

# %% tags=["nbval-ignore-output"]
gpu, bf16 = perf.H100_SXM, perf.config_spec("smollm2-135m", dtype="bfloat16")
here = {}
for b in (1, 8, 64, 256, 1024):  # the rule on each step's floors (perf.floors_verdict)
    cost, gpu_cost = perf.decode_cost(spec, 2048, batch=b), perf.decode_cost(bf16, 2048, batch=b)
    here[b] = perf.floors_verdict(cost, peaks.flops_spread, peaks.bytes_spread).regime
    there = perf.floors_verdict(gpu_cost, gpu["flops_per_s"]["bfloat16"], gpu["bytes_per_s"])
    print(f"B={b:>4}: {cost.intensity:4.1f} FLOP/byte, KV cache {cost.kv_bytes / cost.bytes:4.0%} "
          f"of the bytes; here {here[b]:17}  H100 {there.regime:13}  "
          f"caches {gpu_cost.kv_bytes / 1e9:5.1f} GB")

# %% [markdown]
# The intensity stalls at a few FLOPs per byte, however large the batch: past a point each
# extra request brings bytes (its cache) in proportion to its FLOPs. Whether the ridge lies
# below the stall (crossed) or above it (never, at this context) depends on the machine. On
# yours:

# %% tags=["nbval-ignore-output"]
stall = perf.decode_cost(spec, 2048, batch=1024).intensity
gpu_ridge = gpu["flops_per_s"]["bfloat16"] / gpu["bytes_per_s"]
print(f"the stall {stall:.1f} FLOP/byte; ridge here {ridge.median:.1f} ({ridge.low:.1f}–"
      f"{ridge.high:.1f}, measured), H100 in bfloat16 {gpu_ridge:.0f} (computed), "
      f"{gpu_ridge / ridge.median:.0f}× this machine's")
crossed = [b for b in here if here[b] == "compute-bound"]
print(f"here the ridge sits below the stall: the 'here' column turns compute-bound from B={crossed[0]}"
      if crossed else "too close to call here: the stall lies within the ridge's spread"
      if perf.TOO_CLOSE in here.values() else
      "here the ridge sits above the stall: the 'here' column never turns compute-bound at 2,048 tokens")

# %% [markdown]
# Memory caps the batch first: each request's cache must fit beside what is already held. Lesson
# 05's count, at 2,048 tokens: in a 2 GB session beside this notebook's process (weights
# included); on the H100 beside the weights alone, an upper bound:

# %% tags=["nbval-ignore-output"]
import psutil

held = psutil.Process().memory_info().rss  # this notebook's process, weights included
for m, free, where in ((spec, 2e9 - held, f"2 GB minus this notebook's {held / 1e9:.1f} GB"),
                       (bf16, 80e9 - bf16.weight_bytes, "80 GB H100 minus the weights, at most")):
    fit = max(0, int(free // m.kv_bytes(2048)))
    print(f"{where}: {fit:,} requests of 2,048 tokens ({m.kv_bytes(2048) / 1e6:.0f} MB of "
          f"{m.dtype} cache each)")

# %% [markdown]
# So the batches of 1,024 fit on the H100 but never in a Binder session, where the cap comes
# long before the stall. The H100's ridge lies far right of any stall: the faster a machine's
# arithmetic next to its memory, the further right its ridge, and the longer decode stays
# memory-bound however it is batched. That gap is **the memory wall**; what fights it
# (fewer bytes per weight, smaller caches, smarter batching) moves fewer bytes per token.
# Lesson 08 measures it; lesson 12 shows from datasheets that arithmetic has grown faster than
# bandwidth across GPU generations.
#
# ## Next
#
# [07 · Capstone →](07_capstone.ipynb): your own prompt through the whole pipeline, on one
# dashboard, beside a recorded reference.

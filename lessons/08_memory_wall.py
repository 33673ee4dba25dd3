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
# # 08 · The memory wall
#
# Lesson 04 found that a decode step reads every weight to make one token, doing about one
# multiply-add per weight, that the *memory floor* (bytes ÷ bandwidth) comes out shorter than
# the measured time per token, and took one step apart.
#
# This lesson times decode steps of models from 12 million to 1.7 billion parameters, in two
# number formats, and splits each step into a **fixed cost** every step pays whatever the
# model's size, **reading the bytes**, and **the arithmetic**. A written rule says which part
# limits each step on your machine; its remedies are measured in
# [12 · Fewer bytes](12_fewer_bytes.ipynb) and
# [13 · Less overhead, more tokens per pass](13_less_overhead.ipynb).

# %%
import viz
from viz import perf, views

# %% [markdown]
# ## See it: time per token against bytes per token
#
# The chart ships with the course, recorded on the project's 2-core CPU (models of up to 7 GB
# do not fit in Binder). How it was recorded:

# %%
ref = perf.load_reference("cpu-memory-wall")
for key in ("command", "date", "machine", "threads", "threads_note", "load_average_before",
            "load_average_after"):
    print(f"{key:>20}: {ref.recorded[key]}")

# %% [markdown]
# Each dot is one model in one number format: **bytes read per decode step** across, **time per
# decode step** up, both on log scales. Circles are float32 (4 bytes per weight), diamonds
# bfloat16 (2 bytes). Black line: the memory floor (bytes ÷ the measured read bandwidth). Dashed
# purple: the fixed cost, measured with a model of the same depth but a tiny width. Green: a
# straight-line fit (below). Hover over a dot for its floors; its label is its **MBU**
# (lesson 03).

# %%
views.wall_figure(ref)

# %% [markdown]
# A dot's colour is the verdict of the rule below. The same numbers as a table, the
# verdict last:

# %%
print(ref)

# %% [markdown]
# The tiny-width models take milliseconds per step while reading almost nothing; the largest,
# hundreds, growing with the bytes; in between, fixed cost and bytes share the step.
#
# ## Understand it: three floors and one rule
#
# The three floors of the course model's shape (SmolLM2-135M) in float32, by hand from what was
# measured:

# %%
p = ref.point("SmolLM2-135M fp32")
bw, peak = ref.read_bytes_per_s, ref.flops_per_s["float32"]
print(f"memory floor  {p.step_bytes / bw * 1e3:6.1f} ms = {p.step_bytes:,} bytes per step ÷ "
      f"{bw / 1e9:.1f} GB/s read bandwidth")
print(f"compute floor {p.step_flops / peak * 1e3:6.1f} ms = {p.step_flops:,} FLOPs per step ÷ "
      f"{peak / 1e9:.0f} GFLOP/s peak")
print(f"fixed cost    {p.fixed_cost_s * 1e3:6.1f} ms (a {p.n_layers}-layer model of width 64)")
print(f"measured step {p.seconds * 1e3:6.1f} ms")

# %% [markdown]
# The memory floor divides by the **read bandwidth**: the bytes per second of a sum over a
# buffer far larger than the processor's last-level cache, as decode reads weights (the size
# sweep below shows how the rate changes with the buffer's size). How each peak was measured:

# %%
print(ref.peaks_how)

# %% [markdown]
# The rule compares the measured step time *t* with the fixed cost *F*, the memory floor *M*
# and the compute floor *C*:
#
# 1. if the fixed cost is at least half the step, the step is **overhead-bound**: a model with
#    almost no weights pays that much too, so fewer bytes would barely help;
# 2. otherwise, if the arithmetic needs at least as long as the reading, **compute-bound**;
# 3. otherwise **memory-bound**.

# %%
def my_regime(t, M, C, F):
    if F >= 0.5 * t:
        return "overhead-bound"
    return "compute-bound" if C >= M else "memory-bound"


verdicts = [my_regime(q.seconds, ref.memory_floor_s(q), ref.compute_floor_s(q), q.fixed_cost_s)
            for q in ref.points]
print("same verdict as perf.regime on every point:", verdicts == list(ref.regimes().values()))

# %% [markdown]
# `perf.regime` is the same rule, checked. `ref.explain(p)` applies it with the
# measured spreads (`perf.verdict`), prints the deciding comparison and its margin, and says
# **too close to call** (lesson 03) where a boundary lies inside the spreads. A floor longer
# than the whole measured step is no floor for it (its peak, from one large kernel, is not what
# this step's kernels reached); the verdict leaves it out and says so (on a CPU without
# bfloat16 instructions, a bfloat16 step can show one):

# %%
for label in ("30 layers × 64 fp32", "SmolLM2-135M fp32", "SmolLM2-1.7B bf16",
              "SmolLM2-135M fp32 B=32"):
    print(f"{label:<24} {ref.explain(ref.point(label))}")

# %% [markdown]
# The last line, a batch of 32 requests decoded together (lesson 06), does 32 times the
# arithmetic for almost the same bytes: on the reference CPU, compute-bound. "Memory-bound"
# beside an MBU well under 100 % means the reading is the larger floor, not that the step runs
# at the roof.
#
# ### Two numbers explain a decode step
#
# If a step is a fixed cost plus streaming its bytes, time = fixed + bytes ÷ rate: a straight
# line. Fit it by least squares through the points it models: one-request shapes not
# compute-bound (not the tiny fixed-cost models, not the batch of 32), in **one** number format
# (float32 here), since a line has one rate and two formats' kernels need not stream equally
# fast:

# %%
fit = ref.fit()
print(fit)
print("points:", ", ".join(p.label for p in ref.fit_points(fit.dtype)))
matvec = ref.peaks.matvec["float32"].bytes_per_s
print(f"slope: the weights stream at {fit.bytes_per_s / 1e9:.1f} GB/s = "
      f"{fit.bytes_per_s / ref.read_bytes_per_s:.0%} of the read peak, "
      f"{fit.bytes_per_s / matvec:.0%} of what the matrix-vector kernel reads alone "
      f"({matvec / 1e9:.1f} GB/s)")
course = ref.point("SmolLM2-135M fp32")
print(f"the course model's own step streams at "
      f"{perf.streaming_rate(course.step_bytes, course.spread, course.fixed_cost_s).median / 1e9:.1f}"
      f" GB/s; intercept {fit.fixed_s * 1e3:.1f} ms against its fixed cost "
      f"{course.fixed_cost_s * 1e3:.1f} ms")

# %% [markdown]
# The intercept (the time at zero bytes) is not a fixed cost: the largest models pull the line,
# so it need not equal, or even lie between, the measured fixed costs (last line). The slope is
# lesson 04's **streaming rate** across many models, compared with the memory's read speed and
# with the *kernel that reads the weights* (`torch.nn.functional.linear` with one row) on one
# large matrix alone. The closer to the kernel's, the more of the gap belongs to the kernel
# library, not the hardware: one reason MBU stays well under 100 % even where the bytes
# dominate.
#
# ### What fewer bytes per weight would buy
#
# If only the bytes changed, each step would be its fixed cost plus the rest scaled with the
# bytes (`perf.bytes_whatif`). Slide from 4 bytes (float32) to half a byte (4-bit weights);
# hover over a bar for the fixed cost's share.

# %%
import ipywidgets as widgets

bpw = widgets.SelectionSlider(options=[4, 2, 1, 0.5], value=4, description="bytes per weight",
                              style={"description_width": "initial"})
views.LinkedView({"b": bpw}, [bpw], lambda v: views.bytes_whatif_figure(ref, v["b"]))

# %% [markdown]
# The big models shrink almost in proportion; the small ones hit their fixed cost. These are
# predictions: fewer bytes pay only with a kernel that reads them *directly*, as fast per byte.
# The reference tried 8-bit weights with a quantization library (each pair timed back to back in
# its own run, so its baseline need not equal the table's). From float32 a quarter of the bytes
# took far less than three quarters off the step; from bfloat16 half the bytes made it slower:

# %%
for q in ref.quantized:
    change = "faster" if q.quantized_s < q.baseline_s else "slower"
    print(f"{q.library}, {q.method}, {q.model} from {q.baseline_dtype}: "
          f"{q.baseline_s * 1e3:.1f} → {q.quantized_s * 1e3:.1f} ms per step ({change})")
print(*ref.notes, sep="\n")

# %% [markdown]
# ## Measure it: your own wall
#
# First your machine's peaks, measured **once per machine** by `perf.machine_peaks()` and reused
# by every lesson, each a median with its spread (when the whole course runs in one go, the
# quick re-check is skipped and the status says "not checked").

# %% tags=["nbval-ignore-output"]
peaks = perf.machine_peaks()
print(perf.yardsticks())  # the three figures every lesson judges with, in one line
print(peaks.how())  # and how each was measured
if peaks.status.startswith("measured again"):
    print("\nThe peaks changed since an earlier lesson used them: its floors, MBU and ridge "
          "rested on the old figures. Run it again to see them with these.")

# %% [markdown]
# The read bandwidth can depend on the buffer's size: a buffer that fits in the processor's
# cache is read from the cache, faster. Measure four sizes, and set the fresh 256 MiB figure
# beside the one every floor uses:

# %% tags=["nbval-ignore-output"]
sizes = perf.bandwidth_by_size([16 << 20, 64 << 20, 256 << 20, 512 << 20], repeats=5)
for b in sizes:
    print(f"{b.buffer_bytes >> 20:4} MiB: {b.spread.text(1e-9, 'GB/s')}; the fastest run "
          f"{b.fastest_bytes_per_s / 1e9:.1f} GB/s")
small, large = sizes[0].spread, sizes[-1].spread
print(f"{sizes[0].buffer_bytes >> 20} MiB against {sizes[-1].buffer_bytes >> 20} MiB: " + (
    "the same within their spreads: here no size fits a cache that reads faster"
    if small.overlaps(large) else "the smaller buffer read faster, beyond both spreads"
    if small.median > large.median else "the smaller buffer read slower, beyond both spreads"))
fresh, kept = sizes[2].spread, peaks.read.spread
print(f"256 MiB now {fresh.text(1e-9, 'GB/s')}, in the peaks {kept.text(1e-9, 'GB/s')}: "
      + ("the same within their spreads" if fresh.overlaps(kept) else
         f"{fresh.median / kept.median - 1:+.0%} apart: the machine is busier or quieter now "
         "than then"))

# %% [markdown]
# Where other programs run, two reads of one buffer can differ by tens of percent: hence
# spreads.
#
# Now decode steps on your machine. `perf.measure_wall` builds each model from its published
# shape with random weights (the real model's kernels and bytes, meaningless text) and times its
# decode steps after a two-token prompt; each depth's fixed cost comes from
# `perf.machine_overhead` (measured once per machine). Two models in float32: a
# 12-million-parameter one (the course model's depth at a width of 128) and the course model's
# shape.

# %% tags=["nbval-ignore-output"]
floors = [perf.machine_overhead("float32", [1, 30, 32]),
          perf.machine_overhead("bfloat16", [30, 32])]
small = perf.narrow_config("smollm2-135m", 128, vocab_size=None,
                           name="SmolLM2-135M depth, width 128")
mine = perf.measure_wall([small, "smollm2-135m"], ["float32"], overhead=floors, peaks=peaks,
                         prompt="Hi")
print(mine)

# %% [markdown]
# ✏️ **Predict before you measure.** The same shape in bfloat16 reads half the bytes. Against
# the float32 step above, its step will take... (The shipped table at the top was recorded on
# a CPU with bfloat16 instructions; yours may have none, and then its ratio is not yours.)

# %%
BF16 = ["about half, or less", "between half and the same", "as long, or longer"]
prediction_bf16 = None  # ← your guess: one of BF16, copied exactly

# %% tags=["nbval-ignore-output"]
mine = mine.merged(perf.measure_wall(["smollm2-135m"], ["bfloat16"], overhead=floors,
                                     peaks=peaks, prompt="Hi"))
b16, f32 = mine.point("SmolLM2-135M bf16"), mine.point("SmolLM2-135M fp32")
ratio_bf16 = b16.spread / f32.spread  # with both steps' spreads
bf16_verdict = viz.band(ratio_bf16, [0.55, 0.95], BF16)  # "about half": ×0.55 at most
print(f"SmolLM2-135M bf16: {b16.spread.text(1e3, 'ms')} per step, ×{ratio_bf16.median:.2f} the "
      f"float32 step (×{ratio_bf16.low:.2f}–{ratio_bf16.high:.2f}) → {bf16_verdict}")
print(mine.explain(b16))

# %%
viz.compare_prediction(prediction_bf16, bf16_verdict, options=BF16,
                       hint="which part of the step depends on the bytes, which does not, and "
                            "does a kernel read 2-byte numbers as fast per byte as 4-byte ones?")

# %% [markdown]
# Did only the bytes change? Each step taken apart, with each format's fixed cost and the
# matrix-vector kernel's reading speed (from the peaks):

# %% tags=["nbval-ignore-output"]
for q in (f32, b16):
    print(f"{q.label:<20} step {q.spread.text(1e3, 'ms')} = fixed cost "
          f"{q.fixed_cost_s * 1e3:5.1f} ms + the rest {(q.seconds - q.fixed_cost_s) * 1e3:6.1f} ms")
rest = (b16.seconds - b16.fixed_cost_s) / (f32.seconds - f32.fixed_cost_s)
kernel = peaks.matvec["bfloat16"].bytes_per_s / peaks.matvec["float32"].bytes_per_s
print(f"bfloat16 ÷ float32: step ×{b16.seconds / f32.seconds:.2f}, fixed cost "
      f"×{b16.fixed_cost_s / f32.fixed_cost_s:.2f}, the rest ×{rest:.2f}, bytes "
      f"×{b16.step_bytes / f32.step_bytes:.2f}")
print(f"one large matrix-vector product reads bfloat16 at ×{kernel:.2f} float32's bytes/s, "
      f"so ×{2 * kernel:.2f} the weights per second")
expected = 0.5 / kernel  # the rest, if the step's products read as that one large one does
print(f"that one product predicts the rest ×{expected:.2f}; measured ×{rest:.2f}: " + (
    "they agree" if abs(rest / expected - 1) <= 0.2 else
    "they disagree: the step's many smaller products do not read as one large one does"))
print(*peaks.findings(), sep="\n")
print("here the rest of the step " + ("shrank at least in proportion to the bytes"
      if rest <= 0.55 else "shrank, but less than the bytes" if rest < 0.95 else
      "did not shrink: half the bytes, no time saved"))

# %% [markdown]
# Half the bytes shorten the streaming part as much as the kernels' bytes per second allow: at
# the same rate it halves; slower, it shrinks less; faster (a kernel slow in float32), more than
# half. The lines above say which happened. It depends on the CPU: with bfloat16
# instructions (AVX-512 BF16, or AMX), bfloat16's kernels are fast; without (AVX2 only, like
# many laptops), its large matrix products can run many times slower than float32's. The
# finding above says which kind of CPU yours is, and by how much; decode's matrix-vector
# products have their own line. Fewer bytes help only with a kernel that reads them as fast
# per byte.
#
# ✏️ **Predict again.** The SmolLM2-360M shape in bfloat16 reads this many times the bytes of
# the 135M shape in bfloat16, and has 32 layers against 30 (the shipped table at the top has
# both, recorded on a CPU with bfloat16 instructions: reason from your own steps):

# %%
big_bytes = perf.config_spec("smollm2-360m", "bfloat16").weight_bytes
print(f"×{big_bytes / perf.config_spec('smollm2-135m', 'bfloat16').weight_bytes:.2f} the bytes "
      "of weights")

# %% [markdown]
# Against the 135M bfloat16 step you just measured, its step will take...

# %%
BIGGER = ["under 2×", "2× to 3×", "more than 3×"]
prediction_360m = None  # ← your guess: one of BIGGER, copied exactly

# %% tags=["nbval-ignore-output"]
mine = mine.merged(perf.measure_wall(["smollm2-360m"], ["bfloat16"], overhead=floors,
                                     peaks=peaks, prompt="Hi"))
big = mine.point("SmolLM2-360M bf16")
times = big.spread / b16.spread
bigger = viz.band(times, [2, 3], BIGGER)  # with both steps' spreads
print(f"SmolLM2-360M bf16: {big.spread.text(1e3, 'ms')} per step, ×{times.median:.2f} the 135M "
      f"bf16 step (×{times.low:.2f}–{times.high:.2f}) → {bigger}")

# %%
viz.compare_prediction(prediction_360m, bigger, options=BIGGER,
                       hint="which part of the 135M step grows with the bytes, and which part "
                            "stays about the same (its fixed cost, printed above)? Larger "
                            "matrices can stream closer to the read peak, so the rest may grow "
                            "by less than the bytes (in the shipped table, ×2.34 for ×2.69 the "
                            "bytes): compare the two shapes' MBU in your rows")

# %% [markdown]
# Last, the reference's batch of 32 on your machine: 32 times the arithmetic per weight read (a
# two-token prompt keeps its prefill short).

# %% tags=["nbval-ignore-output"]
mine = mine.merged(perf.measure_wall(["smollm2-135m"], ["float32"], batch_sizes=[32],
                                     prompt="Hi", max_new_tokens=6, repeats=1, peaks=peaks,
                                     overhead=floors))

# %% [markdown]
# Your points (filled) beside the reference's (hollow, dotted floors), and your fitted line,
# printed with the points it was fitted on:

# %% tags=["nbval-ignore-output"]
print(mine.fit() if mine.fit_dtype() else  # a line needs two shapes in one format
      "no line through your points: fewer than two batch-1 shapes in one format that the rule "
      f"does not call compute-bound ({', '.join(p.label for p in mine.fit_points())})")
views.wall_figure(mine, ref)

# %% [markdown]
# ### Your own dot
#
# A model as deep as the course model (30 layers) at the width you choose, random weights,
# float32: the slider builds it and times its decode steps (a few seconds) and adds its dot to
# your wall. The width sets the bytes (each layer's weights grow with its square); the depth,
# and so the fixed cost, stays. Width 128 is the small model measured above.
#
# ✏️ **Predict**, before you drag to 256: will its dot sit on your fitted line, or off it?

# %% tags=["nbval-ignore-output"]
wall = {"run": mine}  # your wall; the slider adds one width at a time


def width_chart(values):
    name = f"SmolLM2-135M depth, width {values['width']}"
    if not any(p.model == name for p in wall["run"].points):  # a real model, timed here
        shape = perf.narrow_config("smollm2-135m", values["width"], vocab_size=None, name=name)
        wall["run"] = wall["run"].merged(perf.measure_wall(
            [shape], ["float32"], overhead=floors, peaks=peaks, prompt="Hi",
            fixed_cost_points=False))
    return views.wall_figure(wall["run"], ref)


width = widgets.SelectionSlider(options=[128, 192, 256, 320, 384], value=128,
                                description="width", continuous_update=False)
views.LinkedView({"width": width}, [width], width_chart)

# %% [markdown]
# ### What you can do about each kind of step
#
# The rule's verdict on each of your points, its deciding comparison and margin, and what would
# shorten such a step:

# %% tags=["nbval-ignore-output"]
for q in mine.points:
    print(f"{q.label:<24} MBU {mine.mbu(q):4.0%}  {mine.explain(q)}\n")
for name in perf.REGIMES:
    print(f"{name}: {perf.REMEDIES[name]}")

# %% [markdown]
# ### The same wall on a GPU, measured once
#
# The course ships the same measurement on an NVIDIA H200 (bfloat16 and float32, random weights,
# wall-clock timed). On a GPU that clock is the **host's**: its Python launches a step's kernels
# one after another, and the fixed cost (a model as deep, 64 wide, same run) is the host's cost
# of launching a step of that depth.

# %%
gpu_wall = perf.gpu_wall()
print(perf.gpu_provenance())
print(gpu_wall.peaks_how.splitlines()[0])

# %% [markdown]
# **Predict.** The 8-billion-weight model (Llama-3.1-8B's shape) reads 15 GB per step in
# bfloat16, and the GPU reads about 4 TB a second. Which word will the rule give its step,
# measured by the wall clock, with the host's fixed cost?

# %%
prediction_gpu_8b = None  # ← your guess: one of perf.REGIMES, copied exactly

# %%
fit = gpu_wall.fit()  # a line through the float32 shapes, as on your machine
print(f"{fit}: the line explains {fit.r_squared:.0%} of the steps' variation, so the figure "
      f"draws none")
views.wall_figure(gpu_wall, fit=False)

# %%
print(gpu_wall)
gpu_small, gpu_8b = (next(q for q in gpu_wall.points if q.label == name)
                     for name in ("SmolLM2-135M bf16", "Llama-3.1-8B bf16"))
gpu_8b_verdict = gpu_wall.verdict(gpu_8b)
print(f"from {gpu_small.label} to {gpu_8b.label}: ×{gpu_8b.step_bytes / gpu_small.step_bytes:.0f} "
      f"the bytes, ×{gpu_8b.seconds / gpu_small.seconds:.1f} the step; the host's fixed cost "
      f"{gpu_8b.fixed_cost_s / gpu_8b.seconds:.0%} of the 8B's step")
busy = perf.busy_rows(perf.gpu_reference("busy-sweep", "llama-3.1-8b"))[0]  # lesson 04
print(f"the 8B's step without the host: its kernels summed {busy.busy.text(1e3, 'ms', 2)} "
      f"(MBU {busy.mbu:.0%}), against {gpu_8b.seconds * 1e3:.1f} ms by the wall clock here")

# %%
viz.compare_prediction(prediction_gpu_8b, gpu_8b_verdict, options=list(perf.REGIMES),
                       hint="compare the fixed cost in the table with half the step")

# %% [markdown]
# The same three floors, a different balance. The GPU reads an 8B step's 15 GB in a few
# milliseconds, so every memory floor is short, and the host's fixed cost is about half of every
# step or more, large model or small: the dots lie almost flat, and no straight line fits them
# (the R² above). Without the host, the GPU streamed the 8B's weights at the MBU printed last
# (lesson 04's busy time); lesson 13 removes the launches with a CUDA graph and measures what is
# left.
#
# ## The remedies, measured
#
# [12 · Fewer bytes](12_fewer_bytes.ipynb) runs the course model in six number formats through
# transformers and llama.cpp; [13 · Less overhead, more tokens per pass](13_less_overhead.ipynb)
# profiles a decode step, compiles it with `torch.compile`, tries speculative decoding, and sets
# the GPU's measured step beside one computed from a datasheet. The course model, for the check
# below:

# %%
lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures

# %% [markdown]
# ## Check yourself
#
# Your three predictions were checked where you made them. One more: everything above ran with
# this many threads (torch's default here):

# %% tags=["nbval-ignore-output"]
print(f"{peaks.threads} threads")

# %% [markdown]
# ✏️ With **one** thread, how long will a decode step of the course model (float32, the shape
# you measured above) take, against the same step with the default threads? Predict, then run
# the measurement and the check.

# %%
ONE_THREAD = ["shorter with one thread (under ×0.85)", "about the same (×0.85 to ×1.25)",
              "longer, by less than twice (×1.25 to ×1.8)", "about twice as long (×1.8 or more)"]
prediction_one_thread = None  # ← your guess: one of ONE_THREAD, copied exactly

# %% tags=["nbval-ignore-output"]
default = perf.measure_point(lm)  # the same measurement with the default threads, for scale
one = perf.measure_point(lm, threads=1)
one_vs_default = one.spread / default.spread  # with both steps' spreads
measured_one_thread = viz.band(one_vs_default, [0.85, 1.25, 1.8], ONE_THREAD)
print(f"{peaks.threads} threads: {default.spread.text(1e3, 'ms')} per step; one thread: "
      f"{one.spread.text(1e3, 'ms')}: ×{one_vs_default.median:.2f} "
      f"(×{one_vs_default.low:.2f}–{one_vs_default.high:.2f}) → {measured_one_thread}")

# %%
viz.compare_prediction(prediction_one_thread, measured_one_thread, options=ONE_THREAD,
                       hint="the fixed cost is Python launching kernels one after another "
                            "(one core does it either way); the reading goes through one "
                            "memory bus both cores share. What is left to split?")

# %% tags=["nbval-ignore-output"]
print(f"one thread against {peaks.threads}, beyond the band: the two steps' spreads " + (
    "overlap: more threads did not shorten this step here"
    if one.spread.overlaps(default.spread) else
    "do not overlap, one thread slower: the other threads did shorten the step"
    if one.seconds > default.seconds else
    "do not overlap, one thread faster: more threads made this step a little slower here"))

# %% [markdown]
# A decode step of this model is hundreds of small kernels, each reading a few megabytes; the
# line above says whether splitting each over the cores paid here.

# %% [markdown]
# ## Next
#
# Back to [04 · Decode](04_decode.ipynb) (the memory floor) and
# [06 · Batching](06_batching.ipynb) (sharing a weight read). Next,
# [09 · Continuous batching and pages →](09_continuous_batching.ipynb): many users, one server,
# and what batching and the KV cache look like when requests come and go.

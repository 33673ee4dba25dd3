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
# Lesson 04 counted what one decode step does: it reads every weight of the model to make a
# single token, and does only about one multiply-add per weight. It also printed a puzzle: the
# *memory floor* (the model's bytes divided by the machine's bandwidth) came out far shorter
# than the measured time per token. Something else takes the rest of the step.
#
# This lesson solves the puzzle with measurements. It times decode steps of models from 12
# million to 1.7 billion parameters, in two number formats, and splits each step into three
# parts: a **fixed cost** every step pays whatever the model's size, **reading the bytes**,
# and **the arithmetic**. A written rule then says which part limits each step, on your
# machine. At the end you will watch a trick that makes one weight read produce several
# tokens: speculative decoding.

# %%
import viz
from viz import perf, views

# %% [markdown]
# ## See it: time per token against bytes per token
#
# The chart below was recorded on the project's 2-core CPU (models of up to 7 GB do not fit in
# a Binder session, so they come as reference data shipped with the course). How it was
# recorded:

# %%
ref = perf.load_reference("cpu-memory-wall")
for key in ("command", "date", "machine", "threads", "threads_note", "load_average_before",
            "load_average_after"):
    print(f"{key:>20}: {ref.recorded[key]}")

# %% [markdown]
# Each dot is one model in one number format: **bytes read per decode step** across, **time
# per decode step** up, both on log scales. Circles are float32 (4 bytes per weight), diamonds
# bfloat16 (2 bytes). The black line is the memory floor: bytes ÷ the measured read bandwidth.
# The dashed purple lines are the fixed cost, measured with a model of the same depth but a
# tiny width. The green line is a straight-line fit through all the dots. Hover over a dot for
# its floors; the label beside it is its **MBU** (model bandwidth utilisation: bytes ÷ time ÷
# peak bandwidth).

# %%
views.wall_figure(ref)

# %% [markdown]
# The colour of a dot is the verdict of a rule you will meet in a moment. The same numbers as a
# table, with the rule's verdict in the last column:

# %%
print(ref)

# %% [markdown]
# Read the table from top to bottom. The tiny-width models take milliseconds per step while
# reading almost nothing; the largest models take hundreds of milliseconds, and there the step
# time grows with the bytes. In between, the fixed cost and the bytes share the step.
#
# ## Understand it: three floors and one rule
#
# Take one point, the shape of the course's model (SmolLM2-135M) in float32, and compute its
# three floors by hand from what was measured:

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
# The memory floor uses the bandwidth of *reading*: a sum over a buffer far larger than the
# processor's last-level cache, the way decode reads weights (the size sweep below shows where
# the cache stops helping on your machine). How each peak was measured is stored with it:

# %%
print(ref.peaks_how)

# %% [markdown]
# Now the rule, written out. It compares the measured step time *t* with the fixed cost *F*,
# the memory floor *M* and the compute floor *C*:
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
# The library's version, `perf.regime`, is the same rule with input checks; `ref.explain(p)`
# prints the comparison that decided a verdict:

# %%
for label in ("30 layers × 64 fp32", "SmolLM2-135M fp32", "SmolLM2-1.7B bf16",
              "SmolLM2-135M fp32 B=32"):
    print(f"{label:<24} {ref.explain(ref.point(label))}")

# %% [markdown]
# The last line is a batch of 32 requests decoded together (lesson 06): 32 times the
# arithmetic for almost the same bytes. It is there to show the third verdict on this CPU.
#
# ### Two numbers explain a decode step
#
# If a step is a fixed cost plus streaming its bytes, then time = fixed + bytes ÷ bandwidth: a
# straight line. Fit it by least squares across the points (the green line in the chart):

# %%
fit = ref.fit()
print(fit)
print(f"intercept {fit.fixed_s * 1e3:.1f} ms; fixed cost measured at 30 layers "
      f"{ref.point('30 layers × 64 fp32').seconds * 1e3:.1f} ms")
matvec = ref.peaks.matvec.bytes_per_s
achieved = fit.bytes_per_s
print(f"slope: achieved {achieved / 1e9:.1f} GB/s = {achieved / ref.read_bytes_per_s:.0%} of the "
      f"read peak, {achieved / matvec:.0%} of what the matrix-vector kernel reads alone "
      f"({matvec / 1e9:.1f} GB/s)")

# %% [markdown]
# The intercept is the line's guess at a step with no bytes to read. The points come from
# models of 1 to 32 layers, whose fixed costs differ (the tiny models measure them directly), so
# the intercept is a rough average of them, not the fixed cost of any one model: compare it
# with the 30-layer tiny model's, printed above. The slope is the rate at which the weights
# really stream.
# The last line compares that rate with two others: the memory's own read speed, and the speed
# at which the *kernel that reads the weights* (`torch.nn.functional.linear` with one row, what
# a batch-1 step runs for every weight matrix) gets through a large matrix on its own. The
# closer the achieved rate is to the kernel's than to the memory's, the more of the gap belongs
# to the kernel library rather than to the hardware; it is one reason MBU stays well under
# 100 % even where bytes dominate.
#
# ### What fewer bytes per weight would buy
#
# The fit predicts a step at any number of bytes per weight: the fixed cost of the model's
# depth, plus its bytes at the fitted rate. Drag the slider from 4 bytes (float32) to half a
# byte (4-bit weights). Hover over a bar for the share of the step that is fixed cost.

# %%
import ipywidgets as widgets

bpw = widgets.SelectionSlider(options=[4, 2, 1, 0.5], value=4, description="bytes per weight",
                              style={"description_width": "initial"})
views.LinkedView({"b": bpw}, [bpw], lambda v: views.bytes_whatif_figure(ref, v["b"]))

# %% [markdown]
# The big models shrink almost in proportion; the small ones hit their fixed cost. These bars
# are predictions from a line. Whether fewer bytes really pay depends on a kernel that reads
# them *directly*: the reference also tried 8-bit weights with a quantization library (each
# pair below timed back to back in a run of its own, so its baseline need not equal the
# table's point for the same model).

# %%
for q in ref.quantized:
    change = "faster" if q.quantized_s < q.baseline_s else "slower"
    print(f"{q.library}, {q.method}, {q.model} from {q.baseline_dtype}: "
          f"{q.baseline_s * 1e3:.1f} → {q.quantized_s * 1e3:.1f} ms per step ({change})")
print(*ref.notes, sep="\n")

# %% [markdown]
# ## Measure it: your own wall
#
# First your machine's peaks. `perf.machine_peaks()` measures them **once per machine** and
# keeps them in viz's cache folder, so this lesson and every later one use the same numbers;
# `perf.machine_peaks(refresh=True)` measures again (do it when nothing else is running).

# %% tags=["nbval-ignore-output"]
peaks = perf.machine_peaks()
print(peaks.how())

# %% [markdown]
# The read bandwidth depends on the size of the buffer: a buffer that fits in the cache is
# read from the cache. Measure it over four sizes (a few seconds):

# %%
for b in perf.bandwidth_by_size([16 << 20, 64 << 20, 256 << 20, 512 << 20], repeats=5):
    print(f"{b.buffer_bytes >> 20:4} MiB: {b.bytes_per_s / 1e9:.1f} GB/s")
print(f"the cached read peak above (256 MiB, measured {peaks.measured_at}): "
      f"{peaks.bytes_per_s / 1e9:.1f} GB/s")

# %% [markdown]
# The same buffer size measured twice can differ by tens of percent on a machine where other
# programs run; the cached peak is the one every floor uses. If the two 256 MiB figures above
# are far apart, measure again with `perf.machine_peaks(refresh=True)` when nothing else runs.

# %% [markdown]
# Now decode steps on your machine. `perf.measure_wall` builds each model from its published
# shape with random weights (the same kernels and bytes as the real model; meaningless text),
# times its decode steps, frees it, and measures the fixed cost with tiny-width models of the
# same depth. Two models in float32: a 12-million-parameter one (the course model's depth at a
# width of 128) and the course model's shape (about 15 seconds on the 2-core machine the
# course was made on).

# %% tags=["nbval-ignore-output"]
small = perf.narrow_config("smollm2-135m", 128, vocab_size=None,
                           name="SmolLM2-135M depth, width 128")
mine = perf.measure_wall([small, "smollm2-135m"], ["float32"], overhead_depths=[1], peaks=peaks)
print(mine)

# %% [markdown]
# ✏️ **Predict before you measure.** The same shape in bfloat16 reads half the bytes. From the
# table above (the fixed cost, the step time), how long will one bfloat16 step take, in ms, if
# only the bytes change?

# %%
prediction_bf16 = None  # ← replace None with your prediction, in ms, then run the next cells

# %% tags=["nbval-ignore-output"]
half = perf.measure_wall(["smollm2-135m"], ["bfloat16"], peaks=peaks, fixed_cost_points=False)
mine = mine.merged(half)
measured_bf16 = mine.point("SmolLM2-135M bf16").seconds * 1e3
print(f"SmolLM2-135M bf16: {measured_bf16:.1f} ms per step; "
      f"{mine.explain(mine.point('SmolLM2-135M bf16'))}")

# %%
viz.compare_prediction(prediction_bf16, measured_bf16, unit="ms", rel_tol=0.25,
                       hint="which part of the step depends on the bytes, and which does not?")

# %% [markdown]
# Did only the bytes change? Each step taken apart, with the fixed cost measured for each
# number format (tiny-width models of the same depth in float32 and in bfloat16):

# %% tags=["nbval-ignore-output"]
f32, b16 = mine.point("SmolLM2-135M fp32"), mine.point("SmolLM2-135M bf16")
for q in (f32, b16):
    print(f"{q.label:<20} step {q.seconds * 1e3:6.1f} ms = fixed cost {q.fixed_cost_s * 1e3:5.1f} "
          f"ms + the rest {(q.seconds - q.fixed_cost_s) * 1e3:6.1f} ms")
print(f"bfloat16 ÷ float32: step ×{b16.seconds / f32.seconds:.2f}, fixed cost "
      f"×{b16.fixed_cost_s / f32.fixed_cost_s:.2f}, the rest "
      f"×{(b16.seconds - b16.fixed_cost_s) / (f32.seconds - f32.fixed_cost_s):.2f}, "
      f"bytes ×{b16.step_bytes / f32.step_bytes:.2f}")

# %% [markdown]
# Half the bytes can only halve the part of the step that streams them, and only if the
# kernels stream bfloat16 as fast as float32. The fixed cost of a bfloat16 model need not be
# the float32 one either: a processor without fast bfloat16 instructions converts numbers in
# many small operations. The ratios above say which of these happened on your machine.

# %% [markdown]
# Your own line through your own points:

# %% tags=["nbval-ignore-output"]
my_fit = mine.fit()
print(my_fit)
print(f"achieved {my_fit.bytes_per_s / 1e9:.1f} GB/s of a {peaks.bytes_per_s / 1e9:.1f} GB/s "
      f"read peak; the matrix-vector kernel reads at {peaks.matvec.bytes_per_s / 1e9:.1f} GB/s")

# %% [markdown]
# ✏️ **Predict again.** The SmolLM2-360M shape in bfloat16 reads this many bytes of weights per
# step, plus a little KV cache:

# %%
print(f"SmolLM2-360M in bfloat16: {perf.config_spec('smollm2-360m', 'bfloat16').weight_bytes:,}"
      f" bytes of weights, {perf.config_spec('smollm2-360m').n_layers} layers")

# %%
prediction_360m = None  # ← your prediction for one step, in ms, from your fitted line

# %% tags=["nbval-ignore-output"]
bigger = perf.measure_wall(["smollm2-360m"], ["bfloat16"], peaks=peaks, overhead=mine.overhead,
                           fixed_cost_points=False)
mine = mine.merged(bigger)
measured_360m = mine.point("SmolLM2-360M bf16").seconds * 1e3
print(f"SmolLM2-360M bf16: {measured_360m:.1f} ms per step")

# %%
viz.compare_prediction(prediction_360m, measured_360m, unit="ms", rel_tol=0.25,
                       hint="a straight line: its intercept plus bytes ÷ its bandwidth")

# %% [markdown]
# Last, the batch of 32 from the reference, on your machine: 32 requests decoded together, 32
# times the arithmetic per weight read (a short prompt keeps its prefill short).

# %% tags=["nbval-ignore-output"]
heavy = perf.measure_wall(["smollm2-135m"], ["float32"], batch_sizes=[32], prompt="Hi",
                          max_new_tokens=6, repeats=1, peaks=peaks, overhead=mine.overhead,
                          fixed_cost_points=False)
mine = mine.merged(heavy)

# %% [markdown]
# Your points beside the reference (hollow, dotted floors):

# %% tags=["nbval-ignore-output"]
views.wall_figure(mine, ref)

# %% [markdown]
# ### What you can do about each kind of step
#
# The rule's verdict on each of your points, the comparison that decided it, and what would
# shorten such a step:

# %% tags=["nbval-ignore-output"]
for q in mine.points:
    print(f"{q.label:<36} MBU {mine.mbu(q):4.0%}  {mine.explain(q)}")
for name in perf.REGIMES:
    print(f"\n{name}: {perf.REMEDIES[name]}")

# %% [markdown]
# Batching shares one weight read among many requests (lesson 06 measured what it costs each
# of them); fewer bytes per weight pay only with a kernel that reads them directly; and the
# fixed cost is Python and the framework launching dozens of small operations per layer, which
# compilers (`torch.compile`) and, on a GPU, CUDA graphs (one recorded launch for the whole
# step) remove.
#
# ## What a GPU changes (computed, not measured)
#
# No GPU was measured for this course yet, so this part is **computed** from the datasheet of an
# NVIDIA H100 (SXM, 80 GB): 3.35 TB/s of memory bandwidth, 989 TFLOP/s of dense bfloat16
# arithmetic. Each step's time is the roofline's (the slower of reading and computing), plus a
# fixed cost you choose. First with no fixed cost at all, the ideal that CUDA graphs aim at:

# %%
shapes = ["smollm2-135m", "smollm2-360m", "llama-3.2-1b", "smollm2-1.7b", "llama-3.1-8b"]
gpu_ideal = perf.computed_wall(shapes, **perf.H100_SXM, label="H100, no fixed cost")
print(gpu_ideal)

# %% tags=["nbval-ignore-output"]
print(f"ridge point: H100 {989e12 / 3.35e12:.0f} FLOP/byte; your CPU "
      f"{peaks.ridge_intensity('bfloat16'):.0f} FLOP/byte (bfloat16)")
print(f"the H100 reads {3.35e12 / peaks.bytes_per_s:.0f}× faster than your CPU")

# %% [markdown]
# ✏️ **Predict.** Now assume the GPU's host runs the same Python and framework code per layer
# as your CPU did, so each layer costs a fixed time before the GPU can run it. Which verdict
# will the rule give the Llama-3.2-1B shape then? Choose one of `perf.REGIMES`.

# %%
prediction_gpu = None  # ← "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
per_layer = mine.overhead[0].per_layer_s  # your CPU's fixed cost per layer (float32 floor)
gpu_eager = perf.computed_wall(shapes, **perf.H100_SXM, fixed_cost_per_layer_s=per_layer,
                               label="H100 + your per-layer cost",
                               fixed_cost_note="assumed: this CPU's measured cost per layer")
print(f"assumed fixed cost: {per_layer * 1e3:.3f} ms per layer (measured on your CPU)")
print(gpu_eager)
gpu_verdict = gpu_eager.regime(gpu_eager.point("Llama-3.2-1B bf16"))

# %%
viz.compare_prediction(prediction_gpu, gpu_verdict, options=perf.REGIMES,
                       hint="compare the fixed cost of 16 layers with the memory floor above")

# %% tags=["nbval-ignore-output"]
views.wall_figure(gpu_eager, gpu_ideal)

# %% [markdown]
# On a GPU the bytes are read many times faster than on your CPU (the ratio is printed above),
# so the same fixed cost becomes a far larger share of the step: compare the two charts'
# verdicts. That is why GPU inference engines capture a whole decode step as one CUDA graph,
# or compile it, and why a measured GPU reference (recorded by `benchmarks/gpu_check.py` when a
# GPU is at hand) is the next thing this course needs.
#
# ## Climbing the wall: speculative decoding
#
# Every trick so far either moves fewer bytes or shares them among requests. Speculative
# decoding makes one weight read produce several tokens of the **same** reply: guess a few
# next tokens cheaply, check all the guesses in **one** forward pass (like a short prefill),
# and keep the guesses the model agrees with, plus its own next token. The reply is exactly
# the one greedy decoding would give; only the number of passes changes.
#
# Transformers' *prompt-lookup decoding* guesses without a second model: it looks for the
# last few tokens earlier in the prompt and proposes what followed them there. That works when
# the reply copies the prompt. The real model now (the measured models above are gone):

# %%
lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
copy_prompt = ("Repeat this list exactly, once: apples, bananas, cherries, dates, elderberries, "
               "figs, grapes, honeydew melons, kiwis, lemons, mangoes.")

# %% [markdown]
# ✏️ **Predict.** The reply will copy the list. How many tokens will one forward pass produce
# on average with prompt lookup (plain decoding makes exactly 1)?

# %%
prediction_lookup = None  # ← tokens per forward pass

# %% tags=["nbval-ignore-output"]
copying = perf.compare_prompt_lookup(lm, copy_prompt, max_new_tokens=40)
print(copying)

# %%
print("identical greedy text:", copying.identical)
print(repr(copying.lookup.text))
viz.compare_prediction(prediction_lookup, copying.lookup.tokens_per_pass, rel_tol=0.25,
                       hint="count the tokens of the reply and the forward passes it took")

# %% [markdown]
# Each verification pass reads the weights once for up to eleven positions (ten guesses and
# the model's own next token): compare the time *per pass* of the two rows above with the
# number of passes. Now a reply that copies nothing from its prompt; compare its tokens per pass
# and its speed-up with the list's:

# %% tags=["nbval-ignore-output"]
fresh = perf.compare_prompt_lookup(lm, "Tell me a joke.", max_new_tokens=40)
print(fresh)

# %%
print("identical greedy text:", fresh.identical)
print(repr(fresh.lookup.text))

# %% [markdown]
# With a second, small *draft* model instead of the lookup (transformers' `assistant_model`),
# the guesses work for any reply, at the price of running the draft too.

# %% [markdown]
# ## Check yourself
#
# Your four predictions were checked where you made them: the bfloat16 step, the 360M step
# from your line, the GPU verdict and the tokens per pass. One more. Everything above ran with
# this many threads (torch's default on your machine):

# %%
print(f"{peaks.threads} threads")

# %% [markdown]
# ✏️ With **one** thread, how long will a decode step of the course model (float32, the shape
# you measured above) take, in ms? Predict, then run the measurement and the check.

# %%
prediction_one_thread = None  # ← ms per step with one thread

# %% tags=["nbval-ignore-output"]
default = perf.measure_point(lm)  # the same measurement with the default threads, for scale
one = perf.measure_point(lm, threads=1)
measured_one_thread = one.seconds * 1e3
print(f"{peaks.threads} threads: {default.seconds * 1e3:.1f} ms per step; one thread: "
      f"{measured_one_thread:.1f} ms (×{one.seconds / default.seconds:.2f})")

# %%
viz.compare_prediction(prediction_one_thread, measured_one_thread, unit="ms", rel_tol=0.25,
                       hint="which parts of a step can two cores share, and which cannot?")

# %% [markdown]
# ## Next
#
# Back to [04 · Decode](04_decode.ipynb) (the memory floor this lesson explained) and
# [06 · Batching](06_batching.ipynb) (sharing a weight read among requests). Next,
# [09 · Serving →](09_serving.ipynb): many users, one server, and what batching and the KV
# cache look like when requests come and go.

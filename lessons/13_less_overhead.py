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
# # 13 · Less overhead, more tokens per pass
#
# [12 · Fewer bytes](12_fewer_bytes.ipynb) shrank the second part of a batch-1 decode step:
#
# **step ≈ fixed cost + bytes read ÷ the bandwidth the kernels achieve**
#
# This lesson measures the other two remedies of [08 · The memory wall](08_memory_wall.ipynb)
# on the course model:
#
# 1. **less overhead**: what the fixed cost is made of, and what removes it (a compiler here;
#    on a GPU, CUDA graphs, measured on an H200);
# 2. **more tokens per pass**: speculative decoding, where one read of the weights checks
#    several guessed tokens at once.

# %% tags=["nbval-ignore-output"]
import viz
from viz import compare_prediction, perf, views

# this machine's peaks, measured once (lesson 02) and reused
machine = perf.machine_peaks()
print(machine.status)
print(perf.yardsticks())

# %% tags=["nbval-ignore-output"]
lm = viz.load_model(device="cpu")  # the course model, for the profile below

# %% [markdown]
# ## See it: what a step is made of
#
# Lesson 08 found a **fixed cost** per step, milliseconds even with almost no weights.
# `perf.profile_decode_step` runs five decode steps of the course model under `torch.profiler`
# and sorts the median step's top-level operations into the matrix products (the weights being
# read), attention, the norms, the small ops (adds, the rotary embedding...) and the **gaps**,
# when no operation runs at all (Python, the framework, the dispatcher).
#
# ✏️ **Predict.** What share of one decode step (0 to 1) goes to the matrix products — the part
# that reads the weights?

# %%
prediction_matrix = None  # ← a share from 0 to 1

# %% tags=["nbval-ignore-output"]
profile = perf.profile_decode_step(lm, context=64, steps=5)
print(profile)

# %% tags=["nbval-ignore-output"]
views.step_profile_figure(profile)

# %% tags=["nbval-ignore-output"]
matrix_share = profile.share("matrix products")
rest_ms = (profile.profiled_step_s - profile.seconds("matrix products")) * 1e3
ops = sum(p.ops for p in profile.parts if p.category != "matrix products")
print(f"matrix products {matrix_share:.0%} of the step; everything else {rest_ms:.1f} ms in "
      f"{ops:,} top-level operations ({rest_ms * 1e3 / ops:.1f} µs each, on average)")
print(f"lesson 08's fixed cost for 30 layers in float32: "
      f"{perf.fixed_cost(30).text(1e3, 'ms', 1)}")

# %%
compare_prediction(prediction_matrix, matrix_share, rel_tol=0.25,
                   hint="lesson 08's fixed cost is the launching alone, at almost no width; "
                        "here ~1,500 other operations also do their own work (the attention, "
                        "norms and small-ops rows: not the gaps, which are mostly that fixed "
                        "cost again), and the profiler adds its own line under the table: "
                        "take the fixed cost, those rows and the profiler's share off the step")

# %% [markdown]
# ## Understand it: paying per operation
#
# A decode step of this model is about 1,700 top-level operations, and torch launches each one
# from Python: it reads the arguments, picks a kernel for their shapes and types, allocates the
# output, and only then computes. For a 576-wide vector most kernels finish in microseconds, so
# the launching is much of the work. The rest of the step is lesson 08's fixed cost (the
# launching alone), plus the small operations' own work, plus what profiling adds (the line
# under the table). None of it shrinks with the bytes.
#
# The remedies all decide the whole step once, then run it without asking Python again.
#
# - **A compiler** (`torch.compile`) traces the step once, fuses the chains of small operations
#   into generated kernels and runs them without the Python in between. Measured below.
# - **CUDA graphs** (on a GPU) record a step's kernel launches once and replay them with one
#   call; serving engines (vLLM, SGLang) do this for every batch size they serve.
# - **An engine written for inference**: llama.cpp builds each step as one C++ graph. In
#   lesson 12, transformers float32 and llama.cpp F32 read the same bytes, so the ratio
#   between them is this remedy plus a better-streaming kernel.

# %% [markdown]
# ## Measure it: compile the step
#
# A compiled graph is made for the shapes it saw. The usual KV cache (`DynamicCache`) grows by
# one position a step, so torch.compile would trace every step again. A **static cache**
# allocates room for every position once; each step writes one and a mask hides the rest, so
# every step has the same shapes and is traced once.
#
# `perf.measure_compiled_step` compiles one decode step that way and times it against the
# same step run eager, in turns, on a fixed-cost model like lesson 08's, a third as deep: 10
# layers at a width of 64, whose step *is* the fixed cost. Compiling it takes tens of seconds
# on two cores (the time is printed below, and the course model's reference run prints its own).
#
# ✏️ **Predict.** How many times faster will the compiled fixed-cost step be than the eager one
# with the same static cache (1 means no faster)?

# %%
prediction_compiled = None  # ← eager step ÷ compiled step

# %% tags=["nbval-ignore-output"]
del lm  # the course model steps out while the compiler works (together: over Binder's 2 GB)
perf.release_memory()
narrow = perf.from_config(perf.narrow_config("smollm2-135m", n_layers=10))  # 10 layers × 64
missing = perf.compiler_missing()  # torch.compile builds C++ on a CPU: is there a compiler?
if missing:
    compiled = None
    print(missing)
else:
    compiled = perf.measure_compiled_step(narrow)  # tens of seconds, most of it compiling
    print(compiled)

# %%
compare_prediction(prediction_compiled, compiled.speedup.median, rel_tol=0.3,
                   hint="the narrow step is almost all launching; if compiling removes a "
                        "share s of it, the step is 1 ÷ (1 − s) times faster: what share, with "
                        "the layers still run one after another and the cache still written?") \
    if compiled else print("nothing compiled on this machine: nothing to compare")

# %% [markdown]
# The compiler removed part of the fixed cost, not all: the 10 layers still run one after
# another and the cache is still written. If the saving grew with depth, as the fixed cost
# does (lesson 08), the course model's 30 layers would save about three times the
# milliseconds; but its step also reads 538 MB, so that saving is a smaller share of it.
#
# ✏️ **Predict.** Say compiling the course model saved three times the milliseconds per step
# saved above (30 layers, not 10). How many times faster would its step be? (Its eager step:
# the plain step printed with the profile above, or lesson 12's transformers float32 row.)

# %%
COURSE = ["under ×1.1", "×1.1 to ×1.5", "×1.5 or more"]
prediction_course = None  # ← eager step ÷ compiled step, for the course model: one of COURSE

# %% [markdown]
# Compiling the course model would take tens of seconds more, so below is the reference
# machine's run (`benchmarks/remedies.py`, labelled). Set `COMPILE_COURSE_MODEL = True` to
# measure it on yours.

# %% tags=["nbval-ignore-output"]
COMPILE_COURSE_MODEL = False
lm = viz.load_model(device="cpu")  # the course model again, for the rest of the lesson
if COMPILE_COURSE_MODEL and not missing:
    course_compiled = perf.measure_compiled_step(lm)
else:
    course_compiled = perf.load_reference("cpu-compiled-step")
print(course_compiled)

# %% tags=["nbval-ignore-output"]
views.compiled_figure([compiled, course_compiled] if compiled else [course_compiled])

# %%
course_speedup = viz.band(course_compiled.speedup, [1.1, 1.5], COURSE)  # with its spread
compare_prediction(prediction_course, course_speedup, options=COURSE,
                   hint="eager step ÷ (eager step − 3 × the saving above): about ten "
                        "milliseconds off a step of tens")

# %% [markdown]
# The compiler takes a few milliseconds off a step (the reference's saving has a wide spread,
# and its median is less than depth alone predicts) and leaves the bytes untouched: on a CPU the
# course model's step stays memory-bound (lesson 08), so the speed-up is a tenth or so,
# sometimes too close to call. Where the fixed cost *is* the step — a small model on a fast
# GPU, whose weights stream in a fraction of a millisecond — the same remedy (there: CUDA
# graphs, or `torch.compile(mode="reduce-overhead")`) sets the speed: the last section
# measures it. And compiling has its price, the time printed above, paid again whenever the
# shapes change.

# %% [markdown]
# ## More tokens per pass: speculative decoding
#
# The remedies so far make a step cheaper; speculative decoding makes one step do more: guess
# the next few tokens cheaply, check all the guesses in **one** forward pass (a short prefill
# over them), keep the ones the model agrees with, plus the model's own next token. Greedy text
# stays exactly the same; only the number of passes changes. *Prompt lookup* (transformers'
# `prompt_lookup_num_tokens`) guesses without a second model: it finds the last tokens written
# earlier in the prompt and proposes the 10 that followed them there.
#
# Two prompts: one whose reply copies the prompt, one whose reply is new text.

# %% tags=["nbval-ignore-output"]
for name, why in perf.LOOKUP_WHY.items():
    print(f"{name}: {perf.LOOKUP_PROMPTS[name]!r}\n    {why}")

# %% [markdown]
# ✏️ **Predict.** When the reply copies the list, how many tokens will one decode pass make on
# average (plain decoding: exactly 1; at most 11)?

# %%
prediction_per_pass = None  # ← tokens per decode pass, copying the list

# %% tags=["nbval-ignore-output"]
tokens = {"copy a list": 40, "write a story": 16}  # the list is ~40 tokens long
lookups = {name: perf.compare_prompt_lookup(lm, prompt, max_new_tokens=tokens[name], repeats=3)
           for name, prompt in perf.LOOKUP_PROMPTS.items()}
for name, c in lookups.items():
    print(f"— {name}\n{c}")

# %% tags=["nbval-ignore-output"]
views.accepted_histogram_figure(lookups)

# %% tags=["nbval-ignore-output"]
copying, story = lookups["copy a list"], lookups["write a story"]
per_pass = copying.lookup.tokens_per_pass
print(f"copying: {per_pass:.1f} tokens per decode pass; same greedy tokens: {copying.identical}")
print(f"the story: {story.lookup.tokens_per_pass:.2f} tokens per pass; speed-up "
      f"×{story.speedup_spread.text(digits=2)}: {story.speedup_verdict}")

# %%
assert all(c.identical for c in lookups.values()), "greedy text must not change"
compare_prediction(prediction_per_pass, per_pass, rel_tol=0.3,  # the cell's last line: shown
                   hint="a pass makes 11 tokens only when all ten guesses are right; the "
                        "reply's opening and its end, where there is nothing to copy, make 1 "
                        "a pass: how many of each kind, in a reply of about 40 tokens?")

# %% [markdown]
# A pass makes 1 token when every guess is rejected (or none was found), 11 when all ten are
# right. Copying, some passes accept all ten and others none; the story's passes accept next
# to nothing — and are *slower* than plain ones: each pass with a guess runs 11 positions
# through the model instead of 1, and the weights, read once either way, are no longer the
# only cost. Speculative decoding pays when the guesses are right often enough to cover that
# extra work. The general form is a small **draft model** guessing for any text (transformers'
# `assistant_model`); the course has no smaller model with this one's vocabulary to measure it.

# %% [markdown]
# ### Drag the draft length
#
# Prompt lookup guessed k = 10 tokens each time. With fewer guesses a pass checks less but
# makes at most k + 1 tokens; with more, it makes more when the guesses are right and checks
# more positions either way. The slider reruns the copying prompt at the k you choose (plain
# and prompt lookup, one round each after a warm-up: a few seconds per new k); k = 1, where it
# starts, is measured first, and k = 10 is the run above (three rounds: its bar).
#
# ✏️ **Predict.** With k = 1 (one guess per lookup), copying the list: how many tokens will a
# decode pass make on average?

# %%
prediction_k1 = None  # ← tokens per decode pass with one guess per lookup, copying the list

# %% tags=["nbval-ignore-output"]
import ipywidgets as widgets

from viz.views import LinkedView

by_k = {10: copying}  # draft length k → prompt lookup against plain decode, copying the list


def draft_chart(values):
    k = values["k"]
    if k not in by_k:  # a real run of both ways at this draft length, on this machine
        by_k[k] = perf.compare_prompt_lookup(lm, perf.LOOKUP_PROMPTS["copy a list"],
                                             max_new_tokens=tokens["copy a list"],
                                             num_lookup_tokens=k, repeats=1)
    return views.draft_length_figure(by_k, chosen=k)


# it starts at k = 1, measured as it is drawn: with k = 10 above, the chart starts with a line
k_slider = widgets.IntSlider(value=1, min=1, max=10, description="k: tokens guessed",
                             continuous_update=False, style={"description_width": "initial"})
LinkedView({"k": k_slider}, [k_slider], draft_chart)

# %% tags=["nbval-ignore-output"]
per_pass_k1 = by_k[1].lookup.tokens_per_pass
print(f"k = 1: {per_pass_k1:.2f} tokens per decode pass; passes by tokens made: "
      f"{by_k[1].lookup.histogram()}")

# %%
compare_prediction(prediction_k1, per_pass_k1, rel_tol=0.15,
                   hint="one guess per pass: a pass makes 2 tokens when the guess is right, "
                        "1 when not; how often is the next token of a copied list guessed "
                        "right?")

# %% [markdown]
# The tokens per pass climb with k but fall further below
# their ceiling the larger k is: a pass can keep only the guesses before the first wrong one,
# and the copied list runs out. The speed-up follows the tokens per pass, less what checking
# k + 1 positions costs each pass (on a CPU, more than checking one: the story above).

# %% [markdown]
# ## The same step on a GPU: computed, then measured
#
# First **computed** from the H100's datasheet (SXM, 80 GB: 3.35 TB/s, 989 TFLOP/s dense
# bfloat16) with lesson 08's rule, starting with no fixed cost at all, the ideal that CUDA
# graphs aim at:

# %%
shapes = ["smollm2-135m", "smollm2-360m", "llama-3.2-1b", "smollm2-1.7b", "llama-3.1-8b"]
gpu_ideal = perf.computed_wall(shapes, **perf.H100_SXM, label="H100, no fixed cost")
print(gpu_ideal)

# %% tags=["nbval-ignore-output"]
print(f"the H100 reads {3.35e12 / machine.bytes_per_s:.0f}× faster than your CPU")

# %% [markdown]
# ✏️ **Predict.** Now assume the GPU's host runs the same Python and framework code per layer
# as your CPU did (eager, nothing compiled), so each layer costs a fixed time before the GPU
# can run it. Which verdict will the rule give the Llama-3.2-1B shape? One of `perf.REGIMES`.

# %%
prediction_gpu = None  # ← "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
per_layer = perf.machine_overhead("float32", [1, 30]).per_layer_s  # lesson 08's fixed cost
gpu_eager = perf.computed_wall(shapes, **perf.H100_SXM, fixed_cost_per_layer_s=per_layer,
                               label="H100 + your per-layer cost",
                               fixed_cost_note="assumed: this CPU's measured cost per layer")
print(f"assumed fixed cost: {per_layer * 1e3:.3f} ms per layer (measured on your CPU)")
print(gpu_eager)
gpu_verdict = gpu_eager.regime(gpu_eager.point("Llama-3.2-1B bf16"))

# %%
compare_prediction(prediction_gpu, gpu_verdict, options=perf.REGIMES,
                   hint="the rule's three questions, in their order")

# %% tags=["nbval-ignore-output"]
views.wall_figure(gpu_eager, gpu_ideal)

# %% [markdown]
# The GPU reads the bytes so much faster that the same fixed cost becomes most of the step:
# compare the two charts' verdicts. Now **measured** on an NVIDIA H200 (shipped:
# `perf.gpu_reference("compiled-step", ...)`; random weights, bfloat16): the decode step
# compiled by `torch.compile(mode="reduce-overhead")`, which fuses operations and records the
# step's kernels into a CUDA graph once, replayed with one launch per step. Lesson 04 compared
# this graph step with the eager step's kernels summed; here it is read as a remedy, with what
# the compile cost:

# %%
print(perf.gpu_provenance())
steps = perf.graph_steps()  # the course model's shape, then the 8B; batch 1
for g in steps:
    print(f"{g.model}: eager, {g.kernels:,} kernels summed {g.busy.text(1e3, 'ms', 2)}; CUDA "
          f"graph {g.graph.text(1e3, 'ms', 2)}: ×{g.graph_over_busy.text(1, '', 2)} the kernel sum; "
          f"memory floor {g.memory_floor.median * 1e3:.2f} ms (MBU {g.mbu:.0%} of the graph "
          f"step); compiled in {g.compile_s:.0f} s; greedy tokens "
          f"{'the same' if g.same_tokens else 'differ'} eager and replayed")

# %%
views.graph_step_figure(steps)

# %% [markdown]
# Replayed as a CUDA graph, each step took about as long as the eager step's kernels, summed
# (the ratios above). This run cannot say more: `reduce-overhead` also fused operations, so
# the graph's kernels are not the eager step's, and each timed call also included the
# compiler's guards (its checks that the inputs still have the shapes it compiled for), an
# output copy and a wait for the GPU. Telling these apart needs a profile of the compiled
# step, which this run did not make. The eager step's wall time is the host's, which drifted
# several times over within the session (lesson 04), so the course does not turn it into a
# speed-up.
#
# Where the measurement differs from the computation: the computed ideal has no fixed cost at
# all, and the graph does not get there. The 8B's step is within a factor of two of its memory
# floor, the course model's shape many times its floor (the MBU above): a graph removes the
# host's launching, not the GPU's own time in each of the step's many short kernels. That is
# why serving engines both capture graphs and fuse kernels, and why a small model gains the
# most from both. A server pays the compile's price once, at start. (The 8B's greedy tokens
# differ between eager and graph, the course model's do not: with random weights the text
# means nothing either way.)

# %% [markdown]
# ## Check yourself
#
# Your predictions were checked where you made them. One more, in words.
#
# ✏️ A service runs the course model on an H100 at batch 1, eager. Of the three remedies of
# lessons 12 and 13 — fewer bytes, less overhead, more tokens per pass — which would you try
# first, and which would buy the least? Give the printed verdict or ratio each answer rests on.
# (Answers for teachers: TEACHERS.md.)

# %% [markdown]
# ## Next
#
# [14 · The logit lens](14_logit_lens.ipynb) finds the draft model this lesson lacked inside the
# model itself: its first layers, read through the output head, guess the next token, and
# early-exit drafting checks those guesses as prompt lookup's were checked here.
#
# Back to [08 · The memory wall](08_memory_wall.ipynb) (the rule these remedies answer),
# [06 · Batching](06_batching.ipynb) (the remedy for many requests: one weight read shared)
# and [09 · Continuous batching and pages](09_continuous_batching.ipynb), where a real server
# puts batching and llama.cpp side by side under load.

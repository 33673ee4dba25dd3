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
# # 11 · Remedies: fewer bytes, less overhead, more tokens per pass
#
# [08 · The memory wall](08_memory_wall.ipynb) took a batch-1 decode step apart:
#
# **step ≈ fixed cost + bytes read ÷ the bandwidth the kernels achieve**
#
# and named what would shorten it. This lesson applies each remedy and measures it, on your
# machine, on the course model:
#
# 1. **fewer bytes**: the same weights in smaller number formats, read by a kernel made to read
#    them (llama.cpp's);
# 2. **less overhead**: what the fixed cost is made of, and what removes it;
# 3. **more tokens per pass**: speculative decoding, where one read of the weights checks
#    several guessed tokens at once.
#
# And last, the wall itself: why these remedies matter more with every hardware generation.

# %% tags=["nbval-ignore-output"]
import viz
from viz import compare_prediction, perf, views

# this machine's peaks, measured once (lesson 02) and reused
machine = perf.machine_peaks()
print(machine.status)
print(perf.yardsticks())

# %% [markdown]
# ## See it: one model in six formats
#
# The course model ships as one GGUF file in **Q4_1**: blocks of 32 weights, each stored in
# 4 bits, plus a scale and a minimum per block (0.72 bytes a weight, counting the one 8-bit
# table). viz's float32 model is that file expanded to 4 bytes a weight. From the same file,
# llama.cpp's own converter writes **F32** (4 bytes), **F16** (2) and **Q8_0** (8-bit blocks,
# 1.06 bytes): every format below holds *the same values*; only the bytes, and the program
# reading them, differ.
#
# | engine | formats | how a step runs |
# |---|---|---|
# | transformers (viz) | float32, bfloat16 | torch, one kernel call per operation, from Python |
# | llama.cpp | F32, F16, Q8_0, Q4_1 | one C++ graph per step; quantized kernels read the blocks directly |
#
# `perf.measure_formats()` decodes the same chat prompt greedily in all six, 24 tokens twice
# each, and times every decode step (llama.cpp runs in a child process of this kernel, no
# server, so a crash inside it cannot take the kernel down; the first time, writing the three
# extra files takes a few seconds and ~1 GB of the viz cache).
#
# ✏️ **Predict.** llama.cpp's Q4_1 reads 5.5× fewer bytes per token than transformers'
# float32. How many times faster will its decode step be?

# %%
prediction_q4 = None  # ← how many times faster than transformers float32

# %% tags=["nbval-ignore-output"]
formats = perf.measure_formats(formats=perf.available_formats(), new_tokens=24,
                               repeats=2)  # ~15 s
print(formats)
bandwidth = machine.bytes_per_s  # the memory floor: your machine's measured read bandwidth
if "F32" not in perf.available_formats():  # llama.cpp is not installed here (Binder)
    formats = perf.load_reference("cpu-formats")
    bandwidth = formats.read_bytes_per_s  # that machine's, not yours
    print(f"\nllama.cpp is not installed here (it compiles from source for several minutes, "
          f"so Binder's image leaves it out; `make setup` builds it once), so this section "
          f"reads the project's reference run instead, all six rows from one machine:"
          f"\n{formats}")

# %% tags=["nbval-ignore-output"]
views.formats_figure(formats, bandwidth)

# %% tags=["nbval-ignore-output"]
f32 = formats.point("transformers float32")
q4 = formats.point("llama.cpp Q4_1")
speedup_q4 = (f32.step / q4.step) if q4 else None
if q4:
    print(f"llama.cpp Q4_1: {q4.step.text(1e3, 'ms', 2)} per step against "
          f"{f32.step.text(1e3, 'ms', 1)}: ×{speedup_q4.median:.1f} faster "
          f"(×{speedup_q4.low:.1f}–{speedup_q4.high:.1f}), for "
          f"×{f32.weight_bytes / q4.weight_bytes:.1f} fewer bytes")

# %%
compare_prediction(prediction_q4, speedup_q4.median, rel_tol=0.3,
                   hint="split the speed-up: the same bytes in llama.cpp's F32 row first, then "
                        "F32 → Q4_1 inside llama.cpp") if speedup_q4 else \
    print("no llama.cpp rows on this machine: nothing to compare")

# %% [markdown]
# ## Understand it: the bytes, and the kernel that reads them
#
# The six rows answer two separate questions.
#
# **The same bytes, another program.** transformers float32 and llama.cpp F32 read the very same
# 538 MB per token. Any difference between them is *not* the bytes: it is the fixed cost per
# operation (Python and torch's dispatch, hundreds of times a step) and how close each
# kernel streams to the memory's bandwidth.
#
# **The same program, fewer bytes.** Inside llama.cpp, F32 → F16 → Q8_0 → Q4_1 halve and
# halve the bytes again. The memory wall says the step follows the bytes — until something
# that does not shrink with them is all that is left: the step's own fixed cost, and the
# arithmetic of unpacking 4-bit blocks.

# %% tags=["nbval-ignore-output"]
def ratio_text(a, b):
    r = a.step / b.step
    return f"×{r.median:.2f} (×{r.low:.2f}–{r.high:.2f})"


lc = [formats.point(f"llama.cpp {f}") for f in perf.LLAMA_FORMATS]
if lc[0]:
    print(f"same bytes: transformers float32 ÷ llama.cpp F32 = {ratio_text(f32, lc[0])}")
    for a, b in zip(lc, lc[1:]):
        if not (a and b):  # a format whose run failed (printed above, with the fix)
            continue
        fewer = b.weight_bytes / a.weight_bytes  # the bytes' ratio
        # "follows the bytes": the step shrinks by the bytes' ratio (a fifth of slack);
        # "no faster": by less than a tenth
        verdict = viz.band(b.step / a.step, [min(1.2 * fewer, 0.85), 0.9],
                           ["follows the bytes", "shrinks less than the bytes", "no faster"])
        print(f"{a.format:>5} → {b.format:<5} bytes ×{fewer:.2f}, step {ratio_text(b, a)} "
              f"→ {verdict}")
for p in formats.points:
    share = p.achieved_bytes_per_s.median / bandwidth
    print(f"{p.label:<22} {p.achieved_bytes_per_s.median / 1e9:5.1f} GB/s of weights, "
          f"{share:4.0%} of the measured read bandwidth ({bandwidth / 1e9:.1f} GB/s)")

# %% [markdown]
# Read the last lines against the wall: a format "follows the bytes" while the step is
# memory-bound; where it stops following, the step has reached its floor of fixed cost and
# unpacking arithmetic (lesson 08's rule in another engine). The achieved GB/s say how close
# each program comes to the memory's own speed: a kernel that reads its format at full speed
# is what makes fewer bytes pay. torch has no such kernel for 4-bit weights on the CPU; its
# 8-bit one (lesson 08's reference, torchao) bought less than its bytes promise — a quarter
# of the bytes for a step a fifth faster from float32, and slower than bfloat16 — and
# bfloat16 pays only where the CPU has bfloat16 instructions (lesson 08).
#
# **What it costs.** Greedy text from each format, token for token against float32's:

# %% tags=["nbval-ignore-output"]
lm = viz.load_model(device="cpu")  # the course model again, for the next sections
for p in formats.points:
    same = "reference" if p.label == formats.reference else \
        f"equal for {p.same_tokens} of {len(p.token_ids)} tokens"
    print(f"{p.label:<22} {same:<28} {lm.tokenizer.decode(p.token_ids)[:60]!r}")

# %% [markdown]
# F32 and F16 hold the same values as float32, so their text should be float32's, save where
# a kernel's order of additions tips a near-tie (the lines above say whether it did on your
# machine). bfloat16 keeps only 8 significant bits of each value, so its text may depart (with
# some CPUs' kernels it does, with others not). Q8_0 and Q4_1 hold the values too (Q8_0 rounds
# them once more), but llama.cpp's quantized kernels also round the *activations* to 8 bits
# before multiplying, so each logit moves a little, and where two tokens were nearly tied the
# greedy choice flips: compare their counts with F32's.
# (What 4-bit weights cost against the model's original 16-bit weights cannot be measured
# here: the course ships only the 4-bit file.)

# %% [markdown]
# ## Less overhead: what a step is made of
#
# Lesson 08 found a **fixed cost** per step: a model as deep as this one but almost without
# weights still takes milliseconds per token. `perf.profile_decode_step` runs ten decode steps
# of the course model under `torch.profiler` and sorts every top-level operation of the median
# step into the matrix products (the weights being read), attention, the norms, the small ops
# (adds, the rotary embedding, the cache's bookkeeping...) and the **gaps** between operations,
# when no operation runs at all: Python, the framework, the dispatcher choosing each kernel.
#
# ✏️ **Predict.** What share of one decode step (0 to 1) goes to the matrix products — the part
# that reads the weights?

# %%
prediction_matrix = None  # ← a share from 0 to 1

# %% tags=["nbval-ignore-output"]
profile = perf.profile_decode_step(lm, context=64, steps=10)
print(profile)

# %% tags=["nbval-ignore-output"]
views.step_profile_figure(profile)

# %% tags=["nbval-ignore-output"]
matrix_share = profile.share("matrix products")
rest_ms = (profile.profiled_step_s - profile.seconds("matrix products")) * 1e3
ops = sum(p.ops for p in profile.parts)
print(f"matrix products {matrix_share:.0%} of the step; everything else {rest_ms:.1f} ms in "
      f"{ops:,} top-level operations ({rest_ms * 1e3 / ops:.1f} µs each, on average)")
print(f"lesson 08's fixed cost for 30 layers in float32: "
      f"{perf.fixed_cost(30).text(1e3, 'ms', 1)}")

# %%
compare_prediction(prediction_matrix, matrix_share, rel_tol=0.25,
                   hint="lesson 08's fixed cost against its whole step")

# %% [markdown]
# ## Understand it: paying per operation
#
# A decode step of this model is about 1,700 top-level operations, and torch launches each one
# from Python: it reads the arguments, picks a kernel for their shapes and types, allocates the
# output, and only then computes. For a 576-wide vector most kernels finish in microseconds, so
# the launching is much of the work. Lesson 08's fixed cost measures the launching alone (the
# same depth, almost no width); the rest of the step above is that, plus the small operations'
# own work at this width, plus what profiling adds (its last line). None of it shrinks with the
# bytes: fewer bytes shorten the matrix products only.
#
# The remedies all do the same thing: decide the whole step once, then run it without asking
# Python again.
#
# - **A compiler** (`torch.compile`) traces the step once, fuses the chains of small operations
#   into generated kernels and runs them without the Python in between. Measured below.
# - **CUDA graphs** (on a GPU) record a step's kernel launches once and replay them with one
#   call; serving engines (vLLM, SGLang) do this for every batch size they serve.
# - **An engine written for inference**: llama.cpp builds each step as one C++ graph. The first
#   section measured it already: transformers float32 against llama.cpp F32 read the same
#   bytes, and the ratio between them is this remedy plus a better-streaming kernel.

# %% [markdown]
# ## Measure it: compile the step
#
# A compiled graph is made for the shapes it saw. The usual KV cache grows by one position a
# step, so every step would have new shapes and torch.compile would trace again and again. A
# **static cache** fixes that: room for every position is allocated once, each step writes
# one, and a mask hides the rest, so every step has the same shapes and is traced once.
#
# `perf.measure_compiled_step` compiles one decode step that way and times it against the
# same step run eager, in turns. It measures lesson 08's fixed-cost model: the course model's
# 30 layers at a width of 64, whose weights take no time to read, so its step *is* the fixed
# cost. Compiling (tracing, then writing and building C++) takes about 35 s on two
# cores; the time is printed.
#
# ✏️ **Predict.** How many times faster will the compiled fixed-cost step be than the eager one
# with the same static cache (1 means no faster)?

# %%
prediction_compiled = None  # ← eager step ÷ compiled step

# %% tags=["nbval-ignore-output"]
del lm  # the course model steps out while the compiler works (together: over Binder's 2 GB)
perf.release_memory()
narrow = perf.from_config(perf.narrow_config("smollm2-135m"))  # 30 layers × 64: lesson 08's
missing = perf.compiler_missing()  # torch.compile builds C++ on a CPU: is there a compiler?
if missing:
    compiled = None
    print(missing)
else:
    compiled = perf.measure_compiled_step(narrow)  # ~35 s, most of it compiling
    print(compiled)

# %%
compare_prediction(prediction_compiled, compiled.speedup.median, rel_tol=0.3,
                   hint="how much of the eager step is launching operations?") \
    if compiled else print("nothing compiled on this machine: nothing to compare")

# %% [markdown]
# The compiler removed part of the fixed cost; part stays (the 30 compiled layers still run
# one after another, and the cache is still written each step). Now the course model itself:
# its step reads 538 MB, so the same saving in milliseconds is a smaller share of it.
#
# ✏️ **Predict.** Compiling the course model saves about the same milliseconds per step as
# above. How many times faster will its step be? (Its eager step is in the first section:
# transformers float32.)

# %%
prediction_course = None  # ← eager step ÷ compiled step, for the course model

# %% [markdown]
# Compiling the course model takes longer than this lesson should (about 35 s more on two
# cores), so the figure below is the project's reference machine's, measured by
# `benchmarks/remedies.py` and labelled. Set `COMPILE_COURSE_MODEL = True` to measure it on
# yours.

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
compare_prediction(prediction_course, course_compiled.speedup.median, rel_tol=0.15,
                   hint="the saving ÷ the whole step: lesson 08's rule in numbers")

# %% [markdown]
# The compiler takes off what it can of the fixed cost, a few milliseconds a step, and the
# bytes are untouched: on a CPU the course model's step stays memory-bound, so the speed-up is
# a tenth or so, sometimes too close to call on a busy machine. Where the fixed cost *is* the
# step — a small model on a fast GPU, whose weights stream in a fraction of a millisecond —
# the same remedy (there: CUDA graphs, or `torch.compile(mode="reduce-overhead")`) is what
# sets the speed (the last section measures it on a GPU). And compiling has its price: the time printed above, paid again whenever the
# shapes change (serving engines compile one graph per batch size they serve, once, at start).

# %% [markdown]
# ## More tokens per pass: speculative decoding
#
# The remedies so far make a step cheaper. Speculative decoding makes one step do more: guess
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
tokens = {"copy a list": 40, "write a story": 24}  # the list is ~40 tokens long
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
compare_prediction(prediction_per_pass, per_pass, rel_tol=0.3,
                   hint="how much of the reply is the list itself?")
assert all(c.identical for c in lookups.values()), "greedy text must not change"

# %% [markdown]
# The histogram shows what a pass can make: 1 token when every guess is rejected (or none was
# found), 11 when all ten guesses are right. Copying, a pass often accepts all ten guesses
# (read how many in the histogram) and the rest accept some; the story's passes accept next
# to nothing — and they are *slower* than plain ones, because each
# pass with a guess runs 11 positions through the model instead of 1 and the weights, read
# once either way, are no longer the only cost. Speculative decoding pays exactly when the
# guesses are right often enough to cover that extra work. A small **draft model** guessing
# for any text is the general form (transformers' `assistant_model`); the course has no
# smaller model with this one's vocabulary, so it is not measured here.

# %% [markdown]
# ## The wall across generations
#
# Every remedy above exists because a decode step asks for few FLOPs per byte it reads: about
# half a FLOP per byte for this model in float32, at batch 1. A chip can feed its arithmetic
# only when a step does at least its **ridge** of FLOPs per byte (peak FLOP/s ÷ bandwidth,
# lesson 06). Hardware makers publish both peaks; here are five GPU generations and three
# CPUs from their datasheets (dense figures, the format each is fastest at for inference),
# with your machine, measured, beside them.
#
# ✏️ **Predict.** From NVIDIA's V100 (2017) to its B200 (2024) peak arithmetic grew about
# eighteen-fold. Memory bandwidth grew...

# %%
GROWTH = ["as much, or more", "about half as much", "a tenth as much, or less"]
prediction_growth = None  # ← one of GROWTH, copied exactly

# %%
growth = perf.growth("V100", "B200")
print(growth["text"])
share = growth["bandwidth_ratio"] / growth["flops_ratio"]
growth_word = viz.band(share, [0.2, 0.75], GROWTH[::-1])  # datasheet figures: exact
compare_prediction(prediction_growth, growth_word, options=GROWTH)

# %% tags=["nbval-ignore-output"]
generations = perf.generations_table(machine)
print(perf.generations_text(rows=generations))

# %% tags=["nbval-ignore-output"]
views.generations_figure(generations)

# %% [markdown]
# Every generation's ridge sits hundreds of times above what a batch-1 decode step asks for,
# and across the decade it moved up: V100's and A100's near 140–150 FLOP per byte, the later
# chips' at 200–300 (it can dip from one chip to the next, as H200's did against H100's: the
# same arithmetic, faster memory). That is the memory wall across generations: arithmetic grew
# faster than the bandwidth that feeds it, so a step that reads every weight for one token
# leaves a larger share of each new chip idle.
# The three remedies of this lesson are the answers the field has: read fewer bytes, stop
# paying per operation, and make every read of the weights produce more tokens — for one
# request (speculative decoding) or for many (batching, lessons 06 and 09).

# %% [markdown]
# ### The same step on a GPU: computed, then measured
#
# First **computed** from the H100's datasheet (SXM, 80 GB: 3.35 TB/s, 989 TFLOP/s dense
# bfloat16) with lesson 08's rule: a step takes the slower of reading its bytes and doing its
# arithmetic, plus a fixed cost. First with no fixed cost at all, the ideal that CUDA graphs
# aim at:

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
# compare the two charts' verdicts. Now **measured**: the course ships the remedy run on an
# NVIDIA H200 (`perf.gpu_reference("compiled-step", ...)`; random weights, bfloat16): the
# decode step compiled by `torch.compile(mode="reduce-overhead")`, which fuses operations
# (Inductor) and records the compiled step's kernels into a CUDA graph once, replayed with one
# launch per step. Lesson 04 measured the eager step without its host: the
# GPU's busy time, its kernels summed.
#
# ✏️ **Predict.** The course model's shape on the H200: the CUDA-graph step ÷ the eager step's
# kernels summed, about how much?

# %%
prediction_graph = None  # ← CUDA-graph step ÷ eager kernel sum, the course model's shape

# %%
print(perf.gpu_provenance())
steps = perf.graph_steps()  # the course model's shape, then the 8B; batch 1
for g in steps:
    print(f"{g.model}: eager, {g.kernels:,} kernels summed {g.busy.text(1e3, 'ms', 2)}; CUDA "
          f"graph {g.graph.text(1e3, 'ms', 2)}: ×{g.graph_over_busy.text(1, '', 2)} the kernel sum; "
          f"memory floor {g.memory_floor.median * 1e3:.2f} ms (MBU {g.mbu:.0%} of the graph "
          f"step); compiled in {g.compile_s:.0f} s; greedy tokens "
          f"{'the same' if g.same_tokens else 'differ'} eager and replayed")
graph_ratio = steps[0].graph_over_busy.median

# %%
compare_prediction(prediction_graph, graph_ratio, rel_tol=0.25,
                   hint="the eager step's wall is the host's launches; the busy time is what "
                        "the GPU itself spent; what does a graph take away?")

# %%
views.graph_step_figure(steps)

# %% [markdown]
# What was measured: replayed as a CUDA graph, each step took about what the eager step's
# kernels took, summed (the ratios above). What is not known from this run: `reduce-overhead`
# also fused operations, so the graph's kernels are not the eager step's, and the timed call
# included the compiler's guards, a copy of the output and a wait for the GPU every step.
# Whether fusion shortened the GPU's own time while those extras lengthened it by as much, or
# neither, needs a profile of the compiled step (its kernels, counted and timed by kind),
# which this run did not make. The eager step's wall time, timed in turns with the graph, is
# the host's: Python launching a thousand kernels one by one, a pace that drifted several
# times over within the session (lesson 04), so the course does not turn it into a speed-up.
#
# Where the measurement differs from the computation: the computed ideal has no fixed cost at
# all, and the graph does not get there. For the 8B the replayed step reads its weights within
# a factor of two of the memory floor (the MBU above); for the course model's shape the step
# stays many times its floor: a graph removes the host's launching, not the GPU's own time in
# each of the step's many short kernels. That is why serving engines both capture graphs and
# fuse kernels, and why a small model gains the most from both. And the compile's price is
# paid once, in the seconds printed above: a server pays it at start, for every batch size it
# will serve. (The 8B's greedy tokens differ between the eager and the graph step, the course
# model's do not: with random weights the text means nothing either way, and this run did not
# take the difference apart.)

# %% [markdown]
# ## Check yourself
#
# Your predictions were checked where you made them: the Q4_1 speed-up, the matrix products'
# share, the compiled steps, the tokens per pass, the growth of bandwidth, the GPU's verdict
# and its CUDA graph. One more, with pencil and paper: the table's ceilings for a machine
# that is not in it.
#
# ✏️ A learner's laptop reads memory at 120 GB/s (LPDDR5X) and decodes the course model in
# bfloat16 (half of float32's 538 MB per token). If nothing but reading the weights took
# time, how many tokens per second could it make? Then: would its real steps come closer to
# that ceiling than yours came to your row's?

# %%
prediction_laptop = None  # ← tokens per second, the laptop's memory-bound ceiling in bfloat16

# %% tags=["nbval-ignore-output"]
yours = generations[-1]
per_token_bf16 = yours["bytes_per_s"] / yours["ceiling_tokens_per_s"]["bfloat16"]  # bytes
laptop = 120e9 / per_token_bf16
print(f"the laptop's bfloat16 ceiling: {laptop:,.0f} tokens/s ({per_token_bf16 / 1e6:,.0f} MB "
      f"per token); yours: {yours['ceiling_tokens_per_s']['bfloat16']:,.0f}, and transformers "
      f"float32 reached {f32.tokens_per_s / yours['ceiling_tokens_per_s']['float32']:.0%} of "
      f"your float32 ceiling")

# %%
compare_prediction(prediction_laptop, laptop, unit="tokens/s", rel_tol=0.1,
                   hint="bytes per second ÷ bytes per token; the table's header gives the bytes")

# %% [markdown]
# The second question has no printed answer: the faster the memory, the larger the share of
# each step the fixed cost takes (lesson 08), so a laptop's steps fall *further* below their
# ceiling than a slow machine's, unless its host is faster too.

# %% [markdown]
# ## Next
#
# [12 · The logit lens](12_logit_lens.ipynb) finds the draft model this lesson lacked inside the
# model itself: its first layers, read through the output head, guess the next token, and
# early-exit drafting checks those guesses as prompt lookup's were checked here.
#
# Back to [08 · The memory wall](08_memory_wall.ipynb) (the rule these remedies answer),
# [06 · Batching](06_batching.ipynb) (the remedy for many requests: one weight read shared)
# and [09 · Serving](09_serving.ipynb), where a real server puts batching and llama.cpp side by
# side under load.

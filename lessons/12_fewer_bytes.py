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
# # 12 · Fewer bytes
#
# [08 · The memory wall](08_memory_wall.ipynb) took a batch-1 decode step apart:
#
# **step ≈ fixed cost + bytes read ÷ the bandwidth the kernels achieve**
#
# and named three remedies: fewer bytes, less overhead, more tokens per pass. This lesson
# measures the first, on your machine, on the course model: the same weights in smaller number
# formats, read by a kernel made to read them (llama.cpp's), and what the smaller formats cost
# in the text. [13 · Less overhead, more tokens per pass](13_less_overhead.ipynb) measures the
# other two.
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
# 4 bits, plus a scale and a minimum per block: 20 bytes per 32 weights, 0.625 bytes a weight.
# One table is kept in 8 bits (Q8_0, 1.06 bytes a weight): the token embeddings, which the
# output head shares, so the file holds 0.72 bytes a weight overall. viz's float32 model is that file expanded to 4 bytes a weight. From the same file,
# llama.cpp's own converter writes **F32** (4 bytes), **F16** (2) and **Q8_0** (8-bit blocks,
# 1.06 bytes): every format below holds *the same values*, up to the rounding a smaller
# format adds (what it costs: below); the bytes, and the program reading them, differ.
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
# ✏️ **Predict.** llama.cpp's Q4_1 reads 5.6× fewer bytes per token than transformers'
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
compare_prediction(prediction_q4, speedup_q4.median, rel_tol=0.2,
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
# **The same program, fewer bytes.** Inside llama.cpp, F32 → F16 → Q8_0 → Q4_1 halve the
# bytes, halve them again, then take off another third. The memory wall says the step follows
# the bytes — until something that does not shrink with them is all that is left: the step's
# own fixed cost (llama.cpp's own, not the transformers fixed cost in the yardsticks line: no
# Python runs between its operations), and the arithmetic of unpacking 4-bit blocks.

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
# memory-bound and its kernel reads it as fast as the format before; where it stops
# following, either the step has reached its floor of fixed cost and unpacking arithmetic
# (lesson 08's rule in another engine), or the kernel reads that format more slowly (its
# share of the read bandwidth, printed last, drops). The achieved GB/s say how close
# each program comes to the memory's own speed: a kernel that reads its format at full speed
# is what makes fewer bytes pay. transformers, as the course runs it, has no such kernel for
# 4-bit weights on the CPU; torch's
# 8-bit one (lesson 08's reference, torchao) bought less than its bytes promise — a quarter
# of the bytes for a step a fifth faster from float32, and slower than bfloat16 — and
# bfloat16 halves the step only where torch's kernels read it as fast as float32 (the GB/s
# above; lesson 08 on CPUs with and without bfloat16 instructions).
#
# **What it costs.** Greedy text from each format, token for token against float32's:

# %% tags=["nbval-ignore-output"]
lm = viz.load_model(device="cpu")  # the course model, to decode each format's tokens
for p in formats.points:
    if p.label == formats.reference:
        print(f"{p.label:<22} the reference: {lm.tokenizer.decode(p.token_ids)!r}")
    elif p.same_tokens == len(p.token_ids):
        print(f"{p.label:<22} equal for all {len(p.token_ids)} tokens")
    else:  # where it departs, and what it writes from there
        print(f"{p.label:<22} equal for {p.same_tokens} of {len(p.token_ids)} tokens, then "
              f"{lm.tokenizer.decode(p.token_ids[p.same_tokens:])[:45]!r}")

# %% [markdown]
# F32 holds the same values as float32 (and F16 all but a very slight rounding of some), so
# their text should be float32's, save where a kernel's order of additions tips a near-tie
# (the lines above say whether it did on your machine). bfloat16 keeps only 8 significant bits of each value, so its text may depart (with
# some CPUs' kernels it does, with others not). Q8_0 and Q4_1 hold the values too (Q8_0 rounds
# them once more), but llama.cpp's quantized kernels also round the *activations* to 8 bits
# before multiplying, so each logit moves a little, and where two tokens were nearly tied the
# greedy choice flips: compare their counts with F32's.
# (What 4-bit weights cost against the model's original 16-bit weights cannot be measured
# here: the course ships only the 4-bit file.)

# %% [markdown]
# ### Your prompt, your format
#
# The step's speed came from the bytes, and the bytes do not depend on what you ask; whether
# the text stays float32's does. Type a prompt (then Enter) and pick a format:
# `perf.measure_formats` decodes 16 greedy tokens of it in float32 and in that format (twice
# each, a few seconds), and the chart sets the two steps side by side, each text below, in
# colour from the first token where it departs from float32's. It starts with a question of
# another kind, in Q4_1 (bfloat16 where llama.cpp is not installed).
#
# ✏️ **Predict, then try three prompts of your own.** Which of the title's two figures will
# move from prompt to prompt: the speed, or the tokens that agree?

# %%
import ipywidgets as widgets

from viz.views import LinkedView

tokenizer = lm.tokenizer
del lm  # each run below loads float32, lets it go, then makes the other format: one at a time
perf.release_memory()  # (two models at once would not fit Binder's 2 GB)
tried = {}  # (prompt, format) → a run of float32 and that format on the prompt


def format_chart(values):
    key = (values["prompt"].strip(), values["format"])
    if key not in tried:  # a real decode of the prompt in both formats, on this machine
        tried[key] = perf.measure_formats(formats=["float32", key[1]], prompt=key[0],
                                          new_tokens=16, repeats=2)
    run = tried[key]
    tokens = {p.label: [tokenizer.decode([i]) for i in p.token_ids] for p in run.points}
    return views.format_choice_figure(run, tokens)


choices = [f for f in perf.available_formats() if f != "float32"]
prompt_box = widgets.Text(value="Write a haiku about memory bandwidth.", description="prompt",
                          continuous_update=False, layout={"width": "95%"})
chosen_format = widgets.Dropdown(options=choices, value=choices[-1], description="format")
LinkedView({"prompt": prompt_box, "format": chosen_format}, [prompt_box, chosen_format],
           format_chart)

# %% [markdown]
# After your three prompts: the speed moves a little from prompt to prompt (16 tokens are few steps
# to time, and every step reads the same bytes whatever was asked), the agreement a lot: a
# reply that runs through near-ties parts early, one with a single obvious answer may not part
# at all. That is why a format's cost in quality is judged over many prompts (benchmarks,
# perplexity on a corpus: how surprised the model is by a large text), never on one.

# %% [markdown]
# ## The wall across generations
#
# Fewer bytes, and the next lesson's remedies, exist because a decode step asks for few FLOPs per byte it reads: about
# half a FLOP per byte for this model in float32, at batch 1. A chip can feed its arithmetic
# only when a step does at least its **ridge** of FLOPs per byte (peak FLOP/s ÷ bandwidth,
# lesson 06). Hardware makers publish both peaks; here are five GPUs of four generations
# and three CPUs from their datasheets (dense figures, the format each is fastest at for inference),
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
# Every GPU's ridge sits over a hundred times above what a batch-1 decode step asks for,
# and across the decade it moved up: V100's and A100's near 140–150 FLOP per byte, the later
# chips' at 200–300 (it can dip from one chip to the next, as H200's did against H100's: the
# same arithmetic, faster memory). That is the memory wall across generations: arithmetic grew
# faster than the bandwidth that feeds it, so a step that reads every weight for one token
# leaves a larger share of each new chip idle.
# The remedies are the answers the field has: read fewer bytes (this lesson), stop paying per
# operation, and make every read of the weights produce more tokens — for one request
# (speculative decoding, lesson 13) or for many (batching, lessons 06 and 09).

# %% [markdown]
# ## Check yourself
#
# Your predictions were checked where you made them: the Q4_1 speed-up and the growth of
# bandwidth. One more, with pencil and paper: the table's ceilings for a machine that is not
# in it.
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
# each step the fixed cost takes (lesson 08; lesson 13 takes it apart), so a laptop's steps fall *further* below their
# ceiling than a slow machine's, unless its host is faster too.

# %% [markdown]
# ## Next
#
# [13 · Less overhead, more tokens per pass →](13_less_overhead.ipynb): what the fixed cost of
# a step is made of and what removes it, and speculative decoding, where one read of the
# weights checks several guessed tokens at once.
#
# Back to [08 · The memory wall](08_memory_wall.ipynb) (the rule these remedies answer) and
# [09 · Continuous batching and pages](09_continuous_batching.ipynb), where a real server puts
# batching and llama.cpp's 4-bit file side by side under load.

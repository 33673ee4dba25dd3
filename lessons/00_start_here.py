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
# # 00 · Start here: watch a language model answer
#
# When you send a message to a chatbot, a trained model is *run forward*: no learning happens,
# the weights stay exactly as training left them, and the model only computes. What it
# computes is always the same small thing: a score for every token it knows (a token is a word
# or a piece of one), meaning "how likely is this to come next?". One token is picked, added to
# the text, and the model is run again. A whole reply is that, repeated.
#
# This course runs a real model, **SmolLM2-135M-Instruct**, on your own machine and measures
# every step. You will find that each reply is made in two very different phases:
#
# - **prefill** reads your whole prompt in one pass and picks the first token;
# - **decode** then writes one token per pass, each pass waiting for the one before.
#
# Why those two phases behave so differently — and what the KV cache and batching do about it —
# is what the course is about.
#
# **How to move through it.** Run the cells from top to bottom (**Shift+Enter**, or
# **Run ▸ Run All Cells**). Every lesson has four beats: **see it** (a view you can drag),
# **understand it** (the mechanism in a few lines of code), **measure it** (a number from *your*
# machine) and **check yourself**. Nothing uses the network; the numbers you see are your own.
#
# **Predict, then measure.** Some cells hold a `prediction = None`: before running the cell
# that measures something, replace `None` with your guess. A check after the measurement then
# says how far off you were, and in which direction. A wrong guess is useful: it shows which
# part of your picture of the model was off.
#
# | lesson | question |
# |---|---|
# | **00 · Start here** | what happens when a model answers? |
# | [01 · From text to vectors](01_from_text_to_vectors.ipynb) | what does the model actually read? |
# | [02 · Predicting the next token](02_predicting_the_next_token.ipynb) | how is one token chosen? |
# | [03 · Prefill](03_prefill.ipynb) | why is there a pause before the first word? |
# | [04 · Decode](04_decode.ipynb) | what sets the speed of the words that follow? |
# | [05 · The KV cache](05_kv_cache.ipynb) | what does the model remember between steps? |
# | [06 · Batching](06_batching.ipynb) | why do several replies at once cost less each? |
# | [07 · Capstone](07_capstone.ipynb) | your prompt, the whole pipeline |
# | [08 · The memory wall](08_memory_wall.ipynb) | why is decode speed set by bytes per token? |
# | [09 · Serving many users](09_serving.ipynb) | how does a server answer many people at once? |
# | [10 · Long contexts and prefix caching](10_long_context.ipynb) | what changes when the prompt is thousands of tokens long? |
# | [11 · Remedies](11_remedies.ipynb) | what makes decode faster: fewer bytes, less overhead, more tokens per pass? |

# %% [markdown]
# ## The model on the table
#
# `viz.load_model()` loads the default model from the local cache that `make lab` filled. The
# course loads it on the processor (`device="cpu"`) even where a GPU is present: every lesson
# sets its timings beside this processor's own measured limits, so both must come from the same
# chip. (Lesson 08 shows what a GPU changes.)

# %%
import viz
from viz import compare_prediction, views

lm = viz.load_model(device="cpu")
lm

# %% [markdown]
# A model is a stack of identical layers, each holding numbers (parameters) learned in
# training. *KV heads* fewer than attention heads means some heads share their keys and values
# (grouped-query attention, lesson 05).

# %%
spec = lm.spec
print(f"layers            {spec.n_layers}")
print(f"attention heads   {spec.n_heads} per layer ({spec.n_kv_heads} key/value heads)")
print(f"vocabulary        {spec.vocab_size:,} tokens")
print(f"parameters        {spec.n_params:,}")
print(f"weight bytes      {spec.weight_bytes:,} ({spec.dtype}: {spec.bytes_per_element} bytes each)")

# %% [markdown]
# Each parameter is one number of `dtype`, so the weights' size is parameters × bytes per number:

# %%
print(spec.n_params * spec.bytes_per_element == spec.weight_bytes)

# %% [markdown]
# Those numbers arrived in a smaller form. The set-up (`make lab`, or Binder's build) fetched
# the model once as a **GGUF file quantized to 4 bits** (the *Q4_1* format): the weights go in
# blocks of 32, and each weight is stored as a 4-bit code, a choice among 2⁴ = 16 levels spread
# between the block's smallest and largest value. The set-up then *dequantized* it, once:
# every code turned back into an ordinary float32 of 4 bytes. The 16 levels are still there to
# see: count the different values in each block of 32.

# %%
def most_levels(weight, rows=512):
    """The most different values in any block of 32 neighbouring weights (first `rows` rows)."""
    blocks = weight.detach()[:rows].reshape(-1, 32).sort(dim=1).values
    return int(((blocks[:, 1:] != blocks[:, :-1]).sum(dim=1) + 1).max())


print("layer 0's query matrix:", most_levels(lm.model.model.layers[0].self_attn.q_proj.weight))
print("the embedding table:   ", most_levels(lm.model.get_input_embeddings().weight))

# %% [markdown]
# At most 16 in a layer's matrix: 4 bits' worth of information in 32 bits of storage. (The file
# keeps the embedding table more finely, so its blocks hold more values.) What that means for
# the bytes: Q4_1 spends 20 bytes on a block of 32 weights (32 codes of 4 bits, plus a 2-byte
# scale and a 2-byte minimum), about 5 bits a weight.

# %%
q4_1_bytes = spec.n_params * 20 // 32  # were every weight stored as Q4_1
print(f"every weight as Q4_1:   about {q4_1_bytes / 1e6:5.0f} MB")
print(f"as float32, in memory:        {spec.weight_bytes / 1e6:5.0f} MB "
      f"({spec.weight_bytes / q4_1_bytes:.1f}× more)")

# %% [markdown]
# The model computes in float32, so every forward pass reads the float32 bytes: the 4-bit file
# only made the download small. Every byte count in this course is the float32 one (lesson 08
# measures what reading fewer bytes per weight would buy).

# %% [markdown]
# ## See it: a first reply, step by step
#
# `viz.record` asks the model a question and writes down everything that happens. By default
# it always takes the most likely token (*greedy*), so the reply is the same on every run.
#
# The very first call to a freshly loaded model also pays one-off costs (memory is allocated,
# the maths library picks its routines), so its timing says little about the model. We keep
# that first call apart (`first_call`, compared below) and record the reply once the model is
# warm.

# %%
question = "What is the capital of France?"
first_call = viz.record(lm, question, chat=True, max_new_tokens=1)  # set-up costs included
trace = viz.record(lm, question, chat=True, max_new_tokens=24)  # warm
print(trace.generated_text)
print(f"{trace.n_generated} tokens")

# %% [markdown]
# Drag the slider (or press ▶): each position is one forward pass of the model. The panels show
# the text so far with the new token marked, the candidates the model scored at that step, the
# size of its memory of the conversation (the KV cache, lesson 05) and how long the step took.

# %% tags=["nbval-ignore-output"]
views.explorer_figure(trace)

# %% [markdown]
# ## Understand it: the loop
#
# Stripped to its bones, generation is four lines (the real, commented loop is in
# `viz/record.py`):
#
# ```python
# logits = model(prompt_ids)            # prefill: one pass over the whole prompt
# while not finished:
#     token = pick(logits)              # greedy here: the highest score
#     logits = model(token)             # decode: one pass for one new token
# ```
#
# The trace holds one step per forward pass: the first reads every prompt token, every later
# one reads the single token chosen just before it. And every pass reads every weight of the
# model once, so each one must bring all of them from memory to the processor:

# %%
passes = len(trace.steps)  # one recorded step per forward pass
for s in trace.steps[:6]:
    print(f"step {s.index}  {s.phase:8}  read {s.input_tokens:2} tokens → chose {s.token_text!r}")
print(f"... {passes} passes in all, for {trace.n_generated} tokens: "
      f"{passes} × {spec.weight_bytes:,} = {passes * spec.weight_bytes:,} bytes of weights read")

# %% [markdown]
# ### What the model reads
#
# Step 0 read more tokens than the question has words. With `chat=True`, `viz.record` wraps
# the question in the model's *chat template*, the format the model was trained to answer:
# control tokens that open and close each turn, the role of each turn, and a **system prompt**
# you never typed, added by the template. `views.prompt_html` colours every token the model
# read by where it came from (hover a token for its position and id):

# %%
views.prompt_html(trace)

# %%
print(views.prompt_table(trace))
parts = views.prompt_data(trace)
print(f"{parts.added} of the {len(parts.tokens)} tokens the model reads "
      f"({parts.added / len(parts.tokens):.0%}) are not your text")

# %% [markdown]
# The model also reads where each token sits: its **position**, counted from 0. "dog bites
# man" and "man bites dog" hold the same words at different positions, and only the
# positions tell the two apart; inside every layer, the part called attention (drawn in lesson
# 03, explained in lesson 05) takes them into account. Your question sits near the end:

# %%
print(f"{len(parts.tokens)} tokens at positions {parts.tokens[0].position} to "
      f"{parts.tokens[-1].position}; your text at positions "
      f"{[t.position for t in parts.tokens if t.kind == 'yours']}")

# %% [markdown]
# Every one of these tokens is read by the prefill and kept in the model's memory of the
# conversation (the KV cache, lesson 05): a hidden system prompt costs time and memory on
# every request, whoever typed it.

# %% [markdown]
# ## Measure it: two numbers a user feels
#
# **TTFT** (time to first token) is the wait before anything appears: tokenizing plus the
# prefill pass. **Tokens per second** is how fast the rest streams out: one decode pass each.
#
# A single timing can be off: other programs share the processor, and the first call pays
# set-up costs. So time the question's prefill five more times on the warm model and take the
# **median** (the middle value), with the fastest and slowest beside it; the time per token is
# the median over every decode step of the reply.

# %%
import numpy as np

warm = [viz.record(lm, question, chat=True, max_new_tokens=1, embeddings=False).ttft_s
        for _ in range(5)]
gaps = trace.inter_token_latencies_s  # the time between two tokens, each decode step
print(f"TTFT, first call   {first_call.ttft_s * 1000:.0f} ms (one-off set-up included)")
print(f"TTFT, warm         median {np.median(warm) * 1000:.0f} ms of 5 "
      f"(fastest {min(warm) * 1000:.0f} ms, slowest {max(warm) * 1000:.0f} ms)")
print(f"time per token     median {np.median(gaps) * 1000:.0f} ms of {len(gaps)} steps "
      f"(fastest {min(gaps) * 1000:.0f} ms, slowest {max(gaps) * 1000:.0f} ms)")
print(f"decode speed       {1 / np.median(gaps):.1f} tokens/s")

# %% tags=["nbval-ignore-output"]
setup = first_call.ttft_s / np.median(warm)
print(f"the first call was slower than every warm one ({setup:.1f}× their median): the "
      "difference is set-up, paid once" if first_call.ttft_s > max(warm) else
      "the first call was no slower than the slowest warm one: the set-up was cheap here")

# %% [markdown]
# From here on, every lesson warms the model up before it times anything, and reports medians.

# %% [markdown]
# The timeline puts them side by side: prefill is one bar, every decode step its own. Its
# title and its dashed line use the name **TPOT**, *time per output token*: the mean time
# between two tokens after the first. The median above is the middle one of those gaps; one
# slow step pulls the mean up and leaves the median where it was (lesson 04 takes TPOT apart).

# %% tags=["nbval-ignore-output"]
views.timeline_figure(trace)

# %% [markdown]
# ### Try your own prompt
#
# Change the text and run the cell. (Longer replies take longer: keep `max_new_tokens` small.)

# %%
my_prompt = "Write a haiku about the sea."  # ← try your own
mine = viz.record(lm, my_prompt, chat=True, max_new_tokens=24)
print(mine.generated_text)

# %% tags=["nbval-ignore-output"]
views.summary_html(mine)

# %% [markdown]
# The card's times come from this one run, with no spread: run the cell again and they move a
# little. A small model is fast enough to study on a laptop, not always right: ask it
# `"What is 12 times 12?"` and check its arithmetic.

# %% [markdown]
# ## Check yourself
#
# **1. A longer prompt.** The prefill reads the whole prompt in one pass. Ask the model to sum
# up a paragraph of about 80 words: it then reads nearly four times as many tokens as for the
# capital of France (the next cell but one counts them).
#
# **Predict.** Its TTFT, against the warm TTFT of the short question, will be... ("about the
# same": less than 1.2× as long; "in proportion": at least three quarters of the ratio of
# tokens.)

# %%
LONGER = ["about the same", "longer, but less than in proportion to the tokens",
          "in proportion to the tokens, or more"]
prediction_longer = None  # ← your guess: one of LONGER, copied exactly

# %% tags=["nbval-ignore-output"]
from viz.perf import SAMPLE_PARAGRAPH  # lesson 01's paragraph of everyday English

long_question = "Sum up this story in one sentence:\n\n" + SAMPLE_PARAGRAPH
long_runs = [viz.record(lm, long_question, chat=True, max_new_tokens=1, embeddings=False)
             for _ in range(5)]
tokens_x = len(long_runs[0].prompt_ids) / len(trace.prompt_ids)
time_x = np.median([r.ttft_s for r in long_runs]) / np.median(warm)
longer = LONGER[0] if time_x < 1.2 else LONGER[1] if time_x < 0.75 * tokens_x else LONGER[2]
print(f"{len(long_runs[0].prompt_ids)} tokens against {len(trace.prompt_ids)}: {tokens_x:.1f}× "
      f"the tokens, {time_x:.1f}× the TTFT (medians of 5) → {longer}")

# %%
compare_prediction(prediction_longer, longer, options=LONGER,
                   hint="which parts of one pass depend on the number of tokens it reads, "
                        "and which do not?")

# %% [markdown]
# A pass pays some of its costs once, whatever the number of tokens it reads, and others for
# each token: lesson 03 measures the two apart.
#
# **2. A shorter budget, drawn at random.** A model can also *draw* each token at random,
# weighted by its probabilities, instead of taking the most likely one (lesson 02 shows how);
# `viz.record(..., temperature=0.8, seed=1)` does that with a seeded random-number generator.
# The next cell draws a reply to your prompt that way with `max_new_tokens=24`, then draws
# again, with the same seed, with `max_new_tokens=12`.
#
# **Predict.** The 12-token reply will be...

# %%
BUDGET = ["the first 12 tokens of the 24-token reply", "a shorter reply, finished in 12 tokens",
          "a different reply altogether"]
prediction_budget = None  # ← your guess: one of BUDGET, copied exactly

# %% tags=["nbval-ignore-output"]
drawn = {n: viz.record(lm, my_prompt, chat=True, max_new_tokens=n, temperature=0.8, seed=1,
                       stop_at_eos=False, embeddings=False) for n in (24, 12)}
for n, t in drawn.items():
    print(f"max_new_tokens={n}: {t.generated_text!r}")
same_start = drawn[12].generated_ids == drawn[24].generated_ids[:12]
budget = BUDGET[0] if same_start else BUDGET[2]

# %%
compare_prediction(prediction_budget, budget, options=BUDGET,
                   hint="what does the pass that chooses token 5 read, in either run, and "
                        "which random number does the draw use there?")

# %% [markdown]
# No pass reads `max_new_tokens`: each one scores the next token from the text so far, and the
# budget only decides when the loop stops. With the same seed the draws come in the same
# order, so a reply cut short is the start of the long one, drawn or not.

# %% [markdown]
# ## Next
#
# [01 · From text to vectors →](01_from_text_to_vectors.ipynb): how the prompt becomes the
# numbers the model reads.

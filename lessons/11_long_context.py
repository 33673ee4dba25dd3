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
# # 11 · Long contexts and prefix caching
#
# The prompts so far were short. Real conversations are not: a chat carries a system prompt,
# perhaps a document, and every earlier turn, and sends all of it again with each new question.
# Two things change when the context gets long:
#
# - **prefill** no longer costs the same per token: each new position attends to every position
#   before it, so attention's work grows with the *square* of the prompt while the rest grows in
#   proportion;
# - **decode** reads the KV cache as well as the weights at every step, and at this model's
#   longest context the cache is most of the weights' size.
#
# One remedy: when prompts begin alike, keep the keys and values of that beginning and compute
# only what is new. That is **prefix caching**.

# %% tags=["nbval-ignore-output"]
import gc

import psutil

import viz
from viz import compare_prediction, perf, serve, views

# this machine's peaks, measured once (lesson 02) and reused; measured here first, before the
# model is loaded, if this is the first lesson you open (it needs a 256 MiB buffer for a moment)
machine = perf.machine_peaks()  # measured the first time on this machine, then reused
peaks = perf.cached_peaks()  # the same peaks in float32: the two roofs
print(machine.status)
print(perf.yardsticks())

# %%
lm = viz.load_model(device="cpu")
spec = lm.spec
print(f"{spec.name}: {spec.kv_bytes_per_token():,} bytes of keys and values per token, "
      f"{spec.weight_bytes:,} bytes of weights, up to {spec.context_length:,} tokens; "
      f"{spec.n_layers} layers, {spec.n_heads} query heads of {spec.head_dim} numbers")

# %% [markdown]
# ## See it: prefill of long prompts, attention taken out
#
# `perf.long_prefill_sweep` prefills prompts of 256 to 2,048 tokens, and a clock *inside* the
# model's attention function (`viz.compat.timed_attention`) separates attention proper
# (scores q·kᵀ, softmax, the weighted sum of v) from the rest of the pass: the projections
# and the MLP, whose work is the weights met once per token.
#
# Before it runs: what share of a 2,048-token prefill do you expect attention to take?

# %%
SHARE = ["under 10 %", "10 to 40 %", "over 40 %"]
prediction_share = None  # ← your guess, one of SHARE

# %% tags=["nbval-ignore-output"]
long_prefill = perf.long_prefill_sweep(lm, [256, 1024, 2048], repeats=2, progress=False)
print(long_prefill)
views.sweep_figure(long_prefill)

# %% tags=["nbval-ignore-output"]
share_2048 = long_prefill.spread("attention_s")[-1] / long_prefill.spread("prefill_s")[-1]
measured_band = viz.band(share_2048, [0.10, 0.40], SHARE)  # with both figures' spreads
compare_prediction(prediction_share, measured_band, options=SHARE,
                   hint="count it: attention does 4·layers·heads·head size·(1 + 2 + … + n) "
                        "FLOPs, the rest about 2·parameters·n")

# %% [markdown]
# ## Understand it: the square and the line
#
# The middle panel is the time **per prompt token**; where it rises, attention is why: the
# 1,000th token attends to 1,000 earlier ones, the 2,000th to 2,000. Counted (`perf.prefill_cost`), with L layers, n_h query heads of
# d numbers each and a prompt of n tokens, attention does 4·L·n_h·d·(1 + 2 + … + n) FLOPs,
# which grows with n²; the matrix products with the weights do 2 FLOPs per weight per token,
# 2·n·L·P_layer with P_layer the weights of one layer, which grows with n. They meet near
# n = P_layer ÷ (n_h·d): a length set by the shape alone.

# %% tags=["nbval-ignore-output"]
per_token = long_prefill.column("prefill_s_per_token")
print(f"per prompt token: {per_token[0] * 1e3:.2f} ms at 256 tokens, "
      f"{per_token[-1] * 1e3:.2f} ms at 2,048 (×{per_token[-1] / per_token[0]:.2f})")
for n, a_f, a_s, m_f, r_s in zip(*(long_prefill.column(c) for c in (
        "prompt_tokens", "attention_flops", "attention_s", "matmul_flops", "rest_s"))):
    print(f"  {n:5,} tokens: attention {a_f / a_s / 1e9:5.0f} GFLOP/s, the rest "
          f"{m_f / r_s / 1e9:5.0f} GFLOP/s")
crossing = perf.measured_crossover(long_prefill)
counted = perf.attention_crossover(spec)
print(f"attention's time passes the rest's at {crossing.text()}; its FLOPs at {counted:,}")
for n in (4096, 8192):  # the fitted curves, past the longest prompt measured
    print(f"  the fit puts a {n:,}-token prefill at ~{crossing.prefill_s(n):.0f} s (extrapolated)")
big = perf.config_spec("llama-3.1-8b")
print(f"counted for {big.name}: {perf.attention_crossover(big):,} tokens")

# %% [markdown]
# Where attention's rate (GFLOP/s) is the lower one, its time passes the rest's before its
# FLOPs do, and the measured crossing comes before the counted one. A small model meets its crossover within its own context (8,192
# tokens here); Llama-3.1-8B's shape only far beyond a typical prompt.

# %% [markdown]
# ## Measure it: a decode step at 8,192 tokens
#
# A real prefill of 8,000 positions would take the time the fit above extrapolates, so
# `perf.long_decode_sweep` fills the cache with random keys and values of the model's own shapes
# (`viz.compat.synthetic_cache`): the kernels and the bytes they read are real, and nothing in a
# step's timing depends on the values. Checked at 2,048 tokens: a step over a real prefill's
# cache, and one over a random cache as long, interleaved.

# %% tags=["nbval-ignore-output"]
check = perf.synthetic_check(lm, 2048, repeats=3)
print(check.text())

# %% [markdown]
# A step at the start of a conversation reads the weights; at 8,191 cached tokens it reads
# the cache too:

# %%
bytes_0, bytes_8k = perf.decode_cost(spec, 1).bytes, perf.decode_cost(spec, 8192).bytes
print(f"a step over an empty cache reads {bytes_0 / 1e6:,.0f} MB; at 8,191 cached tokens "
      f"{bytes_8k / 1e6:,.0f} MB: ×{bytes_8k / bytes_0:.2f}")

# %% [markdown]
# If time followed bytes, the step at 8,191 would take ×1.70 the step over an empty cache.
# Against that, the measured step will be...

# %%
VERSUS = ["below it, by 10 % or more", "within 10 % of it", "above it, by 10 % or more"]
prediction_8k = None  # ← your guess, one of VERSUS

# %% tags=["nbval-ignore-output"]
long_decode = perf.long_decode_sweep(lm, [0, 2048, 4096, 8191], repeats=3, progress=False)
print(long_decode)
growth_8k = long_decode.spread("growth")[-1]  # step at 8,191 ÷ the empty step beside it
versus = viz.band(growth_8k / (bytes_8k / bytes_0), [0.9, 1.1], VERSUS)
print(f"the step at 8,191: ×{growth_8k.median:.2f} (×{growth_8k.low:.2f}–{growth_8k.high:.2f})"
      f" the empty-cache step beside it, for ×{bytes_8k / bytes_0:.2f} the bytes → {versus}")

# %%
compare_prediction(prediction_8k, versus, options=VERSUS,
                   hint="which part of a step grows with the cache, which does not (lesson "
                        "04), and is the cache only read once per step?")

# %% [markdown]
# On one chart: the step against the bytes it must read, the memory floor (lesson 03) and,
# dotted, the empty-cache step scaled by the bytes.

# %% tags=["nbval-ignore-output"]
views.long_decode_figure(long_decode, peaks)

# %% [markdown]
# The fixed cost of each pass (lesson 04) does not grow with the cache, so by bytes alone the
# points would sit below the dotted line. Take each step apart with the slider: the empty-cache
# step beside it, attention's growth (the clock again), the cache's own copy and what is left.
# transformers' `DynamicCache` grows by concatenation: adding one token copies the whole cache
# before attention reads it.

# %% tags=["nbval-ignore-output"]
views.long_decode_widget(long_decode)

# %% tags=["nbval-ignore-output"]
parts = {k: v * 1e3 for k, v in views.long_decode_parts(long_decode, 8191).items()}  # ms
kv_8k = long_decode.column("kv_bytes")[-1]
attention_growth = parts["attention's growth"]
print(f"at 8,191: step {parts['step']:.1f} ms = empty-cache step {parts['empty step']:.1f} ms"
      f" + attention's growth {attention_growth:.1f} ms (reading {kv_8k / 1e6:,.0f} MB of keys"
      f" and values) + the copy {parts['the copy, timed alone']:.1f} ms + left over "
      f"{parts['left over']:.1f} ms")

# %% tags=["nbval-ignore-output"]
fixed = perf.fixed_cost(spec.n_layers)  # measured once per machine (lesson 04), then reused
cost = perf.decode_cost(spec, 8192)
v = perf.pass_verdict(cost.flops, cost.bytes, long_decode.spread("decode_step_s")[-1], peaks, fixed)
print(f"the rule on that step: {v} (MBU {v.mbu:.0%})")

# %% [markdown]
# What is left over is not taken apart here. A paged cache (lesson 09) writes only the new token
# into its page: attention's growth stays, the copy goes.
#
# ### Drag the context
#
# The slider measures a decode step at the length you choose (three timed steps over a random
# cache, each beside an empty-cache step: a few seconds) and adds the point to the chart.
#
# ✏️ **Predict**, before you drag to 6,144: will its step sit on the straight line between its
# neighbours (4,096 and 8,191), above it, or below?

# %% tags=["nbval-ignore-output"]
import ipywidgets as widgets

from viz.views import LinkedView

measured = {"steps": long_decode}  # the sweep above; the slider adds one context at a time


def context_chart(values):
    c = values["context"]
    if c not in measured["steps"].column("context_tokens"):  # a real step at c, on this machine
        measured["steps"] = measured["steps"].merged(
            perf.long_decode_sweep(lm, [c], repeats=3, progress=False))
    return views.long_decode_figure(measured["steps"], peaks)


context_slider = widgets.SelectionSlider(options=[0, 1024, 2048, 3072, 4096, 6144, 8191],
                                         value=4096, description="tokens cached",
                                         continuous_update=False,
                                         style={"description_width": "initial"})
LinkedView({"context": context_slider}, [context_slider], context_chart)

# %% [markdown]
# ## Measure it: a smaller cache
#
# At 8,191 cached tokens the keys and values are 377 MB of the 916 MB every step reads. Store
# them in fewer bits and a step has fewer bytes to read. transformers does it with its
# `QuantizedCache` (what `generate(..., cache_implementation="quantized")` builds), and
# `perf.KVQuant` picks one of two kinds:
#
# - **fp8**: one byte a value (float8), one scale for all the keys of a layer and one for its
#   values; part of transformers itself;
# - **int4**: 4-bit integers from optimum-quanto, in groups of 64 values (here one head's key of
#   one position) that share a scale and a shift. The newest tokens wait in float32 (a "residual
#   window") until 128 have gathered; then the whole cache is quantized again.
#
# Counted from each backend's layout, scales and shifts included (`perf.kv_quant_bytes`):

# %%
QUANTS = [perf.KVQuant(8), perf.KVQuant(4)]  # fp8, and quanto's int4 in groups of 64
weights_8k = perf.decode_cost(spec, 8192).weight_bytes
for q in QUANTS:
    kv = perf.kv_quant_bytes(spec, 8192, q)
    print(f"{q.label}: {kv / 1e6:,.0f} MB of keys and values at 8,192 tokens (float32 "
          f"{spec.kv_bytes(8192) / 1e6:,.0f} MB); a step reads {(weights_8k + kv) / 1e6:,.0f} MB")
window = perf.kv_quant_bytes(spec, 8192, QUANTS[1], 127) - perf.kv_quant_bytes(spec, 8192,
                                                                              QUANTS[1])
print(f"int4's window adds up to {window / 1e6:.1f} MB: 127 positions in float32, at most")

# %% [markdown]
# A step over the int4 cache reads about a third fewer bytes than one over the float32 cache.
# `perf.kv_quant_sweep` times each quantized cache's step at `CONTEXT` cached tokens as the
# float32 sweep was timed: random keys and values, each step beside an empty-cache step.
#
# Before it runs: at 8,191 cached tokens, the step over the int4 cache will be...

# %%
FASTER = ["faster than float32's, by 10 % or more", "within 10 % of float32's",
          "slower than float32's, by 10 % or more"]
prediction_int4 = None  # ← your guess, one of FASTER

# %% tags=["nbval-ignore-output"]
CONTEXT = 8191  # ← cached tokens: 2048, 4096 or 8191 (the lengths of the float32 sweep)
gc.collect()
quant = perf.kv_quant_sweep(lm, [CONTEXT], QUANTS, repeats=3, float_cache=False,
                           progress=False)
print(quant)
row = long_decode.column("context_tokens").index(CONTEXT)  # float32 at CONTEXT, from above
int4_row = perf.kv_quant_row(quant, "int4")
int4_vs_float = int4_row["growth_spread"] / long_decode.spread("growth")[row]  # each ÷ its
faster = viz.band(int4_vs_float, [0.9, 1.1], FASTER)  # own empty-cache step
print(f"at {CONTEXT:,} cached: int4 {int4_row['step'].text(1e3, 'ms')}, float32 "
      f"{long_decode.spread('decode_step_s')[row].text(1e3, 'ms')}; against the empty-cache "
      f"step beside each, ×{int4_vs_float.median:.2f} "
      f"(×{int4_vs_float.low:.2f}–{int4_vs_float.high:.2f}) → {faster}")

# %%
compare_prediction(prediction_int4, faster, options=FASTER,
                   hint="before attention can use a 4-bit number, what must the step make "
                        "of it, and where does the result go?")

# %% [markdown]
# On one chart: each cache's step against the bytes it must read, from the empty cache (the
# weights alone) out to `CONTEXT`, beside the float32 sweep and the memory floor.

# %% tags=["nbval-ignore-output"]
views.kv_quant_figure(quant, peaks, float_sweep=long_decode)

# %% [markdown]
# Where the time went: transformers' quantized caches have no kernel that reads the small
# numbers directly. Every step turns the whole cache back into float32 (dequantizes it) in
# a new tensor for attention: it reads the small cache, writes a float32 copy as large as the
# float32 cache, and reads it again.

# %% tags=["nbval-ignore-output"]
for q in QUANTS:
    r = perf.kv_quant_row(quant, q.name)
    line = (f"{q.name}: step {r['step'].text(1e3, 'ms')}; dequantizing its "
            f"{r['kv_bytes'] / 1e6:,.0f} MB alone takes {r['dequantize_s'] * 1e3:.1f} ms and "
            f"writes {r['dequantized_bytes'] / 1e6:,.0f} MB of float32")
    if r["flush_s"]:
        line += (f"; every {q.residual_length}th step quantizes the whole cache again: "
                 f"{r['flush_s'] * 1e3:.0f} ms, {r['flush_s'] / q.residual_length * 1e3:.1f} ms "
                 "a step spread over them")
    print(line)
for name, v in perf.kv_quant_verdicts(quant, peaks, fixed).items():
    print(f"the rule at {CONTEXT:,} cached, {name}: {v}")
print("here the int4 cache's fewer bytes " + (
    "bought time: reading float32 cost more on this machine than dequantizing"
    if faster.word == FASTER[0] else "did not buy time beyond the spreads"
    if faster.between else "did not buy time: dequantizing cost more than the bytes saved"))

# %% [markdown]
# Fewer bytes buy time only where a kernel reads them as they are, or where reading float32
# costs more than turning the small numbers back into it, as lessons [08](08_memory_wall.ipynb)
# and [12](12_fewer_bytes.ipynb) show for the weights. Without such a kernel a quantized cache
# buys memory: fewer bytes per token, so more conversations fit. fp8 is the slower of the two to
# turn back into float32: a CPU has no float8 instructions, so torch converts float8 numbers in
# software.
#
# And it costs accuracy, which a random cache cannot show. `perf.kv_quant_agreement` prefills a
# real document and a question, then decodes 16 greedy tokens over the float32 cache and over
# each quantized one.
#
# fp8 keeps 8 bits a value, int4 only 4. Which one follows the float32 cache's greedy answer for
# more tokens?

# %%
FOLLOWS = ["fp8", "int4", "the same number of tokens"]
prediction_follows = None  # ← your guess, one of FOLLOWS

# %% tags=["nbval-ignore-output"]
agreement = perf.kv_quant_agreement(lm, QUANTS, steps=16)
print(f"float32: {agreement[0].reference_text!r}")
for a in agreement:
    print(a.line())
    print(f"  {a.text!r}")
fp8_same, int4_same = (a.same_until for a in agreement)
follows = FOLLOWS[2] if fp8_same == int4_same else FOLLOWS[int(int4_same > fp8_same)]

# %%
compare_prediction(prediction_follows, follows, options=FOLLOWS,
                   hint="a greedy token flips where an error meets a near-tie of the top "
                        "two; which kind leaves the smaller errors on most values: one scale "
                        "per layer, or one per 64 values?")

# %% [markdown]
# The greedy answer changes as soon as a small error in the cached keys and values flips the top
# token; after that the two texts go their own ways, both fluent. A token flips only where the
# top two were nearly tied, so neither the bits nor the largest error of one step decides how
# long two answers agree (set the two logit differences above beside the tokens each kept): what
# counts is whether an error meets such a near-tie. fp8 scales a whole layer's keys with one
# number, int4 every 64 values with their own minimum and maximum.
#
# ## Understand it: what fits
#
# [Lesson 05](05_kv_cache.ipynb) counted how many 8,192-token conversations fit in memory; at
# long contexts grouped-query attention (GQA, lesson 05) sets that count. Counted, for this
# machine's available memory and, labelled computed, for an 80 GB GPU:

# %% tags=["nbval-ignore-output"]
free = psutil.virtual_memory().available
print(f"this machine, {free / 1e9:.1f} GB available now:")
print("  " + perf.kv_fit(spec, 8192, spec.weight_bytes + free).text())
for name in ("llama-3.2-1b", "llama-3.1-8b", "smollm2-1.7b"):
    for tokens in (8192, 131072):
        print("computed:", perf.kv_fit(perf.config_spec(name), tokens, 80 * 10**9).text())

# %% [markdown]
# SmolLM2-1.7B has no GQA (as many key/value heads as query heads): its two counts are the
# same. A server reserving the longest context for every conversation holds the 8,192-token
# count; conversations are mostly shorter, and one handing out pages of 16 tokens as they
# grow (lesson 09) holds as many as their real lengths allow:

# %% tags=["nbval-ignore-output"]
reserved = perf.kv_fit(spec, 8192, spec.weight_bytes + free).conversations
paged = perf.kv_fit(spec, 1024, spec.weight_bytes + free).conversations
print(f"here: {reserved} conversations with 8,192 positions reserved each; {paged} of 1,024 "
      f"tokens in pages (×{paged / max(reserved, 1):.0f})")

# %% [markdown]
# Counted, not measured: without GQA a server would hold a quarter as many 8,192-token
# conversations of the Llama-3.1-8B shape (8 key/value heads for 32 query heads), and at 128k
# tokens only a few fit at all. Long-context serving is a memory problem first.
#
# ## See it: a prefix computed once
#
# `perf.prefix_cache_sweep` takes one 512-token prompt, treats a share of its beginning as
# prefilled by an earlier request (untimed), and times the first token with that prefix
# recomputed, and with its keys and values reused (only the rest prefilled), checking that the
# first token comes out the same. It starts at half the prompt cached: with nothing cached, the
# two are the same pass.
#
# Before it runs: with 95 % of the prompt cached, how many times faster is the first token?

# %%
SPEEDUP = ["under ×4", "×4 to ×12", "over ×12"]
prediction_speedup = None  # ← your guess, one of SPEEDUP

# %% tags=["nbval-ignore-output"]
gc.collect()
prefix = perf.prefix_cache_sweep(lm, 512, [0.5, 0.75, 0.95], repeats=2, progress=False)
print(prefix)
views.sweep_figure(prefix)

# %% tags=["nbval-ignore-output"]
speedup_95 = prefix.column("speedup")[-1]
speedup_spread = prefix.spread("ttft_full_s")[-1] / prefix.spread("ttft_cached_s")[-1]
print(f"same first token at every share: {all(prefix.column('same_first_token'))}")
new_95 = prefix.column("new_tokens")[-1]
print(f"95 % cached: {new_95} of 512 tokens computed (×{512 / new_95:.0f} fewer), "
      f"first token ×{speedup_95:.1f} faster: " + ("less than the tokens saved"
      if speedup_95 < 512 / new_95 else "as much as the tokens saved"))
one_token = long_decode.column("empty_step_s")[0]  # a pass of one token, from the decode sweep
few = prefix.column("ttft_cached_s")[-1]
print(f"a pass of those {new_95} tokens {few * 1e3:.0f} ms; a pass of one token "
      f"{one_token * 1e3:.0f} ms: ×{few / one_token:.1f} the time for ×{new_95} the tokens")
band_95 = viz.band(speedup_spread, [4, 12], SPEEDUP)  # with both times' spreads
compare_prediction(prediction_speedup, band_95, options=SPEEDUP,
                   hint="what does a pass cost whatever the number of tokens it carries "
                        "(lesson 03's *a*, the part paid once)?")

# %% [markdown]
# The speed-up stays below the tokens saved because a pass reads every weight and pays its fixed
# cost however few tokens it carries: a pass of a few dozen tokens costs a few times a pass of
# one (the line before the check), not dozens of times.
#
# ## Measure it: a chat that re-sends its history
#
# The OpenAI-style API a server speaks is stateless: each turn sends the whole conversation
# again. `perf.chat_turns` plays four turns (replies of six tokens) and times each first token
# with the history recomputed, and with the keys and values kept from the turn before, as far
# as the token ids match from the start (an engine matches whole pages, below).

# %% tags=["nbval-ignore-output"]
chat = perf.chat_turns(lm, ["What is a KV cache?", "Why does it grow with the text?",
                            "How large is it for a long document?",
                            "And how do servers keep it small?"],
                       reply_tokens=6, repeats=2, progress=False)
print(chat)
views.sweep_figure(chat)

# %% tags=["nbval-ignore-output"]
saved = [f - c for f, c in zip(chat.spread("ttft_full_s"), chat.spread("ttft_cached_s"))]
print("time saved per turn: " + ", ".join(x.text(1e3, "ms", 0, runs=False) for x in saved))
grows = [b.low > a.high for a, b in zip(saved, saved[1:])]  # beyond both spreads
print("the saving grows with every turn, beyond the spreads" if all(grows) else
      "the saving grows on the medians, but not beyond the spreads at every turn: "
      f"too close to call from turn {grows.index(False) + 1} to {grows.index(False) + 2}")

# %% [markdown]
# ## Understand it: prefix sharing inside a serving engine
#
# The engine behind `transformers serve --continuous-batching` (lesson 09) keeps its cache in
# pages of 16 tokens and shares **full pages** whose token ids match an earlier request's.
# `serve.measure_prefix_sharing` sends four requests that share a long system prompt through
# that engine in this process, one after another, with sharing on and off (the server always
# has it on). Its **hit rate**, as vLLM and SGLang report it, is prompt tokens found in the
# cache ÷ prompt tokens sent.

# %%
tok = lm.tokenizer
system = ("You are the teaching assistant of a course on how language models run. Answer in "
          "two sentences, plainly, and say when a number depends on the machine. ") * 3
questions = ["What is prefill?", "What is decode?", "Why batch requests?", "What is a page?"]
prompts = [tok.apply_chat_template([{"role": "system", "content": system},
                                    {"role": "user", "content": q}],
                                   add_generation_prompt=True, tokenize=True)["input_ids"]
           for q in questions]
print(f"prompts of {[len(p) for p in prompts]} tokens, sent one after another")

# %% [markdown]
# With sharing on, the second request reuses most of its prompt. How long will its first
# token take, as a share of the same request's with sharing off?

# %%
FRACTION = ["under 25 %", "25 to 60 %", "over 60 %"]
prediction_fraction = None  # ← your guess, one of FRACTION

# %% tags=["nbval-ignore-output"]
sharing = serve.measure_prefix_sharing(lm.model, prompts, max_new_tokens=2, page_size=16)
fraction = sharing.on[1].first_token_s / sharing.off[1].first_token_s
print(sharing.text())
for on, off in zip(sharing.on, sharing.off):
    print(f"{on.request_id}: {on.prompt_tokens} prompt tokens, {on.reused_tokens} reused; "
          f"first token {on.first_token_s * 1e3:.0f} ms with sharing, "
          f"{off.first_token_s * 1e3:.0f} ms without")

# %%
band = viz.band(fraction, [0.25, 0.60], FRACTION)  # one run of each: no spread
compare_prediction(prediction_fraction, band, options=FRACTION,
                   hint="what does the engine still compute for it, and what does any pass "
                        "cost however few tokens it carries?")

# %%
common = perf.common_prefix(prompts[0], prompts[1])
print(f"the first two prompts share their first {common} token ids; the engine reused "
      f"{sharing.on[1].reused_tokens}: {sharing.on[1].reused_tokens // 16} whole pages of 16")

# %% [markdown]
# Only whole pages are shared, and only where every token id matches: the last, partial page of
# the common prefix is computed again. Over HTTP, with a real server:
# `python benchmarks/long_context.py --server`.
#
# ## Check yourself
#
# The six predictions above were checked against your machine. Two more, in words, from this
# lesson's numbers:
#
# 1. At 8,191 cached tokens, where did the step's growth go on your machine: attention's reading
#    of the cache, or the rest? What would a paged cache change?
# 2. A server's hit rate is 90 % but its time to first token fell only by half. Give two
#    reasons, each with a number printed above.
#
# ## Where next
#
# Back to [09 · Continuous batching and pages](09_continuous_batching.ipynb) (pages shared
# across requests, in the scheduler's own record) or
# [08 · The memory wall](08_memory_wall.ipynb) (at long contexts the KV cache joins the weights
# among the bytes every step reads). Next, [12 · Fewer bytes →](12_fewer_bytes.ipynb): the same
# weights in smaller number formats; then [13](13_less_overhead.ipynb): less overhead and more
# tokens per pass.

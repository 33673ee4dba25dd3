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
# # 15 · The whole course on one page
#
# The course told one story. Every reply is made in two phases: **prefill** reads the whole
# prompt in one parallel pass, and its time is the wait for the first token (TTFT); **decode**
# makes one token per forward pass, one after another, and its pace is the tokens per second.
# The **KV cache** keeps each decode pass to one new token's work; **batching** shares each
# read of the weights among many requests; and decode's speed is set by the **bytes** each
# token moves — until a fixed cost per pass, or the arithmetic, sets it instead.
#
# This last lesson measures every figure of that story again, on your machine (about half a
# minute of computing on a 2-core CPU), and puts them on one page, each beside the lesson that
# took it apart. Two predictions first: by now you know enough to make them. At the end, the
# same story for a prompt of your own.

# %% tags=["nbval-ignore-output"]
import viz
from viz import compare_prediction, perf, views

lm = viz.load_model()
spec = lm.spec
roof, fixed = perf.cached_peaks(), perf.fixed_cost(spec.n_layers)  # measured once per machine
print(perf.yardsticks())

# %% [markdown]
# ## Predict first
#
# ✏️ **1.** Three levers raise the course model's tokens per second: **batching** (8 requests
# share each read of the weights; everyone's tokens per second together, lesson 06),
# **fewer bytes** (llama.cpp's 4-bit Q4_1 file against float32, one request, lesson 12) and
# **more tokens per pass** (prompt lookup on a reply that copies a list, one request,
# lesson 13). Which buys the most on your machine?
#
# ✏️ **2.** What sets the pace of decode here: the bytes each token moves ("memory-bound"), the
# fixed cost every pass pays ("overhead-bound"), or the arithmetic ("compute-bound")?

# %%
LEVERS = ["batching", "fewer bytes", "more tokens per pass"]
prediction_lever = None  # ← one of LEVERS, copied exactly
prediction_decode = None  # ← "memory-bound", "overhead-bound" or "compute-bound"

# %% [markdown]
# ## See it: one reply, both phases
#
# One chat reply of 24 tokens, step by step (lessons 00 and 04), after a warm-up call that
# pays the one-off set-up: its first token comes out of the prefill, every later one out of a
# decode pass.

# %% tags=["nbval-ignore-output"]
PROMPT = "Explain in three sentences why the sky is blue."
viz.record(lm, PROMPT, chat=True, max_new_tokens=1, embeddings=False)  # warm-up (lesson 00)
trace = viz.record(lm, PROMPT, chat=True, max_new_tokens=24, embeddings=False)
views.explorer_figure(trace)

# %% [markdown]
# ## Measure it: the two phases, and what limits each
#
# The prefill of that prompt timed four more times, every decode step of the reply, each
# pass's work counted, and the rule of lessons 03, 04 and 08 applied with this machine's
# peaks and fixed cost:

# %% tags=["nbval-ignore-output"]
again = [viz.record(lm, PROMPT, chat=True, max_new_tokens=1, embeddings=False)
         for _ in range(4)]
prefill_s = viz.Spread.of([t.timing.prefill_forward_s for t in [trace] + again])
step_s = trace.decode_step_spread
prefill = perf.prefill_cost(spec, len(trace.prompt_tokens))
step = perf.decode_cost(spec, trace.steps[-1].seq_len)
verdicts = {"prefill": perf.pass_verdict(prefill.flops, prefill.bytes, prefill_s, roof, fixed),
            "decode": perf.pass_verdict(step.flops, step.bytes, step_s, roof, fixed)}
for phase, v in verdicts.items():
    print(f"{phase}: {v.line()}")

# %%
compare_prediction(prediction_decode, verdicts["decode"], options=list(perf.REGIMES),
                   hint="the rule's questions in their order: is the fixed cost half the "
                        "step or more? If not, which floor is longer?")

# %% [markdown]
# ## Measure it: the three levers
#
# Each lever, measured briefly (the lessons named beside them measure it properly, with
# repeats):
#
# - **batching**: 8 copies of one prompt decoded together against 1 (lesson 06's loop);
# - **fewer bytes**: the same chat prompt decoded greedily by llama.cpp from the Q4_1 file and
#   by transformers in float32, 24 tokens twice each, as lesson 12 does (where llama.cpp is
#   not installed, Binder, the project's reference run stands in, labelled);
# - **more tokens per pass**: prompt lookup on a reply that copies a list (lesson 13).

# %% tags=["nbval-ignore-output"]
batch = perf.batch_size_sweep(lm, [1, 8], max_new_tokens=8, progress=False)
b_step = dict(zip(batch.column("batch_size"), batch.spread("decode_step_s")))
wait_8 = b_step[8] / b_step[1]  # each request's time per token, ÷ alone
gains = {"batching": viz.Spread.exact(8) / wait_8}  # everyone's tokens per second, ÷ alone

formats = None
if "Q4_1" in perf.available_formats():
    formats = perf.measure_formats(lm, formats=["float32", "Q4_1"], new_tokens=24, repeats=2)
if formats is None or formats.point("llama.cpp Q4_1") is None:  # no llama.cpp (Binder), or
    formats = perf.load_reference("cpu-formats")  # it failed: the project's run, labelled
    print(f"the Q4_1 row is not this machine's: {formats.source}")
f32, q4 = formats.point("transformers float32"), formats.point("llama.cpp Q4_1")
gains["fewer bytes"] = f32.step / q4.step

lookup = perf.compare_prompt_lookup(lm, perf.LOOKUP_PROMPTS["copy a list"], max_new_tokens=40,
                                    repeats=1)
gains["more tokens per pass"] = lookup.speedup_spread

for lever, g in gains.items():  # one round has no spread: said so, not drawn as a range
    spread = f"({g.low:.2f}–{g.high:.2f})" if g.high > g.low else "(one round, no spread)"
    print(f"{lever:>20}: ×{g.median:.2f} {spread} the tokens per second")
print(f"{'':>20}  (batching: each of the 8 requests waits ×{wait_8.median:.2f} per token)")

# %%
ranked = sorted(gains, key=lambda k: gains[k].median, reverse=True)
first, second = ranked[0], ranked[1]
most = (viz.Band(gains[first], viz.TOO_CLOSE, (first, second))
        if gains[first].overlaps(gains[second]) else viz.Band(gains[first], first))
compare_prediction(prediction_lever, most, options=LEVERS,
                   hint="read the three measured lines above: the ceilings are not the "
                        "gains (batching divides a weight read among 8; Q4_1 reads ~5.6× fewer "
                        "bytes; prompt lookup makes up to 11 tokens a pass where the reply "
                        "copies). Each lever's line is this machine's answer, measured once (lessons 06, 12 and 13 measured each "
                        "with repeats, at other settings: their order can differ)")

# %% [markdown]
# ## Understand it: the course on one page
#
# Every figure above, and the few the course counted, in the order the course met them:

# %% tags=["nbval-ignore-output"]
n_prompt, n_cache = len(trace.prompt_tokens), trace.steps[-1].seq_len
floor = step.bytes / roof.bytes_per_s  # reading one step's bytes at this machine's read peak
price = perf.EXAMPLE_PRICES["cpu-vm"].per_hour  # ← your machine's $ per hour
bill = perf.cost(batch, price)
lines = [
    ("tokens", f"your prompt is {n_prompt} tokens with its chat template", "01"),
    ("prefill", f"one pass over {n_prompt} tokens: the reply's own took "
                f"{trace.timing.prefill_forward_s * 1e3:.0f} ms of its "
                f"{trace.ttft_s * 1e3:.0f} ms TTFT; the median of its runs "
                f"{prefill_s.text(1e3, 'ms')}: {verdicts['prefill'].regime}", "03"),
    ("decode", f"{step_s.text(1e3, 'ms')} a token, {1 / step_s.median:.1f} tokens/s: "
               f"{verdicts['decode'].regime}", "04"),
    ("KV cache", f"{spec.kv_bytes_per_token():,} bytes a token; this reply's {n_cache} cached "
                 f"tokens (the last token's keys are not cached yet) "
                 f"{spec.kv_bytes(n_cache) / 1e6:.1f} MB; 8,192 tokens "
                 f"{spec.kv_bytes(8192) / 1e6:.0f} MB (counted)", "05"),
    ("batching", f"8 at once: ×{gains['batching'].median:.1f} the tokens/s, each request "
                 f"×{wait_8.median:.2f} the wait per token", "06"),
    ("the wall", f"a step reads {step.bytes / 1e6:.0f} MB: {floor * 1e3:.1f} ms at your read "
                 f"peak ({roof.bytes_per_s / 1e9:.1f} GB/s), {floor / step_s.median:.0%} of "
                 f"the step; the fixed cost {fixed.median * 1e3:.1f} ms, "
                 f"{fixed.median / step_s.median:.0%}", "08"),
    ("a token's price", f"at ${price:.2f} an hour: ${bill.rows[0].output_per_mtok.median:.2f}"
                        f" per million output tokens alone, "
                        f"${bill.rows[-1].output_per_mtok.median:.2f} batched by 8 (priced from "
                        f"the batching lever's steps)", "10"),
    ("fewer bytes", f"Q4_1: ×{gains['fewer bytes'].median:.1f} the tokens/s of float32, "
                    f"for ×{f32.weight_bytes / q4.weight_bytes:.1f} fewer bytes", "12"),
    ("more per pass", f"prompt lookup copying a list: {lookup.lookup.tokens_per_pass:.1f} "
                      f"tokens a pass, ×{gains['more tokens per pass'].median:.1f} the "
                      f"tokens/s", "13"),
]
print(f"the course on {lm.environment().device_name}, {spec.dtype}:")
for what, figure, lesson in lines:
    print(f"  {what:>15}  {figure}  (lesson {lesson})")

# %% [markdown]
# And the story's one sentence, with your machine's numbers in it:

# %% tags=["nbval-ignore-output"]
d = verdicts["decode"]
arithmetic = step.flops / roof.flops_per_s  # one step's FLOPs at this machine's matmul peak
winner = (f"{most.between[0]} and {most.between[1]} bought the most, too close to call apart: "
          f"×{gains[most.between[0]].median:.1f} and ×{gains[most.between[1]].median:.1f}"
          if most.between else f"{most.word} bought the most: ×{gains[most.word].median:.1f}")
print(f"Your reply's first token took {trace.ttft_s * 1e3:.0f} ms, "
      f"{trace.timing.prefill_forward_s / trace.ttft_s:.0%} of it its own "
      f"prefill pass over {n_prompt} tokens ({verdicts['prefill'].regime}). Each later token "
      f"took {step_s.median * 1e3:.0f} ms, one decode pass each: reading its "
      f"{step.bytes / 1e6:.0f} MB at your read peak would take {floor * 1e3:.0f} ms, its "
      f"arithmetic at your peak {arithmetic * 1e3:.1f} ms, the fixed cost "
      f"{fixed.median * 1e3:.0f} ms, the rest the weights streaming below that peak and the "
      f"small operations between them (lesson 08); the rule calls the step {d.regime}. "
      f"The KV cache kept each pass to one token's work, {spec.kv_bytes_per_token() / 1e3:.0f} kB "
      f"of keys and values a token; 8 requests at once made ×{gains['batching'].median:.1f} "
      f"the tokens per second, each waiting ×{wait_8.median:.1f} as long; and {winner}.")

# %% [markdown]
# ## Your turn: the story of your own prompt
#
# The page used one short question. The box below records any prompt the same way (a reply of
# up to 24 tokens, its prefill timed three times, both passes counted and judged by the rule)
# and sets it beside the page's. It starts with a paragraph pasted in front of the page's
# question: several times the prompt.
#
# ✏️ **Predict.** With that longer prompt, which grows more against the page's reply: the time
# to the first token, or the time per token after it?

# %%
GROWS = ["the time to the first token", "the time per token", "both about as much"]
prediction_grows = None  # ← one of GROWS, copied exactly

# %% tags=["nbval-ignore-output"]
LONGER = ("Sunlight holds every colour. Air molecules are much smaller than the light's "
          "wavelength, and they scatter short wavelengths far more than long ones: blue light "
          "about five times more than red. Scattered blue reaches the eye from every part of "
          "the sky, while the direct light of the sun, with less blue in it, looks yellow. At "
          "sunset the light crosses much more air, the blue is scattered away before it "
          "arrives, and the sky near the sun turns red and orange. " + PROMPT)
stories = {}  # prompt → what the box printed, with the figures to compare


def story_of(prompt):
    """Record `prompt` as the page recorded its own, and say what each phase did."""
    t = viz.record(lm, prompt, chat=True, max_new_tokens=24, embeddings=False)
    more = [viz.record(lm, prompt, chat=True, max_new_tokens=1, embeddings=False)
            for _ in range(2)]
    pre_s = viz.Spread.of([x.timing.prefill_forward_s for x in [t] + more])
    n = len(t.prompt_tokens)
    cost = perf.prefill_cost(spec, n)
    lines = [f"{n} prompt tokens ({n / n_prompt:.1f}× the page's): first token after "
             f"{t.ttft_s * 1e3:.0f} ms (×{t.ttft_s / trace.ttft_s:.1f} the page's), its "
             f"prefill {pre_s.text(1e3, 'ms')}: "
             f"{perf.pass_verdict(cost.flops, cost.bytes, pre_s, roof, fixed).regime}"]
    tpot_ratio = None
    if t.n_generated > 2:  # at least two decode steps to time
        s = t.decode_step_spread
        cost = perf.decode_cost(spec, t.steps[-1].seq_len)
        tpot_ratio = s.median / step_s.median
        lines.append(f"{t.n_generated} tokens, each after {s.text(1e3, 'ms')} "
                     f"(×{tpot_ratio:.2f} the page's), {1 / s.median:.1f} tokens/s: "
                     f"{perf.pass_verdict(cost.flops, cost.bytes, s, roof, fixed).regime}")
    else:
        lines.append("the reply ended after its first token: no decode step to time (ask for "
                     "a longer answer)")
    lines.append(f"reply: {t.generated_text[:90]!r}")
    stories[prompt] = (t.ttft_s / trace.ttft_s, tpot_ratio)
    return "\n".join(lines)


views.LinkedText(story_of, value=LONGER, description="your prompt (Enter to run)",
                 pause_s=None)

# %% tags=["nbval-ignore-output"]
ttft_x, tpot_x = stories[LONGER]  # the longer prompt's TTFT and TPOT, ÷ the page's
tpot_x = tpot_x or 1.0  # (a reply of one token has no decode step: nothing grew there)
grows = (GROWS[2] if max(ttft_x, tpot_x) < 1.15 * min(ttft_x, tpot_x)
         else GROWS[0] if ttft_x > tpot_x else GROWS[1])
print(f"the longer prompt: TTFT ×{ttft_x:.1f}, time per token ×{tpot_x:.2f} → {grows}")

# %%
compare_prediction(prediction_grows, grows, options=GROWS,
                   hint="the prefill reads every prompt token in one pass; a decode step "
                        "reads the weights and every cached token's keys and values (46 kB each)")

# %% [markdown]
# A longer prompt is paid for once, in the wait for the first token; each token after it
# barely notices (the cache it reads grew by tens of kilobytes a token, against the weights'
# 538 MB). Type your own: a one-word prompt, a long document with a question at the end, a request
# for a list. Every figure the box prints is a lesson of the course.

# %% [markdown]
# ## Check yourself
#
# All three predictions were checked where the measurement came. One more, in words: a small
# company runs this model on a machine like yours for 20 users who chat at once, and asks
# which lever to pull first. Answer with the page's numbers: what each lever would buy them,
# what it would cost each user in waiting, and what it needs (a kernel, a second engine,
# replies that repeat their prompt). (Answers for teachers: TEACHERS.md.)
#
# ## Where next
#
# This is the end of the course. To go further: any OpenAI-compatible server through
# `viz.serve` ([10 · Load-testing a server](10_load_testing.ipynb)), your own model through
# `viz.load_model(...)` and every lesson again, and the glossary ([GLOSSARY.md](../GLOSSARY.md))
# and the rule on one page ([RULE.md](../RULE.md)). Back to the beginning:
# [00 · Start here](00_start_here.ipynb).

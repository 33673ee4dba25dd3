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
# # 07 · Capstone: your prompt, from text to answer
#
# Time to put it all together. In this lesson you send your own prompt through the whole
# pipeline of the course (tokens, one prefill pass, the decode loop with its KV cache), see
# every stage on one dashboard, and compare your machine with a recorded reference. At the end,
# a recap ties each measurement to the phase that produces it.

# %%
import tempfile
from pathlib import Path

import ipywidgets as widgets
import numpy as np

import viz
from viz import compare_prediction, perf, views
from viz.views import figure_output

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the very first pass pays set-up costs

# %% [markdown]
# ## Your prompt
#
# Write the question you want answered. `chat=True` wraps it in the model's chat template, so
# it answers as an assistant would.

# %%
my_prompt = "Give me three tips for a good night's sleep."  # ← try your own
trace = viz.record(lm, my_prompt, chat=True, max_new_tokens=24, label="you")
print(trace.generated_text)

# %% [markdown]
# ## See it: one dashboard
#
# From top to bottom: the summary figures, the tokens the model read and wrote, the step
# explorer (move the slider or press ▶: the text so far, the candidates for the next token,
# the KV cache and the step's latency), the KV cache's growth and the timeline.

# %%
def panel(fig):
    """A plotly figure inside a widget, so that it can sit in a dashboard."""
    out = widgets.Output()
    out.outputs = (figure_output(fig),)
    return out


def dashboard(trace):
    return widgets.VBox([widgets.HTML(views.summary_html(trace).html),
                         widgets.HTML(views.tokens_html(trace).html),
                         views.explorer_widget(trace),
                         panel(views.kv_figure(trace)), panel(views.timeline_figure(trace))])


# %% [markdown]
# Type another prompt in the box and press **record**: the dashboard is rebuilt, and `trace`
# now holds your new reply (run the cells below again to measure it).

# %% tags=["nbval-ignore-output"]
box = widgets.Text(value=my_prompt, description="prompt", layout={"width": "560px"})
button = widgets.Button(description="record")
board = widgets.VBox([dashboard(trace)])


def record_again(_):
    global trace
    trace = viz.record(lm, box.value, chat=True, max_new_tokens=24, label="you")
    board.children = [dashboard(trace)]


button.on_click(record_again)
widgets.VBox([widgets.HBox([box, button]), board])

# %% [markdown]
# ## Understand it: TTFT, TPOT and the whole wait
#
# The reader waits TTFT for the first token; TPOT is *defined* as the mean time per token
# after it, (end to end − TTFT) ÷ (tokens − 1). So TTFT + (tokens − 1) × TPOT gives back the
# end-to-end time by definition: the cell below only confirms that the library computes it
# that way. What the split is good for: each part belongs to one phase with its own limit
# (below), and the two numbers forecast the wait of a reply of another length, as long as
# TPOT holds for it (the last check of this lesson tests that).

# %%
n = trace.n_generated
rebuilt = trace.ttft_s + (n - 1) * trace.tpot_s
print(f"{n} tokens: TTFT + {n - 1} × TPOT = {rebuilt:.3f} s; measured end to end "
      f"{trace.timing.end_to_end_s:.3f} s")
print("the same:", np.isclose(rebuilt, trace.timing.end_to_end_s))

# %% [markdown]
# Behind each number sits one phase: TTFT holds the prefill pass over your prompt
# (lesson 03), TPOT one decode pass (lesson 04). What limits each on this machine? Count each
# pass's work (`perf.prefill_cost`, `perf.decode_cost`), time it several times (the prefill
# of your prompt five times, and every decode step of the reply), and apply the rule of
# lessons 03 and 04 (`perf.pass_verdict`) with this machine's peaks and its fixed cost per
# pass, both measured once per machine and reused (`perf.machine_peaks()`,
# `perf.fixed_cost(30)`).

# %% tags=["nbval-ignore-output"]
spec, peaks = lm.spec, perf.machine_peaks()
roof, fixed = perf.cached_peaks(), perf.fixed_cost(spec.n_layers)
again = [viz.record(lm, trace.prompt, chat=True, max_new_tokens=1, embeddings=False)
         for _ in range(4)]  # the same prefill, four more times
prefill_s = viz.Spread.of([t.timing.prefill_forward_s for t in [trace] + again])
step_s = trace.decode_step_spread  # the reply's decode passes: median and middle half
prefill = perf.prefill_cost(spec, len(trace.prompt_tokens))
step = perf.decode_cost(spec, trace.steps[-1].seq_len)
verdicts = {"prefill": perf.pass_verdict(prefill.flops, prefill.bytes, prefill_s, roof, fixed),
            "decode": perf.pass_verdict(step.flops, step.bytes, step_s, roof, fixed)}
print(peaks.status)

# %% tags=["nbval-ignore-output"]
print(perf.yardsticks())  # the peaks and the fixed cost, as every lesson prints them
print(f"TTFT ← prefill of {len(trace.prompt_tokens)} tokens, {prefill.flops / 1e9:.1f} GFLOP, "
      f"{prefill.bytes / 1e6:.0f} MB: {prefill_s.text(1e3, 'ms')}\n  {verdicts['prefill']}")
print(f"TPOT ← one decode step, {step.flops / 1e9:.2f} GFLOP, {step.bytes / 1e6:.0f} MB: "
      f"{step_s.text(1e3, 'ms')}\n  {verdicts['decode']}")

# %% [markdown]
# Each word was printed by the rule from your numbers, so it can differ on another machine
# (lesson 03 set its prefill verdicts beside an H100's, computed from the datasheet, and
# printed the prompt lengths where the two disagree). What each word says about that phase,
# where the rule gave it:

# %% tags=["nbval-ignore-output"]
MEANS = {"overhead-bound": "at least half the pass is the fixed cost every pass pays: fewer "
                           "bytes or FLOPs would barely shorten it",
         "memory-bound": "reading the bytes is the longer floor: no pass beats bytes ÷ read "
                         "speed, and fewer bytes per weight lower it (lesson 08)",
         "compute-bound": "the arithmetic is the longer floor: no pass beats FLOPs ÷ peak "
                          "(a comparison of floors, not of shares: a short prompt's pass can "
                          "still spend a large share of its time on what it pays once: "
                          "below, the part that did not grow)"}
for phase, v in verdicts.items():
    words = v.between or (v.regime,)  # too close to call: either word can be the right one
    print(f"{phase}: {v.regime}; " + "; or ".join(f"{w}: {MEANS[w]}" if v.between else MEANS[w]
                                                   for w in words))

# %% [markdown]
# ### A longer prompt
#
# Your prompt was read by one pass over all its tokens. `perf.prompt_length_sweep` times the
# prefill of prompts of exactly as many tokens as yours, and of four times as many, three
# times each. Lesson 00 asked how much longer the wait for the first token grows; here the
# question is the prefill's *rate*, the prompt tokens it reads per second.
#
# **Predict.** With a prompt four times as long, the prefill's tokens per second will be...

# %%
RATE = ["lower", "about the same (within 15 %)", "higher"]
prediction_rate = None  # ← your guess: one of RATE, copied exactly

# %% tags=["nbval-ignore-output"]
k = len(trace.prompt_tokens)
lengths = perf.prompt_length_sweep(lm, [k, 4 * k], repeats=3, progress=False)
short, long = lengths.spread("prefill_forward_s")
times = long / short  # the ratio, with the worst case of both spreads
rate = viz.Spread.exact(4) / times  # tokens per second at 4k ÷ at k
rate_word = viz.band(rate, [0.85, 1.15], RATE)
print(f"{k} tokens: {short.text(1e3, 'ms')}; {4 * k} tokens: {long.text(1e3, 'ms')}")
print(f"four times the tokens: ×{times.median:.2f} the time ({times.low:.2f}–{times.high:.2f}×),"
      f" so ×{rate.median:.2f} the tokens per second ({rate.low:.2f}–{rate.high:.2f}×) → "
      f"{rate_word}")

# %%
compare_prediction(prediction_rate, rate_word, options=RATE,
                   hint="split a pass into a part that does not grow with its length and a part "
                        "in proportion to its tokens: over how many tokens is the first part "
                        "spread?")

# %% [markdown]
# A pass pays part of its time once, whatever its length (the fixed cost, and the weights,
# read once for all its tokens), and the rest grows with the tokens. If the time is that
# line, the part that did not grow is (4 × the short time − the long time) ÷ 3; set it beside
# a pass of one token, a decode step:

# %% tags=["nbval-ignore-output"]
once = (short.scaled(4) - long).scaled(1 / 3)  # the line's intercept, with both spreads
print(f"the part that did not grow: {once.text(1e3, 'ms')}; one decode step "
      f"{step_s.text(1e3, 'ms')}" if once.median > 0 else "the time grew faster than the "
      "tokens: on this machine no part of the pass stayed fixed")
print(f"prefill tokens/s: {k / short.median:.0f} at {k} tokens, {4 * k / long.median:.0f} at "
      f"{4 * k} tokens")

# %% [markdown]
# The part that did not grow need not equal a decode step: the line through two points calls
# fixed whatever did not grow between the two lengths, and a prefill runs other kernels than a
# decode step (matrix × matrix, attention over the prompt), so the two only show the same
# kind of cost, paid once per pass.
#
# Lesson 03 draws the whole line, TTFT against the prompt's length. The last line shows what
# it means for a rate: the part paid once is spread over more tokens, so the prefill's tokens
# per second change with the prompt's length too.
#
# ## Measure it: your machine beside a recorded reference
#
# The course ships reference recordings in `viz/data/`: a reply recorded on the project's own
# 2-core CPU (`cpu-chat-trace`, the course model itself), and one of the course model's shape
# recorded on an NVIDIA H200 (random weights: real timings, meaningless text). The CPU's is B,
# the reference in the views below: two wall clocks of the same kind. The GPU's is not: its
# wall clock is the host's (lesson 04), so the GPU is set beside your machine by its own
# figures, printed first.

# %%
reference = perf.load_reference("cpu-chat-trace")  # the project's 2-core CPU, the course model
print("recorded replies shipped:", ", ".join(n for n in perf.list_references()
                                             if n.endswith("-trace")))
print(f"B: the project's {reference.environment.device_name} ({reference.label}), "
      f"{reference.environment.dtype}")

# %% tags=["nbval-ignore-output"]
print(perf.gpu_provenance())
g = perf.graph_steps()[0]  # the course model's shape on the H200, batch 1 (lessons 04 and 13)
print(f"your decode step {step_s.text(1e3, 'ms')}; the H200's without its host: its "
      f"{g.kernels:,} kernels summed {g.busy.text(1e3, 'ms', 2)}, replayed as a CUDA graph "
      f"{g.graph.text(1e3, 'ms', 2)}: yours ÷ the graph step "
      f"×{step_s.median / g.graph.median:.0f}")
gpu_reply = perf.gpu_reference("trace")
host = perf.gpu_fixed_cost(gpu_reply.model.n_layers)  # the host's: a model as deep, 64 wide
walls = [wall.median * 1e3 for _, wall, _ in perf.eager_walls()]
print(f"its recorded reply ran eager at {gpu_reply.decode_step_spread.text(1e3, 'ms')} a step: "
      f"the host, its Python launching {g.kernels:,} kernels one by one. The host's launch cost "
      f"for a step this deep (a model as deep, 64 wide) was {host.text(1e3, 'ms')} in the "
      f"run lesson 08 reads; the same eager step took {min(walls):.1f}–{max(walls):.1f} ms across "
      f"that session's files: the host's pace, not the GPU's, so GPUs are compared by their "
      f"kernels summed (lesson 04)")

# %% [markdown]
# A is your reply, B the reference. Decode (TPOT, decode tokens/s) compares whatever the
# prompts; TTFT grows with the prompt's length, and prefill tokens/s changes with it too (just
# above), so compare those only for prompts of similar length (the next line checks yours). Each figure in the table is one
# reply's: set the decode steps' spreads side by side before reading much into a ratio. Two
# machines sold under the same name still differ: another processor behind the name, another
# memory speed, other work running at the time (B's label gives the load it was recorded
# under: the machine's load average, about how many processes wanted a core).

# %% tags=["nbval-ignore-output"]
ka, kb = len(trace.prompt_tokens), len(reference.prompt_tokens)
print(f"prompts of {ka} (A) and {kb} (B) tokens: " + ("similar, prefill can be compared too"
      if 0.8 <= ka / kb <= 1.25 else "too different to compare prefill or TTFT"))
mine, theirs = trace.decode_step_spread, reference.decode_step_spread
print(f"decode step: A {mine.text(1e3, 'ms')}, B {theirs.text(1e3, 'ms')}: "
      + ("the same within the spreads" if mine.overlaps(theirs) else
         f"B ÷ A = {theirs.median / mine.median:.2f}, beyond the spreads"))
views.compare_html(trace, reference)

# %% tags=["nbval-ignore-output"]
views.compare_figure(trace, reference)

# %% [markdown]
# To keep or share your reply, write every view of it into one HTML file that opens in any
# browser, offline (it is written to your temporary folder, not into the course):

# %% tags=["nbval-ignore-output"]
report = views.write_report(trace, Path(tempfile.gettempdir()) / "my_reply_report.html",
                            other=reference)
print(f"wrote {report} ({report.stat().st_size / 1e6:.1f} MB): open it in a browser")

# %% [markdown]
# ## Recap: what the course measured
#
# - **Tokens** (lesson 01): the model reads and writes tokens, not words; your prompt above is
#   the chips at the top of the dashboard.
# - **Next-token prediction** (lesson 02): each step scores every token in the vocabulary and
#   picks one; the explorer shows the candidates at each step.
# - **TTFT ↔ prefill** (lesson 03): one pass over the whole prompt, every weight read once
#   for all its tokens; what limits it on your machine is the verdict on the `TTFT ←` line
#   above, with the comparisons that decided it.
# - **Tokens per second ↔ decode** (lesson 04): one pass per token, every weight read for
#   that one token; its verdict is on the `TPOT ←` line. Where neither roof is near, the
#   verdict itself says what the rest of the step is: the fixed cost and kernels running
#   below the roofs (lesson 08 measures both across models).
# - **KV cache** (lesson 05): decode feeds one token per step because the keys and values of
#   every earlier token are stored; less work per step (lesson 05 measured how much less),
#   paid for in memory that grows with every token.
# - **Batching** (lesson 06): one weight read can serve several requests at once; lesson 06
#   measured, on your machine, how much that raised the tokens per second of all of them
#   together and how much longer each one waited per token; the KV caches, read per
#   request, are what batching cannot share.

# %% [markdown]
# ## Check yourself
#
# A user says: "The first words appear at once, but then the text trickles out." Their
# replies run to about 200 tokens. Your 24-token reply's TTFT and TPOT forecast such a reply:
# TTFT + 199 × TPOT. The next cell records one, 200 tokens for your prompt. (A machine can run
# faster or slower from one minute to the next: the forecast's range also takes the long reply's
# own first 24 steps, so that a change of the machine's speed is not taken for growth.)
#
# **Predict.** The measured 200-token reply will take...

# %%
REPLY = ["more than 10 % less than the forecast", "within 10 % of the forecast",
         "more than 10 % longer than the forecast"]
prediction_reply = None  # ← your guess: one of REPLY, copied exactly

# %% tags=["nbval-ignore-output"]
forecast = trace.ttft_s + 199 * trace.tpot_s  # from the 24-token reply
middle = trace.decode_step_spread  # the 24-token reply's decode steps: median, middle half
low, high = (trace.ttft_s + 199 * trace.tpot_s * x / middle.median for x in (middle.low, middle.high))
reply_200 = viz.record(lm, trace.prompt, chat=True, max_new_tokens=200, stop_at_eos=False,
                       embeddings=False)
took = reply_200.timing.end_to_end_s
first, last = (viz.Spread.of([s.forward_s for s in part])
               for part in (reply_200.steps[1:25], reply_200.steps[-24:]))
print(f"forecast {forecast:.2f} s, measured {took:.2f} s ({took / forecast - 1:+.0%}); decode "
      f"steps 1–24 {first.text(1e3, 'ms')}, the last 24 {last.text(1e3, 'ms')}")
# The machine's moment: the same forecast from this reply's own first 24 steps. Where the
# machine ran faster or slower than during the short reply, the forecast's spread covers both.
moment = trace.ttft_s + 199 * trace.tpot_s * first.median / middle.median
forecast_spread = viz.Spread(forecast, min(low, moment), max(high, moment), middle.runs,
                             derived=True)
reply = viz.band(viz.Spread.exact(took) / forecast_spread, [0.9, 1.1], REPLY)
print(f"the forecast from the 24 steps' middle half, and from this reply's first 24 steps: "
      f"{forecast_spread.low:.2f}–{forecast_spread.high:.2f} s → {reply}")

# %%
compare_prediction(prediction_reply, reply, options=REPLY,
                   hint="what does each decode step read, which part of it grows as the reply "
                        "gets longer (lesson 05), and how large is that part next to the rest?")

# %% [markdown]
# Three changes are on the table for that user; each is a what-if on the reply just measured:
#
# - **prefill twice as fast**: the prefill pass takes half its time;
# - **no fixed cost**: every pass (the prefill and 199 decode steps) loses its fixed cost;
# - **weights at full read speed**: each decode step's time beyond its fixed cost shrinks
#   to its memory floor (the step's bytes read at the peak read speed).

# %% tags=["nbval-ignore-output"]
FIXES = ["prefill twice as fast", "no fixed cost", "weights at full read speed"]
step_200 = reply_200.decode_step_spread
floor_200 = perf.decode_cost(spec, reply_200.steps[100].seq_len).bytes / roof.bytes_per_s
beyond = max(0.0, step_200.median - fixed.median - floor_200)
saved_s = dict(zip(FIXES, [prefill_s.median / 2, 200 * fixed.median, 199 * beyond]))
for fix, saved in saved_s.items():
    print(f"{fix:>27}: saves {saved:5.2f} s of {took:.1f} s ({saved / took:4.0%})")

# %% [markdown]
# So the number to work on for that user is the time per token: the trickle is decode, paid
# 199 times. Which part of it to attack is the verdict on the `TPOT ←` line, and the what-ifs
# above put seconds on it.
#
# ## Where to go from here
#
# You have followed one reply from text to answer, and measured each phase on your own
# machine. Next, [08 · The memory wall →](08_memory_wall.ipynb): why decode speed is set by
# the bytes moved per token, measured across models of many sizes, and what moving fewer
# bytes buys. Or go back to [00 · Start here](00_start_here.ipynb) to see the first lesson
# with new eyes, or to the [course index](../README.md) for every lesson and the library
# behind them.

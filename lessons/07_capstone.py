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
# ## Understand it: two numbers explain the whole wait
#
# The reader waits TTFT for the first token, then one TPOT for each token after it. That is
# not an approximation but how TPOT is defined, so the two numbers rebuild the total time:

# %%
n = trace.n_generated
rebuilt = trace.ttft_s + (n - 1) * trace.tpot_s
print(f"{n} tokens: TTFT + {n - 1} × TPOT = {rebuilt:.3f} s; measured end to end "
      f"{trace.timing.end_to_end_s:.3f} s")
print("the same:", np.isclose(rebuilt, trace.timing.end_to_end_s))

# %% [markdown]
# Behind each number sits one phase. Which one took most of your reply's time?
#
# **Predict.** For the reply above, which took longer in total: the prefill (until the first
# token) or the decode steps (all the tokens after it)?

# %%
PHASES = ["prefill", "decode"]
prediction_phase = None  # ← your guess: "prefill" or "decode"

# %%
decode_total = trace.timing.end_to_end_s - trace.ttft_s
longer_phase = "prefill" if trace.ttft_s > decode_total else "decode"
print(f"prefill {trace.ttft_s * 1e3:.0f} ms, decode {decode_total * 1e3:.0f} ms "
      f"({n - 1} steps): {longer_phase} took longer")

# %%
compare_prediction(prediction_phase, longer_phase, options=PHASES,
                   hint="one pass over the prompt, against one pass per token after it")

# %% [markdown]
# And what limits each phase on this machine? Divide the counted work by the measured time,
# compare it with this machine's peaks (`perf.cached_peaks()`, measured once and cached), and
# apply the rule of lessons 03 and 04 (with the fixed cost per pass of a 30-layer model 64
# wide).
#
# **Predict.** What will the rule say about your decode steps?

# %%
prediction_decode = None  # ← your guess: "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
spec, peaks = lm.spec, perf.cached_peaks()
fixed_s = perf.measure_overhead([spec.n_layers], spec.dtype, max_new_tokens=8,
                                repeats=1)[0].at(spec.n_layers)
prefill = perf.prefill_cost(spec, len(trace.prompt_tokens))
step = perf.decode_cost(spec, trace.steps[-1].seq_len)
prefill_s = trace.timing.prefill_forward_s
step_s = float(np.median([s.forward_s for s in trace.steps[1:]]))
regimes = {"prefill": perf.pass_regime(prefill.flops, prefill.bytes, prefill_s, peaks, fixed_s),
           "decode": perf.pass_regime(step.flops, step.bytes, step_s, peaks, fixed_s)}
print(peaks.how)

# %% tags=["nbval-ignore-output"]
print(f"TTFT ← prefill of {len(trace.prompt_tokens)} tokens: {prefill.flops / 1e9:.1f} GFLOP "
      f"in {prefill_s * 1e3:.0f} ms = {prefill.flops / prefill_s / 1e9:.1f} GFLOP/s, "
      f"{prefill.flops / prefill_s / peaks.flops_per_s:.0%} of the peak "
      f"{peaks.flops_per_s / 1e9:.1f} GFLOP/s → {regimes['prefill']}")
print(f"TPOT ← one decode step: {step.bytes / 1e6:.0f} MB in {step_s * 1e3:.0f} ms = "
      f"{step.bytes / step_s / 1e9:.1f} GB/s, {step.bytes / step_s / peaks.bytes_per_s:.0%} of "
      f"the read peak {peaks.bytes_per_s / 1e9:.1f} GB/s → {regimes['decode']}")
print(f"fixed cost per pass {fixed_s * 1e3:.1f} ms; "
      f"KV cache at the end: {trace.steps[-1].kv_bytes:,} bytes for {trace.steps[-1].seq_len} tokens")

# %%
compare_prediction(prediction_decode, regimes["decode"], options=list(perf.REGIMES),
                   hint="lesson 04 applied the same rule to a decode step: fixed cost against "
                        "half the step, then the two floors")

# %% [markdown]
# ## Measure it: your machine beside a recorded reference
#
# The course ships reference recordings in `viz/data/`. When one was made on a GPU, we use it;
# otherwise the project's own CPU recording stands in.

# %%
names = [name for name in perf.list_references() if name.endswith("-trace")]  # recorded replies
gpu = [name for name in names if any(w in name for w in ("gpu", "h200", "cuda"))]
reference = perf.load_reference(gpu[0] if gpu else "cpu-chat-trace")
print("recorded replies shipped:", ", ".join(names))
if gpu:
    print(f"comparing with {gpu[0]}: a GPU ({reference.environment.device_name}), "
          "so expect both phases to be far faster than on your CPU.")
else:
    print(f"no GPU recording ships yet: comparing with cpu-chat-trace, recorded on the project's "
          f"{reference.environment.device_name}: {reference.label}")

# %% [markdown]
# A is your reply, B the reference. The prompts differ, so compare the *rates* (prefill
# tokens/s, decode tokens/s and TPOT) rather than TTFT, which grows with the prompt's length.

# %% tags=["nbval-ignore-output"]
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
# - **TTFT ↔ prefill** (lesson 03): one pass over the whole prompt, many tokens per weight
#   read; what limits it on your machine is the rule's verdict on the `TTFT ←` line above, next
#   to the share of the arithmetic peak it reached.
# - **Tokens per second ↔ decode** (lesson 04): one pass per token, every weight read for one
#   token; its verdict is on the `TPOT ←` line, next to the share of the read peak the weights
#   streamed at. A fixed cost per pass and the gap between achieved and peak bandwidth make up
#   the rest of the step (lesson 08 measures both).
# - **KV cache** (lesson 05): decode only feeds one token because the keys and values of
#   every earlier token are stored; the same text, far less work, paid for in memory that grows
#   with every token.
# - **Batching** (lesson 06): one weight read can serve many requests, raising everyone's
#   tokens per second while each request waits longer per token; the KV caches, read per
#   request, are what batching cannot share.

# %% [markdown]
# ## Check yourself
#
# **Predict.** A user says: "The first words appear at once, but then the text trickles out."
# From your own TTFT and TPOT, how many seconds would a 32-token reply to your prompt take,
# end to end? It is recorded next, with the end-of-sequence token ignored so that it is
# exactly 32 tokens long.

# %%
prediction_32 = None  # ← your guess, in seconds

# %%
longer = viz.record(lm, my_prompt, chat=True, max_new_tokens=32, stop_at_eos=False,
                    embeddings=False)
print(f"{longer.n_generated} tokens: {longer.timing.end_to_end_s:.2f} s end to end "
      f"(TTFT {longer.ttft_s * 1e3:.0f} ms, TPOT {longer.tpot_s * 1e3:.0f} ms)")

# %%
compare_prediction(prediction_32, longer.timing.end_to_end_s, unit="s", rel_tol=0.2,
                   hint="TTFT once, then one TPOT for each of the other 31 tokens (in seconds)")

# %% [markdown]
# Which number would you work on for that user? The trickle is the time per token: decode,
# whose limit the `TPOT ←` line above names on your machine.
#
# ## Where to go from here
#
# You have followed one reply from text to answer, and measured each phase on your own
# machine. Next, [08 · The memory wall →](08_memory_wall.ipynb): why decode speed is set by
# the bytes moved per token, measured across models of many sizes, and what moving fewer
# bytes buys. Or go back to [00 · Start here](00_start_here.ipynb) to see the first lesson
# with new eyes, or to the [course index](../README.md) for every lesson and the library
# behind them.

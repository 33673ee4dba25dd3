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
from viz import perf, views
from viz.views import figure_output

lm = viz.load_model()

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
# Behind each number sits one phase and one limit. Prefill's work is arithmetic (lesson 03),
# decode's is reading the weights and the cache (lesson 04). Divide the counted work by the
# measured time:

# %%
spec = lm.spec
prefill = perf.prefill_cost(spec, len(trace.prompt_tokens))
step = perf.decode_cost(spec, trace.steps[-1].seq_len)
print(f"TTFT    ← prefill of {len(trace.prompt_tokens)} tokens: {prefill.flops / 1e9:.1f} GFLOP "
      f"in {trace.timing.prefill_forward_s * 1e3:.0f} ms = "
      f"{prefill.flops / trace.timing.prefill_forward_s / 1e9:.1f} GFLOP/s")
print(f"TPOT    ← one decode step: {step.bytes / 1e6:.0f} MB read in {trace.tpot_s * 1e3:.0f} ms = "
      f"{step.bytes / trace.tpot_s / 1e9:.1f} GB/s")
print(f"KV cache at the end: {trace.steps[-1].kv_bytes:,} bytes for {trace.steps[-1].seq_len} tokens")

# %% [markdown]
# ## Measure it: your machine beside a recorded reference
#
# The course ships reference recordings in `viz/data/`. When one was made on a GPU, we use it;
# otherwise the project's own CPU recording stands in.

# %%
names = perf.list_references()
gpu = [name for name in names if any(w in name for w in ("gpu", "h200", "cuda"))]
reference = perf.load_reference(gpu[0] if gpu else "cpu-chat-trace")
print("references shipped:", ", ".join(names))
if gpu:
    print(f"comparing with {gpu[0]}: a GPU ({reference.environment.device_name}), "
          "so expect both phases to be far faster than on your CPU.")
else:
    print(f"no GPU recording ships yet: comparing with cpu-chat-trace, recorded on the project's "
          f"{reference.environment.device_name} with {reference.environment.threads} thread(s).")

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
# - **TTFT ↔ prefill ↔ arithmetic** (lesson 03): one pass over the whole prompt, many tokens
#   per weight read, so its limit is how fast the machine computes (the GFLOP/s line above).
# - **Tokens per second ↔ decode ↔ memory** (lesson 04): one pass per token, every weight
#   read for one token, so its limit is how fast the weights stream in (the GB/s line above).
# - **KV cache** (lesson 05): decode only feeds one token because the keys and values of
#   every earlier token are stored; the same text, far less work, paid for in memory that grows
#   with every token.
# - **Batching** (lesson 06): one weight read can serve many requests, raising everyone's
#   tokens per second while each request waits a little longer per token; the KV caches, read
#   per request, are what batching cannot share: the memory wall.

# %% [markdown]
# ## Check yourself

# %%
from viz import check, multiple_choice

# %% [markdown]
# **1.** A user complains: "I press Enter and nothing happens for a long time; once the
# answer starts, it flows nicely." Which number is poor, and which phase should be made faster?

# %%
answer_1 = None  # ← replace None with one of the options, copied exactly
multiple_choice(answer_1, ["TTFT: speed up prefill", "TPOT: speed up decode",
                           "KV cache: make it bigger"],
                correct="TTFT: speed up prefill",
                why="the wait before the first token is the prefill pass over the whole prompt "
                    "(a long prompt makes it longer).")

# %% [markdown]
# **2.** Using your own TTFT and TPOT (the summary card, or `trace.ttft_s` and
# `trace.tpot_s`), estimate how many seconds a 200-token answer to your prompt would take.

# %%
answer_2 = None  # ← replace None with a number of seconds
check(answer_2, trace.ttft_s + 199 * trace.tpot_s, rel_tol=0.05, unit="s",
      hint="TTFT for the first token, then one TPOT for each of the other 199")

# %% [markdown]
# **3.** Another user says: "The first words appear at once, but then the text trickles out."
# What limits the number that is poor here?

# %%
answer_3 = None  # ← replace None with one of the options, copied exactly
multiple_choice(answer_3, ["arithmetic speed (FLOP/s)", "memory bandwidth (bytes/s)",
                           "the size of the vocabulary"],
                correct="memory bandwidth (bytes/s)",
                why="streaming speed is decode, and each decode step reads every weight for one "
                    "token: it waits on memory, not on arithmetic.")

# %% [markdown]
# ## Where to go from here
#
# You have followed one reply from text to answer, and measured each phase on your own
# machine. Go back to [00 · Start here](00_start_here.ipynb) to see the first lesson with new
# eyes, or to the [course index](../README.md) for every lesson and the library behind them.
# The next topic is the memory wall: how to move fewer bytes for every token.

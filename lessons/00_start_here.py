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
# A language model writes its reply one token (a word or a piece of a word) at a time. This
# course runs a real model, **SmolLM2-135M-Instruct**, on your own machine, and measures each
# step of how it answers. You will see that every reply is made in two phases:
#
# - **prefill**: the model reads your whole prompt in one pass and picks the first token;
# - **decode**: then it writes one more token per pass, each pass depending on the one before.
#
# Each lesson follows four beats: *see it* (an interactive view), *understand it* (a few lines
# of code), *measure it* (a number from your machine) and *check yourself* (an exercise that
# checks your answer). Run the cells from top to bottom with **Shift+Enter**, or use
# **Run ▸ Run All Cells**. Nothing here uses the network.

# %% [markdown]
# ## The model on the table
#
# `viz.load_model()` loads the default model from a local cache (set up by `make lab`).

# %%
import viz

lm = viz.load_model()
lm

# %% [markdown]
# Its shape: a stack of identical layers, each with attention heads. *KV heads* fewer than heads
# means the model shares keys and values between heads (grouped-query attention, lesson 05).

# %%
spec = lm.spec
print(f"layers            {spec.n_layers}")
print(f"attention heads   {spec.n_heads} per layer ({spec.n_kv_heads} key/value heads)")
print(f"parameters        {spec.n_params:,}")
print(f"weight bytes      {spec.weight_bytes:,} ({spec.dtype}, {spec.weight_bytes / 1e6:.0f} MB)")

# %% [markdown]
# Every parameter is one number of `dtype`: the weight bytes are just parameters × bytes per
# number. Check it:

# %%
print(spec.n_params * spec.bytes_per_element == spec.weight_bytes)

# %% [markdown]
# ## A first reply, generated live
#
# `viz.record` asks the model a question and records every step it takes. With the default
# settings it always picks the most likely token (greedy), so the reply is the same every time.

# %%
trace = viz.record(lm, "What is the capital of France?", chat=True, max_new_tokens=24)
print(trace.generated_text)

# %% [markdown]
# The summary says how long it took on *your* machine. **TTFT** (time to first token) is the
# prefill; **TPOT** (time per output token) is the average decode step.

# %%
print(trace.summary())

# %% [markdown]
# ## See it: one bar per forward pass
#
# Step 0 is prefill (blue): it processes every prompt token at once. Each decode step (orange)
# processes a single new token. Your timings will differ from anyone else's.

# %% tags=["nbval-ignore-output"]
import plotly.graph_objects as go

from viz.views.palette import CHOSEN, PHASE

steps = trace.steps
colours = [PHASE[s.phase] for s in steps]
bars = go.Bar(x=[s.index for s in steps], y=[s.forward_s * 1000 for s in steps],
              marker_color=colours, hovertext=[repr(s.token_text) for s in steps])
latency = go.Figure(bars, layout=dict(title="Forward pass per step", height=320,
                                      xaxis_title="step", yaxis_title="milliseconds"))
latency

# %% [markdown]
# ### Inspect a step
#
# Move the slider: the chosen step turns red and the line above the chart says which token it
# produced and how sure the model was.

# %%
import ipywidgets as widgets

step_slider = widgets.IntSlider(value=0, min=0, max=len(steps) - 1, description="step")
step_info = widgets.HTML()
explorer = go.FigureWidget(latency)


def show_step(change=None):
    i = step_slider.value
    explorer.data[0].marker.color = [CHOSEN if j == i else c for j, c in enumerate(colours)]
    step_info.value = (f"step {i} ({steps[i].phase}): chose <b>{steps[i].token_text!r}</b> "
                       f"with probability {steps[i].prob:.2f}")


# %% tags=["nbval-ignore-output"]
step_slider.observe(show_step, names="value")
show_step()
widgets.VBox([step_slider, step_info, explorer])

# %% [markdown]
# ## Check yourself
#
# Replace `None` with your answer and run the cell: it tells you whether you are right.

# %%
from viz.exercises import check, multiple_choice

# %% [markdown]
# **1.** The reply has `trace.n_generated` tokens. How many forward passes did the model run
# to write it? (Count the bars.)

# %%
answer_1 = None
check(answer_1, len(trace.steps), hint="one pass over the prompt, then one per new token")

# %% [markdown]
# **2.** Which phase chose the reply's first token?

# %%
answer_2 = None
multiple_choice(answer_2, ["prefill", "decode"], correct=trace.steps[0].phase,
                why="the pass over the whole prompt already ends with a next-token choice.")

# %% [markdown]
# ## Next
#
# [01 · From text to vectors →](01_from_text_to_vectors.ipynb): how the prompt becomes the
# numbers the model reads.

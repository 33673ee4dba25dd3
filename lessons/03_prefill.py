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
# # 03 · Prefill
#
# Before writing a word, a model reads your prompt in **one** forward pass over all its
# tokens, the *prefill*, which ends with a score for every possible next token. The wait until
# the reply's first token appears is the **time to first token (TTFT)**.
#
# You will check that one pass over N tokens gives what N separate passes would, time TTFT
# against prompt length, and find whether arithmetic or memory limits a prefill, here and on a
# GPU.

# %%
import numpy as np
import torch

import viz
from viz import perf, views

lm = viz.load_model(device="cpu")  # the processor whose limits the lesson measures
spec = lm.spec
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the very first pass pays set-up costs

# %% [markdown]
# Try your own prompt (a few dozen tokens at most); it goes in as plain text, not as a chat.

# %%
my_prompt = "The capital of France is Paris. The capital of Italy is"  # ← try your own
trace = viz.record(lm, my_prompt, max_new_tokens=8)
print(f"{len(trace.prompt_tokens)} prompt tokens → {trace.generated_text!r}")

# %% [markdown]
# ## See it: the whole prompt in one pass
#
# Each step of the recording says how many tokens its pass was fed (`step.input_tokens`): the
# prefill (step 0) the whole prompt, each later step one token (decode, the next lesson).

# %%
for s in trace.steps[:4]:
    print(f"step {s.index} ({s.phase:7}): fed {s.input_tokens:2} tokens, "
          f"sequence now {s.seq_len:2} tokens, chose {s.token_text!r}")

# %% [markdown]
# Top, on a time axis: tokenizing (grey), the prefill (blue), a line at the first token (the
# TTFT), then one-token decode steps (orange). Below, each step's latency; hover a bar for its
# duration. One run, with no spread.

# %% tags=["nbval-ignore-output"]
display(views.summary_html(trace))
views.timeline_figure(trace)

# %% [markdown]
# ### Drag the prompt length
#
# Each slider position times a real prefill of that many tokens and adds a point (the big
# dot: your last choice). Each point is one run, so a busy moment on the CPU puts it off the
# curve; the sweep below repeats each length.

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import plotly_layout
from viz.views import palette
from viz.views import LinkedView

measured = {}  # prompt tokens → a one-token recording of that length


# %%
def prefill_chart(values):
    n = values["prompt tokens"]
    if n not in measured:  # a real prefill of exactly n tokens, on this machine
        measured[n] = viz.record(lm, perf.prompt_of_length(lm.tokenizer, n), max_new_tokens=1,
                                 embeddings=False)
    xs = sorted(measured)
    fig = go.Figure(go.Scatter(x=xs, y=[measured[k].ttft_s * 1000 for k in xs], mode="markers",
                               marker={"color": palette.PREFILL, "size": 9}, name="measured"))
    fig.add_scatter(x=[n], y=[measured[n].ttft_s * 1000], marker={"color": palette.CHOSEN, "size": 15},
                    name="your choice")
    return fig.update_layout(**plotly_layout(
        f"{n} prompt tokens: TTFT {measured[n].ttft_s * 1000:.0f} ms", height=350,
        xaxis={"title": "prompt tokens", "rangemode": "tozero"},
        yaxis={"title": "TTFT (ms)", "rangemode": "tozero"}))


# %%
for n in (16, 128, 192):  # three lengths measured before you drag: the chart starts with a shape
    prefill_chart({"prompt tokens": n})
length = widgets.IntSlider(value=64, min=8, max=192, step=8, description="prompt tokens",
                           continuous_update=False, style={"description_width": "initial"})
LinkedView({"prompt tokens": length}, [length], prefill_chart)

# %% [markdown]
# ## Understand it: one layer, drawn
#
# The model stacks 30 identical layers of mostly matrix products: seven with weight matrices,
# two more inside attention. N prompt tokens enter a layer as a matrix **X** of N rows, one
# per token's vector (lesson 01). In the **attention** half, three weight matrices turn X into
# each token's **query** (what it looks for), **key** (what it offers) and **value** (what it
# hands over). Each query is compared with the keys (`scores = Q·Kᵀ`), a softmax (lesson 02)
# turns the scores into weights, and these mix the values; a fourth weight matrix, **W_o**,
# joins the heads' results. The **MLP** half: *gate* and *up* side by side, an element-wise
# SiLU, then *down* back to the model's width.
#
# The figure draws one layer to this model's shapes (log-scale sides). Left, your prefill:
# matrix × matrix, each weight read used once per prompt token. Right, a decode step: vector ×
# matrix, each weight used once per read; its query meets the keys and values kept from
# earlier passes, the **KV cache** (orange, lesson 05).

# %%
views.layer_diagram_figure(spec, len(trace.prompt_tokens), trace.steps[-1].seq_len)

# %% [markdown]
# Counted: FLOPs per layer, and FLOPs per byte of weights read, the ratio this lesson and the
# next turn on.

# %%
layer = views.layer_diagram_data(spec, len(trace.prompt_tokens), trace.steps[-1].seq_len)
for phase in ("prefill", "decode"):
    print(f"{phase:7}: {layer.flops(phase) / 1e6:5.1f} MFLOP per layer, "
          f"{layer.flops(phase) / layer.weight_bytes():.2f} FLOP per byte of weights read")

# %% [markdown]
# ### One pass, every position at once
#
# Attention is *causal*: token *k*'s row sees only tokens 0 … *k*, so it ends up as if the
# prompt had stopped at token *k* (up to rounding).
#
# To check: one pass over the whole prompt, keeping every position's scores (logits), against
# N passes, each one token longer, keeping each one's last position.

# %%
ids, n = torch.tensor([trace.prompt_ids]), len(trace.prompt_ids)
with torch.inference_mode():
    together = lm.model(ids).logits[0]  # ONE pass: a row of scores per position
    apart = torch.stack([lm.model(ids[:, :k]).logits[0, -1]  # N passes, growing by one
                         for k in range(1, n + 1)])
print(f"one pass: {tuple(together.shape)};  N passes: {tuple(apart.shape)}")
print("same scores at every position, up to rounding:", torch.allclose(together, apart, atol=1e-3))

# %% [markdown]
# The N passes repeat work (the first tokens go through every pass), and each reads all the
# weights.
#
# **Predict.** How many times as long as the one pass will the N passes take? (N is your
# prompt's length, the first number printed above.)

# %%
prediction_passes = None  # ← your guess: (time of the N passes) ÷ (time of the one pass)

# %% tags=["nbval-ignore-output"]
with torch.inference_mode():  # perf.kernel_spread: runs after a warm-up, their median and spread
    one = perf.kernel_spread(lambda: lm.model(ids), repeats=5)
    many = perf.kernel_spread(lambda: [lm.model(ids[:, :k]) for k in range(1, n + 1)], repeats=2)
passes_x, rows_x = many / one, (n + 1) / 2  # N passes ÷ one; their token rows ÷ the one pass's
print(f"one pass {one.text(1e3, 'ms')};  {n} passes {many.text(1e3, 'ms')}: "
      f"{passes_x.text(unit='times')}")
print(f"they push {rows_x:.1f}× as many token rows through the layers and read the weights {n}× "
      f"as often: the time is nearer the " + ("passes'" if passes_x.median > (n * rows_x) ** 0.5
                                              else "token rows'") + " ratio")

# %%
from viz import compare_prediction

compare_prediction(prediction_passes, passes_x.median, rel_tol=0.25,
                   hint="count, for each way, the passes and the token rows that go through the "
                        "layers; then ask which of the two a short pass's time follows")

# %% [markdown]
# A ratio near N says a short pass pays much of its time whatever its length; the sweep below
# measures that part.
#
# Only the **last** row matters for the reply: it scores the token after the prompt, and
# should match the recording's step 0:

# %%
last, step0 = together[-1].numpy(), trace.steps[0]
print("same top-20 scores as the trace:", np.allclose(last[step0.top_ids], step0.top_logits,
                                                      atol=1e-3))
print("its best token:", repr(lm.tokenizer.decode(int(last.argmax()))),
      "| the trace chose:", repr(step0.token_text))

# %% [markdown]
# The other rows are not wasted: computing them stores each token's keys and values for decode
# (lesson 05). `viz.record` asks for the last row's scores only (`logits_to_keep=1`); see
# [`viz/record.py`](../viz/record.py), step 2.

# %% [markdown]
# ## Measure it: what TTFT is made of
#
# `trace.timing` splits this run's TTFT into tokenizing, the prefill pass, and choosing the
# first token.

# %%
PARTS = ["tokenize", "prefill forward pass", "choose the first token"]
t = trace.timing
parts = dict(zip(PARTS, (t.tokenize_s, t.prefill_forward_s, t.prefill_sample_s)))
for name, seconds in parts.items():
    print(f"{name:24} {seconds * 1000:.2f} ms")
print(f"{'TTFT':24} {t.ttft_s * 1000:.2f} ms")
largest = max(parts, key=parts.get)
print("largest part:", largest)

# %% [markdown]
# ### TTFT against prompt length
#
# `perf.prompt_length_sweep` times a one-token reply to prompts of four exact lengths, 3
# interleaved runs each after a warm-up:

# %% tags=["nbval-ignore-output"]
sweep = perf.prompt_length_sweep(lm, [16, 32, 64, 128], repeats=3, progress=False)
print(sweep)

# %% [markdown]
# Solid lines are yours; each point's bar is its **spread** (lesson 02). Dashed: a reference
# from the project's own machine (`perf.load_reference("cpu-prompt-sweep")`); its label gives
# its threads and "load", about how many processes wanted a core:

# %%
reference = perf.load_reference("cpu-prompt-sweep")
print(reference.label)

# %% tags=["nbval-ignore-output"]
from viz.views import sweep_figure

sweep_figure(sweep, reference)

# %% [markdown]
# The middle chart's speed, in prompt tokens per second, for the shortest and longest prompts
# (if your points zig-zag, something else used the CPU: run the sweep again):

# %% tags=["nbval-ignore-output"]
tokens = [int(n) for n in sweep.column("prompt_tokens")]
forward = sweep.spread("prefill_forward_s")  # per length: the median pass and its spread
speed = [s.rate(n) for n, s in zip(tokens, forward)]  # prompt tokens per second
print(f"{tokens[0]} tokens: {speed[0].text(1, 'tokens/s')};  "
      f"{tokens[-1]} tokens: {speed[-1].text(1, 'tokens/s')}")
print("the longer prompt went through faster per token, beyond the spreads"
      if speed[-1].low > speed[0].high else "the same speed within the spreads"
      if speed[-1].overlaps(speed[0]) else "the longer prompt went through more slowly")

# %% [markdown]
# A line through the points, TTFT ≈ *a* + *b* · tokens, splits a pass into a part paid once
# (*a*) and a part per token (*b*). Where *a* is a large share, a longer prompt spreads it
# over more tokens and goes faster per token. The line is fitted by least squares; *a*'s
# spread is the range the points' spreads allow:

# %%
ttft = sweep.spread("ttft_s")  # per length: the median TTFT and its spread
fit = np.linalg.pinv(np.vander(tokens, 2))  # least squares: (b, a) = fit @ the TTFTs


def line_at(n):
    """The line's TTFT at n tokens, with the lowest and highest the points' spreads allow."""
    w = fit[1] + n * fit[0]  # each point's weight in the line's value at n
    med = sum(wi * s.median for wi, s in zip(w, ttft))
    low, high = (sum(wi * (s.low if (wi > 0) == down else s.high) for wi, s in zip(w, ttft))
                 for down in (True, False))
    return viz.Spread(med, min(low, med), max(high, med), ttft[0].runs, derived=True)


# %% tags=["nbval-ignore-output"]
a, b = line_at(0), line_at(1).median - line_at(0).median  # intercept (Spread), slope (s/token)
print(f"a = {a.text(1e3, 'ms')}: paid by every prompt;  b = {b * 1000:.2f} ms per prompt token")
for n, s in zip(tokens, ttft):
    print(f"{n:4} tokens: TTFT {s.text(1e3, 'ms')}, a is {a.median / s.median:4.0%} of it")
if a.median <= 0:
    print("a ≤ 0: four noisy points put the line too low; run the sweep again")

# %% [markdown]
# ### What limits a prefill: the arithmetic or the reading?
#
# Each weight is multiplied by each token's numbers once and added to a sum: 2 floating-point
# operations (FLOPs) per weight per token. The embedding table only looks up rows, and the
# output head scores only the last position, so a prefill of *n* tokens costs about
#
# $$\text{FLOPs} \approx 2 \times \text{non-embedding parameters} \times n .$$
#
# `perf.prefill_cost` counts exactly, attention included (its share grows with the prompt):

# %%
non_embedding = spec.n_params - spec.vocab_size * spec.hidden_size
print(f"non-embedding parameters: {non_embedding:,}")
for n in (16, 128, 256):
    print(f"{n:4} tokens: rule {2 * non_embedding * n / 1e9:6.1f} GFLOP, "
          f"counted {perf.prefill_cost(spec, n).flops / 1e9:6.1f} GFLOP")

# %% [markdown]
# And the bytes? Every weight is read once per pass, whatever the prompt's length; only a few
# per-token extras (embedding rows, keys and values) grow with it. The **arithmetic
# intensity** is FLOPs ÷ bytes: the arithmetic the processor does for each byte it fetches.

# %%
print(f"{'tokens':>6} {'GFLOP':>8} {'MB moved':>9} {'FLOP per byte':>14}")
for n in sorted({1, 8, len(trace.prompt_tokens), 16, 64, 128, 512}):
    c = perf.prefill_cost(spec, n)
    print(f"{n:6} {c.flops / 1e9:8.2f} {c.bytes / 1e6:9.1f} {c.intensity:14.1f}")

# %% [markdown]
# The bytes barely move, so the intensity grows with the prompt. (At your prompt's length it is
# lower than the per-layer figure: a pass also reads the 113 MB output head, used on the last
# token only.)
# The rule `perf.pass_verdict`, used from here on, weighs three measured times:
#
# - the **memory floor**: bytes ÷ this machine's read speed, the shortest time the reading
#   allows;
# - the **compute floor**: FLOPs ÷ peak FLOP/s, the shortest time the arithmetic allows;
# - the **fixed cost** per pass: a model as deep but only 64 numbers wide, with almost nothing
#   to read or compute (`perf.fixed_cost`).
#
# A pass is *overhead-bound* if the fixed cost is at least half its measured time; otherwise
# *compute-bound* if its compute floor is at least its memory floor, else *memory-bound*. Each
# time has a spread; where the spreads straddle one of the rule's lines, it says **too close
# to call**. Its yardsticks, measured once on this machine (lesson 02):

# %% tags=["nbval-ignore-output"]
print(perf.yardsticks())  # the peaks and the fixed cost, as every lesson prints them

# %% [markdown]
# The two peaks are the machine's **roofs**: speeds a pass should not beat (they are medians
# of measured runs, so a pass can land a little above one). With each verdict come two shares:
# **MFU** (model FLOPs utilisation), the share of the pass its arithmetic would take at the
# peak; **MBU** (model bandwidth utilisation), the share its reading would take at full read
# speed. A pass runs as many small programs, one per operation (a matrix product, a norm...),
# each a **kernel**; the processor that calls them, running Python, is the **host** (on a CPU
# the same chip; lesson 04 on a GPU).
#
# **Predict.** What will the rule say about the 16-token prefill of your sweep? (The table above
# gives its FLOPs and bytes.)

# %%
prediction_regime = None  # ← your guess: "overhead-bound", "memory-bound" or "compute-bound"

# %% tags=["nbval-ignore-output"]
machine = perf.machine_peaks()  # measured the first time on this machine, then reused
peaks = perf.cached_peaks()  # the same peaks in float32: the two roofs, with their spreads
fixed = perf.fixed_cost(spec.n_layers)  # one pass of a 30-layer model with almost no weights
print(machine.status)
verdicts = {n: perf.pass_verdict(perf.prefill_cost(spec, n).flops, perf.prefill_cost(spec, n).bytes,
                                 s, peaks, fixed) for n, s in zip(tokens, forward)}
print("compute- or memory-bound names the longer floor; MFU and MBU, how near each roof it came:")
for n, v in verdicts.items():
    print(f"prefill of {n:3} tokens: {v.regime:17}  MFU {v.mfu:4.0%}  MBU {v.mbu:4.0%}  "
          f"fixed cost {v.fixed_share.median:4.0%} of the pass")
verdict = verdicts[tokens[0]]
print(f"{tokens[0]} tokens:", verdict)

# %%
compare_prediction(prediction_regime, verdict, options=list(perf.REGIMES),
                   hint="compare the fixed cost with half the pass, then the two floors: "
                        "FLOPs ÷ peak FLOP/s against bytes ÷ read speed")

# %% [markdown]
# A verdict compares *ideal* times, not whether the arithmetic units ran flat out. Where both
# shares are well under half, the rest of the pass is the fixed cost and kernels running below
# the roofs, much of it paid once per pass, like the line's *a*. The shortest pass, taken
# apart both ways:

# %% tags=["nbval-ignore-output"]
larger = max(verdict.mfu, verdict.mbu)  # the longer floor's share of the pass
rest = max(0.0, 1 - verdict.fixed_share.median - larger)
t0 = forward[0].median
print(f"{tokens[0]}-token pass {t0 * 1e3:.1f} ms: the line's a is {a.median / t0:.0%} of it "
      f"({a.low / t0:.0%}–{a.high / t0:.0%}), b × {tokens[0]} tokens {b * tokens[0] / t0:.0%}")
print(f"the rule: fixed cost {verdict.fixed_share.median:.0%}, the longer floor "
      f"({'arithmetic' if verdict.mfu >= verdict.mbu else 'reading'}) {larger:.0%}, "
      f"the rest {rest:.0%}")
print("most of this pass is a, paid once per pass whatever its length" if a.low > t0 / 2 else
      "the per-token part is most of this pass already" if a.high < t0 / 2 else
      "a is about half of this pass, within its spread")

# %% [markdown]
# ### What *a* is made of
#
# Hypothesis: most of *a* − fixed cost is the weight products, whose kernels take nearly as
# long on a few rows as on many. Time each layer's seven (q, k, v, o, gate, up, down) alone
# (`perf.kernel_spread`, 5 runs) on 2 rows (the fewest a matrix-matrix kernel takes) and on as
# many rows as the shortest prompt has tokens:

# %%
mats = [m.weight for m in lm.model.model.layers.modules() if isinstance(m, torch.nn.Linear)]
mat_bytes = sum(w.numel() * w.element_size() for w in mats)  # the layers' weights, in bytes


def products(rows):
    """The layers' weight products alone, on `rows` input rows: seconds, with spread."""
    xs = {w.shape[1]: torch.ones(rows, w.shape[1]) for w in mats}
    with torch.inference_mode():
        return perf.kernel_spread(lambda: [torch.nn.functional.linear(xs[w.shape[1]], w)
                                           for w in mats], repeats=5)


# %% tags=["nbval-ignore-output"]
prod = {r: products(r) for r in (2, tokens[0])}
print(f"a − fixed cost {(a - fixed).text(1e3, 'ms')}; the {len(mats)} matrices' "
      f"{mat_bytes / 1e6:.0f} MB at a plain read {peaks.bytes_spread.rate(mat_bytes).text(1e3, 'ms')}")
for r, s in prod.items():
    print(f"  their products on {r:2} rows {s.text(1e3, 'ms')}: the weights streamed at "
          f"{s.rate(mat_bytes).text(1e-9, 'GB/s')}")
rest_a = (a - fixed).median  # what a leaves once the fixed cost is set aside
flat, share = prod[2].median / prod[tokens[0]].median, prod[2].median / max(rest_a, 1e-9)
over = prod[2].low > (a - fixed).high  # more than all of a − fixed cost, beyond the spreads
print(f"2 rows take {flat:.0%} of {tokens[0]} rows' time, and {share:.0%} of a − fixed cost"
      + (" (over 100 % only inside the spreads: about all of it)" if share > 1 and not over
         else "") + ": " + (
    "more than all of it, beyond both spreads: too noisy here to say (run the cell again)"
    if over else
    "the hypothesis holds here" if flat > 0.7 and share > 0.7 else
    "the products cost about as much on 2 rows, but the rest of a is elsewhere" if flat > 0.7
    else "the products cost far less on 2 rows: not what a pass pays whatever its length"))

# %% [markdown]
# The memory floor counts the weights at a plain read's speed; the rates above are what the
# kernels reach on a few rows. Where the hypothesis holds, that gap is much of the "kernels
# running below the roofs" above, paid however few the tokens.
#
# The slope is the other half, each extra token's arithmetic: extra FLOPs ÷ extra time from
# 64 to 128 tokens, against the peak:

# %% tags=["nbval-ignore-output"]
extra_s = forward[-1] - forward[-2]  # the pass's extra time for the extra tokens, with spread
extra = perf.prefill_cost(spec, tokens[-1]).flops - perf.prefill_cost(spec, tokens[-2]).flops
if extra_s.low > 0:
    slope = extra_s.rate(extra)  # FLOP/s of the extra tokens
    print(f"{tokens[-2]} → {tokens[-1]} tokens: {extra / 1e9:.1f} GFLOP more in "
          f"{extra_s.text(1e3, 'ms')}: {slope.text(1e-9, 'GFLOP/s')}")
    print(f"{slope.median / peaks.flops_per_s:.0%} of the peak {peaks.flops_spread.text(1e-9, 'GFLOP/s')}: "
          + ("the same as the peak within their spreads" if slope.overlaps(peaks.flops_spread)
             else "above the peak, beyond both spreads" if slope.low > peaks.flops_spread.high
             else "below the peak, beyond both spreads"))
else:
    print("the spreads of the two longest prompts overlap too much to time the extra tokens: "
          "run the sweep again")

# %% [markdown]
# So a prefill is two costs: *a*, paid once per pass, and each token's arithmetic, at the
# speed just printed.
#
# **Predict.** The next cell records a prompt twice as long as your sweep's longest, three
# times. Compared with the line *a* + *b* · tokens, its TTFT will be...

# %%
LINE = ["shorter than the line (by over 10 %)", "within 10 % of the line",
        "longer than the line (by over 10 %)"]
prediction_line = None  # ← your guess: one of LINE, copied exactly

# %% tags=["nbval-ignore-output"]
n_long = 2 * tokens[-1]
prompt_long = perf.prompt_of_length(lm.tokenizer, n_long)
long = viz.Spread.of([viz.record(lm, prompt_long, max_new_tokens=1, embeddings=False).ttft_s
                      for _ in range(3)])
line = line_at(n_long)  # the line's TTFT there, with its spread
line_verdict = viz.band(long / line, [0.9, 1.1], LINE)  # with both figures' spreads
print(f"{n_long} tokens: TTFT {long.text(1e3, 'ms')}; the line says {line.text(1e3, 'ms')}: "
      f"{long.median / line.median - 1:+.0%} against it → {line_verdict}")
print({LINE[0]: "faster per token than the line: longer products ran nearer the peak",
       LINE[1]: "the line still holds at twice the longest length it was fitted on",
       LINE[2]: "something grows faster than the tokens: attention's work, for one (each "
                "token's query meets every earlier key; lesson 11 times it)",
       perf.TOO_CLOSE: "near a 10 % line once the spreads are counted: too close to call"
       }[line_verdict.word])

# %%
compare_prediction(prediction_line, line_verdict, options=LINE,
                   hint="the line's b averages the whole sweep: compare the last stretch's "
                        "cost per token (64 → 128, printed above: its extra time ÷ 64 tokens) "
                        "with b, then ask what grows faster than the tokens beyond 128: "
                        "attention, where each token's query meets every earlier key")

# %% [markdown]
# A line is a rule of thumb over the lengths it was fitted on.
#
# ### The same prefill on a GPU
#
# The **ridge point**, peak FLOP/s ÷ read speed, is the intensity at which the two floors are
# equal. Yours is measured; an NVIDIA H100's is **computed** from its datasheet
# (`perf.H100_SXM`: 989 TFLOP/s of bfloat16 arithmetic, 3.35 TB/s of memory).
# The GPU column takes this model's shape in bfloat16 (2 bytes per number), as GPUs serve it,
# and floors only (a datasheet gives no fixed cost):

# %% tags=["nbval-ignore-output"]
gpu = perf.H100_SXM
gpu_flops, gpu_bytes = gpu["flops_per_s"]["bfloat16"], gpu["bytes_per_s"]
print(f"ridge: this machine (float32, measured) {peaks.ridge_intensity:.1f} FLOP per byte; "
      f"{gpu['device_name']} (bfloat16, COMPUTED) {gpu_flops / gpu_bytes:.0f}")

# %% tags=["nbval-ignore-output"]
bf16 = perf.config_spec("smollm2-135m", dtype="bfloat16")  # this model's shape, 2 bytes each
here, there = {}, {}
for n in (1, 8, 16, 128, 512, 2048):  # the rule on each pass's floors (perf.floors_verdict)
    mine = perf.prefill_cost(spec, n)
    here[n] = perf.floors_verdict(mine, peaks.flops_spread, peaks.bytes_spread).regime
    there[n] = perf.floors_verdict(perf.prefill_cost(bf16, n), gpu_flops, gpu_bytes).regime
    print(f"prefill of {n:4} tokens: here {here[n]:17}  H100 (computed) {there[n]}")
differ = [n for n in here if here[n] != there[n]]
print(f"the two machines disagree at {', '.join(map(str, differ))} tokens" if differ else
      "the two machines agree at every length here")

# %% [markdown]
# The H100's arithmetic is so fast next to its memory (its ridge is in the hundreds) that the
# arithmetic becomes the longer floor only at far longer prompts: "prefill is compute-bound"
# depends on the prompt length *and* the machine. Lesson 06 draws both phases on one chart,
# the roofline.
#
# ### The same prefill on a GPU, measured once
#
# The course ships prompt sweeps measured on an NVIDIA H200 (`perf.gpu_reference`;
# random-weight models, so the times are real and the text is not), judged with the H200's
# measured peaks. There the wall clock includes the host's Python launching the kernels, so
# the fixed cost is the host's (a model as deep, almost no width).
#
# First, the two figures the rule will weigh for the 8B:

# %%
gpu_rows = perf.prefill_rows(perf.gpu_reference("prompt-sweep", "llama-3.1-8b"))
print(f"the host's fixed cost for the 8B's depth (a model as deep, 64 wide, eager): "
      f"{gpu_rows[0].verdict.fixed.text(1e3, 'ms')}")
print("the 8B's compute floor: " + ", ".join(
    f"{r.tokens:,} tokens {r.verdict.compute_floor.median * 1e3:.1f} ms" for r in gpu_rows))

# %% [markdown]
# **Predict.** For an 8-billion-weight model (Llama-3.1-8B's shape) on the H200, from which
# prompt length does the rule call prefill compute-bound outright (not "too close to call")?

# %%
GPU_FROM = ["128 tokens", "512 or 1,024 tokens", "2,048 or 4,096 tokens", "none up to 4,096"]
prediction_gpu_from = None  # ← your guess: one of GPU_FROM, copied exactly

# %%
print(perf.gpu_provenance())
sheet = perf.datasheet("H200")  # the same GPU computed from its datasheet, no fixed cost
for r in gpu_rows:
    computed = perf.floors_verdict(r.cost, sheet.flops_per_s, sheet.bytes_per_s).regime
    print(f"{r.tokens:5} tokens: {r.seconds.text(1e3, 'ms')}, MFU {r.mfu:4.0%}, measured "
          f"{r.verdict.regime:17} datasheet {computed}")
first = next((r.tokens for r in gpu_rows if r.verdict.regime == "compute-bound"), None)
gpu_from = (GPU_FROM[3] if first is None else GPU_FROM[0] if first <= 128 else
            GPU_FROM[1] if first <= 1024 else GPU_FROM[2])

# %%
compare_prediction(prediction_gpu_from, gpu_from, options=GPU_FROM,
                   hint="a prefill is overhead-bound while the fixed cost is at least half of "
                        "it: take each prefill as at least the fixed cost plus its compute "
                        "floor (both printed above), and compare the fixed cost with half")

# %%
small = perf.prefill_rows(perf.gpu_reference("prompt-sweep"))  # the course model's shape
print(f"{perf.GPU_MODELS[0]}: {min(r.seconds.median for r in small) * 1e3:.0f} to "
      f"{max(r.seconds.median for r in small) * 1e3:.0f} ms from {small[0].tokens} to "
      f"{small[-1].tokens:,} tokens, MFU at most {max(r.mfu for r in small):.0%}; the host's "
      f"fixed cost at its depth {small[0].verdict.fixed.text(1e3, 'ms')}")
for r in small:
    print(f"{r.tokens:5} tokens: {r.seconds.text(1e3, 'ms')}, fixed cost "
          f"{r.verdict.fixed_share.median:4.0%} of it, MFU {r.mfu:4.0%}: {r.verdict.regime}")

# %% [markdown]
# The datasheet has no host. On the H200 the host launches every layer's kernels one by one,
# outlasting the 8B's arithmetic on short prompts; only from a few thousand tokens is the
# arithmetic longer. The course model's shape took about the same time at every length, at an
# MFU of a few per cent: the host's fixed cost is about half of every pass, and neither floor
# is near, even where the rule names one. The rest is the host launching kernels too, at a
# cost that drifts: probably why the small model's short prompts took longer than the 8B's.
#
# ## Next
#
# [04 · Decode →](04_decode.ipynb): after the first token, the model writes one token per
# pass, and a very different limit takes over.

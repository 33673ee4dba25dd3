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
# # 14 · The logit lens: where the answer forms, and a draft from it
#
# [13 · Less overhead, more tokens per pass](13_less_overhead.ipynb) measured speculative
# decoding with prompt lookup, and left one form out: a small **draft model** guessing for any text, because the course has no
# smaller model that shares this one's vocabulary. This lesson finds one *inside* the model.
#
# Every layer adds its result to one running vector per position, the **residual stream**.
# After the last of the 30 layers, the model applies its final norm and its output head to
# that vector and reads the scores of the next token. Apply the same norm and head after
# *each* layer, and every layer makes a guess: the **logit lens**. It shows where in the
# model the answer appears, and whether the first layers alone could guess it cheaply.

# %%
import torch

import viz
from viz import compare_prediction, lens, perf, views

lm = viz.load_model(device="cpu")
_ = viz.record(lm, "Hello", max_new_tokens=2)  # warm-up: the first pass pays one-off set-up

# %% [markdown]
# ## See it: every layer's guess
#
# `viz.record(..., lens=True)` does what every recording does, and also keeps, at every step,
# each layer's five most likely next tokens with their probabilities (and the probability the
# layer gives the token finally chosen). Layer 0 is the input embedding alone; layer 30 is the
# model's own output.
#
# ✏️ **Predict.** Over the steps of a reply, at which layer does the lens *first* guess the
# token the model finally chooses? Give the median over the steps, from 0 to 30.

# %%
prediction_depth = None  # ← a layer from 0 (the embedding) to 30 (the output)

# %%
PROMPT = "Explain why the sky is blue in two sentences."
NEW = 24  # the reply's length: every run below decodes these same tokens
trace = viz.record(lm, PROMPT, chat=True, max_new_tokens=NEW, lens=True)
print(trace.generated_text)

# %%
views.logit_lens_figure(trace)

# %%
first = lens.settle_spread(trace, first=True)  # a viz.Spread over the steps, in layers
settled = lens.settle_spread(trace)
n = trace.n_generated
print(f"the lens first guesses the final token at layer {first.median:.0f} (the median of the "
      f"{n} steps; their middle half: layers {first.low:.0f} to {first.high:.0f})")
print(f"and keeps it from layer {settled.median:.0f} on (middle half: {settled.low:.0f} to "
      f"{settled.high:.0f})")

# %%
compare_prediction(prediction_depth, first.median, rel_tol=0.15,
                   hint="count the dots' lowest row in each column of the figure above")

# %% [markdown]
# Read the figure column by column: each column is one step, each row a layer, the colour how
# sure that layer's top guess is (hover for its guess and its top five). The dots mark layers
# whose guess *is* the token finally chosen, the line the lowest of them. For most tokens of
# this small model the answer appears only in the last few layers. A column or two has a dot
# near the bottom: there the first layers guessed a common token (such as " a" or " and")
# that happened to be right, and the layers above then overruled it, until the last ones
# chose it again. Below, one step at a time: drag the slider or press play.

# %%
views.logit_lens_step_figure(trace)

# %%
views.logit_lens_settle_figure(trace)

# %% [markdown]
# Where the two lines part, an early layer guessed the answer and a later one changed its
# mind: a guess is not a decision until the layers above stop overruling it. The blue line
# is where the answer settles for good.
#
# ## Understand it: the lens by hand
#
# transformers hands out the residual stream after every layer with
# `output_hidden_states=True`. The lens at layer 20, at the prefill's last position, in three
# lines (the last entry of `hidden_states` has the final norm applied already; layer 20's has
# not):

# %%
with torch.inference_mode():
    out = lm.model(input_ids=torch.tensor([trace.prompt_ids]), output_hidden_states=True)
    stream = out.hidden_states[20][0, -1]  # after layer 20, at the last prompt token
    probs = torch.softmax(lm.model.lm_head(lm.model.model.norm(stream)), dim=-1)
top = int(probs.argmax())
print(f"by hand: layer 20 guesses {lm.tokenizer.decode([top])!r} with p = {probs[top]:.4f}")
recorded = trace.lens.ids()[0, 20, 0], trace.lens.probs()[0, 20, 0]
print(f"recorded: {lm.tokenizer.decode([int(recorded[0])])!r} with p = {recorded[1]:.4f}")

# %% [markdown]
# The recording keeps the same thing for every layer and every step, through hooks on the
# layers during the ordinary decode loop (`viz.lens.watch_layers`); a test checks it against
# this hand computation on prompts it has never seen.
#
# ## Measure it: a draft from the first layers
#
# **Early-exit self-speculative decoding** (LayerSkip; transformers'
# `assistant_early_exit`): run only the first L layers, then the final norm and the head,
# and take the top token as a guess. That *is* the lens at layer L. Draft k tokens so, one
# cheap pass each, then check all k in **one** full pass (as prompt lookup did) and keep the
# drafts up to the first one the full model disagrees with, plus the full model's own token.
# Greedy text stays exactly the same.
#
# So the lens of a reply says, before anything runs, which drafts will be accepted: those
# where layer L already agrees with the final token.

# %%
EXIT_LAYER, K = 26, 2  # draft with the first 26 of 30 layers, 2 drafts per full pass
agreement = lens.agreement_by_layer(trace)  # per layer: share of decode steps that agree
print(f"at layer {EXIT_LAYER} the lens agrees with the final token at "
      f"{agreement[EXIT_LAYER]:.0%} of the decode steps")

# %% [markdown]
# ✏️ **Predict.** With k = 2 drafts per full pass from layer 26, what share of the drafted
# tokens will the full model accept (0 to 1)?

# %%
prediction_acceptance = None  # ← a share from 0 to 1

# %% [markdown]
# **What a draft costs.** A decode pass reads every weight once (lesson 08), so a draft pass
# should cost about the bytes it reads: its 26 layers *and* the output head, which scores all
# 49,152 tokens for every guess. The measurement below says whether it did.

# %%
share = perf.draft_bytes_share(lm.spec, EXIT_LAYER)
print(f"a draft pass reads {share:.0%} of the weights a full pass reads "
      f"({EXIT_LAYER} of {lm.spec.n_layers} layers, and the whole head)")

# %% [markdown]
# ✏️ **Predict.** On your machine, will decoding with these drafts be faster or slower than
# plain decoding? One of `perf.EARLY_EXIT_WORDS`.
#
# The next cell times both, plain decoding and early exit, and answers this prediction and
# the one above (its table shows the drafts accepted per full pass).

# %%
prediction_speed = None  # ← "plain decode is faster" or "early exit is faster"

# %% tags=["nbval-ignore-output"]
early = perf.compare_early_exit(lm, PROMPT, exit_layer=EXIT_LAYER, draft_tokens=K,
                                max_new_tokens=NEW, repeats=3)  # ~18 s: 3 timed rounds each
print(early)
follows = viz.band(early.draft_cost_spread / share, [0.85, 1.15],
                   ["cheaper than its bytes", "follows its bytes", "dearer than its bytes"])
print(f"a draft pass's time {follows}: measured ×{early.draft_cost_spread.text(digits=2)} of "
      f"a plain pass, for {share:.0%} of its bytes")

# %%
print(f"same tokens as the recording: {early.early.token_ids == trace.generated_ids}; the lens "
      f"predicted: {perf.lens_drafts(trace, EXIT_LAYER, K).accepted_histogram()}")
compare_prediction(prediction_acceptance, early.acceptance_rate, rel_tol=0.25,
                   hint="a second draft counts only if the first was accepted")

# %% [markdown]
# The lens predicted every round, draft for draft. The acceptance is lower than the
# agreement: the second draft of a round is checked only after an accepted first one, and a
# round whose first draft is wrong wastes both. Now the time:

# %%
compare_prediction(prediction_speed, early.speedup_verdict,
                   options=perf.EARLY_EXIT_WORDS,
                   hint="k drafts plus one full pass, against the tokens each round makes")

# %% [markdown]
# The printed rule says where the time went: each round pays k draft passes of nearly a full
# pass each, plus one full pass, and makes the tokens above; the round breaks even only at the
# tokens per pass printed as "breaks even". That figure is measured, not priced: take the k
# drafts' cost from it and what is left is the checking pass, which costs more than a plain
# one (it runs k + 1 positions, then sets both caches back to the kept tokens). A draft needs
# *early* agreement to pay: the lens of this model agrees late, so its early layers guess
# badly, and its late layers are nearly the whole model.
#
# ## Beside prompt lookup
#
# Lesson 13's other way to guess, on the same prompt: copy what followed the last words
# where they appeared before.
#
# ✏️ **Predict.** On this reply (new text, little to copy), which makes more tokens per full
# pass?

# %%
MORE = ["early exit", "prompt lookup", "the same"]
prediction_more = None  # ← one of MORE

# %% tags=["nbval-ignore-output"]
lookup = perf.compare_prompt_lookup(lm, PROMPT, max_new_tokens=NEW, repeats=3)  # ~12 s
print(lookup)
ours, theirs = early.tokens_per_pass, lookup.lookup.tokens_per_pass
more = MORE[2] if abs(ours - theirs) < 0.05 else MORE[0] if ours > theirs else MORE[1]
views.accepted_histogram_figure({f"early exit, L={EXIT_LAYER}, k={K}": early,
                                 "prompt lookup, k=10": lookup})

# %%
print(f"tokens per full decode pass: early exit {ours:.2f}, prompt lookup {theirs:.2f}")
compare_prediction(prediction_more, more, options=MORE,
                   hint="what does each guess from: the layers, or text seen earlier?")

# %% [markdown]
# Prompt lookup's guesses cost no pass of the model (checking them still lengthens each pass:
# compare its "per pass" with plain's), but it finds them only where the reply repeats earlier
# text; the early layers guess anywhere, at nearly the price of a full pass.
#
# ## Measure it: the lens's best choice
#
# Layer 26 was a guess. The lens prices every (L, k) before anything runs: if a pass costs
# its bytes, a round of k drafts from layer L and one checking pass costs k × (the draft's
# share of the bytes) + 1 full passes, and makes the tokens the lens predicts.
# `perf.best_lens_draft` picks the cheapest tokens that way, among L = 1 to 29 and k = 1, 2, 4.
#
# ✏️ **Predict.** Measured at the lens's best (L, k), which is faster? One of
# `perf.EARLY_EXIT_WORDS`.

# %%
prediction_best = None  # ← "plain decode is faster" or "early exit is faster"

# %% tags=["nbval-ignore-output"]
best = perf.best_lens_draft(trace, lm.spec, ks=(1, 2, 4))
priced = best.speedup_if_bytes(perf.draft_bytes_share(lm.spec, best.exit_layer))
print(f"the lens's best: L={best.exit_layer}, k={best.draft_tokens}, "
      f"{best.tokens_per_pass:.2f} tokens per full pass, ×{priced:.2f} if a pass costs its bytes")
at_best = perf.compare_early_exit(lm, PROMPT, exit_layer=best.exit_layer,
                                  draft_tokens=best.draft_tokens, max_new_tokens=NEW, repeats=3)
print(at_best)

# %%
compare_prediction(prediction_best, at_best.speedup_verdict, options=perf.EARLY_EXIT_WORDS,
                   hint="the best the lens found is the price printed above: is it above 1?")

# %% [markdown]
# The measured speed-up falls below the bytes' price: the price counts a draft and a checking
# pass at their bytes alone, and the measurement above prints what each really cost. A draft
# pass can cost more than its layers' bytes say, even more than a plain pass: each round's
# first draft also reads the tokens the draft has not seen yet (the last accepted draft and the
# full model's own token), and the round's setup is shared over its k drafts, so with k = 1 a
# single draft bears it all; the checking pass costs more than a plain one too. So the bytes'
# price is the best case. Where it prices every choice below 1, no choice of L and k
# rescues the drafts: a shallow draft is cheap but rarely right, a deep one is right but
# nearly a full pass. The lens shows every choice at once, from the one recording, without
# running them (diamonds: the two measured above):

# %%
views.early_exit_figure(trace, ks=(1, 2, 4), measured=[early, at_best])

# %% [markdown]
# ### Try a draft of your own
#
# Pick an exit layer L and a number of drafts k: the pair runs for real (plain decoding and
# early exit, one round each after a warm-up: several seconds) and joins the figure as a
# diamond; the title gives its tokens per full pass and its speed-up. Before each run, read
# the lens's line for your (L, k) on the right: the diamond should land on it, since the lens
# predicted every round draft for draft. The speed-up is what the lens cannot tell you: try a
# shallow L with k = 4, then a deep one with k = 1.

# %% tags=["nbval-ignore-output"]
import ipywidgets as widgets

from viz.views import LinkedView

tried = {(EXIT_LAYER, K): early, (best.exit_layer, best.draft_tokens): at_best}


def own_draft_chart(values):
    key = (values["L"], values["k"])
    if key not in tried:  # a real comparison with plain decoding, on this machine
        tried[key] = perf.compare_early_exit(lm, PROMPT, exit_layer=key[0], draft_tokens=key[1],
                                             max_new_tokens=NEW, repeats=1)
    c = tried[key]
    fig = views.early_exit_figure(trace, ks=(1, 2, 4), measured=list(tried.values()))
    return fig.update_layout(title_text=f"L={key[0]}, k={key[1]}: {c.tokens_per_pass:.2f} "
                                        f"tokens per full pass, ×{c.speedup:.2f} "
                                        f"({c.speedup_verdict.word})")


layer_slider = widgets.IntSlider(value=EXIT_LAYER, min=1, max=lm.spec.n_layers - 1,
                                 description="L: exit layer", continuous_update=False,
                                 style={"description_width": "initial"})
drafts = widgets.Dropdown(options=[1, 2, 4], value=K, description="k: drafts")
LinkedView({"L": layer_slider, "k": drafts}, [layer_slider, drafts], own_draft_chart)

# %% [markdown]
# ## Check yourself
#
# Your predictions were checked along the way: the depth at which the answer appears,
# the acceptance of drafts from layer 26, the speed-up, the comparison with prompt lookup,
# and the lens's best choice.
# One more, with the figure above in mind.
#
# ✏️ Which change would make early-exit drafts pay off on this machine?

# %%
CHANGES = ["more drafts per full pass (a larger k)",
           "a model trained so that its early layers already agree with its last",
           "a faster full pass to check the drafts"]
answer_change = None  # ← one of CHANGES, copied exactly

# %%
viz.multiple_choice(answer_change, CHANGES, CHANGES[1],
                    why="a draft costs the bytes of its L layers and the head, and is accepted "
                        "where the lens at L agrees: only agreement at a small L makes a cheap "
                        "draft a good one. LayerSkip trains models for it, with layer dropout "
                        "and an early-exit loss, so that their early layers agree often",
                    hint="look at the k lines: what do more drafts add where the lens "
                         "disagrees? And a faster full pass speeds plain decoding as much")

# %% [markdown]
# ## Next
#
# Last, [15 · The whole course on one page →](15_the_whole_course.ipynb): every figure of
# the course's story measured again on your machine, side by side. Back to
# [13 · Less overhead, more tokens per pass](13_less_overhead.ipynb) (the other remedies),
# [12 · Fewer bytes](12_fewer_bytes.ipynb) (the wall across generations),
# [08 · The memory wall](08_memory_wall.ipynb)
# (why a draft pass costs its bytes) and
# [02 · Predicting the next token](02_predicting_the_next_token.ipynb) (the head and the
# softmax that every layer's guess goes through here).

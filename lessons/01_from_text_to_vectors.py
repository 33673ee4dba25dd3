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
# # 01 · From text to vectors
#
# A language model only does arithmetic. It never sees a letter: before its first layer runs,
# your text goes through three conversions.
#
# 1. **text → tokens**: the text is cut into pieces from a fixed list, the *vocabulary*;
# 2. **tokens → ids**: each piece is replaced by its position in that list, an integer;
# 3. **ids → vectors**: each id picks one row of a big table of numbers, the *embedding table*.
#
# The model reads only those rows. This lesson makes each step visible on the real model, with
# text you choose.

# %%
import viz
from viz import views

lm = viz.load_model(device="cpu")
lm

# %% [markdown]
# ## See it: your text, cut into tokens
#
# Put any text in `my_text` and run the cell. `viz.record` tokenizes it and runs the model over
# it once (`max_new_tokens=1`: we only need the tokens here). Each box is one token, with its id
# underneath; hover a box to see which characters it covers. A `␣` is a space.

# %%
my_text = "Paris is the capital of France, and Berlin is the capital of Germany."  # ← try your own
trace = viz.record(lm, my_text, max_new_tokens=1)
views.tokens_html(trace, include_reply=False)

# %% [markdown]
# The same tokens as a table: the id, the vocabulary's own spelling of the piece (this
# vocabulary writes a space as `Ġ`), the text it stands for, and its characters in `my_text`.

# %%
for t in trace.prompt_tokens:
    print(f"id {t.id:>6}   piece {t.piece!r:<12} text {t.text!r:<12} chars {t.start}–{t.end}")
print(f"{len(my_text)} characters → {len(trace.prompt_tokens)} tokens")

# %% [markdown]
# Or type in the box. Each redraw runs the model once, so it waits until you press **Enter** or
# stop typing for a moment; the line under the box says *recording…* while it works, then how
# long it took.

# %%
def chips(text):
    """The tokens of `text`, as the boxes above (one pass of the model)."""
    typed = viz.record(lm, text, max_new_tokens=1, embeddings=False)
    return views.tokens_html(typed, include_reply=False)


views.LinkedText(chips, value=my_text, description="your text")

# %% [markdown]
# ### Surprises
#
# The vocabulary was built by starting from single bytes and repeatedly merging the pairs that
# were most common in a large body of text. Frequent words became one token each; anything rarer
# is spelled out from smaller pieces. That has consequences you can measure. `show_tokens` asks
# the tokenizer alone (no model run) and prints each token with the bytes it stands for.

# %%
from viz.views import piece_bytes


def show_tokens(text):
    """Print each token of `text`: id, characters it covers, bytes it stands for."""
    enc = lm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    pieces = lm.tokenizer.convert_ids_to_tokens(enc.input_ids)
    for tid, piece, (s, e) in zip(enc.input_ids, pieces, enc.offset_mapping):
        print(f"id {tid:>6}   chars {s:>2}–{e:<2} {text[s:e]!r:<10} bytes {piece_bytes(piece)!r}")
    print(f"→ {len(text)} characters, {len(enc.input_ids)} tokens")
    return enc.input_ids


# %% [markdown]
# **Spaces belong to the word after them.** `"Paris"` at the start of a text and `" Paris"`
# in the middle of a sentence are two different tokens, with two different ids:

# %%
paris = show_tokens("Paris")
space_paris = show_tokens(" Paris")
print("same id?", paris == space_paris)

# %% [markdown]
# **Numbers are spelled out.** Watch how the digits of these numbers are cut, and what happens
# to the space in front of a number:

# %%
numbers = show_tokens("In 2024, 1234567 people paid $3.14.")

# %% [markdown]
# **One emoji, several tokens.** The vocabulary works on bytes, and this emoji is four bytes of
# UTF-8. Look at the character spans: the tokens that carry its bytes all end at the emoji
# (the first also holds the space before it), and none of them is a character on its own.

# %%
pizza = show_tokens("I love 🍕")
print([lm.tokenizer.decode([i]) for i in pizza[-3:]], "together:", lm.tokenizer.decode(pizza[-3:]))

# %% [markdown]
# Each piece alone decodes to `�`, the "not a whole character" mark; only together do they make
# the emoji. Not every emoji splits the same way: another one can be a single token,
# space included.

# %%
smile = show_tokens("I love 🙂")

# %% [markdown]
# **Other scripts cost more.** The same sentence in Japanese and in English:

# %%
japanese = show_tokens("東京は日本の首都です")
english = show_tokens("Tokyo is the capital of Japan.")
print(f"tokens, Japanese / English: {len(japanese) / len(english):.1f}")

# %% [markdown]
# Each Japanese character is three bytes of UTF-8, and the vocabulary holds few of them whole:
# look at the spans above, where most characters take more than one token. The same answer in another
# language can take more tokens, and (lesson 04) more time.
#
# **Code: tabs and newlines are tokens too.**

# %%
code = show_tokens("def double(x):\n\treturn x * 2")

# %% [markdown]
# All of these at once, in the tokens view. Tokens that share characters (the emoji's bytes) are
# grouped, with the characters they make written under the group:

# %%
views.tokens_html(viz.record(lm, "I love 🍕 in 東京!\n\tx = 3.14", max_new_tokens=1),
                  include_reply=False)

# %% [markdown]
# ## Understand it: a token id is a row number
#
# The model holds an **embedding table**: one row of numbers for each token of the vocabulary.
# Its shape is (vocabulary size, hidden size), the two numbers from the model's spec:

# %%
table = lm.model.get_input_embeddings().weight.detach()
print(tuple(table.shape))
print(tuple(table.shape) == (lm.spec.vocab_size, lm.spec.hidden_size))

# %% [markdown]
# "Embedding" a token is nothing more than reading row number `id` of that table. The trace
# stored the row of every token it saw (rounded to 8 bits, to keep it small). Take the first
# token of your text and compare the table's row with the stored one:

# %%
import numpy as np

first = trace.prompt_tokens[0]
row = table[first.id].numpy()  # row number `id` of the embedding table
stored = trace.embeddings.vectors([first.id])[0]  # what the trace kept
print(f"token {first.text!r}, id {first.id}: {row.size} numbers")
print("table :", np.round(row[:5], 3))
print("stored:", np.round(stored[:5], 3))

# %% [markdown]
# The stored row keeps 8 bits per number: each is rounded to a multiple of (largest |value|)/127,
# so it can be off by at most half of that step. Check every one of the numbers:

# %%
step = np.abs(row).max() / 127
print("largest difference within half a rounding step:", np.abs(row - stored).max() <= step / 2)

# %% [markdown]
# The model's own embedding layer does exactly this lookup, for all your tokens at once:

# %%
import torch

ids = torch.tensor(trace.prompt_ids)
with torch.no_grad():
    looked_up = lm.model.get_input_embeddings()(ids)
print(tuple(looked_up.shape), torch.equal(looked_up, table[ids]))

# %% [markdown]
# The table has no column for *where* a token sits: a token that appears twice in your text
# reads the very same row both times. The first repeated token of `my_text`:

# %%
pos = {}  # token id → the positions where it appears
for i, tid in enumerate(trace.prompt_ids):
    pos.setdefault(tid, []).append(i)
twice = next((tid for tid in trace.prompt_ids if len(pos[tid]) > 1), None)
if twice is None:
    print("no token repeats in your text")
else:
    a, b = pos[twice][:2]
    print(f"{lm.tokenizer.decode([twice])!r} at positions {a} and {b}: "
          f"same row: {torch.equal(looked_up[a], looked_up[b])}")

# %% [markdown]
# Its position comes in later, inside every layer: before a token's query (what it looks for)
# meets the other tokens' keys (lessons 03 and 05), both are rotated by an angle that grows with their
# positions (*rotary position embeddings*, RoPE), so the comparison feels how far apart two
# tokens are. The positions it can tell apart end at its *context length*, the longest text
# it reads (prompt and reply together):

# %%
print(f"positions 0 to {lm.spec.context_length - 1}: at most {lm.spec.context_length:,} tokens")

# %% [markdown]
# What do the rows mean? Nobody wrote them: they were learned in training, and tokens used in
# similar ways ended up with rows that point in similar directions. The *cosine similarity* of
# two rows measures that (1: same direction, 0: unrelated). Here are the rows closest to the row
# of `" Paris"`, out of the whole table:

# %%
norms = table.norm(dim=1)


def nearest(token_id, k=6):
    """The k tokens whose rows have the highest cosine similarity with this token's row."""
    cosine = (table @ table[token_id]) / (norms * norms[token_id])
    best = torch.topk(cosine, k + 1)  # the first is the token itself (cosine 1)
    return [(lm.tokenizer.decode([i]), c) for i, c in zip(best.indices.tolist()[1:],
                                                            best.values.tolist()[1:])]


for text, c in nearest(space_paris[0]):
    print(f"{c:.2f}  {text!r}")

# %% [markdown]
# `"Paris"` without its space is a different id, yet its row lies close by; other cities
# (and France) follow. Move the slider to pick a token of your text: the chart shows its row
# (every one of its numbers), and the title names its closest rows in the table.

# %%
import ipywidgets as widgets
import plotly.graph_objects as go

from viz.views import LinkedView


def row_figure(values):
    t = trace.prompt_tokens[values["token"]]
    close = ", ".join(repr(text) for text, _ in nearest(t.id, 4))
    return go.Figure(go.Bar(y=table[t.id].tolist(), marker_color="#0072B2"), layout=dict(
        title=f"token {values['token']}: {t.text!r} = row {t.id}; closest rows: {close}",
        height=320, xaxis_title="position in the row", yaxis_title="value"))


pick = widgets.IntSlider(value=0, min=0, max=len(trace.prompt_tokens) - 1, description="token")
LinkedView({"token": pick}, [pick], row_figure)

# %% [markdown]
# ### The vectors of your text
#
# All the rows of your text at once. Left: one line per token, one column per number (red
# positive, blue negative). Middle: the cosine similarity of every pair of tokens; a token that
# appears twice has the very same row, so its pair shows 1. Right: the rows squeezed onto the
# two directions along which they differ most (a principal-component projection), so that
# tokens with similar rows land near each other. Hover for the values.

# %% tags=["nbval-ignore-output"]
views.embeddings_figure(trace)

# %% [markdown]
# The most alike pairs of *different* tokens in your text, read off the middle panel:

# %%
emb = views.embeddings_data(trace)
pairs = [(emb.cosine[i, j], i, j) for i in range(len(emb.ids)) for j in range(i)
         if emb.ids[i] != emb.ids[j]]
for c, i, j in sorted(pairs, reverse=True)[:4]:
    print(f"{c:.2f}   {emb.labels[j]}  ↔  {emb.labels[i]}")

# %% [markdown]
# These vectors are what the model's first layer receives: one row per token, nothing else.
# Every later lesson is about what the model does with them.
#
# ## Measure it: how many tokens is an answer?
#
# Every token the model writes costs one forward pass (lessons 03 and 04), so the length of an
# answer in *tokens*, not words, decides how long it takes. How many tokens does a word take?
# Measure it on a paragraph of ordinary English, or paste your own (this paragraph is also
# `viz.perf.SAMPLE_PARAGRAPH`: lesson 04 measures the same ratio with
# `viz.perf.tokens_per_word` to turn an answer's words into seconds):

# %%
paragraph = """Last weekend my sister and I drove to the coast to visit our grandparents. The
weather was cold and windy, but the sea looked beautiful, and we spent the afternoon walking
along the beach and collecting shells. In the evening our grandmother cooked fish soup, and our
grandfather told stories about the small boat he used to sail when he was young. We stayed up
late talking, and on Sunday morning we helped them fix the garden fence before driving home."""  # ← paste your own

n_words = len(paragraph.split())
n_tokens = len(lm.tokenizer(paragraph, add_special_tokens=False).input_ids)
ratio = n_tokens / n_words
print(f"{n_words} words, {n_tokens} tokens: {ratio:.2f} tokens per word")

# %% [markdown]
# So a 500-word answer written like this paragraph needs about:

# %%
print(f"500 words × {ratio:.2f} tokens per word ≈ {500 * ratio:.0f} tokens")

# %% [markdown]
# A common rule of thumb for English is about 700 tokens for 500 words (1.4 tokens per
# word). Compare it with your number above. Everyday words are in the vocabulary
# whole (one token each, as in the table at the top), which keeps the ratio low; every
# surprise above pushes it up: numbers, rare words and names, code, other languages. Paste a
# paragraph of code or of another language into `paragraph` and run the two cells again.
#
# Each of those tokens is one forward pass of the model: lesson 04 turns this count into
# seconds on your machine.
#
# ## Check yourself
#
# Each question asks for a prediction first: replace `None`, run the cell, then run the cell
# that measures and the check after it.
#
# **1. Predict** how many tokens `"HELLO WORLD! See https://www.example.com/hello"` is, without
# running the tokenizer: words in capitals and a web address, which nothing above has shown.

# %%
prediction_hello = None  # ← your guess: a whole number of tokens

# %%
hello = show_tokens("HELLO WORLD! See https://www.example.com/hello")

# %%
from viz import compare_prediction

compare_prediction(prediction_hello, len(hello), unit="tokens", rel_tol=0.15,
                   hint="start from one token per everyday word (its space included) and per "
                        "punctuation mark, then ask how often the text the vocabulary was built "
                        "from spelled each piece exactly this way")

# %% [markdown]
# **2. Predict** which of these three rows lies closest to the row of `" cat"` (the highest
# cosine similarity): a related animal, its young, or the same word with a capital letter.

# %%
CAT = [" dog", " kitten", " Cat"]
prediction_cat = None  # ← your guess: one of CAT, copied exactly

# %%
cat_id = lm.tokenizer(" cat", add_special_tokens=False).input_ids[0]
similarity = {}  # each candidate → the cosine similarity of its row with the row of " cat"
for word in CAT:
    (i,) = lm.tokenizer(word, add_special_tokens=False).input_ids  # each is one token
    similarity[word] = (table[i] @ table[cat_id] / (norms[i] * norms[cat_id])).item()
    print(f"{similarity[word]:.2f}  {word!r}")
closest = max(similarity, key=similarity.get)

# %%
compare_prediction(prediction_cat, closest, options=CAT,
                   hint="the rows were learned from where tokens appear in text, not from a "
                        "dictionary: which of the three is used in the most nearly the same "
                        "places as \" cat\"?")

# %% [markdown]
# Nothing told the model that two spellings are one word, or that a kitten is a cat: every id
# has its own row, learned from the places the token appears in text.

# %% [markdown]
# **3. Predict** the tokens per word of a recipe, full of numbers and units. Your paragraph's
# ratio above is a starting point.

# %%
recipe = ("Mix 250 g of flour with 2 eggs, 180 ml of milk and a pinch of salt. Bake for 25 "
          "minutes at 200 °C, then let it cool for 10 minutes before slicing.")
prediction_recipe = None  # ← your guess: tokens per word, e.g. 1.2

# %%
recipe_ratio = len(lm.tokenizer(recipe, add_special_tokens=False).input_ids) / len(recipe.split())
print(f"{len(recipe.split())} words: {recipe_ratio:.2f} tokens per word "
      f"(your paragraph: {ratio:.2f})")

# %%
compare_prediction(prediction_recipe, recipe_ratio, rel_tol=0.15,
                   hint="count the words that are not everyday words, and look again at how "
                        "*Numbers are spelled out* cut the digits")

# %% [markdown]
# ## Next
#
# [02 · Predicting the next token →](02_predicting_the_next_token.ipynb): from the last vector,
# a score for every token of the vocabulary, and a choice.

"""The logit lens: what the model would answer if it stopped after layer l.

Every layer of a decoder adds its result to one running vector per position, the residual
stream. After the last layer the model applies its final norm and its output head to that
vector and reads the scores of the next token. The **logit lens** (nostalgebraist, 2020)
applies the same norm and head to the residual stream after *each* layer: a prediction per
layer, and the depth at which it becomes the model's answer.

- `watch_layers(model)`: hooks that keep, at every forward pass, the residual stream at the
  newest position after each block (and the input embedding), removed in `finally`.
- `lens_of(model, states, chosen, top)`: the final norm and head applied to them, reduced to
  a compact `viz.trace.Lens` (top-k ids and probabilities per layer, and the chosen token's
  probability and rank; never the logits). `viz.record(..., lens=True)` calls both.
- Reading a recorded lens: `top1`, `agreement` (row l's top-1 is the token finally chosen),
  `first_agreement` (the first layer where it is), `settled` (the first layer from which it
  stays so), `agreement_by_layer`, `settle_spread` and `lens_table` (the CLI's text).

The first layer whose top-1 is the final token matters beyond pictures: a draft that stops
after layer L (`viz.perf.early_exit`) proposes exactly row L's top-1, so the lens's agreement
at L is that draft's acceptance. Taught in lesson 14.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

import numpy as np
import torch

from viz.compat import Hooks
from viz.spread import Spread
from viz.trace import Lens, Trace

NO_LENS = (
    "this trace has no logit lens (it is recorded only on request): record it again "
    "with viz.record(lm, prompt, lens=True), or `python -m viz lens --record "
    '"your prompt" -o trace.json`'
)


# ---- the model's parts -------------------------------------------------------------------
def lens_parts(model: Any) -> tuple[Any, list[Any], Any, Any]:
    """(input embedding, decoder blocks in order, final norm, output head) of a Llama-style
    causal LM (`model.model.layers`, `model.model.norm`, `model.lm_head`); a ValueError
    naming the fix for any other layout."""
    base = getattr(model, getattr(model, "base_model_prefix", "model"), None)
    layers, norm = getattr(base, "layers", None), getattr(base, "norm", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if layers is None or norm is None or head is None:
        raise ValueError(
            f"the logit lens needs a Llama-style model (blocks in model.layers, a "
            f"final model.norm and an output head); {type(model).__name__} is "
            "not one: record it with lens=False"
        )
    return model.get_input_embeddings(), list(layers), norm, head


class LayerStates:
    """The residual stream at the newest position after each block of every forward pass.

    Filled by the hooks of `watch_layers`: after a pass, `take()` returns one tensor
    (blocks + 1, hidden): row 0 the input embedding, row l the stream after block l. Tensors
    stay on the device.
    """

    def __init__(self, n_layers: int):
        self.n_layers = n_layers
        self._rows: list[torch.Tensor] = []

    def hook(self, module: Any, inputs: Any, output: Any) -> None:
        hidden = output[0] if isinstance(output, tuple) else output  # (batch, positions, h)
        self._rows.append(hidden[0, -1].detach().clone())  # batch 0, the newest position

    def take(self) -> torch.Tensor:
        """The rows of the pass that just ran, (blocks + 1, hidden); then forget them."""
        if len(self._rows) != self.n_layers + 1:
            raise RuntimeError(
                f"expected the embedding and {self.n_layers} blocks, got {len(self._rows)} rows"
            )
        rows, self._rows = torch.stack(self._rows), []
        return rows


@contextlib.contextmanager
def watch_layers(model: Any, enabled: bool = True) -> Iterator[Optional[LayerStates]]:
    """Keep each forward pass's residual stream after every block, for `viz.record(lens=True)`.

    Hooks the input embedding and every decoder block (their outputs, newest position only)
    and yields a `LayerStates`; on exit — error or not — removes every hook. The hooks only
    copy 1 + n_layers vectors per pass: the tokens are unchanged. `enabled=False` yields None
    and touches nothing.
    """
    if not enabled:
        yield None
        return
    embed, layers, _, _ = lens_parts(model)
    states = LayerStates(len(layers))
    with Hooks() as hooks:  # every hook removed on exit, error or not
        for m in [embed, *layers]:
            hooks.after(m, states.hook)
        yield states


def lens_of(
    model: Any,
    states: list[torch.Tensor],
    chosen: list[int],
    top: int,
    texts: Callable[[int], tuple[str, str]],
) -> Lens:
    """The logit lens of every pass: for each of `states` (one (blocks + 1, hidden) tensor
    per step, from `LayerStates.take`), the final norm and head applied to every row, then
    the `top` most likely tokens per row with their probabilities, and the probability and
    rank of the step's `chosen` token. One step at a time (a step's scores are rows × the
    vocabulary: 31 × 49,152 floats for the course model). `texts(token_id)` → (text, piece)
    names the tokens (views draw a trace without a tokenizer)."""
    _, _, norm, head = lens_parts(model)
    ids, probs, chosen_probs, ranks = [], [], [], []
    with torch.inference_mode():
        for h, token in zip(states, chosen):
            logits = head(norm(h)).float()  # (rows, vocabulary): each layer's scores
            logp = torch.log_softmax(logits, dim=-1)
            best = torch.topk(logp, top, dim=-1)
            ids.append(best.indices.cpu().numpy())
            probs.append(best.values.exp().cpu().numpy())
            chosen_probs.append(logp[:, token].exp().cpu().numpy())
            # rank: how many tokens each row scores higher than the chosen one
            ranks.append((logits > logits[:, token : token + 1]).sum(dim=-1).cpu().numpy())
    return Lens.from_arrays(
        np.stack(ids), np.stack(probs), np.stack(chosen_probs), np.stack(ranks), texts
    )


# ---- reading a recorded lens -------------------------------------------------------------
def check_lens(trace: Any) -> Lens:
    """The lens of `trace`; a ValueError naming the fix if it is not a trace or has none."""
    if not isinstance(trace, Trace):
        raise ValueError(
            f"the lens reads a viz.Trace, not {type(trace).__name__}: record one "
            "with viz.record(lm, prompt, lens=True)"
        )
    if trace.lens is None:
        raise ValueError(NO_LENS)
    if trace.lens.steps != len(trace.steps):
        raise ValueError(
            f"this trace's lens holds {trace.lens.steps} steps but the trace has "
            f"{len(trace.steps)}: the file was edited; record it again"
        )
    return trace.lens


def top1(trace: Trace) -> np.ndarray:
    """(steps, layers + 1) token ids: each layer's most likely next token, at every step."""
    return check_lens(trace).ids()[:, :, 0]


def agreement(trace: Trace) -> np.ndarray:
    """(steps, layers + 1) booleans: layer l's top-1 is the token the step finally chose."""
    return top1(trace) == np.asarray(trace.generated_ids)[:, None]


def first_agreement(trace: Trace) -> list[Optional[int]]:
    """Per step: the first layer (0 = the embedding .. n_layers = the output) whose top-1 is
    the token finally chosen; None where none is (a sampled token that was not the top-1)."""
    return [int(np.argmax(row)) if row.any() else None for row in agreement(trace)]


def settled(trace: Trace) -> list[Optional[int]]:
    """Per step: the first layer from which every later layer's top-1 is the token chosen (the
    depth at which the answer settles for good; >= `first_agreement`); None where the last
    layer's top-1 is not it (a sampled token)."""
    out = []
    for row in agreement(trace):
        if not row[-1]:
            out.append(None)
            continue
        disagree = np.flatnonzero(~row)
        out.append(int(disagree[-1]) + 1 if disagree.size else 0)
    return out


def agreement_by_layer(trace: Trace, decode_only: bool = True) -> list[float]:
    """Per layer 0 .. n_layers: the share of steps whose top-1 there is the token finally
    chosen. decode_only: the decode steps only (what a draft would have guessed: the prefill
    makes its token with no draft), else every step."""
    agree = agreement(trace)
    if decode_only and len(agree) > 1:
        agree = agree[1:]
    return [float(v) for v in agree.mean(axis=0)]


def settle_spread(trace: Trace, first: bool = False) -> Spread:
    """The depth at which the answer settles (`settled`; first=True: `first_agreement`), as a
    `viz.Spread` over the steps: median and middle half, in layers. Steps whose token the last
    layer did not pick (sampling) are left out."""
    depths = [d for d in (first_agreement(trace) if first else settled(trace)) if d is not None]
    if not depths:
        raise ValueError(
            "no step's token was its last layer's top-1 (a sampled reply): record "
            "a greedy one, viz.record(lm, prompt, lens=True)"
        )
    return Spread.of(depths)


def lens_table(trace: Trace, layers: Optional[list[int]] = None) -> str:
    """The lens as text, one line per step: the token chosen, the first layer that agreed and
    the layer it settled at, and the top-1 (with its probability) at a few `layers` (default:
    five evenly spaced, the last included); then the agreement by layer and the settle
    depth's median and middle half. What `python -m viz lens trace.json` prints."""
    from viz.views.text import token_label

    lens = check_lens(trace)
    n = lens.n_layers
    layers = (
        layers if layers is not None else sorted({round(n * f) for f in (0.2, 0.4, 0.6, 0.8, 1.0)})
    )
    bad = [l for l in layers if not isinstance(l, int) or not 0 <= l <= n]
    if bad:
        raise ValueError(
            f"layers must be numbers from 0 (the embedding) to {n} (the output), not {bad}"
        )
    ids, probs = lens.ids()[:, :, 0], lens.probs()[:, :, 0]
    first, settle = first_agreement(trace), settled(trace)

    def label(token_id: int) -> str:
        return token_label(*lens.token(int(token_id)))[:12]

    head = f"{'step':>4}  {'token':<12} {'first':>5} {'settled':>7}" + "".join(
        f"  {'layer ' + str(l):<20}" for l in layers
    )
    lines = [
        f"logit lens of {trace.model.name}: {n} layers, top {lens.top} per layer; layer 0 "
        f"= the input embedding, {n} = the output",
        head,
    ]
    for i, s in enumerate(trace.steps):
        cells = "".join(f"  {label(ids[i, l]):<12} {probs[i, l]:>7.4f}" for l in layers)
        lines.append(
            f"{i:>4}  {token_label(s.token_text, s.token_piece)[:12]:<12} "
            f"{'-' if first[i] is None else first[i]:>5} "
            f"{'-' if settle[i] is None else settle[i]:>7}{cells}"
        )
    rate = agreement_by_layer(trace)
    lines.append(
        "agreement with the final token, decode steps, by layer: "
        + ", ".join(f"{l}: {rate[l]:.0%}" for l in layers)
    )
    try:
        lines.append(
            f"over {len(trace.steps)} steps the answer settles at layer "
            f"{settle_spread(trace).text(digits=0, runs=False)} (median, middle half); "
            f"the first layer to agree: "
            f"{settle_spread(trace, first=True).text(digits=0, runs=False)}"
        )
    except ValueError as e:
        lines.append(str(e))
    return "\n".join(lines)

"""The batched decode loop gives each request exactly the tokens it gets alone."""

import pytest
import torch

import viz
from viz.perf import generate_batch

PROMPTS = ["Hello 🍕 wörld, 東京!", "Hi", "A longer prompt, so that the others need padding."]


def padded_generate(lm, prompt_ids, n):
    """Hugging Face's generate on the same left-padded batch (the reference)."""
    longest = max(len(p) for p in prompt_ids)
    pad = lm.tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (longest - len(p)) + p for p in prompt_ids])
    mask = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompt_ids])
    out = lm.model.generate(
        ids,
        attention_mask=mask,
        do_sample=False,
        max_new_tokens=n,
        min_new_tokens=n,
        pad_token_id=pad,
    )
    return out[:, longest:].tolist()


def test_batch_equals_each_request_alone(tiny):
    run = generate_batch(tiny, PROMPTS, 10)
    assert run.batch_size == 3 and run.padded_length == max(len(p) for p in run.prompt_ids)
    for prompt, ids, got in zip(PROMPTS, run.prompt_ids, run.generated_ids):
        alone = viz.record(tiny, prompt, max_new_tokens=10, stop_at_eos=False)
        assert alone.prompt_ids == ids
        assert got == alone.generated_ids


def test_batch_equals_generate_on_the_padded_batch(tiny):
    run = generate_batch(tiny, PROMPTS, 8)
    expected = padded_generate(tiny, run.prompt_ids, 8)
    # generate may suppress end-of-sequence (min_new_tokens); compare up to any such token
    eos = set(tiny.eos_token_ids)
    for got, exp in zip(run.generated_ids, expected):
        n = next((i for i, t in enumerate(got) if t in eos), len(got))
        assert got[:n] == exp[:n]


def test_token_id_prompts_and_kv_bytes(tiny_gqa):
    run = generate_batch(tiny_gqa, [[1, 2, 3, 4], [5, 6]], 5)
    assert run.prompt_ids == [[1, 2, 3, 4], [5, 6]]
    assert all(len(g) == 5 for g in run.generated_ids)
    # the cache holds the padded prompt (4 columns) + 4 fed tokens, for 2 rows
    assert run.kv_bytes == 2 * tiny_gqa.spec.kv_bytes(4 + 4)


def test_timing_from_injected_clock(tiny_gqa, fake_clock):
    run = generate_batch(tiny_gqa, ["ab", "cd"], 3, clock=fake_clock(step=1.0))
    # reads: start 0, prefill done 1, first tokens 2; each step: t0, forward done, chosen
    assert (run.prefill_forward_s, run.ttft_s) == (1.0, 2.0)
    assert run.step_forward_s == [1.0, 1.0] and run.step_s == [2.0, 2.0]
    assert run.end_to_end_s == 8.0


@pytest.mark.parametrize(
    "prompts, n, message",
    [
        ([], 3, "give at least one prompt"),
        (["ok"], 0, "max_new_tokens must be a whole number >= 1, not 0"),
        ([" "], 2, "a prompt in the batch is empty: give every request some text"),
        (
            ["x" * 600],
            2,
            r"the longest prompt \(600 tokens\) plus max_new_tokens=2 exceeds the "
            r"model's 512 positions",
        ),
    ],
)
def test_bad_input(tiny_gqa, prompts, n, message):
    with pytest.raises(ValueError, match=message):
        generate_batch(tiny_gqa, prompts, n)

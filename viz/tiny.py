"""Tiny random-weight models for tests: real transformers code, seconds to build, no files.

Like the small configs in rasbt's LLMs-from-scratch tests: a 2-layer Llama with a byte-level
tokenizer (one token per UTF-8 byte, plus the chat control tokens), so multi-byte characters
split across tokens exactly as they do in the real model. Its text is meaningless; its
mechanics (prefill, decode, KV cache, grouped-query attention) are the real ones.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from viz.load import LoadedModel, resolve_device, wrap

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
                 "{% endif %}")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in character for each byte value (byte-level BPE's alphabet)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


BYTE_VOCAB = 256 + len(SPECIALS)  # the byte tokenizer's own ids


@lru_cache(maxsize=4)
def byte_tokenizer(vocab_size: int = BYTE_VOCAB):
    """A byte-level tokenizer: ids 0-255 are bytes, then <|endoftext|>, <|im_start|>, <|im_end|>.

    With a larger `vocab_size` (a model built from a published config), every further id
    decodes to the placeholder text "[id]", so whatever a random-weight model picks can be
    shown. Text is always encoded byte by byte (there are no merges).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if vocab_size < BYTE_VOCAB:
        raise ValueError(f"vocab_size must be at least {BYTE_VOCAB} (256 bytes + "
                         f"{len(SPECIALS)} control tokens), not {vocab_size}")
    vocab = {ch: b for b, ch in _bytes_to_unicode().items()}
    vocab.update({s: 256 + i for i, s in enumerate(SPECIALS)})
    vocab.update({f"[{i}]": i for i in range(BYTE_VOCAB, vocab_size)})
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<|endoftext|>",
                                  bos_token="<|im_start|>", eos_token="<|im_end|>",
                                  pad_token="<|im_end|>")
    tok.add_special_tokens({"additional_special_tokens": SPECIALS})
    tok.chat_template = CHAT_TEMPLATE
    return tok


def tiny_config(gqa: bool = True, n_layers: int = 2, context_length: int = 512):
    """A Llama config: 4 query heads sharing 2 KV heads (gqa=True) or 4 KV heads (plain MHA)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=BYTE_VOCAB, hidden_size=64, intermediate_size=128,
        num_hidden_layers=n_layers, num_attention_heads=4, num_key_value_heads=2 if gqa else 4,
        head_dim=16, max_position_embeddings=context_length, tie_word_embeddings=True,
        bos_token_id=257, eos_token_id=258, pad_token_id=258,
    )


def tiny_model(gqa: bool = True, *, seed: int = 0, device: str = "cpu",
               n_layers: int = 2, context_length: int = 512) -> LoadedModel:
    """A random-weight 2-layer Llama (GQA or MHA) with the byte tokenizer, seeded."""
    from transformers import LlamaForCausalLM

    dev = resolve_device(device)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(tiny_config(gqa, n_layers, context_length)).to(dev)
    name = f"tiny-{'gqa' if gqa else 'mha'}"
    return wrap(model, byte_tokenizer(), name=name, device=dev, source="config",
                random_weights=True)

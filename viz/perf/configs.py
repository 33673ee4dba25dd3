"""Models built from published architecture configs, with random weights.

Weights of large models cannot always be downloaded (no network, no licence, no disk), but
their *shape* is a few numbers in a `config.json`. A model built from those numbers with random
weights runs the very same kernels and moves the very same bytes as the real one, so its
timings and memory are real; its text is meaningless. Such models are marked
`ModelSpec.random_weights = True`, and so is every trace recorded from them.

Shipped configs (viz/perf/configs/*.json): "smollm2-135m" (the default model's shape),
"llama-3.2-1b" and "llama-3.1-8b" (16 GB in bfloat16: build it on a GPU). Used in lesson 06
and by `benchmarks/gpu_check.py`.

    lm = viz.perf.from_config("llama-3.2-1b", device="cuda")   # bfloat16 on CUDA
    trace = viz.record(lm, "Hello", max_new_tokens=16, stop_at_eos=False)
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Optional, Union

import torch

from viz.load import LoadedModel, wrap
from viz.runtime import resolve_device, resolve_dtype
from viz.trace import ModelSpec, dtype_bytes

# ---- the tokenizer of models built from configs: one token per byte ------------------------
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% endif %}"
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in character for each byte value (byte-level BPE's alphabet)."""
    keep = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
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
        raise ValueError(
            f"vocab_size must be at least {BYTE_VOCAB} (256 bytes + "
            f"{len(SPECIALS)} control tokens), not {vocab_size}"
        )
    vocab = {ch: b for b, ch in _bytes_to_unicode().items()}
    vocab.update({s: 256 + i for i, s in enumerate(SPECIALS)})
    vocab.update({f"[{i}]": i for i in range(BYTE_VOCAB, vocab_size)})
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="<|endoftext|>",
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
    )
    tok.add_special_tokens({"additional_special_tokens": SPECIALS})
    tok.chat_template = CHAT_TEMPLATE
    return tok


# The byte tokenizer's control tokens sit right after the 256 byte values.
BOS_ID, EOS_ID = 256 + SPECIALS.index("<|im_start|>"), 256 + SPECIALS.index("<|im_end|>")


# ---- configs ------------------------------------------------------------------------------


def config_names() -> list[str]:
    """Names of the shipped configs, e.g. ["llama-3.1-8b", "llama-3.2-1b", "smollm2-135m"]."""
    folder = resources.files("viz.perf") / "configs"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def read_config(config: Union[str, Path, dict]) -> dict[str, Any]:
    """A config entry: {"name", "source", "note", "params", "config": {transformers keys}}.

    `config` is a shipped name (see `config_names`), a path to such a JSON file, or the dict
    itself. A bare transformers config (no "config" key) is accepted too.
    """
    if isinstance(config, dict):
        entry = dict(config)
    else:
        text = None
        if isinstance(config, str) and config in config_names():
            text = (resources.files("viz.perf") / "configs" / f"{config}.json").read_text()
        elif Path(config).is_file():
            text = Path(config).read_text(encoding="utf-8")
        if text is None:
            raise ValueError(
                f"no config named {config!r}: use one of {config_names()} or a path "
                "to a JSON file holding a transformers config"
            )
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{config} is not valid JSON: {e}") from None
    if "config" not in entry:
        entry = {"name": entry.get("name", "config"), "config": entry}
    cfg = entry["config"]
    if not isinstance(cfg, dict) or cfg.get("model_type", "llama") != "llama":
        raise ValueError("only Llama-style configs (model_type 'llama') are supported")
    entry.setdefault("name", "config")
    return entry


def config_spec(config: Union[str, Path, dict], dtype: str = "bfloat16") -> ModelSpec:
    """The `ModelSpec` a config describes, without building the model (no memory needed).

    Parameters are counted by `viz.perf.counts.param_count` (Llama-style, no biases), so an
    8B model's FLOPs and bytes can be worked out on a laptop. Lesson 06.
    """
    from viz.perf.counts import param_count

    entry = read_config(config)
    c = entry["config"]
    n_heads = c["num_attention_heads"]
    spec = ModelSpec(
        name=entry["name"],
        model_type="llama",
        n_layers=c["num_hidden_layers"],
        n_heads=n_heads,
        n_kv_heads=c.get("num_key_value_heads") or n_heads,
        head_dim=c.get("head_dim") or c["hidden_size"] // n_heads,
        hidden_size=c["hidden_size"],
        intermediate_size=c["intermediate_size"],
        vocab_size=c["vocab_size"],
        context_length=c.get("max_position_embeddings", 0),
        n_params=0,
        weight_bytes=0,
        dtype=dtype,
        random_weights=True,
    )
    spec.n_params = param_count(spec, tied=bool(c.get("tie_word_embeddings", False)))
    spec.weight_bytes = spec.n_params * dtype_bytes(dtype)
    return spec


def from_config(
    config: Union[str, Path, dict] = "smollm2-135m",
    *,
    device: Union[str, torch.device] = "auto",
    dtype: Union[None, str, torch.dtype] = None,
    seed: int = 0,
    context_length: Optional[int] = None,
) -> LoadedModel:
    """Build a random-weight model from a published architecture config (lesson 06).

    config: a shipped name ("smollm2-135m", "llama-3.2-1b", "llama-3.1-8b"), a JSON path, or
        a dict (see `read_config`).
    device, dtype: as in `viz.load_model` (bfloat16 on CUDA, float32 elsewhere by default).
        The weights are created directly on the device, so an 8B model never touches the
        CPU's memory.
    seed: seeds the random initialisation (normal, std 0.02, as transformers initialises).
    context_length: overrides max_position_embeddings (the longest sequence `record` allows).
    The tokenizer is `byte_tokenizer`: bytes in, "[id]" placeholders out.
    """
    from transformers import AutoModelForCausalLM, LlamaConfig

    entry = read_config(config)
    keys = dict(entry["config"])
    keys.update(bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=EOS_ID)
    if context_length is not None:
        keys["max_position_embeddings"] = int(context_length)
    cfg = LlamaConfig.from_dict(keys)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    torch.manual_seed(seed)
    if dev.type == "cuda":
        torch.cuda.manual_seed_all(seed)
    with torch.device(dev):  # allocate (and initialise) every tensor on the device itself
        model = AutoModelForCausalLM.from_config(cfg, dtype=dt)
    model.generation_config.eos_token_id = EOS_ID
    model.generation_config.pad_token_id = EOS_ID
    return wrap(
        model,
        byte_tokenizer(cfg.vocab_size),
        name=entry["name"],
        device=dev,
        source=f"config:{entry.get('source', entry['name'])}",
        random_weights=True,
    )

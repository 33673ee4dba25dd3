"""Load a real causal LM (and its tokenizer) onto a device: the first stage of load → record.

`load_model()` with no name gives the default model, SmolLM2-135M-Instruct, from the local
cache (see `viz.default_model`); it never touches the network. A Hugging Face hub id is fetched
only when you name one. Introduced in lesson 00 (Start here).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import urlparse

import torch

from viz import checks, default_model
from viz.compat import quiet_transformers
from viz.runtime import dtype_name, environment, resolve_device, resolve_dtype
from viz.trace import Environment, ModelSpec


@dataclass
class LoadedModel:
    """A model ready to record: the torch module, its tokenizer, the device and its shape."""

    model: Any  # a transformers causal LM in eval mode
    tokenizer: Any  # its tokenizer (with a chat template for instruct models)
    device: torch.device
    spec: ModelSpec
    source: str = ""  # where the weights came from (a folder or file)
    eos_token_ids: list[int] = field(default_factory=list)  # tokens that end a reply

    @property
    def dtype(self) -> str:
        return self.spec.dtype

    def environment(self, source: str = "measured by viz") -> Environment:
        """Describe the machine this model runs on, its threads and the time now (for a Trace
        or any measurement); `source` says what measured it."""
        return environment(self.device, self.spec.dtype, source=source)

    def __repr__(self) -> str:
        s = self.spec
        return (
            f"LoadedModel({s.name!r}: {s.n_params / 1e6:.1f} M params, {s.n_layers} layers, "
            f"{s.dtype} on {self.device})"
        )


# ---- the model's shape -----------------------------------------------------------------
def model_spec(model: Any, name: str, random_weights: bool = False) -> ModelSpec:
    """Read a model's shape from its config and count its parameters and their bytes."""
    c = model.config
    n_heads = c.num_attention_heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // n_heads
    params = list(model.parameters())  # parameters() yields tied weights once
    dtype = dtype_name(params[0].dtype)
    return ModelSpec(
        name=name,
        model_type=getattr(c, "model_type", "") or "",
        n_layers=c.num_hidden_layers,
        n_heads=n_heads,
        n_kv_heads=getattr(c, "num_key_value_heads", None) or n_heads,
        head_dim=head_dim,
        hidden_size=c.hidden_size,
        intermediate_size=getattr(c, "intermediate_size", 0) or 0,
        vocab_size=c.vocab_size,
        context_length=getattr(c, "max_position_embeddings", 0) or 0,
        n_params=sum(p.numel() for p in params),
        weight_bytes=sum(p.numel() * p.element_size() for p in params),
        dtype=dtype,
        random_weights=random_weights,
    )


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every token id that ends a reply: the tokenizer's and the generation config's."""
    ids: set[int] = set()
    for v in (
        getattr(tokenizer, "eos_token_id", None),
        getattr(getattr(model, "generation_config", None), "eos_token_id", None),
    ):
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(int(x) for x in v)
    return sorted(ids)


def wrap(
    model: Any,
    tokenizer: Any,
    *,
    name: str,
    device: torch.device,
    source: str = "",
    random_weights: bool = False,
) -> LoadedModel:
    """Put a transformers model and tokenizer into a LoadedModel (eval mode, on `device`)."""
    model.eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        device=device,
        spec=model_spec(model, name, random_weights),
        source=source,
        eos_token_ids=eos_ids(model, tokenizer),
    )


# ---- load_model ----------------------------------------------------------------------
def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return (
        len(parts) == 2
        and all(parts)
        and not name.startswith((".", "~"))
        and not name.endswith(".gguf")
    )


def _from_folder(folder: Path, *, local_only: bool, dtype: torch.dtype, device: torch.device):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=local_only)
        model = AutoModelForCausalLM.from_pretrained(
            str(folder), local_files_only=local_only, dtype=dtype
        )
    return model.to(device), tokenizer


def load_model(
    name: Optional[str] = None,
    *,
    device: Union[str, torch.device] = "auto",
    dtype: Union[None, str, torch.dtype] = None,
) -> LoadedModel:
    """Load a causal LM and its tokenizer, ready for `viz.record`.

    name:
      - None (or "SmolLM2-135M-Instruct"): the default model, from the local cache; offline.
        If it is not cached yet, the error says how to fetch it (`make model`).
      - a local folder (a transformers checkpoint) or a `.gguf` file (dequantized once, cached).
      - a Hugging Face hub id such as "HuggingFaceTB/SmolLM2-360M-Instruct": taken from the
        local hub cache, or downloaded — the only case that uses the network.
    device: "auto" (cuda, then mps, then cpu), "cpu", "cuda", "cuda:1" or "mps".
    dtype: None (float32 on CPU/MPS, bfloat16 on CUDA), "float32", "bfloat16" or "float16".
    """
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    if name is not None:
        checks.text("name", name, what="a non-empty string", fix="or None for the default model")

    if name is None or name == default_model.DEFAULT_MODEL:
        folder = default_model.default_model_path(download=False)
        model, tok = _from_folder(folder, local_only=True, dtype=dt, device=dev)
        return wrap(model, tok, name=default_model.DEFAULT_MODEL, device=dev, source=str(folder))

    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        digest = default_model.sha256_file(path)
        folder = default_model.convert_gguf(path, digest)
        model, tok = _from_folder(folder, local_only=True, dtype=dt, device=dev)
        return wrap(model, tok, name=path.name, device=dev, source=str(path))
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(
                f"{path} has no config.json: point to a transformers checkpoint folder "
                "(one saved with save_pretrained) or a .gguf file"
            )
        model, tok = _from_folder(path, local_only=True, dtype=dt, device=dev)
        return wrap(model, tok, name=path.name, device=dev, source=str(path))
    if path.suffix == ".gguf" or not _looks_like_hub_id(name):
        raise ValueError(
            f"no model file or folder at {name!r}: pass an existing folder or .gguf "
            "file, a hub id such as 'HuggingFaceTB/SmolLM2-135M-Instruct', or None "
            "for the default model"
        )
    return _load_hub(name, dt, dev)


def _hub_unreachable(timeout_s: float = 3.0) -> Optional[str]:
    """Why the hub cannot be reached (None if it can): fail in seconds, not after retries."""
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() not in ("0", "", "false", "no"):
        return "HF_HUB_OFFLINE is set"
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.create_connection((host, 443), timeout=timeout_s).close()
    except OSError as e:
        return f"{host} is unreachable: {e}"
    return None


def _load_hub(name: str, dt: torch.dtype, dev: torch.device) -> LoadedModel:
    """A hub model: from the local hub cache if there, else downloaded (network)."""
    errors = []
    for local_only in (True, False):
        if not local_only:
            reason = _hub_unreachable()
            if reason:
                errors.append(reason)
                break
        try:
            model, tok = _from_folder(Path(name), local_only=local_only, dtype=dt, device=dev)
            return wrap(model, tok, name=name, device=dev, source=f"hub:{name}")
        except Exception as e:  # OSError, HTTP and connection errors all mean "not reachable"
            errors.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    raise ValueError(
        f"could not load {name!r} from the Hugging Face hub, and it is not in the local hub "
        f"cache ({errors[-1]}). The course runs offline: use viz.load_model() for the default "
        "model (SmolLM2-135M-Instruct), or pass a local folder or .gguf file."
    )

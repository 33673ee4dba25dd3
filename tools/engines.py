"""llama.cpp's Python package, built once per CPU recipe, portably, and installed from there.

PyPI has only llama-cpp-python's source, so `make setup` compiles it. A plain `pip wheel` is a
native build (`-march=native`): on an Intel CPU with AMX it turns on llama.cpp's AMX kernels,
which died with SIGILL on a cloud VM (the tile permission is requested on one thread only),
and the wheel, cached in the home folder, would be reused on a CPU that lacks its
instructions. This module builds it instead with `GGML_NATIVE=OFF` and every instruction-set
switch set explicitly from the CPU's features:

- x86-64: SSE4.2, AVX, F16C, FMA, BMI2, AVX2, AVX-VNNI and AVX-512 (F/CD/VL/DQ/BW, VBMI, VNNI,
  BF16) where the CPU has them; AMX never (AMX_TILE/INT8/BF16 OFF).
- Arm64 (Linux): `-march=armv8-a` or `armv8.2-a` plus dotprod, fp16 and i8mm where the CPU has
  them (SVE and SME left out: their vector length is the machine's); macOS on Apple silicon:
  armv8.2-a+dotprod+fp16 (every Apple M chip has them).
- anything else: the compiler's baseline.

The wheel goes to `WHEELS/llama-cpp-python-VERSION-KEY/`, KEY a hash of the version and the
exact CMake arguments, so a wheel is only ever installed on a CPU whose recipe is the same
(a machine with fewer instructions computes another recipe and builds its own). `recipe.json`
beside it says what it was built with. pip's own wheel cache is bypassed (`--no-cache-dir`):
it keys on the source alone and would hand back a wheel built with other flags.

    python -m tools.engines recipe            the CMake arguments and the cache folder here
    python -m tools.engines install           build if missing, then install (make setup)
    python -m tools.engines install --rebuild build again (`make engines`)
    python -m tools.engines check             the installed engine's banner: no AMX
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"  # requirements-engines.txt pins the same release (tests/test_engines.py)
WHEELS = Path(os.environ.get("VIZ_WHEELS_DIR", Path.home() / ".cache" / "llm-inference-viz-wheels"))
RECIPE_VERSION = 1  # bump when the way flags are chosen changes: every cached wheel is rebuilt

# x86 switches of ggml (vendor/llama.cpp/ggml/CMakeLists.txt), each with the /proc/cpuinfo
# flags it needs. Every one is passed ON or OFF: with GGML_NATIVE=OFF, ggml turns SSE4.2, AVX,
# AVX2, BMI2, FMA and F16C on by default, which an older CPU lacks.
X86_SWITCHES = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512vbmi",)),
    ("GGML_AVX512_VNNI", ("avx512_vnni",)),
    ("GGML_AVX512_BF16", ("avx512_bf16",)),
)
# AVX-512's extensions are only used with AVX-512 itself on
NEEDS_AVX512 = {"GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"}
NEVER = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")  # the AMX path that crashed
# Always: not native, no GPU back ends, no multimodal library (viz never loads it; it is a
# third of the build), OpenMP as upstream.
COMMON = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_CUDA=OFF",
    "-DGGML_METAL=OFF",
    "-DGGML_VULKAN=OFF",
    "-DLLAVA_BUILD=OFF",
)


@dataclass(frozen=True)
class Recipe:
    """How llama.cpp is compiled for one kind of CPU."""

    machine: str  # "x86_64", "aarch64", "arm64", ...
    system: str  # "Linux", "Darwin", ...
    features: tuple[str, ...]  # the CPU features the switches were chosen from (sorted)
    cmake_args: tuple[str, ...]  # what CMAKE_ARGS holds for the build

    @property
    def key(self) -> str:
        """12 hex digits naming this build: the release, the recipe's version, the arguments."""
        text = json.dumps([PACKAGE, VERSION, RECIPE_VERSION, list(self.cmake_args)])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def folder(self) -> Path:
        return WHEELS / f"{PACKAGE}-{VERSION}-{self.key}"

    def to_json(self) -> dict:
        return {
            "package": PACKAGE,
            "version": VERSION,
            "recipe_version": RECIPE_VERSION,
            "key": self.key,
            "machine": self.machine,
            "system": self.system,
            "features": list(self.features),
            "cmake_args": list(self.cmake_args),
        }


def cpuinfo_flags(text: str) -> set[str]:
    """The feature flags of a /proc/cpuinfo text (x86 `flags`, Arm `Features`)."""
    flags: set[str] = set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            flags.update(value.split())
    return flags


def recipe_for(machine: str, system: str, flags: set[str]) -> Recipe:
    """The recipe for a CPU described by `platform.machine()`, `platform.system()` and its
    /proc/cpuinfo flags (pure: tests give it other machines' values)."""
    arch = machine.lower()
    args = list(COMMON)
    used: set[str] = set()
    if arch in ("x86_64", "amd64", "i686", "i386"):
        on = {}
        for switch, needs in X86_SWITCHES:
            on[switch] = all(f in flags for f in needs)
            used.update(f for f in needs if f in flags)
        for switch in NEEDS_AVX512:
            on[switch] = on[switch] and on["GGML_AVX512"]
        args += [f"-D{s}={'ON' if on[s] else 'OFF'}" for s, _ in X86_SWITCHES]
        args += [f"-D{s}=OFF" for s in NEVER]
    elif arch in ("aarch64", "arm64"):
        if system == "Darwin":
            march = "armv8.2-a+dotprod+fp16"
        else:
            extras = [
                tag
                for flag, tag in (("asimddp", "dotprod"), ("asimdhp", "fp16"), ("i8mm", "i8mm"))
                if flag in flags
            ]
            used.update(f for f in ("asimddp", "asimdhp", "i8mm") if f in flags)
            march = ("armv8.2-a" if extras else "armv8-a") + "".join("+" + t for t in extras)
        args.append(f"-DGGML_CPU_ARM_ARCH={march}")
    return Recipe(machine=arch, system=system, features=tuple(sorted(used)), cmake_args=tuple(args))


def this_recipe() -> Recipe:
    """The recipe for the CPU this runs on."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    return recipe_for(platform.machine(), platform.system(), cpuinfo_flags(text))


def wheel_in(folder: Path) -> Optional[Path]:
    found = sorted(folder.glob(f"{PACKAGE.replace('-', '_')}-{VERSION}-*.whl"))
    return found[-1] if found else None


def build(recipe: Recipe, python: str = sys.executable) -> Path:
    """Compile the wheel into the recipe's folder (a temporary folder renamed into place, so an
    interrupted build leaves nothing that looks finished)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        CMAKE_ARGS=" ".join(recipe.cmake_args),
        CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 1),
        FORCE_CMAKE="1",
    )
    print(
        f"compiling {PACKAGE} {VERSION} once for this CPU's recipe {recipe.key} (about 3-6 "
        f"minutes on 2 cores); CMAKE_ARGS={env['CMAKE_ARGS']}",
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(dir=WHEELS, prefix=".building-"))
    try:
        subprocess.run(
            [
                python,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--disable-pip-version-check",
                "--no-cache-dir",
                "--no-deps",
                "--no-binary",
                PACKAGE,
                f"{PACKAGE}=={VERSION}",
                "-w",
                str(tmp),
            ],
            check=True,
            env=env,
        )
        (tmp / "recipe.json").write_text(json.dumps(recipe.to_json(), indent=1) + "\n")
        if recipe.folder.exists():
            shutil.rmtree(recipe.folder)
        os.replace(tmp, recipe.folder)
        recipe.folder.chmod(0o755)  # mkdtemp made it private
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    found = wheel_in(recipe.folder)
    if found is None:
        raise SystemExit(f"pip wheel wrote no {PACKAGE} wheel into {recipe.folder}")
    return found


def install(
    recipe: Recipe,
    python: str = sys.executable,
    rebuild: bool = False,
    constraints: Sequence[str] = (),
) -> Path:
    """Build the recipe's wheel if it is missing (or `rebuild`), then install exactly that file
    (forced: an engine built with another recipe may be installed already)."""
    wheel = None if rebuild else wheel_in(recipe.folder)
    if wheel is None:
        wheel = build(recipe, python)
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + ["--no-deps", "--force-reinstall", str(wheel)], check=True)
    # its server's dependencies, within requirements.txt's ranges
    extra = [a for c in constraints for a in ("-c", c)]
    subprocess.run(pip + [f"{PACKAGE}[server]=={VERSION}", *extra], check=True)
    return wheel


# ---- checking what is installed ------------------------------------------------------
def system_info(
    gguf: Optional[str] = None,
    prompt: str = "The capital of France is",
    n_tokens: int = 4,
    timeout_s: float = 120.0,
) -> dict:
    """The installed engine's version and system-info banner, and with `gguf` the greedy
    `n_tokens` after `prompt` (token ids), read in a child process (viz.perf.engine_child's
    "check"): a wheel built for another CPU dies there with SIGILL, not here (an EngineCrash
    naming the signal and `make engines`)."""
    from viz.perf.engine_child import call

    return call(
        "check",
        {
            "gguf": str(gguf or ""),
            "prompt": prompt,
            "n_tokens": n_tokens if gguf else 0,
            "threads": os.cpu_count() or 1,
        },
        doing="checking the installed build",
        timeout_s=timeout_s,
    )


def _main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.engines", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("recipe", help="print this CPU's recipe and cache folder")
    p = sub.add_parser("install", help="build the wheel if missing, then install it")
    p.add_argument("--rebuild", action="store_true", help="build again even if cached")
    p.add_argument(
        "-c",
        "--constraint",
        action="append",
        default=[],
        help="a pip constraints file for the server's dependencies",
    )
    sub.add_parser("check", help="the installed engine's banner; fails if it uses AMX")
    args = parser.parse_args(argv)
    recipe = this_recipe()
    if args.command == "recipe":
        print(json.dumps({**recipe.to_json(), "folder": str(recipe.folder)}, indent=1))
        return 0
    if args.command == "install":
        wheel = install(recipe, rebuild=args.rebuild, constraints=args.constraint)
        print(f"{PACKAGE} {VERSION} installed from {wheel}")
        return 0
    from viz.perf.engine_child import uses_amx

    info = system_info()
    print(f"llama.cpp {info['version']}: {info['system_info']}")
    if uses_amx(info["system_info"]):
        print(
            "error: this build runs AMX code, which crashes on some CPUs: rebuild it with "
            "`make engines`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())

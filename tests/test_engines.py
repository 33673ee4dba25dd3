"""llama.cpp built portably for the CPU it runs on (tools/engines.py), and the installed one
checked: no AMX in its banner, and it decodes the default model's Q4_1 file.

The recipes are checked on other machines' /proc/cpuinfo flags (an Intel VM with AMX, an
AVX2-only laptop, an AMD EPYC, an old AVX-only CPU, Arm servers, Apple silicon), so the rules
hold for CPUs the suite never runs on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import engines
from viz.perf.engine_child import FAULT_ENV, EngineCrash, uses_amx

ROOT = Path(__file__).resolve().parents[1]

# /proc/cpuinfo `flags` of real machines (trimmed to what matters here, plus some that do not)
SAPPHIRE_RAPIDS = (
    "fpu sse sse2 ssse3 fma cx16 sse4_1 sse4_2 popcnt avx f16c bmi1 avx2 bmi2 "
    "avx512f avx512dq avx512cd avx512bw avx512vl avx512ifma avx512vbmi "
    "avx512_vbmi2 avx512_vnni avx512_bf16 avx_vnni avx512_fp16 amx_bf16 "
    "amx_tile amx_int8"
)
EPYC_ZEN4 = (
    "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c bmi1 avx2 bmi2 avx512f avx512dq "
    "avx512cd avx512bw avx512vl avx512vbmi avx512_vnni avx512_bf16"
)
LAPTOP_AVX2 = "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c bmi1 avx2 bmi2"
OLD_AVX = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx"
GRAVITON3 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp asimddp sve i8mm bf16"
GRAVITON1 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"


def x86(flags: str) -> engines.Recipe:
    return engines.recipe_for("x86_64", "Linux", set(flags.split()))


def switches(recipe: engines.Recipe) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in recipe.cmake_args)


def test_no_recipe_is_native_or_uses_amx():
    for recipe in (
        x86(SAPPHIRE_RAPIDS),
        x86(EPYC_ZEN4),
        x86(LAPTOP_AVX2),
        x86(OLD_AVX),
        engines.recipe_for("aarch64", "Linux", set(GRAVITON3.split())),
        engines.recipe_for("arm64", "Darwin", set()),
        engines.recipe_for("riscv64", "Linux", set()),
    ):
        s = switches(recipe)
        assert s["GGML_NATIVE"] == "OFF"
        assert not any(k.startswith("GGML_AMX") and v == "ON" for k, v in s.items())


def test_an_amx_cpu_gets_avx512_without_amx():
    s = switches(x86(SAPPHIRE_RAPIDS))
    assert s["GGML_AVX512"] == s["GGML_AVX512_BF16"] == s["GGML_AVX512_VNNI"] == "ON"
    assert s["GGML_AMX_TILE"] == s["GGML_AMX_INT8"] == s["GGML_AMX_BF16"] == "OFF"


def test_every_x86_switch_is_set_from_the_cpu():
    # with GGML_NATIVE=OFF ggml turns AVX2, FMA, F16C and BMI2 on by default: an AVX-only
    # CPU must get them OFF explicitly, or the wheel dies there with SIGILL
    old = switches(x86(OLD_AVX))
    assert old["GGML_AVX"] == "ON" and old["GGML_SSE42"] == "ON"
    assert all(
        old[k] == "OFF" for k in ("GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2", "GGML_AVX512")
    )
    laptop = switches(x86(LAPTOP_AVX2))
    assert laptop["GGML_AVX2"] == laptop["GGML_FMA"] == "ON"
    assert laptop["GGML_AVX512"] == laptop["GGML_AVX512_BF16"] == "OFF"
    # AVX-512's extensions need AVX-512 itself: a CPU listing VNNI alone gets neither
    odd = switches(x86(LAPTOP_AVX2 + " avx512_vnni"))
    assert odd["GGML_AVX512"] == odd["GGML_AVX512_VNNI"] == "OFF"
    assert len(switches(x86(EPYC_ZEN4))) == len(engines.COMMON) + len(engines.X86_SWITCHES) + len(
        engines.NEVER
    )


def test_arm_recipes_name_an_architecture_not_native():
    g3 = switches(engines.recipe_for("aarch64", "Linux", set(GRAVITON3.split())))
    assert g3["GGML_CPU_ARM_ARCH"] == "armv8.2-a+dotprod+fp16+i8mm"  # SVE left out
    g1 = switches(engines.recipe_for("aarch64", "Linux", set(GRAVITON1.split())))
    assert g1["GGML_CPU_ARM_ARCH"] == "armv8-a"
    mac = switches(engines.recipe_for("arm64", "Darwin", set()))
    assert mac["GGML_CPU_ARM_ARCH"] == "armv8.2-a+dotprod+fp16"
    other = switches(engines.recipe_for("riscv64", "Linux", set()))
    assert set(other) == {a[2:].split("=")[0] for a in engines.COMMON}


def test_a_wheel_is_cached_per_recipe_never_per_version_alone():
    keys = {x86(f).key for f in (SAPPHIRE_RAPIDS, EPYC_ZEN4, LAPTOP_AVX2, OLD_AVX)}
    assert len(keys) == 4  # four CPUs, four builds
    # features that change no switch change no build: two AVX2 laptops share one wheel
    assert x86(LAPTOP_AVX2).key == x86(LAPTOP_AVX2 + " sha_ni rdrand").key
    r = x86(SAPPHIRE_RAPIDS)
    assert r.folder.parent == engines.WHEELS and r.key in r.folder.name
    assert engines.VERSION in r.folder.name
    assert re.fullmatch(r"[0-9a-f]{12}", r.key)


def test_cpuinfo_flags_are_read_for_x86_and_arm():
    x = (
        "processor\t: 0\nflags\t\t: fpu avx2 amx_tile\nbugs\t\t: spectre\nprocessor\t: 1\n"
        "flags\t\t: fpu avx2 amx_tile\n"
    )
    assert engines.cpuinfo_flags(x) == {"fpu", "avx2", "amx_tile"}
    arm = "processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x41\n"
    assert engines.cpuinfo_flags(arm) == {"fp", "asimd", "asimddp"}
    assert engines.cpuinfo_flags("") == set()


def test_the_pinned_version_is_requirements_engines():
    pinned = (ROOT / "requirements-engines.txt").read_text()
    assert f"llama-cpp-python[server]=={engines.VERSION}" in pinned


def test_the_amx_banner_is_recognised():
    amx = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | "
    assert uses_amx(amx)
    assert not uses_amx(amx.replace("AMX_INT8 = 1", "AMX_INT8 = 0"))
    assert not uses_amx("CPU : SSE3 = 1 | AVX2 = 1 | OPENMP = 1 | ")


def test_the_installed_engine_has_no_amx_and_decodes_the_q4_1_file(smollm):
    from viz import default_model, record

    gguf = default_model.default_gguf_path()
    info = engines.system_info(gguf=str(gguf), n_tokens=3)  # in a child process
    assert info["version"] == engines.VERSION
    assert "AVX" in info["system_info"] or "NEON" in info["system_info"]
    assert not uses_amx(info["system_info"]), info["system_info"]
    # it computes: its greedy first token is the one transformers picks from the same
    # weights (viz's float32 model is this file dequantized); later ones may part at a near tie
    trace = record(smollm, "The capital of France is", max_new_tokens=1, embeddings=False)
    assert info["tokens"][0] == trace.steps[0].token_id


def test_a_failed_check_names_the_fix(tmp_path, monkeypatch):
    with pytest.raises(EngineCrash, match=r"exited with code 1 .*`make engines`"):
        engines.system_info(gguf=str(tmp_path / "missing.gguf"))
    monkeypatch.setenv(FAULT_ENV, "SIGILL")  # a wheel built for another CPU
    with pytest.raises(EngineCrash, match=r"died of SIGILL .*`make engines`"):
        engines.system_info()


def test_the_check_command_fails_on_an_amx_build(monkeypatch, capsys):
    monkeypatch.setattr(
        engines,
        "system_info",
        lambda: {"version": engines.VERSION, "system_info": "CPU : AVX2 = 1 | AMX_INT8 = 1 | "},
    )
    assert engines._main(["check"]) == 1
    assert "`make engines`" in capsys.readouterr().err


def test_the_recipe_command_prints_this_machines_recipe(capsys):
    assert engines._main(["recipe"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["key"] == engines.this_recipe().key and "-DGGML_NATIVE=OFF" in out["cmake_args"]

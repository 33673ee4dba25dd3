"""The CUDA path: device timing, device memory in the trace, peaks timed with CUDA events.

These run only where CUDA is present; elsewhere pytest reports them as SKIPPED (not passed).
`benchmarks/gpu_check.py` runs this file first on a GPU machine.
"""

import pytest
import torch

import viz
from viz import perf
from conftest import tiny_model
from viz.runtime import time_runs

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA device (run on a GPU machine, e.g. benchmarks/gpu_check.py)",
)


def same_weights_on_cuda(cpu: viz.LoadedModel) -> viz.LoadedModel:
    """A float32 copy of the CPU tiny model on CUDA, with the CPU model's very weights."""
    gpu = tiny_model(gqa=True, device="cuda", dtype="float32")
    gpu.model.load_state_dict(cpu.model.state_dict())
    return gpu


@pytest.fixture(scope="module")
def tiny_cuda():
    return tiny_model(gqa=True, device="cuda")


def test_auto_device_and_dtype_on_cuda():
    lm = perf.from_config(
        perf.configs.read_config("smollm2-135m")
        | {"config": {**perf.configs.read_config("smollm2-135m")["config"], "num_hidden_layers": 2}}
    )
    assert lm.device.type == "cuda" and lm.spec.dtype == "bfloat16"
    assert next(lm.model.parameters()).device.type == "cuda"


def test_record_times_the_device_and_fills_memory(tiny_cuda):
    trace = viz.record(tiny_cuda, "Hello 🍕", max_new_tokens=8, stop_at_eos=False)
    assert trace.environment.device == "cuda"
    assert "cuda.synchronize" in trace.timing.clock
    m = trace.memory
    assert m.device_weights_bytes >= tiny_cuda.spec.weight_bytes
    assert m.device_peak_bytes >= m.device_end_bytes >= m.device_weights_bytes
    # what is left after the loop holds the KV cache the trace measured, at least
    assert m.device_end_bytes - m.device_weights_bytes >= trace.steps[-1].kv_bytes > 0
    assert trace.steps[-1].kv_bytes == trace.steps[-1].kv_bytes_formula


def test_cuda_gives_the_cpu_tokens():
    # the same dtype on both (CUDA's default is bfloat16, whose 8 significant bits reorder the
    # top-5 of a random model: seen on an H200, 2026-12-04)
    # and the same weights (CUDA's random generator draws other numbers than the CPU's)
    cpu = tiny_model(gqa=True, seed=3)
    gpu = same_weights_on_cuda(cpu)
    a = viz.record(cpu, "Hello", max_new_tokens=6, stop_at_eos=False, log_top=5)
    b = viz.record(gpu, "Hello", max_new_tokens=6, stop_at_eos=False, log_top=5)
    assert a.steps[0].top_ids == b.steps[0].top_ids
    torch.testing.assert_close(
        torch.tensor(a.steps[0].top_logits),
        torch.tensor(b.steps[0].top_logits),
        atol=1e-3,
        rtol=1e-3,
    )


def test_cuda_events_agree_with_synchronize():
    a = torch.randn(4096, 4096, device="cuda")
    events, timer = time_runs(lambda: a @ a, torch.device("cuda"), repeats=5)
    assert timer == "cuda events"
    import time

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        a @ a
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / 5
    assert 0.3 < min(events) / wall < 3  # same work, two clocks


def test_peaks_on_cuda():
    p = perf.measure_peaks("cuda", buffer_bytes=256 << 20, repeats=3, budget_s=2.0)
    assert p.timer == "cuda events" and p.dtype == "bfloat16"
    assert p.flops_per_s > 1e12 and p.bytes_per_s > 1e11  # any recent GPU
    assert p.cpu_features == [] and p.flops_spread.runs >= 1  # the host's CPU does not matter


def test_batch_on_cuda_fills_memory(tiny_cuda):
    run = perf.generate_batch(tiny_cuda, ["Hello", "Hi"], 4)
    assert run.memory.device_peak_bytes >= run.memory.device_end_bytes > 0
    cpu = tiny_model(gqa=True)
    same = perf.generate_batch(same_weights_on_cuda(cpu), ["Hello", "Hi"], 4)
    assert same.generated_ids == perf.generate_batch(cpu, ["Hello", "Hi"], 4).generated_ids


def test_compiled_step_in_a_cuda_graph_gives_the_eager_tokens(tiny_cuda):
    """lesson 13's overhead remedy on a GPU: the step compiled and replayed as a CUDA graph."""
    from viz.perf.compiled import measure_compiled_step

    run = measure_compiled_step(
        tiny_cuda, new_tokens=5, repeats=2, mode="reduce-overhead", compile_threads=4
    )
    assert run.mode == "reduce-overhead" and run.device.startswith("cuda")
    assert run.same_tokens and run.graphs == 1  # one trace, replayed; the cache kept its place
    assert run.compiled.runs == 2 * 4 and run.compile_s > run.compiled.high

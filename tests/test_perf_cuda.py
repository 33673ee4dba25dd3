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

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA device (run on a GPU machine, e.g. "
                                       "benchmarks/gpu_check.py)")


@pytest.fixture(scope="module")
def tiny_cuda():
    return tiny_model(gqa=True, device="cuda")


def test_auto_device_and_dtype_on_cuda():
    lm = perf.from_config(perf.configs.read_config("smollm2-135m") | {"config": {
        **perf.configs.read_config("smollm2-135m")["config"], "num_hidden_layers": 2}})
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
    cpu, gpu = tiny_model(gqa=True, seed=3), tiny_model(gqa=True, seed=3, device="cuda")
    a = viz.record(cpu, "Hello", max_new_tokens=6, stop_at_eos=False, log_top=5)
    b = viz.record(gpu, "Hello", max_new_tokens=6, stop_at_eos=False, log_top=5)
    assert a.steps[0].top_ids == b.steps[0].top_ids
    torch.testing.assert_close(torch.tensor(a.steps[0].top_logits),
                               torch.tensor(b.steps[0].top_logits), atol=1e-3, rtol=1e-3)


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
    cpu_run = perf.generate_batch(tiny_model(gqa=True), ["Hello", "Hi"], 4)
    assert run.generated_ids == cpu_run.generated_ids

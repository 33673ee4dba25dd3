"""A lesson's own small kernel, timed the way the peaks are timed.

One argmax (lesson 02), one matrix product or one weight matrix's `linear` (lessons 03, 06):
`repeats` calls after one untimed warm-up, their median and the middle half
(`viz.spread.Spread`), with the clock `viz.perf.machine.peaks` uses (CUDA events on a GPU, a
synchronized perf_counter elsewhere: `viz.runtime.time_runs`).
"""

from __future__ import annotations

from typing import Union

import torch

from viz import checks
from viz.runtime import resolve_device, time_runs
from viz.spread import Spread


def time_kernel(fn, *, repeats: int = 7, device: Union[str, torch.device] = "cpu") -> float:
    """Median seconds of one call of `fn`, over `repeats` calls after one untimed warm-up.

    The timer `measure_peaks` uses (CUDA events on a GPU, a synchronized perf_counter
    elsewhere), for a lesson's own small measurement: one argmax (lesson 02), one matrix
    product (lessons 03 and 06).
    """
    return kernel_spread(fn, repeats=repeats, device=device).median


def kernel_spread(fn, *, repeats: int = 7, device: Union[str, torch.device] = "cpu") -> Spread:
    """Seconds of one call of `fn` with its spread: `repeats` calls after one untimed warm-up,
    their median and middle half (`viz.Spread`). What `time_kernel` reports the median of."""
    checks.whole("repeats", repeats, 1)
    times, _ = time_runs(fn, resolve_device(device), repeats)
    return Spread.of(times)


def linear_spread(weight: torch.Tensor, rows: int, *, repeats: int = 7) -> Spread:
    """`linear_seconds` with its spread: the median of `repeats` calls and their middle half
    (lessons 03, 06: how fast the kernel of every weight matrix streams it, 1 row or several)."""
    checks.whole("rows", rows, 1)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError(
            "weight must be a 2-D tensor (out features × in features), e.g. lm.model.lm_head.weight"
        )
    w = weight.detach()
    x = torch.ones(rows, w.shape[1], dtype=w.dtype, device=w.device)
    with torch.inference_mode():
        return kernel_spread(
            lambda: torch.nn.functional.linear(x, w), repeats=repeats, device=w.device
        )


def linear_seconds(weight: torch.Tensor, rows: int, *, repeats: int = 7) -> float:
    """Median seconds of `torch.nn.functional.linear` of `rows` input rows with `weight`.

    The kernel every weight matrix of a forward pass runs: 1 row is a matrix-vector product
    (batch-1 decode), 2 or more a matrix-matrix product (a prefill, a batch). Divide the
    weight's bytes by it for the speed that kernel streams the weights at (lessons 03, 06).
    `linear_spread` gives the spread too.
    """
    return linear_spread(weight, rows, repeats=repeats).median

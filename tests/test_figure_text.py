"""Every plotly view, drawn in Chromium on a plain page as wide as a notebook's output, has
readable text: no two texts overlap, none is cut off by the figure's edge (tests/figure_text.py
measures). The quick check of issue 14's item 2 (seconds, no JupyterLab): the lessons' own
figures are measured again in the lesson browser test, the report's in its browser test.

Every view that names a machine is drawn again with each of the longest real device names
(`DEVICE_NAMES`) at the narrowest notebook width (`NARROW_PX`): a figure must not depend on how
long the name of the learner's machine is. (Lesson 06's roofline once ran its legend into the
tick labels on a machine reporting "Intel(R) Xeon(R) Processor": only "AMD EPYC" had been
drawn.)

Every figure, live: artifacts/figures/figures.html (the page measured, plotly.js inside: open it
in a browser); a screenshot of each figure with a problem: artifacts/figures/NAME.png. (A
screenshot of each of the ~80 figures took 32 s of every test run.)
"""

from __future__ import annotations

import json
import shutil

import pytest

import viz
from figure_text import figure_problems, page_text_problems
from viz import perf, views
from viz.views.widgets import CONFIG

ROOT = __import__("tools.course", fromlist=["ROOT"]).ROOT
ARTIFACTS = ROOT / "artifacts" / "figures"
WIDTH_PX = 900  # a notebook output's width in JupyterLab (1280 px window, file browser open)
LONG_LABEL = "my laptop, 8 threads, load 2.4"  # labels as long as a learner's may be
LONG_DEVICE = "Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"
# Model names as real machines report them (Linux's /proc/cpuinfo, torch.cuda.get_device_name;
# an Arm board's "Processor" line), long ones first: drawn in every view that names a device.
DEVICE_NAMES = [
    "AMD Ryzen 7 PRO 7840U w/ Radeon 780M Graphics",
    "NVIDIA GeForce RTX 3050 Ti Laptop GPU",
    "13th Gen Intel(R) Core(TM) i9-13900HX",
    "AMD EPYC 7B13 64-Core Processor",
    "Intel(R) Xeon(R) Platinum 8480+",
    "ARMv8 Processor rev 1 (v8l)",
    "Intel(R) Xeon(R) Processor",
    "NVIDIA H100 80GB HBM3",
    "Apple M3 Max",
]
# The narrowest output the lessons are drawn in: JupyterLab's is ~840 px in a 1280-px window
# with the file browser open (the lesson browser test's, where lesson 06's legend met its tick
# labels); 800 px leaves a margin, as for the embeddings map above. (At 700 px titles wrapped
# for WIDTH_PX are cut off whatever the device is called.)
NARROW_PX = 800


def figures(tiny_gqa) -> dict:
    """name → plotly figure: every trace view on a real recorded trace (the shipped CPU chat
    trace: 30 layers, real tokens) and on a tiny one with emoji, CJK and attention; the sweep
    and roofline views on the shipped references; the new lesson views."""
    real = perf.load_reference("cpu-chat-trace")
    tiny = viz.record(
        tiny_gqa,
        "Hi 🍕 東京, the cache",
        max_new_tokens=12,
        stop_at_eos=False,
        attention=True,
        chat=True,
    )
    other = viz.record(tiny_gqa, "Hello", max_new_tokens=6, stop_at_eos=False, use_cache=False)
    out = {}
    for name, t in (("real", real), ("tiny", tiny)):
        out.update(
            {
                f"{name}-embeddings": views.embeddings_figure(t),
                f"{name}-distribution": views.distribution_figure(t, limit=10),
                f"{name}-explorer": views.explorer_figure(t),
                f"{name}-whatif": views.whatif_figure(t, 1),
                f"{name}-whatif-hot": views.whatif_figure(t, 1, temperature=1.5, top_k=5),
                f"{name}-kv": views.kv_figure(t),
                f"{name}-timeline": views.timeline_figure(t),
            }
        )
    # the 2-D map's labels are placed for an 800 px output (JupyterLab's is ~840): check there
    out["tiny-embeddings-narrow"] = views.embeddings_figure(tiny).update_layout(width=800)
    out["tiny-attention"] = views.attention_figure(tiny, layer=1)
    out["compare"] = views.compare_figure(real, other)
    # Lesson 07: the learner's trace beside a reference, both with long labels and one with a
    # long device name (the view wraps them; callers never shorten a label).
    mine, ref_trace = perf.load_reference("cpu-chat-trace"), perf.load_reference("cpu-chat-trace")
    mine.label, mine.environment.device_name = LONG_LABEL, LONG_DEVICE
    ref_trace.label = "project CPU, 2 threads, load 1.3"
    out["compare-long-labels"] = views.compare_figure(mine, ref_trace)
    for ref in ("cpu-prompt-sweep", "cpu-context-sweep", "cpu-cache-sweep", "cpu-batch-sweep"):
        sweep = perf.load_reference(ref)
        out[ref] = views.sweep_figure(sweep)
        # Lessons 03-06: the learner's sweep beside the shipped reference, long labels.
        mine = perf.load_reference(ref)
        mine.label, mine.environment.device_name = LONG_LABEL, LONG_DEVICE
        out[f"{ref}-two"] = views.sweep_figure(mine, sweep)
    out["throughput-latency"] = views.throughput_latency_figure(
        perf.load_reference("cpu-batch-sweep")
    )
    roof = perf.load_reference("cpu-roofline")
    out["roofline"] = views.roofline_figure(roof)
    slower = perf.load_reference("cpu-roofline")  # a second machine, 4× slower (lesson 06)
    slower.label = "slower machine"
    for p in slower.points:
        p.seconds *= 4
    out["roofline-two"] = views.roofline_figure(slower, roof)
    out.update(ridge_figures())
    out["layer-diagram"] = views.layer_diagram_figure(real.model, 37, 64)
    out["layer-diagram-short"] = views.layer_diagram_figure(real.model, 13, 20)  # lesson 03
    runs = [perf.generate_batch(tiny_gqa, ["ab"] * b, 5) for b in (1, 4)]
    out["batch-timeline"] = views.batch_timeline_figure(runs[1], runs[0])
    wall = perf.load_reference("cpu-memory-wall")  # lesson 08
    out["memory-wall"] = views.wall_figure(wall)
    out["memory-wall-two"] = views.wall_figure(wall, wall)
    # JupyterLab can give an output less than WIDTH_PX (the browser test saw the reference's
    # labels collide there): the same figure at 700 px
    out["memory-wall-narrow"] = views.wall_figure(wall).update_layout(width=700)
    shapes = ["smollm2-135m", "smollm2-360m", "llama-3.2-1b", "smollm2-1.7b", "llama-3.1-8b"]
    out["memory-wall-gpu"] = views.wall_figure(
        perf.computed_wall(shapes, **perf.H100_SXM, fixed_cost_per_layer_s=3e-4),
        perf.computed_wall(shapes, **perf.H100_SXM),
    )
    out["bytes-whatif"] = views.bytes_whatif_figure(wall, 0.5)
    # The GPU reference (lessons 06, 07, 08, 13): an H200's wall, its busy-time roofline, its
    # trace beside the CPU's, its CUDA-graph steps
    out["memory-wall-h200"] = views.wall_figure(perf.gpu_wall())
    out["roofline-h200-busy"] = views.roofline_figure(
        perf.busy_roofline(perf.gpu_reference("busy-sweep", "llama-3.1-8b"))
    )
    out["compare-h200"] = views.compare_figure(real, perf.gpu_reference("trace"))
    out["compiled-h200"] = views.compiled_figure(
        [perf.gpu_reference("compiled-step", name) for name in perf.GPU_MODELS]
    )
    # Lesson 11: the long-context sweeps on the tiny model, and the decode chart with numbers
    # like a native run's (a first point just under a tick: its label once met the tick's)
    out["long-prefill"] = views.sweep_figure(
        perf.long_prefill_sweep(tiny_gqa, [32, 64, 128], progress=False)
    )
    # (the tiny model's prefill takes ten-thousandths of a second: 0.0008 s tick labels, wide
    # ones, that the axis title once sat on) and with such seconds chosen, not measured
    small = perf.long_prefill_sweep(tiny_gqa, [32, 64, 128], progress=False)
    for column in ("prefill_s", "attention_s", "rest_s"):
        small.columns[column] = [0.0003, 0.00045, 0.00068]
    out["long-prefill-small"] = views.sweep_figure(small)
    out["prefix-cache"] = views.sweep_figure(
        perf.prefix_cache_sweep(tiny_gqa, 64, [0.0, 0.5, 0.9], repeats=1, progress=False)
    )
    out["chat-turns"] = views.sweep_figure(
        perf.chat_turns(tiny_gqa, ["hi", "and more"], reply_tokens=3, repeats=1, progress=False)
    )
    out["long-decode"] = views.long_decode_figure(*long_decode_example(tiny_gqa))
    out["kv-quant"] = views.kv_quant_figure(*kv_quant_example(tiny_gqa))  # lesson 11
    quant, peaks = kv_quant_example(tiny_gqa, with_float=False)  # beside the float32 sweep
    out["kv-quant-beside"] = views.kv_quant_figure(
        quant, peaks, float_sweep=long_decode_example(tiny_gqa)[0]
    )
    out.update(lens_figures())  # lesson 14
    out.update(serving_and_remedy_figures(tiny_gqa))  # lessons 09, 10, 12, 13
    # empty states: a message that says why, wrapped, whatever its length
    one = viz.record(tiny_gqa, "x", max_new_tokens=1, lens=True, embeddings=False)
    out["empty-early-exit"] = views.early_exit_figure(one)
    out["empty-embeddings"] = views.embeddings_figure(one)
    out["empty-attention"] = views.attention_figure(one)
    # Lesson 13: one decode step taken apart
    out["step-profile"] = views.step_profile_figure(
        perf.profile_decode_step(tiny_gqa, context=4, steps=2, warmup=0)
    )
    # Lesson 10: what a token costs, the CPU reference beside the H200's (long labels too)
    cpu_cost = perf.cost(
        perf.load_reference("cpu-batch-sweep"),
        0.10,
        prefill=perf.load_reference("cpu-prompt-sweep"),
    )
    out["cost"] = views.cost_figure(
        cpu_cost,
        perf.cost(
            perf.gpu_reference("busy-sweep", "llama-3.1-8b"),
            perf.EXAMPLE_PRICES["h200"],
            prefill=perf.gpu_reference("prompt-sweep", "llama-3.1-8b"),
        ),
    )
    mine = perf.load_reference("cpu-batch-sweep")
    mine.label, mine.environment.device_name = LONG_LABEL, LONG_DEVICE
    out["cost-long-labels"] = views.cost_figure(perf.cost(mine, 0.10), cpu_cost)
    return out


def serving_and_remedy_figures(tiny_gqa) -> dict:
    """Lessons 09 and 10's serving views on load runs and sweeps made by hand (the serving
    tests' own), a schedule recorded on the tiny model; lessons 12 and 13's on the shipped
    references."""
    from test_serve_metrics import make_run, rec
    from test_serve_sweep import make_sweep
    from viz.serve import record_schedule

    def run(label, gap):
        return make_run(
            [
                rec(
                    i,
                    0.2 * i,
                    [0.2 * i + 0.3 + gap * k for k in range(6)],
                    0.2 * i + 0.3 + gap * 5,
                    out=6,
                )
                for i in range(6)
            ],
            label=label,
        )

    batched, alone = run("continuous batching", 0.08), run("one at a time", 0.05)
    schedule, _ = record_schedule(
        tiny_gqa.model,
        [[3] * 40, [4] * 40, [5] * 40],
        max_new_tokens=3,
        page_size=16,
        num_blocks=32,
        max_batch_tokens=48,
    )
    formats = perf.load_reference("cpu-formats")
    return {
        "request-timeline": views.request_timeline_figure(batched),
        "serving-tradeoff": views.serving_tradeoff_figure([alone, batched]),
        "itl-distribution": views.itl_distribution_figure([alone, batched]),
        "schedule": views.schedule_figure(schedule),
        "page-table": views.page_table_figure(schedule),
        "rate-sweep": views.rate_sweep_figure(
            [make_sweep("continuous batching"), make_sweep("one at a time")]
        ),
        "pareto": views.pareto_figure([[alone], [batched]]),
        "formats": views.formats_figure(formats, formats.read_bytes_per_s),
        "format-choice": views.format_choice_figure(*format_choice(formats, ["Q4_1"])),
        "format-choice-all": views.format_choice_figure(*format_choice(formats, None)),
        "generations": views.generations_figure(perf.generations_table()),
        "graph-step": views.graph_step_figure(perf.graph_steps()),
    }


def format_choice(formats, keep):
    """(a FormatRun of float32 and the `keep` formats (None: all), greedy tokens as text):
    lesson 12's prompt box with long words, emoji, CJK and a control token, where the other
    formats depart from float32's text at different tokens."""
    import dataclasses

    words = [
        "Rayleigh",
        " scattering",
        " 🌈",
        " 東京",
        " makes",
        " shorter",
        " wavelengths",
        " scatter",
        " more,",
        " so",
        " the",
        " sky",
        " looks",
        " blue",
        " (mostly).",
        "\n",
        " At",
        " sunset",
        " the",
        " light",
        " travels",
        " further",
        "<|im_end|>",
    ]
    points = [p for p in formats.points if keep is None or p.format in keep + ["float32"]]
    run = dataclasses.replace(formats, points=points)
    tokens = {}
    for i, p in enumerate(points):
        text = (words * 2)[: len(p.token_ids)]
        if i:  # each other format departs at a different token
            text = text[: p.same_tokens] + [" differently"] * (len(text) - p.same_tokens)
        tokens[p.label] = text
    return run, tokens


# Lesson 06's rooflines as CI runs measured them: (peak FLOP/s, read bytes/s, passes: (label,
# phase, FLOP per byte, achieved FLOP/s)); what went wrong in the browser, in the comment.
SEEN_IN_CI = {
    "roofline-two-as-ci-saw": (
        97605546032.37,
        12585926329.25,
        [  # ridge 7.76 over 'prefill 64'
            ("prefill", "prefill", 4.05499, 15557466068.0),
            ("prefill 32", "prefill", 12.7646, 25835614064.4),
            ("prefill 128", "prefill", 51.0909, 39509679040.1),
            ("decode", "decode", 0.501065, 5436216349.5),
            ("decode B=1", "decode", 0.501236, 5611644097.9),
            ("decode B=2", "decode", 1.0011, 6790440137.7),
            ("decode B=4", "decode", 1.99672, 12683823684.3),
            ("decode B=8", "decode", 3.97172, 17030757573.8),
            ("decode B=16", "decode", 7.85798, 27112994562.9),
        ],
    ),
    "roofline-two-as-ci-saw-2": (
        94141064763.98,
        21139712839.32,
        [  # two 'decode B=2' touched
            ("prefill", "prefill", 4.05499, 11187571803.9),
            ("prefill 32", "prefill", 12.76461, 40842801371.9),
            ("prefill 128", "prefill", 51.09087, 64754120076.7),
            ("decode", "decode", 0.50106, 5796006495.4),
            ("decode B=1", "decode", 0.50124, 5382776075.7),
            ("decode B=2", "decode", 1.0011, 5651382017.5),
            ("decode B=4", "decode", 1.99672, 10508551983.4),
            ("decode B=8", "decode", 3.97172, 9123960368.4),
            ("decode B=16", "decode", 7.85798, 15528413591.3),
        ],
    ),
}


def seen_roofline(flops_per_s: float, bytes_per_s: float, passes: list) -> "perf.Roofline":
    """A learner's roofline as a run measured it: its peaks, and (label, phase, FLOP per byte,
    achieved FLOP/s) for each pass."""
    seen = perf.load_reference("cpu-roofline")
    seen.label = "this machine"
    seen.peaks.flops_per_s, seen.peaks.bytes_per_s = flops_per_s, bytes_per_s
    seen.points = [
        perf.RooflinePoint(
            label=label,
            phase=phase,
            batch=1,
            input_tokens=1,
            context_tokens=1,
            flops=y * 0.1,
            bytes=y * 0.1 / x,
            seconds=0.1,
        )
        for label, phase, x, y in passes
    ]
    return seen


def ridge_figures() -> dict:
    """Rooflines whose ridge annotation sits among the points' labels: a learner's peaks put the
    ridge anywhere. The learner's roofline (alone, and beside the shipped one as in lesson 06)
    with its ridge at each prefill point's intensity, and the one CI met: lesson 06's two
    rooflines with the ridge at 7.76 FLOP/byte, where 'prefill 64' (of the shipped one) sat."""
    out = {}
    for p in perf.load_reference("cpu-roofline").points:
        if p.phase != "prefill" or p.label == "prefill":
            continue
        mine = perf.load_reference("cpu-roofline")
        mine.label = "this machine"
        mine.peaks.flops_per_s = p.intensity * mine.peaks.bytes_per_s
        out[f"roofline-ridge-at-{p.label}"] = views.roofline_figure(mine)
        out[f"roofline-two-ridge-at-{p.label}"] = views.roofline_figure(
            mine, perf.load_reference("cpu-roofline")
        )
    # CI's (2-core EPYCs): peaks and passes as lesson 06 measured them, beside the shipped one
    for name, (flops_per_s, bytes_per_s, passes) in SEEN_IN_CI.items():
        out[name] = views.roofline_figure(
            seen_roofline(flops_per_s, bytes_per_s, passes), perf.load_reference("cpu-roofline")
        )
    return out


def long_decode_example(tiny_gqa):
    """(a long_decode sweep, peaks) with numbers like a native run's (lesson 11)."""
    decode = perf.long_decode_sweep(tiny_gqa, [0, 100, 200, 400], repeats=1, progress=False)
    decode.model = perf.config_spec("smollm2-135m", "float32")
    decode.columns.update(
        {
            "context_tokens": [0, 2048, 4096, 8191],
            "decode_step_s": [0.0385, 0.0514, 0.0597, 0.0834],
            "empty_step_s": [0.0510, 0.0431, 0.0430, 0.0425],
            "step_bytes": [538108416, 632480256, 726852096, 915549696],
        }
    )
    decode.spreads = {}
    peaks = perf.Peaks(
        device="cpu",
        device_name=LONG_DEVICE,
        dtype="float32",
        threads=2,
        flops_per_s=2e11,
        bytes_per_s=45e9,
        matmul_n=2048,
        buffer_bytes=2**28,
        repeats=7,
        timer="perf_counter",
    )
    return decode, peaks


def device_figures(tiny_gqa) -> dict:
    """name → plotly figure: every view that names a machine (in a title, a legend, a panel's
    title), each drawn once per name of `DEVICE_NAMES` — the learner's run named by it, the
    reference beside it by the next one. Drawn at NARROW_PX (`page_html`)."""
    out = {}
    profile = perf.profile_decode_step(tiny_gqa, context=4, steps=2, warmup=0)
    decode, peaks = long_decode_example(tiny_gqa)
    quant, _ = kv_quant_example(tiny_gqa)
    for i, name in enumerate(DEVICE_NAMES):
        other = DEVICE_NAMES[(i + 1) % len(DEVICE_NAMES)]
        # lesson 06: the learner's roofline, then beside the shipped one, then the GPU's
        roof = perf.load_reference("cpu-roofline")
        roof.label, roof.peaks.device_name = "this machine", name
        ref = perf.load_reference("cpu-roofline")
        ref.peaks.device_name = other
        out[f"names-{i}-roofline"] = views.roofline_figure(roof)
        out[f"names-{i}-roofline-two"] = views.roofline_figure(roof, ref)
        # a label is drawn as given (a learner may name a run after the machine in full): the
        # legend's columns must hold any length, not only a short name's
        long = perf.load_reference("cpu-roofline")
        long.label, long.peaks.device_name = f"{LONG_LABEL} · {name}", name
        out[f"names-{i}-roofline-two-long"] = views.roofline_figure(long, ref)
        busy = perf.busy_roofline(perf.gpu_reference("busy-sweep", "llama-3.1-8b"))
        busy.peaks.device_name = name
        out[f"names-{i}-roofline-busy"] = views.roofline_figure(busy)
        # lessons 03-06 and 11: sweeps alone and beside the shipped ones
        for kind in ("prompt", "context", "cache", "batch"):
            mine, shipped = (perf.load_reference(f"cpu-{kind}-sweep") for _ in range(2))
            mine.label, mine.environment.device_name = LONG_LABEL, name
            shipped.environment.device_name = other
            out[f"names-{i}-{kind}-sweep"] = views.sweep_figure(mine)
            out[f"names-{i}-{kind}-sweep-two"] = views.sweep_figure(mine, shipped)
            if kind == "batch":  # the shipped machine 3× slower: its points apart from mine
                shipped.columns["decode_step_s"] = [3 * v for v in shipped.columns["decode_step_s"]]
                shipped.columns["aggregate_decode_tokens_per_s"] = [
                    v / 3 for v in shipped.columns["aggregate_decode_tokens_per_s"]
                ]
                out[f"names-{i}-throughput-latency"] = views.throughput_latency_figure(
                    mine, shipped
                )
        # lessons 04, 05, 07: a trace's timeline and cache, and beside the GPU's trace
        trace = perf.load_reference("cpu-chat-trace")
        trace.label, trace.environment.device_name = LONG_LABEL, name
        gpu_trace = perf.gpu_reference("trace")
        gpu_trace.environment.device_name = other
        out[f"names-{i}-timeline"] = views.timeline_figure(trace)
        out[f"names-{i}-kv"] = views.kv_figure(trace)
        out[f"names-{i}-compare"] = views.compare_figure(trace, gpu_trace)
        # lesson 08: the memory wall, alone and beside the GPU's; a computed one
        wall = perf.load_reference("cpu-memory-wall")
        wall.device_name = name
        gpu = perf.gpu_wall()
        gpu.device_name = other
        out[f"names-{i}-memory-wall"] = views.wall_figure(wall)
        out[f"names-{i}-memory-wall-two"] = views.wall_figure(wall, gpu)
        computed = perf.computed_wall(
            ["smollm2-135m", "llama-3.2-1b", "llama-3.1-8b"],
            **{**perf.H100_SXM, "device_name": name},
        )
        out[f"names-{i}-memory-wall-computed"] = views.wall_figure(computed)
        # lesson 11: the decode step against its bytes, with this machine's read peak
        decode.environment.device_name = peaks.device_name = name
        out[f"names-{i}-long-decode"] = views.long_decode_figure(decode, peaks)
        quant.environment.device_name = name
        out[f"names-{i}-kv-quant"] = views.kv_quant_figure(quant, peaks)
        # lesson 13: one decode step taken apart
        profile.device_name = name
        out[f"names-{i}-step-profile"] = views.step_profile_figure(profile)
    return out


def page_html(figs: dict, widths: dict | None = None) -> str:
    """A page with each figure in a box as wide as a notebook's output: WIDTH_PX, or its
    width in `widths` (name → px)."""
    from plotly.offline import get_plotlyjs

    widths = widths or {}
    divs = "".join(
        f'<h3>{name}</h3><div id="{name}" style="width:{widths.get(name, WIDTH_PX)}px"></div>'
        for name in figs
    )
    data = {name: json.loads(fig.to_json()) for name, fig in figs.items()}
    return (
        f"<html><head><meta charset='utf-8'><script>{get_plotlyjs()}</script></head>"
        f"<body style='font-family:sans-serif'>{divs}<script>"
        f"const FIGS = {json.dumps(data)};"
        "for (const [id, f] of Object.entries(FIGS)) "
        f"Plotly.newPlot(id, f.data, f.layout, {json.dumps(CONFIG)});"
        "</script></body></html>"
    )


PLOTLY_VIEWS = [n for n in views.__all__ if n.endswith("_figure")]  # every plotly view


def built_twice(build):
    """`build()` with every plotly view called twice on the same input: (what build returned,
    {view name: calls}, names of the views whose two figures' JSON differed or held a uid)."""
    called: dict[str, int] = {}
    differ: set[str] = set()

    def twice(name, view):
        def wrapper(*args, **kwargs):
            first, second = view(*args, **kwargs), view(*args, **kwargs)
            text = first.to_json()
            if text != second.to_json() or '"uid"' in text:
                differ.add(name)
            called[name] = called.get(name, 0) + 1
            return first

        return wrapper

    with pytest.MonkeyPatch.context() as patch:
        for name in PLOTLY_VIEWS:
            patch.setattr(views, name, twice(name, getattr(views, name)))
        return build(), called, differ


@pytest.fixture(scope="module")
def built(tiny_gqa):
    """Every figure of the check: `figures` (every view, each call made twice) and
    `device_figures` (the same views again, with other names: made once; twice each took
    ~15 s of every test run for no view that `figures` does not call twice)."""
    (plain, called, differ) = built_twice(lambda: figures(tiny_gqa))
    return (plain, device_figures(tiny_gqa)), called, differ


def test_every_plotly_view_is_deterministic(built):
    """nbval compares a saved figure's JSON with a fresh one: every plotly view must build the
    same JSON from the same input, with no random trace uid. Every `views.*_figure` (from
    `views.__all__`) is drawn by `figures`, each call made twice."""
    _, called, differ = built
    assert not differ, f"not the same JSON twice (or a uid): {sorted(differ)}"
    assert set(called) == set(PLOTLY_VIEWS), (
        f"not drawn by figures(): {sorted(set(PLOTLY_VIEWS) - set(called))}"
    )


def test_a_view_that_changes_is_caught(monkeypatch):
    counter = iter(range(10))
    original = views.sweep_figure
    monkeypatch.setattr(
        views, "sweep_figure", lambda s: original(s).update_layout(title=str(next(counter)))
    )
    sweep = perf.load_reference("cpu-prompt-sweep")
    _, called, differ = built_twice(lambda: views.sweep_figure(sweep))
    assert called == {"sweep_figure": 1} and differ == {"sweep_figure"}


@pytest.fixture(scope="module")
def measured(browser, built, tmp_path_factory):
    """name → the text problems of each figure, and the page's script errors: `figures` at
    WIDTH_PX, `device_figures` (names beginning "names-") at NARROW_PX."""
    (plain, named), _, _ = built
    figs = {**plain, **named}
    path = tmp_path_factory.mktemp("figures") / "figures.html"
    path.write_text(page_html(figs, {name: NARROW_PX for name in named}), encoding="utf-8")
    page = browser.new_page()
    page.set_viewport_size({"width": WIDTH_PX + 60, "height": 1000})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function(
        f"document.querySelectorAll('.js-plotly-plot svg.main-svg').length >= {len(figs)}",
        timeout=60_000,
    )
    page.wait_for_timeout(500)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):  # a picture there is of a problem of this run
        old.unlink()
    shutil.copyfile(path, ARTIFACTS / "figures.html")
    _, drawn = page_text_problems(page)  # every figure measured at once (each div: one plot)
    by_id = {f["id"]: figure_problems(f) for f in drawn}
    results = {name: by_id.get(name, ["not drawn"]) for name in figs}
    for name, problems in results.items():
        if problems:
            page.locator(f"[id='{name}']").screenshot(path=str(ARTIFACTS / f"{name}.png"))
    (ARTIFACTS / "text-problems.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    yield results, errors
    page.close()


def unreadable(results: dict, names: bool) -> str:
    """The problems of the figures drawn with `DEVICE_NAMES` (names=True) or of the others,
    one per line ("" if there are none)."""
    return "\n".join(
        f"{name}: {p}"
        for name, problems in results.items()
        if name.startswith("names-") == names
        for p in problems
    )


def test_no_text_overlaps_or_is_cut_off_in_any_view(measured):
    results, errors = measured
    assert not errors
    bad = unreadable(results, names=False)
    assert not bad, (
        "unreadable text (screenshots in artifacts/figures/, every figure in "
        "figures.html there):\n" + bad
    )


def test_views_fit_every_device_name(measured):
    """Every view that names the machine stays readable whatever the machine is called, in
    the narrowest notebook: views draw its short name (viz.runtime.short_device_name) and
    lay out their legends for any length."""
    results, errors = measured
    assert not errors
    assert sum(name.startswith("names-") for name in results) >= 20 * len(DEVICE_NAMES)
    bad = unreadable(results, names=True)
    assert not bad, (
        "unreadable text (screenshots in artifacts/figures/names-*.png, every "
        "figure in artifacts/figures/figures.html):\n" + bad
    )


def test_the_check_finds_an_overlap(browser, tmp_path):
    """The measurement can fail: two annotations drawn on top of each other, and a title
    running off the right edge, are both reported."""
    import plotly.graph_objects as go

    fig = go.Figure(
        layout={
            "title": {"text": "a title far too long for its figure " * 4},
            "width": 400,
            "height": 300,
        }
    )
    fig.add_annotation(
        text="first label", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False
    )
    fig.add_annotation(
        text="second label", x=0.52, y=0.5, xref="paper", yref="paper", showarrow=False
    )
    path = tmp_path / "bad.html"
    path.write_text(page_html({"bad": fig}), encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot svg.main-svg")
        problems, _ = page_text_problems(page)
    finally:
        page.close()
    assert any("'first label' overlaps annotation 'second label'" in p for p in problems)
    assert any("cut off at the right edge" in p for p in problems)


def lens_figures() -> dict:
    """Lesson 14's views: the logit lens of a 30-layer model (as deep as the course model; its
    weights drawn wide so the layers disagree) with emoji and CJK, its step slider and settle
    line, early exit read from it, early exit beside prompt lookup in one histogram, and
    prompt lookup over its draft length (lesson 13's slider)."""
    from conftest import tiny_config

    config = tiny_config(n_layers=30)
    config["config"]["initializer_range"] = 0.5
    lm = perf.from_config(config, seed=0)
    prompt = "Hi 🍕 東京, the cache"
    trace = viz.record(lm, prompt, max_new_tokens=24, stop_at_eos=False, lens=True)
    early = perf.compare_early_exit(
        lm, prompt, exit_layer=24, draft_tokens=4, max_new_tokens=16, chat=False, repeats=1
    )
    lookup = perf.compare_prompt_lookup(lm, prompt, max_new_tokens=16, chat=False, repeats=1)
    short = perf.compare_prompt_lookup(
        lm, prompt, max_new_tokens=16, chat=False, repeats=1, num_lookup_tokens=2
    )
    return {
        "logit-lens": views.logit_lens_figure(trace),
        "logit-lens-step": views.logit_lens_step_figure(trace),
        "logit-lens-settle": views.logit_lens_settle_figure(trace),
        "early-exit": views.early_exit_figure(trace, measured=[early]),
        "early-exit-beside-lookup": views.accepted_histogram_figure(
            {"early exit, L=24": early, "prompt lookup": lookup}
        ),
        "draft-length": views.draft_length_figure({2: short, 10: lookup}, chosen=2),
    }


def kv_quant_example(tiny_gqa, with_float: bool = True):
    """(a kv_quant_decode sweep, peaks) with numbers like a native run's (lesson 11): the
    float32 (with_float), fp8 and int4 caches at 2,048 and 8,191 cached tokens."""
    from viz.perf.kv_quant import KVQuant

    quant = perf.kv_quant_sweep(
        tiny_gqa,
        [64, 200],
        [8, KVQuant(4, group_size=32)],
        repeats=1,
        float_cache=with_float,
        progress=False,
    )
    quant.model = perf.config_spec("smollm2-135m", "float32")
    columns = {
        "context_tokens": [2048] * 3 + [8191] * 3,
        "decode_step_s": [0.0537, 0.0751, 0.0702, 0.0921, 0.2742, 0.1418],
        "empty_step_s": [0.0402, 0.0398, 0.0405, 0.0401, 0.0399, 0.0400],
        "weight_bytes": [538062336] * 6,
        "step_bytes": [632480256, 561667056, 552854016, 915549696, 632434416, 597085536],
    }
    keep = range(6) if with_float else [1, 2, 4, 5]
    quant.columns.update({k: [v[i] for i in keep] for k, v in columns.items()})
    quant.spreads = {}
    return quant, long_decode_example(tiny_gqa)[1]

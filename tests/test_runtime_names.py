"""`viz.runtime.short_device_name`: the long names CPUs and GPUs report, in a few words, by
rules (no table of models), never empty and never longer than `SHORT_NAME_CHARS`."""

import pytest

from viz.runtime import SHORT_NAME_CHARS, short_device_name

# (what the machine reports, what a figure draws): /proc/cpuinfo's "model name" on Linux,
# torch.cuda.get_device_name on NVIDIA, viz.runtime.device_name on a Mac's GPU
REPORTED = [
    ("Intel(R) Xeon(R) Platinum 8480+", "Xeon Platinum 8480+"),
    ("Intel(R) Xeon(R) Processor", "Xeon"),  # a cloud VM's: lesson 06's legend (the issue)
    ("Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", "Xeon E5-2686 v4"),
    ("Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "Core i7-1165G7"),
    ("13th Gen Intel(R) Core(TM) i9-13900K", "Core i9-13900K"),
    ("13th Gen Intel(R) Core(TM) i9-13900HX", "Core i9-13900HX"),
    ("AMD EPYC 7B13 64-Core Processor", "EPYC 7B13"),
    ("AMD EPYC 9R14 96-Core Processor", "EPYC 9R14"),
    ("AMD EPYC", "EPYC"),  # the project's own machine
    ("AMD Ryzen 9 7950X 16-Core Processor", "Ryzen 9 7950X"),
    ("AMD Ryzen 7 PRO 7840U w/ Radeon 780M Graphics", "Ryzen 7 PRO 7840U"),
    ("AMD Ryzen 5 5600G with Radeon Graphics", "Ryzen 5 5600G"),
    ("Apple M3 Max", "Apple M3 Max"),
    ("Neoverse-N1", "Neoverse-N1"),
    ("ARMv8 Processor rev 1 (v8l)", "ARMv8"),
    ("aarch64", "aarch64"),  # Graviton: no model name in /proc/cpuinfo, platform.machine()
    ("arm", "arm"),  # macOS's platform.processor()
    ("NVIDIA H200", "H200"),
    ("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090 Laptop GPU"),
    ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", "RTX 3050 Ti Laptop GPU"),
    ("Apple GPU (mps)", "Apple GPU (mps)"),
]


@pytest.mark.parametrize("reported, short", REPORTED)
def test_a_reported_name_is_shortened_by_the_rules(reported, short):
    assert short_device_name(reported) == short


@pytest.mark.parametrize("reported, short", REPORTED)
def test_shortening_twice_changes_nothing(reported, short):
    assert short_device_name(short) == short


@pytest.mark.parametrize(
    "odd, expected",
    [
        ("", "CPU"),
        ("   ", "CPU"),
        (None, "CPU"),  # nothing reported
        ("cpu", "cpu"),
        ("CPU", "CPU"),  # viz.runtime.cpu_name's last fallback, and its like
        ("Intel(R) Processor", "Intel"),  # nothing but noise: the first word, cleaned
        ("AMD", "AMD"),
        ("NVIDIA", "NVIDIA"),
        ("  Intel(R)   Xeon(R)\tGold  6338   CPU  @ 2.00GHz ", "Xeon Gold 6338"),  # odd spacing
        ("intel(r) xeon(r) processor", "xeon"),  # any case
    ],
)
def test_odd_input_still_gives_a_name(odd, expected):
    assert short_device_name(odd) == expected


@pytest.mark.parametrize(
    "long",
    [
        "AMD Ryzen Threadripper PRO 5995WX 64-Cores",
        "Qualcomm Snapdragon X Elite - X1E78100 - Qualcomm Oryon CPU",
        "Supercalifragilisticexpialidocious-Chip-9000",
    ],
)
def test_a_long_name_is_cut_at_a_word_with_an_ellipsis(long):
    short = short_device_name(long)
    assert len(short) <= SHORT_NAME_CHARS and short.endswith("…")
    words = short[:-1].split()
    assert words and words[0] in long
    if len(words) > 1:  # cut between words, not inside one
        assert all(w in long.split() for w in words)


def test_the_course_table_labels_the_cpu_with_the_short_name():
    """tools/course.py's README column ("EPYC, 2 CPUs, AVX-512 with bfloat16") names the CPU
    as the figures do."""
    from tools.course import cpu_label
    from viz.runtime import cpu_name

    assert cpu_label().startswith(short_device_name(cpu_name()) + ", ")


def test_figures_draw_the_short_name_and_results_keep_the_full_one():
    """What is drawn (a figure's title and legend) names the machine by its short name; what
    is stored and the printed details keep what the machine reported."""
    from viz import perf, views

    roof = perf.load_reference("cpu-roofline")
    roof.label, roof.peaks.device_name = "this machine", "Intel(R) Xeon(R) Processor"
    fig = views.roofline_figure(roof, perf.load_reference("cpu-roofline"))
    drawn = (
        [fig.layout.title.text]
        + [t.name for t in fig.data]
        + [t.legendgrouptitle.text for t in fig.data if t.legendgrouptitle.text]
    )
    assert "roofline: this machine · Xeon · float32" in drawn[0]
    assert not any("Intel" in s for s in drawn)
    assert roof.peaks.device_name == "Intel(R) Xeon(R) Processor"
    assert "Intel(R) Xeon(R) Processor" in roof.to_json()

    wall = perf.load_reference("cpu-memory-wall")
    wall.device_name = "AMD EPYC 7B13 64-Core Processor"
    assert "EPYC 7B13 · 2 threads" in views.wall_figure(wall).layout.title.text
    assert str(wall).startswith(f"{wall.label} · AMD EPYC 7B13 64-Core Processor")

    mine, gpu = perf.load_reference("cpu-chat-trace"), perf.gpu_reference("trace")
    mine.environment.device_name = "13th Gen Intel(R) Core(TM) i9-13900HX"
    assert "Core i9-13900HX" in views.timeline_figure(mine).layout.title.text
    table = str(views.compare_html(mine, gpu))  # the details: as reported
    assert "13th Gen Intel(R) Core(TM) i9-13900HX" in table and "NVIDIA H200" in table

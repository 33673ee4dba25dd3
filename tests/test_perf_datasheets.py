"""The memory wall across generations: datasheet rows, their ridges and decode ceilings, the
growth between two generations, the table with a measured row, and the view. Expected
numbers are worked out here from the rows' own fields or by hand, not by the module's code."""

import dataclasses

import pytest

from viz.perf.configs import config_spec
from viz.perf.counts import decode_cost
from viz.perf.machine import datasheets
from viz.perf.machine.datasheets import (
    DATASHEETS,
    H100_SXM,
    Datasheet,
    datasheet,
    generations_table,
    growth,
)
from viz.views.generations import RIDGES, generations_data, generations_figure

from conftest import fake_machine_peaks


# ---- the rows ------------------------------------------------------------------------------------
def test_every_row_is_complete_and_frozen():
    keys = [d.key for d in DATASHEETS]
    assert len(set(keys)) == len(keys)
    assert {"V100", "A100", "H100", "H200", "B200"} <= set(keys)
    for d in DATASHEETS:
        assert d.kind in ("gpu", "cpu")
        assert 2015 <= d.year <= 2026
        assert d.bytes_per_s > 0 and d.flops_per_s > 0
        assert d.flops_format and d.memory
        assert "http" in d.source, f"{d.key} names no URL"
        assert d.computed == (d.kind == "cpu"), "a CPU's FLOP/s is computed, a GPU's quoted"
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign"):
        DATASHEETS[0].bytes_per_s = 1.0


def test_the_published_figures():
    """The vendors' figures, typed in again here (dense FLOP/s; B200 per GPU)."""
    expected = {
        "V100": (900e9, 125e12),
        "A100": (2039e9, 312e12),
        "H100": (3.35e12, 989e12),
        "H200": (4.8e12, 989e12),
        "B200": (8e12, 2.25e15),
    }
    for key, (bw, flops) in expected.items():
        d = datasheet(key)
        assert (d.bytes_per_s, d.flops_per_s) == pytest.approx((bw, flops), rel=1e-12), key


def test_h100_matches_the_repositorys_h100_datasheet():
    h = datasheet("H100")
    assert h.bytes_per_s == H100_SXM["bytes_per_s"]
    assert h.flops_per_s == H100_SXM["flops_per_s"]["bfloat16"]
    assert h.name == H100_SXM["device_name"]


def test_b200_is_the_hgx_board_figure_divided_per_gpu_and_dense():
    # HGX B200: 36 PFLOPS bfloat16 for 8 GPUs with sparsity; DGX B200: 64 TB/s for 8 GPUs
    b = datasheet("B200")
    assert b.flops_per_s == pytest.approx(36e15 / 8 / 2)
    assert b.bytes_per_s == pytest.approx(64e12 / 8)


def test_cpu_figures_are_computed_from_their_parts():
    epyc = datasheet("EPYC 9654")
    assert epyc.bytes_per_s == pytest.approx(460.8e9)  # 12 channels × 8 B × 4800 MT/s
    assert epyc.flops_per_s == pytest.approx(7.3728e12)  # 96 cores × 2.4 GHz × 32 FLOP/cycle
    laptop = datasheet("Ryzen 7840U")
    assert laptop.bytes_per_s == pytest.approx(89.6e9)  # 2 channels × 8 B × 5600 MT/s


def test_ridge_is_flops_over_bandwidth():
    a100 = datasheet("A100")
    assert a100.ridge == pytest.approx(312e12 / 2039e9)  # ≈ 153 FLOP per byte
    assert 150 < a100.ridge < 156


def test_decode_ceiling_is_bandwidth_over_bytes_per_token():
    h100 = datasheet("H100")
    assert h100.decode_tokens_per_s(269_030_016) == pytest.approx(3.35e12 / 269_030_016)
    with pytest.raises(ValueError, match="weight_bytes must be a finite number > 0"):
        h100.decode_tokens_per_s(0)


def test_lookup_by_key_or_name_in_any_case():
    assert datasheet("b200") is datasheet("B200")
    assert datasheet(datasheet("A100").name.upper()).key == "A100"


# ---- growth ----------------------------------------------------------------------------------------
def test_growth_v100_to_b200_by_hand():
    v, b = datasheet("V100"), datasheet("B200")
    g = growth("V100", "B200")
    assert g["flops_ratio"] == pytest.approx(b.flops_per_s / v.flops_per_s)
    assert g["bandwidth_ratio"] == pytest.approx(b.bytes_per_s / v.bytes_per_s)
    ridge_v, ridge_b = v.flops_per_s / v.bytes_per_s, b.flops_per_s / b.bytes_per_s
    assert g["ridge_ratio"] == pytest.approx(ridge_b / ridge_v)
    # the numbers themselves: 2250/125 = 18, 8000/900 = 8.9, so the ridge doubled
    assert g["flops_ratio"] == pytest.approx(18.0)
    assert g["bandwidth_ratio"] == pytest.approx(80 / 9)
    assert g["ridge_ratio"] == pytest.approx(2.025)
    assert "×18.0" in g["text"] and "×8.9" in g["text"]
    assert g["years"] == [2017, 2024]


def test_growth_defaults_and_reverse():
    assert growth() == growth("V100", "B200")
    back = growth("B200", "V100")
    assert back["flops_ratio"] == pytest.approx(1 / 18.0)


@pytest.mark.parametrize("first, last", [("V50", "B200"), ("V100", "Z9000")])
def test_growth_of_an_unknown_name_names_the_known_ones(first, last):
    with pytest.raises(
        ValueError,
        match=r"no datasheet named .*known ones are V100, A100, "
        r"H100, H200, B200",
    ):
        growth(first, last)


# ---- the table -------------------------------------------------------------------------------------
def test_table_without_peaks_is_the_datasheet_rows_with_their_ceilings():
    rows = generations_table()
    assert [r["key"] for r in rows] == [d.key for d in DATASHEETS]
    assert all(r["figures"] != "measured" for r in rows)
    fp32 = decode_cost(config_spec("smollm2-135m", "float32"), 32).bytes
    bf16 = decode_cost(config_spec("smollm2-135m", "bfloat16"), 32).bytes
    assert 500e6 < fp32 < 560e6 and bf16 == pytest.approx(fp32 / 2, rel=1e-3)  # ~135 M weights
    h100 = rows[[r["key"] for r in rows].index("H100")]
    assert h100["ceiling_tokens_per_s"]["float32"] == pytest.approx(3.35e12 / fp32)
    assert h100["ceiling_tokens_per_s"]["bfloat16"] == pytest.approx(3.35e12 / bf16)
    assert h100["ridge"] == pytest.approx(989e12 / 3.35e12)
    assert {r["figures"] for r in rows} == {"datasheet", "computed from the datasheet"}


def test_table_with_fake_peaks_has_a_measured_row_with_its_numbers():
    peaks = fake_machine_peaks(
        read=30e9, flops={"float32": 90e9, "bfloat16": 180e9}, device_name="Test CPU"
    )
    rows = generations_table(peaks)
    assert len(rows) == len(DATASHEETS) + 1
    m = rows[-1]
    assert m["figures"] == "measured" and "measured" in m["name"] and "Test CPU" in m["name"]
    assert m["bytes_per_s"] == pytest.approx(30e9)
    assert m["flops_per_s"] == pytest.approx(90e9)
    assert m["ridge"] == pytest.approx(3.0)
    assert m["year"] == 2026  # measured_at "2026-01-01 00:00 UTC"
    bf = generations_table(peaks, "bfloat16")[-1]
    assert bf["flops_per_s"] == pytest.approx(180e9) and "bfloat16" in bf["flops_format"]
    with pytest.raises(ValueError, match="no matmul peak measured in 'float16'"):
        generations_table(peaks, "float16")
    with pytest.raises(ValueError, match="peaks must be viz.perf.MachinePeaks"):
        generations_table({"read": 30e9})


def test_text_labels_measured_and_datasheet_rows_and_cites_sources():
    text = datasheets.generations_text(fake_machine_peaks(read=30e9))
    lines = text.splitlines()
    measured = [line for line in lines if line.startswith("this machine")]
    assert len(measured) == 1 and measured[0].rstrip().endswith("measured")
    assert "30 GB/s" in measured[0] and "90 GFLOP/s" in measured[0]
    assert any(line.startswith("B200") and line.rstrip().endswith("datasheet") for line in lines)
    assert "arithmetic grew ×18.0, bandwidth ×8.9" in text
    assert "https://www.nvidia.com/en-us/data-center/hgx/" in text
    assert "below every ridge here" in text  # the fake's ridge is 3 FLOP/byte, decode's ~1


def test_decode_intensity_is_two_flops_per_weight_over_its_bytes():
    assert datasheets.decode_intensity(dtype="float32") == pytest.approx(0.5, rel=0.02)
    assert datasheets.decode_intensity(dtype="bfloat16") == pytest.approx(1.0, rel=0.02)


# ---- the view --------------------------------------------------------------------------------------
def marker_points(fig):
    return sum(len(t.x) for t in fig.data if t.mode and "markers" in t.mode)


def test_figure_has_one_marker_per_row_and_the_ridge_lines():
    rows = generations_table(fake_machine_peaks())
    fig = generations_figure(rows)
    assert marker_points(fig) == len(rows)
    ridge_lines = [t for t in fig.data if t.mode and "markers" not in t.mode]
    assert len(ridge_lines) == len(RIDGES)
    for t, k in zip(ridge_lines, RIDGES):
        assert t.y[0] / t.x[0] == pytest.approx(k) and t.y[1] / t.x[1] == pytest.approx(k)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_the_measured_row_is_drawn_differently():
    fig = generations_figure(generations_table(fake_machine_peaks()))
    measured = [t for t in fig.data if t.name == "this machine (measured)"]
    assert len(measured) == 1 and list(measured[0].text) == ["this machine"]
    others = [t for t in fig.data if t.mode == "markers+text" and t is not measured[0]]
    assert others and all(t.marker.symbol != measured[0].marker.symbol for t in others)
    # without peaks there is no measured trace
    assert not [
        t
        for t in generations_figure(generations_table()).data
        if t.name == "this machine (measured)"
    ]


def test_figure_is_deterministic_and_needs_rows():
    rows = generations_table()
    assert generations_figure(rows).to_json() == generations_figure(rows).to_json()
    with pytest.raises(ValueError, match="expected the rows of"):
        generations_figure([])
    with pytest.raises(ValueError, match="every row needs bytes_per_s and flops_per_s > 0"):
        generations_figure([{"bytes_per_s": 0, "flops_per_s": 1}])


def test_h100_and_h200_labels_do_not_share_a_side():
    d = generations_data(generations_table())
    pos = {p["label"]: p["textposition"] for p in d["points"]}
    assert pos["H100"] != pos["H200"]


def test_ridge_of_a_hand_made_row():
    """A row made with its figures typed in: ridge 10 ÷ 2 = 5, ceiling 2 ÷ 4 = 0.5."""
    d = Datasheet(
        key="X",
        name="X",
        kind="gpu",
        year=2030,
        memory="1 GB",
        bytes_per_s=2.0,
        flops_per_s=10.0,
        flops_format="bfloat16",
        source="none",
    )
    assert d.ridge == 5.0 and d.decode_tokens_per_s(4) == 0.5

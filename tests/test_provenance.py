"""One shape of provenance (issue 30): every measurement document says where, when and by what
in an `Environment` (`viz.provenance`), its time in one format (ISO 8601 UTC to the second);
old files are upgraded into it, and what a learner is shown keeps its old text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import viz
from conftest import fake_machine_peaks
from viz import perf, provenance, runtime
from viz.documents import load_document
from viz.perf.compiled import CompiledStep
from viz.perf.formats import FormatRun
from viz.perf.machine.fixed_costs import FixedCosts
from viz.perf.machine.peaks import MachinePeaks, peaks_from_machine
from viz.perf.profile import StepProfile
from viz.perf.wall import WallRun, computed_wall
from viz.serve import LoadRun, LoadSweep, StreamRecord
from viz.serve.prefix import PrefixSharing
from viz.trace import Environment

DATA = Path(viz.__file__).parent / "data"
FIXTURES = Path(__file__).parent / "fixtures"
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


# ---- the one format --------------------------------------------------------------------------
def test_utc_now_is_iso_to_the_second_and_the_one_function_everyone_uses():
    assert ISO.fullmatch(provenance.utc_now())
    assert runtime.utc_now is provenance.utc_now
    from viz.serve import client

    assert client.utc_now is provenance.utc_now  # the ISO of viz.serve, once "+00:00"


@pytest.mark.parametrize(
    "text, iso, shown",
    [
        ("2026-12-05 12:12 UTC", "2026-12-05T12:12:00Z", "2026-12-05 12:12 UTC"),  # the old format
        ("2026-12-05T12:12:40Z", "2026-12-05T12:12:40Z", "2026-12-05 12:12 UTC"),
        ("then", "then", "then"),  # free text is kept, never lost
        ("", "", ""),
    ],
)
def test_times_convert_to_iso_and_show_as_before(text, iso, shown):
    assert provenance.iso_utc(text) == iso
    assert provenance.shown_utc(iso) == shown


def test_a_new_environment_says_when_and_by_what():
    env = runtime.environment(torch.device("cpu"), "float32", source="measured by a test")
    assert ISO.fullmatch(env.measured_at) and env.source == "measured by a test"


def test_an_old_trace_loads_with_its_provenance_unknown():
    trace = viz.Trace.load(FIXTURES / "trace-v1.json")
    assert (trace.environment.measured_at, trace.environment.source) == ("", "")
    assert trace.schema_version == 1  # new fields with defaults: no new version (viz.documents)


# ---- each bumped kind: an old file upgraded ----------------------------------------------------
def _peaks_v2() -> dict:
    """A schema-2 peaks file: today's, with the environment's fields written loose."""
    doc = fake_machine_peaks().to_dict()
    del doc["environment"]
    return {
        **doc,
        "schema_version": 2,
        "device": "cpu",
        "device_name": "Old CPU",
        "threads": 3,
        "torch_version": "2.9",
        "cpu_features": ["avx2"],
        "cpu_capability": "AVX2",
        "measured_at": "2026-12-05 12:12 UTC",
    }


def test_machine_peaks_of_schema_2_move_their_loose_fields_into_the_environment():
    p = MachinePeaks.from_dict(_peaks_v2())
    e = p.environment
    assert (e.device, e.device_name, e.threads, e.torch_version) == ("cpu", "Old CPU", 3, "2.9")
    assert (e.cpu_features, e.cpu_capability) == (["avx2"], "AVX2")
    assert e.measured_at == "2026-12-05T12:12:00Z"
    assert e.source == "measured by viz.perf.machine_peaks"
    assert p.device_name == "Old CPU" and p.threads == 3  # the old names read the environment
    # what a learner is shown has not changed
    assert "torch 2.9, measured 2026-12-05 12:12 UTC" in p.how()
    assert ", measured 2026-12-05 12:12 UTC: matmul float32" in peaks_from_machine(p).how
    saved = p.to_dict()
    assert saved["schema_version"] == 3 and "device_name" not in saved
    assert MachinePeaks.from_dict(saved) == p


def test_fixed_costs_of_schema_1_keep_each_figures_time_in_iso():
    v1 = {
        "kind": FixedCosts.KIND,
        "schema_version": 1,
        "device": "cpu",
        "device_name": "Old",
        "cpu_count": 2,
        "threads": 2,
        "torch_version": "2.9",
        "floors": [],
        "measured_at": {"float32/2": "2026-12-01 09:00 UTC", "float32/30": "2026-12-05 12:12 UTC"},
        "cpu_features": ["avx2"],
        "cpu_capability": "AVX2",
    }
    costs = FixedCosts.from_dict(v1)
    assert costs.measured_at == {
        "float32/2": "2026-12-01T09:00:00Z",
        "float32/30": "2026-12-05T12:12:00Z",
    }
    e = costs.environment
    assert e.measured_at == "2026-12-05T12:12:00Z"  # the newest figure's
    assert (e.device_name, e.threads, e.cpu_features, e.source) == (
        "Old",
        2,
        ["avx2"],
        "measured by viz.perf.fixed_cost",
    )
    assert costs.cpu_count == 2 and costs.threads == 2


def test_a_learners_cached_measurements_of_the_old_schemas_are_still_this_machines(tmp_path):
    """Old files in ~/.cache/llm-inference-viz load, and are reused on the machine that
    measured them (`MachineCache.read` compares the environment's fields now)."""
    from viz.perf.machine import fixed_costs, peaks
    from viz.perf.machine.cache import machine_key

    key = machine_key("cpu")
    threads = key["threads"]
    old_peaks = {**_peaks_v2(), **key}  # the loose fields as a schema-2 file wrote them
    old_costs = {
        "kind": FixedCosts.KIND,
        "schema_version": 1,
        **key,
        "floors": [],
        "measured_at": {"float32/30": "2026-12-05 12:12 UTC"},
    }
    for cache, data in ((peaks._CACHE, old_peaks), (fixed_costs._CACHE, old_costs)):
        file = tmp_path / f"{cache.folder}.json"
        file.write_text(json.dumps(data))
        found = cache.read(file, torch.device("cpu"), threads)
        assert found is not None and found.environment.device_name == key["device_name"]
        file.write_text(json.dumps({**data, "device_name": "another CPU"}))
        assert cache.read(file, torch.device("cpu"), threads) is None  # not this machine's


def test_a_shipped_compiled_step_keeps_its_reference_source():
    old = json.loads((DATA / "cpu-compiled-step.json").read_text())
    run = CompiledStep.load(DATA / "cpu-compiled-step.json")
    e = run.environment
    assert old["schema_version"] == 1 and run.schema_version == 2
    assert (e.device, e.device_name, e.threads) == (
        old["device"],
        old["device_name"],
        old["threads"],
    )
    assert (e.torch_version, e.cpu_capability, e.dtype) == (
        old["torch_version"],
        old["cpu_capability"],
        old["dtype"],
    )
    assert e.measured_at == provenance.iso_utc(old["measured_at"]) == "2026-12-03T13:12:00Z"
    assert e.source == run.source == old["source"]  # a shipped reference's own origin


def test_a_step_profile_of_schema_1_upgrades():
    v1 = {
        "kind": StepProfile.KIND,
        "schema_version": 1,
        "model": "m",
        "device": "cuda:0",
        "device_name": "NVIDIA H200",
        "dtype": "bfloat16",
        "threads": 16,
        "context": 8,
        "steps": 3,
        "step_s": 0.01,
        "profiled_step_s": 0.012,
        "torch_version": "2.11",
        "measured_at": "2026-12-04 18:30 UTC",
    }
    p = StepProfile.from_dict(v1)
    e = p.environment
    assert (e.device, e.device_name, e.threads, e.dtype) == (
        "cuda:0",
        "NVIDIA H200",
        16,
        "bfloat16",
    )
    assert (e.measured_at, e.torch_version) == ("2026-12-04T18:30:00Z", "2.11")
    assert e.source == "measured by viz.perf.profile.profile_decode_step"
    assert p.title() == "m · 8 cached tokens · H200 · bfloat16 · 16 threads"  # as before


def test_the_shipped_formats_file_reads_its_machine_text():
    old = json.loads((DATA / "cpu-formats.json").read_text())
    run = FormatRun.load(DATA / "cpu-formats.json")
    e = run.environment
    assert old["machine"] == (
        "AMD EPYC (2 CPUs, torch kernels AVX512), measured 2026-12-03 13:11 UTC"
    )
    assert (e.device_name, e.cpu_capability, e.measured_at) == (
        "AMD EPYC",
        "AVX512",
        "2026-12-03T13:11:00Z",
    )
    assert e.threads == run.threads == old["threads"] and e.source == old["source"]
    text = dict(old, machine="a laptop", source="")
    other = FormatRun.from_dict(text).environment  # another shape: kept whole as the name
    assert (other.device_name, other.measured_at) == ("a laptop", "")
    assert other.source == "measured by viz.perf.measure_formats"


def test_a_prefix_sharing_run_of_schema_1_keeps_its_transformers_version():
    v1 = {
        "kind": PrefixSharing.KIND,
        "schema_version": 1,
        "page_size": 16,
        "on": [],
        "off": [],
        "same_tokens": True,
        "transformers_version": "5.24.0",
    }
    run = PrefixSharing.from_dict(v1)
    assert run.environment.transformers_version == run.transformers_version == "5.24.0"
    assert run.environment.source == "measured by viz.serve.measure_prefix_sharing"
    assert "transformers_version" not in run.to_dict()


def test_the_shipped_memory_walls_upgrade_with_their_peaks():
    for name in ("cpu-memory-wall.json", "gpu-memory-wall.json"):
        old = json.loads((DATA / name).read_text())
        run = WallRun.load(DATA / name)
        e = run.environment
        assert old["schema_version"] == 2 and run.schema_version == 3
        assert (e.device, e.device_name, e.threads) == (
            old["device"],
            old["device_name"],
            old["threads"],
        )
        assert e.torch_version == old["environment"]["torch_version"]
        assert e.measured_at == provenance.iso_utc(old["recorded"]["date"])
        assert e.source == f"`{old['recorded']['command']}`"
        assert run.peaks.environment.measured_at == provenance.iso_utc(old["peaks"]["measured_at"])
        assert run.peaks.device_name == old["peaks"]["device_name"]


def test_a_computed_wall_says_it_was_computed():
    run = computed_wall(
        ["smollm2-135m"],
        device_name="H100",
        bytes_per_s=3.35e12,
        flops_per_s={"bfloat16": 989e12},
        source="the datasheet",
    )
    e = run.environment
    assert (e.device, e.device_name, e.threads) == ("gpu", "H100", 0)
    assert e.source == "computed from the datasheet" and ISO.fullmatch(e.measured_at)
    assert run.device_name == "H100" and run.threads == 0


def test_load_runs_and_sweeps_of_older_schemas_move_recorded_at_into_the_environment():
    old = json.loads((FIXTURES / "load-run-v1.json").read_text())
    run = LoadRun.load(FIXTURES / "load-run-v1.json")
    e = run.environment
    assert run.schema_version == 4 and old["recorded_at"] == "2026-01-01T00:00:00"
    assert e.measured_at == run.recorded_at == "2026-01-01T00:00:00Z"
    assert (e.device, e.device_name, e.platform) == (
        "cpu",
        old["client"]["cpu"],
        old["client"]["platform"],
    )
    assert e.source == "recorded by viz.serve.run_load"
    assert "recorded_at" not in run.to_dict()
    sweep = LoadSweep.load(FIXTURES / "load-sweep-v1.json")
    assert sweep.schema_version == 4 and sweep.recorded_at == "2026-01-01T00:00:00Z"
    assert sweep.environment.source == "recorded by viz.serve.sweep_rates"
    assert sweep.runs and all(
        r.environment.source == "recorded by viz.serve.run_load" and ISO.fullmatch(r.recorded_at)
        for r in sweep.runs
    )


def test_a_stream_record_of_schema_1_upgrades_and_shows_its_time_as_before():
    run = json.loads((FIXTURES / "load-run-v1.json").read_text())
    v1 = {
        "kind": StreamRecord.KIND,
        "schema_version": 1,
        "target": run["target"],
        "prompt": "hi",
        "system": None,
        "temperature": 0.0,
        "request": run["requests"][0],
        "client": run["client"],
        "recorded_at": "2026-12-05T12:12:40+00:00",
    }
    rec = StreamRecord.from_dict(v1)
    assert rec.environment.measured_at == "2026-12-05T12:12:40Z"
    assert rec.environment.source == "recorded by viz.serve.record_request"
    assert rec.environment.device_name == run["client"]["cpu"]
    # a load report's "recorded (UTC)" column shows the time as viz.serve always wrote it
    assert provenance.shown_iso(rec.recorded_at) == "2026-12-05T12:12:40+00:00"


# ---- the old names, kept as views of the environment -------------------------------------------
def test_the_old_names_build_read_and_write_the_environment():
    p = fake_machine_peaks(device_name="Hand CPU", measured_at="2026-01-01 00:00 UTC")
    assert isinstance(p.environment, Environment)
    assert p.environment.device_name == "Hand CPU"
    assert p.measured_at == p.environment.measured_at == "2026-01-01T00:00:00Z"
    p.device_name = "Renamed"
    assert p.environment.device_name == "Renamed"
    assert not {"device_name", "measured_at", "threads"} & set(p.to_dict())
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_field'"):
        MachinePeaks(no_such_field=1)


def test_loose_names_refuses_a_name_the_environment_does_not_have():
    with pytest.raises(
        TypeError,
        match=r"\['gpu_count'\] are not fields of "
        r"viz.trace.Environment",
    ):
        provenance.loose_names("gpu_count")


# ---- every shipped file -------------------------------------------------------------------------
def test_every_shipped_file_and_fixture_loads_after_a_bare_import_viz():
    """A fresh process with only `import viz`: every JSON document in viz/data/ and
    tests/fixtures/ loads (upgraded), and every measurement's time is ISO or unknown."""
    files = sorted(DATA.glob("*.json")) + sorted(FIXTURES.glob("*.json"))
    code = (
        "import json, re, sys, viz\n"
        "from viz.documents import load_document\n"
        "for f in sys.argv[1:]:\n"
        "    doc = load_document(f)\n"
        "    env = getattr(doc, 'environment', None)\n"
        "    when = env.measured_at if env is not None else ''\n"
        "    assert when == '' or re.fullmatch(r'\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ',"
        " when), (f, when)\n"
        "    print(type(doc).__name__, doc.schema_version)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, files)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(out.stdout.splitlines()) == len(files) >= 20
    for kind in (
        "CompiledStep 2",
        "FormatRun 2",
        "WallRun 3",
        "Trace 1",
        "LoadRun 4",
        "LoadSweep 4",
    ):
        assert kind in out.stdout


def test_a_saved_upgrade_loads_back_the_same(tmp_path):
    for name in ("cpu-compiled-step.json", "cpu-formats.json", "cpu-memory-wall.json"):
        doc = load_document(DATA / name)
        again = load_document(doc.save(tmp_path / name))
        assert again == doc and json.loads((tmp_path / name).read_text())["environment"]
    assert perf.MachinePeaks is MachinePeaks


def test_a_schedule_of_schema_1_keeps_its_transformers_version_in_its_environment():
    from viz.serve import LoadRun, Schedule

    old = {
        "kind": "llm-inference-schedule",
        "schema_version": 1,
        "page_size": 16,
        "total_pages": 8,
        "first_page": 0,
        "bytes_per_page": 1,
        "max_batch_tokens": 32,
        "steps": [],
        "prompt_tokens": {"a": 40},
        "transformers_version": "5.24.0",
        "label": "old",
    }
    schedule = Schedule.from_dict(old)
    e = schedule.environment
    assert schedule.schema_version == 2 and "transformers_version" not in schedule.to_dict()
    assert e.transformers_version == schedule.transformers_version == "5.24.0"
    assert e.source.startswith("recorded by viz.serve.probes.StepRecorder")
    assert e.measured_at == ""  # a schema-1 schedule never said when
    # the same schedule inside a LoadRun of schema 3 is upgraded with it (LoadRun 4)
    run = json.loads((FIXTURES / "load-run-v1.json").read_text())
    body = {k: v for k, v in old.items() if k not in ("kind", "schema_version")}
    upgraded = LoadRun.UPGRADES[3](
        {**LoadRun.UPGRADES[2](LoadRun.UPGRADES[1](run)), "schedule": body}
    )
    assert upgraded["schedule"]["environment"]["transformers_version"] == "5.24.0"
    assert "transformers_version" not in upgraded["schedule"]
    # and a part of a schedule keeps its provenance, not a shared copy of it
    part = schedule.between(0.0, 1.0)
    assert part.environment == e and part.environment is not e

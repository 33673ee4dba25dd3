"""Where and when a figure was measured: one shape for every saved measurement (issue 30).

Every measurement viz saves (a trace, a sweep, the machine's peaks, a compiled step, a step
profile, ...) carries a `viz.trace.Environment`: the device, the software, the thread count, and
two fields that say where its numbers came from:

- **measured_at**: when, in ONE format, ISO 8601 UTC to the second ("2026-12-06T03:40:12Z"),
  from `utc_now()`;
- **source**: what produced the numbers ("measured by viz.perf.machine_peaks", or a shipped
  reference's origin).

Files saved before this kept their device and time in loose fields of their own, with the time
written as "2026-12-05 12:12 UTC". Each such document's upgrade (`viz.documents`) moves them
into its `environment` with `environment_from_loose`, the time converted by `iso_utc`; so old
files, the shipped ones in viz/data and a learner's cached measurements, keep loading.

What a learner *sees* has not changed: a printed line or a figure shows the time as before,
"2026-12-05 12:12 UTC" (`shown_utc`; a load report's column, as viz.serve wrote it,
"2026-12-05T12:12:40+00:00": `shown_iso`). And the old names still work on the documents
(`peaks.device_name`, `MachinePeaks(device_name=..., measured_at=...)`): `loose_names` makes them
views of the environment, so code written against the old fields keeps running.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from typing import Any, Optional

from viz.trace import Environment

ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # what every document writes: "2026-12-06T03:40:12Z"
OLD_FORMAT = "%Y-%m-%d %H:%M UTC"  # what files wrote before, and what a learner is shown


def utc_now() -> str:
    """Now, as every document writes it: ISO 8601 UTC to the second, "2026-12-06T03:40:12Z"."""
    return datetime.datetime.now(datetime.timezone.utc).strftime(ISO_FORMAT)


def parse_utc(text: str) -> Optional[datetime.datetime]:
    """The UTC time `text` holds: in the ISO format, the old one, or another ISO 8601 form
    (viz.serve wrote "2026-12-05T12:12:40+00:00"; one without a zone is taken as UTC); None if
    it holds none (an empty field, or free text such as "then")."""
    try:
        return datetime.datetime.strptime(text, OLD_FORMAT).replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        pass
    try:
        when = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    utc = datetime.timezone.utc
    return when.replace(tzinfo=utc) if when.tzinfo is None else when.astimezone(utc)


def iso_utc(text: str) -> str:
    """`text` as an ISO time ("2026-12-05 12:12 UTC" → "2026-12-05T12:12:00Z"). Text that is
    no time is kept as it is: an old file's free text is all it says of when (never lose it)."""
    when = parse_utc(text)
    return when.strftime(ISO_FORMAT) if when is not None else text


def shown_utc(text: str) -> str:
    """A time as viz has always shown it to a learner, "2026-12-05 12:12 UTC" (to the minute);
    text that is no time is shown as it is."""
    when = parse_utc(text)
    return when.strftime(OLD_FORMAT) if when is not None else text


def shown_iso(text: str) -> str:
    """A time as viz.serve has always shown it (a load report's "recorded (UTC)"):
    "2026-12-05T12:12:40+00:00"; text that is no time is shown as it is."""
    when = parse_utc(text)
    return when.isoformat(timespec="seconds") if when is not None else text


def unknown_environment(**known: Any) -> Environment:
    """An Environment whose fields are all unknown ("", 0), except those given: what an old
    file or a document built by hand says of where it was measured."""
    blank = {
        f.name: 0 if f.type in (int, "int") else ""
        for f in dataclasses.fields(Environment)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    known = {**known, "measured_at": iso_utc(known.get("measured_at", ""))}
    return Environment(**{**blank, **known})


def environment_from_loose(data: dict, names: tuple[str, ...], source: str, **more: Any) -> dict:
    """An upgrade step: the loose provenance fields `names` of an old document `data` moved
    into its "environment" (a dict, as in the file); the time converted to ISO, `source`
    filled where the file had none, `more` set as given. Returns the new dict."""
    data = dict(data)
    env = dict(data.get("environment") or {})
    env.update({n: data.pop(n) for n in names if n in data})
    env.update(more)
    env.setdefault("source", source)
    fields = dataclasses.asdict(unknown_environment())
    data["environment"] = {**fields, **env, "measured_at": iso_utc(env.get("measured_at", ""))}
    return data


def loose_names(*names: str, **renamed: str):
    """Class decorator: a document's old loose provenance fields `names`, kept as views of its
    `environment` (`renamed`: old name → the environment's, e.g. recorded_at="measured_at").
    The constructor still takes them (`MachinePeaks(device_name=...)`: into the environment, a
    time converted to ISO) and `doc.device_name` reads and writes the environment's. Nothing
    of them is saved but the environment."""
    views = {**{n: n for n in names}, **renamed}  # old name → the environment's field
    unknown = [
        n for n in views.values() if n not in {f.name for f in dataclasses.fields(Environment)}
    ]
    if unknown:  # a bug in the decorated class
        raise TypeError(f"{unknown} are not fields of viz.trace.Environment")

    def decorate(cls):
        made = cls.__init__

        @functools.wraps(made)
        def __init__(self, *args, **kwargs):
            loose = {views[n]: kwargs.pop(n) for n in views if n in kwargs}
            if loose:
                base = kwargs.get("environment") or unknown_environment()
                if "measured_at" in loose:
                    loose["measured_at"] = iso_utc(loose["measured_at"])
                kwargs["environment"] = dataclasses.replace(base, **loose)
            made(self, *args, **kwargs)

        cls.__init__ = __init__
        for old, name in views.items():
            setattr(cls, old, _view(name))
        return cls

    return decorate


def _view(name: str) -> property:
    """A view of the environment's field `name`, read and written."""

    def get(self):
        return getattr(self.environment, name)

    def set_(self, value):
        setattr(self.environment, name, iso_utc(value) if name == "measured_at" else value)

    return property(get, set_, doc=f"this document's environment.{name}")
